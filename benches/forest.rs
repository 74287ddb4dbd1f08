//! Criterion benches: the histogram kernels and the split scan at every SIMD level, one
//! thread's memory bandwidth, preparing training data, training a forest, boosting rounds,
//! the jobs of level-wise (cluster) boosting, prediction (and the forest's walk at every SIMD level), loading a
//! model, and explaining predictions (TreeSHAP), on the bundled NYC flights data; and boosted trees scored
//! by walking them against QuickScorer's bitvectors, on trees and ranks made up for it.
//!
//! `cargo bench --bench forest` (or `-- histogram` for one group)

use std::fs::File;
use std::hint::black_box;
use std::path::PathBuf;

use arbor::ensemble::distributed::InMemory;
use arbor::ensemble::{CheckedParams, LevelSummary, Message, Model, TrainParams, Trainer, TrainingData};
use arbor::kernels::dispatch::{with_simd_level, SimdLevel};
use arbor::kernels::{
    best_split, best_split_plain, build_histogram, build_histogram_packed, build_row_histograms,
    build_row_histograms_quantized, count_keys, ranked_leaves_block, CompactHistogram, Criterion as SplitCriterion,
    HistogramTarget, QuantizedScales, QuantizedStats, QuickScorer, RankNode, RankedTree, RecordSums, RowBins,
    RowRecords, RowStats, SplitConstraints, ValueRecordSums, TRAVERSAL_BLOCK,
};
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
    Trainer::new(TrainParams::default()).training_data(batch).unwrap()
}

/// A model trained on prepared data with an options string.
fn train(data: &TrainingData, options: &str) -> Model {
    Trainer::new(TrainParams::parse_options(options).unwrap()).fit_data(data).unwrap().model
}

