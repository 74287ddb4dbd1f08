//! A node's split and leaf under `criterion=absolute_error` (regression
//! forests; scikit-learn's `criterion="absolute_error"`): the split of least
//! absolute error of the two children around their weighted medians, and
//! the weighted median as the leaf's value (`docs/algorithms.md`, "Split criteria").

use arbor_kernels::{random_split, HistogramTarget, MedianSplit, NodeRows, RandomSplit, SplitCandidate};
use rand::Rng;

use super::{draw_feature, offer, Grower, Pending};

impl<'a, 't, R: Rng + Send> Grower<'a, 't, R> {
    /// The best split of node `p` by absolute error over every feature, or
    /// over `features_per_node` drawn ones (constant ones and those the
    /// node's interaction set forbids do not count), or, for the random
    /// splitter, one random split per drawn feature scored by absolute
    /// error. `None` when the node's own absolute error is within
    /// `impurity_threshold` or no split meets the constraints.
    pub(super) fn best_by_absolute_error(&mut self, p: &Pending) -> Option<(usize, SplitCandidate)> {
        let (matrix, settings) = (self.data.matrix, self.data.settings);
        let &HistogramTarget::Values { y } = self.data.target else {
            unreachable!("absolute error is a regression criterion")
        };
        let rows = &self.rows[p.start..p.end];
        let (node_error, _) = self.buffers.median.rank(rows, y, self.data.weights, self.data.counts);
        let weight = p.stats[1];
        if weight <= 0.0 || node_error / weight <= settings.impurity_threshold.max(f64::EPSILON) {
            return None;
        }
        let n_features = matrix.n_features();
        let mut best: Option<(usize, SplitCandidate)> = None;
        let mut visited = 0;
        for i in 0..n_features {
            if visited >= settings.features_per_node {
                break;
            }
            if !self.data.all_features {
                let Some(rng) = self.rng.as_deref_mut() else {
                    unreachable!("subtrees grown apart scan every feature: they never draw one")
                };
                draw_feature(&mut self.buffers.perm, i, rng);
            }
            let f = if self.data.all_features { i } else { self.buffers.perm[i] };
            if p.limits.as_ref().is_some_and(|limits| !settings.interactions.allows(&limits.path, f)) {
                continue; // not allowed on this path: does not count towards features_per_node
            }
            let mapper = matrix.mapper(f);
            let column = matrix.column(f);
            let candidate = if settings.random_splitter {
                let Some(rng) = self.rng.as_deref_mut() else { unreachable!("the random splitter draws its features") };
                let node =
                    NodeRows { rows, weights: self.data.weights, counts: self.data.counts, target: self.data.target };
                let c = &settings.constraints;
                match random_split(column, mapper, node, settings.criterion, c, &mut || rng.random::<f64>()) {
                    RandomSplit::Constant => continue,
                    // The rule is drawn as for any criterion; its score is the children's absolute error.
                    RandomSplit::Tried(candidate) => candidate.map(|mut s| {
                        s.gain = node_error - self.buffers.median.rule_error(column, &s.rule);
                        s
                    }),
                }
            } else {
                let c = &settings.constraints;
                match self.buffers.median.best_split(column, mapper.n_bins(), mapper.is_categorical(), c) {
                    MedianSplit::Constant => continue,
                    MedianSplit::Tried(candidate) => candidate,
                }
            };
            visited += 1;
            if let Some(mut candidate) = candidate {
                // A split never adds error: a gain below 0 is rounding.
                candidate.gain = candidate.gain.max(0.0);
                offer(&mut best, f, candidate, &mut None, || 0.0);
            }
        }
        best
    }

    /// The weighted median of node `p`'s responses: its leaf value (a node
    /// just searched keeps the median its search found).
    pub(super) fn median(&mut self, p: &Pending) -> f64 {
        let &HistogramTarget::Values { y } = self.data.target else {
            unreachable!("absolute error is a regression criterion")
        };
        let rows = &self.rows[p.start..p.end];
        self.buffers.median.median(rows, y, self.data.weights, self.data.counts)
    }
}
