//! `arbor inspect`: what a model is, for people or as JSON, or one tree as Graphviz DOT.

use std::path::Path;

use super::predict::load_model;
use crate::CliError;

/// What `inspect` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InspectFormat {
    /// The text report.
    Text,
    /// One JSON object.
    Json,
    /// Tree `n` as a Graphviz digraph.
    Dot(usize),
}

/// The report on a model in the asked format, ending with a newline.
pub fn inspect(model: &Path, format: InspectFormat) -> Result<String, CliError> {
    let model = load_model(model)?;
    Ok(match format {
        InspectFormat::Text => model.summary_text() + "\n",
        InspectFormat::Json => {
            serde_json::to_string_pretty(&model.summary_json()).expect("JSON values always serialize") + "\n"
        }
        InspectFormat::Dot(tree) => model.tree_dot(tree)?,
    })
}
