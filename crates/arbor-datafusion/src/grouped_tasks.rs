//! Which task of a grouping a key lands in: the engine hashes a grouped
//! column's values over its partitions, and a forest's finishing job
//! routes its nodes' keys with that, so that its tasks grow near-equal
//! rows ([`arbor_ensemble::LevelState::route_finishing`]).

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::metrics::Time;
use datafusion::physical_plan::repartition::BatchPartitioner;

/// The task of `tasks` (a grouping's hash partitions) that each of `keys`
/// lands in, as DataFusion's hash repartitioning (and Ballista's shuffle,
/// which partitions as it does) sends a `UInt64` grouped column.
pub fn grouped_tasks(keys: &[u64], tasks: usize) -> Result<Vec<usize>> {
    let schema = Arc::new(Schema::new(vec![Field::new("key", DataType::UInt64, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(keys.to_vec()))])?;
    let mut partitioner =
        BatchPartitioner::new_hash_partitioner(vec![Arc::new(Column::new("key", 0))], tasks, Time::default())?;
    let mut landed: std::collections::HashMap<u64, usize> = std::collections::HashMap::with_capacity(keys.len());
    partitioner.partition(batch, |task, part| {
        landed.extend(part.column(0).as_primitive::<UInt64Type>().values().iter().map(|&key| (key, task)));
        Ok(())
    })?;
    let missing = |key: &u64| DataFusionError::Internal(format!("hash partitioning placed no key {key:#x}"));
    keys.iter().map(|key| landed.get(key).copied().ok_or_else(|| missing(key))).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, RecordBatch, UInt64Array};
    use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
    use datafusion::datasource::MemTable;
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::physical_plan::{collect_partitioned, ExecutionPlan, ExecutionPlanProperties};
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::grouped_tasks;

    /// The tasks a `GROUP BY key` plan's repartitioning sends the keys to.
    async fn planned_tasks(keys: &[u64], tasks: usize) -> Vec<Vec<u64>> {
        let config = SessionConfig::new().with_target_partitions(tasks);
        let context = SessionContext::new_with_config(config);
        let schema = Arc::new(Schema::new(vec![Field::new("key", DataType::UInt64, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(UInt64Array::from(keys.to_vec()))]).unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        context.register_table("nodes", Arc::new(table)).unwrap();
        let plan = context.sql("SELECT key FROM nodes GROUP BY key").await.unwrap().create_physical_plan().await;
        let mut plan: Arc<dyn ExecutionPlan> = plan.unwrap();
        // The grouping's hash repartitioning, and what reaches each of its partitions.
        while plan.downcast_ref::<RepartitionExec>().is_none() {
            plan = plan.children().first().map(|c| Arc::clone(c)).expect("a GROUP BY plan repartitions");
        }
        assert_eq!(plan.output_partitioning().partition_count(), tasks);
        let parts = collect_partitioned(plan, context.task_ctx()).await.unwrap();
        parts
            .iter()
            .map(|batches| {
                batches.iter().flat_map(|b| b.column(0).as_primitive::<UInt64Type>().values().to_vec()).collect()
            })
            .collect()
    }

    #[tokio::test]
    async fn keys_land_where_a_grouping_sends_them() {
        let keys: Vec<u64> = (0..200u64).map(|i| ((i % 7) << 32) | (i * 13) | ((i % 256) << 56)).collect();
        for tasks in [2, 5, 16] {
            let landed = grouped_tasks(&keys, tasks).unwrap();
            let planned = planned_tasks(&keys, tasks).await;
            for (key, task) in keys.iter().zip(&landed) {
                assert!(planned[*task].contains(key), "key {key:#x}: task {task} of {tasks}");
            }
            // Keys spread over every task: a check that could fail if all landed in one.
            assert!((0..tasks).all(|t| landed.contains(&t)), "{tasks} tasks: {landed:?}");
        }
    }
}
