//! Growing one tree depth-first on the binned matrix (seed 000 "Training",
//! seed 004 "The algorithm for growing the tree").
//!
//! Two ways to look for a node's split:
//! - a random subset of `features_per_node` features (random forests), each
//!   feature's histogram built from the node's rows as it is drawn;
//! - every feature (gradient boosting's default, or `max_features=all`): the
//!   node's histograms of all features are kept, so a split builds only the
//!   smaller child's and gets the larger one by subtraction from the parent.

use arbor_kernels::{
    best_split, build_histogram, count_weight, occupied_bins, partition_rows, CompactHistogram, Criterion,
    SplitCandidate, SplitConstraints, SplitRule, Target,
};
use arbor_quantize::BinnedMatrix;
use rand::Rng;
use rayon::prelude::*;

use crate::tree::{Node, SplitTest, Tree};

/// Nodes with fewer rows than this build their histograms on one thread.
const PARALLEL_ROWS: usize = 8192;

/// How a tree grows; absolute numbers, resolved from the parameters.
#[derive(Clone, Debug)]
pub(crate) struct GrowSettings {
    pub criterion: Criterion,
    pub constraints: SplitConstraints,
    /// 0 = unlimited.
    pub max_depth: usize,
    pub min_samples_split: f64,
    pub features_per_node: usize,
    pub impurity_threshold: f64,
    /// Least gain of a split (`min_impurity_decrease` times the root's weight;
    /// `2·gamma` for boosting, whose gains are twice seed 004's).
    pub min_gain: f64,
    /// Boosting: leaves output `-G / (H + lambda)` times this (the learning rate).
    pub leaf_scale: f64,
}

/// A grown tree and what training learns from it besides its structure.
pub(crate) struct GrownTree {
    pub tree: Tree,
    /// Impurity decrease (or boosting gain) owed to each feature (for MDI).
    pub gain_per_feature: Vec<f64>,
    /// The rows grown on, grouped by leaf: `leaves` index into it.
    pub rows: Vec<u32>,
    /// Per leaf: the offset of its output in the tree's values, and its range in `rows`.
    pub leaves: Vec<(usize, std::ops::Range<usize>)>,
}

struct Pending {
    node: usize,
    start: usize,
    end: usize,
    depth: usize,
    stats: Vec<f64>,
    /// Histograms of every feature (subtraction mode), when already known.
    hist: Option<Vec<f64>>,
}

/// Where each feature's histogram starts in an all-features histogram buffer.
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

    /// Every feature's histogram over `rows`, features in parallel for large nodes.
    fn build(
        &self,
        matrix: &BinnedMatrix,
        target: &Target<'_>,
        rows: &[u32],
        weights: &[f64],
        counts: &[f64],
    ) -> Vec<f64> {
        let mut hist = vec![0.0; self.len()];
        let mut parts: Vec<(usize, &mut [f64])> = Vec::with_capacity(matrix.n_features());
        let mut rest = hist.as_mut_slice();
        for f in 0..matrix.n_features() {
            let (part, tail) = rest.split_at_mut(self.offsets[f + 1] - self.offsets[f]);
            parts.push((f, part));
            rest = tail;
        }
        let fill = |(f, part): &mut (usize, &mut [f64])| {
            build_histogram(matrix.column(*f), rows, weights, counts, target, part);
        };
        if rows.len() >= PARALLEL_ROWS {
            parts.par_iter_mut().for_each(fill);
        } else {
            parts.iter_mut().for_each(fill);
        }
        hist
    }
}

