//! `arbor inspect`: what a model is, for people or as JSON.

use std::path::Path;

use super::predict::load_model;
use crate::CliError;

/// The report on a model: text, or one JSON object with `json`.
pub fn inspect(model: &Path, json: bool) -> Result<String, CliError> {
    let model = load_model(model)?;
    Ok(if json {
        serde_json::to_string_pretty(&model.summary_json()).expect("JSON values always serialize")
    } else {
        model.summary_text()
    })
}
