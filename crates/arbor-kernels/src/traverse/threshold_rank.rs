//! A value's rank among a feature's sorted thresholds: how many lie below
//! it, which is what the walk over ranks compares (`x <= t_k` exactly when
//! the rank is at most `k`).
//!
//! Every value is a branch-free binary search. At the `avx512` and `avx2`
//! SIMD levels, 32 values search at once (four vectors of eight, or eight of
//! four; each step one gather of the thresholds they probe), since a lone
//! search is a chain of dependent loads, and one that the compiler turns
//! into branches mispredicts half its steps (on Zen 3, the scalar search
//! took half of a boosted model's scoring). At `avx512` the search's first
//! four steps need no gather: 15 pivots, every `stride`-th threshold, sit in
//! two registers and a permute reads them; only the steps within the
//! pivots' bucket gather (on Zen 4, a boosted model's scoring on 50 features
//! of 255 thresholds took 0.82 of the time of the search that gathered every
//! step). The rank is unique, so every SIMD level gives the same one.

use crate::traverse::nodes::RankNode;

/// How many of `thresholds` (sorted, distinct) are below `x` (not NaN).
#[inline]
pub fn threshold_rank(thresholds: &[f64], x: f64) -> u16 {
    let mut base = 0usize;
    let mut len = thresholds.len();
    while len > 1 {
        let half = len / 2;
        base = if thresholds[base + half - 1] < x { base + half } else { base };
        len -= half;
    }
    (base + usize::from(len == 1 && thresholds[base] < x)) as u16
}

/// Writes the rank of each of `values` among `thresholds` (sorted, distinct,
/// at most [`RankNode::MAX_RANK`] of them) to the same place in `ranks`
/// (one feature's column of a block, as the walks read it), and
/// [`RankNode::MISSING`] for a NaN; returns whether there was a NaN.
pub fn threshold_ranks(thresholds: &[f64], values: &[f64], ranks: &mut [u16]) -> bool {
    assert!(thresholds.len() <= usize::from(RankNode::MAX_RANK), "too many thresholds for a 2-byte rank");
    assert_eq!(ranks.len(), values.len(), "one rank per value");
    let mut done = 0;
    let mut missing = false;
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = crate::dispatch::avx512() {
        let lanes = Lanes { simd, thresholds, values, ranks: &mut *ranks };
        (done, missing) = pulp::Simd::vectorize(simd, lanes);
    } else if let Some(simd) = crate::dispatch::avx2() {
        let lanes = Avx2Lanes { simd, thresholds, values, ranks: &mut *ranks };
        (done, missing) = pulp::Simd::vectorize(simd, lanes);
    }
    for (r, &x) in ranks.iter_mut().zip(values).skip(done) {
        missing |= x.is_nan();
        *r = if x.is_nan() { RankNode::MISSING } else { threshold_rank(thresholds, x) };
    }
    missing
}

/// Values searched side by side: four vectors of eight.
#[cfg(target_arch = "x86_64")]
const VECTORS: usize = 4;

