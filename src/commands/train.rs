//! `arbor train`: a Parquet file in, a model file out.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arbor_ensemble::{
    Algorithm, ArborError, BinnedData, Model, OutOfBag, Progress, Task, TrainParams, Trained, Trainer, TrainingData,
};
use arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch};
use arrow::compute::nullif;
use parquet::arrow::ArrowWriter;

use super::{parquet_io, progress_bar, AtomicFile};
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
    /// Feature columns (default: all but label, weight and group).
    pub features: Option<Vec<String>>,
    /// Sample weight column.
    pub weight: Option<String>,
    /// Query id column (learning to rank).
    pub group: Option<String>,
    /// `KEY=VALUE` options.
    pub set: Vec<String>,
    /// Where per-row out-of-bag predictions and errors are written (Parquet);
    /// implies `oob_per_observation=true`.
    pub oob_output: Option<PathBuf>,
    /// The bytes training may use (`None`: the machine's, or its cgroup's).
    pub memory_limit: Option<u64>,
    /// A boosted model to continue (`--init-model`).
    pub init_model: Option<PathBuf>,
}

/// Trains a model and writes it; returns its report for standard error: a
/// `warning: ...` line for each of the model's warnings (a label of a
/// single class), then one line of what was trained and written.
pub fn train(args: &TrainArgs) -> Result<String, CliError> {
    let mut params = TrainParams::default();
    if let Some(task) = &args.task {
        params.set("task", task)?;
    }
    if let Some(algorithm) = &args.algorithm {
        params.set("algorithm", algorithm)?;
    }
    // A model to continue is read first; it is boosted, so boosting is the default.
    let init_model = args.init_model.as_deref().map(super::predict::load_model).transpose()?;
    if let (Some(model), None) = (&init_model, &args.algorithm) {
        params.set("algorithm", "gradient-boosting")?;
        if args.task.is_none() {
            params.set("task", model.task().name())?;
        }
    }
    for pair in &args.set {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| CliError::Usage(format!("--set expects KEY=VALUE, got '{pair}'")))?;
        params.set(key.trim(), value.trim())?;
    }
    if args.group.is_some() {
        params.rank_by_default();
    }
    if args.oob_output.is_some() {
        params.set("oob_per_observation", "true")?;
    } else if params.forest.oob_per_observation && params.algorithm.0 == Algorithm::RandomForest {
        return Err(CliError::Usage(
            "oob_per_observation=true gives a prediction and an error per training row: \
             name the Parquet file for them with --oob-output FILE"
                .into(),
        ));
    }
    // Checked once, before any file is touched; the trainer takes them checked.
    let params = params.check()?;
    // Opened first, so an output that cannot be written fails before training.
    let mut file = AtomicFile::create(&args.output)?;
    let start = Instant::now();
    arbor_ensemble::set_memory_limit(args.memory_limit);
    let (total, what) = match params.algorithm.0 {
        Algorithm::RandomForest => (params.forest.n_trees, "trees"),
        Algorithm::GradientBoosting => (params.boosting.n_rounds, "rounds"),
    };
    let bar = progress_bar::bar(total as u64, what);
    let on_progress = |p: &Progress| {
        bar.set_position(p.done as u64);
        match (p.train_loss, p.valid_loss) {
            (Some(train), Some(valid)) => bar.set_message(format!("loss {train:.5} (validation {valid:.5})")),
            (Some(train), None) => bar.set_message(format!("loss {train:.5}")),
            (None, Some(valid)) => bar.set_message(format!("validation loss {valid:.5}")),
            _ => {}
        }
    };
    // A forest's finished trees wait in a temporary file beside the model, not in memory.
    let mut trainer = Trainer::checked(params)
        .label(&args.label)
        .on_progress(&on_progress)
        .spill_trees_to(AtomicFile::directory(&args.output));
    if let Some(features) = &args.features {
        trainer = trainer.features(features);
    }
    if let Some(weight) = &args.weight {
        trainer = trainer.weight(weight);
    }
    if let Some(group) = &args.group {
        trainer = trainer.group(group);
    }
    if let Some(model) = &init_model {
        // Continued training reads the model's features, binned on its bins.
        if args.features.is_none() {
            trainer = trainer.features(model.features().iter().map(|f| f.name.clone()));
        }
        trainer = trainer.init_model(model);
    }
    // Read a column at a time: the whole table is never in memory. Binned
    // as read (each column twice: for the rows' hashes, then for its bins),
    // unless exact splits need every raw value or the rows are binned on a
    // model's bins (`--init-model`), which read the table whole.
    let input = parquet_io::ColumnReader::open(&args.input)?;
    let read = |name: &str| input.read(name).map_err(|e| ArborError::Data(e.to_string()));
    let Trained { model, out_of_bag: oob } = if trainer.params().tree().exact || init_model.is_some() {
        let data = TrainingData::from_column_reader(input.schema(), trainer.roles(), trainer.params().task, read)?;
        trainer.fit_owned(data)?
    } else {
        let quantize = trainer.params().tree().quantize_params();
        let data = BinnedData::read_columns(input.schema(), trainer.roles(), trainer.params().task, quantize, read)?;
        crate::release_free_memory();
        trainer.fit_owned_binned(data)?
    };
    bar.finish_and_clear();
    let oob_report = match (&args.oob_output, &oob) {
        (Some(path), Some(oob)) => {
            write_oob(path, &model, oob)?;
            format!("; out-of-bag error {:.6} on {} rows, per row in {}", oob.error, oob.rows, path.display())
        }
        (_, Some(oob)) => format!("; out-of-bag error {:.6} on {} rows", oob.error, oob.rows),
        _ => String::new(),
    };
    let written = model.write_to(std::io::BufWriter::new(file.file())).map_err(CliError::io(&args.output))?;
    file.commit()?;
    let stopped = match model.boosting().and_then(|b| b.early_stopping.as_ref()) {
        Some(e) => format!(
            "; early stopping kept {} of {} rounds (validation loss {:.6} on {} rows)",
            e.best_round, e.rounds_run, e.best_loss, e.validation_rows
        ),
        None => String::new(),
    };
    let warnings: String = model.warnings().iter().map(|w| format!("warning: {w}\n")).collect();
    Ok(format!(
        "{warnings}trained {} {} {} trees on {} rows ({} skipped: null label) in {:.2}s; wrote {} ({} bytes){stopped}{oob_report}",
        model.trees().len(),
        model.task().name(),
        model.algorithm().name(),
        model.training_rows(),
        model.skipped_null_labels(),
        start.elapsed().as_secs_f64(),
        args.output.display(),
        written
    ))
}

