//! Histograms of per-bin statistics over a node's rows.

use arbor_quantize::BinColumn;
use pulp::{Simd, WithSimd};

/// What is being predicted, as the histogram kernels see it.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// Class index per row, in `0..n_classes`.
    Classes {
        /// Class of each row (indexed by row id).
        labels: &'a [u32],
        /// Number of classes.
        n_classes: usize,
    },
    /// A real value per row.
    Values {
        /// Response of each row (indexed by row id).
        y: &'a [f64],
    },
    /// Gradient boosting: first and second derivatives of the loss per row,
    /// already multiplied by the row's weight.
    Gradients {
        /// Gradient of each row (indexed by row id).
        grad: &'a [f64],
        /// Hessian of each row (indexed by row id).
        hess: &'a [f64],
    },
}

impl Target<'_> {
    /// Statistics per bin: class weights then count for classes; count, weight
    /// and weighted sum of `y` for values; count, gradient and hessian sums for gradients.
    pub fn stride(&self) -> usize {
        match self {
            Target::Classes { n_classes, .. } => n_classes + 1,
            Target::Values { .. } | Target::Gradients { .. } => 3,
        }
    }
}

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
    target: &Target<'_>,
    hist: &mut [f64],
) {
    crate::dispatch::run(HistogramKernel { column, rows, weights, counts, target, hist })
}

struct HistogramKernel<'a, 'b> {
    column: &'a BinColumn,
    rows: &'a [u32],
    weights: &'a [f64],
    counts: &'a [f64],
    target: &'a Target<'b>,
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

#[inline(always)]
fn accumulate<B: Copy + Into<usize>>(
    bins: &[B],
    rows: &[u32],
    weights: &[f64],
    counts: &[f64],
    target: &Target<'_>,
    hist: &mut [f64],
) {
    match *target {
        Target::Classes { labels, n_classes } => {
            let stride = n_classes + 1;
            for &r in rows {
                let r = r as usize;
                let base = bins[r].into() * stride;
                hist[base + labels[r] as usize] += weights[r];
                hist[base + n_classes] += counts[r];
            }
        }
        Target::Values { y } => {
            for &r in rows {
                let r = r as usize;
                let base = bins[r].into() * 3;
                let w = weights[r];
                hist[base] += counts[r];
                hist[base + 1] += w;
                hist[base + 2] += w * y[r];
            }
        }
        Target::Gradients { grad, hess } => {
            for &r in rows {
                let r = r as usize;
                let base = bins[r].into() * 3;
                hist[base] += counts[r];
                hist[base + 1] += grad[r];
                hist[base + 2] += hess[r];
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
        build_histogram(&column, &[1, 2, 3], &w, &c, &Target::Values { y: &y }, &mut hist);
        assert_eq!(hist, vec![0.0, 0.0, 0.0, 1.0, 1.0, 4.0, 3.0, 3.0, 7.0]);
    }
}
