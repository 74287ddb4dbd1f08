//! arbor's functions on an Apache DataFusion Ballista cluster.
//!
//! A Ballista cluster resolves function names in three places: the client
//! that parses the SQL, the scheduler that plans it, and every executor that
//! runs a task. This crate gives each of them arbor's functions:
//! - [`session_state`]: a Ballista session state with arbor's functions, the
//!   cluster's `train_forest` ([`TrainForest::distributed`]) and the planner
//!   rule that tells it how many partitions the rows arrive in
//!   ([`PartitionedTraining`]), for forests grown as sub-forests; the
//!   scheduler builds every session from it;
//! - [`function_registry`]: the same functions for an executor;
//! - [`standalone`] and [`remote`]: client sessions, on an in-process
//!   cluster (for tests) or on a running scheduler (`df://HOST:PORT`), whose
//!   planner trains random forests and gradient boosting level by level on
//!   the executors ([`LevelTraining`]) before Ballista runs the statement;
//! - [`run_scheduler`] and [`run_executor`]: the processes behind
//!   `arbor cluster scheduler|executor`, taking Ballista's own flags.
//!
//! [`TrainForest::distributed`]: arbor_datafusion::TrainForest::distributed
//! [`LevelTraining`]: arbor_datafusion::LevelTraining

mod arbor_executors;
mod codec;
mod executor;
mod long_poll;
mod partitioned_training;
mod process_start;
mod scheduler;
mod session;
mod shard_affinity;

pub use arbor_executors::{is_arbor_executor, ARBOR_EXECUTOR_PREFIX};
pub use codec::ArborCodec;
pub use executor::run_executor;
pub use partitioned_training::PartitionedTraining;
pub use process_start::DEFAULT_SCHEDULING_POLICY;
pub use scheduler::run_scheduler;
pub use session::{
    function_registry, remote, session_config, session_state, standalone, standalone_partitioned, GRPC_MAX_MESSAGE_SIZE,
};
