//! Splits by absolute error (`criterion=absolute_error`, scikit-learn's
//! `criterion="absolute_error"`): a node's impurity is the weighted mean of
//! `|y − m|` around its weighted median `m`, which no histogram of sums can
//! give. The node's rows are ranked by response once; each feature's bins
//! are then swept in order, the rows of each bin added to a Fenwick tree of
//! weights and weighted responses by rank, and after each bin the weighted
//! median is found by descending the tree and the absolute error follows
//! from prefix sums: `Σ_{y ≥ m} w(y − m) + Σ_{y < m} w(m − y)`. A sweep costs
//! `O(n log n)` per feature, as scikit-learn's own since 1.8.

use std::ops::Range;

use arbor_quantize::BinColumn;

use crate::split::best::CATEGORY_SMOOTHING;
use crate::split::candidate::{SplitCandidate, SplitConstraints, Stats};
use crate::split::rule::{threshold_test, SplitRule};

/// What the search of one feature by absolute error found.
#[derive(Clone, Debug, PartialEq)]
pub enum MedianSplit {
    /// The feature holds one value (or only missing values) in the node:
    /// it does not count as tried.
    Constant,
    /// The best split, or `None` when none meets the constraints.
    Tried(Option<SplitCandidate>),
}

/// A node's rows ranked by response, and the buffers of the sweeps over
/// them; one per tree grower, reused from node to node.
#[derive(Default)]
pub struct MedianScan {
    /// The node's rows, by position.
    rows: Vec<u32>,
    /// Each position's rank by response (1-based, ties by position).
    rank: Vec<u32>,
    /// Each position's weight, multiplicity and response.
    weight: Vec<f64>,
    count: Vec<f64>,
    y: Vec<f64>,
    /// The responses by rank (index `rank − 1`).
    sorted_y: Vec<f64>,
    fenwick: Fenwick,
    /// Positions grouped by bin, then by the order of the sweep.
    order: Vec<u32>,
    regrouped: Vec<u32>,
    bins: Vec<u16>,
    /// The node's absolute error around its median, and the median.
    node_error: f64,
    median: f64,
    /// The node's statistics `[count, weight, Σ w·y]`.
    total: [f64; 3],
}

/// One group of rows a sweep moves at once: a bin, or pooled categories.
#[derive(Clone, Debug)]
struct Group {
    /// Its positions, a range of the sweep's order.
    at: Range<usize>,
    /// `[count, weight, Σ w·y]`.
    stats: [f64; 3],
    /// The bins it holds (one, unless pooled).
    bins: Range<usize>,
}

impl MedianScan {
    /// Ranks a node's `rows` by response `y` (indexed by row id, as are
    /// `weights` and `counts`); returns the node's absolute error around its
    /// weighted median, and that median (scikit-learn's leaf value: the
    /// response where the cumulative weight passes half, or the mean of two
    /// responses when it stops exactly at half between them).
    pub fn rank(&mut self, rows: &[u32], y: &[f64], weights: &[f64], counts: &[f64]) -> (f64, f64) {
        let n = rows.len();
        self.rows.clear();
        self.rows.extend_from_slice(rows);
        self.weight.clear();
        self.weight.extend(rows.iter().map(|&r| weights[r as usize]));
        self.count.clear();
        self.count.extend(rows.iter().map(|&r| counts[r as usize]));
        self.y.clear();
        self.y.extend(rows.iter().map(|&r| y[r as usize]));
        let mut by_response: Vec<u32> = (0..n as u32).collect();
        by_response.sort_unstable_by(|&a, &b| self.y[a as usize].total_cmp(&self.y[b as usize]).then(a.cmp(&b)));
        self.rank.clear();
        self.rank.resize(n, 0);
        self.sorted_y.clear();
        for (k, &i) in by_response.iter().enumerate() {
            self.rank[i as usize] = k as u32 + 1;
            self.sorted_y.push(self.y[i as usize]);
        }
        self.total = [0.0; 3];
        for i in 0..n {
            self.total[0] += self.count[i];
            self.total[1] += self.weight[i];
            self.total[2] += self.weight[i] * self.y[i];
        }
        self.fenwick.reset(n);
        for i in 0..n {
            self.fenwick.add(self.rank[i] as usize, self.y[i], self.weight[i]);
        }
        let (error, median) = self.fenwick.median_error(&self.sorted_y);
        (self.node_error, self.median) = (error, median);
        (error, median)
    }

