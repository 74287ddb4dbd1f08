//! A tree's rows as byte records kept in node order.
//!
//! Deep in a tree a node's rows are scattered over the data, and reading a
//! feature's bin and a row's class or response for each costs a cache miss
//! apiece. Here each row is one record, its bin of every feature then a
//! tail: its [`CountKey`] (classes) or its count and response (values, see
//! [`crate::histogram::value`]). The records move with their rows when a node
//! splits: a node's records are contiguous, so its histograms and its
//! partition read memory in order.

use arbor_quantize::{BinColumn, BinnedMatrix};

use crate::records::count_key::CountKey;

/// Widest record: features of at most 60 bins' bytes, then the key.
pub const MAX_RECORD_WIDTH: usize = 64;

/// The rows of a tree as records of `width` bytes (a power of two, 8 to
/// [`MAX_RECORD_WIDTH`]): bytes `0..n_features` hold the row's bins, the
/// last ones its tail: four for a class key, little-endian, or twelve for a
/// count and a response ([`RowRecords::with_values`]).
#[derive(Clone, Debug)]
pub struct RowRecords {
    bytes: Vec<u8>,
    width: usize,
}

impl RowRecords {
    /// The records of `rows`, in that order, or `None` when a feature has
    /// more than 256 bins or the features outgrow [`MAX_RECORD_WIDTH`].
    pub fn new(matrix: &BinnedMatrix, rows: &[u32], keys: &[CountKey]) -> Option<RowRecords> {
        RowRecords::with_keys(matrix, rows, |r| keys[r])
    }

    /// [`RowRecords::new`] with row `r`'s key given by `key(r)`: no array of
    /// keys by row id is needed.
    pub fn with_keys(matrix: &BinnedMatrix, rows: &[u32], key: impl Fn(usize) -> CountKey) -> Option<RowRecords> {
        RowRecords::with_tail(matrix, rows, 4, |r, tail| tail.copy_from_slice(&key(r).to_le_bytes()))
    }

    /// The records of `rows` for a regression forest without sample
    /// weights: each tail is row `r`'s count `counts[r]` (a whole number,
    /// as a `u32`) then its response `y[r]` (`f64`), little-endian; `None`
    /// as [`RowRecords::new`], or when a count is not a whole `u32`.
    pub fn with_values(matrix: &BinnedMatrix, rows: &[u32], counts: &[f64], y: &[f64]) -> Option<RowRecords> {
        let whole = |c: f64| c.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&c);
        if !rows.iter().all(|&r| whole(counts[r as usize])) {
            return None;
        }
        RowRecords::with_tail(matrix, rows, VALUE_TAIL, |r, tail| {
            tail[..4].copy_from_slice(&(counts[r] as u32).to_le_bytes());
            tail[4..].copy_from_slice(&y[r].to_le_bytes());
        })
    }

    /// Records with a tail of `tail` bytes that `write(r, tail)` fills for row `r`.
    fn with_tail(
        matrix: &BinnedMatrix,
        rows: &[u32],
        tail: usize,
        write: impl Fn(usize, &mut [u8]),
    ) -> Option<RowRecords> {
        let n_features = matrix.n_features();
        let width = (n_features + tail).next_power_of_two().max(8);
        if width > MAX_RECORD_WIDTH {
            return None;
        }
        let columns: Vec<&[u8]> = (0..n_features)
            .map(|f| match matrix.column(f) {
                BinColumn::U8(bins) => Some(bins.as_slice()),
                BinColumn::U16(_) => None,
            })
            .collect::<Option<_>>()?;
        let mut bytes = vec![0; rows.len() * width];
        // Record by record: each is written whole while in cache.
        for (record, &r) in bytes.chunks_exact_mut(width).zip(rows) {
            let r = r as usize;
            for (byte, bins) in record.iter_mut().zip(&columns) {
                *byte = bins[r];
            }
            write(r, &mut record[width - tail..]);
        }
        Some(RowRecords { bytes, width })
    }

    /// Bytes per record.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The records of positions `range`.
    pub fn records(&self, range: std::ops::Range<usize>) -> &[u8] {
        &self.bytes[range.start * self.width..range.end * self.width]
    }

    /// The same, to partition.
    pub fn records_mut(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        &mut self.bytes[range.start * self.width..range.end * self.width]
    }
}

/// Bytes as records of `W` bytes (their length a multiple of `W`).
#[inline(always)]
pub(crate) fn as_records<const W: usize>(bytes: &[u8]) -> &[[u8; W]] {
    bytemuck::cast_slice(bytes)
}

/// A record's key.
#[inline(always)]
pub(crate) fn record_key<const W: usize>(record: &[u8; W]) -> CountKey {
    u32::from_le_bytes([record[W - 4], record[W - 3], record[W - 2], record[W - 1]])
}

