//! A decision tree: split nodes with numeric or categorical tests, and leaves.

use serde::{Deserialize, Serialize};

/// LightGBM's zero: values within this distance of 0 count as zero (its `kZeroThreshold`, a 32-bit float).
pub const ZERO_THRESHOLD: f64 = 1e-35_f32 as f64;

/// Whether bit `b` of a category set (64 categories a word) is set; bits
/// past the words are clear.
#[inline]
pub(crate) fn has_bit(words: &[u64], b: usize) -> bool {
    words.get(b / 64).is_some_and(|w| w >> (b % 64) & 1 == 1)
}

/// The test of a split node: true sends the row left.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SplitTest {
    /// `x <= threshold`, on the raw value of a numeric feature.
    LessOrEqual(f64),
    /// Bit `b` set: category `b` goes left. For a categorical feature `b` is
    /// the category's 1-based bin; for a numeric feature holding integer
    /// category codes (imported LightGBM models) it is the value's integer
    /// part, and values of -1 or below go right.
    InCategories(Vec<u64>),
    /// LightGBM's zero-as-missing test: a value within [`ZERO_THRESHOLD`] of
    /// 0 goes left when `zero_left` (as missing values do); any other value
    /// goes left when `x <= threshold`.
    ZeroAsMissing {
        /// The threshold for non-zero values.
        threshold: f64,
        /// Where zeros go.
        zero_left: bool,
    },
}

impl SplitTest {
    /// The numeric threshold, for the tests that have one.
    pub fn threshold(&self) -> Option<f64> {
        match self {
            SplitTest::LessOrEqual(t) | SplitTest::ZeroAsMissing { threshold: t, .. } => Some(*t),
            SplitTest::InCategories(_) => None,
        }
    }

    /// Does a non-missing value `x` go left?
    #[inline]
    pub fn goes_left(&self, x: f64) -> bool {
        match self {
            SplitTest::LessOrEqual(t) => x <= *t,
            SplitTest::InCategories(words) => {
                let b = x as usize;
                x > -1.0 && has_bit(words, b)
            }
            SplitTest::ZeroAsMissing { threshold, zero_left } => {
                if x.abs() <= ZERO_THRESHOLD {
                    *zero_left
                } else {
                    x <= *threshold
                }
            }
        }
    }
}

/// One node of a tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// An internal node.
    Split {
        /// Index of the feature tested.
        feature: u32,
        /// The test.
        test: SplitTest,
        /// Where missing values (and unseen categories) go.
        default_left: bool,
        /// Index of the left child (always greater than this node's).
        left: u32,
        /// Index of the right child (always greater than this node's).
        right: u32,
    },
    /// A leaf.
    Leaf {
        /// Offset of the leaf's output in [`Tree::values`].
        value: u32,
    },
}

/// A binary decision tree; node 0 is the root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// The nodes; children always come after their parent.
    pub nodes: Vec<Node>,
    /// Leaf outputs: `value_len` numbers per leaf (class distribution or value).
    pub values: Vec<f64>,
}

/// Size and shape of a tree, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeShape {
    /// All nodes.
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Longest root-to-leaf path in edges.
    pub depth: usize,
}

impl Tree {
    /// Every split's right child comes right after its left one (true of
    /// every tree arbor grows or builds).
    pub(crate) fn siblings_adjacent(&self) -> bool {
        self.nodes
            .iter()
            .all(|node| !matches!(node, Node::Split { left, right, .. } if left.checked_add(1) != Some(*right)))
    }

    /// Offset of the leaf output reached by a row; `value(f)` is the row's value of feature `f`
    /// (NaN when missing).
    #[inline]
    pub fn leaf(&self, value: impl Fn(usize) -> f64) -> usize {
        match self.nodes[self.node_reached(value)] {
            Node::Leaf { value } => value as usize,
            Node::Split { .. } => unreachable!("the walk ends at a leaf"),
        }
    }

    /// Index of the leaf node a row reaches (see [`Tree::leaf`]): in a tree
    /// still growing, the node it waits in.
    #[inline]
    pub fn node_reached(&self, value: impl Fn(usize) -> f64) -> usize {
        self.node_reached_from(0, value)
    }

