//! Histograms whose sums are exact. Data-parallel training sums them
//! across a cluster's partitions. Each row's statistics (boosting: count,
//! gradient, hessian and squared gradient; forests: class weights and
//! count, or count, weight, `w·y` and `w·y²`) are rounded once to a
//! multiple of 2^-40 and added as 128-bit integers. Partial histograms
//! built on any split of the rows, in any order, therefore merge into the
//! same bits, and so the model depends on the rows alone, not on
//! partitions, files, executors or retried tasks.

use arbor_kernels::Criterion;

use crate::{ArborError, Result};

/// Fraction bits of the fixed-point values: a row's gradient is kept to
/// 2^-40 (about 1e-12), far below what a split's gain can tell apart.
pub(crate) const FRACTION_BITS: i32 = 40;

/// Boosting's sums per bin: the row count, the gradient, the hessian and
/// the squared gradient (the last gives a node's noise, which prices subset
/// splits of many categories).
pub(crate) const GRADIENT_LANES: usize = 4;

/// A boosting row's sums, in fixed point of width `T`: its count (1), its
/// gradient, its hessian and its squared gradient.
#[inline]
pub(crate) fn gradient_lanes<T: Lane>(grad: f64, hess: f64) -> [T; GRADIENT_LANES] {
    [T::fixed(1.0), T::fixed(grad), T::fixed(hess), T::fixed(grad * grad)]
}

/// Exact sums of every open node's rows, per feature and bin, in integers
/// of type `T`: 128 bits hold any level's sums; a piece of the rows whose
/// magnitudes are small enough sums in 64 bits ([`fits_in_64_bits`]), half
/// the bytes a row moves, and widens before its sums leave it. Exact either
/// way, so the width never changes a bit of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExactHistograms<T = i128> {
    /// Where each feature's bins start, in bins, and (last) their total.
    offsets: Vec<usize>,
    nodes: usize,
    /// Sums per bin.
    lanes: usize,
    /// `nodes × total bins × lanes`, node-major, then bin-major.
    sums: Vec<T>,
}

/// The integer of a fixed-point sum: `i128`, or `i64` where the sums fit.
pub(crate) trait Lane:
    Copy + Default + Send + Sync + std::ops::AddAssign + Into<i128> + Eq + std::fmt::Debug
{
    /// `x` as a fixed-point integer of this width (the caller has checked it fits).
    fn fixed(x: f64) -> Self;
}

impl Lane for i128 {
    fn fixed(x: f64) -> i128 {
        fixed(x)
    }
}

impl Lane for i64 {
    fn fixed(x: f64) -> i64 {
        (x * f64::powi(2.0, FRACTION_BITS)).round() as i64
    }
}

impl Lane for u32 {
    /// Whole counts, not fixed point: a forest's unweighted class counts
    /// (bootstrap multiplicities) sum as plain integers, a quarter of the
    /// bytes of 128-bit lanes, and [`ExactHistograms::widen_counts`] scales
    /// them to fixed point, exactly, before they leave a piece.
    fn fixed(x: f64) -> u32 {
        x as u32
    }
}

/// Whether lanes whose values' magnitudes total at most `totals` (before
/// the 2^40 scaling) sum exactly in 64 bits: every partial sum is then
/// below 2^62, a margin for the rounding of the totals themselves.
pub(crate) fn fits_in_64_bits(totals: &[f64]) -> bool {
    let room = f64::powi(2.0, 62 - FRACTION_BITS);
    totals.iter().all(|&t| t.is_finite() && t < room)
}

/// Whether `rows` values of magnitude at most `largest`, and their squares,
/// sum exactly: each is a multiple of 2^-40 and the totals fit in an
/// `i128` with a bit to spare.
pub(crate) fn exact_sums_fit(largest: f64, rows: u64) -> bool {
    let room = f64::powi(2.0, 126 - FRACTION_BITS) / (rows.max(1) as f64);
    largest.is_finite() && largest.max(largest * largest) <= room
}

/// `x` as a fixed-point integer (finite values only: labels and scores are
/// checked before gradients are taken).
pub(crate) fn fixed(x: f64) -> i128 {
    (x * f64::powi(2.0, FRACTION_BITS)).round() as i128
}

/// A fixed-point sum back as a float.
pub(crate) fn float(sum: i128) -> f64 {
    sum as f64 * f64::powi(2.0, -FRACTION_BITS)
}

