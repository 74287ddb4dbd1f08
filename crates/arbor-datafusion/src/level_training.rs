//! Data-parallel training for sessions whose tables are spread over many
//! workers (a Ballista cluster): a query planner that trains a
//! `train_forest(...)` without GROUP BY level by level before the statement
//! runs. Gradient boosting grows each round's trees a level per job; a
//! random forest grows all its trees a level per job, then finishes the
//! nodes small enough from their rows (PLANET), spread over the tasks.
//!
//! The planner wraps another (Ballista's, or DataFusion's own). For each
//! such aggregate in a statement it runs one small query per step through
//! the wrapped planner: `SELECT arbor_train_step(<state>, label, features...)
//! FROM <the aggregate's input>`, first to summarize the rows, then once per
//! tree level. Every partition sums its own rows; only summaries and
//! histograms move, to the final aggregate that grows the level.
//!
//! A forest's small nodes then finish in batches, each in one job:
//!
//! ```text
//! SELECT key, arbor_finish_nodes(<state>, key, record, <options>)
//! FROM (SELECT unnest(arbor_small_node_records(<state>, label, features..., <options>)) ...)
//! GROUP BY key
//! ```
//!
//! Every partition sends each row, binned, to each small node it reaches;
//! the grouping spreads the nodes over the tasks (the driver routes each
//! node's key so that the tasks get near-equal rows, the largest nodes in
//! the first tasks: [`arbor_ensemble::LevelState::route_finishing`]), each grows its nodes'
//! subtrees, and the driver grafts them. No task holds more than its
//! groups' rows.
//!
//! The finished model then replaces the aggregate as a table of one row
//! ([`crate::ModelTable`]: as a literal, every optimizer pass would format
//! it), and the
//! statement runs as written around it. Options that need every row in one
//! place, a single class or no rows leave the aggregate to train as it
//! always does (on a cluster: as sub-forests).

use std::sync::Arc;

use arbor_ensemble::{Algorithm, CheckedParams, LevelState, NodeKey};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Schema, UInt64Type};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{exec_err, Column, ScalarValue};
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::provider_as_source;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::TaskContext;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::{
    col, Aggregate, AggregateUDF, Expr, LogicalPlan, LogicalPlanBuilder, Projection, ScalarUDF,
};
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

use crate::error::FunctionError;
use crate::finish_nodes::FinishNodes;
use crate::grouped_tasks::grouped_tasks;
use crate::level_progress::{LevelProgress, LevelStep};
use crate::model_column::{model_scalar, ModelKind};
use crate::model_table::ModelTable;
use crate::resident_shards::{file_scan, with_options};
use crate::small_node_records::SmallNodeRecords;
use crate::sql_options::TrainOptions;
use crate::train_step::{StepOutcome, TrainStep};

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The name of the one-row table that holds a trained model ([`ModelTable`]).
const MODEL_TABLE: &str = "arbor_trained_model";

/// The column of a finishing job's records, between the scan and the grouping.
const RECORDS: &str = "__arbor_records";

/// A query planner that trains forests and gradient boosting level by level over the
/// partitions of its input (see the module's documentation), then plans
/// the statement with the planner it wraps.
#[derive(Debug)]
pub struct LevelTraining {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
    step: Arc<AggregateUDF>,
    records: Arc<ScalarUDF>,
    finish: Arc<AggregateUDF>,
}

