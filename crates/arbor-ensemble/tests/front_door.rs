//! The front door: `Trainer` → `Model` → Arrow arrays, on bundled data, and
//! a clear error (never a panic) for every misuse a public function allows.

mod common;

use std::sync::Arc;

use arbor_ensemble::{
    ArborError, ColumnRoles, Model, NamedColumn, RowColumns, Task, TrainParams, Trainer, TrainingData,
};
use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Int32Type};
use common::read;

#[test]
fn fit_and_predict_typed_arrays_on_flights() {
    let train = read("flights_cls_train.parquet", 20_000);
    let test = read("flights_cls_test.parquet", 5_000);
    let params = TrainParams::parse_options("n_trees=10").unwrap();
    let model = Trainer::new(params).label("label").fit(&train).unwrap();

    // Classes come back typed like the label (Int32 in flights).
    let predicted = model.predict(&test).unwrap();
    assert_eq!(predicted.data_type(), test.column_by_name("label").unwrap().data_type());
    let (p, y) =
        (predicted.as_primitive::<Int32Type>(), test.column_by_name("label").unwrap().as_primitive::<Int32Type>());
    let accuracy = (0..y.len()).filter(|&i| p.value(i) == y.value(i)).count() as f64 / y.len() as f64;
    assert!(accuracy > 0.87, "accuracy {accuracy}");

    // Probabilities: a fixed-size list per row, in class order, each summing to one.
    let proba = model.predict_proba(&test).unwrap();
    assert_eq!((proba.len(), proba.value_length()), (test.num_rows(), 2));
    let values = proba.values().as_primitive::<arrow::datatypes::Float64Type>();
    for row in 0..proba.len() {
        let (p0, p1) = (values.value(2 * row), values.value(2 * row + 1));
        assert!((p0 + p1 - 1.0).abs() < 1e-12);
        assert_eq!(p.value(row), (p1 > p0) as i32, "the predicted class is the most probable one");
    }

    // The same as the raw scores the command line and SQL use.
    let scores = model.score(&test).unwrap();
    assert_eq!(model.prediction_array(&scores).unwrap().as_ref(), predicted.as_ref());
    assert_eq!(scores.row(7), &values.values()[14..16]);
}

#[test]
fn roles_weights_and_features_are_honoured() {
    let batch = read("diamonds_reg_train.parquet", 3_000);
    let params = TrainParams::parse_options("n_trees=3").unwrap();
    let model = Trainer::new(params.clone()).features(["carat", "cut"]).weight("depth").fit(&batch).unwrap();
    let names: Vec<&str> = model.features().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["carat", "cut"]);
    assert_eq!(model.task(), Task::Regression);
    assert_eq!(model.predict(&batch).unwrap().data_type(), &DataType::Float64);
    let unweighted = Trainer::new(params).features(["carat", "cut"]).fit(batch).unwrap();
    assert_ne!(model.to_bytes(), unweighted.to_bytes(), "the weights matter");
    assert!(model
        .predict_proba(&read("diamonds_reg_test.parquet", 10))
        .unwrap_err()
        .to_string()
        .contains("regression"));
}

/// Whether `result` is an error whose message contains every one of `words`.
fn fails_with<T: std::fmt::Debug>(result: Result<T, ArborError>, words: &[&str]) {
    let message = result.expect_err("an error, not a value").to_string();
    for word in words {
        assert!(message.contains(word), "'{word}' not in: {message}");
    }
}

#[test]
fn typed_parameters_are_checked_like_parsed_ones() {
    let batch = read("cancer_cls_train.parquet", 200);
    let mut params = TrainParams::default();
    params.forest.n_trees = 0;
    fails_with(Trainer::new(params).fit(&batch), &["n_trees"]);

    let mut params = TrainParams::default();
    params.forest.tree.max_bins = 70_000;
    fails_with(Trainer::new(params).fit(&batch), &["max_bins", "65536"]);

    let mut params = TrainParams::parse_options("algorithm=gradient-boosting").unwrap();
    params.boosting.learning_rate = f64::NAN;
    fails_with(Trainer::new(params).fit(&batch), &["learning_rate"]);

    let mut params = TrainParams::parse_options("algorithm=gradient-boosting").unwrap();
    params.boosting.tree.max_bins = 1;
    fails_with(Trainer::new(params).fit(batch), &["max_bins"]);
}