/// Writes per-row out-of-bag results: the label, `oob_prediction` and
/// `oob_error` (null for rows that were in every tree's bag), one row per
/// training row with a non-null label, in input order.
fn write_oob(path: &Path, model: &Model, oob: &OutOfBag) -> Result<(), CliError> {
    let rows = oob.per_observation.as_ref().ok_or_else(|| CliError::Usage("no per-row out-of-bag results".into()))?;
    let (label, prediction): (ArrayRef, ArrayRef) = match (model.task(), &model.label().classes) {
        (Task::Classification, Some(classes)) => {
            let label_type = model.label().arrow_type()?;
            let labels: Vec<u32> = rows.iter().map(|o| o.label as u32).collect();
            let index: Vec<u32> = rows.iter().map(|o| o.prediction.unwrap_or(0.0) as u32).collect();
            let never_out = BooleanArray::from_iter(rows.iter().map(|o| Some(o.prediction.is_none())));
            (classes.take(&labels, &label_type)?, nullif(&classes.take(&index, &label_type)?, &never_out)?)
        }
        (Task::Regression, _) => (
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|o| o.label))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|o| o.prediction))),
        ),
        (Task::Classification, None) => return Err(CliError::Usage("a classification model without classes".into())),
    };
    let error: ArrayRef = Arc::new(Float64Array::from_iter(rows.iter().map(|o| o.error)));
    let batch = RecordBatch::try_from_iter([
        (model.label().name.as_str(), label),
        ("oob_prediction", prediction),
        ("oob_error", error),
    ])?;
    let mut file = AtomicFile::create(path)?;
    let mut writer = ArrowWriter::try_new(file.file().try_clone().map_err(CliError::io(path))?, batch.schema(), None)
        .map_err(CliError::parquet(path))?;
    writer.write(&batch).map_err(CliError::parquet(path))?;
    writer.close().map_err(CliError::parquet(path))?;
    file.commit()
}
