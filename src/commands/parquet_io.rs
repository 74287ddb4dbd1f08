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

/// A Parquet file, or a directory of them, read one column at a time: the
/// footers are read once, and a column's pages are decoded only when the
/// column is asked for, so a reader that converts and frees each column
/// never holds the whole table.
pub struct ColumnReader {
    /// Each file and its metadata, in name order.
    files: Vec<(std::path::PathBuf, ArrowReaderMetadata)>,
}

impl ColumnReader {
    /// Opens `path`, a Parquet file or a directory of `*.parquet` files of
    /// one schema, and reads the footers.
    pub fn open(path: &Path) -> Result<ColumnReader, CliError> {
        let paths = if path.is_dir() {
            let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(path)
                .map_err(CliError::io(path))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
                .collect();
            paths.sort();
            if paths.is_empty() {
                return Err(CliError::Usage(format!("'{}' holds no .parquet files", path.display())));
            }
            paths
        } else {
            vec![path.to_path_buf()]
        };
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let file = File::open(&path).map_err(CliError::io(&path))?;
            let metadata = ArrowReaderMetadata::load(&file, Default::default()).map_err(CliError::parquet(&path))?;
            if let Some((first, first_metadata)) = files.first() {
                let first_metadata: &ArrowReaderMetadata = first_metadata;
                if first_metadata.schema().fields() != metadata.schema().fields() {
                    return Err(CliError::Usage(format!(
                        "'{}' and '{}' have different schemas; the files of one input need one",
                        Path::new(first).display(),
                        path.display()
                    )));
                }
            }
            files.push((path, metadata));
        }
        Ok(ColumnReader { files })
    }

    /// The files' Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        self.files[0].1.schema()
    }

    /// Every batch of the top-level column `name`, file after file.
    pub fn read(&self, name: &str) -> Result<Vec<ArrayRef>, CliError> {
        let mut arrays = Vec::new();
        for (path, metadata) in &self.files {
            let parquet = |e: parquet::errors::ParquetError| CliError::Parquet { path: path.clone(), source: e };
            let index = metadata.schema().index_of(name).map_err(|e| parquet(e.into()))?;
            // A file of its own: clones of one `File` share its position, and columns are read on several threads.
            let file = File::open(path).map_err(CliError::io(path))?;
            let mask = ProjectionMask::roots(metadata.parquet_schema(), [index]);
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
                .with_projection(mask)
                .with_batch_size(BATCH_SIZE)
                .build()
                .map_err(parquet)?;
            for batch in reader {
                arrays.push(batch.map_err(|e| parquet(e.into()))?.column(0).clone());
            }
        }
        Ok(arrays)
    }
}
