//! One piece of level-wise training's rows, prepared once for every level
//! job that reads it: binned with the training's bins, the labels as the
//! training's class indices or responses, the weights, each row's content
//! hash (a forest's bootstrap draws from it) and the per-row state carried
//! from one level to the next (boosting's scores).
//!
//! Every level reads its rows through a shard, whether the shard was kept
//! between jobs (on a cluster's executor, see arbor-datafusion's shard
//! store) or built from the piece's rows for this job alone. There is one
//! path, so a kept shard and a rebuilt one sum to the same bytes.
//!
//! Rows walk the trees on each bin's stand-in value ([`super::walk_values`]):
//! every histogram split sends a bin's stand-in the way it sends the bin's
//! raw values, so no raw value is kept.

use std::sync::{Arc, Mutex};

use arbor_kernels::dispatch::prefetch;
use arbor_quantize::FeatureColumn;
use rayon::prelude::*;

use crate::data::dataset::TrainingData;
use crate::data::label::{LabelInfo, Target};
use crate::data::summary::{global_labels, row_hashes};
use crate::model::feature::Feature;
use crate::model::tree::{Node, Tree};
use crate::train::exact_histograms::GRADIENT_LANES;
use crate::train::node_rows::NodeRows;
use crate::train::walk_values::{add_tree_scores, stand_ins};
use crate::{ArborError, Result};

/// Rows per parallel work unit when a shard is built or scored.
const CHUNK_ROWS: usize = 16_384;

/// Each row's bins, row after row: one byte per feature when every
/// feature has at most 256 bins, two otherwise.
#[derive(Debug)]
enum RowBins {
    Narrow(Vec<u8>),
    Wide(Vec<u16>),
}

/// Each row's label as the training reads it.
#[derive(Debug)]
pub(crate) enum ShardLabels {
    /// Classification: the class index among the training's classes.
    Classes(Vec<u32>),
    /// Regression: the response.
    Values(Vec<f64>),
}

/// Boosting's scores of every row by the first `trees` finished trees,
/// and a fingerprint of those trees: the scores a later level extends
/// when its trees begin with the same ones.
#[derive(Debug)]
struct Scores {
    trees: usize,
    fingerprint: u64,
    raw: Vec<f64>,
}

/// Boosting's derivatives of every row for each tree of a round (they
/// change only when a round's trees are finished), as a level sums them.
#[derive(Debug)]
pub(crate) enum Derivatives {
    /// Where 64-bit sums hold them exactly ([`crate::train::exact_histograms::fits_in_64_bits`]):
    /// per growing tree, each row's lanes ([`crate::train::exact_histograms::gradient_lanes`]) in 64-bit
    /// fixed point, converted once for every level of the round.
    Narrow(Vec<Vec<[i64; GRADIENT_LANES]>>),
    /// Per growing tree: each row's gradient and hessian, summed in 128-bit lanes.
    Wide(Vec<(Vec<f64>, Vec<f64>)>),
}

impl Derivatives {
    /// Bytes held on the heap.
    fn heap_size(&self) -> usize {
        match self {
            Derivatives::Narrow(lanes) => lanes.iter().map(|l| l.capacity() * 8 * GRADIENT_LANES).sum(),
            Derivatives::Wide(outputs) => outputs.iter().map(|(g, h)| (g.capacity() + h.capacity()) * 8).sum(),
        }
    }
}

/// Each growing tree's rows grouped by the node they wait in, for the
/// round whose base score and finished trees `round` fingerprints, and the
/// growing trees they were grouped for.
#[derive(Debug)]
struct Grouped {
    round: u64,
    trees: Vec<NodeRows>,
    grown: Vec<Tree>,
}

/// Whether `now` grew from `then`: every split of `then` is in `now`, the
/// same node at the same place (the rows grouped for `then` then advance
/// in `now`).
fn grew_from(now: &Tree, then: &Tree) -> bool {
    then.nodes.len() <= now.nodes.len()
        && then.nodes.iter().zip(&now.nodes).all(|(a, b)| !matches!(a, Node::Split { .. }) || a == b)
}

/// One piece's rows, prepared for level jobs (see the module's documentation).
#[derive(Debug)]
pub struct LevelShard {
    n_rows: usize,
    n_features: usize,
    bins: RowBins,
    /// Per feature, the value each bin walks the trees as.
    stand_ins: Vec<Vec<f64>>,
    /// Each row's content hash (forests; empty for boosting).
    pub(crate) hashes: Vec<u64>,
    pub(crate) labels: ShardLabels,
    pub(crate) weights: Option<Vec<f64>>,
    scores: Mutex<Option<Scores>>,
    grouped: Mutex<Option<Grouped>>,
    /// The current round's derivatives, with the fingerprint of its finished trees.
    derivatives: Mutex<Option<(u64, Arc<Derivatives>)>>,
}

