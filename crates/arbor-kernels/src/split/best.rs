//! The best-split scan over one feature's histogram: every threshold, or
//! every prefix of the categories ordered by response.

use crate::split::candidate::{SplitCandidate, SplitConstraints, UNCHARGED_DEGREES};
use crate::split::criterion::{child_size, count, count_weight, Criterion};
use crate::split::rule::SplitRule;
use crate::split::scan::{add, Scan, StatBuf};
use crate::split::threshold_lanes::{best_threshold_lanes, lanes_for};

/// Histograms of fewer bins (forests' small nodes list only the bins they
/// occupy) are scanned one threshold at a time: with a few bins the lanes'
/// fixed cost outweighs the divisions they save. Lanes from 8 bins trained
/// no forest of the bundled sets faster than lanes from 64, and digits'
/// boosting (features of 17 bins) 4% slower (`docs/performance.md`,
/// "Round three (issue 57): forests' small nodes (project 3)").
const LANES_FROM_BINS: usize = 64;

/// Observations' worth of the node's mean response added to each category's
/// when categories are ordered for a subset split (LightGBM's `cat_smooth`).
pub const CATEGORY_SMOOTHING: f64 = 10.0;

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
    crate::dispatch::run(SplitKernel { hist, stride, criterion, constraints, categorical, floor, lanes: true })
}

/// [`best_split_above`] by the plain scan alone, never in lanes: the
/// definition the lanes are tested against, and what the benches compare
/// them with. Not for use: [`best_split_above`] finds the same split.
#[doc(hidden)]
pub fn best_split_plain(
    hist: &[f64],
    stride: usize,
    criterion: Criterion,
    constraints: &SplitConstraints,
    categorical: bool,
    floor: f64,
) -> Option<SplitCandidate> {
    crate::dispatch::run(SplitKernel { hist, stride, criterion, constraints, categorical, floor, lanes: false })
}

struct SplitKernel<'a> {
    hist: &'a [f64],
    stride: usize,
    criterion: Criterion,
    constraints: &'a SplitConstraints,
    categorical: bool,
    floor: f64,
    /// Whether a threshold scan the lanes can score goes to them.
    lanes: bool,
}

