//! Growing one tree on the binned matrix, depth-first or best-first
//! (`docs/algorithms.md`, "Tree building strategies", "Gradient boosting").
//!
//! Two ways to look for a node's split:
//! - a random subset of `features_per_node` features (random forests), each
//!   feature's histogram built from the node's rows as it is drawn;
//! - every feature (gradient boosting's default, or `max_features=all`): the
//!   node's histograms of all features are kept, so a split builds only the
//!   smaller child's and gets the larger one by subtraction from the parent.
//!
//! This file sets a tree's growth up ([`grow_tree`]) and holds the grower's
//! state; [`strategy`] decides the order nodes split in, [`search`] finds a
//! node's best split and [`split`] applies it or makes the node a leaf.

use arbor_kernels::{
    build_histogram, build_row_histograms, build_row_histograms_quantized, count_key, count_keys, count_weight,
    keys_fit, value_records_variance_until, CompactHistogram, CountKey, Criterion, HistogramTarget, MedianScan,
    Monotone, QuantizedScales, QuantizedStats, RecordSums, RowBins, RowRecords, RowStats, SplitCandidate,
    SplitConstraints, Stats, ValueRecordSums, UNCHARGED_DEGREES,
};
use std::borrow::Cow;

use arbor_quantize::BinnedMatrix;
use rand::Rng;
use rayon::prelude::*;

use crate::model::tree::{Node, Tree};
use interactions::{FeatureSet, Interactions};

mod absolute_error;
mod apply_split;
pub(crate) mod drawn_search;
pub(crate) mod interactions;
mod search;
mod strategy;

pub(crate) use apply_split::{place_split, split_test};
pub(crate) use search::{best_of_features, offer};

/// Nodes with fewer rows than this build their histograms on one thread.
const PARALLEL_ROWS: usize = 8192;

/// A node of at least this many row records sums its drawn features' class
/// counts in one pass; smaller ones list their bins feature by feature.
/// Records hold 1-byte bins, so from here on every feature's build would be
/// the dense one (see `CompactHistogram::build_counts_records`).
const FUSED_MIN_RECORDS: usize = 128;

/// When every feature is scanned, a split node of at least this many rows
/// grows its two subtrees in parallel (smaller ones cost more as tasks than
/// they save). Large nodes still build their histograms in parallel too.
pub(crate) const FORK_MIN_ROWS: usize = 1024;

/// How a tree grows; absolute numbers, resolved from the parameters.
#[derive(Clone, Debug)]
pub(crate) struct GrowSettings {
    pub criterion: Criterion,
    pub constraints: SplitConstraints,
    /// Forests: how many times noise's gain per degree of freedom a subset
    /// split of many categories is charged per degree (`category_penalty`;
    /// 0 for boosting). The grower turns it into the node's
    /// [`SplitConstraints::category_charge`].
    pub category_penalty: f64,
    /// 0 = unlimited.
    pub max_depth: usize,
    pub min_samples_split: f64,
    pub features_per_node: usize,
    pub impurity_threshold: f64,
    /// Least gain of a split (`min_impurity_decrease` times the root's weight;
    /// `2·gamma` for boosting, whose gains are twice the loss reduction:
    /// `docs/algorithms.md`, "Gradient boosting").
    pub min_gain: f64,
    /// Boosting: leaves output `-G / (H + lambda)` times this (the learning rate).
    pub leaf_scale: f64,
    /// Extra trees: one random split per feature tried instead of the best.
    pub random_splitter: bool,
    /// Most leaves, grown best-first (0 = depth-first without limit).
    pub max_leaf_nodes: usize,
    /// Depth-first growth scanning every feature: split nodes of this many
    /// rows or more grow their subtrees in parallel ([`FORK_MIN_ROWS`]).
    pub fork_min_rows: usize,
    /// Whether a classification tree may copy its rows' bins into keyed row
    /// records (faster; a byte per feature per row of the tree): forests
    /// turn it off when the records of the trees in flight would not fit
    /// the memory limit. Class counts sum exactly, so the tree is the same
    /// either way; regression's value records always stay (their sums, in
    /// another order, could break ties otherwise).
    pub row_records: bool,
    /// Regression forests' `criterion=absolute_error`: splits by the
    /// children's absolute error around their medians, from the node's rows
    /// ranked by response ([`MedianScan`]), and leaves hold weighted medians.
    /// `criterion` is then [`Criterion::Mse`], whose statistics (count,
    /// weight, weighted sum) the nodes carry.
    pub absolute_error: bool,
    /// Each feature's monotone constraint (`+1`, `-1`, `0` free), or empty
    /// when none is (docs/algorithms.md, "Monotone constraints").
    pub monotone: Vec<i8>,
    /// The sets of features allowed to meet on a path (none: any may;
    /// docs/algorithms.md, "Interaction constraints").
    pub interactions: Interactions,
}

