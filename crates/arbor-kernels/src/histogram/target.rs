//! What a histogram sums per row: the target as the histogram kernels see it.

/// What is being predicted, as the histogram kernels see it.
#[derive(Clone, Copy, Debug)]
pub enum HistogramTarget<'a> {
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
    /// Gradient boosting's rows as the row-wise kernel reads them: per row
    /// id, its count, gradient and hessian (as in [`HistogramTarget::Gradients`]) and
    /// a zero. Boosting that builds histograms row-wise keeps only these, not
    /// separate gradient and hessian arrays as well.
    Packed {
        /// `[count, gradient, hessian, 0]` of each row (indexed by row id).
        stats: &'a [RowStats],
    },
}

impl HistogramTarget<'_> {
    /// Adds row `r`'s statistics to one histogram cell (`stride()` values).
    #[inline(always)]
    pub fn add_row(&self, cell: &mut [f64], r: usize, weights: &[f64], counts: &[f64]) {
        match *self {
            HistogramTarget::Classes { labels, n_classes } => {
                cell[labels[r] as usize] += weights[r];
                cell[n_classes] += counts[r];
            }
            HistogramTarget::Values { y } => {
                cell[0] += counts[r];
                cell[1] += weights[r];
                cell[2] += weights[r] * y[r];
            }
            HistogramTarget::Gradients { grad, hess } => {
                cell[0] += counts[r];
                cell[1] += grad[r];
                cell[2] += hess[r];
            }
            HistogramTarget::Packed { stats } => {
                let [count, grad, hess, _] = stats[r];
                cell[0] += count;
                cell[1] += grad;
                cell[2] += hess;
            }
        }
    }

    /// Row `r`'s statistics as one bin of at most four values, padded with
    /// zeros: what [`HistogramTarget::add_row`] adds to each of the bin's values (zero
    /// where it adds nothing), for [`crate::build_row_histograms`] (three-value
    /// targets) and [`build_histogram_packed`](crate::build_histogram_packed); `None` for more than three
    /// classes, whose bins are wider.
    #[inline(always)]
    pub fn row_stats(&self, r: usize, weights: &[f64], counts: &[f64]) -> Option<RowStats> {
        match *self {
            HistogramTarget::Classes { n_classes, .. } if n_classes > 3 => None,
            HistogramTarget::Classes { labels, n_classes } => {
                let mut stats = [0.0; 4];
                stats[labels[r] as usize] = weights[r];
                stats[n_classes] = counts[r];
                Some(stats)
            }
            HistogramTarget::Values { y } => Some([counts[r], weights[r], weights[r] * y[r], 0.0]),
            HistogramTarget::Gradients { grad, hess } => Some([counts[r], grad[r], hess[r], 0.0]),
            HistogramTarget::Packed { stats } => Some(stats[r]),
        }
    }

    /// Statistics per bin: class weights then count for classes; count, weight
    /// and weighted sum of `y` for values; count, gradient and hessian sums for gradients.
    pub fn stride(&self) -> usize {
        match self {
            HistogramTarget::Classes { n_classes, .. } => n_classes + 1,
            HistogramTarget::Values { .. } | HistogramTarget::Gradients { .. } | HistogramTarget::Packed { .. } => 3,
        }
    }
}

/// A row's statistics for [`build_row_histograms`](crate::build_row_histograms): count and two sums, as
/// [`crate::HistogramTarget::Values`] and [`crate::HistogramTarget::Gradients`] lay out a bin,
/// then a zero, so one bin's update is a single four-lane add.
pub type RowStats = [f64; 4];
