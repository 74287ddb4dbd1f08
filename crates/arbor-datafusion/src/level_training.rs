//! Data-parallel training for sessions whose tables are spread over many
//! workers (a Ballista cluster): a query planner that trains a
//! `train_forest(...)` without GROUP BY level by level before the statement
//! runs. Gradient boosting grows each round's trees a level per job; a
//! random forest grows all its trees a level per job, then finishes the
//! nodes small enough from their rows (PLANET), spread over the tasks.
//!
//! The planner wraps another (Ballista's, or DataFusion's own). For each
//! such aggregate in a statement it runs arbor's driver
//! ([`arbor_ensemble::distributed::train`]) over jobs that are small
//! queries on the aggregate's input, planned by the wrapped planner
//! (`session_jobs.rs`): first a summary of the rows, then one job per
//! tree level. Every partition sums its own rows; only summaries and
//! histograms move, to the final aggregate that merges them for the driver.
//!
//! A forest's small nodes then finish in batches, each in one job: every
//! partition sends each row, binned, to each small node it reaches; the
//! grouping spreads the nodes over the tasks (the driver routes each
//! node's key so that the tasks get near-equal rows, the largest nodes in
//! the first tasks: [`arbor_ensemble::LevelState::route_finishing`]), each
//! grows its nodes' subtrees, and the driver grafts them. No task holds
//! more than its groups' rows.
//!
//! The finished model then replaces the aggregate as a table of one row
//! ([`crate::ModelTable`]: as a literal, every optimizer pass would format
//! it), and the
//! statement runs as written around it. Options that need every row in one
//! place, a single class or no rows leave the aggregate to train as it
//! always does (on a cluster: as sub-forests).

use std::sync::Arc;

use arbor_ensemble::distributed::{self, DriverError, Outcome};
use arbor_ensemble::{Algorithm, CheckedParams, LevelStanding, LevelState};
use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{exec_err, Column, ScalarValue};
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::provider_as_source;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, LogicalPlan, LogicalPlanBuilder, Projection};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

use crate::error::FunctionError;
use crate::level_functions::LevelFunctions;
use crate::level_progress::{LevelProgress, LevelStep};
use crate::model_column::{model_scalar, ModelKind};
use crate::model_table::ModelTable;
use crate::resident_shards::{file_scan, with_options};
use crate::session_jobs::SessionJobs;
use crate::sql_options::TrainOptions;

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The name of the one-row table that holds a trained model ([`ModelTable`]).
const MODEL_TABLE: &str = "arbor_trained_model";

/// A query planner that trains forests and gradient boosting level by level over the
/// partitions of its input (see the module's documentation), then plans
/// the statement with the planner it wraps.
#[derive(Debug)]
pub struct LevelTraining {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
    functions: LevelFunctions,
}

impl LevelTraining {
    /// A planner that trains level by level, then plans with `inner`.
    pub fn new(inner: Arc<dyn QueryPlanner + Send + Sync>) -> LevelTraining {
        LevelTraining { inner, functions: LevelFunctions::new() }
    }

