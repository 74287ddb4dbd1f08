//! Level jobs that read a partition once per training, not once per level.
//!
//! Level-wise training ([`crate::level_training`]) runs one job per tree
//! level, each `arbor_train_step(<state>, label, features...)` over the
//! same input, and a forest's finishing jobs, each
//! `arbor_small_node_records(<state>, label, features...)` over it. The
//! physical rule [`ResidentShards`] replaces each level job's partial
//! aggregate, and each finishing job's partial `arbor_finish_nodes`
//! aggregate with the unnested records call under it (or, in a plan of
//! another shape, the records call alone), with
//! [`LevelStepExec`]: for its partition it
//! looks up the training's shard in the process's [`shard_store`] (the
//! partition's rows binned with the training's bins, with labels, weights,
//! content hashes and boosting's scores; [`LevelShard`]), and only on a
//! miss reads the partition and builds it. Its output is the replaced
//! node's, bit for bit: a level's sums and a
//! batch's records are computed from a shard either way, kept or just
//! built.
//!
//! Only inputs that give a partition the same rows every time are read so
//! (a file scan under projections and filters of stable functions); any
//! other input keeps the aggregate, which reads its rows every level.

use std::sync::Arc;

use arbor_ensemble::{ArborError, CheckedParams, LevelShard, LevelState, Message, NodeRecords, Task};
use arrow::array::{ArrayRef, BinaryArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::binned_training::calls_volatile;
use crate::column_chunks::ColumnChunks;
use crate::error::FunctionError;
use crate::finish_nodes::FINISH_NODES;
use crate::shard_store::{shard_store, ShardKey};
use crate::small_node_records::{SmallNodeRecords, SMALL_NODE_RECORDS};
use crate::train_arguments::{constant, training_data, PerRowArgs, TrainArguments};
use crate::train_step::TRAIN_STEP;

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// What a [`LevelStepExec`]'s encoding starts with, so that a codec tells it from others.
const MAGIC: &[u8] = b"arbor-level-step\0";

/// The physical rule that reads level jobs' partitions through shards
/// (see the module's documentation).
#[derive(Debug, Default)]
pub struct ResidentShards;

impl ResidentShards {
    /// `rules` with this rule where it must run: after the rules that
    /// settle partial aggregates and partitions, before DataFusion's first
    /// projection pushdown, which would fold a finishing job's records
    /// call into its file scan.
    pub fn placed_in(
        mut rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>,
    ) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
        let at = rules.iter().position(|rule| rule.name() == "ProjectionPushdown").unwrap_or(rules.len());
        rules.insert(at, Arc::new(ResidentShards));
        rules
    }
}

