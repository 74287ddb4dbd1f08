//! Quantized gradients (`use_quantized_grad`; Shi et al., NeurIPS 2022;
//! LightGBM 4): before a tree grows, each row's gradient and hessian are
//! rounded stochastically to whole multiples of a unit, so histograms sum
//! small integers (`arbor_kernels::build_row_histograms_quantized`) and the
//! row-wise kernel's bins take half the cache. Docs: `docs/algorithms.md`,
//! "Quantized gradients".
//!
//! The units are powers of two (the one at or below LightGBM's scale, so the
//! levels are never coarser than `num_grad_quant_bins` asks), which keeps
//! every sum of quantized values exact in floats: the float kernels and the
//! integer one grow the same tree. The rounding's randomness comes from a
//! hash of the tree's key and the row id, so it depends on neither the
//! threads nor the order rows are visited in.

use arbor_kernels::{QuantizedScales, QuantizedStats, RowStats};
use rayon::prelude::*;

use crate::train::grower::{newton_leaf, GrownTree};
use crate::train::loss::Derivatives;

/// Row ids quantized per task.
const CHUNK: usize = 16384;

/// Rounds a tree's derivatives to at least `levels` levels (`num_grad_quant_bins`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GradientQuantizer {
    levels: u32,
}

impl GradientQuantizer {
    /// A quantizer of `levels` levels (2 to 4096: the largest quantized
    /// hessian, below `2·levels`, fits an `i16`).
    pub(crate) fn new(levels: u32) -> GradientQuantizer {
        assert!((2..=4096).contains(&levels), "num_grad_quant_bins is checked to be in [2, 4096]");
        GradientQuantizer { levels }
    }

    /// The units for gradients of magnitude at most `max_grad` and hessians
    /// at most `max_hess`: the powers of two at or below `max_grad / (levels/2)`
    /// and `max_hess / levels` (LightGBM's scales), so a quantized gradient is
    /// below `levels` in magnitude and a hessian below `2·levels`.
    pub(crate) fn scales(&self, max_grad: f64, max_hess: f64) -> QuantizedScales {
        let levels = f64::from(self.levels);
        QuantizedScales {
            grad: power_of_two_at_most(max_grad / (levels / 2.0)),
            hess: power_of_two_at_most(max_hess / levels),
        }
    }

    /// The largest a node's quantized sum can be in magnitude, per row.
    pub(crate) fn row_bound(&self) -> u64 {
        2 * u64::from(self.levels)
    }

    /// Quantizes the packed statistics of every row id in place (rows outside
    /// the tree are zeros and stay zeros), writing each row's integers into
    /// `ints`; returns the units. `key` names the tree; `largest` is the
    /// largest gradient magnitude and hessian among `stats` (as
    /// `Derivatives::write_packed` returns them).
    pub(crate) fn quantize_packed(
        &self,
        key: u64,
        largest: (f64, f64),
        stats: &mut [RowStats],
        ints: &mut Vec<QuantizedStats>,
    ) -> QuantizedScales {
        let scales = self.scales(largest.0, largest.1);
        let (per_grad, per_hess) = (1.0 / scales.grad, 1.0 / scales.hess);
        ints.resize(stats.len(), [0; 4]);
        stats.par_chunks_mut(CHUNK).zip(ints.par_chunks_mut(CHUNK)).enumerate().for_each(|(k, (stats, ints))| {
            for (i, (s, q)) in stats.iter_mut().zip(ints).enumerate() {
                let (u_g, u_h) = uniforms(key, (k * CHUNK + i) as u64);
                let (g, h) = (round(s[1], per_grad, u_g), round(s[2], per_hess, u_h));
                *q = [s[0] as i16, g, h, 0];
                *s = [s[0], f64::from(g) * scales.grad, f64::from(h) * scales.hess, 0.0];
            }
        });
        scales
    }

    /// [`GradientQuantizer::quantize_packed`] for gradient and hessian arrays
    /// by row id (the column-wise kernels read them as floats).
    pub(crate) fn quantize_apart(&self, key: u64, grad: &mut [f64], hess: &mut [f64]) -> QuantizedScales {
        let max_grad = grad.par_iter().with_min_len(CHUNK).map(|g| g.abs()).reduce(|| 0.0, f64::max);
        let max_hess = hess.par_iter().with_min_len(CHUNK).copied().reduce(|| 0.0, f64::max);
        let scales = self.scales(max_grad, max_hess);
        let (per_grad, per_hess) = (1.0 / scales.grad, 1.0 / scales.hess);
        grad.par_chunks_mut(CHUNK).zip(hess.par_chunks_mut(CHUNK)).enumerate().for_each(|(k, (grad, hess))| {
            for (i, (g, h)) in grad.iter_mut().zip(hess).enumerate() {
                let (u_g, u_h) = uniforms(key, (k * CHUNK + i) as u64);
                *g = f64::from(round(*g, per_grad, u_g)) * scales.grad;
                *h = f64::from(round(*h, per_hess, u_h)) * scales.hess;
            }
        });
        scales
    }
}

