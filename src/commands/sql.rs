//! `arbor sql`: statements run in an embedded DataFusion session with arbor's
//! functions registered.

use std::sync::Arc;

use arbor_datafusion::binary_value;
use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;

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

/// Runs every statement of `sql` in order and writes each query's result to `out`.
pub async fn run_sql(sql: &str, format: OutputFormat, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    // Parquet files keep their Arrow field metadata, so a model column read back
    // from Parquet still tells predict_forest the label's type.
    let config = SessionConfig::new().set_bool("datafusion.execution.parquet.skip_metadata", false);
    let ctx = SessionContext::new_with_config(config);
    arbor_datafusion::register(&ctx);
    let statements = DFParser::parse_sql(sql).map_err(CliError::DataFusion)?;
    if statements.is_empty() {
        return Err(CliError::Usage("no SQL statement to run".into()));
    }
    for statement in statements {
        let plan = ctx.state().statement_to_plan(statement).await?;
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        let batches: Vec<RecordBatch> = batches.iter().map(displayable).collect::<Result<_, _>>()?;
        if batches.iter().all(|b| b.num_columns() == 0) {
            continue;
        }
        write_batches(&batches, format, out)?;
    }
    Ok(())
}

fn write_batches(batches: &[RecordBatch], format: OutputFormat, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    let io = |e| CliError::Io { path: "<stdout>".into(), source: e };
    match format {
        OutputFormat::Table => {
            writeln!(out, "{}", arrow::util::pretty::pretty_format_batches(batches)?).map_err(io)?;
        }
        OutputFormat::Csv => {
            let mut writer = arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
            for b in batches {
                writer.write(b)?;
            }
        }
        OutputFormat::Json => {
            let mut writer = arrow::json::LineDelimitedWriter::new(&mut *out);
            writer.write_batches(&batches.iter().collect::<Vec<_>>())?;
            writer.finish()?;
        }
    }
    Ok(())
}

/// The batch with binary columns (models) shown by size, `<N bytes>`, not as pages of hex.
pub fn displayable(batch: &RecordBatch) -> Result<RecordBatch, CliError> {
    if !batch.schema().fields().iter().any(|f| is_binary(f.data_type())) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if is_binary(field.data_type()) {
            let sizes: StringArray =
                (0..column.len()).map(|i| binary_value(column, i).map(|b| format!("<{} bytes>", b.len()))).collect();
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
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView)
}