    /// The weighted median of `rows` (see [`MedianScan::rank`]): kept from
    /// the last ranking when that was of these rows in this order (a node
    /// searched for a split, then made a leaf), else ranked now.
    pub fn median(&mut self, rows: &[u32], y: &[f64], weights: &[f64], counts: &[f64]) -> f64 {
        if self.rows.as_slice() == rows && !rows.is_empty() {
            return self.median;
        }
        self.rank(rows, y, weights, counts).1
    }

    /// The best split of the ranked node on one feature's bins (`column`,
    /// `n_bins` of them, bin 0 missing), by the least absolute error of the
    /// two children, the first such on a tie. Numeric features try every
    /// threshold between occupied bins with missing values on either side;
    /// categorical ones order their categories by smoothed mean response
    /// (categories smaller than `min_samples_category` pooled, as the
    /// histogram scan does) and try every prefix. Its gain is the node's
    /// absolute error less the children's.
    pub fn best_split(
        &mut self,
        column: &BinColumn,
        n_bins: usize,
        categorical: bool,
        constraints: &SplitConstraints,
    ) -> MedianSplit {
        let n = self.rows.len();
        self.bins.clear();
        self.bins.extend(self.rows.iter().map(|&r| column.get(r as usize)));
        self.order.clear();
        self.order.extend(0..n as u32);
        let bins = &self.bins;
        self.order.sort_unstable_by_key(|&i| (bins[i as usize], i));
        // Runs of one bin, in bin order.
        let mut runs: Vec<Group> = Vec::new();
        for (at, &i) in self.order.iter().enumerate() {
            let b = usize::from(self.bins[i as usize]);
            if runs.last().is_none_or(|g| g.bins.start != b) {
                runs.push(Group { at: at..at, stats: [0.0; 3], bins: b..b + 1 });
            }
            let g = runs.last_mut().expect("pushed above");
            g.at.end = at + 1;
            let i = i as usize;
            g.stats[0] += self.count[i];
            g.stats[1] += self.weight[i];
            g.stats[2] += self.weight[i] * self.y[i];
        }
        if runs.len() < 2 {
            return MedianSplit::Constant;
        }
        let candidate =
            if categorical { self.categories(runs, n_bins, constraints) } else { self.threshold(runs, constraints) };
        MedianSplit::Tried(candidate)
    }

    /// The absolute error of the two children a rule (a random split's)
    /// makes of the ranked node: their sum, to score that rule by.
    pub fn rule_error(&mut self, column: &BinColumn, rule: &SplitRule) -> f64 {
        let n = self.rows.len();
        let goes_left = |b: u16| match rule {
            SplitRule::Threshold { bin, missing_left } => threshold_test(*bin, *missing_left)(usize::from(b)),
            SplitRule::Categories { goes_left } => goes_left.get(usize::from(b)).copied().unwrap_or(false),
        };
        let mut error = 0.0;
        for side in [true, false] {
            self.fenwick.reset(n);
            for i in 0..n {
                if goes_left(column.get(self.rows[i] as usize)) == side {
                    self.fenwick.add(self.rank[i] as usize, self.y[i], self.weight[i]);
                }
            }
            error += self.fenwick.median_error(&self.sorted_y).0;
        }
        error
    }

