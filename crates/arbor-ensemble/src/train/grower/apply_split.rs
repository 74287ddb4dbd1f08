//! Applying a split (partitioning the node's rows, placing the threshold)
//! and making a leaf.

use arbor_kernels::{
    count_weight, node_value, partition_records, partition_row_bins, partition_rows, record_bin_range, Criterion,
    Monotone, SplitCandidate, SplitConstraints, SplitRule,
};

use rand::Rng;

use super::{bin_of, cart_midpoint, leaf_value, node_cover, Grower, Limits, Pending, PARALLEL_ROWS};
use crate::model::tree::{Node, SplitTest};

impl<'a, 't, R: Rng + Send> Grower<'a, 't, R> {
    /// Makes `p` a split node on feature `f`; returns its children, left then right.
    pub(super) fn split(
        &mut self,
        p: Pending,
        f: usize,
        split: SplitCandidate,
        node_hist: Option<Vec<f64>>,
    ) -> (Pending, Pending) {
        let (matrix, criterion) = (self.data.matrix, self.data.settings.criterion);
        let n_left = self.partition(p.start..p.end, f, &split.rule);
        let mid = p.start + n_left;
        let test = split_test(&split.rule, |bin| self.threshold(f, bin, p.start..mid, mid..p.end));
        let cover = node_cover(&p.stats, criterion);
        let left = place_split(&mut self.tree.nodes, &mut self.tree.cover, p.node, f, test, cover);
        self.tree.gains.push((f, split.gain.max(0.0)));
        let depth = p.depth + 1;
        let (left_limits, right_limits) = match p.limits {
            None => (None, None),
            Some(limits) => {
                let settings = self.data.settings;
                let on_f = settings.on_feature(&SplitConstraints::default(), f, limits.bounds).monotone;
                let (left, right) = on_f.children(&split.left, &split.right, criterion);
                let path = if settings.interactions.is_empty() { limits.path } else { limits.path.with(f) };
                let left = Limits { bounds: left, path: path.clone() };
                (Some(Box::new(left)), Some(Box::new(Limits { bounds: right, path })))
            }
        };
        let (mut left_hist, mut right_hist) = (None, None);
        if let Some(parent) = node_hist {
            let (nl, wl) = count_weight(&split.left, criterion);
            let (nr, wr) = count_weight(&split.right, criterion);
            let (want_left, want_right) = (self.may_split(nl, wl, depth), self.may_split(nr, wr, depth));
            if want_left || want_right {
                // Build the smaller child; the larger is the parent minus it.
                let left_smaller = n_left <= p.end - mid;
                let (small_rows, small_wanted, large_wanted) = if left_smaller {
                    (&self.rows[p.start..mid], want_left, want_right)
                } else {
                    (&self.rows[mid..p.end], want_right, want_left)
                };
                let small = self.buffers.layout.build(
                    matrix,
                    self.data.target,
                    small_rows,
                    self.data.weights,
                    self.data.counts,
                    self.data.rowwise,
                );
                let large = large_wanted.then(|| {
                    let mut large = parent;
                    large.iter_mut().zip(&small).for_each(|(l, s)| *l -= s);
                    large
                });
                let small = small_wanted.then_some(small);
                (left_hist, right_hist) = if left_smaller { (small, large) } else { (large, small) };
            }
        }
        (
            Pending {
                node: left,
                start: p.start,
                end: mid,
                depth,
                stats: split.left,
                hist: left_hist,
                limits: left_limits,
            },
            Pending {
                node: left + 1,
                start: mid,
                end: p.end,
                depth,
                stats: split.right,
                hist: right_hist,
                limits: right_limits,
            },
        )
    }

    /// Stably partitions the rows in `range` by `rule` on their bin of
    /// feature `f`; returns how many went left. A large node's two halves are
    /// partitioned in parallel, then the first half's right rows and the
    /// second half's left rows trade places: the same order as one pass.
    pub(super) fn partition(&mut self, range: std::ops::Range<usize>, f: usize, rule: &SplitRule) -> usize {
        if let Some(records) = self.records.as_mut() {
            // The rows themselves stay put: the records are what nodes read.
            let width = records.width();
            let records = records.records_mut(range);
            if records.len() < 2 * PARALLEL_ROWS * width {
                return partition_records(records, width, f, rule);
            }
            let half = records.len() / width / 2;
            let (first, second) = records.split_at_mut(half * width);
            let (left_first, left_second) =
                rayon::join(|| partition_records(first, width, f, rule), || partition_records(second, width, f, rule));
            records[left_first * width..(half + left_second) * width].rotate_left((half - left_first) * width);
            return left_first + left_second;
        }
        // Row-major bins when the histograms read them: the columns may be released.
        let (matrix, rowwise) = (self.data.matrix, self.data.rowwise);
        let part = |rows: &mut [u32], scratch: &mut [u32]| match rowwise {
            Some(rowwise) => partition_row_bins(rows, rowwise.bins, f, rule, scratch),
            None => partition_rows(rows, matrix.column(f), rule, scratch),
        };
        let scratch = &mut self.scratch[range.clone()];
        let rows = &mut self.rows[range];
        if rows.len() < 2 * PARALLEL_ROWS {
            return part(rows, scratch);
        }
        let half = rows.len() / 2;
        let (first, second) = rows.split_at_mut(half);
        let (scratch, second_scratch) = scratch.split_at_mut(half);
        let (left_first, left_second) = rayon::join(|| part(first, scratch), || part(second, second_scratch));
        rows[left_first..half + left_second].rotate_left(half - left_first);
        left_first + left_second
    }

