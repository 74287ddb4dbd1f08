//! The SQL logic tests: every `sql/*.slt` file, run against a DataFusion
//! session with arbor's functions registered (a fresh session per file).
//!
//! Paths in the files are relative to the repository root; `$__TEST_DIR__`
//! (after `control substitution on`) is a temporary directory per file.
//! `ARBOR_SLT=name cargo test --test sqllogictest` runs the matching files only;
//! with `ARBOR_SLT_COMPLETE=1` it rewrites their expected results (review the diff).

use std::path::{Path, PathBuf};

use arbor::commands::displayable;
use arbor_datafusion::register;
use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Record};

/// One DataFusion session, as sqllogictest's database.
struct ArborDb {
    ctx: SessionContext,
}

#[async_trait]
impl AsyncDB for ArborDb {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await?;
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema.fields().iter().map(|f| column_type(f.data_type())).collect();
        let mut rows = Vec::new();
        for batch in &batches {
            rows.extend(rows_of(batch)?);
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "arbor-datafusion"
    }
}

/// sqllogictest's column letter for an Arrow type: I integer, R float, T anything else.
fn column_type(data_type: &DataType) -> DefaultColumnType {
    if data_type.is_integer() {
        DefaultColumnType::Integer
    } else if data_type.is_floating() {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

/// A batch as text rows: NULL for nulls, `(empty)` for empty strings, and
/// binary values (models) by their size, as `arbor sql` shows them.
fn rows_of(batch: &RecordBatch) -> Result<Vec<Vec<String>>, DataFusionError> {
    let batch = displayable(batch).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let options = FormatOptions::default().with_null("NULL");
    let formatters = batch
        .columns()
        .iter()
        .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()?;
    let cell = |formatter: &ArrayFormatter, row: usize| match formatter.value(row).to_string() {
        text if text.is_empty() => "(empty)".to_owned(),
        text => text,
    };
    Ok((0..batch.num_rows()).map(|row| formatters.iter().map(|f| cell(f, row)).collect()).collect())
}

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_logic_tests() {
    // Relative paths in the files are from the repository root.
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
    let mut files = slt_files();
    assert!(files.len() >= 4, "sql/*.slt files: {files:?}");
    // `ARBOR_SLT=name` runs only the files whose name contains it.
    if let Ok(only) = std::env::var("ARBOR_SLT") {
        files.retain(|f| f.to_string_lossy().contains(&only));
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in &files {
        let records = sqllogictest::parse_file::<DefaultColumnType>(file).unwrap();
        checked += records.iter().filter(|r| matches!(r, Record::Statement { .. } | Record::Query { .. })).count();
        let mut runner = sqllogictest::Runner::new(|| async {
            let ctx = SessionContext::new();
            register(&ctx);
            Ok(ArborDb { ctx })
        });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        if std::env::var_os("ARBOR_SLT_COMPLETE").is_some() {
            runner
                .update_test_file(
                    file,
                    " ",
                    sqllogictest::default_validator,
                    sqllogictest::default_normalizer,
                    sqllogictest::strict_column_validator,
                )
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            continue;
        }
        if let Err(e) = runner.run_file_async(file).await {
            failures.push(format!("{}: {}", file.display(), e.display(false)));
        }
    }
    println!("{checked} statements and queries in {} files", files.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
