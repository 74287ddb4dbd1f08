//! Rows the tests of level-wise training share: a numeric feature, one
//! with missing values, a categorical one, a regression response and a
//! class, all a function of the row's number.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use crate::{Model, TrainParams, Trainer};

/// Rows `rows` with a categorical feature of `categories` categories and
/// `noise(i)` added to row `i`'s response.
pub(crate) fn table(rows: Range<usize>, categories: usize, noise: impl Fn(usize) -> f64) -> RecordBatch {
    let x: Vec<f64> = rows.clone().map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
    let z: Vec<Option<f64>> = rows.clone().map(|i| (i % 11 != 0).then(|| ((i * 104_729) % 997) as f64)).collect();
    let c: Vec<String> = rows.clone().map(|i| format!("c{}", (i * 31) % categories)).collect();
    let y: Vec<f64> = rows
        .clone()
        .enumerate()
        .map(|(k, i)| x[k].sin() * 10.0 + z[k].unwrap_or(500.0) / 50.0 + ((i * 31) % categories) as f64 + noise(i))
        .collect();
    let class: Vec<i64> = y.iter().map(|&v| ((v / 8.0) as i64).rem_euclid(3)).collect();
    let schema = Schema::new(vec![
        Field::new("x", DataType::Float64, false),
        Field::new("z", DataType::Float64, true),
        Field::new("c", DataType::Utf8, false),
        Field::new("y", DataType::Float64, false),
        Field::new("class", DataType::Int64, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from(x)),
        Arc::new(Float64Array::from(z)),
        Arc::new(StringArray::from(c)),
        Arc::new(Float64Array::from(y)),
        Arc::new(Int64Array::from(class)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

/// A trainer of `options` on the three features, for `label`.
pub(crate) fn trainer(options: &str, label: &str) -> Trainer<'static> {
    Trainer::new(TrainParams::parse_options(options).unwrap()).label(label).features(["x", "z", "c"])
}

/// The model's root mean squared error on `batch`'s response.
pub(crate) fn rmse(model: &Model, batch: &RecordBatch) -> f64 {
    let predicted = model.score(batch).unwrap();
    let y = batch.column_by_name("y").unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
    let sum: f64 = predicted.values().iter().zip(y.values()).map(|(p, y)| (p - y) * (p - y)).sum();
    (sum / y.len() as f64).sqrt()
}
