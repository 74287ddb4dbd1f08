//! Histograms of many features at once from a row-major binned matrix: a
//! node's rows are read once, not once per feature, and each row's
//! statistics are one packed load. This is what makes subtraction-mode
//! growth (boosting, `max_features=all`) fast.

use std::ops::Range;

use arbor_quantize::{BinColumn, BinnedMatrix};
use pulp::{Simd, WithSimd};

use crate::dispatch::{prefetch, row_ahead};
use crate::histogram::target::RowStats;

/// The binned matrix row-major, one byte per cell (every feature must have
/// at most 256 bins), with where each feature's bins start in a histogram of
/// every feature.
#[derive(Clone, Debug)]
pub struct RowBins {
    pub(crate) bins: Vec<u8>,
    pub(crate) n_features: usize,
    /// Feature `f`'s first bin in the all-features histogram; `n_features + 1` entries.
    pub(crate) offsets: Vec<u32>,
}

impl RowBins {
    /// A row-major copy of `matrix`, or `None` when a feature has more than
    /// 256 bins (those keep the column-wise kernels).
    pub fn new(matrix: &BinnedMatrix) -> Option<RowBins> {
        let mut rows = RowBins::empty(matrix)?;
        for f in 0..matrix.n_features() {
            if let BinColumn::U8(codes) = matrix.column(f) {
                rows.put(f, codes);
            }
        }
        Some(rows)
    }

    /// [`RowBins::new`] that takes the codes out of `matrix` a column at a
    /// time as it copies them, so they are never held twice (the matrix
    /// keeps its mappers and shape, with no codes). `None`, with the matrix
    /// untouched, when a feature has more than 256 bins.
    pub fn take(matrix: &mut BinnedMatrix) -> Option<RowBins> {
        let mut rows = RowBins::empty(matrix)?;
        for f in 0..matrix.n_features() {
            if let BinColumn::U8(codes) = matrix.take_column(f) {
                rows.put(f, &codes);
            }
        }
        Some(rows)
    }

    /// Zeroed bins of `matrix`'s shape and its offsets; `None` when a
    /// feature's codes are not bytes.
    fn empty(matrix: &BinnedMatrix) -> Option<RowBins> {
        let n_features = matrix.n_features();
        let mut offsets = Vec::with_capacity(n_features + 1);
        offsets.push(0u32);
        for f in 0..n_features {
            let BinColumn::U8(_) = matrix.column(f) else { return None };
            offsets.push(offsets[f] + matrix.mapper(f).n_bins() as u32);
        }
        Some(RowBins { bins: vec![0u8; matrix.n_rows() * n_features], n_features, offsets })
    }

    /// Writes feature `f`'s codes into every row.
    fn put(&mut self, f: usize, codes: &[u8]) {
        for (row, &b) in self.bins.chunks_exact_mut(self.n_features).zip(codes) {
            row[f] = b;
        }
    }

    /// Number of features per row.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The bin of row `row` in feature `f`.
    #[inline]
    pub fn get(&self, row: usize, f: usize) -> u8 {
        self.bins[row * self.n_features + f]
    }

    /// Where each feature's bins start in an all-features histogram (`n_features + 1` entries).
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Bytes held.
    pub fn size_bytes(&self) -> usize {
        self.bins.len() + self.offsets.len() * 4
    }
}

/// Nodes with at least this many rows accumulate into four-lane bins (one
/// vector add per cell), copied out at the end; smaller nodes add straight
/// into the three-value histogram, where clearing and copying the wide bins
/// would cost more.
pub(crate) const WIDE_ROWS: usize = 128;

/// Adds `stats[r]` of every row of `rows` to the histograms of `features`.
///
/// `hist` holds exactly those features' histograms, three values per bin,
/// laid out as in an all-features histogram (starting at
/// `offsets[features.start]`), and must be zero on entry. Every bin receives
/// its rows in the order of `rows`, so the sums equal the column-wise
/// [`crate::build_histogram`]'s to the bit.
pub fn build_row_histograms(
    bins: &RowBins,
    rows: &[u32],
    stats: &[RowStats],
    features: Range<usize>,
    hist: &mut [f64],
) {
    crate::dispatch::run(RowHistogramKernel { bins, rows, stats, features, hist })
}

struct RowHistogramKernel<'a> {
    bins: &'a RowBins,
    rows: &'a [u32],
    stats: &'a [RowStats],
    features: Range<usize>,
    hist: &'a mut [f64],
}