/// The histogram kernels at every SIMD level this CPU runs, on the root node
/// of flights (all 261,876 rows, 12 features). Throughput is in row ×
/// feature cells, so criterion's "elem/s" inverts to ns per cell:
/// - `classes/<level>`, `gradients/<level>`: column-wise, one feature
///   (`dep_delay`) at a time, as random forests build them;
/// - `rows/<level>`: row-wise, every feature at once, as boosting builds them;
/// - `rows_quantized/<level>`: the same from quantized gradients
///   (`use_quantized_grad`), summed in 32-bit integer lanes;
/// - `counts/<level>`, `records/<level>`: forests' class histograms as
///   integer counts (no sample weights), compacted to the occupied bins:
///   gathered by row id, or read in order from the node's row records;
/// - `records_fused3/<level>`: three features' counts (as a flights forest
///   draws per node) summed in one pass over the records, then compacted;
/// - `values_packed3/<level>`, `value_records_fused3/<level>`: a regression
///   forest's three features, from statistics gathered by row id feature by
///   feature, or in one pass over value records;
/// - `*_deep/<level>`: the same over a node deep in a tree, an irregular
///   sixteenth of the rows, where each row's values are a cache miss unless
///   the kernel prefetches them (its records are contiguous, as growth keeps them).
fn histogram(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let matrix = BinnedMatrix::fit(data.columns(), &QuantizeParams::default());
    let labels = match data.target() {
        arbor::ensemble::Target::Classes(l) => l.clone(),
        arbor::ensemble::Target::Values(_) => unreachable!("flights is classification"),
    };
    let n = matrix.n_rows();
    let n_features = matrix.n_features();
    let rows: Vec<u32> = (0..n as u32).collect();
    let deep: Vec<u32> = rows.iter().copied().filter(|r| r.wrapping_mul(2_654_435_761) >> 28 == 0).collect();
    let ones = vec![1.0; n];
    let grad: Vec<f64> = labels.iter().map(|&l| 0.3 - f64::from(l)).collect();
    let hess = vec![0.21; n];
    let classes = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
    let gradients = HistogramTarget::Gradients { grad: &grad, hess: &hess };
    let row_bins = RowBins::new(&matrix).expect("flights has at most 256 bins per feature");
    let stats: Vec<RowStats> = (0..n).map(|r| [1.0, grad[r], hess[r], 0.0]).collect();
    let quantized: Vec<QuantizedStats> = (0..n).map(|r| [1, (r % 5) as i16 - 2, (r % 7) as i16, 0]).collect();
    let scales = QuantizedScales { grad: 0.5, hess: 0.125 };
    let f = data.features().iter().position(|f| f.name == "dep_delay").expect("flights has dep_delay");
    let n_bins = matrix.mapper(f).n_bins();
    let keys = count_keys(&classes, &rows, &ones, &ones).expect("unit weights");

    let mut group = c.benchmark_group("histogram");
    for level in SimdLevel::available() {
        for (node, node_rows) in [("", &rows), ("_deep", &deep)] {
            group.throughput(Throughput::Elements(node_rows.len() as u64));
            for (name, target) in [("classes", &classes), ("gradients", &gradients)] {
                let mut hist = vec![0.0; matrix.mapper(f).n_bins() * target.stride()];
                group.bench_function(BenchmarkId::new(format!("{name}{node}"), level), |b| {
                    b.iter(|| {
                        with_simd_level(level, || {
                            hist.fill(0.0);
                            build_histogram(matrix.column(f), node_rows, &ones, &ones, target, &mut hist);
                        })
                        .unwrap();
                        black_box(&hist);
                    })
                });
            }
            let records = RowRecords::new(&matrix, node_rows, &keys).expect("12 byte-sized features");
            let mut compact = CompactHistogram::default();
            group.bench_function(BenchmarkId::new(format!("counts{node}"), level), |b| {
                b.iter(|| {
                    with_simd_level(level, || compact.build_counts(matrix.column(f), node_rows, &keys, 2, n_bins))
                        .unwrap();
                    black_box(compact.hist());
                })
            });
            group.bench_function(BenchmarkId::new(format!("records{node}"), level), |b| {
                let node = records.records(0..node_rows.len());
                b.iter(|| {
                    with_simd_level(level, || compact.build_counts_records(node, records.width(), f, 2, n_bins))
                        .unwrap();
                    black_box(compact.hist());
                })
            });
            // Three features, as a forest on flights draws per node, in one pass.
            group.throughput(Throughput::Elements((node_rows.len() * 3) as u64));
            let drawn = [f, (f + 1) % n_features, (f + 5) % n_features];
            let drawn_bins = drawn.map(|d| matrix.mapper(d).n_bins());
            let mut sums = RecordSums::default();
            group.bench_function(BenchmarkId::new(format!("records_fused3{node}"), level), |b| {
                let node = records.records(0..node_rows.len());
                b.iter(|| {
                    with_simd_level(level, || {
                        sums.fill(node, records.width(), &drawn, &drawn_bins, 2);
                        for k in 0..drawn.len() {
                            compact.take_counts(sums.feature(k), 2);
                        }
                    })
                    .unwrap();
                    black_box(compact.hist());
                })
            });
            // A regression forest's three features: statistics gathered by
            // row id, feature by feature, or one pass over value records.
            let y = &grad;
            let values = HistogramTarget::Values { y };
            let packed: Vec<RowStats> = (0..n).map(|r| values.row_stats(r, &ones, &ones).unwrap()).collect();
            let mut wide = Vec::new();
            let mut hists: Vec<Vec<f64>> = drawn_bins.iter().map(|&b| vec![0.0; b * 3]).collect();
            group.bench_function(BenchmarkId::new(format!("values_packed3{node}"), level), |b| {
                b.iter(|| {
                    with_simd_level(level, || {
                        for (&d, hist) in drawn.iter().zip(&mut hists) {
                            build_histogram_packed(matrix.column(d), node_rows, &packed, &mut wide, hist, 3);
                        }
                    })
                    .unwrap();
                    black_box(&hists);
                })
            });
            let value_records = RowRecords::with_values(&matrix, node_rows, &ones, y).expect("12 byte-sized features");
            let mut value_sums = ValueRecordSums::default();
            group.bench_function(BenchmarkId::new(format!("value_records_fused3{node}"), level), |b| {
                let node = value_records.records(0..node_rows.len());
                b.iter(|| {
                    with_simd_level(level, || {
                        value_sums.fill(node, value_records.width(), &drawn, &drawn_bins);
                        for (k, hist) in hists.iter_mut().enumerate() {
                            value_sums.write(k, hist);
                        }
                    })
                    .unwrap();
                    black_box(&hists);
                })
            });
            group.throughput(Throughput::Elements((node_rows.len() * n_features) as u64));
            let mut hist = vec![0.0; row_bins.offsets()[n_features] as usize * 3];
            group.bench_function(BenchmarkId::new(format!("rows{node}"), level), |b| {
                b.iter(|| {
                    with_simd_level(level, || {
                        hist.fill(0.0);
                        build_row_histograms(&row_bins, node_rows, &stats, 0..n_features, &mut hist);
                    })
                    .unwrap();
                    black_box(&hist);
                })
            });
            group.bench_function(BenchmarkId::new(format!("rows_quantized{node}"), level), |b| {
                b.iter(|| {
                    with_simd_level(level, || {
                        hist.fill(0.0);
                        build_row_histograms_quantized(
                            &row_bins,
                            node_rows,
                            &quantized,
                            scales,
                            0..n_features,
                            &mut hist,
                        );
                    })
                    .unwrap();
                    black_box(&hist);
                })
            });
        }
    }
    group.finish();
}