impl<T: Lane> ExactHistograms<T> {
    /// Bytes held on the heap.
    pub(crate) fn heap_size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<T>() + self.offsets.capacity() * std::mem::size_of::<usize>()
    }

    /// Empty gradient histograms for `nodes` open nodes over features of these bin counts.
    pub(crate) fn new(bins_per_feature: &[usize], nodes: usize) -> ExactHistograms<T> {
        Self::with_lanes(bins_per_feature, nodes, GRADIENT_LANES)
    }

    /// Empty histograms of `lanes` sums per bin.
    pub(crate) fn with_lanes(bins_per_feature: &[usize], nodes: usize, lanes: usize) -> ExactHistograms<T> {
        let mut offsets = Vec::with_capacity(bins_per_feature.len() + 1);
        let mut total = 0;
        offsets.push(0);
        for &bins in bins_per_feature {
            total += bins;
            offsets.push(total);
        }
        ExactHistograms { offsets, nodes, lanes, sums: vec![T::default(); nodes * total * lanes] }
    }

    /// The open nodes summed.
    pub(crate) fn nodes(&self) -> usize {
        self.nodes
    }

    /// Whether the sums have this shape: features of these bin counts, and `lanes` sums a bin.
    pub(crate) fn has_shape(&self, bins_per_feature: &[usize], lanes: usize) -> bool {
        let mut at = 0;
        self.lanes == lanes
            && self.offsets.len() == bins_per_feature.len() + 1
            && std::iter::once(0)
                .chain(bins_per_feature.iter().map(|b| {
                    at += b;
                    at
                }))
                .eq(self.offsets.iter().copied())
    }

    fn total_bins(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    /// Adds one row's gradient and hessian, in open node `node`, with bin
    /// `bins[f]` of each feature.
    #[cfg(test)]
    pub(crate) fn add_row(&mut self, node: usize, bins: &[u16], grad: f64, hess: f64) {
        self.add_lanes(node, bins, gradient_lanes(grad, hess));
    }

    /// Adds one row's boosting sums ([`gradient_lanes`]), in open node
    /// `node`, with bin `bins[f]` of each feature, the lane count known
    /// when compiled, so that a bin's lanes add at once.
    #[inline]
    pub(crate) fn add_lanes(&mut self, node: usize, bins: &[u16], lanes: [T; GRADIENT_LANES]) {
        debug_assert_eq!(self.lanes, GRADIENT_LANES);
        let base = node * self.total_bins();
        for (f, &bin) in bins.iter().enumerate() {
            let at = (base + self.offsets[f] + usize::from(bin)) * GRADIENT_LANES;
            let sums: &mut [T; GRADIENT_LANES] =
                (&mut self.sums[at..at + GRADIENT_LANES]).try_into().expect("a bin holds GRADIENT_LANES sums");
            for (sum, add) in sums.iter_mut().zip(lanes) {
                *sum += add;
            }
        }
    }

    /// Adds one row's fixed-point sums (one per lane), in open node `node`,
    /// with bin `bins[f]` of each of features `features` only (the
    /// others' bins of this node stay as they are).
    pub(crate) fn add_fixed_on(&mut self, node: usize, bins: &[u16], lanes: &[T], features: &[u16]) {
        let base = node * self.total_bins();
        let width = self.lanes;
        for &f in features {
            let f = usize::from(f);
            let at = (base + self.offsets[f] + usize::from(bins[f])) * width;
            for (sum, &add) in self.sums[at..at + width].iter_mut().zip(lanes) {
                *sum += add;
            }
        }
    }

    /// Adds `other`'s sums: the histograms of other rows of the same nodes.
    pub(crate) fn merge(&mut self, other: &ExactHistograms<T>) -> Result<()> {
        if self.offsets != other.offsets || self.nodes != other.nodes || self.lanes != other.lanes {
            return Err(ArborError::Data(format!(
                "partial histograms disagree: {} nodes over {} bins against {} nodes over {} bins",
                self.nodes,
                self.total_bins(),
                other.nodes,
                other.total_bins()
            )));
        }
        self.sums.iter_mut().zip(&other.sums).for_each(|(a, &b)| *a += b);
        Ok(())
    }

    /// The same sums in 128-bit integers, as they leave a piece.
    pub(crate) fn widen(self) -> ExactHistograms {
        let ExactHistograms { offsets, nodes, lanes, sums } = self;
        ExactHistograms { offsets, nodes, lanes, sums: sums.into_iter().map(Into::into).collect() }
    }
}

impl ExactHistograms<u32> {
    /// Whole counts as the fixed-point sums they stand for (each times
    /// 2^40): the bits 128-bit lanes would have summed the counts to.
    pub(crate) fn widen_counts(self) -> ExactHistograms {
        let ExactHistograms { offsets, nodes, lanes, sums } = self;
        ExactHistograms {
            offsets,
            nodes,
            lanes,
            sums: sums.into_iter().map(|c| i128::from(c) << FRACTION_BITS).collect(),
        }
    }
}

