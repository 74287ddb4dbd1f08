//! Row-wise histograms of quantized gradients (Shi et al., "Quantized
//! Training of Gradient Boosting Decision Trees", NeurIPS 2022; LightGBM 4's
//! `use_quantized_grad`): each row's count, gradient and hessian are small
//! integers, summed in 32-bit integer lanes, so a bin is 16 bytes instead of
//! the float kernel's 32 and a node's bins of every feature take half the
//! cache.
//!
//! The gradient and hessian scales are powers of two, so a sum scaled back to
//! a float is exact: the histogram written equals, to the bit, what
//! [`crate::build_row_histograms`] sums from the same quantized values held as
//! floats (`[count, q_g · grad_scale, q_h · hess_scale, 0]`). The integer
//! kernel is a faster way to the same model, never a different one.

use std::ops::Range;

use pulp::{Simd, WithSimd};

use crate::dispatch::{prefetch, row_ahead};
use crate::histogram::row::{RowBins, WIDE_ROWS};

/// A row's quantized statistics: its count in the tree (0 or 1), its
/// gradient and hessian in units of their scales, and a zero, so that one
/// bin's update is a single four-lane integer add.
pub type QuantizedStats = [i16; 4];

/// The float value of one unit of the quantized gradient and hessian: powers
/// of two, so that integer sums scale back to floats exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantizedScales {
    /// A gradient unit.
    pub grad: f64,
    /// A hessian unit.
    pub hess: f64,
}

impl QuantizedScales {
    /// Whether both scales are powers of two (normal floats whose mantissa is zero).
    pub fn are_powers_of_two(&self) -> bool {
        let power = |x: f64| x.is_normal() && x > 0.0 && x.to_bits() & ((1u64 << 52) - 1) == 0;
        power(self.grad) && power(self.hess)
    }
}

/// [`crate::build_row_histograms`] over quantized statistics: adds
/// `stats[r]` of every row of `rows` to the histograms of `features`, three
/// floats per bin (count, gradient sum, hessian sum) laid out as in an
/// all-features histogram; `hist` must be zero on entry.
///
/// The caller keeps every sum within 32 bits: `rows.len()` times the largest
/// magnitude in `stats` below `2^31` (checked in debug builds). `scales` must
/// be powers of two.
pub fn build_row_histograms_quantized(
    bins: &RowBins,
    rows: &[u32],
    stats: &[QuantizedStats],
    scales: QuantizedScales,
    features: Range<usize>,
    hist: &mut [f64],
) {
    assert!(scales.are_powers_of_two(), "quantized scales are powers of two, for exact sums");
    crate::dispatch::run(QuantizedKernel { bins, rows, stats, scales, features, hist })
}

struct QuantizedKernel<'a> {
    bins: &'a RowBins,
    rows: &'a [u32],
    stats: &'a [QuantizedStats],
    scales: QuantizedScales,
    features: Range<usize>,
    hist: &'a mut [f64],
}