    /// `plan` with every aggregate that trains level by level replaced by its model.
    async fn train_in(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<LogicalPlan> {
        if matches!(plan, LogicalPlan::Explain(_) | LogicalPlan::Analyze(_)) {
            return Ok(plan.clone());
        }
        let mut found = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::Aggregate(aggregate) = node {
                // An aggregate read twice (a CTE) trains once.
                let seen = found.iter().any(|(a, _)| a == aggregate);
                if let Some(call) = LevelCall::of(aggregate).filter(|_| !seen) {
                    found.push((aggregate.clone(), call));
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        let mut trained = Vec::new();
        for (aggregate, call) in found {
            if let Some(replacement) = self.train(&aggregate, call, session).await? {
                trained.push((aggregate, replacement));
            }
        }
        if trained.is_empty() {
            return Ok(plan.clone());
        }
        let rewritten = plan.clone().transform_up(|node| {
            if let LogicalPlan::Aggregate(aggregate) = &node {
                if let Some((_, replacement)) = trained.iter().find(|(a, _)| a == aggregate) {
                    return Ok(Transformed::yes(replacement.clone()));
                }
            }
            Ok(Transformed::no(node))
        })?;
        Ok(rewritten.data)
    }

    /// Trains one aggregate's model level by level: the plan that gives it
    /// as a table of one row, or `None` when it must train on one node.
    async fn train(
        &self,
        aggregate: &Aggregate,
        call: LevelCall,
        session: &dyn Session,
    ) -> Result<Option<LogicalPlan>> {
        let progress = session.config().get_extension::<LevelProgress>();
        let report = |standing: &LevelStanding, jobs: usize| {
            if let Some(progress) = &progress {
                let (rounds_done, n_rounds, unit) = (standing.done, standing.total, standing.unit);
                progress.report(&LevelStep { jobs, rounds_done, n_rounds, unit, open_nodes: standing.open_nodes });
            }
        };
        let mut jobs = SessionJobs {
            planner: self.inner.as_ref(),
            functions: &self.functions,
            input: &aggregate.input,
            args: &call.args,
            options: &call.options,
            session,
            // Every job of the training reads the input's partitions alike (their files name its shards).
            context: job_context(session, whole_files(&aggregate.input, session).await)?,
        };
        let model = match distributed::train(&mut jobs, &call.params, training_id(), report).await {
            Ok(Outcome::Model(model)) => *model,
            Ok(Outcome::OneNode(_)) => return Ok(None),
            Err(DriverError::Training(e)) => return Err(e).exec(NAME),
            Err(DriverError::Backend(e)) => return Err(e),
        };
        let field = aggregate.schema.field(0);
        let DataType::Struct(fields) = field.data_type() else {
            return exec_err!("{NAME}: the aggregate was planned as {}, not a model column", field.data_type());
        };
        let planned = fields.iter().find(|f| f.name() == "prediction").map(|f| f.data_type().clone());
        let predicts = model.prediction_type().exec(NAME)?;
        if planned.as_ref() != Some(&predicts) {
            return exec_err!("{NAME}: the model predicts {predicts}, but the query was planned for {planned:?}");
        }
        // A table of one row, not a literal: no optimizer pass formats the model ([`ModelTable`]).
        let model = model_scalar(model.to_bytes(), &predicts)?.to_array()?;
        let row = RecordBatch::try_new(Arc::new(Schema::new(vec![field.as_ref().clone()])), vec![model])?;
        let table = provider_as_source(Arc::new(ModelTable::new(row)));
        let scan = LogicalPlanBuilder::scan(MODEL_TABLE, table, None)?.build()?;
        let column = Expr::Column(Column::new(Some(MODEL_TABLE), field.name())).alias(field.name());
        let projection = Projection::try_new_with_schema(vec![column], Arc::new(scan), aggregate.schema.clone())?;
        Ok(Some(LogicalPlan::Projection(projection)))
    }
}

#[async_trait]
impl QueryPlanner for LevelTraining {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = self.train_in(plan, session).await?;
        self.inner.create_physical_plan(&plan, session).await
    }
}

/// Whether every file `input` scans is a Parquet file of at most one row
/// group. DataFusion cuts files into byte ranges to fill its target
/// partitions, and a range reads the row groups that start in it: a file of
/// one row group (pyarrow and pandas write up to a million rows in one)
/// gives one range its rows and the others none, and each empty partition
/// is still a task in every level job. Such files are better read whole.
/// Anything this cannot tell (no single file scan, a footer it cannot
/// read) answers no: DataFusion's ranges then stand.
async fn whole_files(input: &LogicalPlan, session: &dyn Session) -> bool {
    let Ok(plan) = DefaultPhysicalPlanner::default().create_physical_plan(input, session).await else {
        return false;
    };
    let mut scans = Vec::new();
    let _ = plan.apply(|node| {
        if let Some(scan) = file_scan(node.as_ref()) {
            scans.push(scan.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let [scan] = scans.as_slice() else { return false };
    if scan.file_source().file_type() != "parquet" {
        return false;
    }
    let Ok(store) = session.runtime_env().object_store(&scan.object_store_url) else { return false };
    let mut seen = std::collections::HashSet::new();
    for file in scan.file_groups.iter().flat_map(|group| group.files()) {
        if !seen.insert(file.object_meta.location.clone()) {
            continue;
        }
        match DFParquetMetadata::new(store.as_ref(), &file.object_meta).fetch_metadata().await {
            Ok(metadata) if metadata.num_row_groups() <= 1 => {}
            _ => return false,
        }
    }
    !seen.is_empty()
}

/// The context a training's jobs run in: the session's, reading each file
/// whole when [`whole_files`] says so, and with no pass of the logical
/// optimizer (the settings travel with each job to a cluster's scheduler,
/// which plans it). A job's plan is arbor's own step over the statement's
/// input, which the session has optimized already; the scheduler's passes
/// changed nothing in it but named the aggregate again and again, each
/// time formatting the training state's literal byte by byte: 20 ms a job
/// at 10 rounds of boosting, 110 ms at 100, as the state carries the trees.
/// On a Ballista session, the jobs' shuffle files are written uncompressed
/// ([`SHUFFLE_CODEC`]).
fn job_context(session: &dyn Session, whole_files: bool) -> Result<Arc<TaskContext>> {
    let mut refused = None;
    let context = with_options(&session.task_ctx(), |options| {
        options.optimizer.max_passes = 0;
        if whole_files {
            options.optimizer.repartition_file_scans = false;
        }
        if options.entries().iter().any(|entry| entry.key == SHUFFLE_CODEC) {
            refused = options.set(SHUFFLE_CODEC, "none").err();
        }
    });
    refused.map_or(Ok(context), Err)
}

/// Ballista's setting of the codec its shuffle files are written with
/// (lz4 by default). A training's shuffles hold a forest's small-node
/// records, bins that lz4 shrank by 3% on the cluster benchmark (216 MB
/// written against 223 MB), and a level's histograms; compressing and
/// decompressing them took 7% of a boosting executor's time.
pub const SHUFFLE_CODEC: &str = "ballista.shuffle.compression.codec";

/// A training's id: a number no other training of this or another driver draws.
fn training_id() -> u64 {
    let time = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    static TRAININGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&TRAININGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_le_bytes());
    hasher.update(&time.to_le_bytes());
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&(&time as *const u128 as usize).to_le_bytes());
    hasher.digest()
}

/// A `train_forest` call that trains level by level: its arguments and options.
struct LevelCall {
    args: Vec<Expr>,
    options: String,
    /// The options, checked.
    params: CheckedParams,
}

impl LevelCall {
    /// The call an aggregate makes, if it is one `train_forest` without
    /// GROUP BY, DISTINCT, FILTER or ORDER BY, whose options ask for
    /// training that can go level by level. A forest whose options name
    /// `parts` asked for sub-forests, one per partition, and is left to them.
    fn of(aggregate: &Aggregate) -> Option<LevelCall> {
        if !aggregate.group_expr.is_empty() || aggregate.aggr_expr.len() != 1 {
            return None;
        }
        let mut expr = &aggregate.aggr_expr[0];
        while let Expr::Alias(alias) = expr {
            expr = &alias.expr;
        }
        let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else { return None };
        if func.name() != NAME || params.distinct || params.filter.is_some() || !params.order_by.is_empty() {
            return None;
        }
        let Some(Expr::Literal(
            ScalarValue::Utf8(Some(text)) | ScalarValue::Utf8View(Some(text)) | ScalarValue::LargeUtf8(Some(text)),
            _,
        )) = params.args.last()
        else {
            return None;
        };
        // A model to continue (an argument of a model's type) is the aggregate's to train from.
        let schema = aggregate.input.schema();
        let is_model = |arg: &Expr| {
            datafusion::logical_expr::ExprSchemable::get_type(arg, schema.as_ref())
                .is_ok_and(|t| matches!(ModelKind::of(&t), Some(ModelKind::Typed(_) | ModelKind::Bytes)))
        };
        if params.args.iter().skip(1).any(is_model) {
            return None;
        }
        // Options that fail their check are left to `train_forest`, which reports the error.
        let options = TrainOptions::parse(text).ok()?;
        // A ranker's queries are the aggregate's, trained in one process.
        if options.group.is_some() {
            return None;
        }
        let checked = options.params.check().ok()?;
        let sub_forests = options.parts.is_some() && checked.algorithm.0 == Algorithm::RandomForest;
        (!sub_forests && LevelState::unsupported(&checked).is_none()).then(|| LevelCall {
            args: params.args.clone(),
            options: text.clone(),
            params: checked,
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

    use super::*;

    /// Whether a training over `dir`'s Parquet files reads them whole.
    async fn reads_whole(dir: &std::path::Path) -> bool {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
        ctx.register_parquet("t", &format!("{}/", dir.display()), ParquetReadOptions::default()).await.unwrap();
        let input = ctx.table("t").await.unwrap().into_optimized_plan().unwrap();
        let state = ctx.state();
        let whole = whole_files(&input, &state).await;
        let context = job_context(&state, whole).unwrap();
        let optimizer = &context.session_config().options().optimizer;
        assert_eq!(optimizer.repartition_file_scans, !whole, "the jobs' context says what was decided");
        assert_eq!(optimizer.max_passes, 0, "a job's plan is not optimized again");
        whole
    }

    /// Files of one row group each are read whole (cut into ranges, all
    /// but one range of each would be empty); a file of several row groups
    /// keeps DataFusion's ranges, which spread its row groups.
    #[tokio::test]
    async fn files_of_one_row_group_are_read_whole() {
        let dir = std::env::temp_dir().join(format!("arbor-whole-files-{}", std::process::id()));
        let ctx = SessionContext::new();
        for name in ["a", "b"] {
            let copy = format!(
                "COPY (SELECT v AS x, v % 2 AS label FROM generate_series(1, 1000) AS s(v)) \
                 TO '{}/one/{name}.parquet' STORED AS PARQUET",
                dir.display()
            );
            ctx.sql(&copy).await.unwrap().collect().await.unwrap();
        }
        let several = format!(
            "COPY (SELECT v AS x, v % 2 AS label FROM generate_series(1, 1000) AS s(v)) \
             TO '{}/several/c.parquet' STORED AS PARQUET OPTIONS ('format.max_row_group_size' '100')",
            dir.display()
        );
        ctx.sql(&several).await.unwrap().collect().await.unwrap();
        let one = reads_whole(&dir.join("one")).await;
        let cut = reads_whole(&dir.join("several")).await;
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(one, "two files of one row group each are read whole");
        assert!(!cut, "a file of ten row groups is cut into ranges");
    }
}