impl ExactHistograms {
    /// Node `to`'s sums set to node `from`'s of `other` (of the same shape).
    pub(crate) fn copy_node(&mut self, to: usize, other: &ExactHistograms, from: usize) {
        let block = self.total_bins() * self.lanes;
        self.sums[to * block..(to + 1) * block].copy_from_slice(&other.sums[from * block..(from + 1) * block]);
    }

    /// Node `to`'s sums set to node `a` of `parents` less node `b` of
    /// `children`: a child's histograms from its parent's and its sibling's,
    /// exact as integers are. A bin whose count would fall below zero (the
    /// sibling holding rows its parent did not) is an error: the sums came
    /// from different rows.
    pub(crate) fn set_difference(
        &mut self,
        to: usize,
        parents: &ExactHistograms,
        a: usize,
        children: &ExactHistograms,
        b: usize,
    ) -> Result<()> {
        let (block, width) = (self.total_bins() * self.lanes, self.lanes);
        let (parent, sibling) = (&parents.sums[a * block..(a + 1) * block], &children.sums[b * block..(b + 1) * block]);
        let out = &mut self.sums[to * block..(to + 1) * block];
        for ((out, p), c) in out.iter_mut().zip(parent).zip(sibling) {
            *out = p - c;
        }
        if let Some(bin) = out.chunks_exact(width).position(|lanes| lanes[0] < 0) {
            return Err(ArborError::Data(format!(
                "a node's histogram has more rows in bin {bin} than its parent's: the level's sums and the previous level's disagree"
            )));
        }
        Ok(())
    }

    /// Feature `f`'s histogram of node `node` as the split search reads
    /// it: the first `stride` sums of each bin (boosting's
    /// `[count, gradient, hessian]` with a stride of 3).
    pub(crate) fn feature(&self, node: usize, f: usize, stride: usize) -> Vec<f64> {
        let (base, width) = (node * self.total_bins(), self.lanes);
        let bins = &self.sums[(base + self.offsets[f]) * width..(base + self.offsets[f + 1]) * width];
        bins.chunks_exact(width).flat_map(|s| s[..stride].iter().map(|&x| float(x))).collect()
    }

    /// Node `node`'s totals, one per lane (every row lands in one bin of feature 0).
    pub(crate) fn totals(&self, node: usize) -> Vec<i128> {
        self.totals_on(node, 0)
    }

    /// A node's sums over all its rows, from feature `f`'s bins (every
    /// feature summed for the node holds every row once).
    pub(crate) fn totals_on(&self, node: usize, f: usize) -> Vec<i128> {
        let (base, width) = (node * self.total_bins(), self.lanes);
        let bins = &self.sums[(base + self.offsets[f]) * width..(base + self.offsets[f + 1]) * width];
        bins.chunks_exact(width).fold(vec![0; width], |mut acc, s| {
            acc.iter_mut().zip(s).for_each(|(a, b)| *a += b);
            acc
        })
    }

    /// Node `node`'s gradient statistics in the split search's layout.
    pub(crate) fn node_stats(&self, node: usize) -> [f64; 3] {
        let totals = self.totals(node);
        [float(totals[0]), float(totals[1]), float(totals[2])]
    }

    /// Node `node`'s noise per degree of freedom, `Σ(g − ḡ)² / H`: what a
    /// subset split's charge is scaled by ([`Criterion::Newton`] gains).
    pub(crate) fn node_noise(&self, node: usize, _criterion: Criterion) -> f64 {
        let totals = self.totals(node);
        let [n, g, h, g2] = [0, 1, 2, 3].map(|lane| float(totals[lane]));
        if n <= 0.0 || h <= 0.0 {
            return 0.0;
        }
        ((g2 - g * g / n) / h).max(0.0)
    }

