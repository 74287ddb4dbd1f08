//! The best-split scan over one feature's histogram.

/// Impurity measure of a node (seed 000 "Split Criteria"), or the second-order
/// objective of gradient boosting (seed 004).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Criterion {
    /// Gini index, classification.
    Gini,
    /// Entropy (information gain), classification.
    Entropy,
    /// Mean squared error, regression.
    Mse,
    /// Gradient boosting: a node scores `G² / (H + lambda)` (seed 004).
    Newton {
        /// L2 regularization of leaf weights.
        lambda: f64,
    },
}

/// Observations' worth of the node's mean response added to each category's
/// when categories are ordered for a subset split (LightGBM's `cat_smooth`).
pub const CATEGORY_SMOOTHING: f64 = 10.0;

/// Degrees of freedom of a subset split that are not charged for (see
/// [`SplitConstraints::category_charge`]): a threshold searched over a
/// numeric feature's bins picks the largest of many correlated gains, and
/// on noise that is worth about as many degrees as a subset of six
/// categories; smaller categorical features are never charged.
pub const UNCHARGED_DEGREES: usize = 5;

/// Limits a split must respect (seed 000 "Termination Criteria").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitConstraints {
    /// Fewest observations (bootstrap multiplicities count) in each child.
    pub min_samples_leaf: f64,
    /// Least total weight (hessian, for boosting) in each child.
    pub min_weight_leaf: f64,
    /// Least size of a category in the node (as [`child_size`] measures it:
    /// weight, or rows for boosting) for it to be ordered on its own in a
    /// subset split; smaller ones are pooled and move as one (1: none pooled).
    pub min_samples_category: f64,
    /// Gain charged against a subset split for each degree of freedom it
    /// used beyond [`UNCHARGED_DEGREES`] (`k` categories ordered: `k − 1`),
    /// so that a feature of many categories wins a node on signal, not on
    /// the many subsets it could choose from (0: no charge). Forests set it
    /// per node: `category_penalty` times the gain noise shows per degree.
    pub category_charge: f64,
}

impl Default for SplitConstraints {
    fn default() -> Self {
        SplitConstraints {
            min_samples_leaf: 1.0,
            min_weight_leaf: 0.0,
            min_samples_category: 1.0,
            category_charge: 0.0,
        }
    }
}

/// Which rows a split sends to the left child.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitRule {
    /// Value bins `1..=bin` go left; the missing bin goes left when `missing_left`.
    Threshold {
        /// Last value bin of the left child.
        bin: u16,
        /// Where missing values go.
        missing_left: bool,
    },
    /// Bins `b` with `goes_left[b]` go left (bin 0, missing, included).
    Categories {
        /// One flag per bin of the feature.
        goes_left: Vec<bool>,
    },
}

impl SplitRule {
    /// Maps a rule found on a [`crate::CompactHistogram`] (whose compact bin
    /// `i` is real bin `bins[i]`) to the feature's `n_bins` real bins. Bins
    /// absent from the node split as the dense scan splits them: halfway
    /// between the children for thresholds, with the larger child
    /// (`unseen_left`) for categories.
    pub fn expand(&self, bins: &[u16], n_bins: usize, unseen_left: bool) -> SplitRule {
        match self {
            SplitRule::Threshold { bin, missing_left } => {
                let i = *bin as usize;
                // In u32: two bins near 65,535 (exact splits) would overflow u16.
                let real = match bins.get(i + 1) {
                    Some(&next) => ((u32::from(bins[i]) + u32::from(next)) / 2) as u16,
                    None => bins[i],
                };
                SplitRule::Threshold { bin: real, missing_left: *missing_left }
            }
            SplitRule::Categories { goes_left } => {
                let mut real = vec![unseen_left; n_bins];
                for (i, &b) in bins.iter().enumerate() {
                    real[b as usize] = goes_left[i];
                }
                SplitRule::Categories { goes_left: real }
            }
        }
    }

