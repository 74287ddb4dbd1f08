//! Batched tree traversal for prediction.
//!
//! A tree is flattened into 16-byte [`FlatNode`]s, breadth first, with the
//! two children of a node side by side, so a step is one load and a
//! branch-free `next + goes_right`. Rows go through a tree a block at a time,
//! every row of the block advancing one level per pass (leaves absorb the
//! rows that reach them), so the rows' independent chains of loads overlap
//! instead of waiting on each other; only trees deeper than
//! [`LEVEL_BY_LEVEL_MAX_DEPTH`] walk row by row. Blocks without missing
//! values and trees without special splits take leaner monomorphized walks.

/// One node of a flattened tree.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct FlatNode {
    /// A split's `x <= threshold` test. A leaf holds a NaN, which no value
    /// exceeds (rows stay on it), with the leaf's value offset as payload.
    pub threshold: f64,
    /// The feature index, and the [`FlatNode::LEAF`], [`FlatNode::DEFAULT_LEFT`]
    /// and [`FlatNode::SPECIAL`] flags.
    pub word: u32,
    /// A split's left child (the right child follows it); a leaf's own index.
    pub next: u32,
}

impl FlatNode {
    /// The node is a leaf.
    pub const LEAF: u32 = 1 << 31;
    /// Missing values (NaN) go left.
    pub const DEFAULT_LEFT: u32 = 1 << 30;
    /// The test is not `x <= threshold`: the caller's `special` decides, and
    /// `threshold` holds the test's index (as an exact integer).
    pub const SPECIAL: u32 = 1 << 29;
    /// The bits of `word` that hold the feature index.
    pub const FEATURE_MASK: u32 = Self::SPECIAL - 1;

    /// A split on `feature` with `x <= threshold` going to `left`, the rest to `left + 1`.
    pub fn split(feature: u32, threshold: f64, default_left: bool, left: u32) -> FlatNode {
        let flag = if default_left { Self::DEFAULT_LEFT } else { 0 };
        FlatNode { threshold, word: feature | flag, next: left }
    }

    /// A split whose test the caller evaluates (`special(test, x)` true sends `x` left).
    pub fn special(feature: u32, test: u32, default_left: bool, left: u32) -> FlatNode {
        let flag = if default_left { Self::DEFAULT_LEFT } else { 0 };
        FlatNode { threshold: f64::from(test), word: feature | flag | Self::SPECIAL, next: left }
    }

    /// A leaf at `index` whose output starts at `value` in the caller's
    /// values: every row stays on it, NaN included.
    pub fn leaf(index: u32, value: u32) -> FlatNode {
        let threshold = f64::from_bits(Self::LEAF_NAN | u64::from(value));
        FlatNode { threshold, word: Self::LEAF | Self::DEFAULT_LEFT, next: index }
    }

    /// A leaf's value offset (read from beside the node the walk ended on,
    /// so no second table is touched).
    #[inline(always)]
    pub fn value(self) -> u32 {
        debug_assert!(self.word & Self::LEAF != 0, "only leaves hold values");
        self.threshold.to_bits() as u32
    }

    /// A quiet NaN, its low 32 bits free for a leaf's value offset.
    const LEAF_NAN: u64 = 0x7FF8_0000_0000_0000;

    /// The node a row with value `x` moves to (itself for a leaf). `MISSING`:
    /// `x` may be NaN; `SPECIAL`: the node may be a special split.
    #[inline(always)]
    fn step<const MISSING: bool, const SPECIAL: bool>(self, x: f64, special: &impl Fn(u32, f64) -> bool) -> u32 {
        let default_right = self.word & Self::DEFAULT_LEFT == 0;
        let goes_right = if SPECIAL && self.word & Self::SPECIAL != 0 {
            if x.is_nan() {
                default_right
            } else {
                !special(self.threshold as u32, x)
            }
        } else if MISSING {
            // NaN compares false: it goes right only when the default is right.
            (x > self.threshold) | (x.is_nan() & default_right)
        } else {
            x > self.threshold
        };
        self.next + goes_right as u32
    }
}

/// Deepest tree traversed level by level; deeper trees walk row by row.
pub const LEVEL_BY_LEVEL_MAX_DEPTH: usize = 64;
/// Rows that go through a tree together.
pub const TRAVERSAL_BLOCK: usize = 64;
/// Past this depth, the level-by-level walk stops as soon as every row of the
/// block sits on a leaf (checked every few levels).
const EARLY_EXIT_DEPTH: usize = 8;

