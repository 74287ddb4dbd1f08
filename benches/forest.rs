//! Criterion benches: the histogram kernel, training a forest, boosting
//! rounds, and prediction, on the bundled NYC flights data.
//!
//! `cargo bench --bench forest`

use std::fs::File;
use std::hint::black_box;
use std::path::PathBuf;

use arbor::ensemble::{train, Model, TrainParams, TrainingData};
use arbor::kernels::{build_histogram, Target};
use arbor::quantize::{BinnedMatrix, QuantizeParams};
use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn flights(file: &str) -> RecordBatch {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data").join(file);
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

fn training_data(batch: &RecordBatch) -> TrainingData {
    TrainingData::from_batches(&batch.schema(), std::slice::from_ref(batch), "label", None, None, None).unwrap()
}

fn histogram(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let matrix = BinnedMatrix::fit(&data.columns, &QuantizeParams::default());
    let labels = match &data.target {
        arbor::ensemble::Target::Classes(l) => l.clone(),
        arbor::ensemble::Target::Values(_) => unreachable!("flights is classification"),
    };
    let n = matrix.n_rows();
    let rows: Vec<u32> = (0..n as u32).collect();
    let ones = vec![1.0; n];
    let target = Target::Classes { labels: &labels, n_classes: 2 };
    let mut group = c.benchmark_group("histogram");
    group.throughput(Throughput::Elements(n as u64));
    for f in [4usize, 6] {
        let name = &data.features[f].name;
        let bins = matrix.mapper(f).n_bins();
        let mut hist = vec![0.0; bins * target.stride()];
        group.bench_with_input(BenchmarkId::new("classes", name), &f, |b, &f| {
            b.iter(|| {
                hist.fill(0.0);
                build_histogram(matrix.column(f), &rows, &ones, &ones, &target, &mut hist);
                black_box(&hist);
            })
        });
    }
    group.finish();
}

fn training(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let params = TrainParams::parse_options("n_trees=4").unwrap();
    let mut group = c.benchmark_group("train");
    group.sample_size(10);
    group.throughput(Throughput::Elements(data.n_rows() as u64 * 4));
    group.bench_function("flights_4_trees", |b| b.iter(|| black_box(train(&data, &params, &|_| {}).unwrap())));
    group.finish();
}

/// Gradient boosting at seed 004's defaults: one round (one depth-6 tree on
/// all 261,876 rows), and ten rounds, so the per-round cost shows without the
/// fixed cost of binning.
fn boosting(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let mut group = c.benchmark_group("boosting");
    group.sample_size(10);
    for rounds in [1usize, 10] {
        let params = TrainParams::parse_options(&format!("algorithm=gradient-boosting n_rounds={rounds}")).unwrap();
        group.throughput(Throughput::Elements(data.n_rows() as u64 * rounds as u64));
        group.bench_function(BenchmarkId::new("flights_rounds", rounds), |b| {
            b.iter(|| black_box(train(&data, &params, &|_| {}).unwrap()))
        });
    }
    group.finish();
}

fn prediction(c: &mut Criterion) {
    let train_batch = flights("flights_cls_train.parquet");
    let test = flights("flights_cls_test.parquet");
    let model: Model =
        train(&training_data(&train_batch), &TrainParams::parse_options("n_trees=20").unwrap(), &|_| {}).unwrap();
    let mut group = c.benchmark_group("predict");
    group.sample_size(10);
    group.throughput(Throughput::Elements(test.num_rows() as u64));
    group.bench_function("flights_20_trees", |b| b.iter(|| black_box(model.predict_batch(&test).unwrap())));
    // shallow boosted trees: the level-by-level batched walk
    let options = "algorithm=gradient-boosting, n_rounds=50, max_depth=6";
    let boosted: Model =
        train(&training_data(&train_batch), &TrainParams::parse_options(options).unwrap(), &|_| {}).unwrap();
    group.bench_function("flights_50_rounds_depth_6", |b| b.iter(|| black_box(boosted.predict_batch(&test).unwrap())));
    group.finish();
}

criterion_group!(benches, histogram, training, boosting, prediction);
criterion_main!(benches);