/// Bytes of a value record's tail: the count (`u32`) then the response (`f64`).
pub const VALUE_TAIL: usize = 12;

/// A value record's count and response.
#[inline(always)]
pub(crate) fn record_value<const W: usize>(record: &[u8; W]) -> (f64, f64) {
    let count = u32::from_le_bytes(record[W - 12..W - 8].try_into().expect("four bytes"));
    let y = f64::from_le_bytes(record[W - 8..].try_into().expect("eight bytes"));
    (f64::from(count), y)
}

/// Checks that feature `f` and the tail fit records of `width` bytes.
pub(crate) fn check_value_records(records: &[u8], width: usize, f: usize) {
    assert!(
        matches!(width, 16 | 32 | 64) && f + VALUE_TAIL < width && records.len() % width == 0,
        "feature {f} lies in value records of {width} bytes"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        count_key, count_keys, partition_records, partition_rows, record_bin_range, records_constant, HistogramTarget,
        SplitRule,
    };
    use arbor_quantize::{FeatureColumn, QuantizeParams};

    /// Records partition as the rows do, and keep each row's bins and key.
    #[test]
    fn records_follow_their_rows() {
        let n = 50;
        let columns: Vec<FeatureColumn> = (0..5)
            .map(|f| FeatureColumn::Numeric((0..n).map(|r| ((r * (f + 3)) % 17) as f64).collect::<Vec<_>>().into()))
            .collect();
        let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
        let labels: Vec<u32> = (0..n as u32).map(|r| r % 3).collect();
        let counts: Vec<f64> = (0..n).map(|r| (r % 4) as f64).collect();
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 3 };
        let rows: Vec<u32> = (0..n as u32).filter(|&r| counts[r as usize] > 0.0).collect();
        let keys = count_keys(&target, &rows, &counts, &counts).unwrap();
        let mut records = RowRecords::new(&matrix, &rows, &keys).unwrap();
        let keyed = RowRecords::with_keys(&matrix, &rows, |r| count_key(&labels, &counts, r)).unwrap();
        assert_eq!(keyed.records(0..rows.len()), records.records(0..rows.len()), "keys computed as they are needed");
        assert_eq!(records.width(), 16);
        for rule in [
            SplitRule::Threshold { bin: 6, missing_left: false },
            SplitRule::Categories { goes_left: (0..matrix.mapper(2).n_bins()).map(|b| b % 3 == 1).collect() },
        ] {
            let mut by_rows = rows.clone();
            let n_left = partition_rows(&mut by_rows, matrix.column(2), &rule, &mut vec![0; rows.len()]);
            let mut moved = records.clone();
            assert_eq!(partition_records(moved.records_mut(0..rows.len()), 16, 2, &rule), n_left);
            // Each side holds the records of the rows that went there, in some order.
            let side = |records: &[u8]| {
                let mut side: Vec<[u8; 16]> =
                    records.chunks_exact(16).map(|c| <[u8; 16]>::try_from(c).unwrap()).collect();
                side.sort_unstable();
                side
            };
            let expected = |rows: &[u32]| {
                let mut side: Vec<[u8; 16]> = rows
                    .iter()
                    .map(|&r| {
                        let mut record = [0; 16];
                        for (f, byte) in record[..5].iter_mut().enumerate() {
                            *byte = matrix.column(f).get(r as usize) as u8;
                        }
                        record[12..].copy_from_slice(&keys[r as usize].to_le_bytes());
                        record
                    })
                    .collect();
                side.sort_unstable();
                side
            };
            assert_eq!(side(moved.records(0..n_left)), expected(&by_rows[..n_left]));
            assert_eq!(side(moved.records(n_left..rows.len())), expected(&by_rows[n_left..]));
        }
        // Rows 17 apart hold one bin of every feature, until one record's changes.
        let apart: Vec<u32> = rows.iter().copied().filter(|r| r % 17 == 2).collect();
        let mut few = RowRecords::new(&matrix, &apart, &keys).unwrap();
        assert!(apart.len() >= 2 && (0..5).all(|f| records_constant(few.records(0..apart.len()), 16, f)));
        few.records_mut(1..2)[1] ^= 1;
        assert!(
            !records_constant(few.records(0..apart.len()), 16, 1)
                && records_constant(few.records(0..apart.len()), 16, 0)
        );
        assert!(records_constant(few.records(0..1), 16, 1) && records_constant(&[], 16, 1), "one record or none");
        records.records_mut(0..1)[2] = 0;
        let (last, first) = record_bin_range(records.records(0..rows.len()), 16, 2);
        assert_eq!(u16::from(last), (0..n).map(|r| matrix.column(2).get(r)).max().unwrap());
        assert!(first.is_some_and(|b| b > 0));
    }
}