impl GrowSettings {
    /// Whether a node of `count` rows and `weight` at `depth` may split at
    /// all (`docs/algorithms.md`, "Termination criteria": depth, node and leaf sizes).
    pub(crate) fn may_split(&self, count: f64, weight: f64, depth: usize) -> bool {
        (self.max_depth == 0 || depth < self.max_depth)
            && count >= self.min_samples_split
            && count >= 2.0 * self.constraints.min_samples_leaf
            && weight >= 2.0 * self.constraints.min_weight_leaf
    }

    /// Whether subset splits are charged at all: a penalty is set, splits
    /// are searched (not drawn), and some feature has more than
    /// `UNCHARGED_DEGREES + 1` categories.
    pub(crate) fn charges_categories<'a>(
        &self,
        mappers: impl IntoIterator<Item = &'a arbor_quantize::BinMapper>,
    ) -> bool {
        self.category_penalty > 0.0
            && !self.random_splitter
            && mappers.into_iter().any(|m| m.is_categorical() && m.n_bins() > UNCHARGED_DEGREES + 2)
    }
    /// Whether monotone or interaction constraints apply: nodes then track their [`Limits`].
    fn constrained(&self) -> bool {
        !self.monotone.is_empty() || !self.interactions.is_empty()
    }

    /// The constraints of a split search on feature `f` at a node whose
    /// values must stay in `bounds`: `c` with `f`'s monotone direction.
    #[inline]
    pub(crate) fn on_feature(&self, c: &SplitConstraints, f: usize, bounds: Monotone) -> SplitConstraints {
        let direction = self.monotone.get(f).copied().unwrap_or(0);
        SplitConstraints { monotone: Monotone { direction, ..bounds }, ..*c }
    }
}

/// A grown tree and what training learns from it besides its structure.
pub(crate) struct GrownTree {
    pub tree: Tree,
    /// Impurity decrease (or boosting gain) owed to each feature (for MDI).
    pub gain_per_feature: Vec<f64>,
    /// The rows grown on, grouped by leaf (`leaves` index into it), or
    /// none when `leaves` is empty.
    pub rows: Vec<u32>,
    /// Per leaf: the offset of its output in the tree's values, and its
    /// range in `rows`. Empty for trees grown on row records (forests'
    /// classes), which regroup the records and free the rows.
    pub leaves: Vec<(usize, std::ops::Range<usize>)>,
    /// Each node's cover, in node order (see [`node_cover`]).
    pub cover: Vec<f32>,
}

struct Pending {
    node: usize,
    start: usize,
    end: usize,
    depth: usize,
    stats: Stats,
    /// Histograms of every feature (subtraction mode), when already known.
    hist: Option<Vec<f64>>,
    /// What constraints leave the node; `None` without constraints (a
    /// node then carries one pointer for them, not their sets).
    limits: Option<Box<Limits>>,
}

/// What monotone and interaction constraints leave a node.
#[derive(Clone, Debug, Default)]
struct Limits {
    /// The range the node's values must stay in ([`Monotone::NONE`]
    /// without monotone constraints; its direction unused).
    bounds: Monotone,
    /// The features the splits above the node used (empty without
    /// interaction constraints).
    path: FeatureSet,
}

impl Pending {
    /// The node as the root of a subtree grown apart, over its rows alone.
    fn rebased(self) -> Pending {
        Pending { node: 0, start: 0, end: self.end - self.start, ..self }
    }
}

/// Where each feature's histogram starts in an all-features histogram buffer.
#[derive(Clone)]
struct Layout {
    offsets: Vec<usize>,
}

impl Layout {
    fn new(matrix: &BinnedMatrix, stride: usize) -> Layout {
        let mut offsets = Vec::with_capacity(matrix.n_features() + 1);
        let mut at = 0;
        offsets.push(0);
        for f in 0..matrix.n_features() {
            at += matrix.mapper(f).n_bins() * stride;
            offsets.push(at);
        }
        Layout { offsets }
    }

