//! `arbor.Model`: a trained or imported model, its bytes, and scoring Arrow
//! data with it (the same model and bytes as the command line's and SQL's).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use arbor_ensemble::Task;
use arrow::array::{Array, ArrayRef, RecordBatch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::input::AnyRecordBatch;

use crate::arrow_exchange::{batches, to_pyarrow};
use crate::python_error::{io_error, value_error};

/// A decision forest or boosted ensemble; immutable, so shared freely between threads.
#[pyclass(module = "arbor", frozen)]
pub struct Model {
    inner: Arc<arbor_ensemble::Model>,
}

impl Model {
    /// Wraps a Rust model.
    pub fn new(model: arbor_ensemble::Model) -> Model {
        Model { inner: Arc::new(model) }
    }

    /// The model itself.
    pub fn inner(&self) -> &arbor_ensemble::Model {
        &self.inner
    }

    /// The model, shared: to use without the GIL.
    pub fn shared(&self) -> Arc<arbor_ensemble::Model> {
        self.inner.clone()
    }

    /// Scores every batch of `data` without the GIL, one output array per batch,
    /// then joins them.
    fn score(
        &self,
        py: Python<'_>,
        data: AnyRecordBatch,
        each: impl Fn(&arbor_ensemble::Model, &RecordBatch) -> arbor_ensemble::Result<ArrayRef> + Send + Sync,
    ) -> PyResult<Py<PyAny>> {
        let batches = batches(data)?;
        let model = &self.inner;
        let array = py.detach(|| -> PyResult<ArrayRef> {
            let parts = batches.iter().map(|b| each(model, b)).collect::<Result<Vec<_>, _>>().map_err(value_error)?;
            match parts.as_slice() {
                [one] => Ok(one.clone()),
                [] => each(model, &RecordBatch::new_empty(Arc::new(self.feature_schema()?))).map_err(value_error),
                _ => {
                    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                    arrow::compute::concat(&refs).map_err(|e| PyValueError::new_err(e.to_string()))
                }
            }
        })?;
        Ok(to_pyarrow(py, array)?.unbind())
    }

    /// The schema of the model's features, for scoring an empty input.
    fn feature_schema(&self) -> PyResult<arrow::datatypes::Schema> {
        let fields = self
            .inner
            .features()
            .iter()
            .map(|f| f.data_type.parse().map(|t| arrow::datatypes::Field::new(&f.name, t, true)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyValueError::new_err(format!("invalid model: {e}")))?;
        Ok(arrow::datatypes::Schema::new(fields))
    }
}

#[pymethods]
impl Model {
    /// Decodes model bytes (`bytes(model)`, an `arbor train` file, a SQL model
    /// column's value); corrupt or foreign bytes raise `ValueError`.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Model> {
        let model = py.detach(|| arbor_ensemble::Model::from_bytes(data)).map_err(value_error)?;
        Ok(Model::new(model))
    }

    /// Reads a model file written by `save`, `arbor train` or `arbor import`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Model> {
        let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
        let model = py
            .detach(|| arbor_ensemble::Model::from_bytes(&bytes))
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
        Ok(Model::new(model))
    }

    /// Imports an XGBoost JSON model file as an arbor model.
    #[staticmethod]
    fn import_xgboost(path: PathBuf) -> PyResult<Model> {
        let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
        let model = arbor_ensemble::Model::from_xgboost_json(&bytes)
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
        Ok(Model::new(model))
    }

    /// Imports a LightGBM text model file as an arbor model.
    #[staticmethod]
    fn import_lightgbm(path: PathBuf) -> PyResult<Model> {
        let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
        let model = arbor_ensemble::Model::from_lightgbm_text(&text)
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
        Ok(Model::new(model))
    }

    /// Writes the model to `path` whole: a temporary file in the same
    /// directory, renamed into place once complete (nothing half-written is
    /// left behind), with an ordinary file's permissions.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let bytes = py.detach(|| self.inner.to_bytes());
        write_whole(&path, &bytes)
    }

    /// Writes the model to `path` in another library's format: `format` is
    /// `"xgboost-json"`, `"lightgbm-text"` or `"onnx"`. The file predicts what the
    /// model predicts from the features `export_columns` gives; what the
    /// format cannot hold is a ValueError naming it.
    #[pyo3(signature = (path, format))]
    fn export(&self, py: Python<'_>, path: PathBuf, format: &str) -> PyResult<()> {
        let format: arbor_ensemble::ExportFormat = format.parse().map_err(value_error)?;
        let bytes = py.detach(|| self.inner.export(format)).map_err(value_error)?;
        write_whole(&path, &bytes)
    }

    /// The features of `data` as exported models read them: a pyarrow Table
    /// of one Float64 column per feature, in the model's order; booleans as
    /// 0 and 1, a category as its index in `feature_categories`, NaN for a
    /// missing value or an unseen category.
    fn export_columns<'py>(&self, py: Python<'py>, data: AnyRecordBatch) -> PyResult<Bound<'py, PyAny>> {
        let batches = batches(data)?;
        let model = &self.inner;
        let schema = Arc::new(arrow::datatypes::Schema::new(
            model
                .features()
                .iter()
                .map(|f| arrow::datatypes::Field::new(&f.name, arrow::datatypes::DataType::Float64, false))
                .collect::<Vec<_>>(),
        ));
        let converted = py.detach(|| -> PyResult<Vec<RecordBatch>> {
            batches
                .iter()
                .map(|b| {
                    let columns = model.export_columns(b).map_err(value_error)?;
                    let arrays = columns
                        .into_iter()
                        .map(|c| Arc::new(arrow::array::Float64Array::from(c)) as ArrayRef)
                        .collect();
                    RecordBatch::try_new(schema.clone(), arrays).map_err(|e| PyValueError::new_err(e.to_string()))
                })
                .collect()
        })?;
        pyo3_arrow::PyTable::try_new(converted, schema)?.into_pyarrow(py)
    }

    /// Writes the model's report to `path`: one self-contained HTML page of
    /// its summary, parameters, importance and first tree and, with `data`
    /// (rows with its features, and its label for the metrics), the metrics,
    /// a SHAP summary and partial dependence on those rows.
    #[pyo3(signature = (path, data=None))]
    fn report(&self, py: Python<'_>, path: PathBuf, data: Option<AnyRecordBatch>) -> PyResult<()> {
        let batch = match data {
            Some(data) => {
                let batches = batches(data)?;
                let schema = match batches.first() {
                    Some(b) => b.schema(),
                    None => Arc::new(self.feature_schema()?),
                };
                Some(
                    arrow::compute::concat_batches(&schema, &batches)
                        .map_err(|e| PyValueError::new_err(e.to_string()))?,
                )
            }
            None => None,
        };
        let html = py.detach(|| self.inner.report_html(batch.as_ref())).map_err(value_error)?;
        write_whole(&path, html.as_bytes())
    }

    /// The model in a notebook: its summary and importance chart.
    fn _repr_html_(&self) -> String {
        self.inner.summary_html()
    }

    /// their codes in exported models, or None for a numeric feature.
    #[getter]
    fn feature_categories(&self) -> Vec<Option<Vec<String>>> {
        (0..self.inner.features().len()).map(|f| self.inner.categories(f).map(<[String]>::to_vec)).collect()
    }

    /// The model's bytes: arbor's versioned, checksummed format.
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    /// Pickling goes through the model bytes.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let constructor = slf.get_type().getattr("from_bytes")?;
        Ok((constructor, (slf.get().__bytes__(py),)))
    }

    /// Predictions for every row of `data` (a pyarrow Table or RecordBatch,
    /// or any Arrow stream such as a polars DataFrame): a pyarrow Array of
    /// classes typed like the label, or Float64 for regression. Features are
    /// found by name; other columns are ignored.
    fn predict(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<Py<PyAny>> {
        self.score(py, data, |m, b| m.predict(b))
    }

    /// Class probabilities for every row: a pyarrow FixedSizeList array, one
    /// list per row in the order of `classes`.
    fn predict_proba(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<Py<PyAny>> {
        if self.inner.task() != Task::Classification {
            return Err(PyValueError::new_err("predict_proba needs a classification model; this one is regression"));
        }
        self.score(py, data, |m, b| m.predict_proba(b).map(|a| Arc::new(a) as ArrayRef))
    }

    /// Each feature's SHAP contribution to every row's raw score (exact
    /// TreeSHAP), then the bias: a pyarrow List<Float64> array, one list per
    /// row holding a block of features-then-bias per output explained (see
    /// `contribution_names`); each block sums to that output's raw score.
    fn predict_contributions(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<Py<PyAny>> {
        self.score(py, data, |m, b| {
            m.contributions(b).and_then(|c| m.contributions_list(c)).map(|a| Arc::new(a) as ArrayRef)
        })
    }

    /// The names of a row's contributions, in order, as `arbor predict
    /// --contributions` names its columns.
    #[getter]
    fn contribution_names(&self) -> Vec<String> {
        self.inner.contribution_names()
    }

    /// What `arbor inspect --json` prints, as a dict: task, classes, features
    /// with importance, trees, parameters.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = serde_json::to_string(&self.inner.summary_json()).expect("JSON values always serialize");
        py.import(pyo3::intern!(py, "json"))?.call_method1(pyo3::intern!(py, "loads"), (json,))
    }

    /// Tree `index` (from 0) as a Graphviz digraph.
    fn tree_dot(&self, index: usize) -> PyResult<String> {
        self.inner.tree_dot(index).map_err(value_error)
    }

    /// `"classification"` or `"regression"`.
    #[getter]
    fn task(&self) -> &'static str {
        match self.inner.task() {
            Task::Classification => "classification",
            Task::Regression => "regression",
        }
    }

    /// `"random-forest"` or `"gradient-boosting"`.
    #[getter]
    fn algorithm(&self) -> &'static str {
        self.inner.algorithm().name()
    }

    /// The feature names, in the model's order.
    #[getter]
    fn feature_names(&self) -> Vec<String> {
        self.inner.features().iter().map(|f| f.name.clone()).collect()
    }

    /// The label column's name.
    #[getter]
    fn label_name(&self) -> String {
        self.inner.label().name.clone()
    }

    /// The classes as text, in the order of `predict_proba`'s columns (empty for regression).
    #[getter]
    fn class_names(&self) -> Vec<String> {
        self.inner.class_names()
    }

    /// The classes as a pyarrow Array typed like the label (`None` for regression).
    #[getter]
    fn classes<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(classes) = &self.inner.label().classes else { return Ok(None) };
        let data_type = self.inner.label().arrow_type().map_err(value_error)?;
        let index: Vec<u32> = (0..classes.len() as u32).collect();
        let array = classes.take(&index, &data_type).map_err(value_error)?;
        Ok(Some(to_pyarrow(py, array)?))
    }

    /// Feature importances in feature order, normalized as the model reports them (`None` if not computed).
    #[getter]
    fn importance(&self) -> Option<Vec<f64>> {
        self.inner.importance().map(|v| v.to_vec())
    }

    /// The out-of-bag error of a random forest trained with `oob=true`:
    /// misclassification rate or mean squared error (`None` otherwise).
    #[getter]
    fn oob_error(&self) -> Option<f64> {
        self.inner.oob_error()
    }

    /// The number of trees.
    #[getter]
    fn n_trees(&self) -> usize {
        self.inner.trees().len()
    }

    /// The effective training parameters, by arbor's option names.
    #[getter]
    fn params(&self) -> Vec<(String, String)> {
        self.inner.params().to_vec()
    }

    fn __eq__(&self, other: &Model) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.to_bytes() == other.inner.to_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "arbor.Model({} {}, {} trees, {} features)",
            self.algorithm(),
            self.task(),
            self.inner.trees().len(),
            self.inner.features().len()
        )
    }
}

/// Writes `bytes` to `path` whole or not at all: a temporary file in the
/// same directory, synced, then renamed over `path`.
fn write_whole(path: &std::path::Path, bytes: &[u8]) -> PyResult<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".arbor-").suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let io = |e| io_error(path, e);
    let mut temp = builder.tempfile_in(&dir).map_err(io)?;
    temp.write_all(bytes).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
