//! The front door to training: parameters, the roles of the columns, then `fit`.
//!
//! Whatever way the parameters were built (parsed from an options string,
//! set key by key, or written as a struct literal), training takes only
//! [`CheckedParams`]: a trainer given unchecked ones checks them once, here,
//! before any work, so nothing reaches training unchecked.

use std::borrow::Cow;
use std::path::Path;

use arrow::array::RecordBatch;

use crate::data::dataset::{field_list, ColumnRoles};
use crate::train::{fit, Trained};
use crate::{ArborError, BatchSource, BinnedData, CheckedParams, Model, Progress, Result, TrainParams, TrainingData};

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
    init_model: Option<&'a Model>,
}

impl std::fmt::Debug for Trainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("params", &self.params)
            .field("roles", &self.roles)
            .field("spill_dir", &self.spill_dir)
            .field("init_model", &self.init_model.map(|m| m.trees().len()))
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
            init_model: None,
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

    /// The column of query ids that `loss=lambdarank` ranks within
    /// (integers; a query's rows need not be contiguous).
    pub fn group(mut self, name: impl Into<String>) -> Self {
        self.roles.group = Some(name.into());
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

    /// Gradient boosting: appends this training's rounds to `model`, a
    /// boosted model arbor trained (continued training). The rows are binned
    /// on the model's bins, whatever `max_bins` says; the model's features,
    /// classes and loss are kept, and a mismatch is an error naming the
    /// column or key. A category the model never saw is read as missing, as
    /// prediction reads it. Trained on the model's rows, `n` rounds on top of
    /// a model of `k` grow the trees `k + n` rounds at once grow.
    pub fn init_model(mut self, model: &'a Model) -> Self {
        self.init_model = Some(model);
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
    /// vector of them. The rows are binned as they are read (see
    /// [`BinnedData`]); the batches stay the caller's.
    pub fn fit(&self, batches: impl IntoBatches) -> Result<Model> {
        let batches = batches.into_batches();
        if batches.is_empty() {
            return Err(ArborError::NothingToTrain("no record batches to train on".into()));
        }
        Ok(self.fit_owned_binned(self.bin(batches.as_slice())?)?.model)
    }

    /// Bins the rows of `source` for this trainer's roles, task and bins
    /// (`max_bins`, `min_bin_size`, `split_method`), reading it twice
    /// (see [`BinnedData`]); [`Trainer::fit_binned`] then trains on them
    /// as often as asked.
    pub fn bin(&self, source: &(impl BatchSource + ?Sized)) -> Result<BinnedData> {
        let tree = self.params().tree();
        if let Some(model) = self.init_model {
            crate::train::continued::refuse_exact(tree.exact)?;
            return BinnedData::read_for_model(source, &self.roles, model, tree.quantize_params());
        }
        if tree.exact {
            // Exact splits need every raw value: the table is read whole.
            let mut batches = Vec::new();
            for batch in source.batches()? {
                batches.push(batch?);
            }
            return BinnedData::from_training(Cow::Owned(self.training_data(batches)?), tree.quantize_params(), true);
        }
        BinnedData::read(source, &self.roles, self.params().task, tree.quantize_params())
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
        match self.init_model {
            Some(model) => {
                let roles = crate::data::model_bins::model_roles(&self.roles, model)?;
                TrainingData::from_owned_batches(&schema, batches, &roles, self.params().task.or(Some(model.task)))
            }
            None => TrainingData::from_owned_batches(&schema, batches, &self.roles, self.params().task),
        }
    }

    /// Trains on prepared data, which stays the caller's (to train again on).
    pub fn fit_data(&self, data: &TrainingData) -> Result<Trained> {
        let params = self.check(data.task())?;
        let binned = self.bin_training(Cow::Borrowed(data), &params)?;
        fit(Cow::Owned(binned), &params, self.progress(), self.spill_dir, self.init_model)
    }

    /// Trains on prepared data, freeing what it can of it as it goes (the raw
    /// feature columns once binned, unless exact splits need them). The
    /// same model as [`Trainer::fit_data`].
    pub fn fit_owned(&self, data: TrainingData) -> Result<Trained> {
        let params = self.check(data.task())?;
        let binned = self.bin_training(Cow::Owned(data), &params)?;
        fit(Cow::Owned(binned), &params, self.progress(), self.spill_dir, self.init_model)
    }

    /// Training data binned for these parameters, or on the model continued.
    fn bin_training(&self, data: Cow<'_, TrainingData>, params: &CheckedParams) -> Result<BinnedData> {
        let tree = params.tree();
        match self.init_model {
            Some(model) => {
                crate::train::continued::refuse_exact(tree.exact)?;
                BinnedData::from_training_for_model(data, model, tree.quantize_params())
            }
            None => BinnedData::from_training(data, tree.quantize_params(), tree.exact),
        }
    }

    /// Trains on binned rows, which stay the caller's: cross-validation and
    /// parameter searches bin once and fit many times. Parameters that
    /// would bin the rows differently (`max_bins`, `min_bin_size`,
    /// `split_method`) are refused, naming the key and both values.
    pub fn fit_binned(&self, data: &BinnedData) -> Result<Trained> {
        let params = self.check_binned(data)?;
        fit(Cow::Borrowed(data), &params, self.progress(), self.spill_dir, self.init_model)
    }

    /// [`Trainer::fit_binned`] on binned rows handed over: boosting moves
    /// the bins into its row-major copy instead of copying them.
    pub fn fit_owned_binned(&self, data: BinnedData) -> Result<Trained> {
        let params = self.check_binned(&data)?;
        fit(Cow::Owned(data), &params, self.progress(), self.spill_dir, self.init_model)
    }

    /// `folds`-fold cross-validation on binned rows: each fold's model trains
    /// on the other folds (dealt at random from `seed`, in equal shares)
    /// with the rows' bins, and is scored on its own fold (accuracy, or
    /// RMSE for regression). The rows are binned once for every fold.
    pub fn cross_validate(&self, data: &BinnedData, folds: usize) -> Result<Vec<crate::Fold>> {
        let seed = self.params().tree().seed;
        crate::train::cross_validation::cross_validate(data, folds, seed, |fold| Ok(self.fit_binned(fold)?.model))
    }

    /// The parameters checked for binned data: its task, and its bins.
    fn check_binned(&self, data: &BinnedData) -> Result<CheckedParams> {
        if let Some(task) = self.params().task.filter(|&t| t != data.task()) {
            return Err(ArborError::InvalidOption {
                key: "task".into(),
                message: format!("{task:?} asked, but the binned data was read for {:?}", data.task()),
            });
        }
        let params = self.check(data.task())?;
        let tree = params.tree();
        let (quantize, exact) = data.quantize();
        let refuse = |key: &str, asked: String, binned: String| {
            Err(ArborError::InvalidOption {
                key: key.into(),
                message: format!(
                    "{asked} asked, but the binned data was binned with {binned}; bin the rows again to change it"
                ),
            })
        };
        let method = |exact: bool| if exact { "exact" } else { "hist" };
        if self.init_model.is_some() {
            // The bins are the model's whatever the parameters say; boosting checks them.
            return Ok(params);
        }
        if tree.exact != exact {
            return refuse("split_method", method(tree.exact).into(), method(exact).into());
        }
        if !exact && tree.max_bins != quantize.max_bins {
            return refuse("max_bins", tree.max_bins.to_string(), quantize.max_bins.to_string());
        }
        if !exact && tree.min_bin_size != quantize.min_bin_size {
            return refuse("min_bin_size", tree.min_bin_size.to_string(), quantize.min_bin_size.to_string());
        }
        if !exact && tree.bin_boundaries != quantize.boundaries {
            return refuse("bin_boundaries", tree.bin_boundaries.name().into(), quantize.boundaries.name().into());
        }
        Ok(params)
    }

    /// The parameters checked for the data's task, once, before any work.
    fn check(&self, task: crate::Task) -> Result<CheckedParams> {
        match &self.params {
            Params::Unchecked(params) => params.check()?.for_task(task),
            Params::Checked(params) => params.for_task(task),
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
