//! The first pass over training rows: what must be known before any row
//! can be binned. The label's classes and sums, each categorical feature's
//! categories, and each numeric feature's bin sample: the values of the
//! rows with the smallest content hashes, so the sample, and the bins
//! fitted on it, depend on the rows alone (not their order, nor how they
//! are cut into batches, files or a cluster's partitions). One machine's
//! binned data ([`crate::BinnedData`]) and a cluster's level training
//! share it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arbor_quantize::{BinMapper, FeatureColumn, FeatureType, QuantizeParams};
use serde::{Deserialize, Serialize};

use crate::data::canonical_order::mix;
use crate::data::dataset::TrainingData;
use crate::data::label::{Classes, Target};
use crate::model::feature::Feature;
use crate::train::exact_histograms::fixed;
use crate::{ArborError, LabelInfo, Result, Task};

/// Most values of each numeric feature its bins are fitted on: those of
/// the rows with the smallest content hashes (LightGBM samples 200,000).
pub const BIN_SAMPLE_ROWS: usize = 100_000;

/// What one piece of the rows tells before training starts, merged over
/// every piece: the label's classes and sums, each feature's categories,
/// and a content-chosen sample of each numeric feature's values.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LevelSummary {
    pub(crate) task: Option<Task>,
    pub(crate) label: Option<LabelInfo>,
    /// Each feature's name and Arrow type.
    pub(crate) features: Vec<(String, String)>,
    /// Per feature: its categories, for a categorical one.
    pub(crate) categories: Vec<Option<BTreeSet<String>>>,
    /// Per numeric feature: `(row hash, value)` of the non-missing values of
    /// the rows with the smallest hashes, at most [`BIN_SAMPLE_ROWS`]
    /// (written with the hashes the features share once).
    #[serde(with = "crate::data::sample_encoding")]
    pub(crate) samples: Vec<Vec<(u64, f64)>>,
    /// Classification: each class's total weight, fixed-point.
    pub(crate) class_weights: BTreeMap<String, i128>,
    /// Regression: `Σ w·y` and `Σ w`, fixed-point.
    pub(crate) weighted_sum: i128,
    pub(crate) weight_total: i128,
    /// The largest `|w|` and, for regression, `|w·y|` of any row: what
    /// decides whether exact sums have room ([`exact_sums_fit`]).
    pub(crate) largest: f64,
    pub(crate) rows: u64,
    pub(crate) skipped_null_labels: u64,
}

impl LevelSummary {
    /// The summary of one piece of the rows.
    pub fn of(data: &TrainingData) -> LevelSummary {
        let hashes = row_hashes(data);
        // Only the rows of the BIN_SAMPLE_ROWS smallest hashes can enter a
        // sample, unless a feature's missing values among them leave it
        // short: that feature is gathered over every row.
        let bound = sample_bound(&hashes);
        let mut summary = Self::gather_hashed(data, &hashes, Some(&vec![bound; data.columns.len()]));
        for (f, column) in data.columns.iter().enumerate() {
            let short = summary.samples[f].len() < BIN_SAMPLE_ROWS;
            if bound != u64::MAX && short && matches!(column, FeatureColumn::Numeric(_)) {
                summary.samples[f] = sample_of(column, &hashes, u64::MAX);
            }
        }
        for sample in &mut summary.samples {
            trim(sample);
        }
        summary
    }

    /// [`LevelSummary::of`] with each numeric feature's sample unsorted and
    /// untrimmed, holding only values whose row hash is at most the
    /// feature's bound in `bounds` (none can enter a sample already full
    /// below it).
    fn gather(data: &TrainingData, bounds: Option<&[u64]>) -> LevelSummary {
        Self::gather_hashed(data, &row_hashes(data), bounds)
    }

