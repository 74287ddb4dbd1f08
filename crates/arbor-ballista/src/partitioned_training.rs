//! The planner rule behind a cluster's data-parallel `train_forest`: rows
//! reach the partial aggregates hashed by their values into
//! `target_partitions` partitions, and every `train_forest` is told that
//! count (`parts=N`), so that each partition grows its share of the trees.
//! Which rows a part holds then depends on the rows alone: the model is the
//! same whatever the files, their order, the executors or a retried task.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};

/// Hash-partitions the rows a partial `train_forest` aggregate reads into
/// `target_partitions` partitions, and adds `parts=N` (that count) to the
/// options of every `train_forest` in the plan.
#[derive(Debug, Default)]
pub struct PartitionedTraining;

const FUNCTION: &str = "train_forest";

impl PhysicalOptimizerRule for PartitionedTraining {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        let parts = config.execution.target_partitions;
        if parts < 2 || !has_partial_training(&plan) {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else { return Ok(Transformed::no(node)) };
            let is_training = |e: &Arc<AggregateFunctionExpr>| e.fun().name() == FUNCTION;
            if !aggregate.aggr_expr().iter().any(is_training)
                || matches!(aggregate.mode(), AggregateMode::Single | AggregateMode::SinglePartitioned)
            {
                return Ok(Transformed::no(node));
            }
            let schema = aggregate.input_schema();
            let exprs = aggregate
                .aggr_expr()
                .iter()
                .map(|e| if is_training(e) { with_parts(e, parts, &schema) } else { Ok(e.clone()) })
                .collect::<Result<Vec<_>>>()?;
            let mut input = aggregate.input().clone();
            if *aggregate.mode() == AggregateMode::Partial {
                // Rows go to partitions by a hash of their values: which rows a
                // part holds depends on the rows alone, not on files or order.
                let mut keys: Vec<Arc<dyn PhysicalExpr>> = aggregate.group_expr().input_exprs();
                for e in aggregate.aggr_expr().iter().filter(|e| is_training(e)) {
                    keys.extend(e.expressions().into_iter().filter(|a| a.downcast_ref::<Literal>().is_none()));
                }
                input = Arc::new(RepartitionExec::try_new(input, Partitioning::Hash(keys, parts))?);
            }
            let rewritten = AggregateExec::try_new(
                *aggregate.mode(),
                aggregate.group_expr().clone(),
                exprs,
                aggregate.filter_expr().to_vec(),
                input,
                schema,
            )?;
            Ok(Transformed::yes(Arc::new(rewritten) as Arc<dyn ExecutionPlan>))
        })
        .data()
    }

    fn name(&self) -> &str {
        "arbor_partitioned_training"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether the plan has a partial `train_forest` aggregate.
fn has_partial_training(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        if *aggregate.mode() == AggregateMode::Partial
            && aggregate.aggr_expr().iter().any(|e| e.fun().name() == FUNCTION)
        {
            return true;
        }
    }
    plan.children().into_iter().any(has_partial_training)
}

/// `expr` with `parts=N` in its options: appended to its options literal,
/// or as a new last argument when it has none.
fn with_parts(
    expr: &Arc<AggregateFunctionExpr>,
    parts: usize,
    schema: &SchemaRef,
) -> Result<Arc<AggregateFunctionExpr>> {
    let mut args = expr.expressions();
    let options = args.last().and_then(|e| e.downcast_ref::<Literal>()).and_then(|l| match l.value() {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            Some(s.clone())
        }
        _ => None,
    });
    if options.as_deref().is_some_and(|o| o.split([' ', ',']).any(|kv| kv.trim_start().starts_with("parts="))) {
        return Ok(expr.clone());
    }
    let literal = |text: String| Arc::new(Literal::new(ScalarValue::Utf8(Some(text)))) as Arc<dyn PhysicalExpr>;
    match options {
        Some(options) => {
            *args.last_mut().expect("options are the last argument") = literal(format!("{options} parts={parts}"));
            let order_by = expr.order_bys().iter().map(|s| s.expr.clone()).collect();
            Ok(Arc::new(expr.with_new_expressions(args, order_by).expect("same arity")))
        }
        None => {
            args.push(literal(format!("parts={parts}")));
            let built = AggregateExprBuilder::new(Arc::new(expr.fun().clone()), args)
                .schema(schema.clone())
                .alias(expr.name())
                .build()?;
            Ok(Arc::new(built))
        }
    }
}