/// The best threshold of one dense histogram (flights' `dep_delay`, every
/// training row: 256 bins): the scan in lanes `best_split` takes against
/// the plain scan, one threshold at a time, at every SIMD level.
fn split_scan(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let matrix = BinnedMatrix::fit(data.columns(), &QuantizeParams::default());
    let arbor::ensemble::Target::Classes(labels) = data.target() else { unreachable!("flights is classification") };
    let n = matrix.n_rows();
    let rows: Vec<u32> = (0..n as u32).collect();
    let ones = vec![1.0; n];
    let grad: Vec<f64> = labels.iter().map(|&l| 0.3 - f64::from(l)).collect();
    let hess = vec![0.21; n];
    let f = data.features().iter().position(|f| f.name == "dep_delay").expect("flights has dep_delay");
    let histogram = |target: &HistogramTarget<'_>| {
        let mut hist = vec![0.0; matrix.mapper(f).n_bins() * target.stride()];
        build_histogram(matrix.column(f), &rows, &ones, &ones, target, &mut hist);
        hist
    };
    let cases = [
        ("gini", SplitCriterion::Gini, histogram(&HistogramTarget::Classes { labels, n_classes: 2 })),
        ("squared_error", SplitCriterion::Mse, histogram(&HistogramTarget::Values { y: &grad })),
        (
            "newton",
            SplitCriterion::Newton { lambda: 1.0 },
            histogram(&HistogramTarget::Gradients { grad: &grad, hess: &hess }),
        ),
    ];
    let constraints = SplitConstraints::default();
    let mut group = c.benchmark_group("split_scan");
    for level in SimdLevel::available() {
        for (name, criterion, hist) in &cases {
            group.throughput(Throughput::Elements((hist.len() / 3) as u64));
            group.bench_function(BenchmarkId::new(format!("{name}_lanes"), level), |b| {
                b.iter(|| with_simd_level(level, || best_split(black_box(hist), 3, *criterion, &constraints, false)))
            });
            group.bench_function(BenchmarkId::new(format!("{name}_plain"), level), |b| {
                let plain = || best_split_plain(black_box(hist), 3, *criterion, &constraints, false, f64::NEG_INFINITY);
                b.iter(|| with_simd_level(level, plain))
            });
        }
    }
    group.finish();
}

