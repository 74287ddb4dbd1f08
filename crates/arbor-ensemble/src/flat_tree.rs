//! Trees flattened for prediction (the kernels' [`FlatNode`] layout), built
//! once per model on first use and kept beside it.

use std::sync::OnceLock;

use arbor_kernels::{FlatNode, TreeNodes};
use rayon::prelude::*;

use crate::tree::{Node, SplitTest, Tree};

/// A tree in the traversal layout: children side by side, depth first.
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
}

impl FlatTree {
    /// Flattens `tree`.
    pub fn new(tree: &Tree) -> FlatTree {
        let n = tree.nodes.len();
        let depth = tree.shape().depth;
        let mut flat = FlatTree { nodes: vec![FlatNode::leaf(0, 0); n], depth, sets: None, tests: Vec::new() };
        // Depth first, left subtree first, each pair of children placed
        // together when their parent is: a path that keeps going left reads
        // consecutive memory, which deep trees that miss the cache need.
        let mut stack = vec![(0usize, 0u32)];
        let mut next_free = 1u32;
        while let Some((original, slot)) = stack.pop() {
            flat.nodes[slot as usize] = match &tree.nodes[original] {
                Node::Leaf { value } => FlatNode::leaf(slot, *value),
                Node::Split { feature, test, default_left, left, right } => {
                    let children = next_free;
                    next_free += 2;
                    stack.push((*right as usize, children + 1));
                    stack.push((*left as usize, children));
                    match test {
                        SplitTest::LessOrEqual(t) => FlatNode::split(*feature, *t, *default_left, children),
                        SplitTest::InCategories(set) => {
                            let sets = flat.sets.get_or_insert_with(Vec::new);
                            let offset = sets.len() as u32;
                            sets.extend_from_slice(set);
                            FlatNode::categories(*feature, offset, set.len() as u32, *default_left, children)
                        }
                        special => {
                            flat.tests.push(special.clone());
                            FlatNode::special(*feature, flat.tests.len() as u32 - 1, *default_left, children)
                        }
                    }
                }
            };
        }
        flat
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

/// The flattened trees of a model, built on first use. It is not part of the
/// model's identity: clones start empty and every cache compares equal.
#[derive(Default)]
pub(crate) struct FlatCache(OnceLock<Vec<FlatTree>>);

impl FlatCache {
    /// The flattened `trees`, building them the first time.
    pub fn get(&self, trees: &[Tree]) -> &[FlatTree] {
        self.0.get_or_init(|| trees.par_iter().map(FlatTree::new).collect())
    }
}

impl Clone for FlatCache {
    fn clone(&self) -> Self {
        FlatCache::default()
    }
}

impl PartialEq for FlatCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for FlatCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlatCache")
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
            prop_assert_eq!(flat.depth, tree.shape().depth);
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