    fn len(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    fn feature<'h>(&self, hist: &'h [f64], f: usize) -> &'h [f64] {
        &hist[self.offsets[f]..self.offsets[f + 1]]
    }

    /// Every feature's histogram over `rows`: row-wise when `rowwise` is
    /// given (features in groups, one per thread), otherwise column by column
    /// (one feature per group); groups run in parallel for large nodes.
    fn build(
        &self,
        matrix: &BinnedMatrix,
        target: &HistogramTarget<'_>,
        rows: &[u32],
        weights: &[f64],
        counts: &[f64],
        rowwise: Option<RowWise<'_>>,
    ) -> Vec<f64> {
        let mut hist = vec![0.0; self.len()];
        let n_features = matrix.n_features();
        let parallel = rows.len() >= PARALLEL_ROWS;
        let per_group = match rowwise {
            Some(_) if parallel => n_features.div_ceil(rayon::current_num_threads().clamp(1, n_features.max(1))),
            Some(_) => n_features,
            None => 1,
        };
        // Each group of features gets its own slice of the histogram.
        let mut parts: Vec<(std::ops::Range<usize>, &mut [f64])> = Vec::new();
        let mut rest = hist.as_mut_slice();
        for start in (0..n_features).step_by(per_group.max(1)) {
            let end = (start + per_group).min(n_features);
            let (part, tail) = rest.split_at_mut(self.offsets[end] - self.offsets[start]);
            parts.push((start..end, part));
            rest = tail;
        }
        let fill = |(features, part): &mut (std::ops::Range<usize>, &mut [f64])| match rowwise {
            Some(RowWise { bins, quantized: Some((ints, scales)), .. }) => {
                build_row_histograms_quantized(bins, rows, ints, scales, features.clone(), part)
            }
            Some(rw) => build_row_histograms(rw.bins, rows, rw.stats, features.clone(), part),
            None => build_histogram(matrix.column(features.start), rows, weights, counts, target, part),
        };
        if parallel {
            parts.par_iter_mut().for_each(fill);
        } else {
            parts.iter_mut().for_each(fill);
        }
        hist
    }
}

/// The row-major bins and each row's packed statistics, for the row-wise
/// histogram kernel (three-value targets, every feature at every node).
#[derive(Clone, Copy)]
pub(crate) struct RowWise<'a> {
    pub bins: &'a RowBins,
    /// Indexed by row id (see [`fill_row_stats`]); only the tree's rows are read.
    pub stats: &'a [RowStats],
    /// The same statistics as integers and their units, when they are
    /// quantized gradients whose sums fit 32 bits: the histograms are then
    /// summed in integers, to the same bits.
    pub quantized: Option<(&'a [QuantizedStats], QuantizedScales)>,
}

/// Row `r`'s bin of feature `f`: from the row-major bins when training
/// keeps them (the matrix's columns may be released then), else from the
/// matrix's column.
pub(crate) fn bin_of(matrix: &BinnedMatrix, row_bins: Option<&RowBins>, f: usize, r: usize) -> u16 {
    match row_bins {
        Some(bins) => u16::from(bins.get(r, f)),
        None => matrix.column(f).get(r),
    }
}

/// Writes every row's statistics for the row-wise kernel into `stats`, one
/// per row id, in parallel; reusing `stats` between trees saves allocating
/// and faulting in 32 bytes per row each time. Three-value targets only.
pub(crate) fn fill_row_stats(target: &HistogramTarget<'_>, weights: &[f64], counts: &[f64], stats: &mut Vec<RowStats>) {
    assert_eq!(target.stride(), 3, "row-wise statistics are for three-value targets");
    stats.resize(weights.len(), [0.0; 4]);
    stats.par_iter_mut().with_min_len(PARALLEL_ROWS).enumerate().for_each(|(r, s)| {
        *s = target.row_stats(r, weights, counts).expect("row-wise statistics are for three-value targets");
    });
}

/// A node waiting to be split, with what its split search found.
struct Evaluated {
    pending: Pending,
    best: Option<(usize, SplitCandidate)>,
    /// The node's histograms of every feature (subtraction mode), kept to derive a child's.
    hist: Option<Vec<f64>>,
}

/// The range of raw values each bin of each numeric feature holds in
/// training; with it, exact splits put their threshold midway between the
/// node's neighbouring values, as CART does.
pub(crate) type BinRanges = Vec<Vec<(f64, f64)>>;

/// The per-bin value ranges of numeric features (empty for categorical ones).
pub(crate) fn bin_ranges(columns: &[arbor_quantize::FeatureColumn], matrix: &BinnedMatrix) -> BinRanges {
    columns
        .iter()
        .enumerate()
        .map(|(f, column)| match column {
            arbor_quantize::FeatureColumn::Numeric(values) => {
                let mapper = matrix.mapper(f);
                let mut ranges = vec![(f64::INFINITY, f64::NEG_INFINITY); mapper.n_bins()];
                for v in (0..values.len()).map(|i| values.get(i)).filter(|v| !v.is_nan()) {
                    let r = &mut ranges[mapper.bin_value(v) as usize];
                    *r = (r.0.min(v), r.1.max(v));
                }
                ranges
            }
            arbor_quantize::FeatureColumn::Categorical { .. } => Vec::new(),
        })
        .collect()
}

/// Each row's bootstrap multiplicity and weight, by row id: what a tree's
/// rows weigh. Owned values are freed as soon as the tree no longer reads
/// them (trees grown on row records read neither past their setup).
pub(crate) struct TreeWeights<'a> {
    /// How many times each row was drawn.
    pub counts: Cow<'a, [f64]>,
    /// Each row's weight; `None` when it is its count (no sample weights).
    pub weights: Option<Cow<'a, [f64]>>,
}

