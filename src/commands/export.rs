//! `arbor export`: an arbor model written in a format other tools serve
//! (XGBoost JSON, LightGBM text, ONNX).

use std::path::Path;

use arbor_ensemble::ExportFormat;

use super::predict::load_model;
use super::AtomicFile;
use crate::CliError;

/// Writes the model in `model` to `output` in `format` (whole or not at
/// all); returns a one-line report.
pub fn export(format: ExportFormat, model: &Path, output: &Path) -> Result<String, CliError> {
    let loaded = load_model(model)?;
    let bytes = loaded.export(format).map_err(|e| CliError::Usage(format!("{}: {e}", model.display())))?;
    AtomicFile::write_all(output, &bytes)?;
    Ok(format!("exported {} as {format}: {} trees -> {}", model.display(), loaded.trees().len(), output.display()))
}
