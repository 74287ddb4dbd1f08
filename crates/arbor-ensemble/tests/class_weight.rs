//! Class weights and `scale_pos_weight`: a class's weight is a sample
//! weight on each of its rows, so a model trained with class weights
//! predicts bit for bit what the same weights given per row train; they
//! multiply sample weights; `balanced` lifts the minority class's recall;
//! and what cannot apply is named.

mod common;

use std::sync::Arc;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{ArrayRef, AsArray, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int64Type};

/// The first `rows` flights, labels 0 (on time) and 1 (late).
fn flights(rows: usize) -> RecordBatch {
    common::read_file(&common::data_path("flights_cls_train.parquet")).slice(0, rows)
}

fn labels(batch: &RecordBatch) -> Vec<i64> {
    let label = arrow::compute::cast(batch.column_by_name("label").unwrap(), &DataType::Int64).unwrap();
    label.as_primitive::<Int64Type>().values().to_vec()
}

/// `batch` with a weight column `w` of `weight(row)`.
fn with_weights(batch: &RecordBatch, weight: impl Fn(usize, i64) -> f64) -> RecordBatch {
    let w: ArrayRef =
        Arc::new(Float64Array::from_iter_values(labels(batch).into_iter().enumerate().map(|(r, l)| weight(r, l))));
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("w", DataType::Float64, false));
    let mut columns = batch.columns().to_vec();
    columns.push(w);
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns).unwrap()
}

fn fit(batch: &RecordBatch, options: &str, weight: Option<&str>) -> Model {
    let trainer = Trainer::new(TrainParams::parse_options(options).unwrap()).label("label");
    let trainer = match weight {
        Some(w) => trainer.weight(w),
        None => trainer,
    };
    trainer.fit(batch).unwrap()
}

/// The bits of every score of `model` on `test`.
fn scores(model: &Model, test: &RecordBatch) -> Vec<u64> {
    model.score(test).unwrap().values().iter().map(|v| v.to_bits()).collect()
}

/// Both algorithms: `class_weight=1:3` (and boosting's `scale_pos_weight=3`)
/// predict what a weight of 3 on each late flight trains, to the bit; on
/// top of sample weights, the two multiply.
#[test]
fn class_weights_are_sample_weights_on_their_rows() {
    let train = flights(40_000);
    let test = common::read_file(&common::data_path("flights_cls_test.parquet")).slice(0, 5_000);
    let tripled = with_weights(&train, |_, label| if label == 1 { 3.0 } else { 1.0 });
    for (algorithm, extra) in
        [("n_trees=8", "class_weight=1:3"), ("algorithm=gradient-boosting n_rounds=20", "class_weight=1:3")]
            .into_iter()
            .chain([("algorithm=gradient-boosting n_rounds=20", "scale_pos_weight=3")])
    {
        let by_class = fit(&train, &format!("{algorithm} {extra}"), None);
        let by_row = fit(&tripled, algorithm, Some("w"));
        assert_eq!(scores(&by_class, &test), scores(&by_row, &test), "{algorithm} {extra}");
        let key = extra.split('=').next().unwrap();
        assert!(by_class.param(key).is_some() && by_row.param(key).is_none(), "{extra} is recorded");
    }
    // Sample weights of 1, 2, 1, 2, ... times the class weights.
    let alternating = with_weights(&train, |r, _| 1.0 + (r % 2) as f64);
    let product = with_weights(&train, |r, label| (1.0 + (r % 2) as f64) * if label == 1 { 3.0 } else { 0.5 });
    let by_class = fit(&alternating, "n_trees=8 class_weight=1:3,0:0.5", Some("w"));
    let by_row = fit(&product, "n_trees=8", Some("w"));
    assert_eq!(scores(&by_class, &test), scores(&by_row, &test));
}

/// `balanced` weighs each class `n / (k · n_c)`, as scikit-learn; on late
/// flights (about one in five) it lifts their recall.
#[test]
fn balanced_weights_lift_the_minority_class() {
    let train = flights(40_000);
    let y = labels(&train);
    let n = y.len() as f64;
    let late = y.iter().filter(|&&l| l == 1).count() as f64;
    assert!(late / n < 0.3, "late flights are the minority: {}", late / n);
    let balanced = with_weights(&train, |_, label| if label == 1 { n / (2.0 * late) } else { n / (2.0 * (n - late)) });
    let test = common::read_file(&common::data_path("flights_cls_test.parquet"));
    let options = "algorithm=gradient-boosting n_rounds=30";
    let by_class = fit(&train, &format!("{options} class_weight=balanced"), None);
    assert_eq!(scores(&by_class, &test), scores(&fit(&balanced, options, Some("w")), &test));
    let recall = |model: &Model| {
        let predicted = arrow::compute::cast(&model.predict(&test).unwrap(), &DataType::Int64).unwrap();
        let predicted = predicted.as_primitive::<Int64Type>();
        let truth = labels(&test);
        let late: Vec<usize> = (0..truth.len()).filter(|&i| truth[i] == 1).collect();
        late.iter().filter(|&&i| predicted.value(i) == 1).count() as f64 / late.len() as f64
    };
    let plain = fit(&train, options, None);
    assert!(recall(&by_class) > recall(&plain) + 0.05, "recall {} against {}", recall(&by_class), recall(&plain));
}

/// A class weight on a regression label, a class the label does not have,
/// and `scale_pos_weight` on more than two classes are named.
#[test]
fn class_weights_that_cannot_apply_are_named() {
    let error = |name: &str, options: &str| {
        let batch = common::read_file(&common::data_path(name));
        let batch = batch.slice(0, batch.num_rows().min(2_000));
        let params = TrainParams::parse_options(options).unwrap();
        Trainer::new(params).label("label").fit(&batch).unwrap_err().to_string()
    };
    for (name, options, expected) in [
        ("diamonds_reg_train.parquet", "class_weight=balanced", "option 'class_weight': applies to classification"),
        ("flights_cls_train.parquet", "class_weight=2:5", "'2' is not a class of the label; the classes are 0, 1"),
        (
            "digits_cls_train.parquet",
            "algorithm=gradient-boosting scale_pos_weight=2",
            "option 'scale_pos_weight': applies to two classes (it weighs the second); the label has 10",
        ),
    ] {
        let message = error(name, options);
        assert!(message.contains(expected), "{options}: {message}");
    }
    let forest = TrainParams::parse_options("scale_pos_weight=2").unwrap().check().unwrap_err().to_string();
    assert!(forest.contains("applies to algorithm=gradient-boosting only"), "{forest}");
}
