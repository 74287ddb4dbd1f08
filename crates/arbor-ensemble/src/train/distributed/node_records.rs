//! A forest's small-node records: the rows a finishing job sends to the
//! task that grows a small node, one record per row and node, and the
//! rows that task reads back from them, in an order of their content.

use std::cmp::Ordering::Equal;

use arbor_quantize::BinColumn;

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

/// How a forest's small-node records are laid out, from its task and its
/// features' bins: a head byte (multiplicity and [`WEIGHED`]), the row's
/// content hash (u64), its label (a u32 class index, or an f64 response),
/// its weight when flagged (f64), then a bin per feature (u8, or u16 when
/// a feature has more than 256 bins), all little-endian. Only what the
/// finishing grower reads, as narrow as it is exact: the records are
/// what a finishing job shuffles.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordLayout {
    pub(crate) classes: bool,
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
    /// The layout of a forest's records for `task` over `features`.
    pub(crate) fn of(task: Task, features: &[Feature]) -> RecordLayout {
        RecordLayout {
            classes: task == Task::Classification,
            wide_bins: features.iter().any(|f| f.mapper.n_bins() > 256),
            n_features: features.len(),
        }
    }

    /// Bytes of a record, with or without a weight.
    pub(crate) fn size(&self, weighed: bool) -> usize {
        let label = if self.classes { 4 } else { 8 };
        let bins = if self.wide_bins { 2 } else { 1 } * self.n_features;
        1 + 8 + label + if weighed { 8 } else { 0 } + bins
    }

    /// Appends one row's record to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>, count: u32, hash: u64, label: f64, weight: f64, bins: &[u16]) {
        let weighed = weight.to_bits() != 1f64.to_bits();
        debug_assert!((1..=MAX_DRAWS).contains(&count));
        out.push(count as u8 | if weighed { WEIGHED } else { 0 });
        out.extend(hash.to_le_bytes());
        match self.classes {
            true => out.extend((label as u32).to_le_bytes()),
            false => out.extend(label.to_bits().to_le_bytes()),
        }
        if weighed {
            out.extend(weight.to_bits().to_le_bytes());
        }
        match self.wide_bins {
            true => bins.iter().for_each(|b| out.extend(b.to_le_bytes())),
            false => out.extend(bins.iter().map(|&b| b as u8)),
        }
    }

    /// Hands `each` the records `pieces` hold one after another, as its
    /// hash and its bytes; a piece that ends inside a record is an error.
    fn split(&self, pieces: &[&[u8]], mut each: impl FnMut(u64, &[u8])) -> Result<()> {
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
                each(u64::from_le_bytes(record[1..9].try_into().expect("8 bytes")), record);
                at += record.len();
            }
        }
        Ok(())
    }

    /// Reads a whole record (as [`RecordLayout::split`] cut it).
    fn read<'a>(&self, record: &'a [u8]) -> Record<'a> {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let head = record[0];
        let (label, rest) = match self.classes {
            true => (f64::from(u32::from_le_bytes(record[9..13].try_into().expect("4 bytes"))), &record[13..]),
            false => (f64::from_bits(word(&record[9..17])), &record[17..]),
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
/// alone (hash first), whatever the order their records came in: the
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
    /// (one pass, in order), then each column is gathered in the order of
    /// the rows' hashes: a column is two bytes a row, so its gather stays
    /// in cache where reading whole records in hash order would not.
    pub(crate) fn from_records(pieces: &[&[u8]], layout: RecordLayout, n_bins: &[usize]) -> Result<SmallNodeRows> {
        debug_assert_eq!(n_bins.len(), layout.n_features);
        // At most this many records (none has a weight).
        let most = pieces.iter().map(|piece| piece.len()).sum::<usize>() / layout.size(false);
        if most > u32::MAX as usize {
            return Err(ArborError::Data(format!("a small node of {most} records: more than a node can hold")));
        }
        let mut hashes = Vec::with_capacity(most);
        let mut arrived = SmallNodeRows {
            counts: Vec::with_capacity(most),
            weights: Vec::with_capacity(most),
            labels: Vec::with_capacity(most),
            columns: Vec::new(),
        };
        let last: Vec<u16> = n_bins.iter().map(|&b| b.saturating_sub(1) as u16).collect();
        // Each feature's bins as they arrived, unclamped (rows of one hash are ordered by them).
        let mut raw_bins: Vec<Vec<u16>> = (0..layout.n_features).map(|_| Vec::with_capacity(most)).collect();
        layout.split(pieces, |hash, record| {
            let record = layout.read(record);
            hashes.push(hash);
            arrived.counts.push(record.count);
            arrived.weights.push(record.weight);
            arrived.labels.push(record.label);
            raw_bins.iter_mut().enumerate().for_each(|(f, column)| column.push(layout.bin(record.bins, f)));
        })?;
        let n = hashes.len();
        let mut order: Vec<(u64, u32)> = hashes.into_iter().zip(0..n as u32).collect();
        order.sort_unstable();
        // Rows of one hash (copies of one row, or rarely a collision), by the
        // rest of their content: label, weight, multiplicity, then bins.
        for run in order.chunk_by_mut(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
            let (rows, bins) = (&arrived, &raw_bins);
            run.sort_unstable_by(|&(_, a), &(_, b)| {
                let (a, b) = (a as usize, b as usize);
                rows.labels[a]
                    .total_cmp(&rows.labels[b])
                    .then(rows.weights[a].total_cmp(&rows.weights[b]))
                    .then(rows.counts[a].cmp(&rows.counts[b]))
                    .then_with(|| {
                        bins.iter().map(|column| column[a].cmp(&column[b])).find(|o| o.is_ne()).unwrap_or(Equal)
                    })
            });
        }
        let order: Vec<usize> = order.into_iter().map(|(_, r)| r as usize).collect();
        let columns = raw_bins
            .iter()
            .zip(n_bins.iter().zip(last))
            .map(|(raw, (&n_bins, last))| match n_bins <= 256 {
                true => BinColumn::U8(order.iter().map(|&r| raw[r].min(last) as u8).collect()),
                false => BinColumn::U16(order.iter().map(|&r| raw[r].min(last)).collect()),
            })
            .collect();
        Ok(SmallNodeRows {
            counts: order.iter().map(|&r| arrived.counts[r]).collect(),
            weights: order.iter().map(|&r| arrived.weights[r]).collect(),
            labels: order.iter().map(|&r| arrived.labels[r]).collect(),
            columns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A record carries what the finishing grower reads, exactly, in
        /// each of its layouts: a class index or a response, one-byte or
        /// two-byte bins, a weight only when it is not 1. The rows come
        /// back in the order of their content (hash, label, weight,
        /// multiplicity, bins), whatever pieces and order the records
        /// came in; a record cut short is an error.
        #[test]
        fn records_read_back_in_content_order(
            classes: bool,
            wide_bins: bool,
            rows in proptest::collection::vec(
                (1..=MAX_DRAWS,
                 proptest::prop_oneof![0u64..3, proptest::num::u64::ANY],
                 0u32..3, proptest::num::f64::NORMAL,
                 proptest::prop_oneof![proptest::strategy::Just(1.0), 0.0..50.0f64],
                 proptest::collection::vec(0u16..1024, 3)),
                0..40),
            cut in 0usize..40,
        ) {
            let layout = RecordLayout { classes, wide_bins, n_features: 3 };
            let n_bins = [if wide_bins { 1024 } else { 256 }, 256, 3];
            let mut records = Vec::new();
            let mut want = Vec::new();
            for (count, hash, class, value, weight, bins) in rows {
                let label = if classes { f64::from(class) } else { value };
                let bins: Vec<u16> = bins.iter().map(|&b| if wide_bins { b } else { b % 256 }).collect();
                layout.write(&mut records, count, hash, label, weight, &bins);
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
            layout.split(&[&records], |_, r| starts.push(r.as_ptr() as usize - records.as_ptr() as usize)).unwrap();
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