impl PhysicalOptimizerRule for ResidentShards {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| match LevelStepExec::replacing(&node)? {
            Some(exec) => Ok(Transformed::new(Arc::new(exec), true, TreeNodeRecursion::Jump)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "arbor_resident_shards"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// What a level step hands on from its partition's shard.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
enum StepOutput {
    /// The level's partial sums, as the partial `arbor_train_step` aggregate gives them.
    Sums,
    /// The small nodes' records, as `arbor_small_node_records` gives a batch's.
    Records,
    /// The small nodes' records as the partial `arbor_finish_nodes`
    /// aggregate's states: a row per node (its key twice, then its
    /// records), without unnesting them and copying them into
    /// accumulators first.
    NodeStates,
}

impl StepOutput {
    /// The types of the columns the step gives.
    fn types(self) -> Vec<DataType> {
        match self {
            StepOutput::Sums => vec![DataType::Binary],
            StepOutput::Records => vec![SmallNodeRecords::return_type_of()],
            StepOutput::NodeStates => vec![DataType::UInt64, DataType::UInt64, DataType::LargeBinary],
        }
    }
}

/// What a level step carries besides its input, as it travels to executors.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StepSpec {
    output: StepOutput,
    /// The training state (`LevelState` bytes) the level starts from.
    state: Vec<u8>,
    /// The options, as written.
    options: String,
    /// Which input column holds sample weights.
    weight: Option<usize>,
    /// A fingerprint of the data arguments (names and types): with the
    /// training's id and the partition's files, what names a shard.
    input_key: u64,
}

/// One level job's partial sums, or one finishing job's records, over one
/// partition, read from the partition's shard (see the module's documentation).
#[derive(Clone, Debug)]
pub struct LevelStepExec {
    /// The data arguments (label first), one column each, named as the aggregate named them.
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<StepSpec>,
    /// The replaced node's output: one binary column (sums) or list column (records).
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl LevelStepExec {
    /// The exec that replaces `plan`, if it is a level job's partial
    /// `arbor_train_step` aggregate, a finishing job's partial
    /// `arbor_finish_nodes` aggregate of its unnested records, or (when
    /// that aggregate has another shape) the `arbor_small_node_records`
    /// projection under it, over an input whose partitions give the same
    /// rows every time.
    fn replacing(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<LevelStepExec>> {
        if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
            if let Some(records) = Self::finishing_states(aggregate) {
                let Some(call) = records.expr()[0].expr.downcast_ref::<ScalarFunctionExpr>() else { return Ok(None) };
                return Self::over(StepOutput::NodeStates, records.input(), call.args(), aggregate.schema());
            }
            if *aggregate.mode() != AggregateMode::Partial
                || !aggregate.group_expr().is_empty()
                || aggregate.aggr_expr().len() != 1
                || aggregate.filter_expr().iter().any(Option::is_some)
            {
                return Ok(None);
            }
            let call = &aggregate.aggr_expr()[0];
            if call.fun().name() != TRAIN_STEP || call.is_distinct() || !call.order_bys().is_empty() {
                return Ok(None);
            }
            return Self::over(StepOutput::Sums, aggregate.input(), &call.expressions(), aggregate.schema());
        }
        if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
            let [only] = projection.expr() else { return Ok(None) };
            let Some(call) = only.expr.downcast_ref::<ScalarFunctionExpr>() else { return Ok(None) };
            if call.name() != SMALL_NODE_RECORDS {
                return Ok(None);
            }
            return Self::over(StepOutput::Records, projection.input(), call.args(), projection.schema());
        }
        Ok(None)
    }

    /// The records projection under `aggregate`, if `aggregate` is a
    /// finishing job's partial `arbor_finish_nodes(<state>, key, record,
    /// <options>) GROUP BY key` over the fields of
    /// `unnest(arbor_small_node_records(...))`, as the level-wise driver
    /// plans it: then each partition's states are its records, a row per
    /// node.
    fn finishing_states(aggregate: &AggregateExec) -> Option<&ProjectionExec> {
        let column = |e: &Arc<dyn PhysicalExpr>| e.downcast_ref::<Column>().map(Column::index);
        let groups = aggregate.group_expr();
        let [call] = aggregate.aggr_expr() else { return None };
        let [(group, _)] = groups.expr() else { return None };
        let [_, key, record, _] = &call.expressions()[..] else { return None };
        let grouped_by_key = *aggregate.mode() == AggregateMode::Partial
            && groups.is_single()
            && column(group) == Some(0)
            && (column(key), column(record)) == (Some(0), Some(1))
            && call.fun().name() == FINISH_NODES
            && !call.is_distinct()
            && call.order_bys().is_empty()
            && aggregate.filter_expr().iter().all(Option::is_none);
        let fields = aggregate.input().downcast_ref::<ProjectionExec>()?;
        let unnest = fields.input().downcast_ref::<UnnestExec>()?;
        let records = unnest.input().downcast_ref::<ProjectionExec>()?;
        // The entries' fields, `get_field(<the unnested column>, name)`.
        let field = |e: &Arc<dyn PhysicalExpr>| {
            let call = e.downcast_ref::<ScalarFunctionExpr>().filter(|call| call.name() == "get_field")?;
            let [of, name] = call.args() else { return None };
            match constant(name, &unnest.schema())? {
                ScalarValue::Utf8(Some(name))
                | ScalarValue::Utf8View(Some(name))
                | ScalarValue::LargeUtf8(Some(name)) => Some((column(of)?, name)),
                _ => None,
            }
        };
        let [key, record] = fields.expr() else { return None };
        let entry_fields =
            (field(&key.expr), field(&record.expr)) == (Some((0, "key".into())), Some((0, "record".into())));
        let [only] = records.expr() else { return None };
        let records_call = only.expr.downcast_ref::<ScalarFunctionExpr>()?;
        let schema = aggregate.schema();
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        let states = types == [&DataType::UInt64, &DataType::UInt64, &DataType::LargeBinary];
        (grouped_by_key && entry_fields && records_call.name() == SMALL_NODE_RECORDS && states).then_some(records)
    }

