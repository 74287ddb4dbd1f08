//! DataFusion functions for arbor: train and serve decision forests in SQL.
//!
//! [`register`] adds to a `SessionContext`:
//! - `train_forest(label, feature, ... [, 'options'])`, an aggregate returning
//!   the model (one per group with GROUP BY) as a [model column](model_column):
//!   its bytes, and in its type the type of its predictions;
//! - `predict_forest(model, feature, ...)`, the prediction per row, typed like
//!   the label for classification and Float64 for regression;
//! - `predict_forest_proba(model, feature, ...)`, class probabilities as `List<Float64>`;
//! - `predict_forest_contributions(model, feature, ...)`, each feature's SHAP
//!   contribution to the raw score, then the bias, as `List<Float64>`;
//! - `forest_info(model)`, what `arbor inspect --json` prints, as JSON text;
//! - `forest_importance(model)`, a list of `{feature, importance}` structs (for `unnest`).
//!
//! [`register`] also adds [`BinnedTraining`], a physical optimizer rule
//! under which a `train_forest` without GROUP BY reads its input twice and
//! bins as it reads, so the table's raw values are never held together.
//!
//! For sessions whose tables are spread over many workers (a Ballista
//! cluster), [`LevelTraining`] is a query planner that trains forests and
//! gradient boosting level by level over the partitions, through the
//! internal functions [`TrainStep`] (`arbor_train_step`),
//! [`SmallNodeRecords`] (`arbor_small_node_records`) and [`FinishNodes`]
//! (`arbor_finish_nodes`).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! arbor_datafusion::register(&ctx);
//! let sql = "WITH t AS (SELECT CAST(v AS DOUBLE) AS x, v % 2 AS label FROM generate_series(1, 200) AS s(v)),
//!            m AS (SELECT train_forest(label, x, 'n_trees=5') AS model FROM t)
//!            SELECT count(*) FROM t, m WHERE predict_forest(m.model, t.x) = t.label";
//! let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
//! assert_eq!(batches[0].num_rows(), 1);
//! # });
//! ```

pub mod binned_training;
mod column_chunks;
mod error;
pub mod finish_nodes;
mod forest_importance;
mod forest_info;
mod grouped_tasks;
mod init_model;
mod level_functions;
mod level_progress;
pub mod level_training;
mod model_argument;
mod model_cache;
pub mod model_column;
mod model_table;
mod predict_forest;
pub mod resident_shards;
mod session_jobs;
pub mod shard_store;
pub mod small_node_records;
mod sql_options;
mod sql_reference;
mod state_cache;
mod train_arguments;
mod train_forest;
mod train_step;

use std::sync::Arc;

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

pub use binned_training::{BinnedTraining, BinnedTrainingExec};
pub use finish_nodes::{FinishNodes, FINISH_NODES};
pub use forest_importance::ForestImportance;
pub use forest_info::ForestInfo;
pub use level_functions::LevelFunctions;
pub use level_progress::{LevelProgress, LevelStep};
pub use level_training::LevelTraining;
pub use model_cache::ModelCache;
pub use model_column::{model_bytes, model_type, ModelKind};
pub use model_table::ModelTable;
pub use predict_forest::{PredictForest, PredictOutput};
pub use resident_shards::{LevelStepExec, ResidentShards};
pub use session_jobs::{lost_result, LOST_RESULT};
pub use shard_store::{shard_store, ShardKey, ShardStats, ShardStore};
pub use small_node_records::{SmallNodeRecords, SMALL_NODE_RECORDS};
pub use sql_reference::{function_docs, reference_markdown, DOC_SECTION};
pub use train_forest::TrainForest;
pub use train_step::{TrainStep, TRAIN_STEP};

/// Every arbor scalar function, decoding models through one new cache (so a
/// session decodes each model once, and no session's models answer for another's).
pub fn scalar_functions() -> Vec<ScalarUDF> {
    let cache = ModelCache::new();
    vec![
        ScalarUDF::new_from_impl(PredictForest::new(PredictOutput::Prediction, cache.clone())),
        ScalarUDF::new_from_impl(PredictForest::new(PredictOutput::Probabilities, cache.clone())),
        ScalarUDF::new_from_impl(PredictForest::new(PredictOutput::Contributions, cache.clone())),
        ScalarUDF::new_from_impl(ForestInfo::new(cache.clone())),
        ScalarUDF::new_from_impl(ForestImportance::new(cache)),
    ]
}

/// Every arbor aggregate function.
pub fn aggregate_functions() -> Vec<AggregateUDF> {
    vec![AggregateUDF::new_from_impl(TrainForest::new())]
}

/// Registers arbor's functions on a session, and the rule that trains a
/// `train_forest` without GROUP BY binning as it reads ([`BinnedTraining`]).
pub fn register(ctx: &SessionContext) {
    for f in scalar_functions() {
        ctx.register_udf(f);
    }
    for f in aggregate_functions() {
        ctx.register_udaf(f);
    }
    let state = ctx.state_ref();
    let mut state = state.write();
    if !state.physical_optimizers().iter().any(|rule| rule.name() == BinnedTraining::NAME) {
        *state = SessionStateBuilder::new_from_existing(state.clone())
            .with_physical_optimizer_rule(Arc::new(BinnedTraining))
            .build();
    }
}

/// Registers arbor's functions on any function registry (e.g. a `SessionState`);
/// add [`BinnedTraining`] to its physical optimizer rules for training that
/// bins as it reads, as [`register`] does.
pub fn register_all(registry: &mut dyn FunctionRegistry) -> datafusion::error::Result<()> {
    for f in scalar_functions() {
        registry.register_udf(f.into())?;
    }
    for f in aggregate_functions() {
        registry.register_udaf(f.into())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn function_names_are_unique() {
        let mut names = HashSet::new();
        for f in scalar_functions() {
            assert!(names.insert(f.name().to_owned()), "{}", f.name());
        }
        for f in aggregate_functions() {
            assert!(names.insert(f.name().to_owned()), "{}", f.name());
        }
        assert_eq!(names.len(), 6);
    }
}
