//! The threshold scan of a three-value histogram in lanes: the running
//! sums of a block of bins written out, every candidate's gain scored
//! eight at a time, then one argmax per block.
//!
//! The plain scan ([`crate::split::scan::Scan`]) tries the thresholds one by
//! one: two divisions and a chain of branches per occupied bin. Here the
//! running sums are written out first (the same additions in the same
//! order, empty bins adding nothing), every candidate's gain is computed
//! without a branch in vectors of lanes (two divisions for eight
//! candidates at AVX-512), and the best of the block is compared once with
//! the best so far. Gains are the plain scan's to the bit and ties go to
//! the first candidate in its order, so the split is the same:
//! [`crate::best_split`] takes this path for dense histograms (two classes
//! under Gini, squared error and boosting, without a monotone constraint),
//! and the tests compare the two paths on every input.

use pulp::Simd;

use crate::split::candidate::{SplitCandidate, SplitConstraints, Stats};
use crate::split::criterion::{child_size, Criterion};
use crate::split::rule::SplitRule;

/// Bins scored together: one AVX-512 vector of `f64`, two AVX2 ones.
const LANES: usize = 8;

/// Bins whose running sums are written out before any is scored (nine
/// arrays of it on the stack: 4.5 KiB).
const BLOCK: usize = 64;

/// What the lanes read of a three-value statistics vector: which value is
/// its count, its weight and its score, for a vector of lanes at a time
/// (see [`crate::count_weight`] and [`crate::node_score`], which these equal
/// to the bit in every lane).
pub(crate) trait ThreeValues: Copy {
    /// Which value is the count.
    const COUNT: usize;
    /// The weight of each lane.
    fn weight<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s;
    /// `−W·i(t)` up to a constant ([`crate::node_score`]) of each lane.
    fn score<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s;
}

/// Two classes under Gini: `[w_0, w_1, count]`.
#[derive(Clone, Copy)]
pub(crate) struct TwoClassGini;

/// Squared error: `[count, w, Σwy]`.
#[derive(Clone, Copy)]
pub(crate) struct SquaredError;

/// Boosting: `[count, G, H]`, scored `G² / (H + λ)`.
#[derive(Clone, Copy)]
pub(crate) struct Newton {
    pub(crate) lambda: f64,
}

/// `num / den` where `den > 0`, else 0, in each lane.
#[inline(always)]
fn ratio_where_positive<S: Simd>(simd: S, num: S::f64s, den: S::f64s) -> S::f64s {
    let positive = simd.greater_than_f64s(den, simd.splat_f64s(0.0));
    simd.select_f64s(positive, simd.div_f64s(num, den), simd.splat_f64s(0.0))
}

impl ThreeValues for TwoClassGini {
    const COUNT: usize = 2;
    #[inline(always)]
    fn weight<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s {
        simd.add_f64s(s[0], s[1])
    }
    #[inline(always)]
    fn score<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s {
        let squares = simd.add_f64s(simd.mul_f64s(s[0], s[0]), simd.mul_f64s(s[1], s[1]));
        ratio_where_positive(simd, squares, self.weight(simd, s))
    }
}

impl ThreeValues for SquaredError {
    const COUNT: usize = 0;
    #[inline(always)]
    fn weight<S: Simd>(self, _: S, s: &[S::f64s; 3]) -> S::f64s {
        s[1]
    }
    #[inline(always)]
    fn score<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s {
        ratio_where_positive(simd, simd.mul_f64s(s[2], s[2]), s[1])
    }
}

impl ThreeValues for Newton {
    const COUNT: usize = 0;
    #[inline(always)]
    fn weight<S: Simd>(self, _: S, s: &[S::f64s; 3]) -> S::f64s {
        s[2]
    }
    #[inline(always)]
    fn score<S: Simd>(self, simd: S, s: &[S::f64s; 3]) -> S::f64s {
        let h = simd.add_f64s(s[2], simd.splat_f64s(self.lambda));
        ratio_where_positive(simd, simd.mul_f64s(s[1], s[1]), h)
    }
}