    /// One flag per bin: does a row in that bin go left?
    pub fn goes_left(&self, n_bins: usize) -> Vec<bool> {
        match self {
            SplitRule::Threshold { bin, missing_left } => {
                (0..n_bins).map(|b| if b == 0 { *missing_left } else { b <= *bin as usize }).collect()
            }
            SplitRule::Categories { goes_left } => goes_left.clone(),
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
    /// for boosting, twice the loss reduction of seed 004 before `gamma`.
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

/// Count and weight of a statistics vector (histogram-bin layout): for
/// classes `[w_0 .. w_{C-1}, count]`, for values `[count, w, Σwy]`, for
/// gradients `[count, G, H]` (the hessian is the weight).
#[inline(always)]
pub fn count_weight(stats: &[f64], criterion: Criterion) -> (f64, f64) {
    match criterion {
        Criterion::Mse => (stats[0], stats[1]),
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
        Criterion::Mse | Criterion::Newton { .. } => stats[0],
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
#[inline]
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
    right: B,
    best_gain: f64,
    best_left: B,
    found: bool,
}

impl<'a, B: StatBuf> Scan<'a, B> {
    pub(crate) fn new(criterion: Criterion, constraints: &'a SplitConstraints, total: &[f64]) -> Self {
        Self::above(criterion, constraints, total, f64::NEG_INFINITY)
    }

    /// A scan that finds only gains above `floor`.
    pub(crate) fn above(criterion: Criterion, constraints: &'a SplitConstraints, total: &[f64], floor: f64) -> Self {
        Scan {
            criterion,
            constraints,
            parent_score: node_score(total, criterion),
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
        let gain = node_score(left, self.criterion) + node_score(right, self.criterion) - self.parent_score;
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

/// Number of bins that hold at least one row: a feature with fewer than two
/// is constant in the node and cannot split it.
pub fn occupied_bins(hist: &[f64], stride: usize, criterion: Criterion) -> usize {
    hist.chunks_exact(stride).filter(|b| count(b, criterion) > 0.0).count()
}

/// Finds the best split of one feature from its histogram (`n_bins * stride`
/// values, bin 0 the missing bin), or `None` when no split meets the constraints.
///
/// Numeric features try every threshold between occupied bins with missing
/// values on either side. Categorical features sort their categories by the
/// response (mean value, share of the node's majority class, or `G/H` for
/// boosting) and try every prefix of that order, which finds the best subset
/// exactly for regression and two classes (Breiman's theorem) and a good one
/// otherwise. Categories smaller than `min_samples_category` in the node are
/// pooled and sorted as one category. A subset split of more than six
/// categories carries a charge ([`SplitConstraints::category_charge`]).
pub fn best_split(
    hist: &[f64],
    stride: usize,
    criterion: Criterion,
    constraints: &SplitConstraints,
    categorical: bool,
) -> Option<SplitCandidate> {
    best_split_above(hist, stride, criterion, constraints, categorical, f64::NEG_INFINITY)
}

/// [`best_split`] when only a gain above `floor` could matter (the merit of
/// the best split a node has found so far: a candidate's merit is at most
/// its gain): `None` for the others, which are then never built (no rule
/// listed, no categories' flags allocated, nothing moved). A split it
/// returns is [`best_split`]'s.
pub fn best_split_above(
    hist: &[f64],
    stride: usize,
    criterion: Criterion,
    constraints: &SplitConstraints,
    categorical: bool,
    floor: f64,
) -> Option<SplitCandidate> {
    crate::dispatch::run(SplitKernel { hist, stride, criterion, constraints, categorical, floor })
}

struct SplitKernel<'a> {
    hist: &'a [f64],
    stride: usize,
    criterion: Criterion,
    constraints: &'a SplitConstraints,
    categorical: bool,
    floor: f64,
}

impl pulp::WithSimd for SplitKernel<'_> {
    type Output = Option<SplitCandidate>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Option<SplitCandidate> {
        // The common strides get fixed-size statistics: regression and
        // boosting (3), two or three classes (3, 4). Two classes under Gini,
        // forests' default, get a scan of their own with the criterion a
        // constant the compiler folds into the loop.
        match (self.stride, self.criterion) {
            (3, Criterion::Gini) => SplitKernel { criterion: Criterion::Gini, ..self }.scan::<[f64; 3]>(),
            (3, _) => self.scan::<[f64; 3]>(),
            (4, _) => self.scan::<[f64; 4]>(),
            _ => self.scan::<Vec<f64>>(),
        }
    }
}

impl SplitKernel<'_> {
    /// The scan itself, on statistics held in `B`.
    #[inline(always)]
    fn scan<B: StatBuf>(self) -> Option<SplitCandidate> {
        let SplitKernel { hist, stride, criterion, constraints, categorical, floor } = self;
        let stride = B::stride(stride);
        let n_bins = hist.len() / stride;
        let mut total = B::zeros(stride);
        for bin in hist.chunks_exact(stride) {
            add(total.as_mut(), bin);
        }
        let bin = |b: usize| &hist[b * stride..(b + 1) * stride];
        let occupied = |b: usize| count(bin(b), criterion) > 0.0;
        let total = total.as_ref();
        let mut scan = Scan::<B>::above(criterion, constraints, total, floor);
        if categorical {
            let key_class = match criterion {
                Criterion::Gini | Criterion::Entropy => {
                    (0..stride - 1).fold(0, |best, c| if total[c] > total[best] { c } else { best })
                }
                _ => 0,
            };
            // Each category's response, smoothed towards the node's by CATEGORY_SMOOTHING
            // observations' worth: a category seen a few times in the node sorts near
            // the middle instead of at an end, where its noise would pick the split.
            let (_, total_weight) = count_weight(total, criterion);
            let node_mean = match criterion {
                _ if total_weight <= 0.0 => 0.0,
                Criterion::Mse => total[2] / total_weight,
                Criterion::Newton { .. } => 0.0,
                Criterion::Gini | Criterion::Entropy => total[key_class] / total_weight,
            };
            let key = |s: &[f64]| {
                let (_, w) = count_weight(s, criterion);
                let (num, den) = match criterion {
                    Criterion::Mse => (s[2], w),
                    Criterion::Newton { lambda } => (s[1], w + lambda),
                    Criterion::Gini | Criterion::Entropy => (s[key_class], w),
                };
                (num + CATEGORY_SMOOTHING * node_mean) / (den + CATEGORY_SMOOTHING)
            };
            // Categories smaller than `min_samples_category` in the node
            // are pooled and ordered as one (index `n_bins`), so that the noise
            // of a rare category's response cannot pick the split.
            let pool = n_bins;
            let mut rare = B::zeros(stride);
            let mut pooled = Vec::new();
            let mut order: Vec<(f64, usize)> = Vec::new();
            for b in (0..n_bins).filter(|&b| occupied(b)) {
                if child_size(bin(b), criterion) >= constraints.min_samples_category {
                    order.push((key(bin(b)), b));
                } else {
                    add(rare.as_mut(), bin(b));
                    pooled.push(b);
                }
            }
            if !pooled.is_empty() {
                order.push((key(rare.as_ref()), pool));
            }
            if order.len() < 2 {
                return None;
            }
            order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let stats = |item: usize| if item == pool { rare.as_ref() } else { bin(item) };
            let mut left = B::zeros(stride);
            let mut best_len = 0;
            for (i, &(_, item)) in order[..order.len() - 1].iter().enumerate() {
                add(left.as_mut(), stats(item));
                if scan.consider(left.as_ref(), total) {
                    best_len = i + 1;
                }
            }
            if !scan.found {
                return None;
            }
            // Categories absent from this node (and unseen ones) follow the larger child.
            let nl = child_size(scan.best_left.as_ref(), criterion);
            let unseen_left = nl >= child_size(total, criterion) - nl;
            let mut goes_left = vec![unseen_left; n_bins];
            for (i, &(_, item)) in order.iter().enumerate() {
                if item == pool {
                    pooled.iter().for_each(|&b| goes_left[b] = i < best_len);
                } else {
                    goes_left[item] = i < best_len;
                }
            }
            let charged = (order.len() - 1).saturating_sub(UNCHARGED_DEGREES);
            let charge = constraints.category_charge * charged as f64;
            scan.finish(SplitRule::Categories { goes_left }, total).map(|s| SplitCandidate { charge, ..s })
        } else {
            let has_missing = occupied(0);
            let mut left = B::zeros(stride);
            let mut left_with_missing = B::zeros(stride);
            left_with_missing.as_mut().copy_from_slice(bin(0));
            let mut best_rule = None;
            for b in 1..n_bins {
                if !occupied(b) {
                    continue;
                }
                let stats = bin(b);
                add(left.as_mut(), stats);
                if scan.consider(left.as_ref(), total) {
                    best_rule = Some((b, false));
                }
                if has_missing {
                    add(left_with_missing.as_mut(), stats);
                    if scan.consider(left_with_missing.as_ref(), total) {
                        best_rule = Some((b, true));
                    }
                }
            }
            let (b, missing_left) = best_rule?;
            // Bins empty in this node between the left child's last bin and the
            // right child's first are split half and half, as CART puts its
            // threshold midway between observed values.
            let b = match (b + 1..n_bins).find(|&nb| occupied(nb)) {
                Some(next) => (b + next) / 2,
                None => b,
            };
            // With no missing values in the node, they follow the larger child at prediction.
            let missing_left = if has_missing {
                missing_left
            } else {
                let nl = child_size(scan.best_left.as_ref(), criterion);
                nl >= child_size(total, criterion) - nl
            };
            scan.finish(SplitRule::Threshold { bin: b as u16, missing_left }, total)
        }
    }
}

#[inline(always)]
pub(crate) fn add(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: every threshold and missing side, gains from impurities as seed 000 defines them.
    fn gini(stats: &[f64]) -> f64 {
        let w: f64 = stats[..stats.len() - 1].iter().sum();
        1.0 - stats[..stats.len() - 1].iter().map(|c| (c / w).powi(2)).sum::<f64>()
    }

    #[test]
    fn threshold_gain_is_weighted_impurity_decrease() {
        // bins: missing, 1, 2, 3; two classes + count
        let hist = [1.0, 0.0, 1.0, 3.0, 1.0, 4.0, 0.0, 1.0, 1.0, 0.0, 4.0, 4.0];
        let s = best_split(&hist, 3, Criterion::Gini, &SplitConstraints::default(), false).unwrap();
        let (l, r) = (&s.left, &s.right);
        let total = [4.0, 6.0, 10.0];
        let expected = 10.0 * gini(&total) - l[2] * gini(l) - r[2] * gini(r);
        assert!((s.gain - expected).abs() < 1e-12);
        // best: {missing, bin 1} (4 of class 0, 1 of class 1) vs {2, 3} (0 vs 5)
        assert_eq!(s.rule, SplitRule::Threshold { bin: 1, missing_left: true });
    }

    #[test]
    fn thresholds_fall_midway_across_empty_bins() {
        // bins 1 and 2 hold class 0, bins 3-6 are empty here, bin 7 holds class 1
        let mut hist = vec![0.0; 8 * 3];
        hist[3..6].copy_from_slice(&[2.0, 0.0, 2.0]);
        hist[6..9].copy_from_slice(&[2.0, 0.0, 2.0]);
        hist[21..24].copy_from_slice(&[0.0, 3.0, 3.0]);
        let s = best_split(&hist, 3, Criterion::Gini, &SplitConstraints::default(), false).unwrap();
        assert_eq!(s.rule, SplitRule::Threshold { bin: 4, missing_left: true });
        assert_eq!((s.left[2], s.right[2]), (4.0, 3.0));
    }

    #[test]
    fn expanding_a_rule_between_high_bins_does_not_overflow() {
        let rule = SplitRule::Threshold { bin: 1, missing_left: false };
        let expanded = rule.expand(&[0, 65_000, 65_535], 65_536, false);
        assert_eq!(expanded, SplitRule::Threshold { bin: 65_267, missing_left: false });
    }

    #[test]
    fn min_samples_leaf_is_respected() {
        let hist = [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 9.0, 9.0];
        let c = SplitConstraints { min_samples_leaf: 2.0, ..SplitConstraints::default() };
        assert!(best_split(&hist, 3, Criterion::Gini, &c, false).is_none());
    }

    #[test]
    fn categories_are_grouped_by_response() {
        // regression: bins 1 and 3 have mean 10, bins 2 and 4 mean 0
        let mut hist = vec![0.0; 5 * 3];
        for (b, mean) in [(1, 10.0), (2, 0.0), (3, 10.0), (4, 0.0)] {
            hist[b * 3..b * 3 + 3].copy_from_slice(&[2.0, 2.0, 2.0 * mean]);
        }
        let s = best_split(&hist, 3, Criterion::Mse, &SplitConstraints::default(), true).unwrap();
        let SplitRule::Categories { goes_left } = s.rule else { panic!("categorical rule expected") };
        assert_eq!(goes_left[1], goes_left[3]);
        assert_eq!(goes_left[2], goes_left[4]);
        assert_ne!(goes_left[1], goes_left[2]);
        assert!((s.gain - 200.0).abs() < 1e-9, "the SSE falls from 200 to 0: {}", s.gain);
    }

    /// Regression histogram: one `(rows, mean)` per bin, bin 0 (missing) empty.
    fn regression_hist(bins: &[(f64, f64)]) -> Vec<f64> {
        let mut hist = vec![0.0; 3];
        for &(n, mean) in bins {
            hist.extend([n, n, n * mean]);
        }
        hist
    }

    #[test]
    fn rare_categories_are_pooled_and_move_together() {
        // Two large categories of mean 0 and 10, and two of 3 rows with means
        // 10 and 0: alone, each rare one joins the side of its own mean.
        let hist = regression_hist(&[(50.0, 0.0), (50.0, 10.0), (3.0, 10.0), (3.0, 0.0)]);
        let alone = best_split(&hist, 3, Criterion::Mse, &SplitConstraints::default(), true).unwrap();
        let SplitRule::Categories { goes_left } = alone.rule else { panic!("categorical rule expected") };
        assert_eq!((goes_left[1] == goes_left[3], goes_left[1] == goes_left[4]), (false, true));
        // Pooled, the two rare ones (mean 5) go one way together.
        let pooled = SplitConstraints { min_samples_category: 4.0, ..SplitConstraints::default() };
        let s = best_split(&hist, 3, Criterion::Mse, &pooled, true).unwrap();
        let SplitRule::Categories { goes_left } = s.rule else { panic!("categorical rule expected") };
        assert_eq!(goes_left[3], goes_left[4]);
        assert_ne!(goes_left[1], goes_left[2]);
        assert!(s.gain < alone.gain, "pooling gives up the rare categories' fit");
        // A node whose categories are all rare has nothing to order.
        let all_rare = SplitConstraints { min_samples_category: 51.0, ..SplitConstraints::default() };
        assert!(best_split(&hist, 3, Criterion::Mse, &all_rare, true).is_none());
    }

    #[test]
    fn subset_splits_of_many_categories_are_charged_per_degree() {
        // Twelve categories alternating between means 0 and 10, then six.
        let twelve: Vec<(f64, f64)> = (0..12).map(|c| (20.0, if c % 2 == 0 { 0.0 } else { 10.0 })).collect();
        let charged = SplitConstraints { category_charge: 3.0, ..SplitConstraints::default() };
        let free =
            best_split(&regression_hist(&twelve), 3, Criterion::Mse, &SplitConstraints::default(), true).unwrap();
        let s = best_split(&regression_hist(&twelve), 3, Criterion::Mse, &charged, true).unwrap();
        // The same split and gain; eleven degrees of freedom, five of them free.
        assert_eq!((s.rule.clone(), s.gain), (free.rule, free.gain));
        assert_eq!((free.charge, s.charge), (0.0, 3.0 * 6.0));
        assert_eq!(s.merit(), s.gain - 18.0);
        // Six categories use five degrees: no charge.
        let s = best_split(&regression_hist(&twelve[..6]), 3, Criterion::Mse, &charged, true).unwrap();
        assert_eq!(s.charge, 0.0);
        // Pooled categories count once: eight of twelve pooled leave five.
        let pooled = SplitConstraints { min_samples_category: 21.0, ..charged };
        let mut hist = twelve.clone();
        hist[..4].iter_mut().for_each(|c| c.0 = 30.0);
        let s = best_split(&regression_hist(&hist), 3, Criterion::Mse, &pooled, true).unwrap();
        assert_eq!(s.charge, 0.0);
        // Thresholds are never charged.
        let s = best_split(&regression_hist(&twelve), 3, Criterion::Mse, &charged, false).unwrap();
        assert_eq!(s.charge, 0.0);
    }

    proptest::proptest! {
        /// Each child's statistics are the sum of the bins its rule sends its
        /// way, pooled categories included.
        #[test]
        fn pooled_children_hold_the_bins_their_rule_sends(
            cells in proptest::collection::vec((0u8..12, 0u8..12), 2..32),
            min_rows in 0u8..15,
        ) {
            let hist: Vec<f64> =
                cells.iter().flat_map(|&(a, b)| [f64::from(a), f64::from(b), f64::from(a) + f64::from(b)]).collect();
            let c = SplitConstraints { min_samples_category: f64::from(min_rows), ..SplitConstraints::default() };
            if let Some(s) = best_split(&hist, 3, Criterion::Gini, &c, true) {
                let SplitRule::Categories { goes_left } = &s.rule else { panic!("categorical rule expected") };
                let mut left = [0.0; 3];
                for (stats, _) in hist.chunks_exact(3).zip(goes_left).filter(|(_, &l)| l) {
                    add(&mut left, stats);
                }
                proptest::prop_assert_eq!(left.as_slice(), s.left.as_slice());
            }
        }
    }
}
