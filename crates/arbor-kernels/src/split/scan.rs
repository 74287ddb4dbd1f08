//! The running best of a split scan over candidate left children, shared by
//! the best and the random splitter.

use crate::split::candidate::{SplitCandidate, SplitConstraints, Stats};
use crate::split::criterion::{count_weight, node_score, Criterion};
use crate::split::monotone::Monotone;
use crate::split::rule::SplitRule;

/// A node's statistics in histogram-bin layout, held in a fixed-size array
/// when the stride is known at compile time (no allocation, unrolled loops)
/// or in a vector otherwise.
pub(crate) trait StatBuf: AsRef<[f64]> + AsMut<[f64]> {
    /// The stride this buffer type holds, given the histogram's.
    fn stride(stride: usize) -> usize;
    /// All zeros, `stride` values.
    fn zeros(stride: usize) -> Self;
}

impl<const N: usize> StatBuf for [f64; N] {
    #[inline(always)]
    fn stride(_: usize) -> usize {
        N
    }
    #[inline(always)]
    fn zeros(_: usize) -> Self {
        [0.0; N]
    }
}

impl StatBuf for Vec<f64> {
    #[inline(always)]
    fn stride(stride: usize) -> usize {
        stride
    }
    fn zeros(stride: usize) -> Self {
        vec![0.0; stride]
    }
}

/// The running best of a scan, with its buffers, so that trying a candidate
/// allocates nothing.
pub(crate) struct Scan<'a, B: StatBuf = Vec<f64>> {
    criterion: Criterion,
    constraints: &'a SplitConstraints,
    parent_score: f64,
    /// The feature's monotone constraint and the node's range, when the
    /// scan must weigh child values ([`Monotone::active`]).
    monotone: Option<Monotone>,
    right: B,
    best_gain: f64,
    pub(crate) best_left: B,
    pub(crate) found: bool,
}

impl<'a, B: StatBuf> Scan<'a, B> {
    pub(crate) fn new(criterion: Criterion, constraints: &'a SplitConstraints, total: &[f64]) -> Self {
        Self::above(criterion, constraints, total, f64::NEG_INFINITY)
    }

    /// A scan that finds only gains above `floor`.
    pub(crate) fn above(criterion: Criterion, constraints: &'a SplitConstraints, total: &[f64], floor: f64) -> Self {
        let monotone = Some(constraints.monotone).filter(|m| m.active(criterion));
        let plain = node_score(total, criterion);
        Scan {
            criterion,
            constraints,
            parent_score: monotone.map_or(plain, |m| m.parent_score(total, criterion, plain)),
            monotone,
            right: B::zeros(total.len()),
            best_gain: floor,
            best_left: B::zeros(total.len()),
            found: false,
        }
    }

    /// Considers a left child with `left` statistics (the right is `total − left`);
    /// returns true when it is the best so far.
    #[inline(always)]
    pub(crate) fn consider(&mut self, left: &[f64], total: &[f64]) -> bool {
        for ((r, t), l) in self.right.as_mut().iter_mut().zip(total).zip(left) {
            *r = t - l;
        }
        let right = self.right.as_ref();
        let (nl, wl) = count_weight(left, self.criterion);
        let (nr, wr) = count_weight(right, self.criterion);
        let c = self.constraints;
        if nl < c.min_samples_leaf || nr < c.min_samples_leaf || wl < c.min_weight_leaf || wr < c.min_weight_leaf {
            return false;
        }
        if nl <= 0.0 || nr <= 0.0 {
            return false;
        }
        let criterion = self.criterion;
        let gain = match &self.monotone {
            None => node_score(left, criterion) + node_score(right, criterion) - self.parent_score,
            Some(m) => match m.gain(left, right, criterion, self.parent_score, |s| node_score(s, criterion)) {
                Some(gain) => gain,
                None => return false,
            },
        };
        if gain > self.best_gain {
            self.best_gain = gain;
            self.best_left.as_mut().copy_from_slice(left);
            self.found = true;
            true
        } else {
            false
        }
    }

    /// The best split's gain and children, once a rule is known.
    pub(crate) fn finish(self, rule: SplitRule, total: &[f64]) -> Option<SplitCandidate> {
        if !self.found {
            return None;
        }
        let left = Stats::from_slice(self.best_left.as_ref());
        let right = total.iter().zip(&left).map(|(t, l)| t - l).collect();
        Some(SplitCandidate { gain: self.best_gain, rule, left, right, charge: 0.0 })
    }
}

#[inline(always)]
pub(crate) fn add(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}