impl LevelShard {
    /// `data`'s rows binned with the training's `features` (which `data`
    /// must have, in order), labels in `label`'s terms, and content
    /// hashes when `hashed`.
    pub(crate) fn new(
        features: &[Feature],
        label: &LabelInfo,
        data: &TrainingData,
        hashed: bool,
    ) -> Result<LevelShard> {
        check_features(features, data)?;
        let n_rows = data.n_rows();
        let n_features = features.len();
        let columns: Vec<Vec<u16>> =
            data.columns.par_iter().zip(features).map(|(column, feature)| global_bins(column, feature)).collect();
        let narrow = features.iter().all(|f| f.mapper.n_bins() <= 256);
        let bins = match narrow {
            true => RowBins::Narrow(row_major(&columns, n_rows, |b| b as u8)),
            false => RowBins::Wide(row_major(&columns, n_rows, |b| b)),
        };
        drop(columns);
        let labels = match (global_labels(label, data)?, &data.target) {
            (Some(classes), _) => ShardLabels::Classes(classes),
            (None, Target::Values(y)) => ShardLabels::Values(y.clone()),
            (None, Target::Classes(_)) => unreachable!("class labels are mapped"),
        };
        Ok(LevelShard {
            n_rows,
            n_features,
            bins,
            stand_ins: features.iter().map(|f| stand_ins(&f.mapper)).collect(),
            hashes: if hashed { row_hashes(data) } else { Vec::new() },
            labels,
            weights: data.weights.clone(),
            scores: Mutex::new(None),
            grouped: Mutex::new(None),
            derivatives: Mutex::new(None),
        })
    }

    /// Rows held.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Bytes the shard holds, with the per-row state it carries now.
    pub fn heap_size(&self) -> usize {
        let bins = match &self.bins {
            RowBins::Narrow(b) => b.capacity(),
            RowBins::Wide(b) => b.capacity() * 2,
        };
        let labels = match &self.labels {
            ShardLabels::Classes(c) => c.capacity() * 4,
            ShardLabels::Values(v) => v.capacity() * 8,
        };
        let scores = self.scores.lock().map_or(0, |s| s.as_ref().map_or(0, |s| s.raw.capacity() * 8));
        let grouped =
            self.grouped.lock().map_or(0, |g| g.as_ref().map_or(0, |g| g.trees.iter().map(NodeRows::heap_size).sum()));
        let derivatives = self.derivatives.lock().map_or(0, |d| d.as_ref().map_or(0, |(_, d)| d.heap_size()));
        bins + labels
            + self.hashes.capacity() * 8
            + self.weights.as_ref().map_or(0, |w| w.capacity() * 8)
            + self.stand_ins.iter().map(|s| s.capacity() * 8).sum::<usize>()
            + scores
            + grouped
            + derivatives
    }

    /// Row `r`'s bins, one per feature, into `out`.
    #[inline]
    pub(crate) fn row_bins(&self, r: usize, out: &mut [u16]) {
        let at = r * self.n_features;
        match &self.bins {
            RowBins::Narrow(b) => out.iter_mut().zip(&b[at..at + self.n_features]).for_each(|(o, &b)| *o = b.into()),
            RowBins::Wide(b) => out.copy_from_slice(&b[at..at + self.n_features]),
        }
    }

    /// Asks the CPU to bring row `r`'s bins into cache ahead of
    /// [`LevelShard::row_bins`]: a node's rows are scattered over the shard,
    /// and waiting for each row's line took most of a level's pass.
    #[inline]
    pub(crate) fn prefetch_row(&self, r: usize) {
        let at = r * self.n_features;
        match &self.bins {
            RowBins::Narrow(b) => prefetch(b, at),
            RowBins::Wide(b) => prefetch(b, at),
        }
    }

    /// Feature `f` of row `r` as the trees test it.
    #[inline]
    pub(crate) fn value(&self, f: usize, r: usize) -> f64 {
        let bin = match &self.bins {
            RowBins::Narrow(b) => usize::from(b[r * self.n_features + f]),
            RowBins::Wide(b) => usize::from(b[r * self.n_features + f]),
        };
        self.stand_ins[f][bin]
    }

    /// Row `r`'s label as a number: its class index, or its response.
    #[inline]
    pub(crate) fn label(&self, r: usize) -> f64 {
        match &self.labels {
            ShardLabels::Classes(c) => f64::from(c[r]),
            ShardLabels::Values(y) => y[r],
        }
    }

    /// Row `r`'s sample weight (1 without).
    #[inline]
    pub(crate) fn weight(&self, r: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[r])
    }

    /// Calls `use_scores` with every row's raw scores (`outputs` per row)
    /// by `trees`, added to `base` tree by tree in order, and keeps them
    /// for the next round without a copy. Scores kept from an earlier level
    /// whose trees `trees` begins with are extended by the trees since,
    /// which adds in the same order as scoring from the start: the same
    /// bits either way.
    pub(crate) fn with_raw_scores<R>(&self, base: &[f64], trees: &[Tree], use_scores: impl FnOnce(&[f64]) -> R) -> R {
        let outputs = base.len();
        let mut kept = self.scores.lock().unwrap_or_else(|e| e.into_inner());
        let reusable =
            kept.take().filter(|s| s.trees <= trees.len() && s.fingerprint == fingerprint(base, &trees[..s.trees]));
        let (from, mut raw) = match reusable {
            Some(s) => (s.trees, s.raw),
            None => (0, base.iter().copied().cycle().take(self.n_rows * outputs).collect()),
        };
        let added = &trees[from..];
        if !added.is_empty() {
            add_tree_scores(&mut raw, outputs, from, added, |f, r| self.value(f, r));
        }
        let result = use_scores(&raw);
        *kept = Some(Scores { trees: trees.len(), fingerprint: fingerprint(base, trees), raw });
        result
    }
}

