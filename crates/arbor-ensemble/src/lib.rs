//! Decision forests for arbor: training, prediction, and the model format.
//!
//! One way in: a [`Trainer`] takes the parameters and the columns' roles and
//! fits a [`Model`] on Arrow record batches; the model predicts record
//! batches as Arrow arrays (classes typed like the label, probabilities as a
//! `FixedSizeList`), and encodes to versioned, checksummed bytes.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray};
//! use arbor_ensemble::{Model, Trainer, TrainParams};
//!
//! let x: Vec<f64> = (0..300).map(f64::from).collect();
//! let w: Vec<f64> = x.iter().map(|&v| 1.0 + v % 2.0).collect();
//! let y: Vec<&str> = x.iter().map(|&v| if v < 150.0 { "low" } else { "high" }).collect();
//! let batch = RecordBatch::try_from_iter([
//!     ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
//!     ("w", Arc::new(Float64Array::from(w)) as ArrayRef),
//!     ("y", Arc::new(StringArray::from(y)) as ArrayRef),
//! ])?;
//!
//! // Parameters by name, as on the command line and in SQL (or typed).
//! let params = TrainParams::parse_options("n_trees=20 max_depth=8")?;
//! let model = Trainer::new(params).label("y").weight("w").fit(&batch)?;
//!
//! // Predictions come back typed like the label.
//! let predicted = model.predict(&batch)?;
//! assert_eq!(predicted.as_string::<i32>().value(200), "high");
//! // Probabilities: one list of per-class values per row, in class order.
//! let proba = model.predict_proba(&batch)?;
//! assert_eq!(model.class_names(), ["high", "low"]);
//! assert_eq!(proba.value_length(), 2);
//!
//! // Models round-trip through their bytes.
//! let again = Model::from_bytes(&model.to_bytes())?;
//! assert_eq!(again.predict(&batch)?.as_ref(), predicted.as_ref());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod data;
mod error;
mod explain;
mod format;
mod interop;
mod memory;
mod model;
mod params;
mod predict;
mod report;
mod train;
mod trainer;

pub use data::binned_data::{BatchSource, BinnedData};
pub use data::dataset::{ColumnRoles, FeatureSpec, NamedColumn, RowColumns, TrainingData};
pub use data::label::{default_task, Classes, LabelInfo, Target};
pub use data::summary::{LevelSummary, BIN_SAMPLE_ROWS};
pub use error::{ArborError, Result};
pub use explain::{contributions_type, Contributions, Explainer};
pub use format::header::{fingerprint, FORMAT_VERSION, MAGIC};
pub use interop::export::ExportFormat;
pub use memory::{memory_limit, release_free_memory, set_memory_limit, with_memory_limit};
pub use model::builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
pub use model::feature::Feature;
pub use model::node_cover::NodeCover;
pub use model::tree::{Node, SplitTest, Tree, TreeShape, ZERO_THRESHOLD};
pub use model::trees::Trees;
pub use model::{Boosting, EarlyStopping, Model, RoundLoss};
pub use params::checked::CheckedParams;
pub use params::keys::OPTION_KEYS;
pub use params::reference::parameter_reference;
pub use params::types::{
    Algorithm, AlgorithmChoice, BoostingParams, ClassWeight, CriterionKind, ForestParams, ImportanceKind,
    InteractionSets, Loss, MaxFeatures, MonotoneConstraints, Task, TrainParams, TreeParams, Voting,
};
pub use predict::Predictions;
pub use train::cross_validation::Fold;
pub use train::distributed;
pub use train::distributed::{
    LevelBoosting, LevelForest, LevelForestSums, LevelHistograms, LevelShard, LevelStanding, LevelState, LevelSums,
    Message, NodeKey, NodeRecords,
};
pub use train::out_of_bag::{OobObservation, OutOfBag};
pub use train::progress::{Progress, TRAIN_LOSS_EVERY};
pub use train::Trained;
pub use trainer::{IntoBatches, OnProgress, Trainer};
