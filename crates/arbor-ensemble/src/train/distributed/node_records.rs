//! A forest's small-node records: the rows a finishing job sends to the
//! task that grows a small node, one record per row and node, and the
//! rows that task reads back from them, in an order of their content.

use std::cmp::Ordering::Equal;

use arbor_quantize::BinColumn;
use xxhash_rust::xxh3::xxh3_64;

use crate::model::feature::Feature;
use crate::train::distributed::node_key::NodeKey;
use crate::{ArborError, Result, Task};

/// The largest bootstrap multiplicity drawn (Poisson(1) passes it once in
/// about 10^15 draws), and so the largest a record holds.
pub(crate) const MAX_DRAWS: u32 = 16;

/// A record's first byte holds the row's bootstrap multiplicity (at most
/// [`MAX_DRAWS`]) and this bit, set when a weight other than 1 follows
/// the label: most trainings have no weights, and their records carry none.
const WEIGHED: u8 = 0x80;

/// How a forest's small-node records are laid out, from its task, its
/// classes and its features' bins: a head byte (multiplicity and
/// [`WEIGHED`]), the row's label (a class index in a byte, or in a u32
/// past 256 classes; or an f64 response), its weight when flagged (f64),
/// then a bin per feature (u8, or u16 when a feature has more than 256
/// bins), all little-endian. Only what the finishing grower reads, as
/// narrow as it is exact: the records are what a finishing job shuffles.
/// No hash travels: the grower orders a node's rows by a hash of their
/// records' bytes, which it takes itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordLayout {
    /// Bytes of the label: 1 or 4 (class index), 8 (response).
    pub(crate) label_bytes: usize,
    pub(crate) wide_bins: bool,
    pub(crate) n_features: usize,
}

/// One record, read in place.
struct Record<'a> {
    count: u32,
    label: f64,
    weight: f64,
    /// The bins' bytes.
    bins: &'a [u8],
}

impl RecordLayout {
    /// The layout of a forest's records for `task` (of `n_classes`
    /// classes) over `features`.
    pub(crate) fn of(task: Task, n_classes: usize, features: &[Feature]) -> RecordLayout {
        let label_bytes = match task {
            Task::Classification if n_classes <= 256 => 1,
            Task::Classification => 4,
            Task::Regression => 8,
        };
        RecordLayout {
            label_bytes,
            wide_bins: features.iter().any(|f| f.mapper.n_bins() > 256),
            n_features: features.len(),
        }
    }

    /// Bytes of a record, with or without a weight.
    pub(crate) fn size(&self, weighed: bool) -> usize {
        1 + self.label_bytes + if weighed { 8 } else { 0 } + self.bins_size()
    }

    /// Bytes of a record's bins.
    fn bins_size(&self) -> usize {
        (if self.wide_bins { 2 } else { 1 }) * self.n_features
    }

    /// Appends one row's record to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>, count: u32, label: f64, weight: f64, bins: &[u16]) {
        let weighed = weight.to_bits() != 1f64.to_bits();
        debug_assert!((1..=MAX_DRAWS).contains(&count));
        out.push(count as u8 | if weighed { WEIGHED } else { 0 });
        match self.label_bytes {
            1 => out.push(label as u8),
            4 => out.extend((label as u32).to_le_bytes()),
            _ => out.extend(label.to_bits().to_le_bytes()),
        }
        if weighed {
            out.extend(weight.to_bits().to_le_bytes());
        }
        match self.wide_bins {
            true => bins.iter().for_each(|b| out.extend(b.to_le_bytes())),
            false => out.extend(bins.iter().map(|&b| b as u8)),
        }
    }

    /// Sets a written record's bootstrap multiplicity (its other bytes stay).
    pub(crate) fn set_count(record: &mut [u8], count: u32) {
        debug_assert!((1..=MAX_DRAWS).contains(&count));
        record[0] = count as u8 | record[0] & WEIGHED;
    }

    /// Hands `each` the records `pieces` hold one after another; a piece
    /// that ends inside a record is an error.
    fn split(&self, pieces: &[&[u8]], mut each: impl FnMut(&[u8])) -> Result<()> {
        for piece in pieces {
            let mut at = 0;
            while at < piece.len() {
                let weighed = piece[at] & WEIGHED != 0;
                let Some(record) = piece.get(at..at + self.size(weighed)) else {
                    return Err(ArborError::Data(format!(
                        "a small node's records end inside a record: {} bytes, the last record starts at byte {at}",
                        piece.len()
                    )));
                };
                each(record);
                at += record.len();
            }
        }
        Ok(())
    }

    /// Reads a whole record (as [`RecordLayout::split`] cut it).
    fn read<'a>(&self, record: &'a [u8]) -> Record<'a> {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let head = record[0];
        let (label, rest) = match self.label_bytes {
            1 => (f64::from(record[1]), &record[2..]),
            4 => (f64::from(u32::from_le_bytes(record[1..5].try_into().expect("4 bytes"))), &record[5..]),
            _ => (f64::from_bits(word(&record[1..9])), &record[9..]),
        };
        let (weight, bins) = match head & WEIGHED != 0 {
            true => (f64::from_bits(word(&rest[..8])), &rest[8..]),
            false => (1.0, rest),
        };
        Record { count: u32::from(head & !WEIGHED), label, weight, bins }
    }

    /// Bin `f` of a record's bins.
    fn bin(&self, bins: &[u8], f: usize) -> u16 {
        match self.wide_bins {
            true => u16::from_le_bytes([bins[2 * f], bins[2 * f + 1]]),
            false => u16::from(bins[f]),
        }
    }
}

