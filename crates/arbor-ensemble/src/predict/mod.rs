//! Prediction: feature columns read through the model's mappers, rows sent
//! down every tree, votes combined (`docs/algorithms.md`, "Prediction").

use std::sync::Arc;

use arbor_quantize::FeatureType;
use arrow::array::{Array, ArrayRef, FixedSizeListArray, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field};
use rayon::prelude::*;

use arbor_kernels::dispatch::prefetch;
use arbor_kernels::{leaves_block, ranked_leaves_block, QuickScorer, TRAVERSAL_BLOCK};

use crate::model::flat_tree::FlatTree;
use crate::model::ranked_forest::RankedForest;
use crate::model::{Boosting, Model};
use crate::{ArborError, Result, Task, Voting};

/// Rows per parallel work unit, at most. A unit sends all its rows through
/// one tree before the next, so the larger it is, the fewer times each tree
/// comes in from memory; the bound keeps prediction's memory flat in the
/// input size.
const MAX_BLOCK_ROWS: usize = 32768;
/// Largest row-major feature copy of one unit.
const BLOCK_BYTES: usize = 4 << 20;
/// Work units hold a multiple of this many rows (the last one excepted).
const UNIT_ALIGN: usize = 64;
/// A tree's leaf values are prefetched before they are read when they take
/// more bytes than this (an L1 data cache holds smaller ones already).
const PREFETCH_VALUES_ABOVE: usize = 16 << 10;

/// The model's raw answer for a set of rows: per row, the class
/// probabilities (classification) or the value (regression).
/// [`Model::prediction_array`] and [`Model::proba_array`] make Arrow arrays of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Predictions {
    /// Outputs per row: class probabilities (classification) or 1 value.
    pub(crate) width: usize,
    /// Row-major outputs, `width` per row.
    pub(crate) values: Vec<f64>,
}

impl Predictions {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.values.len() / self.width.max(1)
    }

    /// Outputs per row: the number of classes, or 1 for regression.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Every output, row-major: `width` per row.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Row `row`'s outputs.
    pub fn row(&self, row: usize) -> &[f64] {
        &self.values[row * self.width..(row + 1) * self.width]
    }

    /// Most probable class per row (the lowest index on ties).
    pub fn class_index(&self) -> Vec<u32> {
        self.values.chunks_exact(self.width).map(|p| arg_max(p) as u32).collect()
    }
}

/// Index of the largest value (the lowest index on ties): the class a
/// distribution or a vote count picks.
#[inline]
pub(crate) fn arg_max(values: &[f64]) -> usize {
    values.iter().enumerate().fold(0, |best, (i, v)| if *v > values[best] { i } else { best })
}

/// Rows per work unit: as few units as [`MAX_BLOCK_ROWS`] and
/// [`BLOCK_BYTES`] allow (to within [`UNIT_ALIGN`] rows), their number a
/// multiple of the thread count, so that every thread gets the same share.
/// (Rounding a thread's share up to whole traversal blocks gave one of two
/// threads 62% of the flights test rows.)
fn block_rows(n_rows: usize, n_features: usize, threads: usize) -> usize {
    let limit = (BLOCK_BYTES / (8 * n_features)).clamp(UNIT_ALIGN, MAX_BLOCK_ROWS);
    let units = n_rows.div_ceil(limit).next_multiple_of(threads.max(1)).max(1);
    n_rows.div_ceil(units).next_multiple_of(UNIT_ALIGN).max(UNIT_ALIGN)
}

/// A block of rows to predict: raw values row-major, or ranks by traversal
/// block, each feature by feature ([`RankedForest::ranks`]).
struct Block<'a> {
    rows: Rows<'a>,
    n_rows: usize,
    n_features: usize,
    /// Some value a split may read is missing.
    missing: bool,
}

/// A block's feature values as the trees read them.
enum Rows<'a> {
    /// Raw values (NaN for missing), for the flat trees.
    Raw(&'a [f64], &'a [FlatTree]),
    /// Ranks, for the trees over ranks.
    Ranked(&'a [u16], &'a RankedForest),
}

