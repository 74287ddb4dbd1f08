//! The command line's error type: one clear message per failure.

use std::path::PathBuf;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Training, prediction or the model format failed.
    #[error(transparent)]
    Arbor(#[from] arbor_ensemble::ArborError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A Parquet file could not be read or written.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: parquet::errors::ParquetError,
    },
    /// A SQL statement failed.
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// An Arrow error while writing output.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    /// The command was used wrongly.
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// Whether the failure is a closed pipe on output (`arbor ... | head`),
    /// which ends the program quietly, as it does other Unix tools.
    pub fn is_broken_pipe(&self) -> bool {
        let broken = |e: &std::io::Error| e.kind() == std::io::ErrorKind::BrokenPipe;
        match self {
            CliError::Io { source, .. } => broken(source),
            CliError::Arrow(arrow::error::ArrowError::IoError(_, source)) => broken(source),
            CliError::Arrow(arrow::error::ArrowError::ExternalError(e)) => {
                e.downcast_ref::<std::io::Error>().is_some_and(broken)
            }
            _ => false,
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CliError {
        let path = path.into();
        move |source| CliError::Io { path, source }
    }

    /// A Parquet error on `path`.
    pub fn parquet(path: impl Into<PathBuf>) -> impl FnOnce(parquet::errors::ParquetError) -> CliError {
        let path = path.into();
        move |source| CliError::Parquet { path, source }
    }
}