    /// Threshold splits: value bins in order, missing values (bin 0) tried on either side.
    fn threshold(&mut self, runs: Vec<Group>, constraints: &SplitConstraints) -> Option<SplitCandidate> {
        let (missing, values): (Option<Group>, Vec<Group>) = match runs.first() {
            Some(g) if g.bins.start == 0 => (Some(g.clone()), runs[1..].to_vec()),
            _ => (None, runs),
        };
        let k = values.len();
        // A[j]: values up to group j; B[j]: the same with the missing rows;
        // C[j]: values from group j on; D[j]: the same with the missing rows.
        let ascending: Vec<&Group> = values.iter().collect();
        let descending: Vec<&Group> = values.iter().rev().collect();
        let a = self.sweep(None, &ascending);
        let mut c = self.sweep(None, &descending);
        c.reverse();
        let (b, d, missing_alone) = match &missing {
            Some(m) => {
                let b = self.sweep(Some(m), &ascending);
                let mut d = self.sweep(Some(m), &descending);
                d.reverse();
                (b, d, self.sweep(None, &[m]).pop().unwrap_or(0.0))
            }
            None => (Vec::new(), Vec::new(), 0.0),
        };
        let missing_stats = missing.as_ref().map_or([0.0; 3], |m| m.stats);
        let mut best: Option<(f64, usize, bool, [f64; 3])> = None;
        let mut left = [0.0; 3];
        for j in 0..k {
            add(&mut left, &values[j].stats);
            // Missing values right.
            let right_error = match (j + 1 < k, missing.is_some()) {
                (true, true) => Some(d[j + 1]),
                (true, false) => Some(c[j + 1]),
                (false, true) => Some(missing_alone),
                (false, false) => None,
            };
            if let Some(right_error) = right_error {
                self.consider(&mut best, a[j] + right_error, (j, false), left, constraints);
            }
            // Missing values left.
            if missing.is_some() && j + 1 < k {
                let mut with_missing = left;
                add(&mut with_missing, &missing_stats);
                self.consider(&mut best, b[j] + c[j + 1], (j, true), with_missing, constraints);
            }
        }
        let (error, j, missing_left, left) = best?;
        // Bins empty in this node between the children split half and half.
        let last = values[j].bins.start;
        let bin = values.get(j + 1).map_or(last, |next| (last + next.bins.start) / 2);
        let missing_left = match missing {
            Some(_) => missing_left,
            // With no missing values in the node, they follow the larger child at prediction.
            None => left[1] >= self.total[1] - left[1],
        };
        Some(self.candidate(error, SplitRule::Threshold { bin: bin as u16, missing_left }, left))
    }

    /// Subset splits: categories (the missing bin one of them) ordered by
    /// their smoothed mean response, every prefix tried.
    fn categories(
        &mut self,
        runs: Vec<Group>,
        n_bins: usize,
        constraints: &SplitConstraints,
    ) -> Option<SplitCandidate> {
        let node_mean = if self.total[1] > 0.0 { self.total[2] / self.total[1] } else { 0.0 };
        let key = |s: &[f64; 3]| (s[2] + CATEGORY_SMOOTHING * node_mean) / (s[1] + CATEGORY_SMOOTHING);
        // Categories lighter than min_samples_category move as one.
        let (mut groups, rare): (Vec<Group>, Vec<Group>) =
            runs.into_iter().partition(|g| g.stats[1] >= constraints.min_samples_category);
        let mut members: Vec<Vec<Range<usize>>> = groups.iter().map(|g| vec![g.at.clone()]).collect();
        let mut member_bins: Vec<Vec<usize>> = groups.iter().map(|g| vec![g.bins.start]).collect();
        if !rare.is_empty() {
            let mut pooled = Group { at: 0..0, stats: [0.0; 3], bins: 0..0 };
            rare.iter().for_each(|g| add(&mut pooled.stats, &g.stats));
            members.push(rare.iter().map(|g| g.at.clone()).collect());
            member_bins.push(rare.iter().map(|g| g.bins.start).collect());
            groups.push(pooled);
        }
        if groups.len() < 2 {
            return None;
        }
        let mut sorted: Vec<usize> = (0..groups.len()).collect();
        sorted.sort_by(|&x, &y| {
            key(&groups[x].stats).total_cmp(&key(&groups[y].stats)).then(member_bins[x][0].cmp(&member_bins[y][0]))
        });
        // Positions regrouped in the sweep's order, each group's contiguous.
        self.regrouped.clear();
        for &g in &sorted {
            let start = self.regrouped.len();
            for run in &members[g] {
                self.regrouped.extend_from_slice(&self.order[run.clone()]);
            }
            groups[g].at = start..self.regrouped.len();
        }
        std::mem::swap(&mut self.order, &mut self.regrouped);
        let ordered: Vec<&Group> = sorted.iter().map(|&g| &groups[g]).collect();
        let k = ordered.len();
        let a = self.sweep(None, &ordered);
        let reversed: Vec<&Group> = ordered.iter().rev().copied().collect();
        let mut c = self.sweep(None, &reversed);
        c.reverse();
        let mut best: Option<(f64, usize, bool, [f64; 3])> = None;
        let mut left = [0.0; 3];
        for j in 0..k - 1 {
            add(&mut left, &ordered[j].stats);
            self.consider(&mut best, a[j] + c[j + 1], (j, false), left, constraints);
        }
        let (error, j, _, left) = best?;
        // Categories absent from this node (and unseen ones) follow the larger child.
        let unseen_left = left[1] >= self.total[1] - left[1];
        let mut goes_left = vec![unseen_left; n_bins];
        for (i, &g) in sorted.iter().enumerate() {
            for &b in &member_bins[g] {
                goes_left[b] = i <= j;
            }
        }
        Some(self.candidate(error, SplitRule::Categories { goes_left }, left))
    }

