//! `train`: fits a model on Arrow data from Python, without the GIL.

use arbor_ensemble::{TrainParams, Trainer};
use pyo3::prelude::*;
use pyo3_arrow::input::{AnyArray, AnyRecordBatch};

use crate::arrow_exchange::{batches, chunks, with_columns};
use crate::model::Model;
use crate::python_error::value_error;

/// Trains a model on `features` (every column is a feature) against `label`,
/// optionally weighting rows by `weight`, with arbor's options by name (the
/// keys of `arbor train --set` and SQL). The label and weight join the
/// features as columns named `label_name` and `weight_name`, which the model
/// records. With `init_model`, boosting continues that model. With `group`
/// (one query id per row, integers), the rows are ranked within their
/// queries: boosting with `loss=lambdarank` unless the options say otherwise.
#[pyfunction]
#[pyo3(signature = (
    features, label, *, options, weight=None, label_name="label", weight_name="weight", init_model=None,
    group=None, group_name="group"
))]
#[allow(clippy::too_many_arguments)] // the Python signature, keyword arguments after the data
pub fn train(
    py: Python<'_>,
    features: AnyRecordBatch,
    label: AnyArray,
    options: Vec<(String, String)>,
    weight: Option<AnyArray>,
    label_name: &str,
    weight_name: &str,
    init_model: Option<PyRef<'_, Model>>,
    group: Option<AnyArray>,
    group_name: &str,
) -> PyResult<Model> {
    let mut params = TrainParams::default();
    for (key, value) in &options {
        params.set(key, value).map_err(value_error)?;
    }
    if group.is_some() {
        params.rank_by_default();
    }
    // Checked before the data moves; the trainer takes them checked.
    let params = params.check().map_err(value_error)?;
    let feature_batches = batches(features)?;
    let names: Vec<String> = match feature_batches.first() {
        Some(b) => b.schema().fields().iter().map(|f| f.name().clone()).collect(),
        None => Vec::new(),
    };
    let mut extra = vec![(label_name, chunks(label)?)];
    let weighted = weight.is_some();
    if let Some(w) = weight {
        extra.push((weight_name, chunks(w)?));
    }
    let grouped = group.is_some();
    if let Some(g) = group {
        extra.push((group_name, chunks(g)?));
    }
    let data = with_columns(feature_batches, &extra)?;
    let mut trainer = Trainer::checked(params).label(label_name).features(names);
    if weighted {
        trainer = trainer.weight(weight_name);
    }
    if grouped {
        trainer = trainer.group(group_name);
    }
    let init = init_model.map(|m| m.shared());
    if let Some(init) = &init {
        trainer = trainer.init_model(init);
    }
    let model = py.detach(|| trainer.fit(data)).map_err(value_error)?;
    Ok(Model::new(model))
}
