//! `arbor predict`: streams a Parquet file through a model into another.

use std::path::PathBuf;
use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;

use super::{parquet_io, progress_bar, AtomicFile};
use crate::CliError;

/// What `arbor predict` is asked to do.
#[derive(Clone, Debug, Default)]
pub struct PredictArgs {
    /// The model file.
    pub model: PathBuf,
    /// Rows to score (Parquet).
    pub input: PathBuf,
    /// Where the scored rows go (Parquet).
    pub output: PathBuf,
    /// Add one `proba_<class>` column per class.
    pub proba: bool,
    /// Add each feature's SHAP contribution as Float64 columns
    /// (`contrib_<feature>`, `contrib_bias`, per class for more than two).
    pub contributions: bool,
}

/// Reads and decodes a model file, a piece at a time.
pub fn load_model(path: &std::path::Path) -> Result<Model, CliError> {
    let file = std::fs::File::open(path).map_err(CliError::io(path))?;
    Model::read_from(file).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// Scores every row batch by batch (memory stays bounded) and returns a
/// report: the rows written, and the time spent scoring them (the model's
/// walk from Arrow batches in memory to predictions, without the model's
/// loading or the Parquet reading and writing around it).
pub fn predict(args: &PredictArgs) -> Result<String, CliError> {
    let model = load_model(&args.model)?;
    let (schema, reader) = parquet_io::open(&args.input)?;
    for (i, f) in model.features().iter().enumerate() {
        let field = schema.field_with_name(&f.name).map_err(|_| {
            CliError::Usage(format!(
                "{}: the model's feature '{}' is not a column of the input (columns: {})",
                args.input.display(),
                f.name,
                schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?;
        model.check_feature_type(i, field.data_type())?;
    }
    if args.proba && model.task() != arbor_ensemble::Task::Classification {
        return Err(CliError::Usage("--proba needs a classification model; this one is regression".into()));
    }
    // Before any output file exists: a model that cannot explain says so now.
    let contribution_names = match args.contributions {
        true => {
            model.explainer().map_err(|e| CliError::Usage(format!("{}: {e}", args.model.display())))?;
            model.contribution_names()
        }
        false => Vec::new(),
    };
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new("prediction", model.prediction_type()?, false)));
    if args.proba {
        for class in model.class_names() {
            fields.push(Arc::new(Field::new(format!("proba_{class}"), DataType::Float64, false)));
        }
    }
    for name in &contribution_names {
        fields.push(Arc::new(Field::new(name, DataType::Float64, false)));
    }
    for f in &fields[schema.fields().len()..] {
        if schema.field_with_name(f.name()).is_ok() {
            return Err(CliError::Usage(format!(
                "{}: the input already has a column '{}'; rename it before predicting",
                args.input.display(),
                f.name()
            )));
        }
    }
    let out_schema = Arc::new(Schema::new(fields));
    let mut file = AtomicFile::create(&args.output)?;
    let mut writer =
        ArrowWriter::try_new(file.file().try_clone().map_err(CliError::io(&args.output))?, out_schema.clone(), None)
            .map_err(CliError::parquet(&args.output))?;
    let rows = progress_bar::counter("rows");
    let mut total = 0usize;
    let mut scoring = std::time::Duration::ZERO;
    for batch in reader {
        let batch = batch.map_err(|e| CliError::Parquet { path: args.input.clone(), source: e.into() })?;
        let started = std::time::Instant::now();
        let predictions = model.score(&batch)?;
        let contributions = args.contributions.then(|| model.contributions(&batch)).transpose()?;
        scoring += started.elapsed();
        let mut columns = batch.columns().to_vec();
        columns.push(model.prediction_array(&predictions)?);
        if args.proba {
            columns.extend(model.proba_arrays(&predictions));
        }
        if let Some(contributions) = &contributions {
            columns.extend(model.contribution_columns(contributions).into_iter().map(|(_, column)| column));
        }
        let out = RecordBatch::try_new(out_schema.clone(), columns)?;
        writer.write(&out).map_err(CliError::parquet(&args.output))?;
        total += batch.num_rows();
        rows.set_position(total as u64);
    }
    writer.close().map_err(CliError::parquet(&args.output))?;
    file.commit()?;
    rows.finish_and_clear();
    Ok(format!("wrote {total} rows to {}; scoring them took {:.3} s", args.output.display(), scoring.as_secs_f64()))
}