impl pulp::WithSimd for SplitKernel<'_> {
    type Output = Option<SplitCandidate>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Option<SplitCandidate> {
        // The common strides get fixed-size statistics: regression and
        // boosting (3), two or three classes (3, 4). Two classes under Gini,
        // forests' default, get a scan of their own with the criterion a
        // constant the compiler folds into the loop. Thresholds of three
        // values go to the lanes, unless a monotone constraint weighs the
        // children's values.
        let dense_thresholds = self.lanes
            && self.stride == 3
            && !self.categorical
            && self.hist.len() >= 3 * LANES_FROM_BINS
            && !self.constraints.monotone.active(self.criterion);
        if let Some(lanes) = lanes_for(self.criterion).filter(|_| dense_thresholds) {
            return best_threshold_lanes(simd, self.hist, lanes, self.constraints, self.floor);
        }
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
        let SplitKernel { hist, stride, criterion, constraints, categorical, floor, .. } = self;
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
                Criterion::Mse | Criterion::Poisson => total[2] / total_weight,
                Criterion::Newton { .. } => 0.0,
                Criterion::Gini | Criterion::Entropy => total[key_class] / total_weight,
            };
            let key = |s: &[f64]| {
                let (_, w) = count_weight(s, criterion);
                let (num, den) = match criterion {
                    Criterion::Mse | Criterion::Poisson => (s[2], w),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: every threshold and missing side, gains from impurities as (docs/algorithms.md, "Split criteria") defines them.
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

    /// Poisson: the gain is the fall in half the Poisson deviance
    /// `Σ y·ln(y/μ) − y + μ`, and no child of zero counts is made.
    #[test]
    fn poisson_gain_is_the_fall_in_half_the_deviance() {
        let bins = [(3.0, 0.0), (4.0, 1.0), (5.0, 3.0), (2.0, 6.0)];
        let half_deviance = |part: &[(f64, f64)]| {
            let (n, s) = part.iter().fold((0.0, 0.0), |(n, s), &(k, y)| (n + k, s + k * y));
            let mu = s / n;
            part.iter().map(|&(k, y)| k * (if y > 0.0 { y * (y / mu).ln() } else { 0.0 } - y + mu)).sum::<f64>()
        };
        let split = best_split(&regression_hist(&bins), 3, Criterion::Poisson, &SplitConstraints::default(), false);
        let s = split.unwrap();
        let SplitRule::Threshold { bin, .. } = s.rule else { panic!("a threshold") };
        let (left, right) = bins.split_at(bin as usize);
        let expected = half_deviance(&bins) - half_deviance(left) - half_deviance(right);
        assert!((s.gain - expected).abs() < 1e-9, "gain {} against {expected}", s.gain);
        // Bin 1 alone (all zeros) would be the best squared-error split's left child; never Poisson's.
        assert!(s.left[2] > 0.0 && s.right[2] > 0.0);
        let zeros_alone = regression_hist(&[(50.0, 0.0), (1.0, 5.0)]);
        assert!(best_split(&zeros_alone, 3, Criterion::Poisson, &SplitConstraints::default(), false).is_none());
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

    /// Weighted Gini decrease of a partition, `W·i(t) − W_L·i(t_L) − W_R·i(t_R)`
    /// (two classes and a count per bin), straight from the definition.
    fn gini_gain(total: &[f64], left: &[f64]) -> f64 {
        let right: Vec<f64> = total.iter().zip(left).map(|(t, l)| t - l).collect();
        total[2] * gini(total) - left[2] * gini(left) - right[2] * gini(&right)
    }

    /// A two-class histogram (class weights and count per bin) from cells of rows.
    fn two_class_hist(cells: &[(u8, u8)]) -> Vec<f64> {
        cells.iter().flat_map(|&(a, b)| [f64::from(a), f64::from(b), f64::from(a) + f64::from(b)]).collect()
    }

    /// The sum of the bins `chosen` picks.
    fn sum_of(hist: &[f64], chosen: impl Fn(usize) -> bool) -> Vec<f64> {
        let mut sum = vec![0.0; 3];
        hist.chunks_exact(3).enumerate().filter(|&(b, _)| chosen(b)).for_each(|(_, stats)| add(&mut sum, stats));
        sum
    }

    proptest::proptest! {
        /// A categorical split against brute force over every partition of the
        /// units the search orders (each category of at least `min_rows`, and
        /// the pool of the smaller ones): a split exactly when there are two
        /// units or more; each child holds the bins the rule sends its way,
        /// pooled categories together; the gain is the Gini decrease of those
        /// children, and no partition beats it by more than the order by
        /// smoothed response can miss.
        #[test]
        fn categorical_splits_against_brute_force(
            cells in proptest::collection::vec((0u8..12, 0u8..12), 2..12),
            min_rows in 0u8..15,
        ) {
            let hist = two_class_hist(&cells);
            let c = SplitConstraints { min_samples_category: f64::from(min_rows), ..SplitConstraints::default() };
            let total = sum_of(&hist, |_| true);
            let occupied: Vec<usize> = (0..cells.len()).filter(|&b| hist[b * 3 + 2] > 0.0).collect();
            let (big, small): (Vec<usize>, Vec<usize>) =
                occupied.iter().partition(|&&b| hist[b * 3 + 2] >= f64::from(min_rows));
            let mut units: Vec<Vec<usize>> = big.iter().map(|&b| vec![b]).collect();
            if !small.is_empty() {
                units.push(small.clone());
            }
            let found = best_split(&hist, 3, Criterion::Gini, &c, true);
            proptest::prop_assert_eq!(found.is_some(), units.len() >= 2, "{} units", units.len());
            let Some(s) = found else { return Ok(()) };
            let SplitRule::Categories { goes_left } = &s.rule else { panic!("categorical rule expected") };
            let left = sum_of(&hist, |b| goes_left[b]);
            let right = sum_of(&hist, |b| !goes_left[b]);
            proptest::prop_assert_eq!(left.as_slice(), s.left.as_slice());
            proptest::prop_assert_eq!(right.as_slice(), s.right.as_slice());
            proptest::prop_assert!(left[2] > 0.0 && right[2] > 0.0);
            proptest::prop_assert!(small.iter().all(|&b| goes_left[b] == goes_left[small[0]]), "the pool moves as one");
            let gain = gini_gain(&total, &left);
            proptest::prop_assert!((s.gain - gain).abs() <= 1e-9 * total[2], "{} against {}", s.gain, gain);
            // Every partition of the units with both sides occupied (the last unit kept right).
            let mut best = f64::NEG_INFINITY;
            for mask in 1u32..(1 << (units.len() - 1)) {
                let on_left = |b: usize| units.iter().enumerate().any(|(u, bins)| mask & (1 << u) != 0 && bins.contains(&b));
                best = best.max(gini_gain(&total, &sum_of(&hist, on_left)));
            }
            proptest::prop_assert!(s.gain <= best + 1e-9 * total[2], "{} above the best partition {}", s.gain, best);
            // Two units have one partition: the search must find it.
            if units.len() == 2 {
                proptest::prop_assert!((s.gain - best).abs() <= 1e-9 * total[2]);
            }
        }

        /// A numeric split is the best of every threshold with missing values
        /// on either side, by brute force, and each child holds the bins the
        /// rule sends its way; a split exists exactly when two bins hold rows.
        #[test]
        fn threshold_splits_against_brute_force(cells in proptest::collection::vec((0u8..6, 0u8..6), 2..14)) {
            let hist = two_class_hist(&cells);
            let total = sum_of(&hist, |_| true);
            let occupied = |b: usize| hist[b * 3 + 2] > 0.0;
            let mut best = f64::NEG_INFINITY;
            for t in 1..cells.len() {
                for missing_left in [false, true] {
                    let left = sum_of(&hist, |b| if b == 0 { missing_left } else { b <= t });
                    if left[2] > 0.0 && left[2] < total[2] {
                        best = best.max(gini_gain(&total, &left));
                    }
                }
            }
            let found = best_split(&hist, 3, Criterion::Gini, &SplitConstraints::default(), false);
            let distinct = (0..cells.len()).filter(|&b| occupied(b)).count();
            proptest::prop_assert_eq!(found.is_some(), distinct >= 2, "{} occupied bins", distinct);
            let Some(s) = found else { return Ok(()) };
            let SplitRule::Threshold { bin, missing_left } = s.rule else { panic!("a threshold") };
            let left = sum_of(&hist, |b| if b == 0 { missing_left } else { b <= bin as usize });
            let right = sum_of(&hist, |b| if b == 0 { !missing_left } else { b > bin as usize });
            proptest::prop_assert_eq!(left.as_slice(), s.left.as_slice());
            proptest::prop_assert_eq!(right.as_slice(), s.right.as_slice());
            proptest::prop_assert!((s.gain - best).abs() <= 1e-9 * total[2], "{} against the best {}", s.gain, best);
        }
    }
}