    /// The exec that gives `output` from `input`'s shards for a call of
    /// `exprs` (the state, the data arguments, the options), if the state
    /// is a level's and `input` reads its partitions the same each time.
    fn over(
        output: StepOutput,
        input: &Arc<dyn ExecutionPlan>,
        exprs: &[Arc<dyn PhysicalExpr>],
        schema_out: SchemaRef,
    ) -> Result<Option<LevelStepExec>> {
        let schema = input.schema();
        let state = match exprs.first().and_then(|e| constant(e, &schema)) {
            Some(ScalarValue::Binary(Some(b)) | ScalarValue::LargeBinary(Some(b))) if !b.is_empty() => b,
            // The summary step (an empty state) reads every row once anyway.
            _ => return Ok(None),
        };
        if !stable_partitions(input)? {
            return Ok(None);
        }
        let args = &exprs[1..];
        let fields = args.iter().map(|e| e.return_field(&schema)).collect::<Result<Vec<_>>>()?;
        let Ok(TrainArguments { names, weight, .. }) = TrainArguments::read(args, &fields, &schema) else {
            return Ok(None);
        };
        let options = match args.last().and_then(|e| constant(e, &schema)) {
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => s,
            _ => String::new(),
        };
        let distinct_names = names.iter().enumerate().all(|(i, n)| !names[..i].contains(n));
        if !distinct_names {
            return Ok(None);
        }
        let projection = args[..names.len()]
            .iter()
            .zip(&names)
            .map(|(e, n)| ProjectionExpr { expr: e.clone(), alias: n.clone() })
            .collect::<Vec<_>>();
        let projected: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(projection, input.clone())?);
        // A training has one input, which its level and finishing jobs may
        // plan apart (a projection pushed into the scan or not): its
        // arguments, with the training and the files, name its shards.
        let arguments =
            projected.schema().fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>();
        let input_key = xxhash_rust::xxh3::xxh3_64(arguments.join(", ").as_bytes());
        let spec = StepSpec { output, state, options, weight, input_key };
        Ok(Some(LevelStepExec::new(projected, Arc::new(spec), schema_out)))
    }

    fn new(input: Arc<dyn ExecutionPlan>, spec: Arc<StepSpec>, schema: SchemaRef) -> LevelStepExec {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            input.output_partitioning().clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        LevelStepExec { input, spec, schema, properties: Arc::new(properties) }
    }

    /// A fingerprint of the step's data arguments (their names and types):
    /// steps of one training share it, so a scheduler can send each
    /// partition to where its shard was kept.
    pub fn input_key(&self) -> u64 {
        self.spec.input_key
    }

    /// The exec's own fields as bytes (its input travels as the codec's
    /// child), for a cluster's physical codec.
    pub fn encode(&self, buf: &mut Vec<u8>) -> Result<()> {
        buf.extend_from_slice(MAGIC);
        let names: Vec<(&str, bool)> =
            self.schema.fields().iter().map(|f| (f.name().as_str(), f.is_nullable())).collect();
        let fields = (self.spec.as_ref(), names);
        buf.extend(postcard::to_stdvec(&fields).map_err(|e| DataFusionError::Internal(e.to_string()))?);
        Ok(())
    }