impl Block<'_> {
    /// Sends the block's rows through tree `t` in batches of
    /// [`TRAVERSAL_BLOCK`] and calls `visit(first row, leaves, values)` for
    /// each: a leaf per row of the batch, the offset of its outputs in the
    /// tree's `values`. `leaves` is the batches' buffer (kept from tree to
    /// tree: clearing 32 KiB per tree took 3% of a boosted model's scoring).
    fn for_each_batch(&self, t: usize, leaves: &mut [u32], mut visit: impl FnMut(usize, &[u32], &[f64])) {
        let values = match self.rows {
            Rows::Raw(_, flat) => &flat[t].values,
            Rows::Ranked(_, forest) => forest.values(t),
        };
        let n_features = self.n_features;
        for start in (0..self.n_rows).step_by(TRAVERSAL_BLOCK) {
            let end = (start + TRAVERSAL_BLOCK).min(self.n_rows);
            let leaves = &mut leaves[..end - start];
            let span = start * n_features..end * n_features;
            match self.rows {
                Rows::Raw(rows, flat) => {
                    let tree = &flat[t];
                    let special = |test: u32, x: f64| tree.special(test, x);
                    let special = (!tree.tests.is_empty()).then_some(&special);
                    leaves_block(tree.view(), &rows[span], n_features, self.missing, special, leaves);
                    for leaf in leaves.iter_mut() {
                        *leaf = tree.nodes[*leaf as usize].value();
                    }
                }
                Rows::Ranked(ranks, forest) => {
                    ranked_leaves_block(forest.tree(t), &ranks[span], n_features, self.missing, leaves);
                }
            }
            // The leaves' values are scattered over the tree's: all their
            // misses are started before the first value is read, unless they
            // fit the L1 cache (a boosted tree's 64 leaves).
            if std::mem::size_of_val(values) > PREFETCH_VALUES_ABOVE {
                for &leaf in leaves.iter() {
                    prefetch(values, leaf as usize);
                }
            }
            visit(start, leaves, values);
        }
    }
}

