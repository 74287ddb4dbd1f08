//! `arbor import`: models trained by XGBoost or LightGBM, converted into
//! ordinary arbor models that predict from the CLI and from SQL.

use std::path::Path;

use arbor_ensemble::Model;

use super::AtomicFile;
use crate::CliError;

/// A foreign model format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportFormat {
    /// XGBoost's JSON model files.
    XgboostJson,
    /// LightGBM's text model files.
    LightgbmText,
}

/// Converts the foreign model in `input` and writes it to `output` (whole or
/// not at all); returns a one-line report.
pub fn import(format: ImportFormat, input: &Path, output: &Path) -> Result<String, CliError> {
    let bytes = std::fs::read(input).map_err(CliError::io(input))?;
    let named = |e: arbor_ensemble::ArborError| CliError::Usage(format!("{}: {e}", input.display()));
    let model = match format {
        ImportFormat::XgboostJson => Model::from_xgboost_json(&bytes).map_err(named)?,
        ImportFormat::LightgbmText => {
            let text = std::str::from_utf8(&bytes).map_err(|e| {
                CliError::Usage(format!("{}: not a LightGBM text model (not UTF-8: {e})", input.display()))
            })?;
            Model::from_lightgbm_text(text).map_err(named)?
        }
    };
    AtomicFile::write_all(output, &model.to_bytes())?;
    let what = match model.class_names() {
        c if c.is_empty() => "regression".to_owned(),
        c => format!("classification over {} classes", c.len()),
    };
    Ok(format!(
        "imported {}: {what}, {} trees, {} features -> {}",
        input.display(),
        model.trees().len(),
        model.features().len(),
        output.display()
    ))
}
