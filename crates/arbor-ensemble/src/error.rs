//! The error type of the ensemble crate: every message names the column, key or value at fault.

use arbor_quantize::QuantizeError;

/// Why training, prediction or model decoding failed.
#[derive(Debug, thiserror::Error)]
pub enum ArborError {
    /// An option key that arbor does not know.
    #[error("unknown option '{key}'; accepted keys: {accepted}")]
    UnknownOption {
        /// The key as given.
        key: String,
        /// The keys arbor accepts, comma separated.
        accepted: String,
    },
    /// An option with a value of the wrong type or out of range.
    #[error("option '{key}': {message}")]
    InvalidOption {
        /// The key.
        key: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The training or prediction data is unusable.
    #[error("{0}")]
    Data(String),
    /// No row can be trained on: none were given, every label is null, or
    /// every weight is zero. Kept apart from [`ArborError::Data`] so that
    /// SQL can give such a group a NULL model instead of failing the query.
    #[error("{0}")]
    NothingToTrain(String),
    /// A column named by the caller is not in the data.
    #[error("column '{column}' not found; available columns: {available}")]
    MissingColumn {
        /// The column asked for.
        column: String,
        /// The columns there are.
        available: String,
    },
    /// A feature column could not be read.
    #[error(transparent)]
    Quantize(#[from] QuantizeError),
    /// The model bytes are not a valid arbor model.
    #[error("invalid model: {0}")]
    Model(String),
    /// A foreign model file could not be imported.
    #[error("{format} model: {message}")]
    Import {
        /// The foreign format, e.g. `xgboost-json`.
        format: &'static str,
        /// What is wrong or unsupported, naming the construct.
        message: String,
    },
    /// A model could not be written in another tool's format.
    #[error("{format} export: {message}")]
    Export {
        /// The foreign format, e.g. `lightgbm-text`.
        format: &'static str,
        /// What the format cannot hold, naming it.
        message: String,
    },
    /// Finished trees could not be kept in a temporary file.
    #[error("could not keep finished trees in a temporary file in '{}': {source}", dir.display())]
    Spill {
        /// The directory the file was to be in.
        dir: std::path::PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// Training would need more memory than it may use: names what for,
    /// the bytes it needs and the limit (and the option that sets it).
    #[error("{what} needs {needed} but {limit}; {hint}")]
    OutOfMemory {
        /// What the memory was for, naming the option or input that sizes it.
        what: String,
        /// The bytes needed, readable (e.g. "72.0 GB").
        needed: String,
        /// The limit and where it comes from.
        limit: String,
        /// What to do about it.
        hint: String,
    },
    /// An Arrow compute error.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
}

/// Result with [`ArborError`].
pub type Result<T, E = ArborError> = std::result::Result<T, E>;
