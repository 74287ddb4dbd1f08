//! `arbor._arbor.BinnedRows`: training rows binned once, from a Python
//! source read twice, then trained on and cross-validated as often as asked
//! (the Rust half of `arbor.Dataset`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arbor_ensemble::{ArborError, BatchSource, BinnedData, ColumnRoles, Target, TrainParams, Trainer};
use arrow::array::{ArrayRef, Float64Array, RecordBatch};
use arrow::datatypes::SchemaRef;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::arrow_exchange::to_pyarrow;
use crate::model::Model;
use crate::python_error::value_error;

/// Rows from a Python callable that returns a new Arrow stream (anything
/// with `__arrow_c_stream__`) each time it is called: one call a pass.
struct PythonSource {
    open: Py<PyAny>,
    schema: SchemaRef,
}

impl PythonSource {
    /// A stream from `open`, taken over while the GIL is held; read without it.
    fn stream(open: &Py<PyAny>) -> PyResult<Box<dyn arrow::array::RecordBatchReader + Send>> {
        Python::attach(|py| {
            let stream = open.call0(py)?;
            stream.bind(py).extract::<AnyRecordBatch>()?.into_reader()
        })
    }
}

impl BatchSource for PythonSource {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn batches(
        &self,
    ) -> arbor_ensemble::Result<Box<dyn Iterator<Item = arbor_ensemble::Result<RecordBatch>> + Send + '_>> {
        let reader = PythonSource::stream(&self.open)
            .map_err(|e| ArborError::Data(format!("the source could not be read again: {e}")))?;
        Ok(Box::new(reader.map(|batch| batch.map_err(|e| ArborError::Data(format!("reading the source: {e}"))))))
    }
}

/// Training rows binned once: the bins, label, weights and row order that
/// every fit on them shares.
#[pyclass(module = "arbor", frozen)]
pub struct BinnedRows {
    inner: Arc<BinnedData>,
    /// The options it was binned with (the label's task, the bins').
    options: Vec<(String, String)>,
    /// Which binning these rows come from: rows taken from binned rows share
    /// their bins, and so their number.
    binning: u64,
}

/// Binnings made in this process, numbering each.
static BINNINGS: AtomicU64 = AtomicU64::new(0);

#[pymethods]
impl BinnedRows {
    /// Rows binned (null labels excluded).
    #[getter]
    fn n_rows(&self) -> usize {
        self.inner.n_rows()
    }

    /// The feature names, in the order models trained on these rows know them.
    #[getter]
    fn feature_names(&self) -> Vec<String> {
        self.inner.features().iter().map(|f| f.name.clone()).collect()
    }

    /// `classification` or `regression`.
    #[getter]
    fn task(&self) -> &'static str {
        self.inner.task().name()
    }

    /// Bytes the binned rows hold.
    #[getter]
    fn size_bytes(&self) -> usize {
        self.inner.size_bytes()
    }

    /// Which binning these rows come from (rows taken from them share it).
    #[getter]
    fn binning(&self) -> u64 {
        self.binning
    }

    /// The rows at `positions` (places in reading order), in that order,
    /// with the same bins.
    fn take(&self, py: Python<'_>, positions: Vec<u32>) -> PyResult<BinnedRows> {
        let taken = py.detach(|| self.inner.take(&positions)).map_err(value_error)?;
        Ok(BinnedRows { inner: Arc::new(taken), options: self.options.clone(), binning: self.binning })
    }

    /// The labels in reading order, as a pyarrow array of the label's type
    /// (Float64 for regression).
    fn labels(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let order = self.inner.reading_order();
        let array: ArrayRef = match (self.inner.target(), &self.inner.label().classes) {
            (Target::Classes(classes), Some(names)) => {
                let index: Vec<u32> = order.iter().map(|&r| classes[r as usize]).collect();
                names.take(&index, &self.inner.label().arrow_type().map_err(value_error)?).map_err(value_error)?
            }
            (Target::Values(values), _) => {
                Arc::new(Float64Array::from_iter_values(order.iter().map(|&r| values[r as usize])))
            }
            (Target::Classes(_), None) => {
                return Err(value_error(ArborError::Data("classification rows without classes".into())))
            }
        };
        Ok(to_pyarrow(py, array)?.unbind())
    }
}

