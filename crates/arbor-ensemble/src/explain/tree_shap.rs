//! Exact TreeSHAP on one tree (Lundberg, Erion and Lee, "Consistent
//! individualized feature attribution for tree ensembles", Algorithm 2).
//!
//! A feature's Shapley value averages, over the subsets of the other
//! features, what knowing it adds to the tree's expected output given the
//! subset. TreeSHAP gets every feature's value from one walk: it follows the
//! row's own ("hot") branch and the other ("cold") one at every split,
//! carrying the path of distinct features met so far with, for each, the
//! share of the training weight that reached the branch taken (`zero`: the
//! feature unknown) and whether the row goes that way (`one`: the feature
//! known), and the weights of the path's subsets by size. A feature met
//! twice on a path is taken out of the path first and met once, with both
//! splits' fractions multiplied. Absent features follow both branches in
//! proportion to their cover, so missing values need nothing apart: the
//! row's branch is the split's default one.

use crate::model::tree::{Node, SplitTest, Tree};

/// A split node's feature is below this; leaves hold it.
pub(super) const LEAF: u32 = u32::MAX;
/// A split with the plain `x <= threshold` test.
const PLAIN: u32 = u32::MAX;

/// One node as the walk reads it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ShapNode {
    /// The feature tested, or [`LEAF`].
    pub(super) feature: u32,
    /// Children (splits); for a leaf, `left` is the offset of its values.
    pub(super) left: u32,
    pub(super) right: u32,
    threshold: f64,
    /// [`PLAIN`], or the index of the split's test in [`ShapTree::tests`].
    test: u32,
    default_left: bool,
    /// The children's covers over this node's (0 when this node has none).
    pub(super) left_share: f64,
    pub(super) right_share: f64,
}

/// A tree laid out for TreeSHAP, with the values it explains.
#[derive(Clone, Debug)]
pub(crate) struct ShapTree {
    pub(super) nodes: Vec<ShapNode>,
    /// `width` values per leaf.
    pub(super) values: Vec<f64>,
    pub(super) width: usize,
    /// Tests other than `x <= threshold`.
    tests: Vec<SplitTest>,
    /// The longest root-to-leaf path, in edges.
    depth: usize,
    /// The tree's expected output (its leaves weighed by cover), `width` values.
    expected: Vec<f64>,
}

/// One distinct feature on the path from the root.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Step {
    pub(super) feature: u32,
    /// The share of training weight that took the path's branches on this feature.
    zero: f64,
    /// 1 when the row takes them all, else 0.
    one: f64,
    /// The weight of the subsets of this step's size (see [`extend`]).
    weight: f64,
}