    /// [`LevelSummary::gather`] with the rows' hashes given.
    fn gather_hashed(data: &TrainingData, hashes: &[u64], bounds: Option<&[u64]>) -> LevelSummary {
        let weight = |r: usize| data.weights.as_ref().map_or(1.0, |w| w[r]);
        let mut summary = LevelSummary {
            task: Some(data.task),
            label: Some(data.label.clone()),
            features: data.features.iter().map(|f| (f.name.clone(), f.data_type.to_string())).collect(),
            rows: data.n_rows() as u64,
            skipped_null_labels: data.skipped_null_labels as u64,
            ..LevelSummary::default()
        };
        for column in &data.columns {
            match column {
                FeatureColumn::Categorical { categories, .. } => {
                    summary.categories.push(Some(categories.iter().cloned().collect()));
                    summary.samples.push(Vec::new());
                }
                FeatureColumn::Numeric(_) => {
                    summary.categories.push(None);
                    let bound = bounds.map_or(u64::MAX, |b| b[summary.samples.len()]);
                    summary.samples.push(sample_of(column, hashes, bound));
                }
            }
        }
        match &data.target {
            Target::Classes(labels) => {
                let names = data.label.classes.as_ref().map(Classes::names).unwrap_or_default();
                let mut totals = vec![0i128; names.len()];
                for (r, &c) in labels.iter().enumerate() {
                    totals[c as usize] = totals[c as usize].saturating_add(fixed(weight(r)));
                    summary.largest = summary.largest.max(weight(r).abs());
                }
                summary.class_weights = names.into_iter().zip(totals).collect();
            }
            Target::Values(y) => {
                // Saturating: sums too large to be exact are refused by `start` anyway.
                for (r, &y) in y.iter().enumerate() {
                    summary.weighted_sum = summary.weighted_sum.saturating_add(fixed(weight(r) * y));
                    summary.weight_total = summary.weight_total.saturating_add(fixed(weight(r)));
                    summary.largest = summary.largest.max(weight(r).abs()).max((weight(r) * y).abs());
                }
            }
        }
        summary
    }

    /// The summary of a piece whose `rows` rows all have a null label: it
    /// only counts them.
    pub fn null_labels(rows: u64) -> LevelSummary {
        LevelSummary { skipped_null_labels: rows, ..LevelSummary::default() }
    }

    /// Adds another piece's summary (of the same columns).
    pub fn merge(&mut self, other: LevelSummary) -> Result<()> {
        self.merge_with(other, true)
    }

    /// [`LevelSummary::merge`] but for the samples, which the caller merges
    /// (a stream trims them less often than every piece).
    fn merge_unsampled(&mut self, other: LevelSummary) -> Result<()> {
        self.merge_with(other, false)
    }

    fn merge_with(&mut self, mut other: LevelSummary, samples: bool) -> Result<()> {
        let skipped = self.skipped_null_labels + other.skipped_null_labels;
        if other.label.is_none() {
            self.skipped_null_labels = skipped;
            return Ok(());
        }
        if self.label.is_none() {
            *self = other;
            self.skipped_null_labels = skipped;
            return Ok(());
        }
        let (Some(mine), Some(label)) = (self.label.as_mut(), other.label.take()) else { return Ok(()) };
        if self.features != other.features || self.task != other.task || mine.name != label.name {
            return Err(ArborError::Data(format!(
                "pieces of the training rows disagree on their columns: {:?} against {:?}",
                self.features, other.features
            )));
        }
        mine.classes = match (mine.classes.take(), label.classes) {
            (Some(a), Some(b)) => Some(class_union(a, b)?),
            (a, b) => a.or(b),
        };
        for (mine, theirs) in self.categories.iter_mut().zip(other.categories) {
            if let (Some(mine), Some(theirs)) = (mine.as_mut(), theirs) {
                mine.extend(theirs);
            }
        }
        if samples {
            for (mine, theirs) in self.samples.iter_mut().zip(other.samples) {
                add_sample(mine, theirs);
            }
        }
        for (class, weight) in other.class_weights {
            let total = self.class_weights.entry(class).or_default();
            *total = total.saturating_add(weight);
        }
        self.weighted_sum = self.weighted_sum.saturating_add(other.weighted_sum);
        self.weight_total = self.weight_total.saturating_add(other.weight_total);
        self.largest = self.largest.max(other.largest);
        self.rows += other.rows;
        self.skipped_null_labels = skipped;
        Ok(())
    }

