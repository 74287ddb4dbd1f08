//! `train_forest` without GROUP BY on one machine, binned as it reads: a
//! physical optimizer rule ([`BinnedTraining`]) puts [`BinnedTrainingExec`]
//! in place of the aggregate, and that reads the aggregate's input twice,
//! as `arbor train` reads a file: a first pass for the bins (the sample of
//! rows chosen by content, the categories, the label's classes), a second
//! that bins each batch as it arrives and drops its values. So the raw
//! values of the table are never held together; the peak is the bins.
//!
//! Reading twice needs an input that gives the same rows each time: scans,
//! projections, filters, joins, unions, repartitions and sorts without a
//! limit, none calling a volatile function (`random()`). Any other input
//! (a LIMIT, a window, an aggregate, `random()`) is read once and its
//! arguments held, counted against the session's memory pool, then binned
//! from memory. Either way the model's bytes are those the aggregate
//! trains on the same rows (and `arbor train`, and the Rust front door).
//!
//! The session's memory pool (`SET datafusion.runtime.memory_limit`) bounds
//! training: what binning and training ask for is checked against the
//! room left in the pool before it is allocated (an error naming the
//! figure), and the bins are then reserved in it while the model trains.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arbor_ensemble::{ArborError, BatchSource, CheckedParams, Trainer};
use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::DataFusionError;
use datafusion::error::Result;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Volatility;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{reset_plan_states, Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use crate::error::exec_error;
use crate::model_column::null_model_scalar;
use crate::sql_options::OnGroupError;
use crate::train_arguments::{PerRowArgs, TrainArguments};
use crate::train_forest::{options_like, prediction_type, trained_column, TrainForest};

/// The function's name, in its errors.
const NAME: &str = "train_forest";

/// A physical optimizer rule that trains each `train_forest` without GROUP
/// BY, DISTINCT, FILTER or ORDER BY by binning its input as it reads it
/// ([`BinnedTrainingExec`]). [`crate::register`] adds it to a session.
#[derive(Debug, Default)]
pub struct BinnedTraining;

impl BinnedTraining {
    /// The rule's name among the session's physical optimizer rules.
    pub const NAME: &'static str = "arbor_binned_training";
}

impl PhysicalOptimizerRule for BinnedTraining {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| match BinnedTrainingExec::replacing(&node)? {
            Some(exec) => Ok(Transformed::new(Arc::new(exec), true, TreeNodeRecursion::Jump)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Trains one `train_forest` aggregate's model by reading its input twice
/// and binning as it reads (see the module's documentation); one row out.
#[derive(Clone, Debug)]
pub struct BinnedTrainingExec {
    /// The rows the aggregate read.
    input: Arc<dyn ExecutionPlan>,
    /// The data arguments (label first), over the input's schema.
    args: Vec<Arc<dyn PhysicalExpr>>,
    /// The batches training reads: the data arguments, named as the aggregate names them.
    arguments: SchemaRef,
    /// Which argument holds sample weights.
    weight: Option<usize>,
    /// Which argument holds query ids (ranking).
    group: Option<usize>,
    params: CheckedParams,
    on_group_error: OnGroupError,
    /// The prediction type the query was planned for.
    planned: DataType,
    /// Whether the input gives the same rows when read again.
    rereadable: bool,
    properties: Arc<PlanProperties>,
}

impl BinnedTrainingExec {
    /// The exec that replaces `plan`, if it is a final (or single) `train_forest`
    /// aggregate without GROUP BY that can train so.
    fn replacing(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<BinnedTrainingExec>> {
        let Some(aggregate) = plan.downcast_ref::<AggregateExec>() else { return Ok(None) };
        let input = match aggregate.mode() {
            AggregateMode::Single | AggregateMode::SinglePartitioned => aggregate.input().clone(),
            AggregateMode::Final | AggregateMode::FinalPartitioned => match partial_below(aggregate.input()) {
                Some(partial) if same_call(partial, aggregate) => partial.input().clone(),
                _ => return Ok(None),
            },
            AggregateMode::Partial | AggregateMode::PartialReduce => return Ok(None),
        };
        if !aggregate.group_expr().is_empty() || aggregate.aggr_expr().len() != 1 {
            return Ok(None);
        }
        let call = &aggregate.aggr_expr()[0];
        let plain = aggregate.filter_expr().iter().all(Option::is_none)
            && !call.is_distinct()
            && call.order_bys().is_empty()
            && call.fun().inner().downcast_ref::<TrainForest>().is_some_and(|f| !f.is_distributed());
        if !plain {
            return Ok(None);
        }
        let schema = input.schema();
        let exprs = call.expressions();
        let fields = exprs.iter().map(|e| e.return_field(&schema)).collect::<Result<Vec<_>>>()?;
        // A mistake in the arguments is the aggregate's to report, as it always has.
        // A model to continue trains on its bins, from rows held: left to the aggregate.
        let Ok(TrainArguments { names, types, weight, group, options, init: None }) =
            TrainArguments::read(&exprs, &fields, &schema)
        else {
            return Ok(None);
        };
        let Ok(params) = options.params.check() else { return Ok(None) };
        let distinct_names = names.iter().enumerate().all(|(i, n)| !names[..i].contains(n));
        if options.parts.is_some() || !distinct_names {
            return Ok(None);
        }
        let arguments = Arc::new(Schema::new(
            names.iter().zip(&types).map(|(n, t)| Field::new(n, t.clone(), true)).collect::<Vec<_>>(),
        ));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(aggregate.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Some(BinnedTrainingExec {
            rereadable: rereadable(&input)?,
            input,
            args: exprs[..names.len()].to_vec(),
            arguments,
            weight,
            group,
            params,
            on_group_error: options.on_group_error,
            planned: prediction_type(&types[0]),
            properties: Arc::new(properties),
        }))
    }

    /// Whether the input is read twice (rather than held once read).
    pub fn reads_twice(&self) -> bool {
        self.rereadable
    }

    /// Bins the input and trains: the model column's one row.
    fn train(&self, context: Arc<TaskContext>, handle: tokio::runtime::Handle) -> Result<RecordBatch> {
        let pool = context.memory_pool().clone();
        let room = match pool.memory_limit() {
            MemoryLimit::Finite(limit) => Some(limit.saturating_sub(pool.reserved()) as u64),
            MemoryLimit::Infinite | MemoryLimit::Unknown => None,
        };
        let source = PlanSource {
            exec: self,
            context,
            handle,
            passes: AtomicUsize::new(0),
            held: Mutex::new(None),
            reservation: Mutex::new(MemoryConsumer::new("train_forest").register(&pool)),
            error: Mutex::new(None),
        };
        let names = self.arguments.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>();
        let per_row = PerRowArgs { weight: self.weight, group: self.group };
        let features = (1..names.len()).filter(|&i| per_row.is_feature(i)).map(|i| names[i].clone());
        let mut trainer = Trainer::checked(self.params.clone()).label(names[0].clone()).features(features);
        if let Some(w) = self.weight {
            trainer = trainer.weight(names[w].clone());
        }
        if let Some(g) = self.group {
            trainer = trainer.group(names[g].clone());
        }
        let run = || -> std::result::Result<arbor_ensemble::Model, TrainFailure> {
            let binned = trainer.bin(&source).map_err(|e| source.failure(e))?;
            drop(source.held.lock().map(|mut held| held.take()));
            // The reading threads' freed batches would otherwise count in training's memory.
            arbor_ensemble::release_free_memory();
            let reservation = source.reservation.lock().map_err(|_| TrainFailure::Query(poisoned()))?;
            reservation.try_resize(binned.size_bytes()).map_err(TrainFailure::Query)?;
            drop(reservation);
            Ok(trainer.fit_owned_binned(binned).map_err(TrainFailure::Arbor)?.model)
        };
        let trained = match room {
            Some(bytes) => arbor_ensemble::with_memory_limit(
                bytes,
                "the session's memory pool (datafusion.runtime.memory_limit)",
                run,
            ),
            None => run(),
        };
        let model = match trained {
            Ok(model) => model,
            Err(TrainFailure::Query(e)) => return Err(e),
            Err(TrainFailure::Arbor(ArborError::NothingToTrain(reason))) => {
                return match self.on_group_error {
                    OnGroupError::Null => self.one_row(null_model_scalar(&self.planned)?),
                    OnGroupError::Fail => Err(exec_error(
                        NAME,
                        format!("on_group_error=fail, and its input has nothing to train on: {reason}"),
                    )),
                };
            }
            Err(TrainFailure::Arbor(e)) => return Err(exec_error(NAME, e)),
        };
        let label = self.arguments.field(0);
        self.one_row(trained_column(&model, &self.planned, label.name(), label.data_type())?)
    }

    /// The output: one row holding `model`.
    fn one_row(&self, model: datafusion::common::ScalarValue) -> Result<RecordBatch> {
        Ok(RecordBatch::try_new(self.schema(), vec![model.to_array()?])?)
    }

    /// An input batch as training reads it: the data arguments evaluated.
    fn arguments_of(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let columns = self
            .args
            .iter()
            .map(|e| e.evaluate(batch).and_then(|v| v.into_array(batch.num_rows())))
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new(self.arguments.clone(), columns)?)
    }
}

/// Why training stopped: the query's own error (its memory pool, its
/// input), or arbor's.
enum TrainFailure {
    Query(DataFusionError),
    Arbor(ArborError),
}

fn poisoned() -> DataFusionError {
    DataFusionError::Execution(format!("{NAME}: a reading thread panicked"))
}

/// The partial aggregate feeding a final one, through the exchanges between them.
fn partial_below(plan: &Arc<dyn ExecutionPlan>) -> Option<&AggregateExec> {
    let mut node = plan;
    loop {
        if let Some(partial) = node.downcast_ref::<AggregateExec>() {
            return (*partial.mode() == AggregateMode::Partial).then_some(partial);
        }
        match (node.name(), node.children().as_slice()) {
            ("CoalescePartitionsExec" | "CoalesceBatchesExec" | "RepartitionExec", [child]) => node = child,
            _ => return None,
        }
    }
}

/// Whether a partial aggregate computes what the final one finishes.
fn same_call(partial: &AggregateExec, last: &AggregateExec) -> bool {
    partial.group_expr().is_empty()
        && partial.aggr_expr().len() == 1
        && last.aggr_expr().len() == 1
        && partial.aggr_expr()[0].name() == last.aggr_expr()[0].name()
        && partial.filter_expr().iter().all(Option::is_none)
}

/// Whether `plan` gives the same rows each time it is run: only operators
/// that do (not a limit, a window, an aggregate) and no volatile function.
fn rereadable(plan: &Arc<dyn ExecutionPlan>) -> Result<bool> {
    let mut same = true;
    plan.apply(|node| {
        // A limit pushed into any operator (a scan's, a merge's) may take other rows each time.
        let kept = node.fetch().is_none()
            && matches!(
                node.name(),
                "DataSourceExec"
                    | "ProjectionExec"
                    | "FilterExec"
                    | "CoalesceBatchesExec"
                    | "CoalescePartitionsExec"
                    | "RepartitionExec"
                    | "UnionExec"
                    | "InterleaveExec"
                    | "LazyMemoryExec"
                    | "PlaceholderRowExec"
                    | "EmptyExec"
                    | "HashJoinExec"
                    | "CrossJoinExec"
                    | "NestedLoopJoinExec"
                    | "SortMergeJoinExec"
                    | "SortExec"
                    | "SortPreservingMergeExec"
            );
        same = kept && !calls_volatile(node.as_ref())?;
        Ok(if same { TreeNodeRecursion::Continue } else { TreeNodeRecursion::Stop })
    })?;
    Ok(same)
}

/// Whether any expression of `node` calls a volatile function.
pub(crate) fn calls_volatile(node: &dyn ExecutionPlan) -> Result<bool> {
    let mut volatile = false;
    node.apply_expressions(&mut |expr| {
        expr.apply(|e| {
            let is_volatile = e
                .downcast_ref::<ScalarFunctionExpr>()
                .is_some_and(|f| f.fun().signature().volatility == Volatility::Volatile);
            volatile |= is_volatile;
            Ok(if is_volatile { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })
    })?;
    Ok(volatile)
}

/// The aggregate's input as training reads it: run again for each pass
/// when it can be, else held from its one reading.
struct PlanSource<'a> {
    exec: &'a BinnedTrainingExec,
    context: Arc<TaskContext>,
    handle: tokio::runtime::Handle,
    passes: AtomicUsize,
    /// The batches of an input read once.
    held: Mutex<Option<Arc<Vec<RecordBatch>>>>,
    /// The memory held, as the session's pool counts it.
    reservation: Mutex<MemoryReservation>,
    /// The query's error that stopped a pass (binning sees only its message).
    error: Mutex<Option<DataFusionError>>,
}

impl PlanSource<'_> {
    /// One run of the input, its batches as training reads them. The
    /// partitions are read one after another, not together: a Parquet
    /// partition holds a row group's compressed columns while it reads
    /// them, and binning takes batches one at a time anyway.
    fn run(&self, pass: usize) -> Result<impl Iterator<Item = Result<RecordBatch>> + Send + '_> {
        let plan = match pass {
            0 => self.exec.input.clone(),
            _ => reset_plan_states(self.exec.input.clone())?,
        };
        let partitions = plan.output_partitioning().partition_count();
        let mut stream: Option<SendableRecordBatchStream> = None;
        let mut next_partition = 0;
        let mut checked = false;
        Ok(std::iter::from_fn(move || {
            let batch = loop {
                if let Some(batch) = stream.as_mut().and_then(|s| self.handle.block_on(s.next())) {
                    break batch;
                }
                if next_partition == partitions {
                    return None;
                }
                match plan.execute(next_partition, self.context.clone()) {
                    Ok(next) => stream = Some(next),
                    Err(e) => return Some(Err(e)),
                }
                next_partition += 1;
            };
            let batch = batch.and_then(|b| self.exec.arguments_of(&b));
            // Options given as a column read as a categorical feature: say so on the first pass.
            if let (Ok(batch), 0, false) = (&batch, pass, checked) {
                let last = batch.num_columns() - 1;
                match options_like(&[batch.column(last).clone()]) {
                    Ok(Some(value)) => {
                        return Some(Err(options_column(self.exec.arguments.field(last).name(), &value)));
                    }
                    Ok(None) => checked = batch.column(last).null_count() < batch.num_rows(),
                    Err(e) => return Some(Err(e)),
                }
            }
            Some(batch)
        }))
    }

    /// Every batch of an input read once, held and counted against the pool.
    fn held(&self) -> Result<Arc<Vec<RecordBatch>>> {
        let mut held = self.held.lock().map_err(|_| poisoned())?;
        if let Some(batches) = held.as_ref() {
            return Ok(batches.clone());
        }
        let mut batches = Vec::new();
        for batch in self.run(0)? {
            let batch = batch?;
            self.reservation.lock().map_err(|_| poisoned())?.try_grow(batch.get_array_memory_size())?;
            batches.push(batch);
        }
        Ok(held.insert(Arc::new(batches)).clone())
    }

    /// A failure in binning: the query's error where one stopped it.
    fn failure(&self, e: ArborError) -> TrainFailure {
        match self.error.lock().ok().and_then(|mut error| error.take()) {
            Some(query) => TrainFailure::Query(query),
            None => TrainFailure::Arbor(e),
        }
    }

    /// `e` kept for [`PlanSource::failure`], and its message for binning.
    fn keep(&self, e: DataFusionError) -> ArborError {
        let message = e.to_string();
        if let Ok(mut error) = self.error.lock() {
            error.get_or_insert(e);
        }
        ArborError::Data(message)
    }
}

/// The error for an options string passed as a column.
fn options_column(argument: &str, value: &str) -> DataFusionError {
    exec_error(
        NAME,
        format!(
            "the last argument '{argument}' holds '{value}', which reads as options, but options must be a string \
             literal (a string column would be trained on as a categorical feature)"
        ),
    )
}

impl BatchSource for PlanSource<'_> {
    fn schema(&self) -> SchemaRef {
        self.exec.arguments.clone()
    }

    fn batches(
        &self,
    ) -> arbor_ensemble::Result<Box<dyn Iterator<Item = arbor_ensemble::Result<RecordBatch>> + Send + '_>> {
        let external = |e: DataFusionError| self.keep(e);
        if !self.exec.rereadable {
            let batches = self.held().map_err(external)?;
            return Ok(Box::new((0..batches.len()).map(move |i| Ok(batches[i].clone()))));
        }
        let pass = self.passes.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(self.run(pass).map_err(external)?.map(move |b| b.map_err(external))))
    }
}

impl DisplayAs for BinnedTrainingExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let names = self.arguments.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>();
                let reads = if self.rereadable { "reads its input twice" } else { "holds its input read once" };
                write!(f, "BinnedTrainingExec: train_forest({}), {reads}", names.join(", "))
            }
            DisplayFormatType::TreeRender => write!(f, "train_forest"),
        }
    }
}

impl ExecutionPlan for BinnedTrainingExec {
    fn name(&self) -> &str {
        "BinnedTrainingExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for expr in &self.args {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("BinnedTrainingExec has one child".into()))?;
        Ok(Arc::new(BinnedTrainingExec { rereadable: rereadable(&input)?, input, ..self.as_ref().clone() }))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!("BinnedTrainingExec has one partition, not {partition}")));
        }
        let exec = self.clone();
        let trained = futures::stream::once(async move {
            let handle = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || exec.train(context, handle))
                .await
                .map_err(|e| DataFusionError::Execution(format!("{NAME}: training stopped: {e}")))?
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), trained)))
    }
}