    /// An exec read back from [`LevelStepExec::encode`] over `inputs`; `None`
    /// when `buf` encodes another node.
    pub fn decode(buf: &[u8], inputs: &[Arc<dyn ExecutionPlan>]) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(rest) = buf.strip_prefix(MAGIC) else { return Ok(None) };
        let (spec, names): (StepSpec, Vec<(String, bool)>) = postcard::from_bytes(rest)
            .map_err(|e| DataFusionError::Internal(format!("{NAME}: a level step's encoding is corrupt: {e}")))?;
        let [input] = inputs else {
            return Err(DataFusionError::Internal(format!("{NAME}: a level step has one input, not {}", inputs.len())));
        };
        let types = spec.output.types();
        if names.len() != types.len() {
            return Err(DataFusionError::Internal(format!(
                "{NAME}: a level step's encoding names {} columns",
                names.len()
            )));
        }
        let fields = names.into_iter().zip(types).map(|((name, nullable), t)| Field::new(name, t, nullable));
        let schema = Arc::new(Schema::new(fields.collect::<Vec<_>>()));
        Ok(Some(Arc::new(LevelStepExec::new(input.clone(), Arc::new(spec), schema))))
    }

    /// The partition's shard: kept, or built from its rows (and kept, if
    /// the store has room); `None` when it holds nothing to train on.
    async fn shard(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
        state: Arc<LevelState>,
    ) -> Result<Option<(ShardKey, Arc<LevelShard>)>> {
        let spec = self.spec.clone();
        // A task's plan numbers its partitions from 0 (Ballista restricts the
        // scan to the task's slice): the shard is named by the files it reads.
        let files = partition_files(&self.input, partition)?;
        let key = ShardKey { training: state.shard_key(), input: spec.input_key, files };
        let store = shard_store();
        if let Some(shard) = store.get(&key) {
            return Ok(Some((key, shard)));
        }
        let mut arrays = vec![ColumnChunks::default(); self.input.schema().fields().len()];
        let mut stream = self.input.execute(partition, own_files_only(&context))?;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            for (store, column) in arrays.iter_mut().zip(batch.columns()) {
                store.push(column.clone())?;
            }
        }
        let schema = self.input.schema();
        let built = blocking(move || build_shard(&state, &spec, &schema, &mut arrays)).await?;
        Ok(built.map(|shard| {
            let shard = Arc::new(shard);
            store.insert(key, shard.clone());
            (key, shard)
        }))
    }

    /// The partition's output: its partial sums or its records, from its shard.
    async fn output(self, partition: usize, context: Arc<TaskContext>) -> Result<RecordBatch> {
        let state = Arc::new(LevelState::from_bytes(&self.spec.state).exec(NAME)?);
        let shard = self.shard(partition, context, state.clone()).await?;
        let column: ArrayRef = match self.spec.output {
            StepOutput::Sums => {
                let sums = match shard {
                    None => None,
                    Some((key, shard)) => {
                        let sums = blocking(move || state.shard_sums(&shard).exec(NAME)).await?;
                        shard_store().resized(&key);
                        Some(sums)
                    }
                };
                Arc::new(BinaryArray::from(vec![sums.map(|s| Message::Sums(s).to_bytes()).as_deref()]))
            }
            StepOutput::Records | StepOutput::NodeStates => {
                let records = match shard {
                    None => NodeRecords::default(),
                    Some((_, shard)) => blocking(move || state.shard_records(&shard).exec(NAME)).await?,
                };
                if self.spec.output == StepOutput::NodeStates {
                    return Ok(RecordBatch::try_new(self.schema.clone(), node_states(records))?);
                }
                SmallNodeRecords::to_lists(records, 1)?
            }
        };
        Ok(RecordBatch::try_new(self.schema.clone(), vec![column])?)
    }
}

