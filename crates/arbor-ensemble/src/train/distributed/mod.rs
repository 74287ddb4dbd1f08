//! Training over rows that live in many pieces (a cluster's partitions),
//! level by level: only summaries, histograms and small nodes' rows move.
//!
//! The module map, one owner of the protocol:
//! - `protocol.rs`: the messages the pieces, the jobs and the driver hand
//!   each other ([`Message`]), in one encoding;
//! - `driver.rs`: the one loop that runs a training's jobs ([`train`];
//!   [`train_now`] for backends that answer at once),
//!   over a [`Backend`]: a DataFusion session or a Ballista cluster
//!   (`arbor-datafusion`'s `session_jobs.rs`), or this process's memory
//!   ([`InMemory`], `in_memory.rs`);
//! - `state.rs`: training in progress between jobs, of either algorithm
//!   ([`LevelState`]), and a level's sums ([`LevelSums`]);
//! - `boosting.rs` and `forest.rs`: each algorithm's levels
//!   ([`LevelBoosting`], [`LevelForest`]);
//! - `shard.rs`: a piece's rows binned once and kept for every job ([`LevelShard`]);
//! - `node_key.rs` and `node_records.rs`: a forest's nodes across trees
//!   ([`NodeKey`]) and the binned rows of its small nodes ([`NodeRecords`]).
//!
//! The summary that decides the bins ([`crate::LevelSummary`]) is shared
//! with one machine's binning, so it lives with the data.

pub(crate) mod boosting;
pub(crate) mod driver;
pub(crate) mod forest;
pub(crate) mod in_memory;
pub(crate) mod node_key;
pub(crate) mod node_records;
pub(crate) mod protocol;
pub(crate) mod shard;
pub(crate) mod state;
#[cfg(test)]
pub(crate) mod test_rows;

pub use boosting::{LevelBoosting, LevelHistograms};
pub use driver::{train, train_now, Backend, DriverError, Outcome};
pub use forest::{LevelForest, LevelForestSums};
pub use in_memory::InMemory;
pub use node_key::NodeKey;
pub use node_records::NodeRecords;
pub use protocol::Message;
pub use shard::LevelShard;
pub use state::{LevelStanding, LevelState, LevelSums};
