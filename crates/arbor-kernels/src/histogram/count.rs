//! Class histograms summed as whole numbers.
//!
//! Without sample weights, a row of a forest's tree weighs its bootstrap
//! multiplicity, so every value of a class histogram is a whole number. Such
//! a row is one 4-byte key (class and multiplicity), and its histogram is one
//! integer add: a quarter of the memory a row of [`crate::RowStats`] reads,
//! and a shorter chain when rows in a row hit the same bin. Sums of whole
//! numbers below 2^53 are exact in `f64` in any order, so the histograms
//! equal [`crate::build_histogram`]'s to the bit.

use arbor_quantize::BinColumn;
use pulp::{Simd, WithSimd};

use crate::dispatch::{prefetch, row_ahead};
use crate::histogram::compact::{max_bin, CompactHistogram};
use crate::histogram::target::HistogramTarget;
use crate::records::byte_layout::{as_records, record_key};
use crate::records::count_key::{count_key, CountKey, MAX_COUNT_CLASSES};

/// Each row's [`CountKey`], indexed by row id (zero for rows not in `rows`),
/// when [`keys_fit`] says integer histograms equal the weighted ones.
/// `None` otherwise.
pub fn count_keys(
    target: &HistogramTarget<'_>,
    rows: &[u32],
    weights: &[f64],
    counts: &[f64],
) -> Option<Vec<CountKey>> {
    let HistogramTarget::Classes { labels, .. } = *target else { return None };
    keys_fit(target, rows, weights, counts).then(|| {
        let mut keys = vec![0; weights.len()];
        for &r in rows {
            keys[r as usize] = count_key(labels, counts, r as usize);
        }
        keys
    })
}

/// Whether integer histograms equal the weighted ones over `rows`: classes,
/// at most [`MAX_COUNT_CLASSES`] of them, every row weighing exactly its
/// count, counts whole, from 1 to 2^24 − 1 (a row of count 0 would occupy a
/// bin without a trace in the sums), and their sum within `u32`.
pub fn keys_fit(target: &HistogramTarget<'_>, rows: &[u32], weights: &[f64], counts: &[f64]) -> bool {
    let HistogramTarget::Classes { labels, n_classes } = *target else { return false };
    if n_classes > MAX_COUNT_CLASSES {
        return false;
    }
    let mut total = 0u64;
    for &r in rows {
        let r = r as usize;
        let count = counts[r];
        let whole = count >= 1.0 && count < f64::from(1u32 << 24) && count.fract() == 0.0;
        if !whole || weights[r] != count || labels[r] as usize >= n_classes {
            return false;
        }
        total += count as u64;
    }
    total <= u64::from(u32::MAX)
}

/// One bin's values from its class sums: each class's weight, then the count
/// (their total; [`count_keys`] keeps it within `u32`).
#[inline(always)]
fn write_bin(out: &mut [f64], sums: &[u32]) {
    let mut total = 0u32;
    for (o, &s) in out.iter_mut().zip(sums) {
        *o = f64::from(s);
        total += s;
    }
    out[sums.len()] = f64::from(total);
}

struct CountHistogramKernel<'a> {
    column: &'a BinColumn,
    rows: &'a [u32],
    keys: &'a [CountKey],
    n_classes: usize,
    sums: &'a mut [u32],
}

impl WithSimd for CountHistogramKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let CountHistogramKernel { column, rows, keys, n_classes, sums } = self;
        // Two classes, the common case, index bins with a shift.
        match (column, n_classes) {
            (BinColumn::U8(bins), 2) => accumulate_counts(bins, rows, keys, 2, sums),
            (BinColumn::U8(bins), _) => accumulate_counts(bins, rows, keys, n_classes, sums),
            (BinColumn::U16(bins), _) => accumulate_counts(bins, rows, keys, n_classes, sums),
        }
    }
}

/// Adds each row's multiplicity to its class in its bin, prefetching the bin
/// and key of the row `PREFETCH_ROWS` places ahead.
#[inline(always)]
fn accumulate_counts<B: Copy + Into<usize>>(
    bins: &[B],
    rows: &[u32],
    keys: &[CountKey],
    n_classes: usize,
    sums: &mut [u32],
) {
    for (i, &r) in rows.iter().enumerate() {
        if let Some(a) = row_ahead(rows, i) {
            prefetch(bins, a);
            prefetch(keys, a);
        }
        let r = r as usize;
        let key = keys[r];
        sums[bins[r].into() * n_classes + (key & 0xff) as usize] += key >> 8;
    }
}

