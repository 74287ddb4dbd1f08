//! Continued training (`Trainer::init_model`): rounds appended to a boosted
//! model grow the trees the same number of rounds at once grow, on the
//! model's bins, for every kind of loss and with the random draws on; new
//! rows lower the held-out error; and every mismatch between the model and
//! the data or parameters is an error naming the column or key.

mod common;

use std::sync::Arc;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use common::{read, rmse};

fn params(options: &str) -> TrainParams {
    TrainParams::parse_options(&format!("algorithm=gradient-boosting {options}")).unwrap()
}

fn fit(batch: &RecordBatch, options: &str) -> Model {
    Trainer::new(params(options)).fit(batch).unwrap()
}

fn continue_from(model: &Model, batch: &RecordBatch, options: &str) -> arbor_ensemble::Result<Model> {
    Trainer::new(params(options)).init_model(model).fit(batch)
}

/// `rounds` at once against `first` then `rounds - first`, on the same rows:
/// the same trees, bit for bit, and the same scores.
fn assert_continues(batch: &RecordBatch, options: &str, rounds: usize, first: usize) {
    let whole = fit(batch, &format!("{options} n_rounds={rounds}"));
    let start = fit(batch, &format!("{options} n_rounds={first}"));
    // Through the model bytes, as `arbor train --init-model` reads it.
    let start = Model::from_bytes(&start.to_bytes()).unwrap();
    let continued = continue_from(&start, batch, &format!("{options} n_rounds={}", rounds - first)).unwrap();
    assert_eq!(continued.trees().len(), whole.trees().len(), "{options}");
    for t in 0..whole.trees().len() {
        assert_eq!(continued.trees().get(t), whole.trees().get(t), "{options}: tree {t}");
    }
    assert_eq!(continued.boosting().unwrap().base_score, whole.boosting().unwrap().base_score);
    let (a, b) = (continued.score(batch).unwrap(), whole.score(batch).unwrap());
    for (x, y) in a.values().iter().zip(b.values()) {
        assert!((x - y).abs() <= 1e-9, "{options}: {x} against {y}");
    }
    assert_eq!(continued.node_cover().unwrap().len(), whole.trees().len());
    assert_eq!(continued.param("init_model_rounds"), Some(first.to_string().as_str()));
    assert_eq!(continued.param("n_rounds"), Some((rounds - first).to_string().as_str()));
    // The continued model travels like any other.
    let read_back = Model::from_bytes(&continued.to_bytes()).unwrap();
    assert_eq!(read_back.score(batch).unwrap().values(), a.values());
}

#[test]
fn thirty_then_twenty_rounds_are_fifty_rounds() {
    // Categorical features, row and feature subsampling: the random streams
    // of the new rounds follow the model's.
    let diamonds = read("diamonds_reg_train.parquet", 3000);
    assert_continues(&diamonds, "max_depth=4 learning_rate=0.2 sample_fraction=0.7 max_features=5", 50, 30);
    // A loss whose leaves are re-fitted after growing.
    assert_continues(&diamonds, "max_depth=3 loss=quantile alpha=0.8", 50, 30);
    // A log link.
    let counts = read("counts_reg_train.parquet", 3000);
    assert_continues(&counts, "max_depth=3 loss=poisson", 50, 30);
    // Two classes, then softmax over ten.
    let cancer = read("cancer_cls_train.parquet", 455);
    assert_continues(&cancer, "max_depth=3 learning_rate=0.3", 50, 30);
    let digits = read("digits_cls_train.parquet", 600);
    assert_continues(&digits, "max_depth=2 max_features=20", 8, 5);
}