/// Grows a tree over `rows` (each once, weighing as `tree_weights` say):
/// depth-first, or best-first when `settings.max_leaf_nodes > 0`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn grow_tree(
    matrix: &BinnedMatrix,
    rowwise: Option<RowWise<'_>>,
    target: &HistogramTarget<'_>,
    rows: Vec<u32>,
    tree_weights: TreeWeights<'_>,
    settings: &GrowSettings,
    ranges: Option<&BinRanges>,
    rng: &mut (impl Rng + Send),
) -> GrownTree {
    let TreeWeights { counts: counts_held, weights: weights_held } = tree_weights;
    let counts: &[f64] = &counts_held;
    let weights: &[f64] = weights_held.as_deref().unwrap_or(counts);
    let n_features = matrix.n_features();
    let stride = target.stride();
    let max_bins = (0..n_features).map(|f| matrix.mapper(f).n_bins()).max().unwrap_or(1);
    let root_stats = node_stats(target, &rows, weights, counts);
    let n = rows.len();
    let all_features = settings.features_per_node >= n_features && !settings.random_splitter;
    let rowwise = rowwise.filter(|_| all_features && !settings.absolute_error);
    // Nodes drawing their features build each histogram column-wise: from
    // integer class counts when the rows carry no sample weights, otherwise
    // from packed row statistics.
    let draws = !all_features && !settings.random_splitter && !settings.absolute_error;
    let keyed = draws && keys_fit(target, &rows, weights, counts);
    let (labels, n_classes) = match *target {
        HistogramTarget::Classes { labels, n_classes } => (labels, n_classes),
        _ => (&[][..], 0),
    };
    // Their rows as records in node order, when every feature's bins fit a
    // byte; the records carry each row's bins and key (classes) or count and
    // response (values without sample weights), and nodes read nothing by
    // row id. Otherwise the keys by row id.
    let records = match *target {
        _ if keyed && settings.row_records => RowRecords::with_keys(matrix, &rows, |r| count_key(labels, counts, r)),
        HistogramTarget::Values { y } if draws && weights_held.is_none() => {
            RowRecords::with_values(matrix, &rows, counts, y)
        }
        _ => None,
    };
    let (keys, mut rows, counts, weights) = match records {
        // Nodes on records read no row ids, keys, counts or weights: those owned go now.
        Some(_) => {
            drop((rows, counts_held, weights_held));
            (keyed.then(Vec::new), Vec::new(), &[][..], &[][..])
        }
        None => (keyed.then(|| count_keys(target, &rows, weights, counts)).flatten(), rows, counts, weights),
    };
    let packed = (draws && keys.is_none() && records.is_none() && stride <= 4).then(|| {
        let mut packed = vec![[0.0; 4]; weights.len()];
        for &r in &rows {
            packed[r as usize] = target.row_stats(r as usize, weights, counts).expect("bins of at most four values");
        }
        packed
    });
    // Subset splits are charged only beyond UNCHARGED_DEGREES + 1 categories.
    let chargeable = settings.charges_categories(matrix.mappers());
    // One buffer for every partition of the rows, lent in pieces as they are.
    let mut scratch = if records.is_some() { Vec::new() } else { vec![0; n] };
    let mut grower = Grower {
        data: Inputs {
            matrix,
            target,
            weights,
            counts,
            settings,
            ranges,
            stride,
            all_features,
            rowwise,
            keys: keys.as_deref().map(|keys| (keys, n_classes)),
            packed: packed.as_deref(),
            chargeable,
        },
        buffers: Buffers {
            hist: vec![0.0; max_bins * stride],
            perm: (0..n_features).collect(),
            ..Buffers::new(Layout::new(matrix, stride))
        },
        tree: Growing::new(),
        rng: Some(rng),
        records,
        scratch: &mut scratch,
        rows: &mut rows,
    };
    let root = Pending {
        node: 0,
        start: 0,
        end: n,
        depth: 0,
        stats: root_stats,
        hist: None,
        limits: settings
            .constrained()
            .then(|| Box::new(Limits { bounds: Monotone::NONE, path: FeatureSet::default() })),
    };
    if settings.max_leaf_nodes == 0 {
        grower.depth_first(root);
    } else {
        grower.best_first(root, settings.max_leaf_nodes);
    }
    let Growing { nodes, values, gains, leaves, cover } = grower.tree;
    // Summed in the order a sequential depth-first growth makes the splits.
    let mut gain_per_feature = vec![0.0; n_features];
    for (f, gain) in gains {
        gain_per_feature[f] += gain;
    }
    GrownTree { tree: Tree { nodes, values }, gain_per_feature, rows, leaves, cover }
}

/// A node's cover, the training weight that reached it, from its
/// statistics: the sum of sample weights (bootstrap multiplicities included)
/// for the impurity criteria, the sum of hessians for boosting (XGBoost's
/// cover). Kept as the model stores it.
pub(crate) fn node_cover(stats: &[f64], criterion: Criterion) -> f32 {
    count_weight(stats, criterion).1 as f32
}

