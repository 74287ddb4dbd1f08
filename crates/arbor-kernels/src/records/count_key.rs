//! A row of a class histogram as one word: its class and its multiplicity,
//! what integer class histograms sum and a class record's tail holds.

/// A row's class (low 8 bits) and multiplicity (high 24 bits) in one word.
pub type CountKey = u32;

/// Most classes a [`CountKey`] holds.
pub const MAX_COUNT_CLASSES: usize = 256;

/// Row `r`'s key: its count, then its class in the low byte (for rows
/// [`keys_fit`](crate::keys_fit) accepted).
#[inline]
pub fn count_key(labels: &[u32], counts: &[f64], r: usize) -> CountKey {
    (counts[r] as u32) << 8 | labels[r]
}