/// One piece's rows as records of the small nodes they reach, for the
/// batch [`crate::LevelForest::finishing`] names: per node reached, its key and
/// its records, one after another (a finishing job groups them by key
/// and hands each node's to [`crate::LevelForest::grow_node`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeRecords {
    /// Each node reached, in [`crate::LevelForest::finishing`]'s order, with its records.
    pub nodes: Vec<(NodeKey, Vec<u8>)>,
}

impl NodeRecords {
    /// Bytes of every node's records.
    pub fn len_bytes(&self) -> usize {
        self.nodes.iter().map(|(_, records)| records.len()).sum()
    }
}

/// The rows of one small open node, binned, in an order of their content
/// alone (a hash of it first), whatever the order their records came in: the
/// subtree grown from them is then the same from any pieces.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SmallNodeRows {
    /// Bootstrap multiplicity.
    pub(crate) counts: Vec<u32>,
    /// Sample weight (1 without).
    pub(crate) weights: Vec<f64>,
    /// Class index, or the response.
    pub(crate) labels: Vec<f64>,
    /// A column of bins per feature: one byte a row for a feature of at
    /// most 256 bins; a bin past a feature's last is its last.
    pub(crate) columns: Vec<BinColumn>,
}

impl SmallNodeRows {
    pub(crate) fn len(&self) -> usize {
        self.counts.len()
    }

