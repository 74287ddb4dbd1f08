//! Per-feature bin edges (numeric) or category lists (categorical).

use std::collections::HashMap;
use std::sync::OnceLock;

use arrow::array::{Array, ArrayRef, AsArray};
use foldhash::fast::FixedState;
use serde::{Deserialize, Serialize};

use crate::feature_column::{append_f64, to_utf8};
use crate::greedy_edges::greedy_edges;
use crate::{integer_span, offset, with_numbers, FeatureColumn, Number, QuantizeError};

/// Integer columns spanning at most this many values (or one per row, if
/// more) are counted in a table when fitting edges, instead of sorted.
const TABLE_SPAN: usize = 1 << 16;

/// The bin that holds missing values (null, NaN, unseen categories) in every feature.
pub const MISSING_BIN: u16 = 0;

/// How finely features are binned (`docs/algorithms.md`, "Histogram binning":
/// `max_bins`, `min_bin_size`, `bin_boundaries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantizeParams {
    /// Most bins per numeric feature, the missing-value bin included.
    pub max_bins: usize,
    /// Fewest observations a value bin may hold (a value seen more often gets its own bin).
    pub min_bin_size: usize,
    /// Where a numeric feature's bin edges fall.
    pub boundaries: BinBoundaries,
}

impl Default for QuantizeParams {
    fn default() -> Self {
        QuantizeParams { max_bins: 256, min_bin_size: 5, boundaries: BinBoundaries::Quantile }
    }
}

/// Where a numeric feature's bin edges fall (`bin_boundaries`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinBoundaries {
    /// Bins of about equal rows, filled in ascending order (arbor's own).
    #[default]
    Quantile,
    /// LightGBM's: frequent values in bins of their own, zero a bin of its
    /// own, negative and positive values sharing the rest by their rows.
    Greedy,
}

impl BinBoundaries {
    /// The option value that names it (`bin_boundaries=...`).
    pub const fn name(self) -> &'static str {
        match self {
            BinBoundaries::Quantile => "quantile",
            BinBoundaries::Greedy => "greedy",
        }
    }
}

impl QuantizeParams {
    /// Seed "dense" / `split_method=exact`: every distinct value gets a bin of
    /// its own, so every midpoint between consecutive values is a candidate
    /// threshold (up to 65,535 distinct values per feature; a feature with
    /// more is binned by quantiles into that many).
    pub fn exact() -> QuantizeParams {
        QuantizeParams { max_bins: 65_536, min_bin_size: 1, boundaries: BinBoundaries::Quantile }
    }

    /// Bins for values, the missing-value bin aside (at least one).
    fn value_bins(&self) -> usize {
        self.max_bins.saturating_sub(1).max(1)
    }
}

/// Maps a feature's raw values to bins; stored in the model so prediction
/// sees values exactly as training did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum BinMapper {
    /// Value bins `1..=edges.len() + 1`: bin `b` holds `edges[b-2] < x <= edges[b-1]`.
    Numeric {
        /// Ascending upper edges of all value bins but the last.
        edges: Vec<f64>,
    },
    /// Bin `1 + i` holds `categories[i]`.
    Categorical {
        /// The categories seen in training, sorted.
        categories: Vec<String>,
        /// Lookup from category to bin, built on first use (a fast hash:
        /// SipHash took 5% of scoring flights' boosted model).
        #[serde(skip)]
        index: OnceLock<HashMap<String, u16, FixedState>>,
    },
}

impl PartialEq for BinMapper {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (BinMapper::Numeric { edges: a }, BinMapper::Numeric { edges: b }) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (BinMapper::Categorical { categories: a, .. }, BinMapper::Categorical { categories: b, .. }) => a == b,
            _ => false,
        }
    }
}