struct CountRecordsKernel<'a> {
    records: &'a [u8],
    width: usize,
    f: usize,
    n_classes: usize,
    sums: &'a mut [u32],
}

impl WithSimd for CountRecordsKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let CountRecordsKernel { records, width, f, n_classes, sums } = self;
        match (width, n_classes) {
            (16, 2) => accumulate_records::<16>(records, f, 2, sums),
            (8, _) => accumulate_records::<8>(records, f, n_classes, sums),
            (16, _) => accumulate_records::<16>(records, f, n_classes, sums),
            (32, _) => accumulate_records::<32>(records, f, n_classes, sums),
            _ => accumulate_records::<64>(records, f, n_classes, sums),
        }
    }
}

/// Adds each record's multiplicity to its class in its bin of feature `f`.
#[inline(always)]
fn accumulate_records<const W: usize>(records: &[u8], f: usize, n_classes: usize, sums: &mut [u32]) {
    for record in as_records::<W>(records) {
        let key = record_key(record);
        sums[usize::from(record[f]) * n_classes + (key & 0xff) as usize] += key >> 8;
    }
}

/// Most features [`RecordSums::fill`] sums in one pass; more go in several.
const FUSED_FEATURES: usize = 4;

/// The dense class sums of several features of one node's records, summed
/// in one pass: a record is read once for all of them instead of once per
/// feature. [`CompactHistogram::take_counts`] then compacts each feature's.
#[derive(Debug, Default)]
pub struct RecordSums {
    sums: Vec<u32>,
    /// Where each feature's sums start in `sums`, and their length.
    spans: Vec<(usize, usize)>,
}

impl RecordSums {
    /// Sums the class counts of `records` (`width` bytes each) in every bin
    /// of each feature of `features`, whose bins number `n_bins[k]`.
    pub fn fill(&mut self, records: &[u8], width: usize, features: &[usize], n_bins: &[usize], n_classes: usize) {
        assert!((1..=MAX_COUNT_CLASSES).contains(&n_classes), "a class histogram");
        assert!(features.len() == n_bins.len() && records.len() % width == 0, "one bin count per feature");
        assert!(features.iter().all(|&f| f + 4 < width), "features lie in the records");
        self.spans.clear();
        let mut end = 0;
        for &n in n_bins {
            self.spans.push((end, n * n_classes));
            end += n * n_classes;
        }
        // Every cell is zero between fills: [`CompactHistogram::take_counts`] zeroes them.
        if self.sums.len() < end {
            self.sums.resize(end, 0);
        }
        for (features, spans) in features.chunks(FUSED_FEATURES).zip(self.spans.chunks(FUSED_FEATURES)) {
            let sums = &mut self.sums[..end];
            crate::dispatch::run(FusedRecordsKernel { records, width, features, spans, n_classes, sums });
        }
    }

    /// Feature `k`'s sums (of the features last filled).
    pub fn feature(&mut self, k: usize) -> &mut [u32] {
        let (start, len) = self.spans[k];
        &mut self.sums[start..start + len]
    }
}

struct FusedRecordsKernel<'a> {
    records: &'a [u8],
    width: usize,
    features: &'a [usize],
    spans: &'a [(usize, usize)],
    n_classes: usize,
    sums: &'a mut [u32],
}

impl WithSimd for FusedRecordsKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let FusedRecordsKernel { records, width, features, spans, n_classes, sums } = self;
        macro_rules! widths {
            ($m:literal) => {
                match (width, n_classes) {
                    (16, 2) => accumulate_fused::<16, $m>(records, features, spans, 2, sums),
                    (8, _) => accumulate_fused::<8, $m>(records, features, spans, n_classes, sums),
                    (16, _) => accumulate_fused::<16, $m>(records, features, spans, n_classes, sums),
                    (32, _) => accumulate_fused::<32, $m>(records, features, spans, n_classes, sums),
                    _ => accumulate_fused::<64, $m>(records, features, spans, n_classes, sums),
                }
            };
        }
        match features.len() {
            1 => widths!(1),
            2 => widths!(2),
            3 => widths!(3),
            _ => widths!(4),
        }
    }
}

