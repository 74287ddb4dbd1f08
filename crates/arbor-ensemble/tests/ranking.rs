//! Learning to rank (`loss=lambdarank`) on the bundled LETOR sample
//! (`data/rank_*.parquet`, LightGBM's `examples/lambdarank`): NDCG@10 on the
//! held-out queries against LightGBM's and XGBoost's with the same settings
//! (`benches/peers/objectives.py`), a model that depends on the rows and
//! their queries but not on their order or the thread count, early stopping
//! on whole queries, continued training, and every input a ranker cannot
//! take refused by name.

mod common;

use std::sync::Arc;

use arbor_ensemble::{Loss, Model, TrainParams, Trainer};
use arrow::array::{ArrayRef, AsArray, Float64Array, Int32Array, RecordBatch, StringArray, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::Int32Type;

/// A bundled set, whole.
fn read(name: &str) -> RecordBatch {
    common::read_file(&common::data_path(name))
}

/// The peer table's settings and `options`, ranked within `query`.
fn params(options: &str) -> TrainParams {
    TrainParams::parse_options(&format!(
        "algorithm=gradient-boosting loss=lambdarank n_rounds=100 max_depth=6 learning_rate=0.1 lambda=1 \
         min_samples_leaf=5 {options}"
    ))
    .unwrap()
}

fn fit(batch: &RecordBatch, options: &str) -> arbor_ensemble::Result<Model> {
    Trainer::new(params(options)).label("label").group("query").fit(batch)
}

/// Mean NDCG@`k` of the queries of `batch` ranked by `model` (gain `2^y − 1`,
/// ties in row order, a query with nothing relevant counting 1), computed
/// here from the scores alone.
fn ndcg(model: &Model, batch: &RecordBatch, k: usize) -> f64 {
    let scores = model.score(batch).unwrap().values().to_vec();
    let grades = batch.column_by_name("label").unwrap().as_primitive::<Int32Type>().values().to_vec();
    let queries = batch.column_by_name("query").unwrap().as_primitive::<Int32Type>().values().to_vec();
    let mut ids = queries.clone();
    ids.sort_unstable();
    ids.dedup();
    let gain = |y: i32| 2f64.powi(y) - 1.0;
    let dcg = |grades: &[i32]| grades.iter().take(k).enumerate().map(|(i, &y)| gain(y) / (i as f64 + 2.0).log2()).sum();
    let total: f64 = ids
        .iter()
        .map(|&q| {
            let mut rows: Vec<usize> = (0..queries.len()).filter(|&r| queries[r] == q).collect();
            rows.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
            let ranked: Vec<i32> = rows.iter().map(|&r| grades[r]).collect();
            let mut ideal = ranked.clone();
            ideal.sort_unstable_by(|a, b| b.cmp(a));
            let best: f64 = dcg(&ideal);
            if best > 0.0 {
                dcg(&ranked) / best
            } else {
                1.0
            }
        })
        .sum();
    total / ids.len() as f64
}

/// `batch` with column `name` replaced by `array`.
fn with_column(batch: &RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let index = batch.schema().index_of(name).unwrap();
    let mut columns = batch.columns().to_vec();
    columns[index] = array.clone();
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i == index {
                Arc::new(f.as_ref().clone().with_data_type(array.data_type().clone()))
            } else {
                f.clone()
            }
        })
        .collect();
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns).unwrap()
}

fn message(result: arbor_ensemble::Result<Model>) -> String {
    result.map(|_| ()).unwrap_err().to_string()
}

/// NDCG@10 on the 50 test queries, same settings, one run
/// (`benches/peers/objectives.py --loss lambdarank`): LightGBM 0.7368,
/// XGBoost 0.7304, arbor 0.7221; no model (file order) 0.5736. On 50
/// queries the mean's standard error is about 0.03, so the three are tied
/// (docs/algorithms.md, "Ranking", has the five-fold comparison); the
/// floor holds arbor within that margin of the better peer and far above
/// no model, and the score the model reports is the one computed here.
#[test]
fn lambdarank_ranks_the_letor_sample_as_the_peers_do() {
    let model = fit(&read("rank_train.parquet"), "").unwrap();
    let boosting = model.boosting().unwrap();
    assert_eq!(boosting.loss, Loss::LAMBDARANK);
    assert_eq!(model.task(), arbor_ensemble::Task::Regression);
    let test = read("rank_test.parquet");
    let score = ndcg(&model, &test, 10);
    assert!(score >= 0.72, "NDCG@10 {score}");
    // The query column is no feature.
    assert!(model.features().iter().all(|f| f.name != "query"));
}