impl BinMapper {
    /// Learns the bins of a feature from its training values.
    pub fn fit(column: &FeatureColumn, params: &QuantizeParams) -> BinMapper {
        match column {
            FeatureColumn::Numeric(values) => {
                let distinct = with_numbers!(values, |values| distinct_counts(values));
                let edges = match params.boundaries {
                    BinBoundaries::Quantile => quantile_edges(&distinct, params),
                    BinBoundaries::Greedy => greedy_edges(&distinct, params.value_bins(), params.min_bin_size),
                };
                BinMapper::Numeric { edges }
            }
            FeatureColumn::Categorical { categories, .. } => BinMapper::categorical(categories.clone()),
        }
    }

    /// A categorical mapper over the given (sorted, distinct) categories.
    pub fn categorical(categories: Vec<String>) -> BinMapper {
        BinMapper::Categorical { categories, index: OnceLock::new() }
    }

    /// Number of bins, the missing bin included.
    pub fn n_bins(&self) -> usize {
        match self {
            BinMapper::Numeric { edges } => edges.len() + 2,
            BinMapper::Categorical { categories, .. } => categories.len() + 1,
        }
    }

    /// True for a categorical feature.
    pub fn is_categorical(&self) -> bool {
        matches!(self, BinMapper::Categorical { .. })
    }

    /// The bin of a numeric value (NaN is missing).
    #[inline]
    pub fn bin_value(&self, value: f64) -> u16 {
        match self {
            BinMapper::Numeric { edges } => {
                if value.is_nan() {
                    MISSING_BIN
                } else {
                    1 + edges.partition_point(|&e| e < value) as u16
                }
            }
            BinMapper::Categorical { .. } => {
                if value.is_nan() {
                    MISSING_BIN
                } else {
                    value as u16
                }
            }
        }
    }

    /// The raw threshold of a split that sends value bins `1..=bin` left: `x <= threshold`
    /// (infinite for the last bin: every value left, only missing values right).
    pub fn threshold(&self, bin: u16) -> f64 {
        match self {
            BinMapper::Numeric { edges } => edges.get(bin as usize - 1).copied().unwrap_or(f64::INFINITY),
            BinMapper::Categorical { .. } => f64::from(bin),
        }
    }

    /// The category names, for a categorical feature.
    pub fn categories(&self) -> Option<&[String]> {
        match self {
            BinMapper::Categorical { categories, .. } => Some(categories),
            BinMapper::Numeric { .. } => None,
        }
    }

    /// Bins of a training column.
    pub fn bin_column(&self, column: &FeatureColumn) -> Vec<u16> {
        match column {
            FeatureColumn::Numeric(values) => with_numbers!(values, |values| self.bin_numbers(values)),
            FeatureColumn::Categorical { bins, .. } => bins.clone(),
        }
    }

    /// [`BinMapper::bin_column`] for numbers held at either width.
    fn bin_numbers<T: Number>(&self, values: &[T]) -> Vec<u16> {
        let wide = values.iter().map(|&v| -> f64 { v.into() });
        match integer_span(values, values.len() / 4) {
            // Few possible values: each one's bin found once, then looked up.
            Some((min, span)) => {
                let bins: Vec<u16> = (0..=span).map(|i| self.bin_value(min + i as f64)).collect();
                wide.map(|v| if v.is_nan() { MISSING_BIN } else { bins[offset(v, min)] }).collect()
            }
            None => wide.map(|v| self.bin_value(v)).collect(),
        }
    }

    /// Reads one batch's column into the values trees compare at prediction:
    /// the number itself for numeric features, the category's bin for
    /// categorical ones; NaN for missing values and unseen categories.
    pub fn raw_values(&self, name: &str, array: &ArrayRef) -> Result<Vec<f64>, QuantizeError> {
        let mut out = Vec::with_capacity(array.len());
        match self {
            BinMapper::Numeric { .. } => append_f64(name, array, &mut out)?,
            BinMapper::Categorical { categories, index } => {
                let index = index
                    .get_or_init(|| categories.iter().enumerate().map(|(i, c)| (c.clone(), i as u16 + 1)).collect());
                let strings = to_utf8(name, array)?;
                out.extend(
                    strings
                        .as_string::<i32>()
                        .iter()
                        .map(|v| v.and_then(|v| index.get(v)).map_or(f64::NAN, |&b| f64::from(b))),
                );
            }
        }
        Ok(out)
    }
}

