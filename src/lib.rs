//! arbor: decision forests (random forests, extra trees, gradient boosting)
//! trained and served natively on Apache Arrow data.
//!
//! This facade re-exports the workspace crates and holds the `arbor` command
//! line's commands, so other programs can run them too.
//!
//! ```
//! // Options use the same names in Rust, on the command line and in SQL.
//! let params = arbor::ensemble::TrainParams::parse_options("n_trees=50 max_depth=10").unwrap();
//! assert_eq!(params.forest.n_trees, 50);
//! ```

pub mod commands;
mod error;
mod malloc_thresholds;
mod memory_size;

pub use arbor_datafusion as datafusion;
pub use arbor_ensemble as ensemble;
pub use arbor_ensemble::release_free_memory;
pub use arbor_kernels as kernels;
pub use arbor_quantize as quantize;
pub use error::CliError;
pub use malloc_thresholds::{fix_malloc_thresholds, MemoryUse};
pub use memory_size::parse_size;