/// The leaf reached by each row of a block: `rows` holds `n_features` values
/// per row (row-major, NaN for missing); `leaves` gets one node index per row.
/// `depth` is the tree's longest root-to-leaf path. `missing`: some value may
/// be NaN (false allows a faster walk). `special(test, x)` decides the
/// [`FlatNode::SPECIAL`] splits; `None` when the tree has none.
pub fn leaves_block<S: Fn(u32, f64) -> bool>(
    nodes: &[FlatNode],
    depth: usize,
    rows: &[f64],
    n_features: usize,
    missing: bool,
    special: Option<&S>,
    leaves: &mut [u32],
) {
    debug_assert_eq!(rows.len(), leaves.len() * n_features);
    let none = |_: u32, _: f64| -> bool { unreachable!("the tree has no special splits") };
    match (missing, special) {
        (false, None) => {
            crate::dispatch::run(Walk::<false, false, _> { nodes, depth, rows, n_features, special: &none, leaves })
        }
        (true, None) => {
            crate::dispatch::run(Walk::<true, false, _> { nodes, depth, rows, n_features, special: &none, leaves })
        }
        (_, Some(special)) => {
            crate::dispatch::run(Walk::<true, true, _> { nodes, depth, rows, n_features, special, leaves })
        }
    }
}

/// One block's walk through one tree, as a kernel of the dispatch seam.
struct Walk<'a, const MISSING: bool, const SPECIAL: bool, S> {
    nodes: &'a [FlatNode],
    depth: usize,
    rows: &'a [f64],
    n_features: usize,
    special: &'a S,
    leaves: &'a mut [u32],
}

impl<const MISSING: bool, const SPECIAL: bool, S: Fn(u32, f64) -> bool> pulp::WithSimd
    for Walk<'_, MISSING, SPECIAL, S>
{
    type Output = ();

    #[inline(always)]
    fn with_simd<Sd: pulp::Simd>(self, _simd: Sd) {
        let Walk { nodes, depth, rows, n_features, special, leaves } = self;
        walk::<MISSING, SPECIAL>(nodes, depth, rows, n_features, special, leaves);
    }
}

#[inline(always)]
fn walk<const MISSING: bool, const SPECIAL: bool>(
    nodes: &[FlatNode],
    depth: usize,
    rows: &[f64],
    n_features: usize,
    special: &impl Fn(u32, f64) -> bool,
    leaves: &mut [u32],
) {
    let value = |row: usize, node: FlatNode| rows[row * n_features + (node.word & FlatNode::FEATURE_MASK) as usize];
    if depth <= LEVEL_BY_LEVEL_MAX_DEPTH {
        // Every row advances one level per pass: the rows' loads overlap.
        leaves.fill(0);
        for level in 0..depth {
            for (row, pos) in leaves.iter_mut().enumerate() {
                let node = nodes[*pos as usize];
                *pos = node.step::<MISSING, SPECIAL>(value(row, node), special);
            }
            if level >= EARLY_EXIT_DEPTH
                && level % 4 == 0
                && leaves.iter().all(|&p| nodes[p as usize].word & FlatNode::LEAF != 0)
            {
                break;
            }
        }
    } else {
        for (row, pos) in leaves.iter_mut().enumerate() {
            let mut node = nodes[0];
            let mut at = 0;
            while node.word & FlatNode::LEAF == 0 {
                at = node.step::<MISSING, SPECIAL>(value(row, node), special);
                node = nodes[at as usize];
            }
            *pos = at;
        }
    }
}

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
        let mut shallow = [0u32; 6];
        leaves_block(&tree(), 2, &rows, 2, true, none, &mut shallow);
        assert_eq!(shallow, [3, 4, 2, 2, 3, 3]);
        let values: Vec<u32> = shallow.iter().map(|&l| tree()[l as usize].value()).collect();
        assert_eq!(values, [30, u32::MAX, 20, 20, 30, 30]);
        // the same tree walked row by row
        let mut deep = [0u32; 6];
        leaves_block(&tree(), LEVEL_BY_LEVEL_MAX_DEPTH + 1, &rows, 2, true, none, &mut deep);
        assert_eq!(deep, shallow);
        // without missing values, the fast walk agrees
        let dense = [0.0, 0.0, 0.0, 9.0, 2.0, 0.0];
        let mut fast = [0u32; 3];
        leaves_block(&tree(), 2, &dense, 2, false, none, &mut fast);
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
        leaves_block(&nodes, 1, &[3.0, 4.0, f64::NAN], 1, true, Some(&odd), &mut leaves);
        assert_eq!(leaves, [1, 2, 1]);
    }
}
