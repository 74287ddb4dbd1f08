//! Degenerate labels: a label that holds a single class trains a model that
//! predicts that class with probability 1 (forests and boosting alike), a
//! constant regression label a model that predicts the constant, and data
//! with no row to train on is its own error, which SQL turns into a NULL model.

mod common;

use std::sync::Arc;

use arbor_ensemble::{ArborError, Loss, Model, TrainParams, Trainer};
use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{Float64Type, Int32Type};
use common::read;

/// `batch` with column `name` replaced by `column` (of any type).
fn with_column(batch: &RecordBatch, name: &str, column: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let columns = schema.fields().iter().zip(batch.columns()).map(|(field, array)| {
        (field.name().as_str(), if field.name() == name { column.clone() } else { array.clone() })
    });
    RecordBatch::try_from_iter(columns).unwrap()
}

/// Flights rows whose label is 1 in every row.
fn one_class_flights(rows: usize) -> RecordBatch {
    let batch = read("flights_cls_train.parquet", rows);
    with_column(&batch, "label", Arc::new(Int32Array::from(vec![1; batch.num_rows()])))
}

fn fit(batch: &RecordBatch, options: &str) -> Model {
    Trainer::new(TrainParams::parse_options(options).unwrap()).fit(batch).unwrap()
}

/// Every prediction is the one class, every probability list has one entry,
/// 1.0; the model says so, and reads back from its bytes the same.
fn assert_predicts_its_one_class(model: &Model, test: &RecordBatch) {
    assert_eq!(model.class_names(), ["1"]);
    assert_eq!(model.single_class().as_deref(), Some("1"));
    let warnings = model.warnings();
    assert!(warnings.len() == 1 && warnings[0].contains("single class ('1')"), "{warnings:?}");
    assert_eq!(model.summary_json()["classes"], serde_json::json!([1]));
    assert_eq!(model.summary_json()["warnings"][0], warnings[0].as_str());
    assert!(model.summary_text().contains("warning      label 'label' held a single class"));

    let predicted = model.predict(test).unwrap();
    let predicted = predicted.as_primitive::<Int32Type>();
    assert_eq!((predicted.len(), predicted.null_count()), (test.num_rows(), 0));
    assert!(predicted.values().iter().all(|&c| c == 1), "every row is predicted as the one class");
    let proba = model.predict_proba(test).unwrap();
    assert_eq!((proba.len(), proba.value_length()), (test.num_rows(), 1));
    assert!(proba.values().as_primitive::<Float64Type>().values().iter().all(|&p| p == 1.0));

    let bytes = model.to_bytes();
    let again = Model::from_bytes(&bytes).unwrap();
    assert_eq!(again.to_bytes(), bytes, "a one-class model reads back to the same bytes");
    assert_eq!(again.class_names(), ["1"]);
    assert_eq!(again.predict(test).unwrap().as_ref(), predicted as &dyn Array);
    assert_eq!(again.predict_proba(test).unwrap(), proba);
}

#[test]
fn a_single_class_forest_predicts_it_with_probability_one() {
    let train = one_class_flights(3_000);
    let test = read("flights_cls_test.parquet", 2_000);
    let model = fit(&train, "n_trees=5");
    assert_predicts_its_one_class(&model, &test);
    assert!(model.tree_shapes().iter().all(|t| t.nodes == 1), "a pure root is a leaf: nothing to split");
    assert_eq!(model.importance().unwrap(), vec![0.0; model.features().len()]);

    // Out-of-bag error, permutation importance and unweighted votes on one class.
    let model = fit(&train, "n_trees=5 oob=true importance=mda_scaled voting=unweighted criterion=entropy");
    assert_predicts_its_one_class(&model, &test);
    assert_eq!(model.oob_error(), Some(0.0));
    assert!(model.importance().unwrap().iter().all(|v| *v == 0.0));
}

