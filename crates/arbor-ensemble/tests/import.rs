//! Imported XGBoost and LightGBM models predict what the original library
//! predicted on the same rows (`tests/interop/make_fixtures.py` wrote the
//! models, the rows, with missing values in at least a third of them, and the
//! libraries' predictions).

use std::fs::File;
use std::path::PathBuf;

use arbor_ensemble::{Model, Predictions};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::Float64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}

fn rows(case: &str) -> RecordBatch {
    let file = File::open(fixture(&format!("{case}_rows.parquet"))).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
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
    Model::from_xgboost_json(&std::fs::read(fixture(file)).unwrap()).unwrap()
}

fn lightgbm(file: &str) -> Model {
    Model::from_lightgbm_text(&std::fs::read_to_string(fixture(file)).unwrap()).unwrap()
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
    let names: Vec<String> = model.features.iter().map(|f| f.name.clone()).collect();
    let missing = rows_with_missing(batch, &names);
    assert!(missing >= batch.num_rows() / 3 && missing < batch.num_rows(), "{missing} rows with missing values");
    model.predict_batch(batch).unwrap()
}

fn class_column(predictions: &Predictions, class: usize) -> Vec<f64> {
    predictions.values.chunks_exact(predictions.width).map(|p| p[class]).collect()
}

#[test]
fn xgboost_squared_error_regression() {
    let batch = rows("diamonds");
    let model = xgboost("xgb_reg.json");
    assert_eq!(model.features.len(), 9);
    assert_close("xgb_reg", &predict(&model, &batch).values, &column(&batch, "xgb_reg"));
}

#[test]
fn xgboost_binary_logistic() {
    let batch = rows("flights");
    let model = xgboost("xgb_binary.json");
    let p = predict(&model, &batch);
    assert_close("xgb_binary", &class_column(&p, 1), &column(&batch, "xgb_binary"));
}

#[test]
fn xgboost_softprob() {
    let batch = rows("digits");
    let model = xgboost("xgb_softprob.json");
    let p = predict(&model, &batch);
    for k in 0..10 {
        assert_close(&format!("xgb_softprob_{k}"), &class_column(&p, k), &column(&batch, &format!("xgb_softprob_{k}")));
    }
}

#[test]
fn xgboost_softmax_with_parallel_trees() {
    let batch = rows("digits");
    let model = xgboost("xgb_softmax.json");
    assert_eq!(model.trees.len(), 60, "3 rounds of 2 parallel trees per class");
    let p = predict(&model, &batch);
    let classes: Vec<f64> = p.class_index().iter().map(|&c| f64::from(c)).collect();
    assert_eq!(classes, column(&batch, "xgb_softmax"));
    for k in 0..10 {
        assert_close(&format!("xgb_softmax_{k}"), &class_column(&p, k), &column(&batch, &format!("xgb_softmax_{k}")));
    }
}

#[test]
fn lightgbm_regression_with_categorical_splits() {
    let batch = rows("diamonds");
    let model = lightgbm("lgb_reg.txt");
    let categorical_splits = model
        .trees
        .iter()
        .flat_map(|t| &t.nodes)
        .filter(|n| matches!(n, arbor_ensemble::Node::Split { test: arbor_ensemble::SplitTest::InCategories(_), .. }))
        .count();
    assert!(categorical_splits > 0, "the fixture has categorical splits");
    assert_close("lgb_reg", &predict(&model, &batch).values, &column(&batch, "lgb_reg"));
}

#[test]
fn lightgbm_regression_with_zero_as_missing() {
    let batch = rows("diamonds");
    let model = lightgbm("lgb_reg_zero.txt");
    assert_close("lgb_reg_zero", &predict(&model, &batch).values, &column(&batch, "lgb_reg_zero"));
}

#[test]
fn lightgbm_binary() {
    let batch = rows("flights");
    let model = lightgbm("lgb_binary.txt");
    let p = predict(&model, &batch);
    assert_close("lgb_binary", &class_column(&p, 1), &column(&batch, "lgb_binary"));
}

#[test]
fn lightgbm_pandas_categories_predict_from_strings() {
    let batch = rows("flights");
    let model = lightgbm("lgb_pandas.txt");
    let carrier = model.features.iter().find(|f| f.name == "carrier").unwrap();
    assert_eq!(carrier.kind, arbor_quantize::FeatureType::Categorical);
    let p = predict(&model, &batch);
    assert_close("lgb_pandas", &class_column(&p, 1), &column(&batch, "lgb_pandas"));
}

#[test]
fn lightgbm_multiclass() {
    let batch = rows("digits");
    let model = lightgbm("lgb_multiclass.txt");
    let p = predict(&model, &batch);
    for k in 0..10 {
        let name = format!("lgb_multiclass_{k}");
        assert_close(&name, &class_column(&p, k), &column(&batch, &name));
    }
}

#[test]
fn imported_models_save_and_load() {
    for model in [xgboost("xgb_softmax.json"), lightgbm("lgb_reg.txt")] {
        assert_eq!(Model::from_bytes(&model.to_bytes()).unwrap(), model);
    }
}

#[test]
fn unsupported_fixtures_are_named_errors() {
    let dart = Model::from_xgboost_json(&std::fs::read(fixture("xgb_dart.json")).unwrap()).unwrap_err().to_string();
    assert!(dart.contains("booster 'dart' is not supported"), "{dart}");
    let linear = Model::from_lightgbm_text(&std::fs::read_to_string(fixture("lgb_linear.txt")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(linear.contains("Tree=0: linear trees"), "{linear}");
}