    /// The absolute error after each group of `groups` is added (with
    /// `first`'s rows added before them all).
    fn sweep(&mut self, first: Option<&Group>, groups: &[&Group]) -> Vec<f64> {
        self.fenwick.reset(self.rows.len());
        let add_group = |fenwick: &mut Fenwick, g: &Group| {
            for &i in &self.order[g.at.clone()] {
                let i = i as usize;
                fenwick.add(self.rank[i] as usize, self.y[i], self.weight[i]);
            }
        };
        if let Some(g) = first {
            add_group(&mut self.fenwick, g);
        }
        groups
            .iter()
            .map(|g| {
                add_group(&mut self.fenwick, g);
                self.fenwick.median_error(&self.sorted_y).0
            })
            .collect()
    }

    /// Keeps a candidate of children's error `error` and left statistics
    /// `left` when it meets the constraints and errs strictly less than the best so far.
    fn consider(
        &self,
        best: &mut Option<(f64, usize, bool, [f64; 3])>,
        error: f64,
        (j, missing_left): (usize, bool),
        left: [f64; 3],
        c: &SplitConstraints,
    ) {
        let (nl, wl) = (left[0], left[1]);
        let (nr, wr) = (self.total[0] - nl, self.total[1] - wl);
        if nl < c.min_samples_leaf || nr < c.min_samples_leaf || wl < c.min_weight_leaf || wr < c.min_weight_leaf {
            return;
        }
        if nl <= 0.0 || nr <= 0.0 {
            return;
        }
        if best.as_ref().is_none_or(|b| error < b.0) {
            *best = Some((error, j, missing_left, left));
        }
    }

    fn candidate(&self, error: f64, rule: SplitRule, left: [f64; 3]) -> SplitCandidate {
        let right: Stats = self.total.iter().zip(&left).map(|(t, l)| t - l).collect();
        SplitCandidate { gain: self.node_error - error, rule, left: Stats::from_slice(&left), right, charge: 0.0 }
    }
}

fn add(acc: &mut [f64; 3], x: &[f64; 3]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}

/// Prefix sums of weights and weighted responses over ranks (1-based), and
/// their totals.
#[derive(Default)]
struct Fenwick {
    w: Vec<f64>,
    wy: Vec<f64>,
    total_w: f64,
    total_wy: f64,
    /// The largest power of two not above the size.
    top: usize,
}

impl Fenwick {
    fn reset(&mut self, n: usize) {
        self.w.clear();
        self.w.resize(n + 1, 0.0);
        self.wy.clear();
        self.wy.resize(n + 1, 0.0);
        (self.total_w, self.total_wy) = (0.0, 0.0);
        self.top = if n == 0 { 0 } else { 1 << n.ilog2() };
    }

    fn add(&mut self, rank: usize, y: f64, weight: f64) {
        self.total_w += weight;
        self.total_wy += weight * y;
        let mut i = rank;
        while i < self.w.len() {
            self.w[i] += weight;
            self.wy[i] += weight * y;
            i += i & i.wrapping_neg();
        }
    }

