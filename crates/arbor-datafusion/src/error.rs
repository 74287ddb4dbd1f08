//! arbor's errors as DataFusion errors: each names the function it came from.
//!
//! A user's mistake found while planning (bad options, a wrong argument type)
//! is a planning error; one found in the data is an execution error.

use datafusion::error::{DataFusionError, Result};

/// Converts a failed result into a DataFusion error prefixed with the function's name.
pub(crate) trait FunctionError<T> {
    /// The error as an execution error: `function: message`.
    fn exec(self, function: &str) -> Result<T>;
    /// The error as a planning error: `function: message`.
    fn plan(self, function: &str) -> Result<T>;
}

impl<T, E: std::fmt::Display> FunctionError<T> for std::result::Result<T, E> {
    fn exec(self, function: &str) -> Result<T> {
        self.map_err(|e| exec_error(function, e))
    }

    fn plan(self, function: &str) -> Result<T> {
        self.map_err(|e| DataFusionError::Plan(format!("{function}: {e}")))
    }
}

/// `function: message`, as an execution error.
pub(crate) fn exec_error(function: &str, message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{function}: {message}"))
}