/// [`accumulate_records`] for `M` features at once.
#[inline(always)]
fn accumulate_fused<const W: usize, const M: usize>(
    records: &[u8],
    features: &[usize],
    spans: &[(usize, usize)],
    n_classes: usize,
    sums: &mut [u32],
) {
    let features: [usize; M] = std::array::from_fn(|k| features[k]);
    let starts: [usize; M] = std::array::from_fn(|k| spans[k].0);
    for record in as_records::<W>(records) {
        let key = record_key(record);
        let (class, count) = ((key & 0xff) as usize, key >> 8);
        for k in 0..M {
            sums[starts[k] + usize::from(record[features[k]]) * n_classes + class] += count;
        }
    }
}

impl CompactHistogram {
    /// [`CompactHistogram::build_counts_records`] from sums a
    /// [`RecordSums`] filled (one feature's, `n_classes` per bin), which it
    /// zeroes for the next fill.
    pub fn take_counts(&mut self, sums: &mut [u32], n_classes: usize) {
        self.compact_all(sums, n_classes);
    }

    /// [`CompactHistogram::build`] from [`count_keys`], for a feature of
    /// `n_bins` bins: integer sums, equal to it to the bit. Few rows list
    /// their bins as they reach them; more rows are summed by the
    /// prefetching kernel over every bin, which one pass then compacts,
    /// so the split scan that follows reads occupied bins alone.
    pub fn build_counts(
        &mut self,
        column: &BinColumn,
        rows: &[u32],
        keys: &[CountKey],
        n_classes: usize,
        n_bins: usize,
    ) {
        assert!((1..=MAX_COUNT_CLASSES).contains(&n_classes), "a class histogram");
        let mut sums = std::mem::take(&mut self.sums);
        if rows.len() * 2 < n_bins {
            self.reset_flags(max_bin(column, rows));
            if sums.len() < n_bins * n_classes {
                sums.resize(n_bins * n_classes, 0);
            }
            let listed = match column {
                BinColumn::U8(bins) => self.occupy_counts(bins, rows, keys, n_classes, &mut sums),
                BinColumn::U16(bins) => self.occupy_counts(bins, rows, keys, n_classes, &mut sums),
            };
            self.collect_sums(&mut sums, n_classes, listed);
        } else {
            // Longer from a wider feature is fine: every cell is zero between builds.
            if sums.len() < n_bins * n_classes {
                sums.resize(n_bins * n_classes, 0);
            }
            let dense = &mut sums[..n_bins * n_classes];
            crate::dispatch::run(CountHistogramKernel { column, rows, keys, n_classes, sums: dense });
            self.compact_all(dense, n_classes);
        }
        self.sums = sums;
    }

    /// [`CompactHistogram::build_counts`] from a node's records (see
    /// [`crate::RowRecords`]; `width` bytes each): feature `f`'s bins and the keys
    /// are read in order, not gathered by row id.
    pub fn build_counts_records(&mut self, records: &[u8], width: usize, f: usize, n_classes: usize, n_bins: usize) {
        assert!((1..=MAX_COUNT_CLASSES).contains(&n_classes), "a class histogram");
        assert!(f + 4 < width && records.len() % width == 0, "feature {f} lies in records of {width} bytes");
        let mut sums = std::mem::take(&mut self.sums);
        if records.len() / width * 2 < n_bins {
            self.reset_flags(usize::from(u8::MAX));
            if sums.len() < n_bins * n_classes {
                sums.resize(n_bins * n_classes, 0);
            }
            let listed = match width {
                8 => self.occupy_records::<8>(records, f, n_classes, &mut sums),
                16 => self.occupy_records::<16>(records, f, n_classes, &mut sums),
                32 => self.occupy_records::<32>(records, f, n_classes, &mut sums),
                _ => self.occupy_records::<64>(records, f, n_classes, &mut sums),
            };
            self.collect_sums(&mut sums, n_classes, listed);
        } else {
            // Longer from a wider feature is fine: every cell is zero between builds.
            if sums.len() < n_bins * n_classes {
                sums.resize(n_bins * n_classes, 0);
            }
            let dense = &mut sums[..n_bins * n_classes];
            crate::dispatch::run(CountRecordsKernel { records, width, f, n_classes, sums: dense });
            self.compact_all(dense, n_classes);
        }
        self.sums = sums;
    }