/// The AVX-512 search of the first whole groups of `VECTORS * 8` values.
#[cfg(target_arch = "x86_64")]
struct Lanes<'a> {
    simd: pulp::x86::V4,
    thresholds: &'a [f64],
    values: &'a [f64],
    ranks: &'a mut [u16],
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Lanes<'_> {
    /// How many values were ranked, and whether one was NaN.
    type Output = (usize, bool);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> (usize, bool) {
        use std::arch::x86_64::{_CMP_LT_OQ, _CMP_UNORD_Q};
        let Lanes { simd, thresholds, values, ranks } = self;
        let a = simd.avx512f;
        let group = VECTORS * 8;
        let whole = values.len() / group * group;
        let at = thresholds.as_ptr();
        let n = thresholds.len();
        let mut missing = false;
        let splat = |x: usize| a._mm512_set1_epi64(x as i64);
        // Two levels: which of 16 buckets of `stride` (a power of two)
        // thresholds a value falls in, by 15 pivots held in two registers
        // (bucket `c` ends at pivot `c`, past the thresholds' end read as
        // +inf), then how many of the bucket's other `stride - 1` are below it.
        let stride = (n + 1).div_ceil(PIVOTS + 1).next_power_of_two();
        let pivot = |j: usize| thresholds.get((j + 1) * stride - 1).copied().unwrap_or(f64::INFINITY);
        let pivots: [f64; 16] = std::array::from_fn(pivot);
        // SAFETY: two halves of a 16-value array.
        let (low, high) = unsafe { (a._mm512_loadu_pd(pivots.as_ptr()), a._mm512_loadu_pd(pivots.as_ptr().add(8))) };
        let count = splat(n);
        let shift = splat(stride.trailing_zeros() as usize);
        let absent = splat(RankNode::MISSING.into());
        for start in (0..whole).step_by(group) {
            // SAFETY: `start + group <= values.len()`.
            let x: [_; VECTORS] =
                std::array::from_fn(|v| unsafe { a._mm512_loadu_pd(values.as_ptr().add(start + 8 * v)) });
            let mut base = [a._mm512_setzero_si512(); VECTORS];
            for step in [8, 4, 2, 1] {
                let (offset, step) = (splat(step - 1), splat(step));
                for v in 0..VECTORS {
                    let p = a._mm512_permutex2var_pd(low, a._mm512_add_epi64(base[v], offset), high);
                    let below = a._mm512_cmp_pd_mask::<_CMP_LT_OQ>(p, x[v]);
                    base[v] = a._mm512_mask_add_epi64(base[v], below, base[v], step);
                }
            }
            base = base.map(|b| a._mm512_sllv_epi64(b, shift));
            let mut step = stride / 2;
            while step >= 1 {
                let (offset, step_by) = (splat(step - 1), splat(step));
                for v in 0..VECTORS {
                    let probe = a._mm512_add_epi64(base[v], offset);
                    let inside = a._mm512_cmplt_epi64_mask(probe, count);
                    // SAFETY: only probes below the thresholds' count are read.
                    let t = unsafe { a._mm512_mask_i64gather_pd::<8>(a._mm512_setzero_pd(), inside, probe, at) };
                    let below = a._mm512_mask_cmp_pd_mask::<_CMP_LT_OQ>(inside, t, x[v]);
                    base[v] = a._mm512_mask_add_epi64(base[v], below, base[v], step_by);
                }
                step /= 2;
            }
            for v in 0..VECTORS {
                let nan = a._mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x[v], x[v]);
                missing |= nan != 0;
                // Eight ranks in a row, stored at once.
                let rank = a._mm512_cvtepi64_epi16(a._mm512_mask_mov_epi64(base[v], nan, absent));
                // SAFETY: `start + 8 * v + 8 <= values.len() == ranks.len()` (checked on entry).
                unsafe { simd.sse2._mm_storeu_si128(ranks.as_mut_ptr().add(start + 8 * v).cast(), rank) };
            }
        }
        (whole, missing)
    }
}

/// The pivots of the AVX-512 search's first level: 15 split the thresholds
/// into 16 buckets (one register pair of 16 values, the last unused).
#[cfg(target_arch = "x86_64")]
const PIVOTS: usize = 15;

/// Values searched side by side at `avx2`: eight vectors of four.
#[cfg(target_arch = "x86_64")]
const AVX2_VECTORS: usize = 8;