/// Grows a tree over `rows` (each once; `counts`/`weights` carry bootstrap
/// multiplicities and sample weights, indexed by row id).
pub(crate) fn grow_tree(
    matrix: &BinnedMatrix,
    target: &Target<'_>,
    mut rows: Vec<u32>,
    weights: &[f64],
    counts: &[f64],
    settings: &GrowSettings,
    rng: &mut impl Rng,
) -> GrownTree {
    let stride = target.stride();
    let n_features = matrix.n_features();
    let all_features = settings.features_per_node >= n_features;
    let layout = Layout::new(matrix, stride);
    let max_bins = (0..n_features).map(|f| matrix.mapper(f).n_bins()).max().unwrap_or(1);
    let mut hist = vec![0.0; max_bins * stride];
    let mut compact = CompactHistogram::default();
    let mut scratch = Vec::with_capacity(rows.len());
    let mut perm: Vec<usize> = (0..n_features).collect();
    let mut gain_per_feature = vec![0.0; n_features];
    let c = &settings.constraints;
    let criterion = settings.criterion;
    let may_split = |count: f64, weight: f64, depth: usize| {
        (settings.max_depth == 0 || depth < settings.max_depth)
            && count >= settings.min_samples_split
            && count >= 2.0 * c.min_samples_leaf
            && weight >= 2.0 * c.min_weight_leaf
    };

    let root_stats = node_stats(target, &rows, weights, counts);
    let mut nodes = vec![Node::Leaf { value: 0 }];
    let mut values = Vec::new();
    let mut leaves = Vec::new();
    let n = rows.len();
    let mut stack = vec![Pending { node: 0, start: 0, end: n, depth: 0, stats: root_stats, hist: None }];

    while let Some(p) = stack.pop() {
        let node_rows = &rows[p.start..p.end];
        let (count, weight) = count_weight(&p.stats, criterion);
        let splittable = may_split(count, weight, p.depth)
            && impurity(&p.stats, target, criterion, node_rows, weights)
                > settings.impurity_threshold.max(f64::EPSILON);

        let mut node_hist = None;
        let best: Option<(usize, SplitCandidate)> = if !splittable {
            None
        } else if all_features {
            let h = p.hist.unwrap_or_else(|| layout.build(matrix, target, node_rows, weights, counts));
            let candidates: Vec<Option<SplitCandidate>> = (0..n_features)
                .into_par_iter()
                .with_min_len(4)
                .map(|f| {
                    let fh = layout.feature(&h, f);
                    (occupied_bins(fh, stride, criterion) >= 2)
                        .then(|| best_split(fh, stride, criterion, c, matrix.mapper(f).is_categorical()))
                        .flatten()
                })
                .collect();
            node_hist = Some(h);
            // The highest gain wins; on a tie, the lowest feature index.
            let mut best: Option<(usize, SplitCandidate)> = None;
            for (f, candidate) in candidates.into_iter().enumerate() {
                if let Some(candidate) = candidate {
                    if best.as_ref().is_none_or(|(_, b)| candidate.gain > b.gain) {
                        best = Some((f, candidate));
                    }
                }
            }
            best
        } else {
            let mut best: Option<(usize, SplitCandidate)> = None;
            let mut visited = 0;
            for i in 0..n_features {
                if visited >= settings.features_per_node {
                    break;
                }
                let j = rng.random_range(i..n_features);
                perm.swap(i, j);
                let f = perm[i];
                let n_bins = matrix.mapper(f).n_bins();
                let categorical = matrix.mapper(f).is_categorical();
                let candidate = if node_rows.len() * 2 < n_bins {
                    // Few rows, many bins: scan only the bins the rows occupy.
                    compact.build(matrix.column(f), node_rows, weights, counts, target);
                    if occupied_bins(&compact.hist, stride, criterion) < 2 {
                        continue; // constant here: does not count towards features_per_node
                    }
                    best_split(&compact.hist, stride, criterion, c, categorical).map(|mut s| {
                        let unseen_left = count_weight(&s.left, criterion).0 >= count_weight(&s.right, criterion).0;
                        s.rule = s.rule.expand(&compact.bins, n_bins, unseen_left);
                        s
                    })
                } else {
                    let h = &mut hist[..n_bins * stride];
                    h.fill(0.0);
                    build_histogram(matrix.column(f), node_rows, weights, counts, target, h);
                    if occupied_bins(h, stride, criterion) < 2 {
                        continue; // constant here: does not count towards features_per_node
                    }
                    best_split(h, stride, criterion, c, categorical)
                };
                visited += 1;
                if let Some(candidate) = candidate {
                    if best.as_ref().is_none_or(|(_, b)| candidate.gain > b.gain) {
                        best = Some((f, candidate));
                    }
                }
            }
            best
        };

        match best {
            Some((f, split)) if split.gain >= settings.min_gain => {
                let mapper = matrix.mapper(f);
                let goes_left = split.rule.goes_left(mapper.n_bins());
                let test = match &split.rule {
                    SplitRule::Threshold { bin, .. } => SplitTest::LessOrEqual(mapper.threshold(*bin)),
                    SplitRule::Categories { goes_left } => {
                        let mut words = vec![0u64; goes_left.len().div_ceil(64)];
                        for (b, _) in goes_left.iter().enumerate().skip(1).filter(|(_, &l)| l) {
                            words[b / 64] |= 1 << (b % 64);
                        }
                        SplitTest::InCategories(words)
                    }
                };
                let n_left = partition_rows(&mut rows[p.start..p.end], matrix.column(f), &goes_left, &mut scratch);
                let left = nodes.len();
                nodes.push(Node::Leaf { value: 0 });
                nodes.push(Node::Leaf { value: 0 });
                nodes[p.node] = Node::Split {
                    feature: f as u32,
                    test,
                    default_left: goes_left[0],
                    left: left as u32,
                    right: left as u32 + 1,
                };
                gain_per_feature[f] += split.gain.max(0.0);
                let mid = p.start + n_left;
                let depth = p.depth + 1;
                let (mut left_hist, mut right_hist) = (None, None);
                if let Some(parent) = node_hist {
                    let (nl, wl) = count_weight(&split.left, criterion);
                    let (nr, wr) = count_weight(&split.right, criterion);
                    let (want_left, want_right) = (may_split(nl, wl, depth), may_split(nr, wr, depth));
                    if want_left || want_right {
                        // Build the smaller child; the larger is the parent minus it.
                        let left_smaller = n_left <= p.end - mid;
                        let (small_rows, small_wanted, large_wanted) = if left_smaller {
                            (&rows[p.start..mid], want_left, want_right)
                        } else {
                            (&rows[mid..p.end], want_right, want_left)
                        };
                        let small = layout.build(matrix, target, small_rows, weights, counts);
                        let large = large_wanted.then(|| {
                            let mut large = parent;
                            large.iter_mut().zip(&small).for_each(|(l, s)| *l -= s);
                            large
                        });
                        let small = small_wanted.then_some(small);
                        (left_hist, right_hist) = if left_smaller { (small, large) } else { (large, small) };
                    }
                }
                stack.push(Pending {
                    node: left + 1,
                    start: mid,
                    end: p.end,
                    depth,
                    stats: split.right,
                    hist: right_hist,
                });
                stack.push(Pending { node: left, start: p.start, end: mid, depth, stats: split.left, hist: left_hist });
            }
            _ => {
                let offset = values.len();
                nodes[p.node] = Node::Leaf { value: offset as u32 };
                leaf_value(&p.stats, target, criterion, settings.leaf_scale, &mut values);
                leaves.push((offset, p.start..p.end));
            }
        }
    }
    GrownTree { tree: Tree { nodes, values }, gain_per_feature, rows, leaves }
}