    /// [`Tree::node_reached`] for a row already known to be at node `start`.
    #[inline]
    pub fn node_reached_from(&self, start: usize, value: impl Fn(usize) -> f64) -> usize {
        let mut i = start;
        while let Some(next) = self.child(i, &value) {
            i = next;
        }
        i
    }

    /// The child of node `i` a row goes to, if `i` is a split.
    #[inline]
    pub fn child(&self, i: usize, value: impl Fn(usize) -> f64) -> Option<usize> {
        let Node::Split { feature, test, default_left, left, right } = &self.nodes[i] else { return None };
        let x = value(*feature as usize);
        let go_left = if x.is_nan() { *default_left } else { test.goes_left(x) };
        Some(if go_left { *left } else { *right } as usize)
    }

    /// Node count, leaf count and depth.
    pub fn shape(&self) -> TreeShape {
        let mut depth = vec![0usize; self.nodes.len()];
        let mut shape = TreeShape { nodes: self.nodes.len(), leaves: 0, depth: 0 };
        for (i, node) in self.nodes.iter().enumerate() {
            match node {
                Node::Leaf { .. } => {
                    shape.leaves += 1;
                    shape.depth = shape.depth.max(depth[i]);
                }
                Node::Split { left, right, .. } => {
                    depth[*left as usize] = depth[i] + 1;
                    depth[*right as usize] = depth[i] + 1;
                }
            }
        }
        shape
    }

    /// Checks the structure so traversal can never go out of bounds or loop:
    /// children after parents and in range, leaf outputs in range, features below `n_features`.
    pub fn validate(&self, n_features: usize, value_len: usize) -> Result<(), String> {
        let n = self.nodes.len();
        rules::has_nodes(n)?;
        let mut parents = vec![0u32; n];
        for (i, node) in self.nodes.iter().enumerate() {
            match node {
                Node::Leaf { value } => {
                    rules::leaf_in_values(i, Some(*value as usize), value_len, self.values.len())?;
                }
                Node::Split { feature, left, right, .. } => {
                    rules::feature_exists(i, *feature as usize, n_features)?;
                    for &c in [left, right] {
                        rules::child_after(i, c as usize, n, left != right)?;
                        parents[c as usize] += 1;
                    }
                }
            }
        }
        if let Some(i) = parents.iter().skip(1).position(|&p| p != 1) {
            return Err(format!("node {} has {} parents", i + 1, parents[i + 1]));
        }
        Ok(())
    }
}

/// The rules a tree's nodes obey in every form, one function each, so that
/// node lists ([`Tree::validate`]) and flat trees
/// ([`crate::model::flat_tree::FlatTree::check`]) report a broken rule in the
/// same words.
pub(crate) mod rules {
    /// A tree has a node (its root).
    pub(crate) fn has_nodes(n: usize) -> Result<(), String> {
        if n == 0 {
            return Err("a tree has no nodes".into());
        }
        Ok(())
    }

    /// Leaf `i`'s `width` values, from offset `value` (`None`: the leaf
    /// points nowhere), lie within the tree's `n_values`.
    pub(crate) fn leaf_in_values(i: usize, value: Option<usize>, width: usize, n_values: usize) -> Result<(), String> {
        match value {
            Some(value) if value + width <= n_values => Ok(()),
            _ => Err(format!("leaf {i} points past the tree's values")),
        }
    }

    /// Split `i` tests one of the model's `n_features` features.
    pub(crate) fn feature_exists(i: usize, feature: usize, n_features: usize) -> Result<(), String> {
        if feature >= n_features {
            return Err(format!("node {i} tests feature {feature}, but the model has {n_features}"));
        }
        Ok(())
    }

    /// Child `c` of split `i` comes after it among the tree's `n` nodes
    /// (and, when not `distinct`, is its other child too).
    pub(crate) fn child_after(i: usize, c: usize, n: usize, distinct: bool) -> Result<(), String> {
        if c <= i || c >= n || !distinct {
            return Err(format!("node {i} has an invalid child {c}"));
        }
        Ok(())
    }
}
