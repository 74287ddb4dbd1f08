//! Columns of integers in a narrow span: counted, ranked and binned through
//! a table indexed by the value's offset from the minimum, instead of by
//! sorting or searching (years, counts, codes, times of day).

use crate::Number;

/// The smallest value and the span (maximum minus minimum) of `values`
/// when every one that is not NaN is an integer and the span is at most
/// `max_span`; `None` otherwise. An all-NaN column has span 0.
pub fn integer_span<T: Number>(values: &[T], max_span: usize) -> Option<(f64, usize)> {
    let (mut min, mut max, mut integers) = (f64::INFINITY, f64::NEG_INFINITY, true);
    for v in values.iter().map(|&v| -> f64 { v.into() }).filter(|v| !v.is_nan()) {
        (min, max) = (min.min(v), max.max(v));
        integers &= (v as i64) as f64 == v; // a cast, not `fract`'s call to `trunc`
    }
    if !integers {
        return None;
    }
    if min > max {
        return Some((0.0, 0));
    }
    // Integers this close together are exact, and so is their difference.
    let span = max - min;
    (span <= max_span as f64).then_some((min, span as usize))
}

/// The offset of integer `v` from `min`, for a value inside an [`integer_span`].
#[inline]
pub fn offset(v: f64, min: f64) -> usize {
    (v - min) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_integers_only() {
        assert_eq!(integer_span(&[3.0, f64::NAN, -2.0], 10), Some((-2.0, 5)));
        assert_eq!(integer_span(&[3.0, -2.0], 4), None);
        assert_eq!(integer_span(&[0.5, 1.0], 10), None);
        assert_eq!(integer_span(&[f64::INFINITY, 1.0], 10), None);
        assert_eq!(integer_span(&[f64::NAN], 10), Some((0.0, 0)));
        assert_eq!(integer_span(&[-0.0, 0.0], 0), Some((-0.0, 0)));
        assert_eq!(integer_span(&[3.0f32, f32::NAN, -2.0], 10), Some((-2.0, 5)));
        assert_eq!(offset(7.0, -2.0), 9);
    }
}