impl WithSimd for RowHistogramKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let RowHistogramKernel { bins, rows, stats, features, hist } = self;
        let nf = bins.n_features;
        let base = bins.offsets[features.start];
        // Each feature's first slot, relative to this histogram, in values.
        let starts: Vec<usize> = bins.offsets[features.clone()].iter().map(|&o| (o - base) as usize * 3).collect();
        let expected = (bins.offsets[features.end] - base) as usize * 3;
        assert_eq!(hist.len(), expected, "the histogram holds the features' bins");
        let (first, last) = (features.start, features.end);
        if rows.len() < WIDE_ROWS {
            for &r in rows {
                let r = r as usize;
                let s = stats[r];
                for (&b, &start) in bins.bins[r * nf + first..r * nf + last].iter().zip(&starts) {
                    let cell = &mut hist[start + b as usize * 3..start + b as usize * 3 + 3];
                    cell[0] += s[0];
                    cell[1] += s[1];
                    cell[2] += s[2];
                }
            }
            return;
        }
        // Four-lane bins, each feature's packed after the previous one's, so
        // clearing and copying out touch only real bins. (Spaced 256 apart,
        // a byte's bin of every feature sat 8 KiB from the next feature's,
        // on the same few L1 sets: features of few bins thrashed them.)
        let mut wide = vec![[0.0f64; 4]; expected / 3];
        let mut per_feature: Vec<&mut [[f64; 4]]> = Vec::with_capacity(last - first);
        let mut rest = wide.as_mut_slice();
        for f in features.clone() {
            let (feature, tail) = rest.split_at_mut((bins.offsets[f + 1] - bins.offsets[f]) as usize);
            per_feature.push(feature);
            rest = tail;
        }
        accumulate(bins, rows, stats, features, &mut per_feature);
        for (o, cell) in hist.chunks_exact_mut(3).zip(&wide) {
            o.copy_from_slice(&cell[..3]);
        }
    }
}

/// Adds every row's statistics to its bins of `features`, one four-lane
/// bin set per feature in `wide`, rows in order (a bin's sum adds its rows
/// in the order of `rows`).
#[inline(always)]
fn accumulate(bins: &RowBins, rows: &[u32], stats: &[RowStats], features: Range<usize>, wide: &mut [&mut [[f64; 4]]]) {
    let nf = bins.n_features;
    let (first, last) = (features.start, features.end);
    // Rows deep in a tree are scattered over the matrix: ask for a later
    // row's statistics and bins while this one's are added.
    for (i, &r) in rows.iter().enumerate() {
        if let Some(a) = row_ahead(rows, i) {
            prefetch(stats, a);
            prefetch(&bins.bins, a * nf + first);
        }
        let r = r as usize;
        let s = stats[r];
        for (&b, feature) in bins.bins[r * nf + first..r * nf + last].iter().zip(wide.iter_mut()) {
            let cell = &mut feature[b as usize];
            for (c, v) in cell.iter_mut().zip(s) {
                *c += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use arbor_quantize::{FeatureColumn, QuantizeParams};

    use super::*;
    use crate::{build_histogram, HistogramTarget};

    #[test]
    fn row_histograms_equal_column_histograms() {
        // 50 rows take the narrow path, 1500 the wide one (features of 13 and 5 bins)
        for n in [50, 1500] {
            row_histograms_equal_column_histograms_on(n);
        }
    }

    fn row_histograms_equal_column_histograms_on(n: usize) {
        let a: Vec<f64> = (0..n).map(|i| (i * 7 % 13) as f64).collect();
        let b: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { f64::NAN } else { (i % 4) as f64 }).collect();
        let matrix = BinnedMatrix::fit(
            &[FeatureColumn::Numeric(a.into()), FeatureColumn::Numeric(b.into())],
            &QuantizeParams::default(),
        );
        let bins = RowBins::new(&matrix).unwrap();
        let grad: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let hess: Vec<f64> = (0..n).map(|i| 1.0 + (i as f64).cos().abs()).collect();
        let counts = vec![1.0; n];
        let stats: Vec<RowStats> = (0..n).map(|r| [counts[r], grad[r], hess[r], 0.0]).collect();
        let rows: Vec<u32> = (0..n as u32).filter(|r| r % 3 != 1).collect();
        let total = bins.offsets()[2] as usize * 3;
        let mut rowwise = vec![0.0; total];
        build_row_histograms(&bins, &rows, &stats, 0..2, &mut rowwise);
        let target = HistogramTarget::Gradients { grad: &grad, hess: &hess };
        for f in 0..2 {
            let range = bins.offsets()[f] as usize * 3..bins.offsets()[f + 1] as usize * 3;
            let mut column = vec![0.0; range.len()];
            build_histogram(matrix.column(f), &rows, &counts, &counts, &target, &mut column);
            assert_eq!(column, rowwise[range.clone()]);
            // one feature on its own gives the same slice
            let mut alone = vec![0.0; range.len()];
            build_row_histograms(&bins, &rows, &stats, f..f + 1, &mut alone);
            assert_eq!(alone, column);
        }
    }
}