    /// The sums as little-endian bytes, for an aggregate's state: each sum
    /// in 8 bytes when every one fits in 64 bits (a level's sums nearly
    /// always do: half the bytes to write, send and read), else in 16.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let narrow = self.sums.iter().all(|&s| i64::try_from(s).is_ok());
        let width = if narrow { 8 } else { 16 };
        let mut out = Vec::with_capacity(32 + 8 * self.offsets.len() + width * self.sums.len());
        out.extend_from_slice(&(self.nodes as u64).to_le_bytes());
        out.extend_from_slice(&(self.lanes as u64).to_le_bytes());
        out.extend_from_slice(&(self.offsets.len() as u64).to_le_bytes());
        self.offsets.iter().for_each(|&o| out.extend_from_slice(&(o as u64).to_le_bytes()));
        out.extend_from_slice(&(width as u64).to_le_bytes());
        match narrow {
            true => self.sums.iter().for_each(|&s| out.extend_from_slice(&(s as i64).to_le_bytes())),
            false => self.sums.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes())),
        }
        out
    }

    /// Histograms read back from [`ExactHistograms::to_bytes`]; corrupt or
    /// truncated bytes are an error, never a panic.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<ExactHistograms> {
        let corrupt = |what: &str| ArborError::Data(format!("partial histograms are corrupt: {what}"));
        let mut words = bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
        let nodes = words.next().ok_or_else(|| corrupt("no node count"))? as usize;
        let lanes = words.next().ok_or_else(|| corrupt("no lane count"))? as usize;
        if lanes == 0 || lanes > 4096 {
            return Err(corrupt("impossible lane count"));
        }
        let n_offsets = words.next().ok_or_else(|| corrupt("no feature count"))? as usize;
        if n_offsets == 0 || n_offsets > bytes.len() / 8 {
            return Err(corrupt("impossible feature count"));
        }
        let offsets: Vec<usize> = words.by_ref().take(n_offsets).map(|o| o as usize).collect();
        if offsets.len() != n_offsets || offsets[0] != 0 || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(corrupt("bin offsets"));
        }
        let width = words.next().ok_or_else(|| corrupt("no width"))? as usize;
        if width != 8 && width != 16 {
            return Err(corrupt("a sum's width is neither 8 nor 16 bytes"));
        }
        let header = 8 * (4 + n_offsets);
        let expected = nodes.checked_mul(*offsets.last().expect("not empty")).and_then(|n| n.checked_mul(lanes));
        let body = &bytes[header.min(bytes.len())..];
        if expected.and_then(|n| n.checked_mul(width)) != Some(body.len()) {
            return Err(corrupt("the sums do not fill the shape"));
        }
        let sums = match width {
            8 => body.chunks_exact(8).map(|s| i128::from(i64::from_le_bytes(s.try_into().expect("8 bytes")))).collect(),
            _ => body.chunks_exact(16).map(|s| i128::from_le_bytes(s.try_into().expect("16 bytes"))).collect(),
        };
        Ok(ExactHistograms { offsets, nodes, lanes, sums })
    }
}

#[cfg(test)]
mod tests {
    use arbor_kernels::{best_split, SplitConstraints};
    use proptest::prelude::*;

    use super::*;

    /// Rows of two features (4 and 3 bins) in three nodes.
    fn rows(n: usize) -> Vec<(usize, [u16; 2], f64, f64)> {
        (0..n)
            .map(|i| {
                let x = (i as f64 * 0.7368).sin();
                (i % 3, [(i % 4) as u16, (i * 7 % 3) as u16], x * 3.0, 0.1 + x.abs() / 4.0)
            })
            .collect()
    }

    fn histograms_of(rows: &[(usize, [u16; 2], f64, f64)]) -> ExactHistograms {
        let mut h = ExactHistograms::new(&[4, 3], 3);
        rows.iter().for_each(|(node, bins, g, hess)| h.add_row(*node, bins, *g, *hess));
        h
    }

    proptest! {
        /// However the rows are split into parts and the parts merged, the sums are the same bits.
        #[test]
        fn merged_parts_equal_the_whole(cuts in proptest::collection::vec(0usize..500, 0..6), reverse in any::<bool>()) {
            let all = rows(500);
            let mut cuts = cuts;
            cuts.push(0);
            cuts.push(all.len());
            cuts.sort_unstable();
            let mut parts: Vec<ExactHistograms> = cuts.windows(2).map(|w| histograms_of(&all[w[0]..w[1]])).collect();
            if reverse {
                parts.reverse();
            }
            let mut merged = ExactHistograms::new(&[4, 3], 3);
            for part in &parts {
                merged.merge(part).unwrap();
            }
            prop_assert_eq!(merged, histograms_of(&all));
        }
    }

