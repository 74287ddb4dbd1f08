//! A feature's bins across a node's records: whether they are one, and their range.

/// Whether every one of `records` (of `width` bytes) holds the same bin of
/// feature `f`: a feature constant in a node cannot split it, and finding
/// that out costs a read per record, where a histogram costs a build, a
/// listing and a count. Stops at the first record that differs.
pub fn records_constant(records: &[u8], width: usize, f: usize) -> bool {
    assert!(f < width && records.len() % width == 0, "feature {f} lies in records of {width} bytes");
    let mut bins = records.chunks_exact(width).map(|record| record[f]);
    match bins.next() {
        Some(first) => bins.all(|b| b == first),
        None => true,
    }
}

/// The largest and smallest nonzero bin of feature `f` among `records`:
/// where a split's left child ends and its right child starts.
pub fn record_bin_range(records: &[u8], width: usize, f: usize) -> (u8, Option<u8>) {
    let bins = records.chunks_exact(width).map(|record| record[f]);
    (bins.clone().max().unwrap_or(0), bins.filter(|&b| b > 0).min())
}
