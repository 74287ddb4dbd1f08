//! Dense histograms of one feature column over a node's rows.

use arbor_quantize::BinColumn;
use pulp::{Simd, WithSimd};

use crate::dispatch::{prefetch, row_ahead};
use crate::histogram::target::{HistogramTarget, RowStats};

/// Adds the statistics of `rows` to `hist` (`n_bins * target.stride()` values,
/// bin-major), reading each row's bin from `column`.
///
/// `weights[r]` is row `r`'s weight (sample weight times its bootstrap
/// multiplicity; unused for gradients, which carry their weight); `counts[r]`
/// its multiplicity. Sums are in `f64`, so a
/// histogram minus another is exact enough to never invent a split.
pub fn build_histogram(
    column: &BinColumn,
    rows: &[u32],
    weights: &[f64],
    counts: &[f64],
    target: &HistogramTarget<'_>,
    hist: &mut [f64],
) {
    crate::dispatch::run(HistogramKernel { column, rows, weights, counts, target, hist })
}

/// Sets `hist` (`n_bins * stride` values, bin-major, `stride <= 4`) to the
/// histogram of `rows`, each adding its packed statistics `stats[r]` (see
/// [`HistogramTarget::row_stats`]) as one four-lane add into `wide`, a scratch
/// buffer of four-lane bins. Rows deep in a tree are scattered, and this
/// reads two arrays per row where [`build_histogram`] reads four or five.
///
/// Equal to [`build_histogram`] to the bit: every bin receives its rows in
/// the order of `rows`, and the zero lanes a row adds change nothing (a sum
/// of non-negative weights from `+0` is never `-0`).
pub fn build_histogram_packed(
    column: &BinColumn,
    rows: &[u32],
    stats: &[RowStats],
    wide: &mut Vec<RowStats>,
    hist: &mut [f64],
    stride: usize,
) {
    assert!((1..=4).contains(&stride) && hist.len() % stride == 0, "bins of at most four values");
    let n_bins = hist.len() / stride;
    wide.clear();
    wide.resize(n_bins, [0.0; 4]);
    crate::dispatch::run(PackedHistogramKernel { column, rows, stats, wide });
    for (out, cell) in hist.chunks_exact_mut(stride).zip(wide.iter()) {
        // A lane loop, not `copy_from_slice`: a copy of a run-time length is a `memmove` call per bin.
        for (o, &c) in out.iter_mut().zip(cell) {
            *o = c;
        }
    }
}

struct PackedHistogramKernel<'a> {
    column: &'a BinColumn,
    rows: &'a [u32],
    stats: &'a [RowStats],
    wide: &'a mut [RowStats],
}

impl WithSimd for PackedHistogramKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let PackedHistogramKernel { column, rows, stats, wide } = self;
        match column {
            BinColumn::U8(bins) => accumulate_packed(bins, rows, stats, wide),
            BinColumn::U16(bins) => accumulate_packed(bins, rows, stats, wide),
        }
    }
}

/// Adds `stats[r]` of each row into its bin of `wide`, prefetching the bin
/// and statistics of the row `PREFETCH_ROWS` places ahead.
#[inline(always)]
fn accumulate_packed<B: Copy + Into<usize>>(bins: &[B], rows: &[u32], stats: &[RowStats], wide: &mut [RowStats]) {
    for (i, &r) in rows.iter().enumerate() {
        if let Some(a) = row_ahead(rows, i) {
            prefetch(bins, a);
            prefetch(stats, a);
        }
        let r = r as usize;
        let cell = &mut wide[bins[r].into()];
        for (c, v) in cell.iter_mut().zip(stats[r]) {
            *c += v;
        }
    }
}

struct HistogramKernel<'a, 'b> {
    column: &'a BinColumn,
    rows: &'a [u32],
    weights: &'a [f64],
    counts: &'a [f64],
    target: &'a HistogramTarget<'b>,
    hist: &'a mut [f64],
}

impl WithSimd for HistogramKernel<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let HistogramKernel { column, rows, weights, counts, target, hist } = self;
        match column {
            BinColumn::U8(bins) => accumulate(bins, rows, weights, counts, target, hist),
            BinColumn::U16(bins) => accumulate(bins, rows, weights, counts, target, hist),
        }
    }
}

/// Adds `rows` to `hist`. Rows deep in a tree are scattered over per-row
/// arrays larger than the cache, so each iteration prefetches the bin and
/// values of the row `PREFETCH_ROWS` places ahead.
#[inline(always)]
fn accumulate<B: Copy + Into<usize>>(
    bins: &[B],
    rows: &[u32],
    weights: &[f64],
    counts: &[f64],
    target: &HistogramTarget<'_>,
    hist: &mut [f64],
) {
    match *target {
        HistogramTarget::Classes { labels, n_classes } => {
            let stride = n_classes + 1;
            for (i, &r) in rows.iter().enumerate() {
                if let Some(a) = row_ahead(rows, i) {
                    prefetch(bins, a);
                    prefetch(labels, a);
                    prefetch(weights, a);
                    prefetch(counts, a);
                }
                let r = r as usize;
                let base = bins[r].into() * stride;
                hist[base + labels[r] as usize] += weights[r];
                hist[base + n_classes] += counts[r];
            }
        }
        HistogramTarget::Values { y } => {
            for (i, &r) in rows.iter().enumerate() {
                if let Some(a) = row_ahead(rows, i) {
                    prefetch(bins, a);
                    prefetch(y, a);
                    prefetch(weights, a);
                    prefetch(counts, a);
                }
                let r = r as usize;
                let base = bins[r].into() * 3;
                let w = weights[r];
                hist[base] += counts[r];
                hist[base + 1] += w;
                hist[base + 2] += w * y[r];
            }
        }
        HistogramTarget::Gradients { grad, hess } => {
            for (i, &r) in rows.iter().enumerate() {
                if let Some(a) = row_ahead(rows, i) {
                    prefetch(bins, a);
                    prefetch(grad, a);
                    prefetch(hess, a);
                    prefetch(counts, a);
                }
                let r = r as usize;
                let base = bins[r].into() * 3;
                hist[base] += counts[r];
                hist[base + 1] += grad[r];
                hist[base + 2] += hess[r];
            }
        }
        HistogramTarget::Packed { stats } => {
            for (i, &r) in rows.iter().enumerate() {
                if let Some(a) = row_ahead(rows, i) {
                    prefetch(bins, a);
                    prefetch(stats, a);
                }
                let r = r as usize;
                let base = bins[r].into() * 3;
                let [count, grad, hess, _] = stats[r];
                hist[base] += count;
                hist[base + 1] += grad;
                hist[base + 2] += hess;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_histogram_sums_per_bin() {
        let column = BinColumn::U8(vec![0, 2, 2, 1]);
        let y = [1.0, 2.0, 3.0, 4.0];
        let w = [1.0, 2.0, 1.0, 1.0];
        let c = [1.0, 2.0, 1.0, 1.0];
        let mut hist = vec![0.0; 9];
        build_histogram(&column, &[1, 2, 3], &w, &c, &HistogramTarget::Values { y: &y }, &mut hist);
        assert_eq!(hist, vec![0.0, 0.0, 0.0, 1.0, 1.0, 4.0, 3.0, 3.0, 7.0]);
    }
}