#[test]
fn a_single_class_boosted_model_predicts_it_with_probability_one() {
    let train = one_class_flights(3_000);
    let test = read("flights_cls_test.parquet", 2_000);
    for options in ["n_rounds=5", "n_rounds=5 loss=logistic lambda=0", "n_rounds=20 early_stopping_rounds=2"] {
        let model = fit(&train, &format!("algorithm=gradient-boosting {options}"));
        assert_predicts_its_one_class(&model, &test);
        let boosting = model.boosting().unwrap();
        assert_eq!((boosting.loss, boosting.outputs), (Loss::Softmax, 1), "{options}: one output, softmax");
        assert_eq!(model.param("loss"), Some("softmax"), "{options}");
        assert!(boosting.base_score.iter().all(|s| s.is_finite()), "{options}");
    }
    // Early stopping sees no loss to improve on: it keeps the first round.
    let model = fit(&train, "algorithm=gradient-boosting n_rounds=20 early_stopping_rounds=2");
    let stopped = model.boosting().unwrap().early_stopping.as_ref().unwrap();
    assert_eq!((stopped.best_round, stopped.rounds_run), (1, 3));
}

#[test]
fn a_single_string_class_keeps_its_type_and_weights() {
    let batch = read("flights_cls_train.parquet", 1_000);
    let batch = with_column(&batch, "label", Arc::new(StringArray::from(vec!["late"; batch.num_rows()])));
    let weights = Arc::new(Float64Array::from_iter_values((0..batch.num_rows()).map(|r| (r % 3) as f64)));
    let batch = with_column(&batch, "distance", weights);
    for options in ["n_trees=3", "algorithm=gradient-boosting n_rounds=3"] {
        let params = TrainParams::parse_options(options).unwrap();
        let model = Trainer::new(params).weight("distance").fit(&batch).unwrap();
        assert_eq!(model.class_names(), ["late"], "{options}");
        let predicted = model.predict(&batch).unwrap();
        assert!(predicted.as_string::<i32>().iter().all(|c| c == Some("late")), "{options}");
    }
}

#[test]
fn a_constant_regression_label_predicts_the_constant() {
    let batch = read("diamonds_reg_train.parquet", 2_000);
    let batch = with_column(&batch, "label", Arc::new(Float64Array::from(vec![2.5; batch.num_rows()])));
    let test = read("diamonds_reg_test.parquet", 500);
    for options in ["n_trees=4", "algorithm=gradient-boosting n_rounds=4 lambda=0"] {
        let model = fit(&batch, options);
        assert!(model.single_class().is_none() && model.warnings().is_empty(), "{options}");
        let again = Model::from_bytes(&model.to_bytes()).unwrap();
        let predicted = again.predict(&test).unwrap();
        let predicted = predicted.as_primitive::<Float64Type>();
        assert_eq!(predicted.len(), 500);
        assert!(predicted.values().iter().all(|&v| (v - 2.5).abs() < 1e-12), "{options}: {:?}", predicted.value(0));
    }
}

#[test]
fn data_with_no_row_to_train_on_is_its_own_error() {
    let batch = read("flights_cls_train.parquet", 500);
    let trainer = Trainer::new(TrainParams::parse_options("n_trees=2").unwrap());
    let nothing = |result: Result<Model, ArborError>, words: &str| match result {
        Err(ArborError::NothingToTrain(message)) => assert!(message.contains(words), "{message}"),
        other => panic!("expected nothing to train on ({words}), got {other:?}"),
    };
    nothing(trainer.fit(batch.slice(0, 0)), "empty (0 rows)");
    nothing(trainer.fit(Vec::new()), "no record batches");
    let nulls = with_column(&batch, "label", Arc::new(Int32Array::from(vec![None; batch.num_rows()])));
    nothing(trainer.fit(&nulls), "label column 'label' is null in every row (500 rows)");
    let zero = with_column(&batch, "distance", Arc::new(Float64Array::from(vec![0.0; batch.num_rows()])));
    nothing(trainer.clone().weight("distance").fit(&zero), "weight column 'distance' sums to zero");

    // Bad input stays an ordinary data error, naming the column and value.
    let negative = with_column(&batch, "distance", Arc::new(Float64Array::from(vec![-1.0; batch.num_rows()])));
    match trainer.weight("distance").fit(&negative) {
        Err(ArborError::Data(message)) => assert!(message.contains("'distance' holds -1"), "{message}"),
        other => panic!("expected a data error, got {other:?}"),
    }
}