    /// Bytes the summary holds on the heap, for a memory pool's accounting.
    pub fn heap_size(&self) -> usize {
        let samples: usize = self.samples.iter().map(|s| s.capacity() * std::mem::size_of::<(u64, f64)>()).sum();
        let names = |s: &String| s.capacity() + std::mem::size_of::<String>();
        let categories: usize = self.categories.iter().flatten().flat_map(|c| c.iter().map(names)).sum();
        let classes: usize = self.class_weights.keys().map(|k| names(k) + std::mem::size_of::<i128>()).sum();
        samples + categories + classes
    }

    /// The summary as bytes, for an aggregate's state.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("a summary always serializes")
    }

    /// A summary read back from [`LevelSummary::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<LevelSummary> {
        postcard::from_bytes(bytes).map_err(|e| ArborError::Data(format!("a training summary is corrupt: {e}")))
    }
}

/// The classes of both, sorted as the label's kind sorts.
fn class_union(a: Classes, b: Classes) -> Result<Classes> {
    fn union<T: Ord>(a: Vec<T>, b: Vec<T>) -> Vec<T> {
        a.into_iter().chain(b).collect::<BTreeSet<T>>().into_iter().collect()
    }
    Ok(match (a, b) {
        (Classes::Int(a), Classes::Int(b)) => Classes::Int(union(a, b)),
        (Classes::UInt(a), Classes::UInt(b)) => Classes::UInt(union(a, b)),
        (Classes::Bool(a), Classes::Bool(b)) => Classes::Bool(union(a, b)),
        (Classes::Str(a), Classes::Str(b)) => Classes::Str(union(a, b)),
        (a, b) => {
            return Err(ArborError::Data(format!(
                "pieces of the training rows hold labels of different kinds: {:?} and {:?}",
                a.names(),
                b.names()
            )))
        }
    })
}

/// At most [`BIN_SAMPLE_ROWS`] of `values`, those of the smallest hashes
/// (then values), in that order: the same whatever pieces they were
/// gathered from.
fn smallest(mut values: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    trim(&mut values);
    values.sort_unstable_by(sample_order);
    values
}

/// Keeps the [`BIN_SAMPLE_ROWS`] of `values` that [`smallest`] keeps, in
/// no particular order: pieces and merges trim their samples, and only the
/// bins' fit sorts the final one (a sort of each piece's and each merge's
/// samples took most of a summary's time on a cluster).
fn trim(values: &mut Vec<(u64, f64)>) {
    if values.len() > BIN_SAMPLE_ROWS {
        values.select_nth_unstable_by(BIN_SAMPLE_ROWS, sample_order);
        values.truncate(BIN_SAMPLE_ROWS);
    }
}

/// Adds `theirs` to the sample `mine`, keeping the [`BIN_SAMPLE_ROWS`]
/// that [`trim`] keeps of both. Once `mine` is full, only entries ordered
/// before its largest can enter (an entry equal to it is the same row's
/// value again): one pass picks them, and the selection runs over `mine`
/// and those few, not over both samples (a cluster's final merge of the
/// summaries took a third of a second, on one task).
fn add_sample(mine: &mut Vec<(u64, f64)>, theirs: Vec<(u64, f64)>) {
    let full = mine.len() >= BIN_SAMPLE_ROWS;
    match mine.iter().max_by(|a, b| sample_order(a, b)).copied().filter(|_| full) {
        Some(largest) => mine.extend(theirs.into_iter().filter(|entry| sample_order(entry, &largest).is_lt())),
        None => mine.extend(theirs),
    }
    trim(mine);
}

