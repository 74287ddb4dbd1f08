//! Boosting's formulas against XGBoost's own trees (`tests/xgboost_reference/`,
//! made by its `make_reference.py` with xgboost 3.2.0): one round of exact
//! greedy trees of depth 1 and 2 on 400 diamonds, squared error and
//! logistic, `eta = 1`, `lambda = 1`. The same rows must land in leaves of
//! the same values (XGBoost's float32 predictions, to 1e-5), each feature's
//! share of the gain `G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)` must be
//! XGBoost's, and `min_split_loss` must keep and refuse the stump where
//! XGBoost's `gamma` does: a split is kept while that gain reaches γ (the
//! oneDAL specification's "minimal split loss", and LightGBM's
//! `min_gain_to_split` alike).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{ArrayRef, AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::Float64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

const FEATURES: [&str; 3] = ["carat", "depth", "table"];

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/xgboost_reference").join(name)
}

fn rows() -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path("diamonds_400.parquet")).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

fn reference() -> Value {
    serde_json::from_reader(File::open(path("xgboost_trees.json")).unwrap()).unwrap()
}

/// The three features and `label_column` as the label.
fn training(rows: &RecordBatch, label_column: &str) -> RecordBatch {
    let mut columns: Vec<(&str, ArrayRef)> =
        FEATURES.iter().map(|&f| (f, Arc::clone(rows.column_by_name(f).unwrap()))).collect();
    columns.push(("label", Arc::clone(rows.column_by_name(label_column).unwrap())));
    RecordBatch::try_from_iter(columns).unwrap()
}

/// One round of depth `depth`, XGBoost's settings, every distinct value its own bin.
fn one_round(batch: &RecordBatch, depth: usize, options: &str) -> Model {
    let options = format!(
        "algorithm=gradient-boosting n_rounds=1 max_depth={depth} learning_rate=1 lambda=1 \
         min_samples_leaf=1 min_bin_size=1 {options}"
    );
    Trainer::new(TrainParams::parse_options(&options).unwrap()).fit(batch).unwrap()
}

fn column(rows: &RecordBatch, name: &str) -> Vec<f64> {
    rows.column_by_name(name).unwrap().as_primitive::<Float64Type>().values().to_vec()
}

/// What arbor predicts: the value, or the probability of class 1.
fn predicted(model: &Model, batch: &RecordBatch) -> Vec<f64> {
    let p = model.score(batch).unwrap();
    match p.width() {
        1 => p.values().to_vec(),
        _ => p.values().chunks_exact(2).map(|c| c[1]).collect(),
    }
}

fn assert_same_predictions(what: &str, ours: &[f64], theirs: &[f64]) {
    assert_eq!(ours.len(), theirs.len());
    for (row, (a, b)) in ours.iter().zip(theirs).enumerate() {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{what}, row {row}: arbor {a}, XGBoost {b}");
    }
}

/// Each feature's share of the total gain, against XGBoost's `total_gain`.
fn assert_same_gain_shares(what: &str, model: &Model, reference: &Value) {
    let gains: Vec<f64> = FEATURES.iter().map(|f| reference["total_gain"][f].as_f64().unwrap()).collect();
    let total: f64 = gains.iter().sum();
    let shares = model.importance().unwrap();
    for ((f, ours), theirs) in FEATURES.iter().zip(shares).zip(&gains) {
        assert!(
            (ours - theirs / total).abs() < 1e-6,
            "{what}, {f}: arbor's share {ours}, XGBoost's {}",
            theirs / total
        );
    }
}

#[test]
fn squared_error_trees_are_xgboosts() {
    let rows = rows();
    let reference = reference();
    let batch = training(&rows, "log_price");
    let mean = reference["base_score"]["reg"].as_f64().unwrap();
    for (name, depth) in [("reg_depth1", 1), ("reg_depth2", 2)] {
        let model = one_round(&batch, depth, "");
        let base = model.boosting().unwrap().base_score[0];
        assert!((base - mean).abs() <= 1e-12 * mean.abs(), "the base score is the mean: {base} against {mean}");
        assert_same_predictions(name, &predicted(&model, &batch), &column(&rows, &format!("xgb_{name}")));
        assert_same_gain_shares(name, &model, &reference["models"][name]);
        assert_eq!(model.trees()[0].shape().leaves, 1 << depth, "{name}: a full tree");
    }
}

#[test]
fn logistic_trees_are_xgboosts() {
    let rows = rows();
    let reference = reference();
    let batch = training(&rows, "expensive");
    let model = one_round(&batch, 2, "");
    let share = reference["base_score"]["cls"].as_f64().unwrap();
    let base = model.boosting().unwrap().base_score[0];
    assert!((base - (share / (1.0 - share)).ln()).abs() < 1e-12, "the base score is the log-odds: {base}");
    assert_same_predictions("cls_depth2", &predicted(&model, &batch), &column(&rows, "xgb_cls_depth2"));
    assert_same_gain_shares("cls_depth2", &model, &reference["models"]["cls_depth2"]);
    assert!(model.importance().unwrap()[2] > 0.0, "two features split: the shares are not all one's");
}

/// XGBoost keeps the stump while its gain (5.268) reaches `gamma` and
/// refuses it past; `min_split_loss` must do the same at the same values.
#[test]
fn min_split_loss_keeps_and_refuses_the_stump_as_gamma_does() {
    let rows = rows();
    let reference = &reference()["models"]["reg_depth1"];
    let batch = training(&rows, "log_price");
    for outcome in ["kept", "refused"] {
        let gamma = reference[format!("gamma_{outcome}")].as_f64().unwrap();
        let model = one_round(&batch, 1, &format!("min_split_loss={gamma}"));
        let leaves = model.trees()[0].shape().leaves;
        assert_eq!(leaves, if outcome == "kept" { 2 } else { 1 }, "min_split_loss={gamma}");
        let theirs = column(&rows, &format!("xgb_reg_depth1_gamma_{outcome}"));
        assert_same_predictions(&format!("gamma {outcome}"), &predicted(&model, &batch), &theirs);
    }
}
