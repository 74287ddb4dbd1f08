//! The scheduler's guard against executors that do not know arbor's
//! functions: such an executor would fail every task of an arbor query, so it
//! is refused when it registers, with a message that says why.
//!
//! `arbor cluster executor` names its executors with [`ARBOR_EXECUTOR_PREFIX`];
//! a plain Ballista executor has a bare UUID.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ballista_core::error::{BallistaError, Result};
use ballista_core::serde::protobuf::ExecutorHeartbeat;
use ballista_core::serde::scheduler::{ExecutorData, ExecutorMetadata};
use ballista_core::JobId;
use ballista_scheduler::cluster::{BoundTask, ClusterState, ClusterStateEventStream, ExecutorSlot};
use ballista_scheduler::config::TaskDistributionPolicy;
use ballista_scheduler::state::task_manager::JobInfoCache;

/// The start of every id `arbor cluster executor` gives its executor.
pub const ARBOR_EXECUTOR_PREFIX: &str = "arbor-";

/// Whether an executor id is one `arbor cluster executor` gave.
pub fn is_arbor_executor(id: &str) -> bool {
    id.starts_with(ARBOR_EXECUTOR_PREFIX)
}

/// A cluster state that refuses executors not started by `arbor cluster executor`.
pub(crate) struct ArborExecutors(pub Arc<dyn ClusterState>);

impl ArborExecutors {
    fn admit(metadata: &ExecutorMetadata) -> Result<()> {
        if is_arbor_executor(&metadata.id) {
            return Ok(());
        }
        Err(BallistaError::General(format!(
            "executor '{}' at {}:{} was refused: it was not started by `arbor cluster executor`, so it does not know \
             arbor's functions (train_forest, predict_forest, ...) and would fail their tasks",
            metadata.id, metadata.host, metadata.port
        )))
    }
}

#[async_trait::async_trait]
impl ClusterState for ArborExecutors {
    async fn init(&self) -> Result<()> {
        self.0.init().await
    }

    async fn bind_schedulable_tasks(
        &self,
        distribution: TaskDistributionPolicy,
        active_jobs: Arc<HashMap<JobId, JobInfoCache>>,
        executors: Option<HashSet<String>>,
    ) -> Result<Vec<BoundTask>> {
        self.0.bind_schedulable_tasks(distribution, active_jobs, executors).await
    }

    async fn unbind_tasks(&self, executor_slots: Vec<ExecutorSlot>) -> Result<()> {
        self.0.unbind_tasks(executor_slots).await
    }

    async fn register_executor(&self, metadata: ExecutorMetadata, spec: ExecutorData) -> Result<()> {
        Self::admit(&metadata)?;
        self.0.register_executor(metadata, spec).await
    }

    async fn save_executor_metadata(&self, metadata: ExecutorMetadata) -> Result<()> {
        Self::admit(&metadata)?;
        self.0.save_executor_metadata(metadata).await
    }

    async fn get_executor_metadata(&self, executor_id: &str) -> Result<ExecutorMetadata> {
        self.0.get_executor_metadata(executor_id).await
    }

    async fn registered_executor_metadata(&self) -> Vec<ExecutorMetadata> {
        self.0.registered_executor_metadata().await
    }

    async fn save_executor_heartbeat(&self, heartbeat: ExecutorHeartbeat) -> Result<()> {
        self.0.save_executor_heartbeat(heartbeat).await
    }

    async fn remove_executor(&self, executor_id: &str) -> Result<()> {
        self.0.remove_executor(executor_id).await
    }

    fn executor_heartbeats(&self) -> HashMap<String, ExecutorHeartbeat> {
        self.0.executor_heartbeats()
    }

    fn get_executor_heartbeat(&self, executor_id: &str) -> Option<ExecutorHeartbeat> {
        self.0.get_executor_heartbeat(executor_id)
    }

    async fn cluster_state_events(&self) -> Result<ClusterStateEventStream> {
        self.0.cluster_state_events().await
    }
}
