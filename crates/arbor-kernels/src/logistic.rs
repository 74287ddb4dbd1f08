//! The logistic loss's derivatives, on an `exp` of our own: the C library's
//! `exp` is a call per row that no compiler vectorizes, and it took most of
//! a boosting round's gradient pass. This one is plain arithmetic without
//! branches, so a SIMD level's target features vectorize it, and every SIMD level
//! computes each lane with the same operations: the same bits everywhere.

use pulp::{Simd, WithSimd};

/// `ln 2` in two parts (fdlibm's): `LN2_HI` ends in 21 zero bits, so
/// `k · LN2_HI` is exact for the `k` that occur; `LN2_LO` is the rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// `1.5 · 2^52`: adding it rounds a number below `2^51` to an integer held in
/// the low bits of the sum's mantissa.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// `exp` is evaluated on `[-LIMIT, LIMIT]`, where its result is a normal
/// number; beyond, it returns the value at the bound.
const LIMIT: f64 = 700.0;

/// `e^x` within one unit in the last place of `f64::exp` on
/// `[-700, 700]`; `x` is clamped to that range (no overflow, no subnormals).
///
/// `x = k·ln 2 + r` with `|r| <= ln 2 / 2`; `e^r` by its Taylor series to
/// degree 13 (remainder below 2⁻⁵⁸), times `2^k` put in the exponent bits.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    let x = x.clamp(-LIMIT, LIMIT);
    let shifted = x * std::f64::consts::LOG2_E + SHIFTER;
    let k = shifted - SHIFTER;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 6_227_020_800.0; // 1/13!
    for inverse_factorial in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + inverse_factorial;
    }
    // The integer k sits in the low bits of `shifted`; 2^k is k + 1023 in the exponent field.
    let k_bits = shifted.to_bits().wrapping_sub(SHIFTER.to_bits());
    p * f64::from_bits(k_bits.wrapping_add(1023) << 52)
}

/// The logistic function `1 / (1 + e^-x)`, on [`exp`].
#[inline(always)]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + exp(-x))
}

/// One row's weighted logistic-loss derivatives from its raw score and its
/// class (0 or 1): `w·(p − y)` and `w·max(p·(1 − p), min_hessian)`, with
/// `p` the [`sigmoid`] of the score.
#[inline(always)]
pub fn logistic_derivatives(raw: f64, label: u32, weight: f64, min_hessian: f64) -> (f64, f64) {
    let p = sigmoid(raw);
    (weight * (p - f64::from(label)), weight * (p * (1.0 - p)).max(min_hessian))
}

/// [`logistic_derivatives`] of consecutive rows: row `i` reads `raw[i]`,
/// `labels[i]` and `weights[i]` and writes `grad[i]` and `hess[i]`. Equal to
/// the row function to the bit, at every SIMD level.
pub fn logistic_derivatives_into(
    raw: &[f64],
    labels: &[u32],
    weights: &[f64],
    min_hessian: f64,
    grad: &mut [f64],
    hess: &mut [f64],
) {
    let n = grad.len();
    assert!(
        raw.len() == n && labels.len() == n && weights.len() == n && hess.len() == n,
        "every slice holds the same rows"
    );
    crate::dispatch::run(LogisticKernel { raw, labels, weights, min_hessian, grad, hess })
}

struct LogisticKernel<'a> {
    raw: &'a [f64],
    labels: &'a [u32],
    weights: &'a [f64],
    min_hessian: f64,
    grad: &'a mut [f64],
    hess: &'a mut [f64],
}

impl WithSimd for LogisticKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let LogisticKernel { raw, labels, weights, min_hessian, grad, hess } = self;
        let rows = raw.iter().zip(labels).zip(weights).zip(grad.iter_mut().zip(hess.iter_mut()));
        for (((&raw, &label), &weight), (g, h)) in rows {
            (*g, *h) = logistic_derivatives(raw, label, weight, min_hessian);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{with_simd_level, SimdLevel};

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
    }

    #[test]
    fn exp_is_within_one_ulp_of_the_library_exp() {
        let mut worst = 0;
        for i in -699_999..=699_999 {
            let x = f64::from(i) / 1000.0 + 0.000_123_456_789;
            worst = worst.max(ulps(exp(x), x.exp()));
        }
        for x in [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 0.5 * std::f64::consts::LN_2, 709.0 - 9.0] {
            worst = worst.max(ulps(exp(x), x.exp()));
        }
        assert!(worst <= 1, "worst error {worst} ulps");
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn exp_saturates_beyond_its_range() {
        assert_eq!(exp(1e6), exp(LIMIT));
        assert_eq!(exp(-1e6), exp(-LIMIT));
        assert!(exp(f64::INFINITY).is_finite() && exp(f64::NEG_INFINITY) > 0.0);
        assert_eq!(sigmoid(-1e6), 1.0 / (1.0 + exp(LIMIT)));
        assert_eq!(sigmoid(1e6), 1.0);
    }

    proptest::proptest! {
        /// Every SIMD level's vector loop gives the row function's bits, whatever the length.
        #[test]
        fn every_level_equals_the_row_function(
            rows in proptest::collection::vec((-40.0f64..40.0, 0u32..2, 0.0f64..3.0), 0..70),
        ) {
            let raw: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let labels: Vec<u32> = rows.iter().map(|r| r.1).collect();
            let weights: Vec<f64> = rows.iter().map(|r| r.2).collect();
            let bits = |(g, h): (f64, f64)| (g.to_bits(), h.to_bits());
            let expected: Vec<(u64, u64)> =
                rows.iter().map(|&(raw, label, w)| bits(logistic_derivatives(raw, label, w, 1e-16))).collect();
            for simd_level in SimdLevel::available() {
                let (mut grad, mut hess) = (vec![0.0; rows.len()], vec![0.0; rows.len()]);
                with_simd_level(simd_level, || logistic_derivatives_into(&raw, &labels, &weights, 1e-16, &mut grad, &mut hess))
                    .unwrap();
                let got: Vec<(u64, u64)> = grad.into_iter().zip(hess).map(bits).collect();
                proptest::prop_assert_eq!(&got, &expected, "SIMD level {}", simd_level);
            }
        }
    }
}