impl WithSimd for QuantizedKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let QuantizedKernel { bins, rows, stats, scales, features, hist } = self;
        let nf = bins.n_features;
        let base = bins.offsets[features.start];
        let expected = (bins.offsets[features.end] - base) as usize * 3;
        assert_eq!(hist.len(), expected, "the histogram holds the features' bins");
        let (first, last) = (features.start, features.end);
        let unit = [1.0, scales.grad, scales.hess];
        if rows.len() < WIDE_ROWS {
            // Few rows: straight into the floats (each add is exact).
            let starts: Vec<usize> = bins.offsets[features.clone()].iter().map(|&o| (o - base) as usize * 3).collect();
            for &r in rows {
                let r = r as usize;
                let s = stats[r];
                for (&b, &start) in bins.bins[r * nf + first..r * nf + last].iter().zip(&starts) {
                    let cell = &mut hist[start + b as usize * 3..start + b as usize * 3 + 3];
                    for ((c, &v), u) in cell.iter_mut().zip(&s).zip(unit) {
                        *c += f64::from(v) * u;
                    }
                }
            }
            return;
        }
        debug_assert!(
            rows.iter().all(|&r| stats[r as usize].iter().all(|&v| (i64::from(v).abs() * rows.len() as i64) < 1 << 31)),
            "quantized sums fit 32 bits"
        );
        let mut wide = vec![[0i32; 4]; expected / 3];
        let mut per_feature: Vec<&mut [[i32; 4]]> = Vec::with_capacity(last - first);
        let mut rest = wide.as_mut_slice();
        for f in features.clone() {
            let (feature, tail) = rest.split_at_mut((bins.offsets[f + 1] - bins.offsets[f]) as usize);
            per_feature.push(feature);
            rest = tail;
        }
        // Rows deep in a tree are scattered over the matrix: ask for a later
        // row's statistics and bins while this one's are added.
        for (i, &r) in rows.iter().enumerate() {
            if let Some(a) = row_ahead(rows, i) {
                prefetch(stats, a);
                prefetch(&bins.bins, a * nf + first);
            }
            let r = r as usize;
            let s = stats[r].map(i32::from);
            for (&b, feature) in bins.bins[r * nf + first..r * nf + last].iter().zip(per_feature.iter_mut()) {
                let cell = &mut feature[b as usize];
                for (c, v) in cell.iter_mut().zip(s) {
                    *c += v;
                }
            }
        }
        for (o, cell) in hist.chunks_exact_mut(3).zip(&wide) {
            for ((o, &c), u) in o.iter_mut().zip(cell).zip(unit) {
                *o = f64::from(c) * u;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use arbor_quantize::{BinnedMatrix, FeatureColumn, QuantizeParams};

    use super::*;
    use crate::dispatch::{with_simd_level, SimdLevel};
    use crate::{build_row_histograms, RowStats};

    /// The integer kernel writes, to the bit, what the float kernel sums from
    /// the same quantized values held as floats, at every SIMD level, on the
    /// narrow (few rows) and the wide path.
    #[test]
    fn quantized_sums_equal_float_sums_of_the_quantized_values() {
        for n in [60, 3000] {
            let a: Vec<f64> = (0..n).map(|i| (i * 7 % 13) as f64).collect();
            let b: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { f64::NAN } else { (i % 4) as f64 }).collect();
            let c: Vec<f64> = (0..n).map(|i| ((i * 31) % 300) as f64).collect();
            let matrix = BinnedMatrix::fit(
                &[FeatureColumn::Numeric(a.into()), FeatureColumn::Numeric(b.into()), FeatureColumn::Numeric(c.into())],
                &QuantizeParams::default(),
            );
            let bins = RowBins::new(&matrix).unwrap();
            let scales = QuantizedScales { grad: 0.125, hess: 2f64.powi(-20) };
            let quantized: Vec<QuantizedStats> =
                (0..n).map(|i| [i16::from(i % 7 != 0), (i as i16 % 9) - 4, (i as i16 * 5) % 17, 0]).collect();
            let floats: Vec<RowStats> = quantized
                .iter()
                .map(|q| [f64::from(q[0]), f64::from(q[1]) * scales.grad, f64::from(q[2]) * scales.hess, 0.0])
                .collect();
            let rows: Vec<u32> = (0..n as u32).filter(|r| r % 3 != 1).collect();
            let total = bins.offsets()[3] as usize * 3;
            let mut expected = vec![0.0; total];
            build_row_histograms(&bins, &rows, &floats, 0..3, &mut expected);
            for level in SimdLevel::available() {
                let mut got = vec![0.0; total];
                with_simd_level(level, || {
                    build_row_histograms_quantized(&bins, &rows, &quantized, scales, 0..3, &mut got)
                })
                .unwrap();
                assert_eq!(got, expected, "{n} rows at {level}");
                // a group of features alone gives its slice
                let range = bins.offsets()[1] as usize * 3..total;
                let mut part = vec![0.0; range.len()];
                build_row_histograms_quantized(&bins, &rows, &quantized, scales, 1..3, &mut part);
                assert_eq!(part, expected[range]);
            }
        }
    }

    #[test]
    fn scales_must_be_powers_of_two() {
        assert!(QuantizedScales { grad: 0.25, hess: 8.0 }.are_powers_of_two());
        assert!(!QuantizedScales { grad: 0.3, hess: 8.0 }.are_powers_of_two());
        assert!(!QuantizedScales { grad: 0.25, hess: 0.0 }.are_powers_of_two());
        assert!(!QuantizedScales { grad: f64::INFINITY, hess: 1.0 }.are_powers_of_two());
    }
}