/// A numeric column's values, with their rows' hashes, of the rows whose
/// hash is at most `bound` (missing values left out), unsorted.
fn sample_of(column: &FeatureColumn, hashes: &[u64], bound: u64) -> Vec<(u64, f64)> {
    (0..column.len())
        .filter(|&r| hashes[r] <= bound)
        .map(|r| (hashes[r], column.raw_value(r)))
        .filter(|(_, x)| !x.is_nan())
        .collect()
}

/// The largest hash among the [`BIN_SAMPLE_ROWS`] smallest of `hashes`
/// (every hash, when there are no more rows than that): no row of a
/// larger hash enters a sample of rows without missing values.
fn sample_bound(hashes: &[u64]) -> u64 {
    if hashes.len() <= BIN_SAMPLE_ROWS {
        return u64::MAX;
    }
    let mut hashes = hashes.to_vec();
    *hashes.select_nth_unstable(BIN_SAMPLE_ROWS - 1).1
}

/// The order of a sample's entries: by row hash, then value.
fn sample_order(a: &(u64, f64), b: &(u64, f64)) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// A hash of each row's content (features and label), which picks the
/// rows the bins are fitted on.
pub(crate) fn row_hashes(data: &TrainingData) -> Vec<u64> {
    let mut hashes = vec![0u64; data.n_rows()];
    for (f, column) in data.columns.iter().enumerate() {
        add_column_hashes(&mut hashes, f, column);
    }
    finish_row_hashes(&mut hashes, &data.label, &data.target);
    hashes
}

/// Adds feature `f`'s values to each row's hash (`sums`, one per row):
/// each feature's share is added, so features can be hashed one at a
/// time, in any order, by a reader that holds one column at a time.
pub(crate) fn add_column_hashes(sums: &mut [u64], f: usize, column: &FeatureColumn) {
    let salt = mix(f as u64 ^ 0x243f_6a88_85a3_08d3);
    match column {
        FeatureColumn::Categorical { bins, categories } => {
            let of_bin: Vec<u64> =
                std::iter::once(1).chain(categories.iter().map(|c| text_hash(c))).map(|h| mix(h ^ salt)).collect();
            sums.iter_mut().zip(bins).for_each(|(h, &b)| *h = h.wrapping_add(of_bin[usize::from(b)]));
        }
        FeatureColumn::Numeric(_) => sums
            .iter_mut()
            .enumerate()
            .for_each(|(r, h)| *h = h.wrapping_add(mix(number_hash(column.raw_value(r)) ^ salt))),
    }
}

/// Each row's hash from its features' sums and its label.
pub(crate) fn finish_row_hashes(sums: &mut [u64], label: &LabelInfo, target: &Target) {
    match target {
        Target::Classes(labels) => {
            let names = label.classes.as_ref().map(Classes::names).unwrap_or_default();
            let of_class: Vec<u64> = names.iter().map(|c| text_hash(c)).collect();
            sums.iter_mut().zip(labels).for_each(|(h, &c)| *h = mix(*h ^ of_class[c as usize]));
        }
        Target::Values(y) => sums.iter_mut().zip(y).for_each(|(h, &y)| *h = mix(*h ^ number_hash(y))),
    }
}

/// FNV-1a of a text's bytes.
fn text_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// A number's bits, with every NaN one value and -0 as 0.
fn number_hash(x: f64) -> u64 {
    match x {
        x if x.is_nan() => 0x7ff8_0000_0000_0000,
        0.0 => 0,
        x => x.to_bits(),
    }
}