impl LevelTraining {
    /// A planner that trains level by level, then plans with `inner`.
    pub fn new(inner: Arc<dyn QueryPlanner + Send + Sync>) -> LevelTraining {
        LevelTraining {
            inner,
            step: Arc::new(AggregateUDF::new_from_impl(TrainStep::new())),
            records: Arc::new(ScalarUDF::new_from_impl(SmallNodeRecords::new())),
            finish: Arc::new(AggregateUDF::new_from_impl(FinishNodes::new())),
        }
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
        // Every job of the training reads the input's partitions alike (their files name its shards).
        let context = job_context(session, whole_files(&aggregate.input, session).await);
        let mut jobs = 1;
        let report = |state: &LevelState, jobs: usize| {
            if let Some(progress) = &progress {
                let standing = state.standing();
                let (rounds_done, n_rounds, unit) = (standing.done, standing.total, standing.unit);
                progress.report(&LevelStep { jobs, rounds_done, n_rounds, unit, open_nodes: standing.open_nodes });
            }
        };
        let mut state = match self.step(aggregate, &call, Vec::new(), session, &context).await? {
            StepOutcome::Grow(state) => state,
            StepOutcome::OneNode(_) => return Ok(None),
            StepOutcome::Sums(_) => return exec_err!("{NAME}: the summary job returned sums"),
        };
        // The training's name for the shards its level jobs keep ([`crate::resident_shards`]).
        state.set_training_id(training_id());
        let shards = state.shard_key();
        report(&state, jobs);
        while !state.is_done() {
            if state.finishing().is_empty() {
                // The level grows here, where the previous level's histograms are kept.
                match self.step(aggregate, &call, state.to_bytes(), session, &context).await? {
                    StepOutcome::Sums(sums) => state.grow(&call.params, sums).exec(NAME)?,
                    StepOutcome::Grow(_) => return exec_err!("{NAME}: a level job returned a state, not sums"),
                    StepOutcome::OneNode(reason) => return exec_err!("{NAME}: level-wise training stopped: {reason}"),
                }
            } else {
                // Near-equal rows in each task of the job's grouping, the largest nodes first.
                let tasks = session.config().target_partitions();
                state.route_finishing(tasks, |keys| grouped_tasks(keys, tasks))?;
                let grown = self.finish(aggregate, &call, state.finishing_bytes(), session, &context).await?;
                state.graft_nodes(&call.params, grown).exec(NAME)?;
            }
            jobs += 1;
            report(&state, jobs);
        }
        // Executors drop the training's shards once idle; one in this process (standalone) goes now.
        crate::shard_store::shard_store().release(shards);
        let model = state.into_model(&call.params).exec(NAME)?;
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

    /// Runs one job that finishes the small nodes a forest's `state` names
    /// next ([`LevelState::finishing`]): each node's key and its grown
    /// subtree's bytes.
    async fn finish(
        &self,
        aggregate: &Aggregate,
        call: &LevelCall,
        state: Vec<u8>,
        session: &dyn Session,
        context: &Arc<TaskContext>,
    ) -> Result<Vec<(NodeKey, Vec<u8>)>> {
        let (_, columns) = call.args.split_last().expect("a level call has options");
        let options = || ScalarValue::Utf8(Some(call.options.clone()));
        let args = std::iter::once(named_state(Expr::Literal(ScalarValue::Binary(Some(state.clone())), None)))
            .chain(columns.iter().cloned())
            .chain(std::iter::once(Expr::Literal(options(), None)));
        let records = Expr::ScalarFunction(ScalarFunction::new_udf(self.records.clone(), args.collect()));
        let finish = Expr::AggregateFunction(AggregateFunction::new_udf(
            self.finish.clone(),
            vec![named_state(keyed(ScalarValue::Binary(Some(state)))), col("key"), col("record"), keyed(options())],
            false,
            None,
            vec![],
            None,
        ));
        let plan = LogicalPlanBuilder::from(aggregate.input.as_ref().clone())
            .project([records.alias(RECORDS)])?
            .unnest_column(RECORDS)?
            .project([get_field(col(RECORDS), "key").alias("key"), get_field(col(RECORDS), "record").alias("record")])?
            .aggregate([col("key")], [finish])?
            .build()?;
        let exec = self.inner.create_physical_plan(&plan, session).await?;
        let mut grown = Vec::new();
        for batch in collect(exec, context.clone()).await? {
            let (Some(keys), Some(subtrees)) =
                (batch.column(0).as_primitive_opt::<UInt64Type>(), batch.column(1).as_binary_opt::<i32>())
            else {
                return exec_err!("{NAME}: a finishing job returned {:?}", batch.schema());
            };
            for (key, subtree) in keys.iter().zip(subtrees.iter()) {
                let (Some(key), Some(subtree)) = (key, subtree) else {
                    return exec_err!("{NAME}: a finishing job returned a null node");
                };
                grown.push((NodeKey::from_bits(key), subtree.to_vec()));
            }
        }
        Ok(grown)
    }

    /// Runs one step over the aggregate's input: `state` empty for the summary.
    async fn step(
        &self,
        aggregate: &Aggregate,
        call: &LevelCall,
        state: Vec<u8>,
        session: &dyn Session,
        context: &Arc<TaskContext>,
    ) -> Result<StepOutcome> {
        let (options, columns) = call.args.split_last().expect("a level call has options");
        let options = match options {
            Expr::Literal(value, _) => keyed(value.clone()),
            other => other.clone(),
        };
        let args = std::iter::once(named_state(keyed(ScalarValue::Binary(Some(state)))))
            .chain(columns.iter().cloned())
            .chain(std::iter::once(options));
        let step = Expr::AggregateFunction(AggregateFunction::new_udf(
            self.step.clone(),
            args.collect(),
            false,
            None,
            vec![],
            None,
        ));
        let plan = LogicalPlan::Aggregate(Aggregate::try_new(aggregate.input.clone(), vec![], vec![step])?);
        let exec = self.inner.create_physical_plan(&plan, session).await?;
        let batches = collect(exec, context.clone()).await?;
        let Some(bytes) = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
            let column = b.column(0).as_binary_opt::<i32>()?;
            column.is_valid(0).then(|| column.value(0).to_vec())
        }) else {
            return exec_err!("{NAME}: a training step returned no result");
        };
        StepOutcome::from_bytes(&bytes).exec(NAME)
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
fn job_context(session: &dyn Session, whole_files: bool) -> Arc<TaskContext> {
    with_options(&session.task_ctx(), |options| {
        options.optimizer.max_passes = 0;
        if whole_files {
            options.optimizer.repartition_file_scans = false;
        }
    })
}

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

/// An aggregate's constant argument: a batch makes its arguments arrays of
/// its length, so constants go as dictionaries (one value, a key per row).
fn keyed(value: ScalarValue) -> Expr {
    Expr::Literal(ScalarValue::Dictionary(Box::new(DataType::Int32), Box::new(value)), None)
}

/// The training state's literal under a short name. DataFusion names an
/// expression by its arguments' text, so unnamed, a state of a few hundred
/// kilobytes was formatted byte by byte wherever the aggregate was named
/// (its schema, the plan a cluster's scheduler logs for every job: 9 MB of
/// log for 10 rounds of boosting). Physical planning drops the name: the
/// functions still read a literal.
fn named_state(literal: Expr) -> Expr {
    literal.alias("arbor_state")
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
        let context = job_context(&state, whole);
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
