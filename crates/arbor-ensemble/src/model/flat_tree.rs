//! Trees in the traversal layout (the kernels' [`FlatNode`]s), the form
//! model files load into. Prediction walks it when the trees over ranks
//! ([`crate::model::ranked_forest`]) cannot express a model's splits, and builds
//! those from it otherwise.

use arbor_kernels::{FlatNode, TreeNodes};
use arbor_quantize::FeatureType;

use crate::model::feature::Feature;
use crate::model::tree::{rules, Node, SplitTest, Tree, TreeShape};

/// A tree in the traversal layout: the two children of a split side by side.
#[derive(Clone, Debug)]
pub(crate) struct FlatTree {
    /// The nodes; node 0 is the root.
    pub nodes: Vec<FlatNode>,
    /// Longest root-to-leaf path.
    pub depth: usize,
    /// The words of the [`FlatNode::CATEGORIES`] splits' sets; `None` when
    /// the tree has no such split.
    pub sets: Option<Vec<u64>>,
    /// The tests of [`FlatNode::SPECIAL`] splits (LightGBM's zero as missing).
    pub tests: Vec<SplitTest>,
    /// Leaf outputs, as [`Tree::values`].
    pub values: Vec<f64>,
}

impl FlatTree {
    /// Flattens `tree`, a valid tree ([`Tree::validate`]). When each split's
    /// right child follows its left one, as in every tree arbor grows or
    /// builds, node `i` stays node `i`, so [`FlatTree::to_tree`] gives `tree`
    /// back. Other trees are laid out depth first, left subtree first, each
    /// pair of children placed together when their parent is: a path that
    /// keeps going left reads consecutive memory.
    pub fn new(tree: &Tree) -> FlatTree {
        let n = tree.nodes.len();
        let depth = tree.shape().depth;
        let mut flat = FlatTree {
            nodes: Vec::with_capacity(n),
            depth,
            sets: None,
            tests: Vec::new(),
            values: tree.values.clone(),
        };
        if tree.siblings_adjacent() {
            for (i, node) in tree.nodes.iter().enumerate() {
                let flat_node = flat.node(i as u32, node, |left| left);
                flat.nodes.push(flat_node);
            }
            return flat;
        }
        flat.nodes.resize(n, FlatNode::leaf(0, 0));
        let mut stack = vec![(0usize, 0u32)];
        let mut next_free = 1u32;
        while let Some((original, slot)) = stack.pop() {
            let node = &tree.nodes[original];
            flat.nodes[slot as usize] = flat.node(slot, node, |_| next_free);
            if let Node::Split { left, right, .. } = node {
                stack.push((*right as usize, next_free + 1));
                stack.push((*left as usize, next_free));
                next_free += 2;
            }
        }
        flat
    }

    /// `node` as the flat node at `slot`, its children placed at `children(left)`
    /// and the next slot; category sets and special tests are appended.
    fn node(&mut self, slot: u32, node: &Node, children: impl FnOnce(u32) -> u32) -> FlatNode {
        match node {
            Node::Leaf { value } => FlatNode::leaf(slot, *value),
            Node::Split { feature, test, default_left, left, .. } => {
                let children = children(*left);
                match test {
                    SplitTest::LessOrEqual(t) => FlatNode::split(*feature, *t, *default_left, children),
                    SplitTest::InCategories(set) => {
                        let sets = self.sets.get_or_insert_with(Vec::new);
                        let offset = sets.len() as u32;
                        sets.extend_from_slice(set);
                        FlatNode::categories(*feature, offset, set.len() as u32, *default_left, children)
                    }
                    special => {
                        self.tests.push(special.clone());
                        FlatNode::special(*feature, self.tests.len() as u32 - 1, *default_left, children)
                    }
                }
            }
        }
    }

    /// The tree as node lists, numbered as here (a split's children are
    /// `next` and `next + 1`).
    pub fn to_tree(&self) -> Tree {
        let nodes = self
            .nodes
            .iter()
            .map(|node| {
                if node.word & FlatNode::LEAF != 0 {
                    return Node::Leaf { value: node.value() };
                }
                let test = if node.word & FlatNode::SPECIAL != 0 {
                    self.tests[node.threshold as usize].clone()
                } else if node.word & FlatNode::CATEGORIES != 0 {
                    let (offset, len) = node.category_words();
                    SplitTest::InCategories(self.sets.as_deref().unwrap_or_default()[offset..offset + len].to_vec())
                } else {
                    SplitTest::LessOrEqual(node.threshold)
                };
                Node::Split {
                    feature: node.word & FlatNode::FEATURE_MASK,
                    test,
                    default_left: node.word & FlatNode::DEFAULT_LEFT != 0,
                    left: node.next,
                    right: node.next + 1,
                }
            })
            .collect();
        Tree { nodes, values: self.values.clone() }
    }

