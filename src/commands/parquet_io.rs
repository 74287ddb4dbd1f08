//! Reading Parquet input files.

use std::fs::File;
use std::path::Path;

use arrow::array::ArrayRef;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

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

/// A Parquet file read one column at a time: its metadata is read once, and
/// each column's pages are decoded only when the column is asked for, so a
/// reader that converts and frees each column never holds the whole table.
pub struct ColumnReader {
    path: std::path::PathBuf,
    metadata: ArrowReaderMetadata,
}

impl ColumnReader {
    /// Opens `path` and reads its footer.
    pub fn open(path: &Path) -> Result<ColumnReader, CliError> {
        let file = File::open(path).map_err(CliError::io(path))?;
        let metadata = ArrowReaderMetadata::load(&file, Default::default()).map_err(CliError::parquet(path))?;
        Ok(ColumnReader { path: path.into(), metadata })
    }

    /// The file's Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        self.metadata.schema()
    }

    /// Every batch of the top-level column `name`.
    pub fn read(&self, name: &str) -> Result<Vec<ArrayRef>, CliError> {
        let parquet = |e: parquet::errors::ParquetError| CliError::Parquet { path: self.path.clone(), source: e };
        let index = self.schema().index_of(name).map_err(|e| parquet(e.into()))?;
        // A file of its own: clones of one `File` share its position, and columns are read on several threads.
        let file = File::open(&self.path).map_err(CliError::io(&self.path))?;
        let mask = ProjectionMask::roots(self.metadata.parquet_schema(), [index]);
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
            .with_projection(mask)
            .with_batch_size(BATCH_SIZE)
            .build()
            .map_err(parquet)?;
        reader.map(|batch| Ok(batch.map_err(|e| parquet(e.into()))?.column(0).clone())).collect()
    }
}