impl ShapTree {
    /// Lays `tree` out with its node `cover`s; `leaf_values(stored, out)`
    /// turns a leaf's `stored` values (`leaf_width` of them) into the
    /// `width` values explained, appended to `out`.
    pub(crate) fn new(
        tree: &Tree,
        cover: &[f32],
        leaf_width: usize,
        width: usize,
        leaf_values: impl Fn(&[f64], &mut Vec<f64>),
    ) -> Self {
        let share = |child: u32, parent: f32| {
            if parent > 0.0 {
                f64::from(cover[child as usize]) / f64::from(parent)
            } else {
                0.0
            }
        };
        let mut tests = Vec::new();
        let mut values = Vec::new();
        let nodes = tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| match node {
                Node::Leaf { value } => {
                    let offset = values.len() as u32;
                    let at = *value as usize;
                    leaf_values(&tree.values[at..at + leaf_width], &mut values);
                    debug_assert_eq!(values.len(), offset as usize + width);
                    ShapNode {
                        feature: LEAF,
                        left: offset,
                        right: 0,
                        threshold: 0.0,
                        test: PLAIN,
                        default_left: false,
                        left_share: 0.0,
                        right_share: 0.0,
                    }
                }
                Node::Split { feature, test, default_left, left, right } => {
                    let (threshold, test) = match test {
                        SplitTest::LessOrEqual(t) => (*t, PLAIN),
                        other => {
                            tests.push(other.clone());
                            (0.0, tests.len() as u32 - 1)
                        }
                    };
                    ShapNode {
                        feature: *feature,
                        left: *left,
                        right: *right,
                        threshold,
                        test,
                        default_left: *default_left,
                        left_share: share(*left, cover[i]),
                        right_share: share(*right, cover[i]),
                    }
                }
            })
            .collect();
        let mut tree = ShapTree { nodes, values, width, tests, depth: tree.shape().depth, expected: Vec::new() };
        let mut expected = vec![0.0; width];
        tree.expectation(0, 1.0, &mut expected);
        tree.expected = expected;
        tree
    }

    /// The tree's expected output, `width` values: what it predicts when no
    /// feature is known.
    pub(crate) fn expected(&self) -> &[f64] {
        &self.expected
    }

    /// Path steps a walk of this tree needs (see [`ShapTree::explain`]).
    pub(crate) fn path_len(&self) -> usize {
        (self.depth + 2) * (self.depth + 3) / 2
    }

    /// Adds `share` times the expected output under `node` to `out`.
    fn expectation(&self, node: usize, share: f64, out: &mut [f64]) {
        let n = self.nodes[node];
        if n.feature == LEAF {
            let values = &self.values[n.left as usize..n.left as usize + self.width];
            out.iter_mut().zip(values).for_each(|(o, v)| *o += share * v);
        } else {
            self.expectation(n.left as usize, share * n.left_share, out);
            self.expectation(n.right as usize, share * n.right_share, out);
        }
    }

    /// Does the row, whose feature values are `x` (NaN when missing), go
    /// left at split `n`?
    #[inline]
    pub(super) fn goes_left(&self, n: &ShapNode, x: &[f64]) -> bool {
        let v = x[n.feature as usize];
        if v.is_nan() {
            n.default_left
        } else if n.test == PLAIN {
            v <= n.threshold
        } else {
            self.tests[n.test as usize].goes_left(v)
        }
    }

    /// Adds each feature's contribution to this tree's output for the row
    /// `x` into `phi`: output `k`'s contribution of feature `f` at
    /// `phi[k * stride + f]`. `path` holds at least [`ShapTree::path_len`]
    /// steps and `inverse` the reciprocals `1/k` up to `k = depth + 2` (see [`reciprocals`]).
    pub(crate) fn explain(&self, x: &[f64], path: &mut [Step], inverse: &[f64], phi: &mut [f64], stride: usize) {
        let mut walk = Walk { x, inverse, phi, stride };
        self.visit(0, &mut walk, path, 0, (1.0, 1.0, LEAF));
    }

    /// Visits `node`: the path so far is `path[..len]`; it is extended by the
    /// branch into this node, taken by `share` of the training weight and by
    /// the row when `one` is 1, on `feature`. Each child works on a copy of
    /// the path placed after this one.
    fn visit(&self, node: usize, walk: &mut Walk<'_>, path: &mut [Step], len: usize, step: (f64, f64, u32)) {
        let (zero, one, feature) = step;
        extend(&mut path[..=len], zero, one, feature, walk.inverse);
        let len = len + 1;
        let n = self.nodes[node];
        if n.feature == LEAF {
            let values = &self.values[n.left as usize..n.left as usize + self.width];
            // Step 0 stands for the root, no feature.
            for i in 1..len {
                let step = path[i];
                let scale = unwound_sum(&path[..len], i, walk.inverse) * (step.one - step.zero);
                for (k, v) in values.iter().enumerate() {
                    walk.phi[k * walk.stride + step.feature as usize] += scale * v;
                }
            }
            return;
        }
        let (hot, cold, hot_share, cold_share) = if self.goes_left(&n, walk.x) {
            (n.left, n.right, n.left_share, n.right_share)
        } else {
            (n.right, n.left, n.right_share, n.left_share)
        };
        // A feature already on the path leaves it, to come back once with
        // both splits' fractions.
        let (mut seen_zero, mut seen_one, mut kept) = (1.0, 1.0, len);
        if let Some(i) = (1..len).find(|&i| path[i].feature == n.feature) {
            (seen_zero, seen_one) = (path[i].zero, path[i].one);
            unwind(&mut path[..len], i, walk.inverse);
            kept = len - 1;
        }
        let (here, next) = path.split_at_mut(len);
        for (child, share, one) in [(hot, hot_share, seen_one), (cold, cold_share, 0.0)] {
            let zero = seen_zero * share;
            // Neither the training weight nor the row reaches the child:
            // every subset's weight there is 0, and it adds nothing.
            if zero == 0.0 && one == 0.0 {
                continue;
            }
            next[..kept].copy_from_slice(&here[..kept]);
            self.visit(child as usize, walk, next, kept, (zero, one, n.feature));
        }
    }
}