    /// Checks a tree from untrusted bytes so that traversal can never go out
    /// of bounds or loop, and returns its depth: children come after their
    /// parent and every node but the root has exactly one parent; features
    /// exist; categorical features are tested by category sets; thresholds
    /// are numbers; leaves, sets and special tests point inside their arrays.
    pub fn check(&self, features: &[Feature], leaf_width: usize) -> Result<usize, String> {
        let n = self.nodes.len();
        rules::has_nodes(n)?;
        // 1 + the node's depth, 0 until its parent is seen.
        let mut depth = vec![0u32; n];
        depth[0] = 1;
        let mut deepest = 1;
        let n_set_words = self.sets.as_ref().map_or(0, Vec::len);
        for (i, node) in self.nodes.iter().enumerate() {
            let here = depth[i];
            if here == 0 {
                return Err(format!("node {i} has no parent"));
            }
            if node.word & FlatNode::LEAF != 0 {
                let value = node.value() as usize;
                // A flat leaf's `next` is itself; any other points nowhere.
                let value = (node.next as usize == i).then_some(value);
                rules::leaf_in_values(i, value, leaf_width, self.values.len())?;
                deepest = deepest.max(here);
                continue;
            }
            let feature = (node.word & FlatNode::FEATURE_MASK) as usize;
            rules::feature_exists(i, feature, features.len())?;
            let f = &features[feature];
            let categories = node.word & FlatNode::CATEGORIES != 0;
            if f.kind == FeatureType::Categorical && !categories {
                return Err(format!("node {i}: a split does not fit the type of its feature"));
            }
            let threshold_nan = if node.word & FlatNode::SPECIAL != 0 {
                let test = self.tests.get(node.threshold as usize).ok_or_else(|| format!("node {i} has no test"))?;
                test.threshold().is_some_and(f64::is_nan)
            } else if categories {
                let (offset, len) = node.category_words();
                if offset + len > n_set_words {
                    return Err(format!("node {i}'s category set runs past the tree's sets"));
                }
                false
            } else {
                node.threshold.is_nan()
            };
            if threshold_nan {
                return Err(format!("node {i}: a split has a NaN threshold"));
            }
            let left = node.next as usize;
            // The children are `left` and `left + 1`: both among the `n` nodes.
            rules::child_after(i, left, n - 1, true)?;
            for child in [left, left + 1] {
                if depth[child] != 0 {
                    return Err(format!("node {child} has 2 parents"));
                }
                depth[child] = here + 1;
            }
        }
        Ok(deepest as usize - 1)
    }

    /// Node count, leaf count and depth.
    pub fn shape(&self) -> TreeShape {
        let leaves = self.nodes.iter().filter(|n| n.word & FlatNode::LEAF != 0).count();
        TreeShape { nodes: self.nodes.len(), leaves, depth: self.depth }
    }

    /// The tree as the traversal kernel reads it.
    pub fn view(&self) -> TreeNodes<'_> {
        TreeNodes { nodes: &self.nodes, depth: self.depth, sets: self.sets.as_deref() }
    }

    /// Does `x` go left at special test `test`?
    #[inline]
    pub fn special(&self, test: u32, x: f64) -> bool {
        self.tests[test as usize].goes_left(x)
    }
}

#[cfg(test)]
mod tests {
    use arbor_kernels::{leaves_block, LEVEL_BY_LEVEL_MAX_DEPTH};

    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// A random tree over `n_features` features with every kind of test (or
    /// `x <= t` only, without `special`),
    /// children numbered in depth-first order (not the flat layout's).
    fn random_tree(seed: u64, n_features: u32, max_depth: usize, special: bool) -> Tree {
        let grow_special = special;
        #[rustfmt::skip]
        fn grow(rng: &mut ChaCha8Rng, nodes: &mut Vec<Node>, values: &mut Vec<f64>, depth: usize, n_features: u32, special: bool) {
            let at = nodes.len();
            if depth == 0 || nodes.len() > 4000 || rng.random_bool(0.25) {
                values.push(values.len() as f64);
                nodes.push(Node::Leaf { value: values.len() as u32 - 1 });
                return;
            }
            let test = match rng.random_range(0..4) {
                0 if special => SplitTest::InCategories((0..rng.random_range(0..3)).map(|_| rng.random()).collect()),
                1 if special => SplitTest::ZeroAsMissing { threshold: rng.random_range(-2.0..2.0), zero_left: rng.random() },
                _ => SplitTest::LessOrEqual(rng.random_range(-2.0..2.0)),
            };
            let feature = rng.random_range(0..n_features);
            let default_left = rng.random();
            nodes.push(Node::Leaf { value: 0 });
            grow(rng, nodes, values, depth - 1, n_features, special);
            let right = nodes.len() as u32;
            grow(rng, nodes, values, depth - 1, n_features, special);
            nodes[at] = Node::Split { feature, test, default_left, left: at as u32 + 1, right };
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut nodes, mut values) = (Vec::new(), Vec::new());
        grow(&mut rng, &mut nodes, &mut values, max_depth, n_features, grow_special);
        Tree { nodes, values }
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            -3.0..3.0f64,
            Just(f64::NAN),
            Just(0.0),
            Just(-0.0),
            Just(1e-36),
            Just(-1.0),
            (0u8..140).prop_map(f64::from),
            -1.5..0.0f64,
        ]
    }

    proptest! {
        /// The flat, batched traversal reaches the leaf the tree's own walk
        /// reaches, level by level and row by row, for every kind of test.
        #[test]
        fn flat_traversal_reaches_the_same_leaf(
            seed: u64,
            deep: bool,
            special: bool,
            rows in proptest::collection::vec(proptest::collection::vec(value(), 3), 1..80),
        ) {
            let max_depth = if deep { LEVEL_BY_LEVEL_MAX_DEPTH + 4 } else { 6 };
            let tree = random_tree(seed, 3, max_depth, special);
            let flat = FlatTree::new(&tree);
            prop_assert_eq!(flat.shape(), tree.shape());
            let row_major: Vec<f64> = rows.iter().flatten().copied().collect();
            let mut leaves = vec![0u32; rows.len()];
            // as prediction calls it: the lean walks when the block allows them
            let special = |t, x| flat.special(t, x);
            let special = (!flat.tests.is_empty()).then_some(&special);
            let missing = row_major.iter().any(|x| x.is_nan());
            leaves_block(flat.view(), &row_major, 3, missing, special, &mut leaves);
            for (row, leaf) in rows.iter().zip(&leaves) {
                prop_assert_eq!(flat.nodes[*leaf as usize].value() as usize, tree.leaf(|f| row[f]));
            }
        }
    }
}
