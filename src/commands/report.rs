//! `arbor report`: a model's report page, one self-contained HTML file,
//! with the metrics, SHAP summary and partial dependence on a Parquet file
//! when one is given.

use std::path::Path;

use super::parquet_io;
use super::predict::load_model;
use super::AtomicFile;
use crate::CliError;

/// Writes the report of the model in `model` (on the rows of `data`, if
/// given) to `output`, whole or not at all; returns a one-line report.
pub fn report(model: &Path, data: Option<&Path>, output: &Path) -> Result<String, CliError> {
    let loaded = load_model(model)?;
    let batch = match data {
        Some(path) => {
            let (schema, reader) = parquet_io::open(path)?;
            let batches = reader
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
            Some(
                arrow::compute::concat_batches(&schema, &batches)
                    .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let named = |e: arbor_ensemble::ArborError| match data {
        Some(path) => CliError::Usage(format!("{}: {e}", path.display())),
        None => CliError::Usage(format!("{}: {e}", model.display())),
    };
    let html = loaded.report_html(batch.as_ref()).map_err(named)?;
    AtomicFile::write_all(output, html.as_bytes())?;
    let rows = batch.map_or(String::new(), |b| format!(" on {} rows", b.num_rows()));
    Ok(format!("report of {}{rows} -> {}", model.display(), output.display()))
}
