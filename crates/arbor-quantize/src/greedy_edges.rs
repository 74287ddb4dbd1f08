//! LightGBM's greedy bin boundaries (`bin_boundaries=greedy`,
//! `docs/algorithms.md`, "Histogram binning"): values seen in at least a
//! bin's share of the rows get bins of their own, the rest are filled in
//! ascending order to the share left per bin left, and zero is a bin of its
//! own between the negative and the positive values, which share the bins in
//! proportion to their rows.

use crate::bin_mapper::midpoint;

/// Half the width of the zero bin: values in `(-ZERO, ZERO]` are zero (LightGBM's `kZeroThreshold`).
pub(crate) const ZERO: f64 = 1e-35;

/// The upper edges of all value bins but the last, at most `value_bins - 1`
/// of them, for the distinct non-missing values `distinct` (ascending, each
/// with its count); a bin holds at least `min_bin_size` rows where the
/// values allow.
pub(crate) fn greedy_edges(distinct: &[(f64, usize)], value_bins: usize, min_bin_size: usize) -> Vec<f64> {
    let negative_end = distinct.partition_point(|d| d.0 <= -ZERO);
    let positive_start = distinct.partition_point(|d| d.0 <= ZERO);
    let (negative, positive) = (&distinct[..negative_end], &distinct[positive_start..]);
    let rows = |values: &[(f64, usize)]| values.iter().map(|d| d.1).sum::<usize>();
    let nonzero_rows = rows(negative) + rows(positive);
    let mut edges = Vec::new();
    if !negative.is_empty() && value_bins > 1 {
        // The negative values' share of the bins that are not zero's, rounded down, at least one.
        let share = rows(negative) as f64 / nonzero_rows as f64 * (value_bins - 1) as f64;
        edges = run_edges(negative, (share as usize).max(1), min_bin_size);
        edges.push(-ZERO);
    }
    let positive_bins = value_bins.saturating_sub(1 + edges.len());
    if !positive.is_empty() && positive_bins > 0 {
        edges.push(ZERO);
        edges.extend(run_edges(positive, positive_bins, min_bin_size));
    }
    edges
}

