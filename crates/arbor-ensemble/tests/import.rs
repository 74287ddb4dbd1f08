//! Imported XGBoost and LightGBM models predict what the original library
//! predicted on the same rows (`tests/interop/make_fixtures.py` wrote the
//! models, the rows, with missing values in at least a third of them, and the
//! libraries' predictions).

mod common;

use arbor_ensemble::{Model, Node, Predictions, SplitTest};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;

fn rows(case: &str) -> RecordBatch {
    common::read_file(&common::interop_path(&format!("{case}_rows.parquet")))
}

fn column(batch: &RecordBatch, name: &str) -> Vec<f64> {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

fn xgboost(file: &str) -> Model {
    Model::from_xgboost_json(&std::fs::read(common::interop_path(file)).unwrap()).unwrap()
}

fn lightgbm(file: &str) -> Model {
    Model::from_lightgbm_text(&std::fs::read_to_string(common::interop_path(file)).unwrap()).unwrap()
}

/// Largest relative difference, each value measured against max(|expected|, 1e-3)
/// so probabilities near zero are compared to a thousandth.
fn assert_close(what: &str, got: &[f64], expected: &[f64]) {
    assert_eq!(got.len(), expected.len(), "{what}");
    let (worst, row) = got
        .iter()
        .zip(expected)
        .map(|(g, e)| (g - e).abs() / e.abs().max(1e-3))
        .enumerate()
        .fold((0.0f64, 0), |(w, r), (i, d)| if d > w { (d, i) } else { (w, r) });
    assert!(worst <= 1e-5, "{what}: row {row} differs by {worst:.2e} relative: {} vs {}", got[row], expected[row]);
}

/// The rows with a missing feature value, so each case is known to exercise them.
fn rows_with_missing(batch: &RecordBatch, features: &[String]) -> usize {
    let missing = |f: &String, r: usize| {
        let array = batch.column_by_name(f).unwrap();
        array.is_null(r) || array.as_primitive_opt::<Float64Type>().is_some_and(|a| a.value(r).is_nan())
    };
    (0..batch.num_rows()).filter(|&r| features.iter().any(|f| missing(f, r))).count()
}

fn predict(model: &Model, batch: &RecordBatch) -> Predictions {
    let names: Vec<String> = model.features().iter().map(|f| f.name.clone()).collect();
    let missing = rows_with_missing(batch, &names);
    assert!(missing >= batch.num_rows() / 3 && missing < batch.num_rows(), "{missing} rows with missing values");
    model.score(batch).unwrap()
}

fn class_column(predictions: &Predictions, class: usize) -> Vec<f64> {
    predictions.values().chunks_exact(predictions.width()).map(|p| p[class]).collect()
}

/// Predicts the `case` rows and checks them against the library's column
/// `expected`: the value for regression, the probability of class 1 for two
/// classes, `expected_<k>` for each class `k` of more.
fn assert_matches_library(model: &Model, case: &str, expected: &str) -> (RecordBatch, Predictions) {
    let batch = rows(case);
    let p = predict(model, &batch);
    match model.class_names().len() {
        0 => assert_close(expected, p.values(), &column(&batch, expected)),
        2 => assert_close(expected, &class_column(&p, 1), &column(&batch, expected)),
        classes => {
            for k in 0..classes {
                let name = format!("{expected}_{k}");
                assert_close(&name, &class_column(&p, k), &column(&batch, &name));
            }
        }
    }
    (batch, p)
}

/// The model's splits that use `test`'s kind.
fn splits_like(model: &Model, kind: fn(&SplitTest) -> bool) -> usize {
    let tests = model.trees().iter().flat_map(|t| &t.nodes).filter_map(|n| match n {
        Node::Split { test, .. } => Some(test),
        Node::Leaf { .. } => None,
    });
    tests.filter(|t| kind(t)).count()
}

#[test]
fn xgboost_squared_error_regression() {
    let model = xgboost("xgb_reg.json");
    assert_eq!(model.features().len(), 9);
    assert_matches_library(&model, "diamonds", "xgb_reg");
}

#[test]
fn xgboost_binary_logistic() {
    assert_matches_library(&xgboost("xgb_binary.json"), "flights", "xgb_binary");
}

#[test]
fn xgboost_softprob() {
    assert_matches_library(&xgboost("xgb_softprob.json"), "digits", "xgb_softprob");
}

#[test]
fn xgboost_softmax_with_parallel_trees() {
    let model = xgboost("xgb_softmax.json");
    assert_eq!(model.trees().len(), 60, "3 rounds of 2 parallel trees per class");
    let (batch, p) = assert_matches_library(&model, "digits", "xgb_softmax");
    let classes: Vec<f64> = p.class_index().iter().map(|&c| f64::from(c)).collect();
    assert_eq!(classes, column(&batch, "xgb_softmax"));
}

#[test]
fn lightgbm_regression_with_categorical_splits() {
    let model = lightgbm("lgb_reg.txt");
    assert!(splits_like(&model, |t| matches!(t, SplitTest::InCategories(_))) > 0, "the fixture has categorical splits");
    assert_matches_library(&model, "diamonds", "lgb_reg");
}

#[test]
fn lightgbm_regression_with_zero_as_missing() {
    let model = lightgbm("lgb_reg_zero.txt");
    let zero = splits_like(&model, |t| matches!(t, SplitTest::ZeroAsMissing { .. }));
    assert!(zero > 0, "the fixture has zero-as-missing splits");
    assert_matches_library(&model, "diamonds", "lgb_reg_zero");
}

#[test]
fn lightgbm_binary() {
    assert_matches_library(&lightgbm("lgb_binary.txt"), "flights", "lgb_binary");
}

#[test]
fn lightgbm_pandas_categories_predict_from_strings() {
    let model = lightgbm("lgb_pandas.txt");
    let carrier = model.features().iter().find(|f| f.name == "carrier").unwrap();
    assert_eq!(carrier.kind, arbor_quantize::FeatureType::Categorical);
    assert_matches_library(&model, "flights", "lgb_pandas");
}

#[test]
fn lightgbm_multiclass() {
    assert_matches_library(&lightgbm("lgb_multiclass.txt"), "digits", "lgb_multiclass");
}

#[test]
fn imported_models_save_and_load() {
    for model in [xgboost("xgb_softmax.json"), lightgbm("lgb_reg.txt")] {
        assert_eq!(Model::from_bytes(&model.to_bytes()).unwrap(), model);
    }
}

#[test]
fn unsupported_fixtures_are_named_errors() {
    let dart = Model::from_xgboost_json(&std::fs::read(common::interop_path("xgb_dart.json")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(dart.contains("booster 'dart' is not supported"), "{dart}");
    let linear = Model::from_lightgbm_text(&std::fs::read_to_string(common::interop_path("lgb_linear.txt")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(linear.contains("Tree=0: linear trees"), "{linear}");
}

/// Every regression objective beyond squared error imports with its loss and
/// parameters, and predicts what its library predicts: the log links
/// (`exp` of the raw score, from a base score that is a mean), the
/// identity ones and the rankers (XGBoost's `rank:ndcg`, LightGBM's
/// `lambdarank`; `tests/interop/make_objective_fixtures.py`).
#[test]
fn regression_objectives_import_with_their_losses() {
    use arbor_ensemble::Loss;
    let cases: [(Model, &str, Loss); 14] = [
        (xgboost("xgb_poisson.json"), "xgb_poisson", Loss::Poisson),
        (xgboost("xgb_gamma.json"), "xgb_gamma", Loss::Gamma),
        (xgboost("xgb_tweedie.json"), "xgb_tweedie", Loss::Tweedie { power: f64::from(1.3f32) }),
        (xgboost("xgb_quantile.json"), "xgb_quantile", Loss::Quantile { alpha: 0.8 }),
        (xgboost("xgb_absolute.json"), "xgb_absolute", Loss::Absolute),
        (xgboost("xgb_huber.json"), "xgb_huber", Loss::Huber { delta: 2.0 }),
        (lightgbm("lgb_poisson.txt"), "lgb_poisson", Loss::Poisson),
        (lightgbm("lgb_gamma.txt"), "lgb_gamma", Loss::Gamma),
        (lightgbm("lgb_tweedie.txt"), "lgb_tweedie", Loss::Tweedie { power: 1.3 }),
        (lightgbm("lgb_quantile.txt"), "lgb_quantile", Loss::Quantile { alpha: 0.8 }),
        (lightgbm("lgb_absolute.txt"), "lgb_absolute", Loss::Absolute),
        (lightgbm("lgb_huber.txt"), "lgb_huber", Loss::Huber { delta: 2.0 }),
        // Rankers: the score is the raw margin.
        (xgboost("xgb_rank.json"), "xgb_rank", Loss::LAMBDARANK),
        (lightgbm("lgb_rank.txt"), "lgb_rank", Loss::LAMBDARANK),
    ];
    for (model, expected, loss) in cases {
        let boosting = model.boosting().expect("a boosted model");
        match (boosting.loss, loss) {
            (Loss::Tweedie { power: got }, Loss::Tweedie { power }) => {
                assert!((got - power).abs() < 1e-6, "{expected}: power {got}")
            }
            (got, loss) => assert_eq!(got, loss, "{expected}"),
        }
        assert_matches_library(&model, "claims", expected);
        // A model saved and loaded keeps its loss.
        let again = Model::from_bytes(&model.to_bytes()).unwrap();
        assert_eq!(again.boosting().unwrap().loss, boosting.loss, "{expected}");
    }
}