    /// The rows of the records `pieces` hold (laid out as `layout` says),
    /// for features of `n_bins` bins. The records are decoded as they lie
    /// (one pass, in order, each row's bins copied whole), the rows are
    /// ordered by hash (a bucket pass on the hash's top bits, then each
    /// bucket's few sorted), then the bins are gathered in that order a
    /// block of rows at a time and cut into columns: the block stays in
    /// cache while each feature's column takes its share.
    pub(crate) fn from_records(pieces: &[&[u8]], layout: RecordLayout, n_bins: &[usize]) -> Result<SmallNodeRows> {
        debug_assert_eq!(n_bins.len(), layout.n_features);
        // At most this many records (none has a weight).
        let most = pieces.iter().map(|piece| piece.len()).sum::<usize>() / layout.size(false);
        if most > u32::MAX as usize {
            return Err(ArborError::Data(format!("a small node of {most} records: more than a node can hold")));
        }
        let width = layout.bins_size();
        // Each row's content hash (its record but the multiplicity) and its place as it arrived.
        let mut order: Vec<(u64, u32)> = Vec::with_capacity(most);
        let mut arrived = SmallNodeRows {
            counts: Vec::with_capacity(most),
            weights: Vec::with_capacity(most),
            labels: Vec::with_capacity(most),
            columns: Vec::new(),
        };
        // Each row's bins as they arrived, unclamped (rows of one hash are ordered by them).
        let mut raw_bins: Vec<u8> = Vec::with_capacity(most * width);
        layout.split(pieces, |record| {
            order.push((xxh3_64(&record[1..]), order.len() as u32));
            let record = layout.read(record);
            arrived.counts.push(record.count);
            arrived.weights.push(record.weight);
            arrived.labels.push(record.label);
            raw_bins.extend_from_slice(record.bins);
        })?;
        let n = order.len();
        sort_by_hash(&mut order);
        let row_bins = |r: u32| &raw_bins[r as usize * width..(r as usize + 1) * width];
        // Rows of one hash (copies of one row, or rarely a collision), by the
        // rest of their content: label, weight, multiplicity, then bins.
        for run in order.chunk_by_mut(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
            let rows = &arrived;
            run.sort_unstable_by(|&(_, a), &(_, b)| {
                let (ra, rb) = (a as usize, b as usize);
                rows.labels[ra]
                    .total_cmp(&rows.labels[rb])
                    .then(rows.weights[ra].total_cmp(&rows.weights[rb]))
                    .then(rows.counts[ra].cmp(&rows.counts[rb]))
                    .then_with(|| {
                        let (a, b) = (row_bins(a), row_bins(b));
                        (0..layout.n_features)
                            .map(|f| layout.bin(a, f).cmp(&layout.bin(b, f)))
                            .find(|o| o.is_ne())
                            .unwrap_or(Equal)
                    })
            });
        }
        let last: Vec<u16> = n_bins.iter().map(|&b| b.saturating_sub(1) as u16).collect();
        let mut columns: Vec<BinColumn> = n_bins
            .iter()
            .map(|&b| match b <= 256 {
                true => BinColumn::U8(Vec::with_capacity(n)),
                false => BinColumn::U16(Vec::with_capacity(n)),
            })
            .collect();
        let mut block = Vec::with_capacity(GATHER_ROWS * width);
        for rows in order.chunks(GATHER_ROWS) {
            block.clear();
            rows.iter().for_each(|&(_, r)| block.extend_from_slice(row_bins(r)));
            for (f, (column, &last)) in columns.iter_mut().zip(&last).enumerate() {
                let bins = block.chunks_exact(width).map(|bins| layout.bin(bins, f).min(last));
                match column {
                    BinColumn::U8(column) => column.extend(bins.map(|b| b as u8)),
                    BinColumn::U16(column) => column.extend(bins),
                }
            }
        }
        Ok(SmallNodeRows {
            counts: order.iter().map(|&(_, r)| arrived.counts[r as usize]).collect(),
            weights: order.iter().map(|&(_, r)| arrived.weights[r as usize]).collect(),
            labels: order.iter().map(|&(_, r)| arrived.labels[r as usize]).collect(),
            columns,
        })
    }
}

/// Rows a gather of bins takes at a time (their bins, 20 to 40 bytes a
/// row, stay in the first cache levels while every column is cut).
const GATHER_ROWS: usize = 1024;