/// What a grower reads and never changes, shared by the subtrees grown apart.
#[derive(Clone, Copy)]
struct Inputs<'a, 't> {
    matrix: &'a BinnedMatrix,
    target: &'a HistogramTarget<'t>,
    weights: &'a [f64],
    counts: &'a [f64],
    settings: &'a GrowSettings,
    ranges: Option<&'a BinRanges>,
    stride: usize,
    /// Every feature is scanned at every node: keep histograms and subtract.
    all_features: bool,
    /// Build those histograms row-wise.
    rowwise: Option<RowWise<'a>>,
    /// Each row's class and multiplicity, by row id, and the number of
    /// classes, for the histograms of drawn features (classes without
    /// sample weights); the keys are empty when `records` carry them.
    keys: Option<(&'a [CountKey], usize)>,
    /// Otherwise each row's statistics packed in four lanes, by row id
    /// (targets of at most four values per bin).
    packed: Option<&'a [RowStats]>,
    /// Some feature has enough categories for its subset splits to be
    /// charged (`category_penalty`, forests).
    chargeable: bool,
}

/// A grower's own working buffers, reused from node to node.
struct Buffers {
    /// Four-lane bins for [`build_histogram_packed`](arbor_kernels::build_histogram_packed).
    wide: Vec<RowStats>,
    layout: Layout,
    hist: Vec<f64>,
    compact: CompactHistogram,
    /// The drawn features' class sums of a large node, summed in one pass over its records.
    record_sums: RecordSums,
    /// The same for value records (regression forests).
    value_sums: ValueRecordSums,
    /// A node's rows ranked by response (`criterion=absolute_error`).
    median: MedianScan,
    perm: Vec<usize>,
}

impl Buffers {
    /// Empty buffers over `layout`, filled as nodes need them.
    fn new(layout: Layout) -> Buffers {
        Buffers {
            wide: Vec::new(),
            layout,
            hist: Vec::new(),
            compact: CompactHistogram::default(),
            record_sums: RecordSums::default(),
            value_sums: ValueRecordSums::default(),
            median: MedianScan::default(),
            perm: Vec::new(),
        }
    }
}

/// The tree as it grows: its nodes, leaf values, leaves' rows, split gains
/// and node covers.
struct Growing {
    /// Each split's feature and gain, in the order of the splits.
    gains: Vec<(usize, f64)>,
    nodes: Vec<Node>,
    values: Vec<f64>,
    leaves: Vec<(usize, std::ops::Range<usize>)>,
    /// Each node's cover, set when the node becomes a split or a leaf.
    cover: Vec<f32>,
}

impl Growing {
    /// A tree of one leaf, the root, to be split.
    fn new() -> Growing {
        Growing {
            gains: Vec::new(),
            nodes: vec![Node::Leaf { value: 0 }],
            values: Vec::new(),
            leaves: Vec::new(),
            cover: vec![0.0],
        }
    }
}

/// The state of one tree's growth.
struct Grower<'a, 't, R> {
    data: Inputs<'a, 't>,
    buffers: Buffers,
    tree: Growing,
    /// `None` in subtrees grown apart, which scan every feature and draw nothing.
    rng: Option<&'a mut R>,
    /// The keys with every feature's bins, as records that move with
    /// the rows (drawn features; trees grown apart have none).
    records: Option<RowRecords>,
    /// Room for the right side of a partition of `rows`, as long as them:
    /// one buffer per tree, split between subtrees grown apart as their rows are.
    scratch: &'a mut [u32],
    /// The tree's rows (a subtree's alone, when grown apart), regrouped by
    /// node as the tree splits; empty when `records` are regrouped instead.
    rows: &'a mut [u32],
}

/// The weighted variance of node `p`'s responses (weight sum `w`, mean
/// `mean`) or a partial figure past `stop`, as [`variance_until`] gives it,
/// from the node's value records or its range of the tree's `rows`.
fn node_variance_until(
    data: &Inputs<'_, '_>,
    records: &Option<RowRecords>,
    rows: &[u32],
    p: &Pending,
    (mean, w, stop): (f64, f64, f64),
) -> f64 {
    match (records, data.target) {
        (Some(records), _) => {
            value_records_variance_until(records.records(p.start..p.end), records.width(), mean, w, stop)
        }
        (None, &HistogramTarget::Values { y }) => variance_until(y, &rows[p.start..p.end], data.weights, mean, w, stop),
        (None, _) => unreachable!("only responses have a variance"),
    }
}

/// The rows of node `p`, none when the records stand for them (the rows
/// were freed).
fn node_rows<'r>(rows: &'r [u32], records: &Option<RowRecords>, p: &Pending) -> &'r [u32] {
    match records {
        Some(_) => &[],
        None => &rows[p.start..p.end],
    }
}

/// Draws the `i`-th feature without replacement: swaps a random one of
/// `perm[i..]` into `perm[i]`.
pub(crate) fn draw_feature(perm: &mut [usize], i: usize, rng: &mut impl Rng) {
    let j = rng.random_range(i..perm.len());
    perm.swap(i, j);
}

