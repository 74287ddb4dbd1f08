//! The `arbor` subcommands.

mod atomic_file;
mod export;
mod import;
mod inspect;
mod parquet_io;
mod predict;
mod progress_bar;
mod repl;
mod report;
mod sql;
mod train;

pub use atomic_file::AtomicFile;
pub use export::export;
pub use import::{import, ImportFormat};
pub use inspect::{inspect, InspectFormat};
pub use predict::{predict, PredictArgs};
pub use repl::repl;
pub use report::report;
pub use sql::{displayable, run_sql, OutputFormat, SqlSession, WITHOUT_CLUSTER};
pub use train::{train, TrainArgs};
