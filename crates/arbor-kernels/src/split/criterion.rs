//! The criterion a split is scored by, and what it reads of a statistics
//! vector (histogram-bin layout): count, weight, score.

/// Impurity measure of a node (docs/algorithms.md, "Split criteria"), or the
/// second-order objective of gradient boosting (docs/algorithms.md, "Gradient boosting").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Criterion {
    /// Gini index, classification.
    Gini,
    /// Entropy (information gain), classification.
    Entropy,
    /// Mean squared error, regression.
    Mse,
    /// Half the Poisson deviance, regression of counts or rates (labels
    /// `>= 0`; scikit-learn's `criterion="poisson"`). Its statistics are
    /// MSE's.
    Poisson,
    /// Gradient boosting: a node scores `G² / (H + lambda)` (docs/algorithms.md, "Gradient boosting").
    Newton {
        /// L2 regularization of leaf weights.
        lambda: f64,
    },
}

/// Count and weight of a statistics vector (histogram-bin layout): for
/// classes `[w_0 .. w_{C-1}, count]`, for values `[count, w, Σwy]`, for
/// gradients `[count, G, H]` (the hessian is the weight).
#[inline(always)]
pub fn count_weight(stats: &[f64], criterion: Criterion) -> (f64, f64) {
    match criterion {
        Criterion::Mse | Criterion::Poisson => (stats[0], stats[1]),
        Criterion::Newton { .. } => (stats[0], stats[2]),
        Criterion::Gini | Criterion::Entropy => {
            let n = stats.len() - 1;
            (stats[n], stats[..n].iter().sum())
        }
    }
}

/// The count of a statistics vector alone (see [`count_weight`]): whether a
/// bin holds rows, without summing class weights.
#[inline(always)]
pub fn count(stats: &[f64], criterion: Criterion) -> f64 {
    match criterion {
        Criterion::Mse | Criterion::Poisson | Criterion::Newton { .. } => stats[0],
        Criterion::Gini | Criterion::Entropy => stats[stats.len() - 1],
    }
}

/// How much data a child holds when deciding where unseen categories and
/// absent missing values go ("the larger child"): the weight for impurity
/// criteria, so a sample weight of 2 counts as the row twice; the row count
/// for boosting, whose weight is the hessian.
#[inline]
pub fn child_size(stats: &[f64], criterion: Criterion) -> f64 {
    let (count, weight) = count_weight(stats, criterion);
    match criterion {
        Criterion::Newton { .. } => count,
        _ => weight,
    }
}

/// `−W·i(t)` up to a term that is the same for a node and its children, so
/// that a split's gain is `score(L) + score(R) − score(parent)`.
#[inline(always)]
pub fn node_score(stats: &[f64], criterion: Criterion) -> f64 {
    match criterion {
        Criterion::Mse => {
            if stats[1] > 0.0 {
                stats[2] * stats[2] / stats[1]
            } else {
                0.0
            }
        }
        Criterion::Newton { lambda } => {
            let h = stats[2] + lambda;
            if h > 0.0 {
                stats[1] * stats[1] / h
            } else {
                0.0
            }
        }
        // Half the Poisson deviance of a node of weight `W` and weighted
        // sum `S` is `Σ w·y·ln y − S·ln(S/W)`, its first term the same for
        // a node and its children. A child of sum 0 would predict 0, of
        // infinite deviance for any later positive count: it scores −∞,
        // so no split makes one (as scikit-learn refuses it).
        Criterion::Poisson => {
            let (s, w) = (stats[2], stats[1]);
            match () {
                _ if w <= 0.0 => 0.0,
                _ if s <= 0.0 => f64::NEG_INFINITY,
                _ => s * (s / w).ln(),
            }
        }
        Criterion::Gini => {
            let classes = &stats[..stats.len() - 1];
            let w: f64 = classes.iter().sum();
            if w > 0.0 {
                classes.iter().map(|c| c * c).sum::<f64>() / w
            } else {
                0.0
            }
        }
        Criterion::Entropy => {
            let classes = &stats[..stats.len() - 1];
            let w: f64 = classes.iter().sum();
            classes.iter().filter(|&&c| c > 0.0).map(|&c| c * (c / w).ln()).sum()
        }
    }
}