/// One thread's memory read bandwidth: summing 256 MiB, eight times the L3,
/// in eight independent lanes so the adds keep up with the loads. The
/// histogram kernels' bytes per cell divided by this is their floor.
fn memory_bandwidth(c: &mut Criterion) {
    let words = vec![1u64; 32 << 20];
    let mut group = c.benchmark_group("memory");
    group.sample_size(10);
    group.throughput(Throughput::Bytes((words.len() * 8) as u64));
    group.bench_function("read_256MiB", |b| {
        b.iter(|| {
            let mut lanes = [0u64; 8];
            for chunk in black_box(&words).chunks_exact(8) {
                for (l, w) in lanes.iter_mut().zip(chunk) {
                    *l = l.wrapping_add(*w);
                }
            }
            black_box(lanes)
        })
    });
    group.finish();
}

/// Reading a table for training: labels checked, features read, rows put in
/// their canonical order (what every `arbor train` pays before binning).
fn preparation(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let mut group = c.benchmark_group("prepare");
    group.sample_size(20);
    group.throughput(Throughput::Elements(batch.num_rows() as u64));
    group.bench_function("flights_training_data", |b| b.iter(|| black_box(training_data(&batch))));
    group.finish();
}

fn training(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let mut group = c.benchmark_group("train");
    group.sample_size(10);
    group.throughput(Throughput::Elements(data.n_rows() as u64 * 4));
    group.bench_function("flights_4_trees", |b| b.iter(|| black_box(train(&data, "n_trees=4"))));
    group.finish();
}

/// Gradient boosting at its defaults (`docs/parameters.md`): one round (one depth-6 tree on
/// all 261,876 rows), and ten rounds, so the per-round cost shows without the
/// fixed cost of binning.
fn boosting(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let data = training_data(&batch);
    let mut group = c.benchmark_group("boosting");
    group.sample_size(10);
    for rounds in [1usize, 10] {
        let options = format!("algorithm=gradient-boosting n_rounds={rounds}");
        group.throughput(Throughput::Elements(data.n_rows() as u64 * rounds as u64));
        group.bench_function(BenchmarkId::new("flights_rounds", rounds), |b| {
            b.iter(|| black_box(train(&data, &options)))
        });
    }
    group.finish();
}

/// One piece's work in the jobs of level-wise training (what each cluster
/// task does per job), on all of flights' training rows as one piece: the
/// first job's summary; boosting's histograms at the root of round 1 and
/// of round 10, where every row is first scored by the 9 finished trees;
/// a 20-tree forest's sums at its roots and at its second level. Throughput
/// is in rows.
fn level_jobs(c: &mut Criterion) {
    let batch = flights("flights_cls_train.parquet");
    let params = TrainParams::parse_options("algorithm=gradient-boosting n_rounds=10").unwrap().check().unwrap();
    let data = Trainer::checked(params.clone()).training_data(&batch).unwrap();
    let mut group = c.benchmark_group("level");
    group.sample_size(10);
    group.throughput(Throughput::Elements(data.n_rows() as u64));
    group.bench_function("flights_summary", |b| b.iter(|| black_box(LevelSummary::of(&data))));
    let start = |params: &CheckedParams| match Message::start(params, LevelSummary::of(&data)).unwrap() {
        Message::Grow(state) => state,
        other => panic!("flights trains level by level: {other:?}"),
    };
    let mut state = start(&params);
    group.bench_function(BenchmarkId::new("flights_histograms_round", 1), |b| {
        b.iter(|| black_box(state.sums(&data).unwrap()))
    });
    while state.standing().done < 9 {
        let sums = state.sums(&data).unwrap();
        state.grow(&params, sums).unwrap();
    }
    group.bench_function(BenchmarkId::new("flights_histograms_round", 10), |b| {
        b.iter(|| black_box(state.sums(&data).unwrap()))
    });
    let params = TrainParams::parse_options("n_trees=20").unwrap().check().unwrap();
    let mut state = start(&params);
    group.bench_function(BenchmarkId::new("flights_forest_sums_level", 0), |b| {
        b.iter(|| black_box(state.sums(&data).unwrap()))
    });
    let sums = state.sums(&data).unwrap();
    state.grow(&params, sums).unwrap();
    group.bench_function(BenchmarkId::new("flights_forest_sums_level", 1), |b| {
        b.iter(|| black_box(state.sums(&data).unwrap()))
    });
    // A whole 8-tree forest through arbor's driver and the in-memory
    // backend, over four pieces: every job and the driver's growing, with
    // no engine around them.
    let params = TrainParams::parse_options("n_trees=8").unwrap().check().unwrap();
    let trainer = Trainer::checked(params.clone());
    let rows = batch.num_rows();
    group.bench_function("flights_in_memory_forest_8_trees", |b| {
        b.iter(|| {
            let cut = |i: usize| batch.slice(rows * i / 4, rows * (i + 1) / 4 - rows * i / 4);
            let pieces = (0..4).map(|i| trainer.training_data(cut(i)).unwrap()).collect();
            black_box(InMemory::new(pieces, params.clone()).train().unwrap())
        })
    });
    group.finish();
}