/// The lanes' form of `criterion`, when it has one.
pub(crate) fn lanes_for(criterion: Criterion) -> Option<LaneCriterion> {
    match criterion {
        Criterion::Gini => Some(LaneCriterion::Gini),
        Criterion::Mse => Some(LaneCriterion::Mse),
        Criterion::Newton { lambda } => Some(LaneCriterion::Newton(Newton { lambda })),
        Criterion::Entropy | Criterion::Poisson => None,
    }
}

/// A criterion the lanes score, each its own type so its arithmetic is
/// compiled into the loop.
#[derive(Clone, Copy)]
pub(crate) enum LaneCriterion {
    Gini,
    Mse,
    Newton(Newton),
}

/// The best threshold split of a numeric feature's histogram of three
/// values per bin (bin 0 the missing bin), above `floor`: the plain scan's
/// split, to the bit.
#[inline(always)]
pub(crate) fn best_threshold_lanes<S: Simd>(
    simd: S,
    hist: &[f64],
    criterion: LaneCriterion,
    constraints: &SplitConstraints,
    floor: f64,
) -> Option<SplitCandidate> {
    match criterion {
        LaneCriterion::Gini => scan(simd, hist, TwoClassGini, Criterion::Gini, constraints, floor),
        LaneCriterion::Mse => scan(simd, hist, SquaredError, Criterion::Mse, constraints, floor),
        LaneCriterion::Newton(n) => scan(simd, hist, n, Criterion::Newton { lambda: n.lambda }, constraints, floor),
    }
}

/// The best candidate so far: its gain, bin, side of the missing values and
/// left child.
struct Best {
    gain: f64,
    bin: usize,
    missing_left: bool,
    left: [f64; 3],
}

/// [`best_threshold_lanes`] for one criterion's values `T`.
#[inline(always)]
fn scan<S: Simd, T: ThreeValues>(
    simd: S,
    hist: &[f64],
    values: T,
    criterion: Criterion,
    constraints: &SplitConstraints,
    floor: f64,
) -> Option<SplitCandidate> {
    let bins: &[[f64; 3]] = bytemuck::cast_slice(hist);
    // In registers, as the running sums below.
    let [mut t0, mut t1, mut t2] = [0.0; 3];
    for bin in bins {
        (t0, t1, t2) = (t0 + bin[0], t1 + bin[1], t2 + bin[2]);
    }
    let total = [t0, t1, t2];
    let has_missing = occupied::<T>(&bins[0]);
    let best = if has_missing {
        scan_bins::<S, T, true>(simd, bins, values, constraints, floor, total)
    } else {
        scan_bins::<S, T, false>(simd, bins, values, constraints, floor, total)
    }?;
    // As the plain scan: bins empty between the children split half and
    // half; without missing values in the node, they follow the larger child.
    let n_bins = bins.len();
    let b = match (best.bin + 1..n_bins).find(|&nb| occupied::<T>(&bins[nb])) {
        Some(next) => (best.bin + next) / 2,
        None => best.bin,
    };
    let missing_left = if has_missing {
        best.missing_left
    } else {
        let nl = child_size(&best.left, criterion);
        nl >= child_size(&total, criterion) - nl
    };
    let left = Stats::from_slice(&best.left);
    let right = total.iter().zip(&best.left).map(|(t, l)| t - l).collect();
    let rule = SplitRule::Threshold { bin: b as u16, missing_left };
    Some(SplitCandidate { gain: best.gain, rule, left, right, charge: 0.0 })
}

/// Whether a bin holds rows.
#[inline(always)]
fn occupied<T: ThreeValues>(bin: &[f64; 3]) -> bool {
    bin[T::COUNT] > 0.0
}