/// CART's threshold between neighbouring values `a < b`: `a/2 + b/2`, computed
/// as scikit-learn computes it so exact trees match its thresholds to the bit
/// (the quantizer's edges use `a + (b − a)/2`); `a` when rounding reaches `b`.
fn cart_midpoint(a: f64, b: f64) -> f64 {
    let m = a / 2.0 + b / 2.0;
    if m >= b || !m.is_finite() {
        a
    } else {
        m
    }
}

/// Statistics of a set of rows, in histogram-bin layout. Bins of at most
/// four values are summed as packed rows ([`HistogramTarget::row_stats`]) in
/// registers: a sum kept in memory waits on its own store every row. Either
/// way the rows are added in order, so the sums are the same.
fn node_stats(target: &HistogramTarget<'_>, rows: &[u32], weights: &[f64], counts: &[f64]) -> Stats {
    let stride = target.stride();
    if stride > 4 {
        let mut stats = Stats::from_elem(0.0, stride);
        for &r in rows {
            target.add_row(&mut stats, r as usize, weights, counts);
        }
        return stats;
    }
    let mut sum = [0.0; 4];
    for &r in rows {
        let row = target.row_stats(r as usize, weights, counts).expect("bins of at most four values");
        for (s, v) in sum.iter_mut().zip(row) {
            *s += v;
        }
    }
    Stats::from_slice(&sum[..stride])
}

/// Whether the node's impurity `i(t)` (`docs/algorithms.md`, "Split criteria") exceeds `threshold`: Gini
/// or entropy from class weights, the weighted variance of the response for
/// MSE (in two passes for accuracy). Boosting has no impurity: its nodes
/// always qualify.
///
/// The variance's pass stops at the first row whose partial sum already
/// exceeds the threshold: its terms are never negative (weights are checked
/// `>= 0`), so rounded partial sums never decrease and the answer is the
/// full sum's. Only pure nodes read all their rows; the others a few.
/// `variance_until(mean, w, stop)` makes that pass over the node's rows or
/// records (see [`variance_until`]).
pub(crate) fn impure(
    stats: &[f64],
    target: &HistogramTarget<'_>,
    criterion: Criterion,
    variance_until: impl FnOnce(f64, f64, f64) -> f64,
    threshold: f64,
) -> bool {
    let (_, w) = count_weight(stats, criterion);
    if w <= 0.0 {
        return 0.0 > threshold;
    }
    match *target {
        HistogramTarget::Classes { n_classes, .. } => {
            let impurity = match criterion {
                Criterion::Entropy => {
                    -stats[..n_classes].iter().map(|c| c / w).filter(|&p| p > 0.0).map(|p| p * p.ln()).sum::<f64>()
                }
                _ => gini_index(stats, n_classes, w),
            };
            impurity > threshold
        }
        HistogramTarget::Values { .. } => variance_until(stats[2] / w, w, threshold) > threshold,
        HistogramTarget::Gradients { .. } | HistogramTarget::Packed { .. } => f64::INFINITY > threshold,
    }
}

/// The Gini index `1 − Σ p²` of class weights `stats[..n_classes]` summing to `w > 0`.
pub(crate) fn gini_index(stats: &[f64], n_classes: usize, w: f64) -> f64 {
    1.0 - stats[..n_classes].iter().map(|c| (c / w) * (c / w)).sum::<f64>()
}

/// The weighted variance of `y` over `rows` (weight sum `w > 0`, mean
/// `mean`), summed in row order, or a partial figure past `stop` (see
/// [`arbor_kernels::variance_until`]).
fn variance_until(y: &[f64], rows: &[u32], weights: &[f64], mean: f64, w: f64, stop: f64) -> f64 {
    let terms = rows.iter().map(|&r| (weights[r as usize], y[r as usize]));
    arbor_kernels::variance_until(terms, mean, w, stop)
}

/// A boosted leaf's output from its gradient sum `g` and hessian sum `h`:
/// `−g / (h + λ)` times `scale` (the learning rate), 0 when `h + λ` is not positive.
pub(crate) fn newton_leaf(g: f64, h: f64, lambda: f64, scale: f64) -> f64 {
    let h = h + lambda;
    if h > 0.0 {
        -g / h * scale
    } else {
        0.0
    }
}