fn prediction(c: &mut Criterion) {
    let train_batch = flights("flights_cls_train.parquet");
    let test = flights("flights_cls_test.parquet");
    let model = train(&training_data(&train_batch), "n_trees=20");
    let mut group = c.benchmark_group("predict");
    group.sample_size(10);
    group.throughput(Throughput::Elements(test.num_rows() as u64));
    group.bench_function("flights_20_trees", |b| b.iter(|| black_box(model.score(&test).unwrap())));
    // shallow boosted trees: the level-by-level batched walk
    let options = "algorithm=gradient-boosting, n_rounds=50, max_depth=6";
    let boosted = train(&training_data(&train_batch), options);
    group.bench_function("flights_50_rounds_depth_6", |b| b.iter(|| black_box(boosted.score(&test).unwrap())));
    group.finish();

    // The forest's walk at every SIMD level, on one thread (the level is
    // forced on the calling thread, so the pool has only that one).
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let mut group = c.benchmark_group("predict_level");
    group.sample_size(10);
    group.throughput(Throughput::Elements(test.num_rows() as u64));
    for level in SimdLevel::available() {
        group.bench_function(BenchmarkId::new("flights_20_trees", level), |b| {
            b.iter(|| one_thread.install(|| with_simd_level(level, || black_box(model.score(&test).unwrap())).unwrap()))
        });
    }
    group.finish();

    // Loading: the forest's model bytes decoded (straight into the flat
    // layout), and decoded then scored, as `arbor predict` does per file.
    let bytes = model.to_bytes();
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("flights_20_trees", |b| b.iter(|| black_box(Model::from_bytes(&bytes).unwrap())));
    group.bench_function("flights_20_trees_then_predict", |b| {
        b.iter(|| black_box(Model::from_bytes(&bytes).unwrap().score(&test).unwrap()))
    });
    group.finish();
}

/// TreeSHAP contributions of 5,000 flights test rows: a boosted model of
/// 50 rounds of depth 6 (the peer harness's reference setting; its
/// `contributions.py` times XGBoost and LightGBM on the same kind of model),
/// and a forest of 20 trees of depth 10. Throughput is in rows.
/// A full binary tree of `depth` levels over ranks (`next` from a small
/// generator), its leaves' value offsets counting up from 0.
fn full_tree(depth: u32, n_features: u16, next: &mut impl FnMut() -> u64) -> Vec<RankNode> {
    let splits = (1usize << depth) - 1;
    let mut nodes = Vec::with_capacity(2 * splits + 1);
    for i in 0..splits {
        let feature = (next() % u64::from(n_features)) as u16;
        nodes.push(RankNode::split(feature, (next() % 255) as u16, next() % 2 == 0, 2 * i as u32 + 1));
    }
    nodes.extend((0..=splits as u32).map(RankNode::leaf));
    nodes
}