/// Sorts `keys` by hash (then row), as `sort_unstable` would: content hashes
/// are spread evenly, so one counting pass on their top bits leaves buckets
/// of a few keys each, which are sorted in place. Small inputs sort directly.
fn sort_by_hash(keys: &mut Vec<(u64, u32)>) {
    const DIRECT: usize = 4096;
    if keys.len() < DIRECT {
        keys.sort_unstable();
        return;
    }
    // About 8 keys a bucket, at most 2^16 buckets.
    let bits = (usize::BITS - (keys.len() / 8).leading_zeros()).min(16);
    let bucket = |k: &(u64, u32)| (k.0 >> (64 - bits)) as usize;
    let mut starts = vec![0usize; (1 << bits) + 1];
    keys.iter().for_each(|k| starts[bucket(k) + 1] += 1);
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut sorted = vec![(0u64, 0u32); keys.len()];
    let mut next = starts.clone();
    for k in keys.iter() {
        let b = bucket(k);
        sorted[next[b]] = *k;
        next[b] += 1;
    }
    starts.windows(2).for_each(|w| sorted[w[0]..w[1]].sort_unstable());
    *keys = sorted;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucket pass orders keys as a full sort does: hashes spread
    /// evenly, hashes of few distinct values (one bucket takes them all),
    /// and sizes either side of the direct sort's limit.
    #[test]
    fn keys_sort_by_hash_as_a_full_sort_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state ^ (state >> 29)
        };
        for (n, distinct) in [(4_095, u64::MAX), (4_096, u64::MAX), (100_003, u64::MAX), (50_000, 7), (20_000, 1 << 40)]
        {
            let keys: Vec<(u64, u32)> = (0..n as u32).map(|r| (next() % distinct, r)).collect();
            let (mut want, mut got) = (keys.clone(), keys);
            want.sort_unstable();
            sort_by_hash(&mut got);
            assert_eq!(got, want, "{n} keys of {distinct} hash values");
        }
    }

    proptest::proptest! {
        /// A record carries what the finishing grower reads, exactly, in
        /// each of its layouts: a class index or a response, one-byte or
        /// two-byte bins, a weight only when it is not 1. The rows come
        /// back in the order of their content (a hash of the record but
        /// its multiplicity, then label, weight, multiplicity, bins),
        /// whatever pieces and order the records came in; a record cut
        /// short is an error.
        #[test]
        fn records_read_back_in_content_order(
            label_bytes in proptest::sample::select(vec![1usize, 4, 8]),
            wide_bins: bool,
            rows in proptest::collection::vec(
                (1..=MAX_DRAWS,
                 0u32..300,
                 proptest::prop_oneof![proptest::strategy::Just(0.5), proptest::num::f64::NORMAL],
                 proptest::prop_oneof![proptest::strategy::Just(1.0), 0.0..50.0f64],
                 proptest::collection::vec(proptest::prop_oneof![0u16..2, 0u16..1024], 3)),
                0..40),
            cut in 0usize..40,
        ) {
            let layout = RecordLayout { label_bytes, wide_bins, n_features: 3 };
            let classes = label_bytes < 8;
            let n_bins = [if wide_bins { 1024 } else { 256 }, 256, 3];
            let mut records = Vec::new();
            let mut want = Vec::new();
            for (count, class, value, weight, bins) in rows {
                let class = if label_bytes == 1 { class % 3 } else { class };
                let label = if classes { f64::from(class) } else { value };
                let bins: Vec<u16> = bins.iter().map(|&b| if wide_bins { b } else { b % 256 }).collect();
                layout.write(&mut records, count, label, weight, &bins);
                // A record written for one multiplicity and set to another is the record of the other.
                let mut other = Vec::new();
                layout.write(&mut other, MAX_DRAWS + 1 - count, label, weight, &bins);
                RecordLayout::set_count(&mut other, count);
                proptest::prop_assert_eq!(&other[..], &records[records.len() - other.len()..]);
                let hash = xxh3_64(&other[1..]);
                let clamped: Vec<u16> = bins.iter().zip(n_bins).map(|(&b, n)| b.min(n as u16 - 1)).collect();
                want.push((hash, label, weight, count, bins, clamped));
            }
            want.sort_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(a.1.total_cmp(&b.1))
                    .then(a.2.total_cmp(&b.2))
                    .then(a.3.cmp(&b.3))
                    .then_with(|| a.4.cmp(&b.4))
            });
            let column = |f: usize| match n_bins[f] > 256 {
                true => BinColumn::U16(want.iter().map(|w| w.5[f]).collect()),
                false => BinColumn::U8(want.iter().map(|w| w.5[f] as u8).collect()),
            };
            let want = SmallNodeRows {
                counts: want.iter().map(|w| w.3).collect(),
                weights: want.iter().map(|w| w.2).collect(),
                labels: want.iter().map(|w| w.1).collect(),
                columns: (0..3).map(column).collect(),
            };
            proptest::prop_assert_eq!(&SmallNodeRows::from_records(&[&records], layout, &n_bins).unwrap(), &want);
            // The same records in two pieces, the later first.
            let mut starts = Vec::new();
            layout.split(&[&records], |r| starts.push(r.as_ptr() as usize - records.as_ptr() as usize)).unwrap();
            let at = starts.get(cut).copied().unwrap_or(records.len());
            let (head, tail) = records.split_at(at);
            proptest::prop_assert_eq!(&SmallNodeRows::from_records(&[tail, head], layout, &n_bins).unwrap(), &want);
            if !records.is_empty() {
                let short = &records[..records.len() - 1];
                proptest::prop_assert!(SmallNodeRows::from_records(&[short], layout, &n_bins).is_err());
            }
        }
    }
}