/// The content-chosen sample of a numeric column: `(row hash, value)` of
/// its non-missing values with the smallest hashes, at most
/// [`BIN_SAMPLE_ROWS`]. `candidates` are the rows whose hashes are the
/// smallest of all rows (`None`: every row); when too few of them hold a
/// value, every row is looked at.
pub(crate) fn column_sample(column: &FeatureColumn, hashes: &[u64], candidates: Option<&[u32]>) -> Vec<(u64, f64)> {
    let pick = |rows: &mut dyn Iterator<Item = usize>| -> Vec<(u64, f64)> {
        rows.map(|r| (hashes[r], column.raw_value(r))).filter(|(_, x)| !x.is_nan()).collect()
    };
    if let Some(rows) = candidates {
        let sample = pick(&mut rows.iter().map(|&r| r as usize));
        if sample.len() >= BIN_SAMPLE_ROWS {
            return smallest(sample);
        }
    }
    smallest(pick(&mut (0..hashes.len())))
}

/// The bins of each feature: categorical ones from every category seen,
/// numeric ones fitted on the content-chosen sample (its [`BIN_SAMPLE_ROWS`]
/// smallest hashes, however many it was handed).
pub(crate) fn fitted_features(
    names: Vec<(String, String)>,
    categories: Vec<Option<BTreeSet<String>>>,
    samples: Vec<Vec<(u64, f64)>>,
    quantize: &QuantizeParams,
) -> Result<Vec<Feature>> {
    names
        .into_iter()
        .zip(categories)
        .zip(samples)
        .map(|(((name, data_type), categories), sample)| {
            let arrow_type: arrow::datatypes::DataType = data_type
                .parse()
                .map_err(|e| ArborError::Data(format!("feature '{name}': type '{data_type}' cannot be read: {e}")))?;
            let kind = FeatureType::of(&arrow_type)
                .ok_or_else(|| ArborError::Data(format!("feature '{name}': type {data_type} cannot be trained on")))?;
            let mapper = match categories {
                Some(categories) => BinMapper::categorical(categories.into_iter().collect()),
                // The bins count each distinct value, whatever the values' order: the sample is trimmed, not sorted.
                None => {
                    let mut sample = sample;
                    trim(&mut sample);
                    let values: Vec<f64> = sample.into_iter().map(|(_, x)| x).collect();
                    BinMapper::fit(&FeatureColumn::Numeric(values.into()), quantize)
                }
            };
            Ok(Feature { name, data_type, kind, mapper })
        })
        .collect()
}

/// A summary gathered a batch at a time, for one machine's first pass over
/// a stream: samples are trimmed only when they reach twice their size, and
/// rows whose hash is past a full sample's bound are not looked at, so a
/// long stream costs a hash per row and little more.
#[derive(Debug, Default)]
pub(crate) struct SummaryStream {
    summary: Option<LevelSummary>,
    /// Per numeric feature: the largest hash its sample can still take.
    bounds: Vec<u64>,
}

impl SummaryStream {
    /// Adds a batch's rows.
    pub(crate) fn add(&mut self, data: &TrainingData) -> Result<()> {
        let n = data.columns.len();
        let bounds = (self.bounds.len() == n).then_some(self.bounds.as_slice());
        let mut piece = LevelSummary::gather(data, bounds);
        let samples = std::mem::replace(&mut piece.samples, vec![Vec::new(); n]);
        let summary = match self.summary.as_mut() {
            Some(summary) => {
                summary.merge_unsampled(piece)?;
                summary
            }
            None => self.summary.insert(piece),
        };
        if self.bounds.len() != n {
            self.bounds = vec![u64::MAX; n];
        }
        for (mine, theirs) in summary.samples.iter_mut().zip(samples) {
            mine.extend(theirs);
        }
        trim_all(&mut summary.samples, &mut self.bounds);
        Ok(())
    }

    /// Counts rows whose label is null (a batch of nothing else).
    pub(crate) fn add_null_labels(&mut self, rows: u64) -> Result<()> {
        match self.summary.as_mut() {
            Some(summary) => summary.merge_unsampled(LevelSummary::null_labels(rows)),
            None => {
                self.summary = Some(LevelSummary::null_labels(rows));
                Ok(())
            }
        }
    }

