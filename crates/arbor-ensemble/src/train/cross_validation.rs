//! Cross-validation on one binned table: each fold's model trains on the
//! other folds' rows with the table's bins, and is scored on its own, so
//! `k` folds bin the rows once, not `k` times.

use rand::seq::SliceRandom;

use crate::data::binned_data::BinnedData;
use crate::data::label::Target;
use crate::train::forest::tree_rng;
use crate::{ArborError, Model, Result};

/// The random stream that deals rows into folds (trees use 0, 1, ...).
const FOLD_STREAM: usize = usize::MAX - 1;

/// One fold's model and how it scores on the rows it did not train on.
#[derive(Debug)]
pub struct Fold {
    /// The model trained on every other fold.
    pub model: Model,
    /// Rows it trained on.
    pub training_rows: usize,
    /// Rows it was scored on (its own fold).
    pub held_out_rows: usize,
    /// Classification: the share of held-out rows whose class it predicts.
    /// Regression: the root mean squared error on them.
    pub score: f64,
}

/// Trains `folds` models on `data` with `fit`, each holding out one fold of
/// rows dealt at random (from `seed`) in equal shares.
pub(crate) fn cross_validate(
    data: &BinnedData,
    folds: usize,
    seed: u64,
    fit: impl Fn(&BinnedData) -> Result<Model>,
) -> Result<Vec<Fold>> {
    let n = data.n_rows();
    if data.groups.is_some() {
        return Err(ArborError::InvalidOption {
            key: "folds".into(),
            message: "cross-validation deals rows into folds, which would cut queries apart; \
                      a ranker's folds must keep each query whole"
                .into(),
        });
    }
    if folds < 2 || folds > n {
        return Err(ArborError::InvalidOption {
            key: "folds".into(),
            message: format!("{folds} folds of {n} rows: between 2 and the number of rows"),
        });
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(&mut tree_rng(seed, FOLD_STREAM));
    let mut fold_of = vec![0usize; n];
    for (i, &r) in order.iter().enumerate() {
        fold_of[r as usize] = i % folds;
    }
    drop(order);
    (0..folds)
        .map(|k| {
            let (held_out, kept): (Vec<u32>, Vec<u32>) = (0..n as u32).partition(|&r| fold_of[r as usize] == k);
            let model = fit(&data.subset(&kept)?)?;
            let predictions = model.score_columns(&data.tested_values(&held_out), held_out.len())?;
            let score = match data.target() {
                Target::Classes(labels) => {
                    let classes = predictions.class_index();
                    let hits = classes.iter().zip(&held_out).filter(|(&c, &r)| c == labels[r as usize]).count();
                    hits as f64 / held_out.len() as f64
                }
                Target::Values(y) => {
                    let squares: f64 =
                        predictions.values().iter().zip(&held_out).map(|(p, &r)| (p - y[r as usize]).powi(2)).sum();
                    (squares / held_out.len() as f64).sqrt()
                }
            };
            Ok(Fold { model, training_rows: kept.len(), held_out_rows: held_out.len(), score })
        })
        .collect()
}
