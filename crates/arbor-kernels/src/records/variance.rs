//! The weighted variance of a node's responses, with an early stop.

use crate::records::byte_layout::{as_records, check_value_records, record_value};

/// The weighted variance of the responses of a node's value records
/// (weight sum `w > 0`, mean `mean`), summed in record order, or a partial
/// figure past `stop` (see [`variance_until`]).
pub fn value_records_variance_until(records: &[u8], width: usize, mean: f64, w: f64, stop: f64) -> f64 {
    check_value_records(records, width, 0);
    match width {
        16 => variance_until(as_records::<16>(records).iter().map(record_value), mean, w, stop),
        32 => variance_until(as_records::<32>(records).iter().map(record_value), mean, w, stop),
        _ => variance_until(as_records::<64>(records).iter().map(record_value), mean, w, stop),
    }
}

/// The weighted variance of `(weight, y)` terms (weight sum `w > 0`, mean
/// `mean`), summed in their order; or, as soon as the partial sum exceeds
/// `stop`, that partial figure (its terms are never negative, so the full
/// one exceeds `stop` too). `f64::INFINITY` gives the full variance.
#[inline(always)]
pub fn variance_until(terms: impl Iterator<Item = (f64, f64)>, mean: f64, w: f64, stop: f64) -> f64 {
    let mut sum = 0.0;
    for (weight, y) in terms {
        sum += weight * (y - mean).powi(2);
        if sum / w > stop {
            return sum / w;
        }
    }
    sum / w
}