    /// The largest rank whose prefix weight is below `target` (at or below,
    /// when `inclusive`), with that prefix's weight and weighted response.
    fn descend(&self, target: f64, inclusive: bool) -> (usize, f64, f64) {
        let (mut pos, mut w, mut wy) = (0, 0.0, 0.0);
        let mut step = self.top;
        while step > 0 {
            let next = pos + step;
            if next < self.w.len() {
                let with = w + self.w[next];
                if with < target || (inclusive && with == target) {
                    (pos, w, wy) = (next, with, wy + self.wy[next]);
                }
            }
            step >>= 1;
        }
        (pos, w, wy)
    }

    /// The absolute error of the rows added around their weighted median,
    /// and the median: the response of the first rank whose cumulative
    /// weight passes half the total, or, when the cumulative weight stops
    /// at exactly half, the mean of the responses either side.
    fn median_error(&self, sorted_y: &[f64]) -> (f64, f64) {
        if self.total_w <= 0.0 {
            return (0.0, 0.0);
        }
        let half = 0.5 * self.total_w;
        let (at, w_left, wy_left) = self.descend(half, true);
        let at = at.min(sorted_y.len() - 1); // past every rank only by rounding
        let median = if at > 0 && w_left == half {
            let (before, _, _) = self.descend(half, false);
            (sorted_y[before] + sorted_y[at]) / 2.0
        } else {
            sorted_y[at]
        };
        let (w_right, wy_right) = (self.total_w - w_left, self.total_wy - wy_left);
        ((wy_right - median * w_right) + (median * w_left - wy_left), median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The weighted median as scikit-learn defines it, by sorting.
    fn brute_median(values: &[(f64, f64)]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = v.iter().map(|x| x.1).sum();
        let half = total / 2.0;
        let mut cumulative = 0.0;
        for (k, &(y, w)) in v.iter().enumerate() {
            cumulative += w;
            if cumulative == half && w > 0.0 {
                let next = v[k + 1..].iter().find(|x| x.1 > 0.0).expect("weight beyond half");
                return (y + next.0) / 2.0;
            }
            if cumulative > half {
                return y;
            }
        }
        unreachable!("the cumulative weight reaches the total")
    }

    fn brute_error(values: &[(f64, f64)]) -> f64 {
        let m = brute_median(values);
        values.iter().map(|&(y, w)| w * (y - m).abs()).sum()
    }

    proptest! {
        /// The node's median and error are the sorted definition's, for
        /// whole weights (exact halves happen) and fractional ones.
        #[test]
        fn node_median_and_error_match_sorting(
            ys in prop::collection::vec(-20i32..20, 1..60),
            ws in prop::collection::vec(1u8..4, 60),
            fractional in any::<bool>(),
        ) {
            let y: Vec<f64> = ys.iter().map(|&v| f64::from(v) / 2.0).collect();
            let w: Vec<f64> = ws[..y.len()].iter().map(|&v| if fractional { f64::from(v) * 0.37 } else { f64::from(v) }).collect();
            let rows: Vec<u32> = (0..y.len() as u32).collect();
            let mut scan = MedianScan::default();
            let (error, median) = scan.rank(&rows, &y, &w, &w);
            let pairs: Vec<(f64, f64)> = y.iter().copied().zip(w.iter().copied()).collect();
            let expected = brute_error(&pairs);
            prop_assert!((error - expected).abs() <= 1e-9 * (1.0 + error.abs()));
            prop_assert_eq!(scan.median(&rows, &y, &w, &w), median, "kept for the rows just ranked");
            prop_assert_eq!(MedianScan::default().median(&rows, &y, &w, &w), median, "or ranked anew");
            if fractional {
                // Whether fractional weights stop at exactly half depends on
                // rounding: either answer is a median (of the least error).
                let at_ours: f64 = pairs.iter().map(|&(y, w)| w * (y - median).abs()).sum();
                prop_assert!((at_ours - expected).abs() <= 1e-9 * (1.0 + expected));
            } else {
                prop_assert_eq!(median, brute_median(&pairs));
            }
        }

        /// The best threshold split is the one of least children's error
        /// over every threshold and missing side, found by brute force.
        #[test]
        fn best_threshold_is_the_brute_force_one(
            cells in prop::collection::vec((0u16..6, -30i32..30, 1u8..3), 2..80),
            min_leaf in 1u8..4,
        ) {
            let bins: Vec<u16> = cells.iter().map(|c| c.0).collect();
            let y: Vec<f64> = cells.iter().map(|c| f64::from(c.1)).collect();
            let w: Vec<f64> = cells.iter().map(|c| f64::from(c.2)).collect();
            let rows: Vec<u32> = (0..y.len() as u32).collect();
            let column = BinColumn::U8(bins.iter().map(|&b| b as u8).collect());
            let constraints = SplitConstraints { min_samples_leaf: f64::from(min_leaf), ..SplitConstraints::default() };
            let mut scan = MedianScan::default();
            let (node_error, _) = scan.rank(&rows, &y, &w, &w);
            let found = scan.best_split(&column, 6, false, &constraints);
            let mut best: Option<f64> = None;
            for last in 1..6u16 {
                for missing_left in [false, true] {
                    let left: Vec<usize> = (0..y.len()).filter(|&i| threshold_test(last, missing_left)(usize::from(bins[i]))).collect();
                    let right: Vec<usize> = (0..y.len()).filter(|i| !left.contains(i)).collect();
                    let side = |s: &[usize]| s.iter().map(|&i| (y[i], w[i])).collect::<Vec<_>>();
                    let count = |s: &[usize]| s.iter().map(|&i| w[i]).sum::<f64>();
                    if count(&left) < f64::from(min_leaf) || count(&right) < f64::from(min_leaf) {
                        continue;
                    }
                    let error = brute_error(&side(&left)) + brute_error(&side(&right));
                    best = Some(best.map_or(error, |b: f64| b.min(error)));
                }
            }
            let occupied = { let mut b = bins.clone(); b.sort(); b.dedup(); b.len() };
            match found {
                MedianSplit::Constant => prop_assert!(occupied < 2),
                MedianSplit::Tried(None) => prop_assert!(best.is_none(), "brute force found {:?}", best),
                MedianSplit::Tried(Some(s)) => {
                    let best = best.expect("a split was found");
                    prop_assert!((node_error - s.gain - best).abs() <= 1e-9 * (1.0 + best), "{} vs {}", node_error - s.gain, best);
                    let error = scan.rule_error(&column, &s.rule);
                    prop_assert!((error - best).abs() <= 1e-9 * (1.0 + best), "rule's error {} vs {}", error, best);
                    prop_assert_eq!(s.left[1] + s.right[1], w.iter().sum::<f64>());
                }
            }
        }
    }

    /// A categorical feature whose categories hold low, middle and high
    /// responses sends the high one alone right: its error (95, all left of
    /// it around the median 1) beats the low ones against the rest (5 + 200),
    /// whatever the order of the bins.
    #[test]
    fn categories_split_by_their_response() {
        // bins 1..=4; bins 2 and 4 low, 1 middle, 3 high
        let bins: Vec<u8> = (0..40).map(|i| (i % 4) as u8 + 1).collect();
        let y: Vec<f64> = bins.iter().map(|&b| [0.0, 10.0, 1.0, 30.0, 0.5][usize::from(b)]).collect();
        let w = vec![1.0; 40];
        let rows: Vec<u32> = (0..40).collect();
        let mut scan = MedianScan::default();
        scan.rank(&rows, &y, &w, &w);
        let c = SplitConstraints::default();
        let MedianSplit::Tried(Some(s)) = scan.best_split(&BinColumn::U8(bins), 5, true, &c) else { panic!("a split") };
        let SplitRule::Categories { goes_left } = &s.rule else { panic!("a subset") };
        assert_eq!(&goes_left[1..], &[true, true, false, true]);
        assert_eq!(s.left[0], 30.0);
        assert_eq!(s.gain, scan.node_error - 95.0);
    }
}
