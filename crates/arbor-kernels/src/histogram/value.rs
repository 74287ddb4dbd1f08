//! Regression forests' row records: each [`crate::RowRecords`] record ends
//! in the row's bootstrap count and response, so a node's histograms, its
//! variance and its partition read its records in order instead of
//! gathering a row's statistics by row id.
//!
//! A record adds `[count, count, count · y]` to its bin: the statistics of
//! [`crate::HistogramTarget::Values`] for a row whose weight is its count (no sample
//! weights), equal to them to the bit.

use pulp::{Simd, WithSimd};

use crate::histogram::compact::CompactHistogram;
use crate::histogram::target::RowStats;
use crate::records::byte_layout::{as_records, check_value_records, record_value};

/// A value record's statistics as a bin sums them: count, weight, weighted response.
#[inline(always)]
fn record_stats<const W: usize>(record: &[u8; W]) -> RowStats {
    let (count, y) = record_value(record);
    [count, count, count * y, 0.0]
}

/// Feature `f`'s histogram of a node's value records (`width` bytes each),
/// three values per bin as [`crate::build_histogram`] lays out
/// [`crate::HistogramTarget::Values`]; `hist` is written whole. `wide` is scratch.
pub fn build_value_histogram_records(
    records: &[u8],
    width: usize,
    f: usize,
    wide: &mut Vec<RowStats>,
    hist: &mut [f64],
) {
    check_value_records(records, width, f);
    assert_eq!(hist.len() % 3, 0, "three values per bin");
    wide.clear();
    wide.resize(hist.len() / 3, [0.0; 4]);
    let spans = [(0, wide.len())];
    crate::dispatch::run(FusedValuesKernel { records, width, features: &[f], spans: &spans, sums: wide });
    write_three(wide, hist);
}

/// Copies four-lane bins into `hist` as three values a bin. A lane loop, not
/// `copy_from_slice`: a copy of a run-time length is a `memmove` call per bin.
fn write_three(cells: &[RowStats], hist: &mut [f64]) {
    for (out, cell) in hist.chunks_exact_mut(3).zip(cells) {
        for (o, &c) in out.iter_mut().zip(cell) {
            *o = c;
        }
    }
}

/// Most features [`ValueRecordSums::fill`] sums in one pass; more go in several.
const FUSED_FEATURES: usize = 4;

/// The dense histograms of several features of one node's value records,
/// summed in one pass: a large node's record is read once for all its
/// drawn features instead of once per feature, and the features' adds are
/// independent of each other.
#[derive(Debug, Default)]
pub struct ValueRecordSums {
    sums: Vec<RowStats>,
    /// Where each feature's bins start in `sums`, and how many it has.
    spans: Vec<(usize, usize)>,
}

impl ValueRecordSums {
    /// Sums `records` (`width` bytes each) into every bin of each feature of
    /// `features`, whose bins number `n_bins[k]`; each bin adds its records
    /// in their order, as [`build_value_histogram_records`] does.
    pub fn fill(&mut self, records: &[u8], width: usize, features: &[usize], n_bins: &[usize]) {
        assert_eq!(features.len(), n_bins.len(), "one bin count per feature");
        for &f in features {
            check_value_records(records, width, f);
        }
        self.spans.clear();
        let mut end = 0;
        for &n in n_bins {
            self.spans.push((end, n));
            end += n;
        }
        self.sums.clear();
        self.sums.resize(end, [0.0; 4]);
        for (features, spans) in features.chunks(FUSED_FEATURES).zip(self.spans.chunks(FUSED_FEATURES)) {
            let sums = self.sums.as_mut_slice();
            crate::dispatch::run(FusedValuesKernel { records, width, features, spans, sums });
        }
    }

    /// Writes feature `k`'s histogram (of the features last filled) into
    /// `hist`, three values per bin.
    pub fn write(&self, k: usize, hist: &mut [f64]) {
        let (start, len) = self.spans[k];
        assert_eq!(hist.len(), len * 3, "three values per bin");
        write_three(&self.sums[start..start + len], hist);
    }
}

struct FusedValuesKernel<'a> {
    records: &'a [u8],
    width: usize,
    features: &'a [usize],
    spans: &'a [(usize, usize)],
    sums: &'a mut [RowStats],
}