    /// A child's histograms as its parent's less its sibling's are the
    /// bits summing its rows gives; a sibling holding rows the parent did
    /// not is refused, not turned into negative counts.
    #[test]
    fn a_sibling_by_subtraction_is_the_summed_child() {
        let all = rows(600);
        let mut parent = ExactHistograms::new(&[4, 3], 1);
        all.iter().for_each(|(_, bins, g, hess)| parent.add_row(0, bins, *g, *hess));
        let (left, right): (Vec<_>, Vec<_>) = all.iter().partition(|r| r.1[0] < 2);
        let mut children = ExactHistograms::new(&[4, 3], 2);
        left.iter().for_each(|(_, bins, g, hess)| children.add_row(0, bins, *g, *hess));
        right.iter().for_each(|(_, bins, g, hess)| children.add_row(1, bins, *g, *hess));
        let mut derived = ExactHistograms::new(&[4, 3], 2);
        derived.copy_node(0, &children, 0);
        derived.set_difference(1, &parent, 0, &children, 0).unwrap();
        assert_eq!(derived, children);
        // A "sibling" of every row of the parent and one more.
        let mut more = ExactHistograms::new(&[4, 3], 1);
        more.copy_node(0, &parent, 0);
        more.add_row(0, &[3, 0], 1.0, 1.0);
        let refused = derived.set_difference(1, &parent, 0, &more, 0).unwrap_err().to_string();
        assert!(refused.contains("more rows in bin 3"), "{refused}");
    }

    #[test]
    fn sums_match_float_sums_and_feed_the_split_search() {
        let all = rows(1000);
        let h = histograms_of(&all);
        for node in 0..3 {
            let mut float_hist = vec![0.0; 4 * 3];
            for (_, bins, g, hess) in all.iter().filter(|r| r.0 == node) {
                let cell = &mut float_hist[usize::from(bins[0]) * 3..usize::from(bins[0]) * 3 + 3];
                cell[0] += 1.0;
                cell[1] += g;
                cell[2] += hess;
            }
            let exact = h.feature(node, 0, 3);
            for (a, b) in exact.iter().zip(&float_hist) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "node {node}: {a} against {b}");
            }
            let criterion = Criterion::Newton { lambda: 1.0 };
            let constraints = SplitConstraints {
                min_samples_leaf: 1.0,
                min_weight_leaf: 0.0,
                min_samples_category: 0.0,
                category_charge: 0.0,
                ..SplitConstraints::default()
            };
            let from_exact = best_split(&exact, 3, criterion, &constraints, false);
            let from_float = best_split(&float_hist, 3, criterion, &constraints, false);
            let (a, b) = (from_exact.expect("a split"), from_float.expect("a split"));
            assert_eq!(format!("{:?}", a.rule), format!("{:?}", b.rule), "node {node}");
            assert!((a.gain - b.gain).abs() <= 1e-9 * b.gain.abs(), "node {node}: {} against {}", a.gain, b.gain);
        }
    }

    #[test]
    fn noise_is_the_gradients_spread_over_the_hessian() {
        let mut h = ExactHistograms::new(&[2], 1);
        for (g, hess) in [(1.0, 0.5), (-1.0, 0.5), (3.0, 1.0)] {
            h.add_row(0, &[0], g, hess);
        }
        // mean 1: (0 + 4 + 4) / 2.0
        assert!((h.node_noise(0, Criterion::Newton { lambda: 1.0 }) - 4.0).abs() < 1e-12);
        assert_eq!(h.node_stats(0), [3.0, 3.0, 2.0]);
    }

    #[test]
    fn bytes_round_trip_and_corrupt_bytes_are_refused() {
        let h = histograms_of(&rows(100));
        let bytes = h.to_bytes();
        assert_eq!(ExactHistograms::from_bytes(&bytes).unwrap(), h);
        for cut in [0, 7, 8, 16, 24, 40, bytes.len() - 1] {
            assert!(ExactHistograms::from_bytes(&bytes[..cut]).is_err(), "{cut} bytes");
        }
        let mut other = ExactHistograms::new(&[4, 4], 3);
        assert!(other.merge(&h).is_err());
    }

    /// Sums that fit in 64 bits travel in 8 bytes each, others in 16, and
    /// both read back to the same bits; a width of neither is refused.
    #[test]
    fn sums_travel_in_8_bytes_where_they_fit() {
        let small = histograms_of(&rows(100));
        let mut large = small.clone();
        large.sums[5] = i128::from(i64::MAX) + 1;
        large.sums[6] = i128::from(i64::MIN) - 1;
        let (narrow, wide) = (small.to_bytes(), large.to_bytes());
        assert_eq!(wide.len() - narrow.len(), 8 * small.sums.len());
        assert_eq!(ExactHistograms::from_bytes(&narrow).unwrap(), small);
        assert_eq!(ExactHistograms::from_bytes(&wide).unwrap(), large);
        let width_at = 8 * (3 + small.offsets.len());
        let mut odd = narrow.clone();
        odd[width_at] = 4;
        let error = ExactHistograms::from_bytes(&odd).unwrap_err().to_string();
        assert!(error.contains("width"), "{error}");
    }
}
