//! Decision forests for arbor: training, prediction, and the model format.
//!
//! [`TrainingData`] reads and checks Arrow data, [`train`] grows a forest on
//! its quantized form, and the resulting [`Model`] predicts record batches and
//! encodes to versioned, checksummed bytes.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
//! use arbor_ensemble::{train, Model, TrainParams, TrainingData};
//!
//! let x: Vec<f64> = (0..200).map(|i| i as f64).collect();
//! let y: Vec<i64> = x.iter().map(|&v| (v >= 100.0) as i64).collect();
//! let batch = RecordBatch::try_from_iter([
//!     ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
//!     ("label", Arc::new(Int64Array::from(y)) as ArrayRef),
//! ]).unwrap();
//! let data = TrainingData::from_batches(&batch.schema(), &[batch.clone()], "label", None, None, None).unwrap();
//! let params = TrainParams::parse_options("n_trees=10").unwrap();
//! let model = train(&data, &params, &|_| {}).unwrap();
//! let again = Model::from_bytes(&model.to_bytes()).unwrap();
//! let predictions = again.predict_batch(&batch).unwrap();
//! assert_eq!(predictions.class_index()[150], 1);
//! ```

mod boosting;
mod canonical_order;
mod dataset;
mod dot;
mod error;
mod flat_tree;
mod forest;
mod key_map;
mod label;
mod lightgbm_text;
mod loss;
mod model;
mod model_builder;
mod model_format;
mod out_of_bag;
mod params;
mod predict;
mod ranked_columns;
mod ranked_forest;
mod raw_columns;
mod summary;
mod tree;
mod tree_builder;
mod tree_columns;
mod tree_sections;
mod trees;
mod xgboost_json;

pub use boosting::{train_boosting, train_boosting_owned};
pub use dataset::{FeatureSpec, NamedColumn, TrainingData};
pub use error::{ArborError, Result};
pub use forest::{train_forest, train_forest_owned, train_forest_spilled, train_forest_with_oob, tree_rng};
pub use label::{default_task, Classes, LabelInfo, Target};
pub use model::{Boosting, EarlyStopping, Feature, Model};
pub use model_builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
pub use model_format::{fingerprint, FORMAT_VERSION, MAGIC};
pub use out_of_bag::{OobObservation, OutOfBag};
pub use params::{
    Algorithm, AlgorithmChoice, BoostingParams, CriterionKind, ForestParams, ImportanceKind, Loss, MaxFeatures, Task,
    TrainParams, Voting, OPTION_KEYS,
};
pub use predict::Predictions;
pub use tree::{Node, SplitTest, Tree, TreeShape, ZERO_THRESHOLD};
pub use trees::Trees;

/// Boosting reports its training loss every this many rounds.
pub const TRAIN_LOSS_EVERY: usize = 10;

/// How far training has come, reported after each tree (forest) or round (boosting).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Trees or rounds done.
    pub done: usize,
    /// Trees or rounds asked for.
    pub total: usize,
    /// Boosting: the mean training loss after this round, reported every
    /// [`TRAIN_LOSS_EVERY`] rounds and on the last (each costs a pass over the rows).
    pub train_loss: Option<f64>,
    /// Boosting with early stopping: the mean validation loss after this round.
    pub valid_loss: Option<f64>,
}

/// Trains the model `params` ask for; `on_progress` hears of each tree or round.
pub fn train(data: &TrainingData, params: &TrainParams, on_progress: &(dyn Fn(&Progress) + Sync)) -> Result<Model> {
    match params.algorithm.0 {
        Algorithm::RandomForest => train_forest(data, params, on_progress),
        Algorithm::GradientBoosting => train_boosting(data, params, on_progress),
    }
}

/// [`train`] for a caller done with the data, which it may free as it goes
/// (the raw feature columns, once binned, unless out-of-bag results need
/// them). The same model.
pub fn train_owned(
    data: TrainingData,
    params: &TrainParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Model> {
    match params.algorithm.0 {
        Algorithm::RandomForest => train_forest_owned(data, params, on_progress).map(|(model, _)| model),
        Algorithm::GradientBoosting => train_boosting_owned(data, params, on_progress),
    }
}