/// The AVX2 search of the first whole groups of `AVX2_VECTORS * 4` values:
/// each lane's position is a 64-bit integer, so one gather of four
/// thresholds serves a vector and a compare's all-ones lanes mask the step.
#[cfg(target_arch = "x86_64")]
struct Avx2Lanes<'a> {
    simd: pulp::x86::V3,
    thresholds: &'a [f64],
    values: &'a [f64],
    ranks: &'a mut [u16],
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Avx2Lanes<'_> {
    /// How many values were ranked, and whether one was NaN.
    type Output = (usize, bool);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> (usize, bool) {
        use std::arch::x86_64::{_CMP_LT_OQ, _CMP_UNORD_Q};
        let Avx2Lanes { simd, thresholds, values, ranks } = self;
        let (avx, avx2) = (simd.avx, simd.avx2);
        let group = AVX2_VECTORS * 4;
        let whole = values.len() / group * group;
        let at = thresholds.as_ptr();
        let mut missing = false;
        // One search step of every vector: lanes whose probe lies below
        // their value move up by `step`.
        let search = |base: &mut [_; AVX2_VECTORS], x: &[_; AVX2_VECTORS], probe_offset: i64, step: i64| {
            let probe_offset = avx._mm256_set1_epi64x(probe_offset);
            let step = avx._mm256_set1_epi64x(step);
            for v in 0..AVX2_VECTORS {
                let probe = avx2._mm256_add_epi64(base[v], probe_offset);
                // SAFETY: the caller's probes are below `thresholds.len()`.
                let t = unsafe { avx2._mm256_i64gather_pd::<8>(at, probe) };
                let below = avx._mm256_castpd_si256(avx._mm256_cmp_pd::<_CMP_LT_OQ>(t, x[v]));
                base[v] = avx2._mm256_add_epi64(base[v], avx2._mm256_and_si256(below, step));
            }
        };
        for start in (0..whole).step_by(group) {
            // SAFETY: `start + group <= values.len()`.
            let x: [_; AVX2_VECTORS] =
                std::array::from_fn(|v| unsafe { avx._mm256_loadu_pd(values.as_ptr().add(start + 4 * v)) });
            let mut base = [avx._mm256_setzero_si256(); AVX2_VECTORS];
            let mut len = thresholds.len();
            // The scalar search's steps, lane by lane: `base + len` never
            // passes the thresholds' end, so every probe is in bounds.
            while len > 1 {
                let half = len / 2;
                search(&mut base, &x, half as i64 - 1, half as i64);
                len -= half;
            }
            if len == 1 {
                // `base < thresholds.len()` when one remains.
                search(&mut base, &x, 0, 1);
            }
            for v in 0..AVX2_VECTORS {
                let nan = avx._mm256_movemask_pd(avx._mm256_cmp_pd::<_CMP_UNORD_Q>(x[v], x[v]));
                missing |= nan != 0;
                let mut lanes = [0u64; 4];
                // SAFETY: four 8-byte lanes fill the four words.
                unsafe { avx._mm256_storeu_si256(lanes.as_mut_ptr().cast(), base[v]) };
                let out = &mut ranks[start + 4 * v..start + 4 * v + 4];
                for (lane, (r, &rank)) in out.iter_mut().zip(&lanes).enumerate() {
                    *r = if nan >> lane & 1 != 0 { RankNode::MISSING } else { rank as u16 };
                }
            }
        }
        (whole, missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{self, SimdLevel};
    use proptest::prelude::*;

    #[test]
    fn ranks_count_the_thresholds_below() {
        let thresholds = [-1.0, 0.0, 2.5, 7.0, 9.0];
        for x in [-5.0, -1.0, -0.5, -0.0, 0.0, 1e-300, 2.5, 3.0, 7.0, 8.0, 9.0, 10.0, f64::INFINITY, f64::NEG_INFINITY]
        {
            let expected = thresholds.iter().filter(|&&t| t < x).count() as u16;
            assert_eq!(threshold_rank(&thresholds, x), expected, "x = {x}");
            for k in 0..thresholds.len() {
                assert_eq!(x <= thresholds[k], threshold_rank(&thresholds, x) <= k as u16, "x = {x}, k = {k}");
            }
        }
        for len in 0..5 {
            assert_eq!(threshold_rank(&thresholds[..len], 100.0), len as u16);
            assert_eq!(threshold_rank(&thresholds[..len], -100.0), 0);
        }
    }

    proptest! {
        /// Every SIMD level ranks every value as a plain count of the thresholds
        /// below it, NaN as missing, at any length.
        #[test]
        fn ranks_count_the_thresholds_below_at_every_level(
            mut thresholds in proptest::collection::vec(-400i32..400, 0..700),
            values in proptest::collection::vec(prop_oneof![8 => (-900i32..900).prop_map(|v| f64::from(v) / 2.0), 1 => Just(f64::NAN)], 0..200),
        ) {
            thresholds.sort_unstable();
            thresholds.dedup();
            let thresholds: Vec<f64> = thresholds.into_iter().map(f64::from).collect();
            let expected: Vec<u16> = values
                .iter()
                .map(|&x| if x.is_nan() { RankNode::MISSING } else { thresholds.iter().filter(|&&t| t < x).count() as u16 })
                .collect();
            for simd_level in SimdLevel::available() {
                let mut ranks = vec![7u16; values.len()];
                let missing = dispatch::with_simd_level(simd_level, || threshold_ranks(&thresholds, &values, &mut ranks)).unwrap();
                prop_assert_eq!(&ranks, &expected, "{}", simd_level);
                prop_assert_eq!(missing, values.iter().any(|x| x.is_nan()));
            }
        }
    }
}
