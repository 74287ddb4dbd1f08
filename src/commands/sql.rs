//! `arbor sql`: statements run in an embedded DataFusion session with arbor's
//! functions registered.

use std::sync::Arc;

use arbor_datafusion::{model_bytes, ModelKind};
use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;

#[cfg(feature = "cluster")]
use super::progress_bar;
use crate::CliError;

/// How query results are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// CSV with a header line.
    Csv,
    /// JSON lines: one object per row.
    Json,
}

/// What a cluster command says in an `arbor` built without the `cluster`
/// feature (the Ballista client, scheduler and executor, and their gRPC stack).
pub const WITHOUT_CLUSTER: &str = "this arbor was built without the `cluster` feature; \
     build it with `cargo build --release --features cluster` to run on a Ballista cluster";

/// An embedded DataFusion session with arbor's functions, kept across
/// statements (and, in the interactive shell, across lines).
pub struct SqlSession {
    ctx: SessionContext,
    format: OutputFormat,
}

impl SqlSession {
    /// A new session whose query results print in `format`.
    pub fn new(format: OutputFormat) -> SqlSession {
        // Parquet files keep their Arrow field metadata (models written by
        // older arbor versions typed their column there).
        let config = SessionConfig::new().set_bool("datafusion.execution.parquet.skip_metadata", false);
        let ctx = SessionContext::new_with_config(config);
        arbor_datafusion::register(&ctx);
        SqlSession { ctx, format }
    }

    /// A session on the Ballista cluster whose scheduler listens at `url`
    /// (`df://HOST:PORT`): statements are planned by the scheduler and run
    /// on its executors. An `arbor` built without the `cluster` feature
    /// refuses with [`WITHOUT_CLUSTER`].
    pub async fn cluster(url: &str, format: OutputFormat) -> Result<SqlSession, CliError> {
        #[cfg(feature = "cluster")]
        {
            let ctx = arbor_ballista::remote(url).await?;
            ctx.state_ref().write().config_mut().set_extension(Arc::new(progress_bar::level_rounds()));
            ctx.sql("SET datafusion.execution.parquet.skip_metadata = false").await?.collect().await?;
            Ok(SqlSession { ctx, format })
        }
        #[cfg(not(feature = "cluster"))]
        {
            let _ = (url, format);
            Err(CliError::Usage(WITHOUT_CLUSTER.into()))
        }
    }

    /// Runs every statement of `sql` in order, writing each query's result to
    /// `out`; returns how many statements ran.
    pub async fn run(&self, sql: &str, out: &mut dyn std::io::Write) -> Result<usize, CliError> {
        let statements = DFParser::parse_sql(sql).map_err(CliError::DataFusion)?;
        let count = statements.len();
        for statement in statements {
            let plan = self.ctx.state().statement_to_plan(statement).await?;
            let batches = self.ctx.execute_logical_plan(plan).await?.collect().await?;
            let batches: Vec<RecordBatch> = batches.iter().map(displayable).collect::<Result<_, _>>()?;
            if batches.iter().all(|b| b.num_columns() == 0) {
                continue;
            }
            write_batches(&batches, self.format, out)?;
        }
        Ok(count)
    }
}

/// Runs every statement of `sql` in a new session (on the cluster at
/// `cluster`, if given) and writes each query's result to `out`.
pub async fn run_sql(
    sql: &str,
    cluster: Option<&str>,
    format: OutputFormat,
    out: &mut dyn std::io::Write,
) -> Result<(), CliError> {
    let session = match cluster {
        Some(url) => SqlSession::cluster(url, format).await?,
        None => SqlSession::new(format),
    };
    if session.run(sql, out).await? == 0 {
        return Err(CliError::Usage("no SQL statement to run".into()));
    }
    Ok(())
}

/// Writes query results to `out`. CSV and JSON are rendered a batch at a
/// time and then written, so a failed write (a closed pipe) keeps its cause.
fn write_batches(batches: &[RecordBatch], format: OutputFormat, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    let io = |e| CliError::Io { path: "<stdout>".into(), source: e };
    match format {
        OutputFormat::Table => {
            writeln!(out, "{}", arrow::util::pretty::pretty_format_batches(batches)?).map_err(io)?;
        }
        OutputFormat::Csv | OutputFormat::Json => {
            let mut text = Vec::new();
            for (i, batch) in batches.iter().enumerate() {
                text.clear();
                if format == OutputFormat::Csv {
                    arrow::csv::WriterBuilder::new().with_header(i == 0).build(&mut text).write(batch)?;
                } else {
                    let mut writer = arrow::json::LineDelimitedWriter::new(&mut text);
                    writer.write(batch)?;
                    writer.finish()?;
                }
                out.write_all(&text).map_err(io)?;
            }
        }
    }
    Ok(())
}

/// The batch with model columns (and other binary columns) shown by size,
/// `<N bytes>`, not as pages of hex.
pub fn displayable(batch: &RecordBatch) -> Result<RecordBatch, CliError> {
    if !batch.schema().fields().iter().any(|f| is_binary(f.data_type())) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if is_binary(field.data_type()) {
            let sizes: StringArray =
                (0..column.len()).map(|i| model_bytes(column, i).map(|b| format!("<{} bytes>", b.len()))).collect();
            fields.push(Field::new(field.name(), DataType::Utf8, true));
            columns.push(Arc::new(sizes) as ArrayRef);
        } else {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

fn is_binary(t: &DataType) -> bool {
    matches!(ModelKind::of(t), Some(ModelKind::Bytes | ModelKind::Typed(_)))
}