/// `lambdarank_truncation_level` cuts the pairs: at or past the longest
/// query (27 rows here) it changes nothing, below it the trees change.
#[test]
fn the_truncation_level_cuts_the_pairs() {
    let train = read("rank_train.parquet");
    let test = read("rank_test.parquet");
    let scores = |options: &str| fit(&train, options).unwrap().score(&test).unwrap().values().to_vec();
    let every_pair = scores("n_rounds=10");
    assert_eq!(scores("n_rounds=10 lambdarank_truncation_level=27"), every_pair);
    assert_ne!(scores("n_rounds=10 lambdarank_truncation_level=3"), every_pair);
    let model = fit(&train, "n_rounds=2 lambdarank_truncation_level=3").unwrap();
    assert_eq!(
        model.boosting().unwrap().loss,
        Loss::Lambdarank { ndcg_at: 10, truncation: 3, sigmoid: 1.0, exp_gain: true }
    );
}

/// `sigmoid` (LightGBM's `σ`) steepens each pair's logistic: the trees
/// change, and the model records the value with its loss (and reads it
/// back from its bytes).
#[test]
fn sigmoid_steepens_the_pairs_and_is_recorded() {
    let train = read("rank_train.parquet");
    let test = read("rank_test.parquet");
    let default = fit(&train, "n_rounds=10").unwrap();
    let steep = fit(&train, "n_rounds=10 sigmoid=2").unwrap();
    assert_ne!(steep.score(&test).unwrap().values(), default.score(&test).unwrap().values());
    assert_eq!(steep.param("sigmoid"), Some("2"));
    assert_eq!(default.param("sigmoid"), Some("1"), "recorded with its loss, as ndcg_at");
    let read_back = arbor_ensemble::Model::from_bytes(&steep.to_bytes()).unwrap();
    assert_eq!(
        read_back.boosting().unwrap().loss,
        Loss::Lambdarank { ndcg_at: 10, truncation: 30, sigmoid: 2.0, exp_gain: true }
    );
}

/// `ndcg_exp_gain=false` (XGBoost's key) weighs grades by `y` rather than
/// `2^y − 1`: other trees, and grades past 30, which exponential gains
/// refuse by the label's name, train.
#[test]
fn linear_gains_take_any_grade() {
    let train = read("rank_train.parquet");
    let test = read("rank_test.parquet");
    let exponential = fit(&train, "n_rounds=10").unwrap();
    let linear = fit(&train, "n_rounds=10 ndcg_exp_gain=false").unwrap();
    assert_ne!(linear.score(&test).unwrap().values(), exponential.score(&test).unwrap().values());
    assert_eq!(linear.param("ndcg_exp_gain"), Some("false"));
    let grades = train.column_by_name("label").unwrap().as_primitive::<Int32Type>();
    let scaled: Int32Array = grades.iter().map(|g| g.map(|g| g * 16)).collect();
    let scaled = with_column(&train, "label", Arc::new(scaled));
    let refused = message(fit(&scaled, "n_rounds=2"));
    assert!(refused.contains("label 'label'") && refused.contains("from 0 to 30; found 32"), "{refused}");
    // Grades up to 64 rank as well as the same grades unscaled: NDCG is a ratio.
    let model = fit(&scaled, "ndcg_exp_gain=false").unwrap();
    let score = ndcg(&model, &test, 10);
    assert!(score >= 0.70, "NDCG@10 {score}");
}

/// Rows of a query need not be contiguous: the rows shuffled across
/// queries train the same bytes, on one thread as on two, rows sampled.
#[test]
fn shuffled_rows_and_threads_train_the_same_bytes() {
    let train = read("rank_train.parquet").slice(0, 1200);
    let n = train.num_rows() as u32;
    let shuffled =
        take_record_batch(&train, &UInt32Array::from((0..n).map(|i| (i * 7919) % n).collect::<Vec<_>>())).unwrap();
    // Rows sampled per round: the derivatives are taken by query over every row first.
    let options = "n_rounds=20 sample_fraction=0.8";
    let once = fit(&train, options).unwrap().to_bytes();
    assert_ne!(once, fit(&train, "n_rounds=20").unwrap().to_bytes(), "the sample must matter");
    assert_eq!(fit(&shuffled, options).unwrap().to_bytes(), once, "shuffled rows");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert_eq!(pool.install(|| fit(&shuffled, options).unwrap().to_bytes()), once, "one thread");
}