    /// The raw threshold of a numeric split after value bin `bin`: the bin's
    /// upper edge, or with known bin ranges (exact splits), midway between
    /// the largest value sent left and the smallest sent right.
    pub(super) fn threshold(
        &self,
        f: usize,
        bin: u16,
        left: std::ops::Range<usize>,
        right: std::ops::Range<usize>,
    ) -> f64 {
        let mapper = self.data.matrix.mapper(f);
        let Some(ranges) = self.data.ranges.map(|r| &r[f]).filter(|r| !r.is_empty()) else {
            return mapper.threshold(bin);
        };
        let (last_left, first_right) = match &self.records {
            Some(records) => {
                let width = records.width();
                let last_left = record_bin_range(records.records(left), width, f).0;
                (u16::from(last_left), record_bin_range(records.records(right), width, f).1.map(u16::from))
            }
            None => {
                let bin = |r: &u32| self.bin(f, *r as usize);
                let last_left = self.rows[left].iter().map(bin).max().unwrap_or(0);
                (last_left, self.rows[right].iter().map(bin).filter(|&b| b > 0).min())
            }
        };
        match first_right {
            Some(first_right) if last_left > 0 => {
                cart_midpoint(ranges[last_left as usize].1, ranges[first_right as usize].0)
            }
            _ => mapper.threshold(bin),
        }
    }

    /// Row `r`'s bin of feature `f` (see [`bin_of`]).
    pub(super) fn bin(&self, f: usize, r: usize) -> u16 {
        bin_of(self.data.matrix, self.data.rowwise.map(|w| w.bins), f, r)
    }

    /// Makes `p` a leaf holding its class distribution or value.
    pub(super) fn leaf(&mut self, p: &Pending) {
        let offset = self.tree.values.len();
        self.tree.nodes[p.node] = Node::Leaf { value: offset as u32 };
        self.tree.cover[p.node] = node_cover(&p.stats, self.data.settings.criterion);
        let settings = self.data.settings;
        if settings.absolute_error {
            let median = self.median(p);
            self.tree.values.push(median);
        } else {
            leaf_value(&p.stats, self.data.target, settings.criterion, settings.leaf_scale, &mut self.tree.values);
        }
        if let Some(bounds) = p.limits.as_ref().map(|limits| &limits.bounds).filter(|b| **b != Monotone::NONE) {
            clamp_leaf(&mut self.tree.values[offset..], &p.stats, settings.criterion, settings.leaf_scale, bounds);
        }
        if self.records.is_none() {
            self.tree.leaves.push((offset, p.start..p.end));
        }
    }
}

/// Clamps a leaf's output (`value`: its value, or its two classes'
/// shares) into the range monotone constraints left its node
/// (docs/algorithms.md, "Monotone constraints"); a value inside is kept
/// to the bit.
fn clamp_leaf(value: &mut [f64], stats: &[f64], criterion: Criterion, scale: f64, bounds: &Monotone) {
    let v = node_value(stats, criterion);
    let clamped = bounds.clamp(v);
    if clamped == v {
        return;
    }
    match criterion {
        Criterion::Gini | Criterion::Entropy => {
            value[0] = 1.0 - clamped;
            value[1] = clamped;
        }
        Criterion::Newton { .. } => value[0] = clamped * scale,
        Criterion::Mse | Criterion::Poisson => value[0] = clamped,
    }
}

/// The test of a split by `rule` and where it sends missing values;
/// `threshold` gives a numeric split's raw threshold after its bin. Every
/// grower (single-node, level-wise) turns its splits into tests here.
pub(crate) fn split_test(rule: &SplitRule, threshold: impl FnOnce(u16) -> f64) -> (SplitTest, bool) {
    match rule {
        SplitRule::Threshold { bin, missing_left } => (SplitTest::LessOrEqual(threshold(*bin)), *missing_left),
        SplitRule::Categories { goes_left } => categories_test(goes_left),
    }
}

/// Makes leaf `node` of a tree's `nodes` a split on feature `f` by `test`,
/// its children two new leaves after every node (their cover 0 until they
/// are placed), and `node_cover` its cover; returns the left child's index,
/// the right one's next. Every grower places its splits here.
pub(crate) fn place_split(
    nodes: &mut Vec<Node>,
    cover: &mut Vec<f32>,
    node: usize,
    f: usize,
    (test, default_left): (SplitTest, bool),
    node_cover: f32,
) -> usize {
    let left = nodes.len();
    nodes.extend([Node::Leaf { value: 0 }, Node::Leaf { value: 0 }]);
    nodes[node] = Node::Split { feature: f as u32, test, default_left, left: left as u32, right: left as u32 + 1 };
    cover.extend([0.0, 0.0]);
    cover[node] = node_cover;
    left
}

/// The test of a categorical split that sends bins `b` with `goes_left[b]`
/// left, and where missing values go (bin 0's flag).
fn categories_test(goes_left: &[bool]) -> (SplitTest, bool) {
    let mut words = vec![0u64; goes_left.len().div_ceil(64)];
    for (b, _) in goes_left.iter().enumerate().skip(1).filter(|(_, &l)| l) {
        words[b / 64] |= 1 << (b % 64);
    }
    (SplitTest::InCategories(words), goes_left[0])
}