/// What a walk of one tree for one row reads and adds to.
struct Walk<'a> {
    /// The row's feature values.
    x: &'a [f64],
    /// `inverse[k] = 1/k`.
    inverse: &'a [f64],
    /// The row's contributions.
    phi: &'a mut [f64],
    /// Values per output in `phi`.
    stride: usize,
}

/// `1/k` for `k` in `0..=n` (`inverse[0]` unused): the walk multiplies by
/// them where the algorithm divides by path positions.
pub(crate) fn reciprocals(n: usize) -> Vec<f64> {
    (0..=n).map(|k| if k == 0 { 0.0 } else { 1.0 / k as f64 }).collect()
}

/// Adds a step (`zero`, `one`, `feature`) to the path `path[..n]`, which
/// becomes `path[..=n]`, updating the weights of the subsets by size: a
/// subset of size `s` of the path's features weighs `s!(d - s - 1)!/d!`
/// times the product of the `one`s of its features and the `zero`s of the others.
#[inline]
pub(super) fn extend(path: &mut [Step], zero: f64, one: f64, feature: u32, inverse: &[f64]) {
    let n = path.len() - 1;
    path[n] = Step { feature, zero, one, weight: if n == 0 { 1.0 } else { 0.0 } };
    let by_d = inverse[n + 1];
    for i in (0..n).rev() {
        path[i + 1].weight += one * path[i].weight * (i + 1) as f64 * by_d;
        path[i].weight = zero * path[i].weight * (n - i) as f64 * by_d;
    }
}

/// Takes step `i` out of the path, undoing its [`extend`]. A step's `one`
/// is 1 or 0: the row takes all of its feature's branches, or not.
fn unwind(path: &mut [Step], i: usize, inverse: &[f64]) {
    let last = path.len() - 1;
    let Step { zero, one, .. } = path[i];
    let d = (last + 1) as f64;
    let by_d = inverse[last + 1];
    if one != 0.0 {
        let mut next = path[last].weight;
        for j in (0..last).rev() {
            let w = path[j].weight;
            path[j].weight = next * d * inverse[j + 1];
            next = w - path[j].weight * zero * (last - j) as f64 * by_d;
        }
    } else {
        let scale = d / zero;
        for j in (0..last).rev() {
            path[j].weight *= scale * inverse[last - j];
        }
    }
    for j in i..last {
        let Step { feature, zero, one, .. } = path[j + 1];
        path[j] = Step { feature, zero, one, weight: path[j].weight };
    }
}

/// The total weight of the path with step `i` unwound, without unwinding it.
#[inline]
pub(super) fn unwound_sum(path: &[Step], i: usize, inverse: &[f64]) -> f64 {
    let last = path.len() - 1;
    let Step { zero, one, .. } = path[i];
    let d = (last + 1) as f64;
    let mut total = 0.0;
    if one != 0.0 {
        let by_d = inverse[last + 1];
        let mut next = path[last].weight;
        for j in (0..last).rev() {
            let w = next * d * inverse[j + 1];
            total += w;
            next = path[j].weight - w * zero * (last - j) as f64 * by_d;
        }
    } else {
        let scale = d / zero;
        for j in (0..last).rev() {
            total += path[j].weight * inverse[last - j];
        }
        total *= scale;
    }
    total
}
