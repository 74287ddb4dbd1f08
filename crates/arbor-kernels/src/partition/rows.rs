//! Stable in-place partition of a node's rows into its two children.

use arbor_quantize::BinColumn;
use pulp::{Simd, WithSimd};

use crate::histogram::row::RowBins;
use crate::split::rule::{threshold_test, SplitRule};

/// Reorders `rows` so rows that `rule` sends left (by their bin in
/// `column`) come first, both sides keeping their order; returns how many
/// went left. A threshold is tested by comparison, with no per-bin table to
/// build. `scratch`, at least as long as `rows` (a shorter one panics), holds
/// the right side on its way: callers lend one buffer to every node.
pub fn partition_rows(rows: &mut [u32], column: &BinColumn, rule: &SplitRule, scratch: &mut [u32]) -> usize {
    match column {
        BinColumn::U8(bins) => partition_by_bin(rows, |r| usize::from(bins[r]), rule, scratch),
        BinColumn::U16(bins) => partition_by_bin(rows, |r| usize::from(bins[r]), rule, scratch),
    }
}

/// [`partition_rows`] reading each row's bin of feature `f` from row-major
/// bins: the same order and count as over that feature's column.
pub fn partition_row_bins(rows: &mut [u32], bins: &RowBins, f: usize, rule: &SplitRule, scratch: &mut [u32]) -> usize {
    assert!(f < bins.n_features(), "feature {f} of {}", bins.n_features());
    partition_by_bin(rows, |r| usize::from(bins.get(r, f)), rule, scratch)
}

/// The partition of rows by `rule` on each row's bin as `bin_of(row)`
/// reads it, whatever holds the bins, dispatched to the CPU's SIMD level.
fn partition_by_bin(rows: &mut [u32], bin_of: impl Fn(usize) -> usize, rule: &SplitRule, scratch: &mut [u32]) -> usize {
    assert!(scratch.len() >= rows.len(), "partition: scratch of {} for {} rows", scratch.len(), rows.len());
    crate::dispatch::run(PartitionKernel { rows, bin_of, rule, scratch })
}

struct PartitionKernel<'a, F> {
    rows: &'a mut [u32],
    bin_of: F,
    rule: &'a SplitRule,
    scratch: &'a mut [u32],
}

impl<F: Fn(usize) -> usize> WithSimd for PartitionKernel<'_, F> {
    type Output = usize;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> usize {
        let PartitionKernel { rows, bin_of, rule, scratch } = self;
        match rule {
            SplitRule::Threshold { bin, missing_left } => {
                let test = threshold_test(*bin, *missing_left);
                partition_by(rows, |&r| test(bin_of(r as usize)), scratch)
            }
            SplitRule::Categories { goes_left } => partition_by(rows, |&r| goes_left[bin_of(r as usize)], scratch),
        }
    }
}

/// Stably reorders `items` so those `goes_left` picks come first; returns
/// how many did. Branch-free: every item is written to both sides (the
/// right one is `scratch`, as long as `items` at least) and only its own
/// side advances, since a split's direction is as good as random to the
/// branch predictor. An item lands at `items[n_left]` only after
/// `items[i]`, `i >= n_left`, has been read. Rows (by id) and row records
/// both partition here.
#[inline(always)]
pub(crate) fn partition_by<T: Copy>(items: &mut [T], goes_left: impl Fn(&T) -> bool, scratch: &mut [T]) -> usize {
    let n = items.len();
    let scratch = &mut scratch[..n];
    let (mut n_left, mut n_right) = (0, 0);
    for i in 0..n {
        let item = items[i];
        let left = usize::from(goes_left(&item));
        // Both sides' next slots are at most `i`: the `min`s say so to the
        // compiler, which then checks no bounds.
        items[n_left.min(i)] = item;
        scratch[n_right.min(i)] = item;
        n_left += left;
        n_right += 1 - left;
    }
    items[n_left..].copy_from_slice(&scratch[..n_right]);
    n_left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_is_stable() {
        let column = BinColumn::U8(vec![0, 1, 2, 1, 0, 2]);
        let mut rows = vec![5, 4, 3, 2, 1, 0];
        let rule = SplitRule::Categories { goes_left: vec![true, false, true] };
        let n = partition_rows(&mut rows, &column, &rule, &mut [0; 6]);
        assert_eq!(n, 4);
        assert_eq!(rows, vec![5, 4, 2, 0, 3, 1]);
    }

    /// A threshold partitions as the per-bin table of [`SplitRule::goes_left`] does.
    #[test]
    fn thresholds_partition_as_their_tables() {
        let column = BinColumn::U16((0..300u16).rev().chain(0..300).collect());
        for (bin, missing_left) in [(0, false), (0, true), (1, false), (150, true), (298, false), (299, true)] {
            let rule = SplitRule::Threshold { bin, missing_left };
            let table = SplitRule::Categories { goes_left: rule.goes_left(300) };
            let mut by_rule: Vec<u32> = (0..600).collect();
            let mut by_table = by_rule.clone();
            let n = partition_rows(&mut by_rule, &column, &rule, &mut [0; 600]);
            assert_eq!(n, partition_rows(&mut by_table, &column, &table, &mut [0; 600]));
            assert_eq!(by_rule, by_table, "bin {bin}, missing left {missing_left}");
        }
    }

    proptest::proptest! {
        /// Over row-major bins, any subset of rows in any order partitions
        /// as it does over each feature's column: the same rows left, in the
        /// same order, for thresholds (missing left or right) and category sets.
        #[test]
        fn row_bins_partition_as_columns(
            values in proptest::collection::vec(proptest::collection::vec(-3i32..40, 1..200), 3),
            picks in proptest::collection::vec(proptest::prelude::any::<u16>(), 0..300),
            last in 0u16..50,
            missing_left in proptest::prelude::any::<bool>(),
            left_set in proptest::prelude::any::<u64>(),
        ) {
            use arbor_quantize::{BinnedMatrix, FeatureColumn, QuantizeParams};
            let n = values.iter().map(Vec::len).min().unwrap_or(0);
            // Negative values are missing, so bin 0 occurs.
            let columns: Vec<FeatureColumn> = values
                .iter()
                .map(|v| FeatureColumn::Numeric(v[..n].iter().map(|&x| if x < 0 { f64::NAN } else { f64::from(x) }).collect::<Vec<_>>().into()))
                .collect();
            let matrix = BinnedMatrix::fit(&columns, &QuantizeParams { max_bins: 16, min_bin_size: 1, ..Default::default() });
            let bins = RowBins::new(&matrix).expect("at most 256 bins");
            let rows: Vec<u32> = picks.iter().map(|&p| u32::from(p) % n as u32).collect();
            for f in 0..3 {
                let n_bins = matrix.mapper(f).n_bins();
                for rule in [
                    SplitRule::Threshold { bin: last % n_bins as u16, missing_left },
                    SplitRule::Categories { goes_left: (0..n_bins).map(|b| left_set >> (b % 64) & 1 == 1).collect() },
                ] {
                    let (mut by_column, mut by_row) = (rows.clone(), rows.clone());
                    let left = partition_rows(&mut by_column, matrix.column(f), &rule, &mut vec![0; rows.len()]);
                    proptest::prop_assert_eq!(partition_row_bins(&mut by_row, &bins, f, &rule, &mut vec![0; rows.len()]), left);
                    proptest::prop_assert_eq!(&by_row, &by_column);
                }
            }
        }
    }
}
