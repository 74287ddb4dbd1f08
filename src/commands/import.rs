//! `arbor import`: models trained by other libraries.

use std::path::Path;

use crate::CliError;

/// A foreign model format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportFormat {
    /// XGBoost's JSON model files.
    XgboostJson,
    /// LightGBM's text model files.
    LightgbmText,
}

/// Converts a foreign model. Not available yet: it fails with a clear message
/// rather than writing anything.
pub fn import(format: ImportFormat, input: &Path, _output: &Path) -> Result<String, CliError> {
    let name = match format {
        ImportFormat::XgboostJson => "xgboost-json",
        ImportFormat::LightgbmText => "lightgbm-text",
    };
    Err(CliError::Usage(format!(
        "{}: importing {name} models is not implemented yet in this version of arbor",
        input.display()
    )))
}