/// Statistics of a set of rows, in histogram-bin layout.
fn node_stats(target: &Target<'_>, rows: &[u32], weights: &[f64], counts: &[f64]) -> Vec<f64> {
    let mut stats = vec![0.0; target.stride()];
    for &r in rows {
        target.add_row(&mut stats, r as usize, weights, counts);
    }
    stats
}

/// The node's impurity `i(t)` (seed 000): Gini or entropy from class weights,
/// weighted variance of the response for MSE (computed in two passes for
/// accuracy). Boosting has no impurity: its nodes always qualify.
fn impurity(stats: &[f64], target: &Target<'_>, criterion: Criterion, rows: &[u32], weights: &[f64]) -> f64 {
    let (_, w) = count_weight(stats, criterion);
    if w <= 0.0 {
        return 0.0;
    }
    match *target {
        Target::Classes { n_classes, .. } => {
            let p = stats[..n_classes].iter().map(|c| c / w);
            match criterion {
                Criterion::Entropy => -p.filter(|&p| p > 0.0).map(|p| p * p.ln()).sum::<f64>(),
                _ => 1.0 - p.map(|p| p * p).sum::<f64>(),
            }
        }
        Target::Values { y } => {
            let mean = stats[2] / w;
            rows.iter().map(|&r| weights[r as usize] * (y[r as usize] - mean).powi(2)).sum::<f64>() / w
        }
        Target::Gradients { .. } => f64::INFINITY,
    }
}

fn leaf_value(stats: &[f64], target: &Target<'_>, criterion: Criterion, scale: f64, values: &mut Vec<f64>) {
    let (_, w) = count_weight(stats, criterion);
    match (target, criterion) {
        (Target::Classes { n_classes, .. }, _) => {
            values.extend(stats[..*n_classes].iter().map(|c| if w > 0.0 { c / w } else { 0.0 }));
        }
        (Target::Gradients { .. }, Criterion::Newton { lambda }) => {
            let h = stats[2] + lambda;
            values.push(if h > 0.0 { -stats[1] / h * scale } else { 0.0 });
        }
        _ => values.push(if w > 0.0 { stats[2] / w } else { 0.0 }),
    }
}