/// The key of one tree's rounding: its seed, round and output mixed.
pub(crate) fn tree_key(seed: u64, round: usize, output: usize) -> u64 {
    mix(mix(seed ^ 0x5155_414e_5449_5a45) ^ (round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ output as u64)
}

/// Sets each leaf of a tree grown on quantized gradients to `−G/(H + λ)`
/// times the learning rate, from its rows' exact derivatives summed in row
/// order (`quant_train_renew_leaf`).
/// Leaves are renewed in parallel, each summing its own rows in order.
pub(crate) fn renew_leaves(grown: &mut GrownTree, derivatives: &Derivatives<'_>, lambda: f64, learning_rate: f64) {
    let rows = &grown.rows;
    let renewed: Vec<(usize, f64)> = grown
        .leaves
        .par_iter()
        .map(|(offset, range)| {
            let (g, h) = rows[range.clone()].iter().fold((0.0, 0.0), |(g, h), &r| {
                let (dg, dh) = derivatives.row(r as usize);
                (g + dg, h + dh)
            });
            (*offset, newton_leaf(g, h, lambda, learning_rate))
        })
        .collect();
    for (offset, value) in renewed {
        grown.tree.values[offset] = value;
    }
}

/// Two uniforms in [0, 1) for row `r` of the tree `key`: the high and low
/// halves of one hash (32 bits of resolution each, ample for a rounding).
#[inline]
fn uniforms(key: u64, r: u64) -> (f64, f64) {
    let bits = mix(key ^ r.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let unit = 1.0 / (1u64 << 32) as f64;
    ((bits >> 32) as f64 * unit, (bits & 0xffff_ffff) as f64 * unit)
}

/// `v` in units whose inverse is `per_unit` (a power of two, so the product
/// is exact), rounded down or up with the probabilities that make it
/// unbiased: `floor(v · per_unit + u)` for `u` uniform in [0, 1).
#[inline]
fn round(v: f64, per_unit: f64, u: f64) -> i16 {
    let x = v * per_unit + u;
    // floor without a libm call: truncation, one less below zero when inexact
    let t = x as i32;
    (t - i32::from((t as f64) > x)) as i16
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The largest power of two at or below `x`, as a normal float (at least
/// the smallest normal, and 1 when `x` is not positive and finite).
fn power_of_two_at_most(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let x = x.max(f64::MIN_POSITIVE);
    f64::from_bits(x.to_bits() & !((1u64 << 52) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_powers_of_two_at_or_below_lightgbms_scales() {
        let q = GradientQuantizer::new(4);
        let s = q.scales(3.0, 1.0);
        // LightGBM's: 3 / 2 = 1.5 and 1 / 4 = 0.25
        assert_eq!((s.grad, s.hess), (1.0, 0.25));
        assert!(s.are_powers_of_two());
        assert_eq!(q.scales(0.0, 0.0), QuantizedScales { grad: 1.0, hess: 1.0 });
        assert!(q.scales(1e-310, 1e-300).are_powers_of_two());
    }

    /// Every quantized value is a whole number of units within the bound,
    /// one of the two multiples around the exact value, and the rounding is
    /// unbiased: over many rows the mean error is small.
    #[test]
    fn stochastic_rounding_is_bounded_and_unbiased() {
        let q = GradientQuantizer::new(4);
        let n = 200_000;
        let exact: Vec<RowStats> = (0..n)
            .map(|i| [1.0, ((i as f64) * 0.37).sin() * 2.7, 0.1 + ((i as f64) * 0.11).cos().abs(), 0.0])
            .collect();
        let mut stats = exact.clone();
        let mut ints = Vec::new();
        let largest = exact.iter().fold((0.0f64, 0.0f64), |(g, h), s| (g.max(s[1].abs()), h.max(s[2])));
        let scales = q.quantize_packed(42, largest, &mut stats, &mut ints);
        let (mut err_g, mut err_h) = (0.0, 0.0);
        for ((e, s), i) in exact.iter().zip(&stats).zip(&ints) {
            assert_eq!(s[1], f64::from(i[1]) * scales.grad);
            assert_eq!(s[2], f64::from(i[2]) * scales.hess);
            assert!((s[1] - e[1]).abs() < scales.grad && (s[2] - e[2]).abs() < scales.hess);
            assert!(i64::from(i[1]).unsigned_abs() <= q.row_bound() && i64::from(i[2]).unsigned_abs() <= q.row_bound());
            err_g += s[1] - e[1];
            err_h += s[2] - e[2];
        }
        assert!((err_g / n as f64).abs() < 0.01 * scales.grad, "gradient bias {}", err_g / n as f64);
        assert!((err_h / n as f64).abs() < 0.01 * scales.hess, "hessian bias {}", err_h / n as f64);
        // the same key rounds the same way; the arrays' path agrees with the packed one
        let mut grad: Vec<f64> = exact.iter().map(|s| s[1]).collect();
        let mut hess: Vec<f64> = exact.iter().map(|s| s[2]).collect();
        assert_eq!(q.quantize_apart(42, &mut grad, &mut hess), scales);
        assert!(grad.iter().zip(&stats).all(|(g, s)| *g == s[1]));
        assert!(hess.iter().zip(&stats).all(|(h, s)| *h == s[2]));
        // another key rounds some rows the other way
        let mut other = exact.clone();
        q.quantize_packed(43, largest, &mut other, &mut ints);
        assert!(other.iter().zip(&stats).any(|(a, b)| a != b));
    }
}