#[test]
fn early_stopping_continues_the_curve() {
    let cancer = read("cancer_cls_train.parquet", 455);
    let options = "max_depth=3 learning_rate=0.05 early_stopping_rounds=1000 validation_fraction=0.2";
    let whole = fit(&cancer, &format!("{options} n_rounds=50"));
    let start = fit(&cancer, &format!("{options} n_rounds=30"));
    let continued = continue_from(&start, &cancer, &format!("{options} n_rounds=20")).unwrap();
    let (stop, whole_stop) = (
        continued.boosting().unwrap().early_stopping.clone().unwrap(),
        whole.boosting().unwrap().early_stopping.clone().unwrap(),
    );
    // Rounds count from the model's first: the curve replays its 30 rounds.
    assert_eq!(stop.rounds_run, 50);
    assert_eq!(continued.curve().len(), 50);
    for (a, b) in continued.curve().iter().zip(whole.curve()) {
        assert!((a.training - b.training).abs() < 1e-12 && (a.validation - b.validation).abs() < 1e-12);
    }
    assert_eq!(stop.best_round, whole_stop.best_round);
    assert_eq!(stop.validation_rows, whole_stop.validation_rows);

    // The best round is sought among the new rounds: the model's are kept.
    let overfit = "max_depth=6 learning_rate=1 early_stopping_rounds=2 validation_fraction=0.2";
    let start = fit(&cancer, &format!("{overfit} n_rounds=40"));
    let kept = start.trees().len();
    let continued = continue_from(&start, &cancer, &format!("{overfit} n_rounds=40")).unwrap();
    let stop = continued.boosting().unwrap().early_stopping.clone().unwrap();
    assert!(stop.best_round > kept, "{} rounds kept of a model of {kept}", stop.best_round);
    assert_eq!(continued.trees().len(), stop.best_round);
    assert_eq!(continued.curve().len(), stop.rounds_run);
}

#[test]
fn new_rows_lower_the_held_out_error() {
    let all = read("diamonds_reg_train.parquet", 20_000);
    let test = read("diamonds_reg_test.parquet", 5000);
    let (first, second) = (all.slice(0, 10_000), all.slice(10_000, 10_000));
    let start = fit(&first, "n_rounds=40 max_depth=5 learning_rate=0.1");
    let continued = continue_from(&start, &second, "n_rounds=40 max_depth=5 learning_rate=0.1").unwrap();
    let (before, after) = (rmse(&start, &test), rmse(&continued, &test));
    assert!(after < before * 0.9, "RMSE {before} before, {after} after 40 rounds on new rows");
    // The model's bins, features and classes are kept.
    assert_eq!(continued.features(), start.features());
    assert_eq!(continued.trees().len(), 80);
    let importance: f64 = continued.importance().unwrap().iter().sum();
    assert!((importance - 1.0).abs() < 1e-12, "importances sum to {importance}");
}

#[test]
fn an_unseen_category_is_read_as_missing() {
    let diamonds = read("diamonds_reg_train.parquet", 2000);
    let start = fit(&diamonds, "n_rounds=10 max_depth=3");
    let cut: ArrayRef = Arc::new(StringArray::from(vec!["Brand new"; 2000]));
    let renamed = with_column(&diamonds, "cut", cut);
    let continued = continue_from(&start, &renamed, "n_rounds=5 max_depth=3").unwrap();
    assert_eq!(continued.features()[1].mapper, start.features()[1].mapper);
    assert_eq!(continued.trees().len(), 15);
}

/// `batch` with column `name` replaced by `array`.
fn with_column(batch: &RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| if f.name() == name { Field::new(name, array.data_type().clone(), true) } else { f.as_ref().clone() })
        .collect();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| if f.name() == name { array.clone() } else { c.clone() })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn message(result: arbor_ensemble::Result<Model>) -> String {
    result.expect_err("an error").to_string()
}