/// Quantile bin edges: distinct values are grouped greedily into bins of
/// about `n / (max_bins - 1)` observations, never fewer than `min_bin_size`,
/// and an edge lies midway between the last value of a bin and the first of the next.
fn quantile_edges(distinct: &[(f64, usize)], params: &QuantizeParams) -> Vec<f64> {
    let value_bins = params.value_bins();
    let min_bin_size = params.min_bin_size.max(1);
    let mut remaining: usize = distinct.iter().map(|d| d.1).sum();
    let mut bins_left = value_bins;
    let mut edges = Vec::new();
    let mut in_bin = 0usize;
    for (i, &(value, count)) in distinct.iter().enumerate() {
        if bins_left <= 1 || i + 1 == distinct.len() {
            break;
        }
        in_bin += count;
        let target = remaining.div_ceil(bins_left).max(min_bin_size);
        let next = distinct[i + 1].0;
        if in_bin >= target || distinct.len() - i - 1 < bins_left && in_bin >= min_bin_size {
            edges.push(midpoint(value, next));
            remaining -= in_bin;
            bins_left -= 1;
            in_bin = 0;
        }
    }
    edges
}

/// The distinct values that are not NaN, ascending, each with how many
/// times it occurs: counted in a table for integers of a narrow span, else sorted.
pub(crate) fn distinct_counts<T: Number>(values: &[T]) -> Vec<(f64, usize)> {
    if let Some((min, span)) = integer_span(values, TABLE_SPAN.max(values.len())) {
        let mut counts = vec![0usize; span + 1];
        for v in values.iter().map(|&v| -> f64 { v.into() }).filter(|v| !v.is_nan()) {
            counts[offset(v, min)] += 1;
        }
        return counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (min + i as f64, c)).collect();
    }
    sorted_distinct_counts(values)
}

/// [`distinct_counts`] by sorting: for any values.
fn sorted_distinct_counts<T: Number>(values: &[T]) -> Vec<(f64, usize)> {
    let mut sorted: Vec<f64> = values.iter().map(|&v| -> f64 { v.into() }).filter(|v| !v.is_nan()).collect();
    sorted.sort_unstable_by(f64::total_cmp);
    let mut distinct: Vec<(f64, usize)> = Vec::new();
    for v in sorted {
        match distinct.last_mut() {
            Some((last, count)) if *last == v => *count += 1,
            _ => distinct.push((v, 1)),
        }
    }
    distinct
}