/// Every threshold after bins `1..`, a block of [`BLOCK`] bins at a time;
/// with `MISSING`, each also with the missing bin on the left (the
/// candidate after it in the plain scan's order).
#[inline(always)]
fn scan_bins<S: Simd, T: ThreeValues, const MISSING: bool>(
    simd: S,
    bins: &[[f64; 3]],
    values: T,
    constraints: &SplitConstraints,
    floor: f64,
    total: [f64; 3],
) -> Option<Best> {
    let parent = values.score(pulp::Scalar::new(), &total);
    let mut left = [0.0; 3];
    let mut with_missing = bins[0];
    let mut best: Option<Best> = None;
    let mut best_gain = floor;
    // The running sums after each bin, value by value, then each bin's count.
    let mut lefts = [[0.0; BLOCK]; 3];
    let mut missing_lefts = [[0.0; BLOCK]; 3];
    let mut counts = [0.0; BLOCK];
    let mut gains = [0.0; BLOCK];
    let mut missing_gains = [f64::NEG_INFINITY; BLOCK];
    for (block, chunk) in bins[1..].chunks(BLOCK).enumerate() {
        let n = chunk.len();
        // The sums live in registers (named, not an array), so that each
        // bin's add waits only for the last add, not for a store and load.
        let [mut a0, mut a1, mut a2] = left;
        let [mut m0, mut m1, mut m2] = with_missing;
        for (j, bin) in chunk.iter().enumerate() {
            // An empty bin adds nothing, as the plain scan skips it: a
            // histogram found by subtraction may hold rounding residue
            // in a bin of no rows.
            let full = occupied::<T>(bin);
            let (b0, b1, b2) = if full { (bin[0], bin[1], bin[2]) } else { (0.0, 0.0, 0.0) };
            (a0, a1, a2) = (a0 + b0, a1 + b1, a2 + b2);
            (lefts[0][j], lefts[1][j], lefts[2][j]) = (a0, a1, a2);
            if MISSING {
                (m0, m1, m2) = (m0 + b0, m1 + b1, m2 + b2);
                (missing_lefts[0][j], missing_lefts[1][j], missing_lefts[2][j]) = (m0, m1, m2);
            }
            counts[j] = if full { bin[T::COUNT] } else { 0.0 };
        }
        (left, with_missing) = ([a0, a1, a2], [m0, m1, m2]);
        // Lanes past the end hold no bin: never taken.
        let lanes = n.next_multiple_of(LANES);
        counts[n..lanes].fill(0.0);
        let mut block_best = f64::NEG_INFINITY;
        for g in (0..lanes).step_by(LANES) {
            let group = g..g + LANES;
            let gain = lane_gains(simd, values, &lefts, group.clone(), &counts, total, parent, constraints, floor);
            gains[group.clone()].copy_from_slice(&gain);
            block_best = block_best.max(lane_max(simd, &gain));
            if MISSING {
                let gain =
                    lane_gains(simd, values, &missing_lefts, group.clone(), &counts, total, parent, constraints, floor);
                missing_gains[group].copy_from_slice(&gain);
                block_best = block_best.max(lane_max(simd, &gain));
            }
        }
        if block_best > best_gain {
            // The first candidate of the block in the plain scan's order
            // (each bin without, then with, the missing values) to reach it.
            let j = (0..n)
                .find(|&j| gains[j] == block_best || missing_gains[j] == block_best)
                .expect("the block's best is one of its gains");
            let missing_left = gains[j] != block_best;
            let source = if missing_left { &missing_lefts } else { &lefts };
            best_gain = block_best;
            best = Some(Best {
                gain: block_best,
                bin: 1 + block * BLOCK + j,
                missing_left,
                left: [source[0][j], source[1][j], source[2][j]],
            });
        }
    }
    best
}