/// A partition's records as the partial `arbor_finish_nodes` states: each
/// node's key (the group, then the state's), and its records.
fn node_states(records: NodeRecords) -> Vec<ArrayRef> {
    let (keys, bytes) = SmallNodeRecords::node_columns(&records);
    vec![keys.clone(), keys, bytes]
}

/// `work`'s result, run on a thread that may block.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| DataFusionError::Execution(format!("{NAME}: a level job stopped: {e}")))?
}

/// `context` with DataFusion's file work stealing off: a partition then
/// reads its own file group, not whichever files its siblings in the task
/// left, so the files that name a shard are the files whose rows it holds.
fn own_files_only(context: &TaskContext) -> Arc<TaskContext> {
    with_options(context, |options| options.execution.enable_file_stream_work_stealing = false)
}

/// `context` with its session's options changed by `change`.
pub(crate) fn with_options(context: &TaskContext, change: impl FnOnce(&mut ConfigOptions)) -> Arc<TaskContext> {
    let mut config = context.session_config().clone();
    change(config.options_mut());
    Arc::new(TaskContext::new(
        context.task_id(),
        context.session_id(),
        config,
        context.scalar_functions().clone(),
        context.higher_order_functions().clone(),
        context.aggregate_functions().clone(),
        context.window_functions().clone(),
        context.runtime_env(),
    ))
}

/// The shard of the rows held in `arrays` (`None` when they hold nothing to train on).
fn build_shard(
    state: &LevelState,
    spec: &StepSpec,
    schema: &SchemaRef,
    arrays: &mut [ColumnChunks],
) -> Result<Option<LevelShard>> {
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let types = schema.fields().iter().map(|f| f.data_type().clone()).collect::<Vec<_>>();
    let task = task_of(&spec.options)?;
    match training_data(&names, &types, PerRowArgs { weight: spec.weight, group: None }, arrays, task, false) {
        Ok(data) => state.shard(&data).map(Some).exec(NAME),
        // A partition of no rows, or only null labels, adds nothing.
        Err(ArborError::NothingToTrain(_)) => Ok(None),
        Err(e) => Err(e).exec(NAME),
    }
}

/// The task the options name, if they name one.
fn task_of(options: &str) -> Result<Option<Task>> {
    let options = crate::sql_options::TrainOptions::parse(options).exec(NAME)?;
    let params: CheckedParams = options.params.check().exec(NAME)?;
    Ok(params.task)
}

/// Whether every partition of `plan` gives the same rows each time it is
/// read: one scan of files (without a limit) under projections and filters
/// of stable functions, nothing that moves rows between partitions.
fn stable_partitions(plan: &Arc<dyn ExecutionPlan>) -> Result<bool> {
    let (mut stable, mut scans) = (true, 0);
    plan.apply(|node| {
        let kept = node.fetch().is_none()
            && matches!(node.name(), "DataSourceExec" | "ProjectionExec" | "FilterExec" | "CoalesceBatchesExec");
        scans += usize::from(file_scan(node.as_ref()).is_some());
        stable = kept && !calls_volatile(node.as_ref())?;
        Ok(if stable { TreeNodeRecursion::Continue } else { TreeNodeRecursion::Stop })
    })?;
    Ok(stable && scans == 1)
}

/// The scan of files `node` is, if it is one.
pub(crate) fn file_scan(node: &dyn ExecutionPlan) -> Option<&FileScanConfig> {
    node.downcast_ref::<DataSourceExec>()?.data_source().downcast_ref::<FileScanConfig>()
}

