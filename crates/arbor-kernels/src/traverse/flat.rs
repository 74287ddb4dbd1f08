//! Batched tree traversal for prediction.
//!
//! A tree is flattened into 16-byte [`FlatNode`]s, depth first, with the
//! two children of a node side by side, so a step is one load and a
//! `next + goes_right`. Rows go through a tree a block at a time, so their
//! independent chains of loads overlap instead of waiting on each other:
//! trees up to [`LEVEL_BY_LEVEL_MAX_DEPTH`] deep advance every row of the
//! block one level per pass (leaves absorb the rows that reach them); deeper
//! trees keep a few dozen rows in flight, each walking to its own leaf and
//! handing its lane to the next row, so a row costs its own depth rather
//! than the block's deepest. Category sets are tested in the walk itself
//! (their words beside the nodes), and blocks without missing values or
//! trees without category or special splits take leaner monomorphized walks.
//! [`crate::ranked_leaves_block`] walks the same trees in a compact form
//! (8-byte nodes over ranks), which prediction prefers when a model allows it.

use crate::traverse::nodes::{FlatNode, TreeNodes, LEVEL_BY_LEVEL_MAX_DEPTH};

impl FlatNode {
    /// The node a row with value `x` moves to (itself for a leaf). `MISSING`:
    /// `x` may be NaN; `CATEGORIES`: the node may test a category set (its
    /// words in `sets`); `SPECIAL`: the node may be a special split. The set
    /// test is inline: a branch-free pick between it and the numeric test
    /// measured slower than this well-predicted branch.
    #[inline(always)]
    fn step<const MISSING: bool, const CATEGORIES: bool, const SPECIAL: bool>(
        self,
        x: f64,
        sets: &[u64],
        special: &impl Fn(u32, f64) -> bool,
    ) -> u32 {
        let default_right = self.word & Self::DEFAULT_LEFT == 0;
        let goes_right = if SPECIAL && self.word & Self::SPECIAL != 0 {
            if x.is_nan() {
                default_right
            } else {
                !special(self.threshold as u32, x)
            }
        } else {
            let right = if CATEGORIES && self.word & Self::CATEGORIES != 0 {
                let packed = self.threshold.to_bits();
                // Truncates toward zero like the tree's own test (NaN gives 0,
                // and is dealt with below).
                let code = x as i64;
                let word = (code as u64) >> 6;
                let inside = code >= 0 && word < packed >> 32;
                !(inside && sets[packed as u32 as usize + word as usize] >> (code & 63) & 1 == 1)
            } else {
                // NaN compares false: it goes right only when the default is right.
                x > self.threshold
            };
            if MISSING {
                let nan = x.is_nan();
                (right & !nan) | (nan & default_right)
            } else {
                right
            }
        };
        self.next + goes_right as u32
    }
}

/// Past this depth, the level-by-level walk stops as soon as every row of the
/// block sits on a leaf (checked every few levels).
const EARLY_EXIT_DEPTH: usize = 8;

/// The leaf reached by each row of a block: `rows` holds `n_features` values
/// per row (row-major, NaN for missing); `leaves` gets one node index per row.
/// `missing`: some value may be NaN (false allows a faster walk).
/// `special(test, x)` decides the [`FlatNode::SPECIAL`] splits; `None` when
/// the tree has none.
pub fn leaves_block<S: Fn(u32, f64) -> bool>(
    tree: TreeNodes<'_>,
    rows: &[f64],
    n_features: usize,
    missing: bool,
    special: Option<&S>,
    leaves: &mut [u32],
) {
    debug_assert_eq!(rows.len(), leaves.len() * n_features);
    let none = |_: u32, _: f64| -> bool { unreachable!("the tree has no special splits") };
    macro_rules! walk {
        ($missing:literal, $categories:literal, $special:literal, $test:expr) => {
            crate::dispatch::run(Walk::<$missing, $categories, $special, _> {
                tree,
                rows,
                n_features,
                special: $test,
                leaves,
            })
        };
    }
    match (missing, tree.sets.is_some(), special) {
        (false, false, None) => walk!(false, false, false, &none),
        (true, false, None) => walk!(true, false, false, &none),
        (false, true, None) => walk!(false, true, false, &none),
        (true, true, None) => walk!(true, true, false, &none),
        (_, _, Some(special)) => walk!(true, true, true, special),
    }
}