/// The gain of each lane's left child (`lefts[k][j]`: value `k` of lane
/// `j`), or −∞ where the plain scan would not take it: an empty bin
/// (`counts[j]`, the bin's own count, not above 0), a child under the
/// constraints' least count or weight, an empty child, or a gain not above
/// `floor` (which also turns a NaN into −∞).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lane_gains<S: Simd, T: ThreeValues>(
    simd: S,
    values: T,
    lefts: &[[f64; BLOCK]; 3],
    group: std::ops::Range<usize>,
    counts: &[f64; BLOCK],
    total: [f64; 3],
    parent: f64,
    c: &SplitConstraints,
    floor: f64,
) -> [f64; LANES] {
    // No closures here: they would not inherit the SIMD level's target
    // features, and each lane operation would become a call.
    let mut gains = [0.0; LANES];
    let t = [simd.splat_f64s(total[0]), simd.splat_f64s(total[1]), simd.splat_f64s(total[2])];
    let (parent, floor) = (simd.splat_f64s(parent), simd.splat_f64s(floor));
    let (min_count, min_weight) = (simd.splat_f64s(c.min_samples_leaf), simd.splat_f64s(c.min_weight_leaf));
    let (zero, lowest) = (simd.splat_f64s(0.0), simd.splat_f64s(f64::NEG_INFINITY));
    let (l0, _) = S::as_simd_f64s(&lefts[0][group.clone()]);
    let (l1, _) = S::as_simd_f64s(&lefts[1][group.clone()]);
    let (l2, _) = S::as_simd_f64s(&lefts[2][group.clone()]);
    let (bin_counts, _) = S::as_simd_f64s(&counts[group]);
    let (out, _) = S::as_mut_simd_f64s(&mut gains);
    for i in 0..out.len() {
        let l = [l0[i], l1[i], l2[i]];
        let r = [simd.sub_f64s(t[0], l[0]), simd.sub_f64s(t[1], l[1]), simd.sub_f64s(t[2], l[2])];
        let (nl, nr) = (l[T::COUNT], r[T::COUNT]);
        let (wl, wr) = (values.weight(simd, &l), values.weight(simd, &r));
        let gain = simd.sub_f64s(simd.add_f64s(values.score(simd, &l), values.score(simd, &r)), parent);
        // The plain scan's refusals, negated: the same answer for any input.
        let small = simd.or_m64s(simd.less_than_f64s(nl, min_count), simd.less_than_f64s(nr, min_count));
        let light = simd.or_m64s(simd.less_than_f64s(wl, min_weight), simd.less_than_f64s(wr, min_weight));
        let both = simd.and_m64s(simd.greater_than_f64s(nl, zero), simd.greater_than_f64s(nr, zero));
        let occupied = simd.greater_than_f64s(bin_counts[i], zero);
        let above = simd.greater_than_f64s(gain, floor);
        let taken = simd
            .and_m64s(simd.and_m64s(simd.not_m64s(simd.or_m64s(small, light)), both), simd.and_m64s(occupied, above));
        out[i] = simd.select_f64s(taken, gain, lowest);
    }
    gains
}

