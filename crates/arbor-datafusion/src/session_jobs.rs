//! The DataFusion backend of level-wise training
//! ([`arbor_ensemble::distributed::Backend`]): each job is one query over
//! the training's input, planned by the planner [`crate::LevelTraining`]
//! wraps (Ballista's on a cluster, so that the executors run it).
//!
//! A summary or level job:
//!
//! ```text
//! SELECT arbor_train_step(<state>, label, features..., <options>) FROM <input>
//! ```
//!
//! A forest's finishing job:
//!
//! ```text
//! SELECT key, arbor_finish_nodes(<state>, key, record, <options>)
//! FROM (SELECT unnest(arbor_small_node_records(<state>, label, features..., <options>)) ...)
//! GROUP BY key
//! ```

use std::sync::Arc;

use arbor_ensemble::distributed::Backend;
use arbor_ensemble::{Message, NodeKey};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, UInt64Type};
use datafusion::catalog::Session;
use datafusion::common::{exec_err, DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::TaskContext;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::{col, Aggregate, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::collect;

use crate::error::FunctionError;
use crate::grouped_tasks::grouped_tasks;
use crate::level_functions::LevelFunctions;

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The column of a finishing job's records, between the scan and the grouping.
const RECORDS: &str = "__arbor_records";

/// A training's jobs, run as queries in a session.
pub(crate) struct SessionJobs<'a> {
    /// The planner of each job's query.
    pub planner: &'a (dyn QueryPlanner + Send + Sync),
    /// The functions the jobs call.
    pub functions: &'a LevelFunctions,
    /// The rows the training reads: the `train_forest` aggregate's input.
    pub input: &'a Arc<LogicalPlan>,
    /// The call's label, features and per-row columns, then its options (a literal).
    pub args: &'a [Expr],
    /// The call's options, as text.
    pub options: &'a str,
    /// The session the jobs are planned in.
    pub session: &'a dyn Session,
    /// The context every job runs in (see `level_training::job_context`).
    pub context: Arc<TaskContext>,
}

/// How many times a job runs again when its result was lost with an executor.
const LOST_RESULT_RETRIES: usize = 2;

/// The words Ballista's client reports a result (or shuffle output) with
/// that it could not fetch from the executor holding it.
pub const LOST_RESULT: &str = "Shuffle fetch partition error from Executor";

/// Whether `error` says a job's result could not be fetched from the
/// executor that held it: the executor was lost after the job's last task
/// ran there, and Ballista, which saw the job finish, does not run it
/// again. Level-wise training runs it again.
pub fn lost_result(error: &DataFusionError) -> bool {
    error.to_string().contains(LOST_RESULT)
}

impl SessionJobs<'_> {
    /// The call's label, feature and per-row columns: its arguments before the options.
    fn columns(&self) -> &[Expr] {
        self.args.split_last().map_or(&[], |(_, columns)| columns)
    }

    /// Plans and runs one job, again (at most [`LOST_RESULT_RETRIES`] times)
    /// when its result could not be fetched from an executor lost since it
    /// ran ([`lost_result`]): a job's result depends on its state and rows
    /// alone, so running it again gives the same result.
    async fn run(&self, plan: &LogicalPlan) -> Result<Vec<RecordBatch>> {
        let mut retries = 0;
        loop {
            let exec = self.planner.create_physical_plan(plan, self.session).await?;
            match collect(exec, self.context.clone()).await {
                Err(error) if retries < LOST_RESULT_RETRIES && lost_result(&error) => {
                    retries += 1;
                    tracing::warn!("{NAME}: a job's result was lost with its executor; running the job again: {error}");
                }
                result => return result,
            }
        }
    }

    /// Runs one `arbor_train_step` over the input from `state` (empty for the summary).
    async fn step(&self, state: Vec<u8>) -> Result<Message> {
        // The options as the aggregate's constant, a dictionary like the state.
        let options = match self.args.last() {
            Some(Expr::Literal(value, _)) => keyed(value.clone()),
            _ => keyed(ScalarValue::Utf8(Some(self.options.to_string()))),
        };
        let args = std::iter::once(named_state(keyed(ScalarValue::Binary(Some(state)))))
            .chain(self.columns().iter().cloned())
            .chain(std::iter::once(options));
        let step = Expr::AggregateFunction(AggregateFunction::new_udf(
            self.functions.step.clone(),
            args.collect(),
            false,
            None,
            vec![],
            None,
        ));
        let plan = LogicalPlan::Aggregate(Aggregate::try_new(self.input.clone(), vec![], vec![step])?);
        let batches = self.run(&plan).await?;
        let Some(bytes) = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
            let column = b.column(0).as_binary_opt::<i32>()?;
            column.is_valid(0).then(|| column.value(0).to_vec())
        }) else {
            return exec_err!("{NAME}: a training step returned no result");
        };
        Message::from_bytes(&bytes).exec(NAME)
    }
}

impl Backend for SessionJobs<'_> {
    type Error = DataFusionError;

    async fn summary(&mut self) -> Result<Message> {
        self.step(Vec::new()).await
    }

    async fn level(&mut self, state: Vec<u8>) -> Result<Message> {
        self.step(state).await
    }

    async fn finish(&mut self, state: Vec<u8>) -> Result<Vec<(NodeKey, Vec<u8>)>> {
        let options = || ScalarValue::Utf8(Some(self.options.to_string()));
        let args = std::iter::once(named_state(Expr::Literal(ScalarValue::Binary(Some(state.clone())), None)))
            .chain(self.columns().iter().cloned())
            .chain(std::iter::once(Expr::Literal(options(), None)));
        let records = Expr::ScalarFunction(ScalarFunction::new_udf(self.functions.records.clone(), args.collect()));
        let finish = Expr::AggregateFunction(AggregateFunction::new_udf(
            self.functions.finish.clone(),
            vec![named_state(keyed(ScalarValue::Binary(Some(state)))), col("key"), col("record"), keyed(options())],
            false,
            None,
            vec![],
            None,
        ));
        let plan = LogicalPlanBuilder::from(self.input.as_ref().clone())
            .project([records.alias(RECORDS)])?
            .unnest_column(RECORDS)?
            .project([get_field(col(RECORDS), "key").alias("key"), get_field(col(RECORDS), "record").alias("record")])?
            .aggregate([col("key")], [finish])?
            .build()?;
        let mut grown = Vec::new();
        for batch in self.run(&plan).await? {
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

    fn tasks(&self) -> usize {
        self.session.config().target_partitions()
    }

    fn task_of(&self, keys: &[u64], tasks: usize) -> Result<Vec<usize>> {
        grouped_tasks(keys, tasks)
    }

    fn release(&mut self, shards: u64) {
        // Executors drop the training's shards once idle; one in this process (standalone) goes now.
        crate::shard_store::shard_store().release(shards);
    }
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