/// One block's walk through one tree, as a kernel of the dispatch seam.
struct Walk<'a, const MISSING: bool, const CATEGORIES: bool, const SPECIAL: bool, S> {
    tree: TreeNodes<'a>,
    rows: &'a [f64],
    n_features: usize,
    special: &'a S,
    leaves: &'a mut [u32],
}

impl<const MISSING: bool, const CATEGORIES: bool, const SPECIAL: bool, S: Fn(u32, f64) -> bool> pulp::WithSimd
    for Walk<'_, MISSING, CATEGORIES, SPECIAL, S>
{
    type Output = ();

    #[inline(always)]
    fn with_simd<Sd: pulp::Simd>(self, _simd: Sd) {
        let Walk { tree, rows, n_features, special, leaves } = self;
        walk::<MISSING, CATEGORIES, SPECIAL>(tree, rows, n_features, special, leaves);
    }
}

#[inline(always)]
fn walk<const MISSING: bool, const CATEGORIES: bool, const SPECIAL: bool>(
    tree: TreeNodes<'_>,
    rows: &[f64],
    n_features: usize,
    special: &impl Fn(u32, f64) -> bool,
    leaves: &mut [u32],
) {
    let TreeNodes { nodes, depth, sets } = tree;
    let sets = sets.unwrap_or_default();
    // With no category sets, `sets` is never read: CATEGORIES is false.
    let step = |node: FlatNode, x: f64| node.step::<MISSING, CATEGORIES, SPECIAL>(x, sets, special);
    let value = |row: usize, node: FlatNode| rows[row * n_features + (node.word & FlatNode::FEATURE_MASK) as usize];
    if depth <= LEVEL_BY_LEVEL_MAX_DEPTH {
        // Every row advances one level per pass: the rows' loads overlap.
        leaves.fill(0);
        for level in 0..depth {
            for (row, pos) in leaves.iter_mut().enumerate() {
                let node = nodes[*pos as usize];
                *pos = step(node, value(row, node));
            }
            if level >= EARLY_EXIT_DEPTH
                && level % 4 == 0
                && leaves.iter().all(|&p| nodes[p as usize].word & FlatNode::LEAF != 0)
            {
                break;
            }
        }
    } else {
        // Deep trees: LANES rows walk side by side, each to its own leaf, and
        // a lane that lands on a leaf takes the next row at once, so each row
        // costs its own depth (not the block's deepest) while the lanes'
        // independent loads still overlap.
        let n = leaves.len();
        let mut row_of: [usize; LANES] = std::array::from_fn(|lane| lane);
        let mut at = [0u32; LANES];
        let mut active = n.min(LANES);
        let mut next_row = active;
        while active > 0 {
            let mut lane = 0;
            while lane < active {
                let node = nodes[at[lane] as usize];
                if node.word & FlatNode::LEAF != 0 {
                    leaves[row_of[lane]] = at[lane];
                    if next_row < n {
                        row_of[lane] = next_row;
                        at[lane] = 0;
                        next_row += 1;
                    } else {
                        active -= 1;
                        row_of[lane] = row_of[active];
                        at[lane] = at[active];
                        continue;
                    }
                } else {
                    let next = step(node, value(row_of[lane], node));
                    // Wanted again only after every other lane's step: the
                    // miss is hidden behind them instead of stalling this one.
                    crate::dispatch::prefetch(nodes, next as usize);
                    at[lane] = next;
                }
                lane += 1;
            }
        }
    }
}