pub(crate) fn leaf_value(
    stats: &[f64],
    target: &HistogramTarget<'_>,
    criterion: Criterion,
    scale: f64,
    values: &mut Vec<f64>,
) {
    let (_, w) = count_weight(stats, criterion);
    match (target, criterion) {
        (HistogramTarget::Classes { n_classes, .. }, _) => {
            values.extend(stats[..*n_classes].iter().map(|c| if w > 0.0 { c / w } else { 0.0 }));
        }
        (HistogramTarget::Gradients { .. } | HistogramTarget::Packed { .. }, Criterion::Newton { lambda }) => {
            values.push(newton_leaf(stats[1], stats[2], lambda, scale));
        }
        _ => values.push(if w > 0.0 { stats[2] / w } else { 0.0 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_quantize::{FeatureColumn, QuantizeParams};
    use rand::SeedableRng;

    /// The variance test that stops early answers as the full two-pass
    /// variance does, at every threshold, including the variance itself.
    #[test]
    fn early_stopping_variance_test_matches_the_full_variance() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for case in 0..200 {
            let n = rng.random_range(1..40);
            // some nodes pure, some with a single odd row, some spread
            let y: Vec<f64> = (0..n)
                .map(|i| match case % 3 {
                    0 => 7.0,
                    1 if i == n - 1 => 7.5,
                    1 => 7.0,
                    _ => rng.random_range(-3.0..3.0),
                })
                .collect();
            let weights: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(0..3u8))).collect();
            let rows: Vec<u32> = (0..n as u32).collect();
            let target = HistogramTarget::Values { y: &y };
            let stats = node_stats(&target, &rows, &weights, &weights);
            let (_, w) = count_weight(&stats, Criterion::Mse);
            let full = if w > 0.0 {
                let mean = stats[2] / w;
                rows.iter().map(|&r| weights[r as usize] * (y[r as usize] - mean).powi(2)).sum::<f64>() / w
            } else {
                0.0
            };
            if w > 0.0 {
                let unstopped = variance_until(&y, &rows, &weights, stats[2] / w, w, f64::INFINITY);
                assert_eq!(unstopped.to_bits(), full.to_bits(), "case {case}: the full variance, bit for bit");
            }
            let mut thresholds = vec![f64::EPSILON, full, full / 2.0, full * 2.0];
            if full > 0.0 {
                thresholds.push(f64::from_bits(full.to_bits() - 1)); // the float just below
            }
            for threshold in thresholds {
                let variance = |mean, w, stop| variance_until(&y, &rows, &weights, mean, w, stop);
                let got = impure(&stats, &target, Criterion::Mse, variance, threshold);
                assert_eq!(got, full > threshold, "case {case}: variance {full}, threshold {threshold}");
            }
        }
    }

    /// A forest's tree (two features drawn per node, grown until pure, a
    /// fixed seed) over `rows`, each weighing its count or, given, its weight.
    fn grow_forest_tree(
        matrix: &BinnedMatrix,
        target: &HistogramTarget<'_>,
        rows: &[u32],
        counts: &[f64],
        weights: Option<Cow<'_, [f64]>>,
        criterion: Criterion,
    ) -> GrownTree {
        let settings = GrowSettings {
            criterion,
            constraints: SplitConstraints::default(),
            category_penalty: 24.0,
            max_depth: 0,
            min_samples_split: 2.0,
            features_per_node: 2,
            impurity_threshold: 0.0,
            min_gain: 0.0,
            leaf_scale: 1.0,
            random_splitter: false,
            max_leaf_nodes: 0,
            fork_min_rows: 0,
            row_records: true,
            absolute_error: false,
            monotone: Vec::new(),
            interactions: Interactions::default(),
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let tree_weights = TreeWeights { counts: Cow::Borrowed(counts), weights };
        grow_tree(matrix, None, target, rows.to_vec(), tree_weights, &settings, None, &mut rng)
    }

    /// A regression forest's tree grown on value records is the tree grown
    /// on rows gathered by row id (sample weights equal to the counts keep
    /// rows): whole-number responses make every sum exact in any order, so
    /// the records' own order of rows cannot show.
    #[test]
    fn value_records_grow_the_tree_rows_grow() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let n = 20_000;
        let columns: Vec<FeatureColumn> = (0..5)
            .map(|_| {
                FeatureColumn::Numeric((0..n).map(|_| f64::from(rng.random_range(0..60u8))).collect::<Vec<_>>().into())
            })
            .collect();
        let y: Vec<f64> =
            (0..n).map(|r| (columns[0].raw_value(r) / 10.0).floor() + f64::from(rng.random_range(0..4u8))).collect();
        let counts: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(0..3u8))).collect();
        let rows: Vec<u32> = (0..n as u32).filter(|&r| counts[r as usize] > 0.0).collect();
        let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
        let target = HistogramTarget::Values { y: &y };
        let grow = |weights| grow_forest_tree(&matrix, &target, &rows, &counts, weights, Criterion::Mse);
        let (on_records, on_rows) = (grow(None), grow(Some(Cow::Borrowed(&counts))));
        assert!(on_rows.tree.nodes.len() > 1000, "a deep tree: {}", on_rows.tree.nodes.len());
        assert!(on_records.leaves.is_empty() && !on_rows.leaves.is_empty(), "one tree on records, one on rows");
        assert_eq!(on_records.tree, on_rows.tree);
        assert_eq!(on_records.gain_per_feature, on_rows.gain_per_feature);
    }

    /// A classification forest's tree grown on keyed records (which skips
    /// features constant in a node without a histogram, settles a node of
    /// two records on its first feature that tells them apart, and builds
    /// no candidate that cannot win) is the tree the plain weighted path
    /// grows. Sample weights of twice the counts send the rows down that
    /// path and double every gain exactly, so every comparison between
    /// splits comes out the same.
    #[test]
    fn keyed_records_grow_the_tree_weighted_rows_grow() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let n = 20_000;
        let columns: Vec<FeatureColumn> = (0..6)
            .map(|f| {
                let levels = [3u8, 8, 40, 200, 5, 12][f];
                FeatureColumn::Numeric(
                    (0..n).map(|_| f64::from(rng.random_range(0..levels))).collect::<Vec<_>>().into(),
                )
            })
            .collect();
        let labels: Vec<u32> = (0..n)
            .map(|r| {
                let signal = columns[1].raw_value(r) + columns[2].raw_value(r) / 8.0;
                u32::from(signal + f64::from(rng.random_range(0..6u8)) > 9.0)
            })
            .collect();
        let counts: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(0..3u8))).collect();
        let doubled: Vec<f64> = counts.iter().map(|c| 2.0 * c).collect();
        let rows: Vec<u32> = (0..n as u32).filter(|&r| counts[r as usize] > 0.0).collect();
        let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
        let grow = |weights| grow_forest_tree(&matrix, &target, &rows, &counts, weights, Criterion::Gini);
        let (keyed, weighted) = (grow(None), grow(Some(Cow::Borrowed(&doubled))));
        assert!(weighted.tree.nodes.len() > 2000, "a deep tree: {}", weighted.tree.nodes.len());
        assert!(keyed.leaves.is_empty() && !weighted.leaves.is_empty(), "one tree on records, one on rows");
        assert_eq!(keyed.tree, weighted.tree);
        let halved: Vec<f64> = weighted.gain_per_feature.iter().map(|g| g / 2.0).collect();
        assert_eq!(keyed.gain_per_feature, halved);
    }

    /// Subtrees grown apart give the nodes, leaf values, row order, leaves
    /// and gains of one sequential depth-first growth.
    #[test]
    fn subtrees_grown_apart_match_sequential_growth() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let n = 6000;
        let mut columns: Vec<FeatureColumn> = (0..4)
            .map(|_| {
                FeatureColumn::Numeric((0..n).map(|_| f64::from(rng.random_range(0..50u8))).collect::<Vec<_>>().into())
            })
            .collect();
        let bins: Vec<u16> = (0..n).map(|_| rng.random_range(1..=20)).collect();
        let categories = (0..20).map(|c| format!("c{c:02}")).collect();
        columns.push(FeatureColumn::Categorical { bins: bins.clone(), categories });
        let grad: Vec<f64> = (0..n)
            .map(|r| {
                let y = f64::from(u8::from(columns[0].raw_value(r) > 25.0)) + f64::from((bins[r] - 1) % 3) / 2.0;
                rng.random_range(-0.5..0.5) - y
            })
            .collect();
        let hess = vec![1.0; n];
        let counts = vec![1.0; n];
        let target = HistogramTarget::Gradients { grad: &grad, hess: &hess };
        let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
        let settings = GrowSettings {
            criterion: Criterion::Newton { lambda: 1.0 },
            constraints: SplitConstraints {
                min_samples_leaf: 5.0,
                min_samples_category: 10.0,
                ..SplitConstraints::default()
            },
            category_penalty: 0.0,
            max_depth: 8,
            min_samples_split: 2.0,
            features_per_node: columns.len(),
            impurity_threshold: 0.0,
            min_gain: f64::MIN_POSITIVE,
            leaf_scale: 0.3,
            random_splitter: false,
            max_leaf_nodes: 0,
            fork_min_rows: 0,
            row_records: true,
            absolute_error: false,
            monotone: Vec::new(),
            interactions: Interactions::default(),
        };
        let rows: Vec<u32> = (0..n as u32).collect();
        let on = |fork_min_rows| {
            let mut unused = rand_chacha::ChaCha8Rng::seed_from_u64(0);
            let settings = GrowSettings { fork_min_rows, ..settings.clone() };
            let weights = TreeWeights { counts: Cow::Borrowed(&counts), weights: None };
            grow_tree(&matrix, None, &target, rows.clone(), weights, &settings, None, &mut unused)
        };
        let (sequential, apart) = (on(usize::MAX), on(64));
        assert!(sequential.tree.nodes.len() > 100, "deep enough to fork: {}", sequential.tree.nodes.len());
        assert_eq!(apart.tree, sequential.tree);
        assert_eq!(apart.rows, sequential.rows);
        assert_eq!(apart.leaves, sequential.leaves);
        assert_eq!(apart.gain_per_feature, sequential.gain_per_feature);
    }
}