/// Early stopping holds out whole queries and measures `1 − NDCG@ndcg_at`
/// on them; continued training appends rounds as it does for every loss.
#[test]
fn early_stopping_and_continued_training_rank_by_query() {
    let train = read("rank_train.parquet");
    let model = fit(&train, "n_rounds=200 early_stopping_rounds=10 validation_fraction=0.2 ndcg_at=5").unwrap();
    let stopped = model.boosting().unwrap().early_stopping.clone().unwrap();
    assert_eq!(model.boosting().unwrap().loss.metric(), "1-ndcg@5");
    assert!(stopped.best_round < 200 && stopped.rounds_run < 200, "{stopped:?}");
    // 40 of the 201 queries (15 rows each on average) held out, whole.
    assert!((300..=900).contains(&stopped.validation_rows), "{stopped:?}");
    assert!(stopped.best_loss > 0.0 && stopped.best_loss < 0.5, "{stopped:?}");

    let first = fit(&train, "n_rounds=30").unwrap();
    let resumed = Trainer::new(params("n_rounds=20")).label("label").group("query").init_model(&first).fit(&train);
    let all_at_once = fit(&train, "n_rounds=50").unwrap();
    let test = read("rank_test.parquet");
    let (a, b) = (resumed.unwrap().score(&test).unwrap(), all_at_once.score(&test).unwrap());
    for (x, y) in a.values().iter().zip(b.values()) {
        assert!((x - y).abs() <= 1e-9, "{x} vs {y}");
    }
}

/// What a ranker cannot take is refused, naming the column or the key.
#[test]
fn bad_queries_and_grades_are_named() {
    let train = read("rank_train.parquet").slice(0, 300);
    let n = train.num_rows();
    let nulls = Int32Array::from((0..n).map(|r| (r != 7).then_some((r / 15) as i32)).collect::<Vec<_>>());
    let e = message(fit(&with_column(&train, "query", Arc::new(nulls)), ""));
    assert!(e.contains("group column 'query' holds nulls"), "{e}");
    let names = StringArray::from((0..n).map(|r| format!("q{}", r / 15)).collect::<Vec<_>>());
    let e = message(fit(&with_column(&train, "query", Arc::new(names)), ""));
    assert!(e.contains("group column 'query' has type Utf8; query ids must be integers"), "{e}");
    let e = message(Trainer::new(params("")).label("label").fit(&train));
    assert!(e.contains("loss") && e.contains("name the query column"), "{e}");
    let squared = TrainParams::parse_options("algorithm=gradient-boosting task=regression n_rounds=5").unwrap();
    let e = message(Trainer::new(squared).label("label").group("query").fit(&train));
    assert!(e.contains("'group'") && e.contains("loss=lambdarank only; the loss is squared"), "{e}");
    let forest = TrainParams::parse_options("n_trees=5").unwrap();
    let e = message(Trainer::new(forest).label("label").group("query").fit(&train));
    assert!(e.contains("a random forest does not rank"), "{e}");
    for bad in [1.5, -1.0, 31.0] {
        let grades = Float64Array::from((0..n).map(|r| if r == 4 { bad } else { (r % 3) as f64 }).collect::<Vec<_>>());
        let e = message(fit(&with_column(&train, "label", Arc::new(grades)), ""));
        assert!(
            e.contains("label 'label': loss=lambdarank needs relevance grades") && e.contains(&format!("{bad}")),
            "{e}"
        );
    }
    let e = message(fit(&train, "early_stopping_rounds=5 validation_fraction=0.01"));
    assert!(e.contains("validation_fraction") && e.contains("queries"), "{e}");
    // Folds of rows would cut queries apart.
    let trainer = Trainer::new(params("")).label("label").group("query");
    let binned = trainer.bin(std::slice::from_ref(&train)).unwrap();
    let e = trainer.cross_validate(&binned, 5).unwrap_err().to_string();
    assert!(e.contains("'folds'") && e.contains("keep each query whole"), "{e}");
    // A missing query column is named, with the columns there are.
    let e = message(Trainer::new(params("")).label("label").group("qid").fit(&train));
    assert!(e.contains("qid"), "{e}");
}
