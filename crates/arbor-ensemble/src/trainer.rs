//! The front door to training: parameters, the roles of the columns, then `fit`.
//!
//! Whatever way the parameters were built (parsed from an options string,
//! set key by key, or written as a struct literal), training takes only
//! [`CheckedParams`]: a trainer given unchecked ones checks them once, here,
//! before any work, so nothing reaches training unchecked.

use std::borrow::Cow;
use std::path::Path;

use arrow::array::RecordBatch;

use crate::data::dataset::ColumnRoles;
use crate::train::{fit, Trained};
use crate::{ArborError, CheckedParams, Model, Progress, Result, TrainParams, TrainingData};

/// A progress callback: hears of each tree (forest) or round (boosting).
pub type OnProgress<'a> = &'a (dyn Fn(&Progress) + Sync);

/// Trains a model: [`Trainer::new`] with the parameters, the columns' roles,
/// then [`Trainer::fit`] on record batches.
///
/// ```
/// use std::sync::Arc;
/// use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
/// use arbor_ensemble::{Trainer, TrainParams};
///
/// let x: Vec<f64> = (0..200).map(f64::from).collect();
/// let y: Vec<i64> = x.iter().map(|&v| (v >= 100.0) as i64).collect();
/// let batch = RecordBatch::try_from_iter([
///     ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
///     ("y", Arc::new(Int64Array::from(y)) as ArrayRef),
/// ])?;
/// let params = TrainParams::parse_options("n_trees=10")?;
/// let model = Trainer::new(params).label("y").fit(&batch)?;
/// let predicted = model.predict(&batch)?; // an Int64 array, like the label
/// assert_eq!(predicted.len(), 200);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Trainer<'a> {
    params: Params,
    roles: ColumnRoles,
    on_progress: Option<OnProgress<'a>>,
    spill_dir: Option<&'a Path>,
}

impl std::fmt::Debug for Trainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("params", &self.params)
            .field("roles", &self.roles)
            .field("spill_dir", &self.spill_dir)
            .finish_non_exhaustive()
    }
}

/// A trainer's parameters: as given, checked by `fit`, or checked already.
#[derive(Clone, Debug)]
enum Params {
    Unchecked(TrainParams),
    Checked(CheckedParams),
}

impl<'a> Trainer<'a> {
    /// A trainer with these parameters, which `fit` checks (an error names
    /// the key); the label column is `label` until [`Trainer::label`] names
    /// another.
    pub fn new(params: TrainParams) -> Trainer<'a> {
        Trainer::with(Params::Unchecked(params))
    }

    /// A trainer with parameters [`TrainParams::check`] already checked.
    pub fn checked(params: CheckedParams) -> Trainer<'a> {
        Trainer::with(Params::Checked(params))
    }

    fn with(params: Params) -> Trainer<'a> {
        Trainer {
            params,
            roles: ColumnRoles { label: "label".to_owned(), ..ColumnRoles::default() },
            on_progress: None,
            spill_dir: None,
        }
    }

    /// The label column.
    pub fn label(mut self, name: impl Into<String>) -> Self {
        self.roles.label = name.into();
        self
    }

    /// The feature columns (default: every column but the label and the weight).
    pub fn features<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.roles.features = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The column of sample weights.
    pub fn weight(mut self, name: impl Into<String>) -> Self {
        self.roles.weight = Some(name.into());
        self
    }

    /// Calls `on_progress` after each tree (forest) or round (boosting).
    pub fn on_progress(mut self, on_progress: OnProgress<'a>) -> Self {
        self.on_progress = Some(on_progress);
        self
    }

    /// Random forests: keep each finished tree in an unnamed temporary file in
    /// `dir` instead of in memory (the model reads them back, mapped). The
    /// same model bytes, with training's memory bounded by the trees being grown.
    pub fn spill_trees_to(mut self, dir: &'a Path) -> Self {
        self.spill_dir = Some(dir);
        self
    }

    /// The parameters (checked or not).
    pub fn params(&self) -> &TrainParams {
        match &self.params {
            Params::Unchecked(params) => params,
            Params::Checked(params) => params,
        }
    }

    /// The columns' roles.
    pub fn roles(&self) -> &ColumnRoles {
        &self.roles
    }

    /// Trains on record batches, all of one schema: a batch, a slice or a
    /// vector of them.
    pub fn fit(&self, batches: impl IntoBatches) -> Result<Model> {
        Ok(self.fit_owned(self.training_data(batches)?)?.model)
    }

    /// Reads and checks record batches as this trainer's training data (the
    /// label, features and weights of its roles, rows in canonical order).
    pub fn training_data(&self, batches: impl IntoBatches) -> Result<TrainingData> {
        let batches = batches.into_batches();
        let Some(first) = batches.first() else {
            return Err(ArborError::NothingToTrain("no record batches to train on".into()));
        };
        let schema = first.schema();
        if let Some(other) = batches.iter().find(|b| b.schema().fields() != schema.fields()) {
            return Err(ArborError::Data(format!(
                "record batches of different schemas: ({}) and ({})",
                field_list(&schema),
                field_list(&other.schema())
            )));
        }
        TrainingData::from_owned_batches(&schema, batches, &self.roles, self.params().task)
    }

    /// Trains on prepared data, which stays the caller's (to train again on).
    pub fn fit_data(&self, data: &TrainingData) -> Result<Trained> {
        let params = self.check(data)?;
        fit(Cow::Borrowed(data), &params, self.progress(), self.spill_dir)
    }

    /// Trains on prepared data, freeing what it can of it as it goes (the raw
    /// feature columns once binned, unless out-of-bag results walk them). The
    /// same model as [`Trainer::fit_data`].
    pub fn fit_owned(&self, data: TrainingData) -> Result<Trained> {
        let params = self.check(&data)?;
        fit(Cow::Owned(data), &params, self.progress(), self.spill_dir)
    }

    /// The parameters checked for the data's task, once, before any work.
    fn check(&self, data: &TrainingData) -> Result<CheckedParams> {
        match &self.params {
            Params::Unchecked(params) => params.check()?.for_task(data.task()),
            Params::Checked(params) => params.for_task(data.task()),
        }
    }

    fn progress(&self) -> OnProgress<'a> {
        self.on_progress.unwrap_or(&no_progress)
    }
}

/// The progress callback of a trainer that was given none.
fn no_progress(_: &Progress) {}

/// Record batches to train on, however the caller holds them. Batches are
/// shared, not copied: a clone of a batch is a clone of its column handles.
pub trait IntoBatches {
    /// The batches, in order.
    fn into_batches(self) -> Vec<RecordBatch>;
}

impl IntoBatches for Vec<RecordBatch> {
    fn into_batches(self) -> Vec<RecordBatch> {
        self
    }
}

impl IntoBatches for &[RecordBatch] {
    fn into_batches(self) -> Vec<RecordBatch> {
        self.to_vec()
    }
}

impl<const N: usize> IntoBatches for &[RecordBatch; N] {
    fn into_batches(self) -> Vec<RecordBatch> {
        self.to_vec()
    }
}

impl IntoBatches for &Vec<RecordBatch> {
    fn into_batches(self) -> Vec<RecordBatch> {
        self.clone()
    }
}

impl IntoBatches for RecordBatch {
    fn into_batches(self) -> Vec<RecordBatch> {
        vec![self]
    }
}

impl IntoBatches for &RecordBatch {
    fn into_batches(self) -> Vec<RecordBatch> {
        vec![self.clone()]
    }
}

fn field_list(schema: &arrow::datatypes::Schema) -> String {
    schema.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>().join(", ")
}