#[test]
fn a_model_that_does_not_fit_the_data_is_an_error_naming_it() {
    let diamonds = read("diamonds_reg_train.parquet", 2000);
    let start = fit(&diamonds, "n_rounds=5 max_depth=3");

    // A feature of the model the data lacks; a feature the model lacks.
    let without = diamonds.project(&[0, 1, 2, 3, 4, 5, 6, 7, 9]).unwrap(); // no z
    let e = message(continue_from(&start, &without, "n_rounds=5"));
    assert!(e.contains("'z'"), "{e}");
    let e = message(
        Trainer::new(params("n_rounds=5")).init_model(&start).features(["carat", "cut", "price"]).fit(&diamonds),
    );
    assert!(e.contains("'price'") && e.contains("not a feature of the model"), "{e}");

    // A numeric feature given as text.
    let text: ArrayRef = Arc::new(StringArray::from(vec!["1.0"; 2000]));
    let e = message(continue_from(&start, &with_column(&diamonds, "carat", text), "n_rounds=5"));
    assert!(e.contains("'carat'") && e.contains("categorical") && e.contains("numeric"), "{e}");

    // Another loss; exact splits; a forest asked for; a forest given.
    let e = message(continue_from(&start, &diamonds, "n_rounds=5 loss=absolute"));
    assert!(e.starts_with("option 'loss'"), "{e}");
    let e = message(continue_from(&start, &diamonds, "n_rounds=5 split_method=exact"));
    assert!(e.starts_with("option 'split_method'"), "{e}");
    let e = message(Trainer::new(TrainParams::parse_options("n_trees=3").unwrap()).init_model(&start).fit(&diamonds));
    assert!(e.starts_with("option 'init_model'") && e.contains("gradient-boosting"), "{e}");
    let forest = Trainer::new(TrainParams::parse_options("n_trees=3").unwrap()).fit(&diamonds).unwrap();
    let e = message(continue_from(&forest, &diamonds, "n_rounds=5"));
    assert!(e.starts_with("option 'init_model'") && e.contains("random forest"), "{e}");

    // Another task; a class the model does not have.
    let cancer = read("cancer_cls_train.parquet", 455);
    let classifier = fit(&cancer, "n_rounds=5");
    let e = message(continue_from(&start, &diamonds, "n_rounds=5 task=classification"));
    assert!(e.contains("task") || e.contains("label"), "{e}");
    let label = cancer.column_by_name("label").unwrap();
    let shifted = arrow::compute::kernels::numeric::add(label, &arrow::array::Int32Array::new_scalar(7)).unwrap();
    let e = message(continue_from(&classifier, &with_column(&cancer, "label", shifted), "n_rounds=5"));
    assert!(e.contains("class '7'") && e.contains("label column 'label'"), "{e}");

    // Rows binned on bins of their own.
    let trainer = Trainer::new(params("n_rounds=5"));
    let own_bins = trainer.bin(std::slice::from_ref(&diamonds.slice(0, 700))).unwrap();
    let e = match trainer.clone().init_model(&start).fit_binned(&own_bins) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("trained on bins not the model's"),
    };
    assert!(e.contains("not binned as the model bins"), "{e}");
    // ... but rows binned by a trainer given the model train.
    let on_model_bins = trainer.clone().init_model(&start).bin(std::slice::from_ref(&diamonds)).unwrap();
    let continued = trainer.init_model(&start).fit_binned(&on_model_bins).unwrap().model;
    assert_eq!(continued.trees().len(), 10);

    // A model built by hand or imported has no bins.
    let imported =
        Model::from_lightgbm_text(&std::fs::read_to_string(common::interop_path("lgb_reg.txt")).unwrap()).unwrap();
    let e = message(Trainer::new(params("n_rounds=2")).init_model(&imported).fit(&diamonds));
    assert!(e.starts_with("option 'init_model'") && e.contains("imported"), "{e}");
}

#[test]
fn continued_training_reads_labels_of_another_type() {
    // The label's classes are matched by value: Int32 labels continue a
    // model trained on Int64 ones, and the model keeps its label type.
    let cancer = read("cancer_cls_train.parquet", 455);
    let start = fit(&cancer, "n_rounds=5");
    let label = arrow::compute::cast(cancer.column_by_name("label").unwrap(), &DataType::Int32).unwrap();
    let continued = continue_from(&start, &with_column(&cancer, "label", label), "n_rounds=5").unwrap();
    assert_eq!(continued.label(), start.label());
    assert_eq!(continued.trees().len(), 10);
}
