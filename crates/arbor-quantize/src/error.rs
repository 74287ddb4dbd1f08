//! The error type of the quantization crate.

use arrow::datatypes::DataType;

/// Why a column could not be read as a feature.
#[derive(Debug, thiserror::Error)]
pub enum QuantizeError {
    /// The column's Arrow type is not numeric, boolean, string or dictionary.
    #[error("feature column '{column}' has unsupported type {data_type}; arbor accepts integers, floats, booleans, and string or dictionary (categorical) columns")]
    UnsupportedType {
        /// The column's name.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
    },
    /// A categorical column has more distinct values than bins can address.
    #[error("categorical feature '{column}' has {count} distinct values; at most {max} are supported")]
    TooManyCategories {
        /// The column's name.
        column: String,
        /// How many distinct values it has.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Arrow failed to convert the column.
    #[error("feature column '{column}': {source}")]
    Arrow {
        /// The column's name.
        column: String,
        /// The Arrow error.
        source: arrow::error::ArrowError,
    },
}