    /// The summary of every row added (`None` when none were).
    pub(crate) fn finish(self) -> Option<LevelSummary> {
        self.summary
    }
}

/// Trims each sample that reached twice [`BIN_SAMPLE_ROWS`] to its
/// smallest, tightening its bound.
fn trim_all(samples: &mut [Vec<(u64, f64)>], bounds: &mut [u64]) {
    for (sample, bound) in samples.iter_mut().zip(bounds) {
        if sample.len() >= 2 * BIN_SAMPLE_ROWS {
            sample.select_nth_unstable_by(BIN_SAMPLE_ROWS - 1, sample_order);
            *bound = sample[BIN_SAMPLE_ROWS - 1].0;
            sample.truncate(BIN_SAMPLE_ROWS);
        }
    }
}

/// Classification: each row's class index among the training's classes.
pub(crate) fn global_labels(label: &LabelInfo, data: &TrainingData) -> Result<Option<Vec<u32>>> {
    let (Target::Classes(local), Some(known)) = (&data.target, &label.classes) else { return Ok(None) };
    let known: HashMap<String, u32> = known.names().into_iter().zip(0..).collect();
    let names = data.label.classes.as_ref().map(Classes::names).unwrap_or_default();
    let map = names
        .iter()
        .map(|c| known.get(c).copied().ok_or_else(|| ArborError::Data(format!("class '{c}' was not in the summary"))))
        .collect::<Result<Vec<u32>>>()?;
    Ok(Some(local.iter().map(|&c| map[c as usize]).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::distributed::test_rows::{table, trainer};

    /// Gathering only the rows of the smallest hashes gives the samples
    /// gathering every row gives: for a feature without missing values,
    /// and for one with them (whose sample reaches past the bound).
    #[test]
    fn samples_from_the_smallest_hashes_are_those_of_every_row() {
        let rows = 2 * BIN_SAMPLE_ROWS + 12_345;
        let data = trainer("n_trees=1", "y").training_data(vec![table(0..rows, 5, |_| 0.0)]).unwrap();
        let every = LevelSummary::gather(&data, None);
        let bounded = LevelSummary::of(&data);
        assert_eq!(bounded.samples.len(), 3);
        for (f, sample) in every.samples.into_iter().enumerate() {
            assert_eq!(smallest(sample), smallest(bounded.samples[f].clone()), "feature {f}");
        }
        assert_eq!(bounded.samples[0].len(), BIN_SAMPLE_ROWS);
        assert_eq!(bounded.samples[1].len(), BIN_SAMPLE_ROWS, "missing values are made up from rows past the bound");
        assert!(bounded.samples[2].is_empty(), "a categorical feature has categories, not a sample");
        // As it travels, the sample of a feature with missing values keeps its own rows.
        assert_eq!(LevelSummary::from_bytes(&bounded.to_bytes()).unwrap().samples, bounded.samples);
    }

    /// Samples added piece by piece, in any order, keep the entries the
    /// smallest of all the pieces at once keeps, copies of one row's entry
    /// (equal hashes and values) and equal hashes of other values included.
    #[test]
    fn samples_added_piece_by_piece_keep_the_smallest_of_all() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut piece = |n: usize| -> Vec<(u64, f64)> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Few distinct hashes and values: ties and copies everywhere.
                    ((state >> 40) % 50_000, ((state >> 8) % 3) as f64)
                })
                .collect()
        };
        let pieces = [piece(BIN_SAMPLE_ROWS + 7), piece(BIN_SAMPLE_ROWS / 3), piece(2 * BIN_SAMPLE_ROWS), piece(11)];
        let all = smallest(pieces.concat());
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]] {
            let mut merged = Vec::new();
            order.iter().for_each(|&p| add_sample(&mut merged, pieces[p].clone()));
            assert_eq!(smallest(merged), all, "order {order:?}");
        }
    }
}
