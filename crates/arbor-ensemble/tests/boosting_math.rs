//! Gradient boosting's formulas against hand computation on a few rows
//! (docs/algorithms.md, "Gradient boosting"): the base score is the loss's
//! best constant, a split's gain is `G_L²/(H_L+λ) + G_R²/(H_R+λ) −
//! G²/(H+λ)` and must reach `min_split_loss`, a leaf's value is
//! `−G/(H+λ)` times the learning rate. A formula wrong the same way
//! everywhere passes every "same model everywhere" test; it fails these.

use std::sync::Arc;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{AsArray, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::Float64Type;

fn batch(label: Arc<dyn arrow::array::Array>) -> RecordBatch {
    let n = label.len();
    let x = Float64Array::from_iter_values((1..=n).map(|i| i as f64));
    RecordBatch::try_from_iter([("x", Arc::new(x) as _), ("label", label)]).unwrap()
}

/// One boosting round of depth 1 with every distinct value its own bin.
fn stump(rows: &RecordBatch, options: &str) -> Model {
    let base = "algorithm=gradient-boosting n_rounds=1 max_depth=1 min_samples_leaf=1 min_bin_size=1";
    Trainer::new(TrainParams::parse_options(&format!("{base} {options}")).unwrap()).fit(rows).unwrap()
}

fn predictions(model: &Model, rows: &RecordBatch) -> Vec<f64> {
    model.predict(rows).unwrap().as_primitive::<Float64Type>().values().to_vec()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "got {got:?}, want {want:?}");
    }
}

/// Squared loss: base = mean(y) = 3, g = base − y = (3, 3, 3, 3, −3, −9), h = 1.
/// Split after x = 4: G_L = 12, H_L = 4, G_R = −12, H_R = 2, gain = 144/5 + 144/3 = 76.8
/// (after x = 5: 54; after x = 3: 40.5). Leaves −12/(4+λ) and 12/(2+λ).
#[test]
fn squared_loss_gain_leaf_values_and_min_split_loss() {
    let rows = batch(Arc::new(Float64Array::from(vec![0.0, 0.0, 0.0, 0.0, 6.0, 12.0])));
    let model = stump(&rows, "learning_rate=1 lambda=1");
    assert_close(&predictions(&model, &rows), &[0.6, 0.6, 0.6, 0.6, 7.0, 7.0]);
    let model = stump(&rows, "learning_rate=0.5 lambda=0.5");
    let (left, right) = (3.0 - 0.5 * 12.0 / 4.5, 3.0 + 0.5 * 12.0 / 2.5);
    assert_close(&predictions(&model, &rows), &[left, left, left, left, right, right]);
    // The split is kept while its gain reaches γ (XGBoost keeps it to gamma = 76.8 too).
    let kept = stump(&rows, "learning_rate=1 lambda=1 min_split_loss=76.8");
    assert_close(&predictions(&kept, &rows), &[0.6, 0.6, 0.6, 0.6, 7.0, 7.0]);
    let refused = stump(&rows, "learning_rate=1 lambda=1 min_split_loss=76.81");
    assert_close(&predictions(&refused, &rows), &[3.0; 6]);
}

/// Logistic loss: base = log-odds of class 1 = 0, so p = 1/2, g = p − y = ±1/2,
/// h = p(1 − p) = 1/4. Split after x = 4: G_L = 2, H_L = 1; leaves ∓2/(1+λ).
#[test]
fn logistic_loss_base_score_and_leaf_values() {
    let rows = batch(Arc::new(Int64Array::from(vec![0, 0, 0, 0, 1, 1, 1, 1])));
    let model = stump(&rows, "learning_rate=1 lambda=1");
    let proba = model.predict_proba(&rows).unwrap();
    let values = proba.values().as_primitive::<Float64Type>().values().to_vec();
    let low = 1.0 / (1.0 + 1f64.exp()); // sigmoid(−1)
    let want: Vec<f64> = (0..8).flat_map(|i| if i < 4 { [1.0 - low, low] } else { [low, 1.0 - low] }).collect();
    assert_close(&values, &want);
    // Unbalanced classes: base = ln(3/1) when 6 of 8 rows are class 1.
    let rows = batch(Arc::new(Int64Array::from(vec![0, 1, 0, 1, 1, 1, 1, 1])));
    let refused = stump(&rows, "learning_rate=1 lambda=1 min_split_loss=1000");
    let values = refused.predict_proba(&rows).unwrap().values().as_primitive::<Float64Type>().values().to_vec();
    assert_close(&values[..2], &[0.25, 0.75]);
}