impl WithSimd for FusedValuesKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let FusedValuesKernel { records, width, features, spans, sums } = self;
        macro_rules! widths {
            ($m:literal) => {
                match width {
                    16 => accumulate_fused::<16, $m>(records, features, spans, sums),
                    32 => accumulate_fused::<32, $m>(records, features, spans, sums),
                    _ => accumulate_fused::<64, $m>(records, features, spans, sums),
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

/// Adds each record's statistics to its bin of `M` features at once (one
/// feature's histogram is the case `M = 1`).
#[inline(always)]
fn accumulate_fused<const W: usize, const M: usize>(
    records: &[u8],
    features: &[usize],
    spans: &[(usize, usize)],
    sums: &mut [RowStats],
) {
    let features: [usize; M] = std::array::from_fn(|k| features[k]);
    let starts: [usize; M] = std::array::from_fn(|k| spans[k].0);
    for record in as_records::<W>(records) {
        let stats = record_stats(record);
        for k in 0..M {
            let cell = &mut sums[starts[k] + usize::from(record[features[k]])];
            for (c, v) in cell.iter_mut().zip(stats) {
                *c += v;
            }
        }
    }
}

impl CompactHistogram {
    /// [`CompactHistogram::build_packed`] from a node's value records: only
    /// the bins the records occupy are listed (for nodes of few rows).
    pub fn build_values_records(&mut self, records: &[u8], width: usize, f: usize) {
        check_value_records(records, width, f);
        match width {
            16 => self.occupy_values::<16>(records, f),
            32 => self.occupy_values::<32>(records, f),
            _ => self.occupy_values::<64>(records, f),
        }
    }

    #[inline(always)]
    fn occupy_values<const W: usize>(&mut self, records: &[u8], f: usize) {
        let records = as_records::<W>(records);
        let n_bins = self.reset_flags(usize::from(u8::MAX));
        let mut packed = std::mem::take(&mut self.packed);
        if packed.len() < n_bins {
            packed.resize(n_bins, [0.0; 4]);
        }
        // Branch-free listing: every record writes its bin at the list's
        // end, which only a bin not seen before extends.
        self.list_room(records.len());
        let mut listed = 0;
        for record in records {
            let b = usize::from(record[f]);
            listed = self.list(listed, b);
            for (c, v) in packed[b].iter_mut().zip(record_stats(record)) {
                *c += v;
            }
        }
        self.collect(3, listed, |b, out| {
            // A lane loop, not `copy_from_slice`: a copy of a run-time length is a `memmove` call.
            for (o, &c) in out.iter_mut().zip(&packed[b]) {
                *o = c;
            }
            packed[b] = [0.0; 4];
        });
        self.packed = packed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        build_histogram, partition_records, value_records_variance_until, HistogramTarget, RowRecords, SplitRule,
    };
    use arbor_quantize::{BinnedMatrix, FeatureColumn, QuantizeParams};

    /// Value records give the row-wise histograms, compact histograms and
    /// variance to the bit, before and after a partition.
    #[test]
    fn value_records_sum_as_rows_do() {
        for (n_features, width) in [(3, 16), (12, 32), (50, 64)] {
            let n = 700;
            let columns: Vec<FeatureColumn> = (0..n_features)
                .map(|f| {
                    FeatureColumn::Numeric(
                        (0..n)
                            .map(|r| if (r + f) % 11 == 0 { f64::NAN } else { ((r * (f + 3)) % 37) as f64 })
                            .collect::<Vec<_>>()
                            .into(),
                    )
                })
                .collect();
            let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
            let y: Vec<f64> = (0..n).map(|r| (r as f64 * 0.37).sin() * 100.0 + 0.1).collect();
            let counts: Vec<f64> = (0..n).map(|r| ((r * 7) % 4) as f64).collect();
            let rows: Vec<u32> = (0..n as u32).filter(|&r| counts[r as usize] > 0.0).collect();
            let mut records = RowRecords::with_values(&matrix, &rows, &counts, &y).unwrap();
            assert_eq!(records.width(), width);
            let target = HistogramTarget::Values { y: &y };
            let f = n_features - 1;
            let n_bins = matrix.mapper(f).n_bins();
            let expected = |rows: &[u32]| {
                let mut hist = vec![0.0; n_bins * 3];
                build_histogram(matrix.column(f), rows, &counts, &counts, &target, &mut hist);
                hist
            };
            let from_records = |records: &[u8]| {
                let mut hist = vec![f64::NAN; n_bins * 3];
                build_value_histogram_records(records, width, f, &mut Vec::new(), &mut hist);
                hist
            };
            let all = records.records(0..rows.len());
            assert_eq!(from_records(all), expected(&rows), "{n_features} features");
            let mut fused = ValueRecordSums::default();
            let features: Vec<usize> = (0..n_features).rev().take(5).collect();
            let n_bins_of: Vec<usize> = features.iter().map(|&f| matrix.mapper(f).n_bins()).collect();
            fused.fill(all, width, &features, &n_bins_of);
            for (k, &g) in features.iter().enumerate() {
                let mut alone = vec![0.0; n_bins_of[k] * 3];
                build_value_histogram_records(all, width, g, &mut Vec::new(), &mut alone);
                let mut together = vec![f64::NAN; n_bins_of[k] * 3];
                fused.write(k, &mut together);
                assert_eq!(together, alone, "feature {g} summed with others");
            }
            let mut compact = CompactHistogram::default();
            compact.build_values_records(all, width, f);
            for (i, &b) in compact.bins().iter().enumerate() {
                assert_eq!(compact.hist()[i * 3..i * 3 + 3], expected(&rows)[b as usize * 3..b as usize * 3 + 3]);
            }
            let w: f64 = rows.iter().map(|&r| counts[r as usize]).sum();
            let mean = rows.iter().map(|&r| counts[r as usize] * y[r as usize]).sum::<f64>() / w;
            let variance = rows.iter().map(|&r| counts[r as usize] * (y[r as usize] - mean).powi(2)).sum::<f64>() / w;
            let got = value_records_variance_until(all, width, mean, w, f64::INFINITY);
            assert_eq!(got.to_bits(), variance.to_bits());
            assert!(value_records_variance_until(all, width, mean, w, variance / 4.0) > variance / 4.0);

            // After a partition each side sums its rows (in its own order: compare sorted).
            let rule = SplitRule::Threshold { bin: 9, missing_left: true };
            let n_left = partition_records(records.records_mut(0..rows.len()), width, 0, &rule);
            let (left, right): (Vec<u32>, Vec<u32>) = rows.iter().partition(|&&r| {
                let b = matrix.column(0).get(r as usize);
                b == 0 || b <= 9
            });
            assert_eq!(n_left, left.len());
            let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0));
            assert!(close(&from_records(records.records(0..n_left)), &expected(&left)));
            assert!(close(&from_records(records.records(n_left..rows.len())), &expected(&right)));
        }
        // Counts that are not whole numbers have no value records.
        let matrix = BinnedMatrix::fit(&[FeatureColumn::Numeric(vec![1.0, 2.0].into())], &QuantizeParams::default());
        assert!(RowRecords::with_values(&matrix, &[0, 1], &[1.0, 0.5], &[1.0, 2.0]).is_none());
    }
}