/// Predictions (`proba`: class probabilities) of `model` for binned rows,
/// in reading order, read from the values each bin stands for: exact for
/// a model trained on these bins (on the rows or rows taken from them).
#[pyfunction]
#[pyo3(signature = (model, rows, *, proba))]
pub fn predict_binned(py: Python<'_>, model: &Model, rows: &BinnedRows, proba: bool) -> PyResult<Py<PyAny>> {
    let model = model.inner();
    let names: Vec<&str> = rows.inner.features().iter().map(|f| f.name.as_str()).collect();
    let known: Vec<&str> = model.features().iter().map(|f| f.name.as_str()).collect();
    if names != known {
        return Err(value_error(ArborError::Data(format!(
            "the model's features ({}) are not the dataset's ({})",
            known.join(", "),
            names.join(", ")
        ))));
    }
    let array = py.detach(|| -> arbor_ensemble::Result<ArrayRef> {
        let order = rows.inner.reading_order();
        let predictions = model.score_columns(&rows.inner.tested_values(&order), order.len())?;
        match proba {
            true => Ok(Arc::new(model.proba_array(predictions)?)),
            false => model.prediction_array(&predictions),
        }
    });
    Ok(to_pyarrow(py, array.map_err(value_error)?)?.unbind())
}

/// The trainer for `options`, with these rows' binning options under them.
fn trainer(rows: &BinnedRows, options: &[(String, String)]) -> PyResult<Trainer<'static>> {
    let mut params = TrainParams::default();
    for (key, value) in rows.options.iter().chain(options) {
        params.set(key, value).map_err(value_error)?;
    }
    Ok(Trainer::new(params))
}

/// Bins the rows `open()` streams (called once a pass, twice in all), with
/// `label` (and `weight`, `group`, `features`) and the binning options among
/// `options` (`max_bins`, `min_bin_size`, `bin_boundaries`, `split_method`, `task`). With a
/// group column (query ids, for ranking) the task is regression unless given.
#[pyfunction]
#[pyo3(signature = (open, *, label, options, weight=None, features=None, group=None))]
pub fn bin_rows(
    py: Python<'_>,
    open: Py<PyAny>,
    label: String,
    mut options: Vec<(String, String)>,
    weight: Option<String>,
    features: Option<Vec<String>>,
    group: Option<String>,
) -> PyResult<BinnedRows> {
    if group.is_some() && options.iter().all(|(key, _)| key != "task") {
        // Relevance grades are numbers to rank by, not classes.
        options.push(("task".into(), "regression".into()));
    }
    let mut params = TrainParams::default();
    for (key, value) in &options {
        params.set(key, value).map_err(value_error)?;
    }
    let schema = PythonSource::stream(&open)?.schema();
    let source = PythonSource { open, schema };
    let roles = ColumnRoles { label, features, weight, group };
    let mut trainer = Trainer::new(params).label(roles.label.clone());
    if let Some(features) = roles.features {
        trainer = trainer.features(features);
    }
    if let Some(weight) = roles.weight {
        trainer = trainer.weight(weight);
    }
    if let Some(group) = roles.group {
        trainer = trainer.group(group);
    }
    let binned = py.detach(|| trainer.bin(&source)).map_err(value_error)?;
    Ok(BinnedRows { inner: Arc::new(binned), options, binning: BINNINGS.fetch_add(1, Ordering::Relaxed) })
}

/// Trains a model on binned rows with `options` (those that would bin the
/// rows otherwise are refused).
#[pyfunction]
#[pyo3(signature = (rows, *, options, init_model=None))]
pub fn train_binned(
    py: Python<'_>,
    rows: &BinnedRows,
    options: Vec<(String, String)>,
    init_model: Option<PyRef<'_, Model>>,
) -> PyResult<Model> {
    let mut trainer = trainer(rows, &options)?;
    let init = init_model.map(|m| m.shared());
    if let Some(init) = &init {
        trainer = trainer.init_model(init);
    }
    let data = rows.inner.clone();
    let trained = py.detach(|| trainer.fit_binned(&data)).map_err(value_error)?;
    Ok(Model::new(trained.model))
}

/// `folds`-fold cross-validation on binned rows: per fold, its model, the
/// rows it trained on and was scored on, and its score (accuracy, or RMSE).
#[pyfunction]
#[pyo3(signature = (rows, *, options, folds))]
pub fn cross_validate(
    py: Python<'_>,
    rows: &BinnedRows,
    options: Vec<(String, String)>,
    folds: usize,
) -> PyResult<Vec<(Model, usize, usize, f64)>> {
    let trainer = trainer(rows, &options)?;
    let data = rows.inner.clone();
    let folds = py.detach(|| trainer.cross_validate(&data, folds)).map_err(value_error)?;
    Ok(folds.into_iter().map(|f| (Model::new(f.model), f.training_rows, f.held_out_rows, f.score)).collect())
}