/// Rows in flight at once in the walk of deep trees.
const LANES: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    /// x0 <= 1 ? (x1 <= 5 ? leaf 3 : leaf 4) : leaf 2, with NaN of x0 right and of x1 left.
    fn tree() -> Vec<FlatNode> {
        vec![
            FlatNode::split(0, 1.0, false, 1),
            FlatNode::split(1, 5.0, true, 3),
            FlatNode::leaf(2, 20),
            FlatNode::leaf(3, 30),
            FlatNode::leaf(4, u32::MAX),
        ]
    }

    #[test]
    fn both_walks_reach_the_same_leaves() {
        let rows = [0.0, 0.0, 0.0, 9.0, 2.0, 0.0, f64::NAN, 0.0, 0.5, f64::NAN, 1.0, 5.0];
        let none: Option<&fn(u32, f64) -> bool> = None;
        let nodes = tree();
        let at_depth = |depth| TreeNodes { nodes: &nodes, depth, sets: None };
        let mut shallow = [0u32; 6];
        leaves_block(at_depth(2), &rows, 2, true, none, &mut shallow);
        assert_eq!(shallow, [3, 4, 2, 2, 3, 3]);
        let values: Vec<u32> = shallow.iter().map(|&l| tree()[l as usize].value()).collect();
        assert_eq!(values, [30, u32::MAX, 20, 20, 30, 30]);
        // the same tree walked row by row
        let mut deep = [0u32; 6];
        leaves_block(at_depth(LEVEL_BY_LEVEL_MAX_DEPTH + 1), &rows, 2, true, none, &mut deep);
        assert_eq!(deep, shallow);
        // without missing values, the fast walk agrees
        let dense = [0.0, 0.0, 0.0, 9.0, 2.0, 0.0];
        let mut fast = [0u32; 3];
        leaves_block(at_depth(2), &dense, 2, false, none, &mut fast);
        assert_eq!(fast, [3, 4, 2]);
    }

    #[test]
    fn special_splits_ask_the_caller() {
        let nodes = vec![FlatNode::special(0, 7, true, 1), FlatNode::leaf(1, 0), FlatNode::leaf(2, 1)];
        let odd = |test: u32, x: f64| -> bool {
            assert_eq!(test, 7);
            x as i64 % 2 == 1
        };
        let mut leaves = [0u32; 3];
        let tree = TreeNodes { nodes: &nodes, depth: 1, sets: None };
        leaves_block(tree, &[3.0, 4.0, f64::NAN], 1, true, Some(&odd), &mut leaves);
        assert_eq!(leaves, [1, 2, 1]);
    }

    #[test]
    fn category_sets_send_their_members_left() {
        // the set is words 1 and 2 (word 0 belongs to another set): categories
        // 1, 64 and 65 go left; NaN goes left by default
        let sets = [7, 1 << 1, 0b11];
        let nodes = vec![FlatNode::categories(0, 1, 2, true, 1), FlatNode::leaf(1, 0), FlatNode::leaf(2, 1)];
        let rows = [1.0, 1.9, 2.0, 64.0, 65.5, 66.0, 128.0, -0.5, -1.0, f64::NAN, 1e300, -1e300];
        let left = [true, true, false, true, true, false, false, false, false, true, false, false];
        let none: Option<&fn(u32, f64) -> bool> = None;
        for depth in [1, LEVEL_BY_LEVEL_MAX_DEPTH + 1] {
            let mut leaves = [0u32; 12];
            leaves_block(TreeNodes { nodes: &nodes, depth, sets: Some(&sets) }, &rows, 1, true, none, &mut leaves);
            let went_left: Vec<bool> = leaves.iter().map(|&l| l == 1).collect();
            assert_eq!(went_left, left, "depth {depth}");
        }
        // an empty set (a tree whose category words are none at all) sends every value right
        let empty = vec![FlatNode::categories(0, 0, 0, true, 1), FlatNode::leaf(1, 0), FlatNode::leaf(2, 1)];
        let mut leaves = [0u32; 12];
        leaves_block(TreeNodes { nodes: &empty, depth: 1, sets: Some(&[]) }, &rows, 1, true, none, &mut leaves);
        let went_left: Vec<bool> = leaves.iter().map(|&l| l == 1).collect();
        assert_eq!(went_left, rows.map(|x| x.is_nan()));
    }
}