/// The inner edges of at most `max_bins` bins over one run of distinct
/// values (all negative or all positive).
fn run_edges(distinct: &[(f64, usize)], max_bins: usize, min_bin_size: usize) -> Vec<f64> {
    let mut edges = Vec::new();
    let min_bin_size = min_bin_size.max(1);
    if distinct.len() <= max_bins {
        // A bin per value, rare values merged into the next until a bin holds `min_bin_size` rows.
        let mut in_bin = 0;
        for pair in distinct.windows(2) {
            in_bin += pair[0].1;
            if in_bin >= min_bin_size {
                edges.push(midpoint(pair[0].0, pair[1].0));
                in_bin = 0;
            }
        }
        return edges;
    }
    let total: usize = distinct.iter().map(|d| d.1).sum();
    let max_bins = max_bins.min(total / min_bin_size).max(1);
    let share = total as f64 / max_bins as f64;
    let big: Vec<bool> = distinct.iter().map(|d| d.1 as f64 >= share).collect();
    let big_count = big.iter().filter(|&&b| b).count();
    let mut bins_left = max_bins.saturating_sub(big_count);
    let mut rows_left = total - distinct.iter().zip(&big).filter(|(_, &b)| b).map(|(d, _)| d.1).sum::<usize>();
    // Rows per bin for the values that are not big (infinite when no bin is left for them).
    let mut target = rows_left as f64 / bins_left as f64;
    let mut in_bin = 0;
    for i in 0..distinct.len() - 1 {
        let (value, count) = distinct[i];
        if !big[i] {
            rows_left -= count;
        }
        in_bin += count;
        let closes = big[i] || in_bin as f64 >= target || (big[i + 1] && in_bin as f64 >= (target * 0.5).max(1.0));
        if closes {
            edges.push(midpoint(value, distinct[i + 1].0));
            if edges.len() + 1 >= max_bins {
                break;
            }
            in_bin = 0;
            if !big[i] {
                bins_left = bins_left.saturating_sub(1);
                target = rows_left as f64 / bins_left as f64;
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct values with their counts, from raw values (the mapper's own counting).
    fn distinct(values: &[f64]) -> Vec<(f64, usize)> {
        crate::bin_mapper::distinct_counts(values)
    }

    /// How many of `values` fall in each bin of `edges` (a value on an edge stays below it).
    fn bin_counts(edges: &[f64], values: &[f64]) -> Vec<usize> {
        let mut counts = vec![0; edges.len() + 1];
        for &v in values {
            counts[edges.partition_point(|&e| e < v)] += 1;
        }
        counts
    }

    #[test]
    fn few_values_get_a_bin_each_and_zero_its_own() {
        let values = [-2.0, -2.0, -1.0, 0.0, 0.0, 1.0, 3.0, 3.0];
        let edges = greedy_edges(&distinct(&values), 255, 1);
        assert_eq!(edges, vec![-1.5, -ZERO, ZERO, 2.0]);
        assert_eq!(bin_counts(&edges, &values), vec![2, 1, 2, 1, 2]);
    }

    #[test]
    fn rare_values_merge_into_the_next() {
        // 1 and 2 are seen once each: with min_bin_size 3 they share 3's bin.
        let mut values = vec![1.0, 2.0];
        values.extend([3.0; 5]);
        values.extend([4.0; 5]);
        let edges = greedy_edges(&distinct(&values), 255, 3);
        assert_eq!(edges, vec![ZERO, 3.5]);
        assert_eq!(bin_counts(&edges, &values), vec![0, 7, 5]);
    }

    #[test]
    fn a_frequent_value_gets_a_bin_of_its_own() {
        // 10,000 distinct positive values and one value held by a fifth of the rows.
        let mut values: Vec<f64> = (1..=10_000).map(f64::from).collect();
        values.extend([5_000.5; 2_500]);
        let edges = greedy_edges(&distinct(&values), 64, 5);
        assert!(edges.len() < 64, "{} edges", edges.len());
        let counts = bin_counts(&edges, &values);
        let own = edges.partition_point(|&e| e < 5_000.5);
        assert_eq!(counts[own], 2_500, "the frequent value alone in its bin: {counts:?}");
        // The other bins share the rest about evenly (12,500 − 2,500 rows over the bins left).
        let rest: Vec<usize> =
            counts.iter().enumerate().filter(|&(b, _)| b != own && b != 0).map(|(_, &c)| c).collect();
        let (low, high) = (rest.iter().min().unwrap(), rest.iter().max().unwrap());
        assert!(*low >= 100 && *high <= 240, "{rest:?}");
    }

    #[test]
    fn negative_and_positive_values_share_the_bins_by_their_rows() {
        // Three quarters of the rows negative: about three quarters of the bins.
        let values: Vec<f64> =
            (0..40_000).map(|i| if i % 4 == 0 { f64::from(i) + 0.5 } else { -f64::from(i) - 0.5 }).collect();
        let edges = greedy_edges(&distinct(&values), 101, 5);
        let negative_bins = edges.partition_point(|&e| e <= -ZERO);
        assert_eq!(negative_bins, 75, "(0.75 × 100) bins end at or below −0, the last at −0");
        assert_eq!(edges[negative_bins - 1], -ZERO);
        assert_eq!(edges[negative_bins], ZERO, "then the (empty) zero bin");
        assert!(edges.len() < 101, "{} edges for 101 bins", edges.len());
        let counts = bin_counts(&edges, &values);
        assert_eq!(counts[negative_bins], 0, "no value is zero");
        assert_eq!(counts.iter().sum::<usize>(), values.len());
        for (b, &c) in counts.iter().enumerate().filter(|&(b, _)| b != negative_bins) {
            assert!((350..=450).contains(&c), "bin {b} holds {c}: {counts:?}");
        }
    }

    #[test]
    fn never_more_bins_than_asked() {
        let values: Vec<f64> = (0..5_000).map(|i| f64::from((i * 7919) % 4_999) - 2_000.0).collect();
        for bins in [2, 3, 4, 16, 255] {
            let edges = greedy_edges(&distinct(&values), bins, 1);
            assert!(edges.len() < bins, "{} edges for {bins} bins", edges.len());
            assert!(edges.windows(2).all(|w| w[0] < w[1]), "ascending: {edges:?}");
        }
    }
}