/// A fingerprint of the files (path, byte range, size and modification
/// time) partition `partition` of `plan` reads: what names its rows.
fn partition_files(plan: &Arc<dyn ExecutionPlan>, partition: usize) -> Result<u64> {
    let mut found = None;
    plan.apply(|node| {
        found = file_scan(node.as_ref()).map(|scan| scan.file_groups.get(partition).map(|g| g.files().to_vec()));
        Ok(if found.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    })?;
    let Some(Some(files)) = found else {
        return Err(DataFusionError::Internal(format!("{NAME}: a level step's partition {partition} reads no files")));
    };
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for file in files {
        let meta = &file.object_meta;
        hasher.update(meta.location.as_ref().as_bytes());
        hasher.update(&meta.size.to_le_bytes());
        hasher.update(&meta.last_modified.timestamp_nanos_opt().unwrap_or(0).to_le_bytes());
        let (start, end) = file.range.as_ref().map_or((0, -1), |r| (r.start, r.end));
        hasher.update(&start.to_le_bytes());
        hasher.update(&end.to_le_bytes());
        hasher.update(&[0xff]);
    }
    Ok(hasher.digest())
}

impl ExecutionPlan for LevelStepExec {
    fn name(&self) -> &str {
        "LevelStepExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        // Its arguments are its input's columns: the expressions are the projection's below.
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("LevelStepExec has one child".into()))?;
        Ok(Arc::new(LevelStepExec::new(input, self.spec.clone(), self.schema.clone())))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let exec = self.clone();
        let partial = futures::stream::once(exec.output(partition, context));
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), partial)))
    }
}

impl LevelStepExec {
    /// The function whose work the exec does.
    fn function(&self) -> &'static str {
        match self.spec.output {
            StepOutput::Sums => TRAIN_STEP,
            StepOutput::Records => SMALL_NODE_RECORDS,
            StepOutput::NodeStates => FINISH_NODES,
        }
    }
}