/// A value `m` with `a <= m < b`, as close to halfway as floating point allows.
pub(crate) fn midpoint(a: f64, b: f64) -> f64 {
    let m = a + (b - a) / 2.0;
    if m >= b || !m.is_finite() {
        a
    } else {
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(max_bins: usize, min_bin_size: usize) -> QuantizeParams {
        QuantizeParams { max_bins, min_bin_size, boundaries: BinBoundaries::Quantile }
    }

    /// [`quantile_edges`] of raw values.
    fn quantile_edges(values: &[f64], params: &QuantizeParams) -> Vec<f64> {
        super::quantile_edges(&distinct_counts(values), params)
    }

    /// Integer columns take the table paths; they agree with sorting and searching.
    #[test]
    fn integer_tables_agree_with_sorting_and_searching() {
        let values: Vec<f64> =
            (0..5_000).map(|i| if i % 97 == 0 { f64::NAN } else { f64::from((i * 37) % 1_201) - 600.0 }).collect();
        assert!(integer_span(&values, values.len() / 4).is_some(), "the table paths are taken");
        assert_eq!(distinct_counts(&values), sorted_distinct_counts(&values));
        let column = FeatureColumn::Numeric(values.clone().into());
        for max_bins in [4, 64, 256] {
            let mapper = BinMapper::fit(&column, &params(max_bins, 1));
            let searched: Vec<u16> = values.iter().map(|&v| mapper.bin_value(v)).collect();
            assert_eq!(mapper.bin_column(&column), searched, "max_bins {max_bins}");
        }
    }

    /// A column held at `f32` gets the mapper and bins of the same values held at `f64`.
    #[test]
    fn narrow_and_wide_columns_bin_alike() {
        let fractions: Vec<f32> =
            (0..4000).map(|i| if i % 53 == 0 { f32::NAN } else { ((i * 7919) % 3001) as f32 / 7.0 }).collect();
        let integers: Vec<f32> = (0..4000).map(|i| ((i * 31) % 500) as f32 - 250.0).collect();
        for values in [fractions, integers] {
            let narrow = FeatureColumn::Numeric(values.clone().into());
            let wide = FeatureColumn::Numeric(values.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>().into());
            for p in [params(256, 5), params(16, 1), QuantizeParams::exact()] {
                let (a, b) = (BinMapper::fit(&narrow, &p), BinMapper::fit(&wide, &p));
                assert_eq!(a, b, "{p:?}");
                assert_eq!(a.bin_column(&narrow), b.bin_column(&wide), "{p:?}");
            }
        }
    }

    #[test]
    fn few_distinct_values_get_a_bin_each() {
        let edges = quantile_edges(&[3.0, 1.0, 2.0, 2.0, 1.0, 3.0], &params(256, 1));
        assert_eq!(edges, vec![1.5, 2.5]);
    }

    #[test]
    fn bins_respect_max_bins_and_min_bin_size() {
        let values: Vec<f64> = (0..10_000).map(|i| (i % 1000) as f64).collect();
        let edges = quantile_edges(&values, &params(16, 5));
        assert_eq!(edges.len(), 14, "15 value bins + missing = 16");
        let mapper = BinMapper::Numeric { edges };
        let mut counts = vec![0usize; mapper.n_bins()];
        for &v in &values {
            counts[mapper.bin_value(v) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        for &c in &counts[1..] {
            assert!((500..=800).contains(&c), "unbalanced bins: {counts:?}");
        }
    }

    #[test]
    fn min_bin_size_merges_rare_values() {
        let mut values = vec![0.0; 100];
        values.extend([1.0, 2.0]);
        values.extend(vec![3.0; 100]);
        let edges = quantile_edges(&values, &params(256, 5));
        assert_eq!(edges, vec![0.5], "1.0 and 2.0 are too rare for bins of their own");
    }

    #[test]
    fn exact_gives_every_distinct_value_a_bin() {
        let values: Vec<f64> = (0..3000).map(|i| ((i * 7919) % 1000) as f64 / 8.0).collect();
        let edges = quantile_edges(&values, &QuantizeParams::exact());
        assert_eq!(edges.len(), 999, "1000 distinct values, an edge between each pair");
        assert_eq!(edges[0], 0.0625, "midway between 0 and 0.125");
    }

    #[test]
    fn midpoint_of_adjacent_floats_stays_below_upper() {
        let a = 1.0f64;
        let b = f64::from_bits(a.to_bits() + 1);
        let m = midpoint(a, b);
        assert!(a <= m && m < b);
    }

    #[test]
    fn values_and_thresholds_agree() {
        let values: Vec<f64> = (0..500).map(|i| ((i * 37) % 101) as f64 * 0.1).collect();
        let mapper = BinMapper::fit(&FeatureColumn::Numeric(values.clone().into()), &params(32, 5));
        for b in 1..mapper.n_bins() as u16 - 1 {
            let t = mapper.threshold(b);
            for &v in &values {
                assert_eq!(mapper.bin_value(v) <= b, v <= t, "value {v} bin {b} threshold {t}");
            }
        }
    }
}
