//! Monotone constraints (docs/algorithms.md, "Monotone constraints"): the
//! order a split on a constrained feature must keep between its children's
//! values, and the range of values a node's subtree may take.
//!
//! Boosting follows XGBoost and LightGBM's basic method: each child's
//! Newton value `−G/(H+λ)` is clamped into the node's range, the split is
//! scored with the clamped values, and a split on a constrained feature
//! whose clamped values break the order is refused. Forests follow
//! scikit-learn (1.4): a split on a constrained feature whose children's
//! values (means, or the second class's share) break the order or leave
//! the range is refused; values are clamped only at the leaves. Either
//! way a split on a constrained feature hands its children the ranges
//! either side of the mean of their two values, so every leaf on one
//! side is at most every leaf on the other.

use crate::split::criterion::{count_weight, Criterion};

/// The monotone constraint of the feature a scan searches, and the range
/// of values the node's children may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Monotone {
    /// `1`: the value may only rise with the feature (the left child's value
    /// at most the right's); `-1`: only fall; `0`: no constraint.
    pub direction: i8,
    /// The least value a child may take.
    pub lower: f64,
    /// The greatest value a child may take.
    pub upper: f64,
}

impl Monotone {
    /// No constraint and no range: a scan under it is a plain scan.
    pub const NONE: Monotone = Monotone { direction: 0, lower: f64::NEG_INFINITY, upper: f64::INFINITY };

    /// Whether the scan must look at child values at all under `criterion`:
    /// a constrained feature, or (boosting) a node whose range is bounded,
    /// since boosting clamps every child into it.
    #[inline]
    pub fn active(&self, criterion: Criterion) -> bool {
        self.direction != 0
            || (matches!(criterion, Criterion::Newton { .. }) && (self.lower.is_finite() || self.upper.is_finite()))
    }

    /// `v` clamped into the range.
    #[inline]
    pub fn clamp(&self, v: f64) -> f64 {
        v.max(self.lower).min(self.upper)
    }

    /// The gain of a split into `left` and `right` under the constraint,
    /// from the children's scores as `score` gives them unconstrained and
    /// the parent's score; `None` when the constraint refuses the split.
    #[inline]
    pub(crate) fn gain(
        &self,
        left: &[f64],
        right: &[f64],
        criterion: Criterion,
        parent_score: f64,
        score: impl Fn(&[f64]) -> f64,
    ) -> Option<f64> {
        match criterion {
            Criterion::Newton { lambda } => {
                let (vl, vr) = (self.clamp(node_value(left, criterion)), self.clamp(node_value(right, criterion)));
                if f64::from(self.direction) * (vr - vl) < 0.0 {
                    return None;
                }
                Some(newton_score_at(left, vl, lambda) + newton_score_at(right, vr, lambda) - parent_score)
            }
            _ => {
                let (vl, vr) = (node_value(left, criterion), node_value(right, criterion));
                let inside = |v: f64| self.lower <= v && v <= self.upper;
                if self.direction != 0 && (!inside(vl) || !inside(vr) || f64::from(self.direction) * (vr - vl) < 0.0) {
                    return None;
                }
                Some(score(left) + score(right) - parent_score)
            }
        }
    }

    /// The parent's score a constrained scan measures gains from: boosting's
    /// at its clamped value (so a split's gain is what it adds to the node's
    /// own constrained leaf), the plain score otherwise.
    pub(crate) fn parent_score(&self, total: &[f64], criterion: Criterion, plain: f64) -> f64 {
        match criterion {
            Criterion::Newton { lambda } => newton_score_at(total, self.clamp(node_value(total, criterion)), lambda),
            _ => plain,
        }
    }

    /// The ranges of the two children of a split whose children have
    /// statistics `left` and `right`: either side of the mean of their
    /// (clamped) values under a constrained feature, the node's own range
    /// otherwise.
    pub fn children(&self, left: &[f64], right: &[f64], criterion: Criterion) -> (Monotone, Monotone) {
        let inherit = Monotone { direction: 0, ..*self };
        if self.direction == 0 {
            return (inherit, inherit);
        }
        let (vl, vr) = (self.clamp(node_value(left, criterion)), self.clamp(node_value(right, criterion)));
        let mid = vl / 2.0 + vr / 2.0;
        if self.direction > 0 {
            (Monotone { upper: mid, ..inherit }, Monotone { lower: mid, ..inherit })
        } else {
            (Monotone { lower: mid, ..inherit }, Monotone { upper: mid, ..inherit })
        }
    }
}

impl Default for Monotone {
    fn default() -> Self {
        Monotone::NONE
    }
}

