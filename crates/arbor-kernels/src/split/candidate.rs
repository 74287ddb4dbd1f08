//! A split found on one feature, and the limits a split must respect.

use crate::split::monotone::Monotone;
use crate::split::rule::SplitRule;

/// Degrees of freedom of a subset split that are not charged for (see
/// [`SplitConstraints::category_charge`]): a threshold searched over a
/// numeric feature's bins picks the largest of many correlated gains, and
/// on noise that is worth about as many degrees as a subset of six
/// categories; smaller categorical features are never charged.
pub const UNCHARGED_DEGREES: usize = 5;

/// Limits a split must respect (docs/algorithms.md, "Termination criteria").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitConstraints {
    /// Fewest observations (bootstrap multiplicities count) in each child.
    pub min_samples_leaf: f64,
    /// Least total weight (hessian, for boosting) in each child.
    pub min_weight_leaf: f64,
    /// Least size of a category in the node (as [`child_size`](crate::child_size) measures it:
    /// weight, or rows for boosting) for it to be ordered on its own in a
    /// subset split; smaller ones are pooled and move as one (1: none pooled).
    pub min_samples_category: f64,
    /// Gain charged against a subset split for each degree of freedom it
    /// used beyond [`UNCHARGED_DEGREES`] (`k` categories ordered: `k − 1`),
    /// so that a feature of many categories wins a node on signal, not on
    /// the many subsets it could choose from (0: no charge). Forests set it
    /// per node: `category_penalty` times the gain noise shows per degree.
    pub category_charge: f64,
    /// The searched feature's monotone constraint and the node's range of
    /// values ([`Monotone::NONE`]: none).
    pub monotone: Monotone,
}

impl Default for SplitConstraints {
    fn default() -> Self {
        SplitConstraints {
            min_samples_leaf: 1.0,
            min_weight_leaf: 0.0,
            min_samples_category: 1.0,
            category_charge: 0.0,
            monotone: Monotone::NONE,
        }
    }
}

/// Statistics in histogram-bin layout, held inline up to four values: a node
/// or child of two or three classes, regression or boosting allocates nothing.
pub type Stats = smallvec::SmallVec<[f64; 4]>;

/// The best split found on one feature.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitCandidate {
    /// Impurity decrease times the node's weight, `W·i(t) − W_L·i(t_L) − W_R·i(t_R)`;
    /// for boosting, twice the loss reduction before `gamma` (docs/algorithms.md, "Gradient boosting").
    pub gain: f64,
    /// Which rows go left.
    pub rule: SplitRule,
    /// Statistics of the left child (same layout as a histogram bin).
    pub left: Stats,
    /// Statistics of the right child.
    pub right: Stats,
    /// Gain charged for the subsets a categorical split chose among
    /// ([`SplitConstraints::category_charge`]); 0 for thresholds.
    pub charge: f64,
}

impl SplitCandidate {
    /// What the split competes with: its gain less its charge.
    #[inline]
    pub fn merit(&self) -> f64 {
        self.gain - self.charge
    }
}