#[test]
fn unusable_inputs_are_errors_not_panics() {
    let batch = read("cancer_cls_train.parquet", 200);
    let trainer = Trainer::new(TrainParams::parse_options("n_trees=2").unwrap());

    // No batches, empty batches, batches of two schemas, a missing label.
    fails_with(trainer.fit(&[]), &["no record batches"]);
    fails_with(trainer.fit(&[batch.slice(0, 0)]), &["empty"]);
    let other = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)]).unwrap();
    fails_with(trainer.fit(&[batch.clone(), other]), &["different schemas"]);
    fails_with(trainer.clone().label("y").fit(&batch), &["column 'y' not found"]);

    // Named columns of unequal length, chunked alike or not.
    let label = NamedColumn { name: "label".into(), arrays: vec![Arc::new(Int64Array::from(vec![0, 1, 0, 1]))] };
    let short = NamedColumn { name: "x".into(), arrays: vec![Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]))] };
    fails_with(
        TrainingData::from_columns(label.clone(), vec![short], RowColumns::default(), None, |_| None),
        &["'x'", "3 rows", "4"],
    );
    let weight = NamedColumn { name: "w".into(), arrays: vec![Arc::new(Float64Array::from(vec![1.0; 5]))] };
    let x = NamedColumn { name: "x".into(), arrays: vec![Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0]))] };
    fails_with(
        TrainingData::from_columns(label.clone(), vec![x.clone()], RowColumns::weighted(Some(weight)), None, |_| None),
        &["'w'", "5 rows"],
    );
    // Rows cut differently into chunks are the same rows: they train.
    let chunked = NamedColumn {
        name: "x".into(),
        arrays: vec![Arc::new(Float64Array::from(vec![1.0])), Arc::new(Float64Array::from(vec![2.0, 3.0, 4.0]))],
    };
    let a = TrainingData::from_columns(label.clone(), vec![chunked], RowColumns::default(), None, |_| None).unwrap();
    let b = TrainingData::from_columns(label, vec![x], RowColumns::default(), None, |_| None).unwrap();
    assert_eq!(trainer.fit_data(&a).unwrap().model.to_bytes(), trainer.fit_data(&b).unwrap().model.to_bytes());

    // A column reader's roles name a missing column.
    let roles = ColumnRoles { label: "nope".into(), ..ColumnRoles::default() };
    fails_with(TrainingData::from_column_reader(&batch.schema(), &roles, None, |_| Ok(Vec::new())), &["'nope'"]);
}

#[test]
fn prediction_checks_its_input() {
    let batch = read("cancer_cls_train.parquet", 200);
    let model: Model = Trainer::new(TrainParams::parse_options("n_trees=2").unwrap()).fit(&batch).unwrap();
    let arrays = model.feature_arrays(&batch).unwrap();

    // Features of unequal length.
    let mut uneven = arrays.clone();
    uneven[3] = uneven[3].slice(0, 10);
    fails_with(model.score_arrays(&uneven), &["has 10 rows"]);
    // Too few features; raw columns of the wrong count or length.
    fails_with(model.score_arrays(&arrays[1..]), &["features"]);
    fails_with(model.score_columns(&[vec![0.0; 3]], 3), &["features"]);
    let columns: Vec<Vec<f64>> = (0..model.features().len()).map(|_| vec![0.0; 3]).collect();
    fails_with(model.score_columns(&columns, 4), &["not 4"]);
    assert_eq!(model.score_columns(&columns, 3).unwrap().n_rows(), 3);
    // A feature index the model does not have.
    fails_with(model.check_feature_type(99, &DataType::Float64), &["no feature 99"]);
    // A column missing from the batch.
    let without = batch.project(&[0, 1]).unwrap();
    fails_with(model.predict(&without), &["not found"]);
}

#[test]
fn a_model_round_trips_and_keeps_its_answers() {
    let batch = read("digits_cls_train.parquet", 600);
    let params = TrainParams::parse_options("algorithm=gradient-boosting n_rounds=5").unwrap();
    let model = Trainer::new(params).fit(&batch).unwrap();
    let again = Model::from_bytes(&model.to_bytes()).unwrap();
    assert_eq!(again.predict(&batch).unwrap().as_ref(), model.predict(&batch).unwrap().as_ref());
    assert_eq!(again.predict_proba(&batch).unwrap(), model.predict_proba(&batch).unwrap());
    assert_eq!(again.predict_proba(&batch).unwrap().value_length() as usize, model.class_names().len());
}

#[test]
fn the_readme_shows_the_front_door_example_as_it_compiles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("examples/front_door.rs")).unwrap();
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let body = &example[example.find("use std::fs::File;").unwrap()..];
    assert!(readme.contains(&format!("```rust\n{body}```")), "README's Rust section differs from the example");
}
