//! arbor's errors as Python exceptions: bad data, options and model bytes are
//! `ValueError`s carrying arbor's message (which names the column, key or
//! value); files that cannot be read or written are `OSError`s; requests
//! past the memory limit are `MemoryError`s naming the figure.

use std::path::Path;

use arbor_ensemble::ArborError;
use pyo3::exceptions::{PyFileNotFoundError, PyMemoryError, PyOSError, PyValueError};
use pyo3::PyErr;

/// An arbor error as the Python exception a caller expects for it.
pub fn value_error(error: ArborError) -> PyErr {
    match error {
        ArborError::Spill { .. } => PyOSError::new_err(error.to_string()),
        ArborError::OutOfMemory { .. } => PyMemoryError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    }
}

/// An I/O error on `path` as `FileNotFoundError` or `OSError`, naming the path.
pub fn io_error(path: &Path, error: std::io::Error) -> PyErr {
    let message = format!("{}: {error}", path.display());
    match error.kind() {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        _ => PyOSError::new_err(message),
    }
}