    /// [`CompactHistogram::occupy_counts`] over records.
    #[inline(always)]
    fn occupy_records<const W: usize>(
        &mut self,
        records: &[u8],
        f: usize,
        n_classes: usize,
        sums: &mut [u32],
    ) -> usize {
        let records = as_records::<W>(records);
        self.list_room(records.len());
        let mut listed = 0;
        for record in records {
            let b = usize::from(record[f]);
            listed = self.list(listed, b);
            let key = record_key(record);
            sums[b * n_classes + (key & 0xff) as usize] += key >> 8;
        }
        listed
    }

    /// Ends a build whose rows listed their first `listed` bins: each listed
    /// bin's class sums become its statistics and are zeroed for the next
    /// build (two classes, a loop of their own).
    fn collect_sums(&mut self, sums: &mut [u32], n_classes: usize, listed: usize) {
        match n_classes {
            2 => self.collect_sums_of(sums, 2, listed),
            _ => self.collect_sums_of(sums, n_classes, listed),
        }
    }

    #[inline(always)]
    fn collect_sums_of(&mut self, sums: &mut [u32], n_classes: usize, listed: usize) {
        self.collect(n_classes + 1, listed, |b, out| {
            let cell = &mut sums[b * n_classes..(b + 1) * n_classes];
            write_bin(out, cell);
            cell.fill(0);
        });
    }

    /// Ends a build that summed every bin, with [`CompactHistogram::compact_sums`]
    /// (two classes, a loop of their own).
    fn compact_all(&mut self, sums: &mut [u32], n_classes: usize) {
        match n_classes {
            2 => self.compact_sums(sums, 2),
            _ => self.compact_sums(sums, n_classes),
        }
    }

    /// Lists the bins of `sums` that hold rows (the missing bin 0 first,
    /// always) with their statistics, and zeroes `sums` for the next build.
    /// Without a branch: every bin is written to the next free slot, which
    /// only an occupied bin keeps.
    #[inline(always)]
    fn compact_sums(&mut self, sums: &mut [u32], n_classes: usize) {
        let stride = n_classes + 1;
        let n_bins = sums.len() / n_classes;
        self.size(n_bins, stride);
        let (bins, hist) = self.buffers();
        let mut kept = 0;
        for (b, cell) in sums.chunks_exact_mut(n_classes).enumerate() {
            bins[kept] = b as u16;
            write_bin(&mut hist[kept * stride..(kept + 1) * stride], cell);
            let any = cell.iter().fold(0, |acc, &s| acc | s);
            kept += usize::from((b == 0) | (any != 0));
            cell.fill(0);
        }
        self.set_len(kept);
    }

    /// Adds each row's multiplicity to its class in its bin and lists the
    /// bins as rows first reach them, without a branch: whether a bin is new
    /// is as good as random to the branch predictor. Returns how many bins
    /// it listed.
    #[inline(always)]
    fn occupy_counts<B: Copy + Into<usize>>(
        &mut self,
        bins: &[B],
        rows: &[u32],
        keys: &[CountKey],
        n_classes: usize,
        sums: &mut [u32],
    ) -> usize {
        self.list_room(rows.len());
        let mut listed = 0;
        for (i, &r) in rows.iter().enumerate() {
            if let Some(a) = row_ahead(rows, i) {
                prefetch(bins, a);
                prefetch(keys, a);
            }
            let r = r as usize;
            let b = bins[r].into();
            listed = self.list(listed, b);
            let key = keys[r];
            sums[b * n_classes + (key & 0xff) as usize] += key >> 8;
        }
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_need_unit_sample_weights_and_whole_counts() {
        let labels = [0, 1, 1];
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
        let counts = [2.0, 0.0, 1.0];
        let keys = count_keys(&target, &[0, 2], &counts, &counts).unwrap();
        assert_eq!(keys, vec![2 << 8, 0, 1 << 8 | 1]);
        // A row drawn zero times has no key.
        assert!(count_keys(&target, &[0, 1], &counts, &counts).is_none());
        // A sample weight, a fractional count, or values: the weighted kernels.
        assert!(count_keys(&target, &[0, 2], &[2.0, 0.0, 1.5], &counts).is_none());
        assert!(count_keys(&target, &[0], &[0.5; 3], &[0.5; 3]).is_none());
        assert!(count_keys(&HistogramTarget::Values { y: &[1.0; 3] }, &[0], &counts, &counts).is_none());
    }
}
