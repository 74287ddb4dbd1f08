//! Helpers shared by the ensemble crate's integration tests: the bundled
//! Parquet data, training from an options string, and accuracy measures.
#![allow(dead_code)] // each test file uses its own share of the helpers

use std::fs::File;
use std::path::{Path, PathBuf};

use arbor_ensemble::{Model, TrainParams, Trainer, TrainingData};
use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A file of the repository's `data/` directory.
pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name)
}

/// A file of the import fixtures (`tests/interop/`, written by its `make_fixtures.py`).
pub fn interop_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}

/// The first `rows` rows of a bundled Parquet file, as one batch.
pub fn read(name: &str, rows: usize) -> RecordBatch {
    let all = read_file(&data_path(name));
    all.slice(0, rows.min(all.num_rows()))
}

/// A whole Parquet file as one batch.
pub fn read_file(path: &Path) -> RecordBatch {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

/// Training data from a batch whose label column is `label`.
pub fn training_data(batch: &RecordBatch, weight: Option<&str>, params: &TrainParams) -> TrainingData {
    trainer(params, weight).training_data(vec![batch.clone()]).unwrap()
}

/// A trainer with `params`, label `label` and, if given, weight column `weight`.
pub fn trainer(params: &TrainParams, weight: Option<&str>) -> Trainer<'static> {
    let trainer = Trainer::new(params.clone());
    match weight {
        Some(w) => trainer.weight(w),
        None => trainer,
    }
}

/// A model trained on `batch` with an options string.
pub fn fit(batch: &RecordBatch, options: &str) -> Model {
    let params = TrainParams::parse_options(options).unwrap();
    Trainer::new(params).fit(std::slice::from_ref(batch)).unwrap()
}

/// Share of `test` rows whose predicted class is the label.
pub fn accuracy(model: &Model, test: &RecordBatch) -> f64 {
    let p = model.score(test).unwrap();
    let predicted = model.prediction_array(&p).unwrap();
    let truth = test.column_by_name("label").unwrap();
    let predicted = arrow::compute::cast(&predicted, &DataType::Int64).unwrap();
    let truth = arrow::compute::cast(truth, &DataType::Int64).unwrap();
    let (predicted, truth) = (predicted.as_primitive::<Int64Type>(), truth.as_primitive::<Int64Type>());
    (0..truth.len()).filter(|&i| predicted.value(i) == truth.value(i)).count() as f64 / truth.len() as f64
}

/// Root mean squared error of a regression model on `test`.
pub fn rmse(model: &Model, test: &RecordBatch) -> f64 {
    let p = model.score(test).unwrap();
    let y = test.column_by_name("label").unwrap().as_primitive::<Float64Type>();
    (p.values().iter().zip(y.values()).map(|(p, y)| (p - y).powi(2)).sum::<f64>() / y.len() as f64).sqrt()
}

/// Rewrites model bytes' header length and checksum after an edit of the
/// payload, so the edit reaches the payload's decoder.
pub fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 28 {
        let payload_len = (bytes.len() - 28) as u64;
        let checksum = xxhash_rust::xxh3::xxh3_64(&bytes[28..]);
        bytes[12..20].copy_from_slice(&payload_len.to_le_bytes());
        bytes[20..28].copy_from_slice(&checksum.to_le_bytes());
    }
    bytes
}