/// The greatest of eight gains (none is NaN).
#[inline(always)]
fn lane_max<S: Simd>(simd: S, gains: &[f64; LANES]) -> f64 {
    let (vectors, _) = S::as_simd_f64s(gains);
    let mut max = vectors[0];
    for &v in &vectors[1..] {
        max = simd.max_f64s(max, v);
    }
    simd.reduce_max_f64s(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::best_split_plain;
    use crate::dispatch::{with_simd_level, SimdLevel};
    use proptest::prelude::*;

    /// A candidate's numbers as bits, so that `-0.0` and `0.0` differ.
    fn bits(s: &Option<SplitCandidate>) -> Option<(u64, SplitRule, Vec<u64>, Vec<u64>)> {
        s.as_ref().map(|s| {
            let b = |v: &Stats| v.iter().map(|x| x.to_bits()).collect();
            (s.gain.to_bits(), s.rule.clone(), b(&s.left), b(&s.right))
        })
    }

    /// One bin of `criterion`'s layout from a cell: empty when `rows` is 0.
    /// Whole numbers make ties between candidates common.
    fn bin(criterion: Criterion, (rows, a, b): (u8, i8, u8), whole: bool) -> [f64; 3] {
        let n = f64::from(rows);
        let scale = |x: f64, by: f64| if whole { x } else { x / by };
        let (fa, fb) = (scale(f64::from(a), 7.3), scale(f64::from(b), 3.1));
        match () {
            // An empty bin: zeros, or the residue a histogram found by
            // subtraction can leave.
            _ if rows == 0 && whole => [0.0; 3],
            _ if rows == 0 && criterion == Criterion::Gini => [fa * 1e-17, fb * 1e-17, 0.0],
            _ if rows == 0 => [0.0, fa * 1e-17, fb * 1e-17],
            _ if criterion == Criterion::Gini => {
                let first = f64::from(b % (rows + 1));
                [first * if whole { 1.0 } else { 1.25 }, n - first, n]
            }
            _ if criterion == Criterion::Mse => [n, n * (1.0 + fb / 8.0), fa * n],
            _ => [n, fa, n * (0.1 + fb / 4.0)],
        }
    }

    proptest! {
        /// The lanes find the plain scan's split to the bit (gain, rule,
        /// children), at every SIMD level this CPU runs: histograms of 1 to
        /// 40 bins (across groups of eight), empty bins and missing values
        /// or none, every constraint and a floor.
        #[test]
        fn lanes_equal_the_plain_scan(
            cells in proptest::collection::vec((0u8..6, -20i8..20, 0u8..9), 1..40),
            criterion in prop_oneof![
                Just(Criterion::Gini),
                Just(Criterion::Mse),
                Just(Criterion::Newton { lambda: 1.0 }),
                Just(Criterion::Newton { lambda: 0.0 }),
            ],
            whole in any::<bool>(),
            min_samples_leaf in prop_oneof![Just(1.0), Just(2.0), Just(5.0)],
            min_weight_leaf in prop_oneof![Just(0.0), Just(0.5), Just(4.0)],
            floor in prop_oneof![Just(f64::NEG_INFINITY), Just(0.0), 0.0..30.0],
        ) {
            let hist: Vec<f64> = cells.iter().flat_map(|&c| bin(criterion, c, whole)).collect();
            let c = SplitConstraints { min_samples_leaf, min_weight_leaf, ..SplitConstraints::default() };
            let plain = best_split_plain(&hist, 3, criterion, &c, false, floor);
            for level in SimdLevel::available() {
                let lanes = with_simd_level(level, || {
                    crate::best_split_above(&hist, 3, criterion, &c, false, floor)
                }).unwrap();
                prop_assert_eq!(bits(&lanes), bits(&plain), "at {}", level);
            }
        }
    }

    /// Equal gains go to the first candidate in the plain scan's order:
    /// here bins 3 and 11 (in different groups of eight) split the same
    /// counts, as does bin 3 with the missing values on the left.
    #[test]
    fn ties_go_to_the_first_candidate() {
        let mut hist = vec![0.0; 14 * 3];
        let mut put = |b: usize, s: [f64; 3]| hist[b * 3..b * 3 + 3].copy_from_slice(&s);
        put(3, [4.0, 0.0, 4.0]);
        put(11, [0.0, 4.0, 4.0]);
        put(13, [4.0, 0.0, 4.0]);
        let c = SplitConstraints::default();
        let s = crate::best_split(&hist, 3, Criterion::Gini, &c, false).unwrap();
        assert_eq!(s.rule, SplitRule::Threshold { bin: 7, missing_left: false });
        assert_eq!(bits(&Some(s)), bits(&best_split_plain(&hist, 3, Criterion::Gini, &c, false, f64::NEG_INFINITY)));
        // Responses 0 (missing), 1 and −1: bin 1 alone on the left, or with
        // the missing row, gain 1.5 both; the first is without it.
        let hist = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0];
        let s = crate::best_split(&hist, 3, Criterion::Mse, &c, false).unwrap();
        assert_eq!((s.gain, s.rule), (1.5, SplitRule::Threshold { bin: 1, missing_left: false }));
    }
}
