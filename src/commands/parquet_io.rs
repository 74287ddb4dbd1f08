//! Reading Parquet input files.

use std::fs::File;
use std::path::Path;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::CliError;

/// Rows per batch read. Prediction sends a batch's rows through one tree
/// before the next, so larger batches bring each tree in from memory fewer
/// times (8,192-row batches made forest prediction 1.7 times slower); memory
/// stays bounded by one batch, whatever the file's size.
pub const BATCH_SIZE: usize = 65536;

/// A streaming reader over a Parquet file and its schema.
pub fn open(path: &Path) -> Result<(SchemaRef, ParquetRecordBatchReader), CliError> {
    let file = File::open(path).map_err(CliError::io(path))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(CliError::parquet(path))?;
    let schema = builder.schema().clone();
    let reader = builder.with_batch_size(BATCH_SIZE).build().map_err(CliError::parquet(path))?;
    Ok((schema, reader))
}

/// Every batch of a Parquet file.
pub fn read_all(path: &Path) -> Result<(SchemaRef, Vec<RecordBatch>), CliError> {
    let (schema, reader) = open(path)?;
    let batches =
        reader.collect::<Result<Vec<_>, _>>().map_err(|e| CliError::Parquet { path: path.into(), source: e.into() })?;
    Ok((schema, batches))
}
