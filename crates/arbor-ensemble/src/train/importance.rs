//! Feature importance: mean decrease in impurity and permutation importance
//! for forests, gain shares for boosting.
//!
//! The per-tree figures are gathered where training grows or evaluates each
//! tree (split gains by the grower, permuted out-of-bag errors by
//! [`super::out_of_bag`]); the forest-level importance is computed here.

/// MDI (`docs/algorithms.md`, "Variable importance"): `MDI(j) = 1/B Σ_b Σ_{t splits on j} p(t)·Δi(s_t, t)`, not
/// normalized, from each tree's weighted impurity decrease per feature.
pub(crate) fn mean_decrease_impurity(gains: &[Vec<f64>], n_features: usize) -> Vec<f64> {
    let mut total = vec![0.0; n_features];
    for gain in gains {
        total.iter_mut().zip(gain).for_each(|(acc, g)| *acc += g);
    }
    total.iter().map(|v| v / gains.len() as f64).collect::<Vec<f64>>()
}

/// Mean decrease of accuracy per feature (`docs/algorithms.md`, "Variable importance"): the mean over trees of
/// the error increase `E_{b,j} − E_b`; `scaled` divides it by its standard
/// error `σ_j / √B` (0 when every tree agrees exactly).
pub(crate) fn mean_decrease_accuracy(per_tree: &[Vec<f64>], n_features: usize, scaled: bool) -> Vec<f64> {
    let b = per_tree.len() as f64;
    (0..n_features)
        .map(|j| {
            let raw = per_tree.iter().map(|t| t[j]).sum::<f64>() / b;
            if !scaled {
                return raw;
            }
            let variance = per_tree.iter().map(|t| (t[j] - raw).powi(2)).sum::<f64>() / b;
            let standard_error = variance.sqrt() / b.sqrt();
            if standard_error > 0.0 {
                raw / standard_error
            } else {
                0.0
            }
        })
        .collect()
}

/// Boosting's importance: each feature's share of the total gain, `values`
/// scaled to sum to 1 (left as they are when they sum to 0).
pub(crate) fn gain_shares(mut values: Vec<f64>) -> Vec<f64> {
    let sum: f64 = values.iter().sum();
    if sum > 0.0 {
        values.iter_mut().for_each(|v| *v /= sum);
    }
    values
}
