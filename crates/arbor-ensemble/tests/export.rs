//! Exported models come back through arbor's own importers predicting what
//! they predicted: exactly from LightGBM text (64-bit thresholds and leaves),
//! to 32-bit precision from XGBoost JSON; what a format cannot hold is an
//! error naming it. (The Python tests check the files in XGBoost, LightGBM
//! and onnxruntime themselves; arbor does not read ONNX.)

mod common;

use arbor_ensemble::{Algorithm, ExportFormat, Model, SplitTest};
use arrow::array::RecordBatch;

/// The formats arbor reads back.
const IMPORTED: [ExportFormat; 2] = [ExportFormat::XgboostJson, ExportFormat::LightgbmText];

fn import(format: ExportFormat, bytes: &[u8]) -> Model {
    match format {
        ExportFormat::XgboostJson => Model::from_xgboost_json(bytes).unwrap(),
        ExportFormat::LightgbmText => Model::from_lightgbm_text(std::str::from_utf8(bytes).unwrap()).unwrap(),
        ExportFormat::Onnx => unreachable!("arbor does not import ONNX"),
    }
}

/// Exports `model` in both formats and reads each back: the same
/// algorithm, classes and features, and the same outputs on `test`.
fn round_trip(model: &Model, test: &RecordBatch) {
    let expected = model.score(test).unwrap();
    for format in IMPORTED {
        let back = import(format, &model.export(format).unwrap());
        assert_eq!(back.algorithm(), model.algorithm(), "{format}");
        assert_eq!(back.class_names().len(), model.class_names().len(), "{format}");
        let names = |m: &Model| m.features().iter().map(|f| (f.name.clone(), f.kind)).collect::<Vec<_>>();
        assert_eq!(names(&back), names(model), "{format}: categorical features come back categorical");
        let got = back.score(test).unwrap();
        // XGBoost keeps 32-bit leaves; LightGBM keeps every bit.
        let tolerance = if format == ExportFormat::XgboostJson { 1e-6 } else { 1e-12 };
        for (row, (g, e)) in got.values().iter().zip(expected.values()).enumerate() {
            assert!((g - e).abs() <= tolerance * e.abs().max(1.0), "{format}, row {row}: {g} vs {e}");
        }
        if !model.class_names().is_empty() {
            assert_eq!(got.class_index(), expected.class_index(), "{format}: every row's class");
        }
    }
}

#[test]
fn forests_and_boosted_models_come_back_from_either_format() {
    // Flights: string categories and missing values; diamonds: regression.
    let flights = common::read("flights_cls_train.parquet", 6000);
    let flights_test = common::read("flights_cls_test.parquet", 3000);
    let diamonds = common::read("diamonds_reg_train.parquet", 6000);
    let diamonds_test = common::read("diamonds_reg_test.parquet", 3000);
    for options in [
        "algorithm=random-forest n_trees=6 max_depth=8",
        "algorithm=random-forest n_trees=6 max_depth=8 voting=unweighted",
        "algorithm=gradient-boosting n_rounds=12",
    ] {
        let model = common::fit(&flights, options);
        assert!(model.features().iter().any(|f| f.kind == arbor_quantize::FeatureType::Categorical));
        round_trip(&model, &flights_test);
    }
    for options in [
        "algorithm=random-forest n_trees=6 max_depth=8",
        "algorithm=gradient-boosting n_rounds=12 loss=huber",
        "algorithm=gradient-boosting n_rounds=12 loss=quantile alpha=0.3",
    ] {
        round_trip(&common::fit(&diamonds, options), &diamonds_test);
    }
    let digits = common::read("digits_cls_train.parquet", 1000);
    let digits_test = common::read("digits_cls_test.parquet", 300);
    round_trip(&common::fit(&digits, "algorithm=gradient-boosting n_rounds=5"), &digits_test);
    round_trip(&common::fit(&digits, "algorithm=random-forest n_trees=4"), &digits_test);
    let counts = common::read("counts_reg_train.parquet", 6000);
    let counts_test = common::read("counts_reg_test.parquet", 2000);
    round_trip(&common::fit(&counts, "algorithm=gradient-boosting n_rounds=10 loss=poisson"), &counts_test);
}

#[test]
fn a_forest_comes_back_a_forest() {
    let diamonds = common::read("diamonds_reg_train.parquet", 3000);
    let model = common::fit(&diamonds, "algorithm=random-forest n_trees=3 max_depth=4");
    for format in IMPORTED {
        let back = import(format, &model.export(format).unwrap());
        assert_eq!(back.algorithm(), Algorithm::RandomForest, "{format}");
        assert_eq!(back.trees().len(), 3, "{format}: one tree per arbor tree");
    }
}

#[test]
fn what_a_format_cannot_hold_is_named() {
    // LightGBM's zero-as-missing test has no XGBoost form.
    let text = std::fs::read_to_string(common::interop_path("lgb_reg_zero.txt")).unwrap();
    let zero = Model::from_lightgbm_text(&text).unwrap();
    assert!((0..zero.trees().len()).any(|t| zero
        .trees()
        .get(t)
        .unwrap()
        .nodes
        .iter()
        .any(|n| matches!(n, arbor_ensemble::Node::Split { test: SplitTest::ZeroAsMissing { .. }, .. }))));
    for format in [ExportFormat::XgboostJson, ExportFormat::Onnx] {
        let e = zero.export(format).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{format} export: tree ")) && e.contains("zero-as-missing"), "{e}");
    }
    // LightGBM text holds it, and gives it back.
    let back =
        Model::from_lightgbm_text(std::str::from_utf8(&zero.export(ExportFormat::LightgbmText).unwrap()).unwrap())
            .unwrap();
    let rows = common::read_file(&common::interop_path("diamonds_rows.parquet"));
    assert_eq!(back.score(&rows).unwrap(), zero.score(&rows).unwrap());

    let unknown = "onnx".parse::<ExportFormat>().map(|f| f.name()).unwrap();
    assert_eq!(unknown, "onnx");
    let unknown = "treelite".parse::<ExportFormat>().unwrap_err().to_string();
    assert!(
        unknown.contains("unknown export format 'treelite' (known: xgboost-json, lightgbm-text, onnx)"),
        "{unknown}"
    );
}