/// The value a node of statistics `stats` stands for, the one monotone
/// constraints order: boosting's Newton leaf `−G/(H+λ)` (before the
/// learning rate), a regression mean, or the share of the second class
/// (the positive class of two; constraints refuse more classes).
#[inline]
pub fn node_value(stats: &[f64], criterion: Criterion) -> f64 {
    let (_, w) = count_weight(stats, criterion);
    match criterion {
        Criterion::Newton { lambda } => {
            let h = stats[2] + lambda;
            if h > 0.0 {
                -stats[1] / h
            } else {
                0.0
            }
        }
        Criterion::Mse | Criterion::Poisson if w > 0.0 => stats[2] / w,
        Criterion::Gini | Criterion::Entropy if w > 0.0 => stats[1] / w,
        _ => 0.0,
    }
}

/// Twice the loss reduction of a Newton leaf at value `v` instead of its
/// optimum, `−(2Gv + (H+λ)v²)`: at `v = −G/(H+λ)` it is `G²/(H+λ)`, the
/// unconstrained score.
#[inline]
fn newton_score_at(stats: &[f64], v: f64, lambda: f64) -> f64 {
    -(2.0 * stats[1] * v + (stats[2] + lambda) * v * v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::criterion::node_score;

    #[test]
    fn the_newton_score_at_the_optimum_is_the_plain_score() {
        let stats = [10.0, -4.0, 3.0];
        let lambda = 1.0;
        let v = node_value(&stats, Criterion::Newton { lambda });
        assert_eq!(v, 1.0);
        let plain = node_score(&stats, Criterion::Newton { lambda });
        assert!((newton_score_at(&stats, v, lambda) - plain).abs() < 1e-12);
        // Any other value scores less.
        assert!(newton_score_at(&stats, 0.5, lambda) < plain);
    }

    #[test]
    fn boosting_refuses_a_split_whose_clamped_values_fall() {
        let newton = Criterion::Newton { lambda: 0.0 };
        // Left value 2, right value 1: a fall.
        let (left, right) = ([5.0, -10.0, 5.0], [5.0, -5.0, 5.0]);
        let up = Monotone { direction: 1, ..Monotone::NONE };
        let score = |s: &[f64]| node_score(s, newton);
        assert!(up.gain(&left, &right, newton, 0.0, score).is_none());
        let down = Monotone { direction: -1, ..Monotone::NONE };
        assert!(down.gain(&left, &right, newton, 0.0, score).is_some());
        // Clamped to [0, 1] both are 1: no fall, and the gain is scored at the clamped values.
        let bounded = Monotone { direction: 1, lower: 0.0, upper: 1.0 };
        let gain = bounded.gain(&left, &right, newton, 0.0, score).unwrap();
        assert_eq!(gain, newton_score_at(&left, 1.0, 0.0) + newton_score_at(&right, 1.0, 0.0));
    }

    #[test]
    fn forests_refuse_values_out_of_order_or_range_on_constrained_features_only() {
        let mse = Criterion::Mse;
        // Means 4 and 6.
        let (left, right) = ([2.0, 2.0, 8.0], [2.0, 2.0, 12.0]);
        let score = |s: &[f64]| node_score(s, mse);
        let up = Monotone { direction: 1, ..Monotone::NONE };
        assert!(up.gain(&left, &right, mse, 0.0, score).is_some());
        assert!(Monotone { direction: -1, ..up }.gain(&left, &right, mse, 0.0, score).is_none());
        assert!(Monotone { upper: 5.0, ..up }.gain(&left, &right, mse, 0.0, score).is_none());
        // An unconstrained feature under a range: a forest does not look.
        let free = Monotone { direction: 0, lower: 5.0, upper: 5.5 };
        assert!(!free.active(mse) && free.active(Criterion::Newton { lambda: 1.0 }));
    }

    #[test]
    fn children_split_the_range_at_the_mean_of_their_values() {
        let mse = Criterion::Mse;
        let (left, right) = ([2.0, 2.0, 8.0], [2.0, 2.0, 12.0]);
        let node = Monotone { direction: 1, lower: 0.0, upper: 10.0 };
        let (l, r) = node.children(&left, &right, mse);
        assert_eq!((l.lower, l.upper, r.lower, r.upper), (0.0, 5.0, 5.0, 10.0));
        let (l, r) = Monotone { direction: -1, ..node }.children(&right, &left, mse);
        assert_eq!((l.lower, l.upper, r.lower, r.upper), (5.0, 10.0, 0.0, 5.0));
        let (l, r) = Monotone { direction: 0, ..node }.children(&left, &right, mse);
        assert_eq!((l, r), (Monotone { direction: 0, ..node }, Monotone { direction: 0, ..node }));
    }
}
