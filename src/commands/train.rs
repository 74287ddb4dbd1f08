//! `arbor train`: a Parquet file in, a model file out.

use std::path::PathBuf;
use std::time::Instant;

use arbor_ensemble::{Algorithm, Progress, TrainParams, TrainingData};

use super::{parquet_io, progress, AtomicFile};
use crate::CliError;

/// What `arbor train` is asked to do.
#[derive(Clone, Debug, Default)]
pub struct TrainArgs {
    /// Training data (Parquet).
    pub input: PathBuf,
    /// The label column.
    pub label: String,
    /// Where the model is written.
    pub output: PathBuf,
    /// `classification` or `regression` (default: from the label's type).
    pub task: Option<String>,
    /// `random-forest` or `gradient-boosting`.
    pub algorithm: Option<String>,
    /// Feature columns (default: all but label and weight).
    pub features: Option<Vec<String>>,
    /// Sample weight column.
    pub weight: Option<String>,
    /// `KEY=VALUE` options.
    pub set: Vec<String>,
}

/// Trains a model and writes it; returns a one-line report.
pub fn train(args: &TrainArgs) -> Result<String, CliError> {
    let mut params = TrainParams::default();
    if let Some(task) = &args.task {
        params.set("task", task)?;
    }
    if let Some(algorithm) = &args.algorithm {
        params.set("algorithm", algorithm)?;
    }
    for pair in &args.set {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| CliError::Usage(format!("--set expects KEY=VALUE, got '{pair}'")))?;
        params.set(key.trim(), value.trim())?;
    }
    let start = Instant::now();
    let (schema, batches) = parquet_io::read_all(&args.input)?;
    let data = TrainingData::from_batches(
        &schema,
        &batches,
        &args.label,
        args.features.as_deref(),
        args.weight.as_deref(),
        params.task,
    )?;
    drop(batches);
    let (total, what) = match params.algorithm.0 {
        Algorithm::RandomForest => (params.forest.n_trees, "trees"),
        Algorithm::GradientBoosting => (params.boosting.n_rounds, "rounds"),
    };
    let bar = progress::bar(total as u64, what);
    let model = arbor_ensemble::train(&data, &params, &|p: &Progress| {
        bar.set_position(p.done as u64);
        match (p.train_loss, p.valid_loss) {
            (Some(train), Some(valid)) => bar.set_message(format!("loss {train:.5} (validation {valid:.5})")),
            (Some(train), None) => bar.set_message(format!("loss {train:.5}")),
            _ => {}
        }
    })?;
    bar.finish_and_clear();
    let bytes = model.to_bytes();
    AtomicFile::write_all(&args.output, &bytes)?;
    let stopped = match model.boosting.as_ref().and_then(|b| b.early_stopping.as_ref()) {
        Some(e) => format!(
            "; early stopping kept {} of {} rounds (validation loss {:.6} on {} rows)",
            e.best_round, e.rounds_run, e.best_loss, e.validation_rows
        ),
        None => String::new(),
    };
    Ok(format!(
        "trained {} {} {} trees on {} rows ({} skipped: null label) in {:.2}s; wrote {} ({} bytes){stopped}",
        model.trees.len(),
        model.task.name(),
        model.algorithm.name(),
        model.training_rows,
        model.skipped_null_labels,
        start.elapsed().as_secs_f64(),
        args.output.display(),
        bytes.len()
    ))
}