impl Model {
    /// Reads the model's features from `batch` by name, checking their types.
    pub fn feature_arrays(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        let schema = batch.schema();
        self.features
            .iter()
            .map(|f| {
                let i = schema.index_of(&f.name).map_err(|_| ArborError::MissingColumn {
                    column: f.name.clone(),
                    available: schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", "),
                })?;
                Ok(batch.column(i).clone())
            })
            .collect()
    }

    /// Checks that a column of `data_type` can feed feature `index`.
    pub fn check_feature_type(&self, index: usize, data_type: &DataType) -> Result<()> {
        let Some(f) = self.features.get(index) else {
            return Err(ArborError::Data(format!(
                "the model has {} features; there is no feature {index}",
                self.features.len()
            )));
        };
        let given = FeatureType::of(data_type);
        let fits = match f.kind {
            // An untyped NULL (a SQL `NULL` literal) is missing for any feature.
            _ if *data_type == DataType::Null => true,
            FeatureType::Categorical => given == Some(FeatureType::Categorical),
            FeatureType::Numeric | FeatureType::Boolean => {
                matches!(given, Some(FeatureType::Numeric | FeatureType::Boolean))
            }
        };
        if fits {
            Ok(())
        } else {
            Err(ArborError::Data(format!(
                "feature '{}' was {} ({}) in training, but the input column has type {data_type}",
                f.name,
                f.kind.name(),
                f.data_type
            )))
        }
    }

    /// Scores rows given one array per model feature, in model order, all of one length.
    pub fn score_arrays(&self, arrays: &[ArrayRef]) -> Result<Predictions> {
        let (columns, n_rows) = self.raw_columns(arrays)?;
        Ok(self.predict_with(&columns, n_rows, self.trees.ranked(self.features.len())))
    }

    /// The values trees compare (NaN for missing, categories as their
    /// 1-based bin) of one array per model feature, in model order, all of
    /// one length, checked against the features' types; and the row count.
    pub(crate) fn raw_columns(&self, arrays: &[ArrayRef]) -> Result<(Vec<Vec<f64>>, usize)> {
        if arrays.len() != self.features.len() {
            return Err(ArborError::Data(format!(
                "the model has {} features ({}), but {} columns were given",
                self.features.len(),
                self.features.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", "),
                arrays.len()
            )));
        }
        let n_rows = arrays.first().map_or(0, |a| a.len());
        for (i, (f, a)) in self.features.iter().zip(arrays).enumerate() {
            if a.len() != n_rows {
                return Err(ArborError::Data(format!(
                    "feature '{}' has {} rows, but feature '{}' has {n_rows}; every feature needs one value per row",
                    f.name,
                    a.len(),
                    self.features[0].name
                )));
            }
            self.check_feature_type(i, a.data_type())?;
        }
        // Converted side by side: a serial pass here bounded two threads'
        // scoring of wide data. The first failing feature's error, in order.
        let columns: Vec<Result<Vec<f64>>> = self
            .features
            .par_iter()
            .zip(arrays)
            .map(|(f, a)| match a.data_type() {
                DataType::Null => Ok(vec![f64::NAN; a.len()]),
                _ => f.mapper.raw_values(&f.name, a).map_err(ArborError::from),
            })
            .collect();
        Ok((columns.into_iter().collect::<Result<_>>()?, n_rows))
    }

    /// Scores every row of `batch` (features found by name): the raw outputs
    /// that [`Model::predict`] and [`Model::predict_proba`] are made of, for a
    /// caller that wants both from one pass.
    pub fn score(&self, batch: &RecordBatch) -> Result<Predictions> {
        self.score_arrays(&self.feature_arrays(batch)?)
    }

    /// Predicts every row of `batch` (features found by name): the class,
    /// typed like the label it was trained on, or the value as Float64.
    pub fn predict(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        self.prediction_array(&self.score(batch)?)
    }

    /// Class probabilities of every row of `batch` (features found by name),
    /// one list of values per row in the order of [`Model::class_names`];
    /// an error for a regression model.
    pub fn predict_proba(&self, batch: &RecordBatch) -> Result<FixedSizeListArray> {
        self.proba_array(self.score(batch)?)
    }

    /// Scores raw feature values (column-major, NaN for missing; categories
    /// as their 1-based bin): one column per model feature, in model order,
    /// each of `n_rows` values.
    pub fn score_columns(&self, columns: &[Vec<f64>], n_rows: usize) -> Result<Predictions> {
        if columns.len() != self.features.len() {
            return Err(ArborError::Data(format!(
                "the model has {} features, but {} columns were given",
                self.features.len(),
                columns.len()
            )));
        }
        if let Some((f, c)) = self.features.iter().zip(columns).find(|(_, c)| c.len() != n_rows) {
            return Err(ArborError::Data(format!("feature '{}' has {} values, not {n_rows}", f.name, c.len())));
        }
        Ok(self.predict_with(columns, n_rows, self.trees.ranked(self.features.len())))
    }

    /// Predicts over ranks with `ranked`, or over raw values with the flat
    /// trees when it is `None`: the two give the same predictions.
    pub(crate) fn predict_with(
        &self,
        columns: &[Vec<f64>],
        n_rows: usize,
        ranked: Option<&RankedForest>,
    ) -> Predictions {
        let width = self.value_len();
        let n_features = columns.len().max(1);
        let block = block_rows(n_rows, n_features, rayon::current_num_threads());
        // The flat trees only when they are walked: a model loaded over ranks never decodes them.
        let flat = if ranked.is_some() { &[] } else { self.trees.flat() };
        let mut values = vec![0.0; n_rows * width];
        values.par_chunks_mut(block * width).enumerate().for_each(|(b, out)| {
            let start = b * block;
            let n = out.len() / width;
            let (mut raw, mut ranks) = (Vec::new(), Vec::new());
            let block = match ranked {
                Some(forest) => {
                    ranks.resize(n * n_features, 0);
                    let missing = forest.ranks(columns, start, &mut ranks);
                    Block { rows: Rows::Ranked(&ranks, forest), n_rows: n, n_features, missing }
                }
                None => {
                    // Each row's features sit together.
                    raw.resize(n * n_features, 0.0);
                    for (f, column) in columns.iter().enumerate() {
                        for (i, &x) in column[start..start + n].iter().enumerate() {
                            raw[i * n_features + f] = x;
                        }
                    }
                    let missing = raw.iter().any(|x| x.is_nan());
                    Block { rows: Rows::Raw(&raw, flat), n_rows: n, n_features, missing }
                }
            };
            match &self.boosting {
                Some(boosting) => self.boosted_block(boosting, &block, out),
                None => self.forest_block(&block, out),
            }
        });
        Predictions { width, values }
    }

    /// A forest's votes for a block of rows (`docs/algorithms.md`, "Prediction").
    fn forest_block(&self, block: &Block<'_>, out: &mut [f64]) {
        let width = self.value_len();
        let unweighted = self.task == Task::Classification && self.voting == Voting::Unweighted;
        let n_trees = self.trees.len();
        let mut leaves = vec![0u32; TRAVERSAL_BLOCK.min(block.n_rows)];
        for t in 0..n_trees {
            block.for_each_batch(t, &mut leaves, |start, leaves, values| {
                for (row_out, &leaf) in out[start * width..].chunks_exact_mut(width).zip(leaves) {
                    let leaf_values = &values[leaf as usize..leaf as usize + width];
                    if unweighted {
                        row_out[arg_max(leaf_values)] += 1.0;
                    } else {
                        for (o, v) in row_out.iter_mut().zip(leaf_values) {
                            *o += v;
                        }
                    }
                }
            });
        }
        out.iter_mut().for_each(|v| *v /= n_trees as f64);
    }

    /// A boosted model's outputs for a block of rows: raw scores summed over
    /// the trees, then the loss's link (identity, sigmoid or softmax). Trees
    /// over ranks that QuickScorer takes are scored by it where it runs
    /// (`avx512`), the others walked; both add the trees' values in order.
    fn boosted_block(&self, boosting: &Boosting, block: &Block<'_>, out: &mut [f64]) {
        let width = self.value_len();
        let k = boosting.outputs;
        let n = out.len() / width;
        // Raw scores output by output (output `o`'s from `o * n`), so that
        // a tree's leaves add to consecutive rows.
        let mut raw: Vec<f64> = boosting.base_score.iter().flat_map(|&base| std::iter::repeat_n(base, n)).collect();
        let quick = match block.rows {
            Rows::Ranked(ranks, forest) if QuickScorer::runs_here() => forest.quick_scorer(k).map(|q| (q, ranks)),
            _ => None,
        };
        if let Some((scorer, ranks)) = quick {
            let n_features = block.n_features;
            for start in (0..n).step_by(TRAVERSAL_BLOCK) {
                let end = (start + TRAVERSAL_BLOCK).min(n);
                let ranks = &ranks[start * n_features..end * n_features];
                let scored = scorer.add_scores(ranks, end - start, block.missing, &mut raw[start..], n);
                debug_assert!(scored, "QuickScorer runs on this thread");
            }
        } else {
            let mut leaves = vec![0u32; TRAVERSAL_BLOCK.min(n)];
            for t in 0..self.trees.len() {
                let raw = &mut raw[(t % k) * n..(t % k + 1) * n];
                block.for_each_batch(t, &mut leaves, |start, leaves, values| {
                    for (r, &leaf) in raw[start..].iter_mut().zip(leaves) {
                        *r += values[leaf as usize];
                    }
                });
            }
        }
        let mut row_raw = vec![0.0; k];
        for (i, row_out) in out.chunks_exact_mut(width).enumerate() {
            row_raw.iter_mut().enumerate().for_each(|(o, r)| *r = raw[o * n + i]);
            boosting.loss.link(&row_raw, row_out);
        }
    }

    /// The prediction column: the label's type for classification, Float64 for regression.
    pub fn prediction_array(&self, predictions: &Predictions) -> Result<ArrayRef> {
        match (&self.task, &self.label.classes) {
            (Task::Classification, Some(classes)) => {
                classes.take(&predictions.class_index(), &self.label.arrow_type()?)
            }
            _ => Ok(Arc::new(Float64Array::from(predictions.values.clone()))),
        }
    }

    /// The Arrow type of the prediction column.
    pub fn prediction_type(&self) -> Result<DataType> {
        match self.task {
            Task::Classification => self.label.arrow_type(),
            Task::Regression => Ok(DataType::Float64),
        }
    }

    /// The probabilities as one fixed-size list per row, in class order (the
    /// outputs move into the array, uncopied); an error for a regression model.
    pub fn proba_array(&self, predictions: Predictions) -> Result<FixedSizeListArray> {
        if self.task != Task::Classification {
            return Err(ArborError::Data("the model is a regression model; it has no class probabilities".into()));
        }
        let width = i32::try_from(predictions.width)
            .map_err(|_| ArborError::Data(format!("{} classes are too many for a list", predictions.width)))?;
        let values = Arc::new(Float64Array::from(predictions.values));
        Ok(FixedSizeListArray::try_new(Arc::new(Field::new_list_field(DataType::Float64, false)), width, values, None)?)
    }

    /// One probability column per class, in class order (classification only).
    pub fn proba_arrays(&self, predictions: &Predictions) -> Vec<ArrayRef> {
        if self.task != Task::Classification {
            return Vec::new();
        }
        let w = predictions.width;
        (0..w)
            .map(|c| {
                Arc::new(Float64Array::from_iter_values(predictions.values.chunks_exact(w).map(|p| p[c]))) as ArrayRef
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units come in a whole number per thread, of about equal size and
    /// within the bounds: no thread gets much more than an even share.
    #[test]
    fn work_units_share_rows_evenly() {
        for threads in [1, 2, 3, 8] {
            for n_rows in [1, 63, 1_000, 65_470, 65_536, 100_000, 1_000_003] {
                for n_features in [1, 12, 64, 1_000] {
                    let block = block_rows(n_rows, n_features, threads);
                    let limit = (BLOCK_BYTES / (8 * n_features)).clamp(UNIT_ALIGN, MAX_BLOCK_ROWS);
                    let case = format!("{n_rows} rows, {n_features} features, {threads} threads: units of {block}");
                    assert!(block % UNIT_ALIGN == 0 && block < limit + UNIT_ALIGN, "{case}");
                    let units = n_rows.div_ceil(block);
                    let per_thread = units.div_ceil(threads);
                    let busiest = (per_thread * block).min(n_rows);
                    assert!(busiest <= n_rows.div_ceil(threads) + per_thread * UNIT_ALIGN, "{case}");
                }
            }
        }
    }
}