impl DisplayAs for LevelStepExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let names = self.input.schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>();
                write!(f, "LevelStepExec: {}({}) over kept shards", self.function(), names.join(", "))
            }
            DisplayFormatType::TreeRender => write!(f, "{}", self.function()),
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

    use super::*;

    /// A new directory named after `name` holding a Parquet file per
    /// `(file, query)`: the query's rows. Its path ends with a slash, as a
    /// table of its files is registered.
    async fn parquet_files(name: &str, files: &[(&str, String)]) -> (std::path::PathBuf, String) {
        let dir = std::env::temp_dir().join(format!("arbor-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ctx = SessionContext::new();
        for (file, query) in files {
            let copy = format!("COPY ({query}) TO '{}/{file}.parquet' STORED AS PARQUET", dir.display());
            ctx.sql(&copy).await.unwrap().collect().await.unwrap();
        }
        let path = format!("{}/", dir.display());
        (dir, path)
    }

    /// The rows partition `partition` of a fresh scan of `dir` gives when run alone under `context`.
    async fn rows_read(dir: &str, partition: usize, context: impl Fn(&SessionContext) -> Arc<TaskContext>) -> usize {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
        ctx.register_parquet("t", dir, ParquetReadOptions::default()).await.unwrap();
        let plan = ctx.table("t").await.unwrap().create_physical_plan().await.unwrap();
        assert!(stable_partitions(&plan).unwrap(), "a scan of files reads the same rows each time");
        let mut stream = plan.execute(partition, context(&ctx)).unwrap();
        let mut rows = 0;
        while let Some(batch) = stream.next().await {
            rows += batch.unwrap().num_rows();
        }
        rows
    }

    /// The level step planned for `sql` over `dir`'s Parquet files, by a
    /// session with the rule.
    async fn level_step(dir: &str, sql: &str) -> LevelStepExec {
        use datafusion::execution::SessionStateBuilder;
        use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
        let rules =
            ResidentShards::placed_in(datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules);
        let state = SessionStateBuilder::new()
            .with_default_features()
            .with_config(SessionConfig::new().with_target_partitions(2))
            .with_physical_optimizer_rules(rules)
            .build();
        let ctx = SessionContext::new_with_state(state);
        ctx.register_udaf(AggregateUDF::new_from_impl(crate::TrainStep::new()));
        ctx.register_udf(ScalarUDF::new_from_impl(SmallNodeRecords::new()));
        ctx.register_udaf(AggregateUDF::new_from_impl(crate::FinishNodes::new()));
        ctx.register_parquet("t", dir, ParquetReadOptions::default()).await.unwrap();
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
        let mut found = None;
        plan.apply(|node| {
            found = node.downcast_ref::<LevelStepExec>().cloned();
            Ok(if found.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })
        .unwrap();
        found.unwrap_or_else(|| panic!("no level step in {}", displayable(plan.as_ref()).indent(true)))
    }

    /// A forest's finishing job reads the shards its level jobs kept: the
    /// rule puts a level step in place of its partial aggregate (the
    /// records as that aggregate's states), over the same input, so both
    /// name a partition's shard alike. A records call under anything else
    /// becomes a level step of records.
    #[tokio::test]
    async fn finishing_jobs_read_the_level_jobs_shards() {
        let rows = |values: &str| format!("SELECT column1 AS label, column2 AS x, column3 AS w FROM (VALUES {values})");
        let files = [("a", rows("(1, 0.5, 2.0), (0, 1.5, 3.0)")), ("b", rows("(1, 2.5, 4.0)"))];
        let (dir, dir_name) = parquet_files("finishing-shards", &files).await;
        let options = "'n_trees=2 weight=w'";
        let level =
            level_step(&dir_name, &format!("SELECT arbor_train_step(X'01', label, x, w, {options}) FROM t")).await;
        let records = format!("SELECT unnest(arbor_small_node_records(X'01', label, x, w, {options})) AS r FROM t");
        let finishing = level_step(
            &dir_name,
            &format!(
                "SELECT key, arbor_finish_nodes(X'01', key, record, {options}) \
                 FROM (SELECT r['key'] AS key, r['record'] AS record FROM ({records})) GROUP BY key"
            ),
        )
        .await;
        let unnested = level_step(&dir_name, &records).await;
        std::fs::remove_dir_all(&dir).unwrap();
        let outputs = (level.spec.output, finishing.spec.output, unnested.spec.output);
        assert_eq!(outputs, (StepOutput::Sums, StepOutput::NodeStates, StepOutput::Records));
        assert_eq!(level.spec.input_key, finishing.spec.input_key, "one input, one name for its shards");
        assert_eq!(level.spec.weight, finishing.spec.weight);
        let types: Vec<DataType> = finishing.schema.fields().iter().map(|f| f.data_type().clone()).collect();
        assert_eq!(types, StepOutput::NodeStates.types());
        assert_eq!(unnested.schema.field(0).data_type(), &SmallNodeRecords::return_type_of());
        let shown = displayable(&finishing).one_line().to_string();
        assert!(shown.contains("arbor_finish_nodes(label, x, w) over kept shards"), "{shown}");
        // The encoding a cluster sends carries the states' columns.
        let mut bytes = Vec::new();
        finishing.encode(&mut bytes).unwrap();
        let decoded = LevelStepExec::decode(&bytes, std::slice::from_ref(&finishing.input)).unwrap().unwrap();
        assert_eq!(decoded.schema(), finishing.schema);
    }

    /// A shard is named by its partition's files, so a level job must read
    /// those files and no others. DataFusion's work stealing lets a
    /// partition take the files its siblings were planned to read: run
    /// alone, partition 1 of a scan of two files reads both. With
    /// [`own_files_only`] it reads its own file only.
    #[tokio::test]
    async fn a_partition_reads_its_own_files_only() {
        let files = [("a", "VALUES (1), (2), (3)".to_string()), ("b", "VALUES (4), (5)".to_string())];
        let (dir, dir_name) = parquet_files("own-files", &files).await;
        let stealing = rows_read(&dir_name, 1, |ctx| ctx.task_ctx()).await;
        let own = rows_read(&dir_name, 1, |ctx| own_files_only(&ctx.task_ctx())).await;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(stealing, 5, "with work stealing, the partition run alone reads every file");
        assert_eq!(own, 2, "without it, file b's rows only");
    }
}
