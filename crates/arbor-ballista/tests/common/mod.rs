//! Test data split into several Parquet files, and single-node sessions to compare with.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Float64Type, Schema};
use datafusion::prelude::{SessionConfig, SessionContext};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

/// The repository's bundled data directory.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name)
}

/// Every row of a Parquet file, as one batch.
pub fn read(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// Writes a batch as a Parquet file.
pub fn write(path: &Path, batch: &RecordBatch) {
    let mut writer = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// A training set in several files and a test file with a `row_id` to order by.
pub struct Split {
    /// Keeps the files.
    pub dir: tempfile::TempDir,
    /// The directory of training files.
    pub train: PathBuf,
    /// The test file.
    pub test: PathBuf,
    /// Rows in the training files.
    pub train_rows: usize,
}

/// `train_rows` rows of `name`'s training file in `files` files, and
/// `test_rows` rows of its test file.
pub fn split(name: &str, train_rows: usize, test_rows: usize, files: usize) -> Split {
    let dir = tempfile::tempdir().unwrap();
    let train_dir = dir.path().join("train");
    std::fs::create_dir(&train_dir).unwrap();
    let train = read(&data(&format!("{name}_train.parquet")));
    let train = train.slice(0, train_rows.min(train.num_rows()));
    let per_file = train.num_rows().div_ceil(files);
    for f in 0..files {
        let start = f * per_file;
        let len = per_file.min(train.num_rows() - start);
        write(&train_dir.join(format!("part-{f}.parquet")), &train.slice(start, len));
    }
    let test = read(&data(&format!("{name}_test.parquet")));
    let test = test.slice(0, test_rows.min(test.num_rows()));
    let mut fields: Vec<Field> = test.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("row_id", DataType::UInt64, false));
    let mut columns = test.columns().to_vec();
    columns.push(Arc::new(UInt64Array::from_iter_values(0..test.num_rows() as u64)));
    let test_path = dir.path().join("test.parquet");
    write(&test_path, &RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap());
    Split { train: train_dir, test: test_path, train_rows: train.num_rows(), dir }
}

/// Flights: 60,000 training rows in `files` files, 10,000 test rows.
pub fn flights(files: usize) -> Split {
    split("flights_cls", 60_000, 10_000, files)
}

/// Diamonds: every training row in `files` files, 5,000 test rows.
pub fn diamonds(files: usize) -> Split {
    split("diamonds_reg", 43_152, 5_000, files)
}

/// A single-node session with arbor's functions.
pub fn single_node() -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    arbor_datafusion::register(&ctx);
    ctx
}

/// The share of rows whose column 0 (label) equals column 1 (prediction).
pub fn accuracy(batches: &[RecordBatch]) -> f64 {
    let (mut right, mut all) = (0usize, 0usize);
    for b in batches {
        let label = arrow::compute::cast(b.column(0), &DataType::Int64).unwrap();
        let predicted = arrow::compute::cast(b.column(1), &DataType::Int64).unwrap();
        let (label, predicted) = (
            label.as_primitive::<arrow::datatypes::Int64Type>(),
            predicted.as_primitive::<arrow::datatypes::Int64Type>(),
        );
        for i in 0..b.num_rows() {
            all += 1;
            right += usize::from(label.is_valid(i) && predicted.is_valid(i) && label.value(i) == predicted.value(i));
        }
    }
    right as f64 / all as f64
}

/// Column `i` of every batch, as f64.
pub fn column_f64(batches: &[RecordBatch], i: usize) -> Vec<f64> {
    batches
        .iter()
        .flat_map(|b| {
            arrow::compute::cast(b.column(i), &DataType::Float64)
                .unwrap()
                .as_primitive::<Float64Type>()
                .values()
                .to_vec()
        })
        .collect()
}