impl LevelShard {
    /// The derivatives of the round whose base score and finished trees
    /// `round` fingerprints: kept from an earlier level of the round, or
    /// made by `make` and kept for the next.
    pub(crate) fn round_derivatives(
        &self,
        round: u64,
        make: impl FnOnce() -> Result<Derivatives>,
    ) -> Result<Arc<Derivatives>> {
        let mut kept = self.derivatives.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, derivatives)) = kept.as_ref().filter(|(r, _)| *r == round) {
            return Ok(derivatives.clone());
        }
        *kept = None;
        let derivatives = Arc::new(make()?);
        *kept = Some((round, derivatives.clone()));
        Ok(derivatives)
    }

    /// Calls `sum` with each of `growing`'s rows grouped by the node they
    /// wait in now ([`NodeRows`]): the groups kept from an earlier level of
    /// the same round (`round` fingerprints its base score and finished
    /// trees), advanced, or grouped afresh from the root.
    pub(crate) fn with_node_rows<R>(&self, round: u64, growing: &[&Tree], sum: impl FnOnce(&[NodeRows]) -> R) -> R {
        let mut kept = self.grouped.lock().unwrap_or_else(|e| e.into_inner());
        let fits = |g: &Grouped| {
            g.round == round
                && g.grown.len() == growing.len()
                && g.grown.iter().zip(growing).all(|(then, now)| grew_from(now, then))
        };
        let mut grouped = kept.take().filter(fits).unwrap_or_else(|| Grouped {
            round,
            trees: growing.iter().map(|_| NodeRows::new(self.n_rows)).collect(),
            grown: Vec::new(),
        });
        for (rows, tree) in grouped.trees.iter_mut().zip(growing) {
            rows.advance(tree, |node, r| tree.node_reached_from(node, |f| self.value(f, r as usize)));
        }
        grouped.grown = growing.iter().map(|t| (*t).clone()).collect();
        let result = sum(&grouped.trees);
        *kept = Some(grouped);
        result
    }
}

/// A hash of a base score and trees: which scores a shard's kept ones are.
pub(crate) fn fingerprint(base: &[f64], trees: &[Tree]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    base.iter().for_each(|b| hasher.update(&b.to_le_bytes()));
    for tree in trees {
        hasher.update(&postcard::to_stdvec(tree).expect("a tree always serializes"));
    }
    hasher.digest()
}

/// An error unless a piece's features are the training's, in its order.
fn check_features(features: &[Feature], data: &TrainingData) -> Result<()> {
    let names: Vec<&str> = data.features.iter().map(|f| f.name.as_str()).collect();
    if names.iter().copied().ne(features.iter().map(|f| f.name.as_str())) {
        return Err(ArborError::Data(format!(
            "a piece of the training rows has features ({}), the training ({})",
            names.join(", "),
            features.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
}

/// A column's bins under the training's mapper: numbers binned as they
/// are, categories by their place among the training's categories
/// (missing, or unknown to the training, in the missing bin).
fn global_bins(column: &FeatureColumn, feature: &Feature) -> Vec<u16> {
    let mapper = &feature.mapper;
    match (column, mapper.categories()) {
        (FeatureColumn::Categorical { bins, categories }, Some(known)) => {
            let global: Vec<u16> = std::iter::once(f64::NAN)
                .chain(categories.iter().map(|c| known.binary_search(c).map_or(f64::NAN, |i| (i + 1) as f64)))
                .map(|v| mapper.bin_value(v))
                .collect();
            bins.iter().map(|&b| global[usize::from(b)]).collect()
        }
        _ => (0..column.len()).map(|r| mapper.bin_value(column.raw_value(r))).collect(),
    }
}

/// Columns of bins as rows of them, each bin cast by `cast`.
fn row_major<T: Copy + Default + Send>(columns: &[Vec<u16>], n_rows: usize, cast: impl Fn(u16) -> T + Sync) -> Vec<T> {
    let width = columns.len();
    let mut rows = vec![T::default(); n_rows * width];
    if width == 0 {
        return rows;
    }
    rows.par_chunks_mut(CHUNK_ROWS * width).enumerate().for_each(|(k, chunk)| {
        for (i, row) in chunk.chunks_exact_mut(width).enumerate() {
            let r = k * CHUNK_ROWS + i;
            row.iter_mut().zip(columns).for_each(|(b, column)| *b = cast(column[r]));
        }
    });
    rows
}