/// Scoring one traversal block with 50 full depth-6 trees over 50
/// features (a boosted model's shape): each tree walked (the gathered walk
/// at `avx512`) against all of them at once as QuickScorer's bitvectors,
/// at the SIMD levels where each runs, on one thread.
fn quick_scorer(c: &mut Criterion) {
    let (n_trees, n_features, n_rows) = (50, 50u16, TRAVERSAL_BLOCK);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let trees: Vec<Vec<RankNode>> = (0..n_trees).map(|_| full_tree(6, n_features, &mut next)).collect();
    let values: Vec<Vec<f64>> =
        (0..n_trees).map(|_| (0..64).map(|_| (next() % 1000) as f64 / 1000.0).collect()).collect();
    let ranks: Vec<u16> = (0..n_rows * usize::from(n_features)).map(|_| (next() % 256) as u16).collect();
    let view = |t: usize| RankedTree { nodes: &trees[t], depth: 6, sets: &[] };
    let widths = vec![0; usize::from(n_features)];
    let scorer = QuickScorer::new((0..n_trees).map(|t| (view(t), &values[t][..])), &widths, 1).unwrap();
    let walk = |scores: &mut [f64], leaves: &mut [u32]| {
        for (t, values) in values.iter().enumerate() {
            ranked_leaves_block(view(t), &ranks, usize::from(n_features), false, leaves);
            scores.iter_mut().zip(leaves.iter()).for_each(|(s, &leaf)| *s += values[leaf as usize]);
        }
    };
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let mut group = c.benchmark_group("quick_scorer");
    group.sample_size(20);
    group.throughput(Throughput::Elements(n_rows as u64));
    for level in SimdLevel::available() {
        group.bench_function(BenchmarkId::new("walk_50_trees_depth_6", level), |b| {
            let (mut scores, mut leaves) = (vec![0.0; n_rows], vec![0u32; n_rows]);
            b.iter(|| {
                one_thread.install(|| with_simd_level(level, || walk(black_box(&mut scores), &mut leaves)).unwrap())
            })
        });
        if with_simd_level(level, QuickScorer::runs_here).unwrap() {
            group.bench_function(BenchmarkId::new("bitvectors_50_trees_depth_6", level), |b| {
                let mut scores = vec![0.0; n_rows];
                let score = |scores: &mut [f64]| assert!(scorer.add_scores(&ranks, n_rows, false, scores, n_rows));
                b.iter(|| one_thread.install(|| with_simd_level(level, || score(black_box(&mut scores))).unwrap()))
            });
        }
    }
    group.finish();
}

fn contributions(c: &mut Criterion) {
    let train_batch = flights("flights_cls_train.parquet");
    let test = flights("flights_cls_test.parquet").slice(0, 5_000);
    let data = training_data(&train_batch);
    let boosted = train(&data, "algorithm=gradient-boosting, n_rounds=50, max_depth=6");
    let forest = train(&data, "n_trees=20, max_depth=10");
    let mut group = c.benchmark_group("contributions");
    group.sample_size(10);
    group.throughput(Throughput::Elements(test.num_rows() as u64));
    group.bench_function("flights_50_rounds_depth_6", |b| b.iter(|| black_box(boosted.contributions(&test).unwrap())));
    group.bench_function("flights_20_trees_depth_10", |b| b.iter(|| black_box(forest.contributions(&test).unwrap())));
    group.finish();
}

criterion_group!(
    benches,
    histogram,
    split_scan,
    memory_bandwidth,
    preparation,
    training,
    boosting,
    level_jobs,
    prediction,
    quick_scorer,
    contributions
);
criterion_main!(benches);
