//! Decision forests for arbor: training, prediction, and the model format.
//!
//! [`TrainingData`] reads and checks Arrow data, [`train()`] grows a forest on
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

mod data;
mod error;
mod format;
mod interop;
mod model;
mod params;
mod predict;
mod train;

pub use data::dataset::{FeatureSpec, NamedColumn, TrainingData};
pub use data::label::{default_task, Classes, LabelInfo, Target};
pub use error::{ArborError, Result};
pub use format::header::{fingerprint, FORMAT_VERSION, MAGIC};
pub use model::builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
pub use model::feature::Feature;
pub use model::tree::{Node, SplitTest, Tree, TreeShape, ZERO_THRESHOLD};
pub use model::trees::Trees;
pub use model::{Boosting, EarlyStopping, Model};
pub use params::keys::OPTION_KEYS;
pub use params::types::{
    Algorithm, AlgorithmChoice, BoostingParams, CriterionKind, ForestParams, ImportanceKind, Loss, MaxFeatures, Task,
    TrainParams, Voting,
};
pub use predict::Predictions;
pub use train::boosting::{train_boosting, train_boosting_owned};
pub use train::forest::{train_forest, train_forest_owned, train_forest_spilled, train_forest_with_oob, tree_rng};
pub use train::out_of_bag::{OobObservation, OutOfBag};
pub use train::progress::{Progress, TRAIN_LOSS_EVERY};
pub use train::{train, train_owned};
