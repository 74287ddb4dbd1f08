//! Batched tree traversal over ranks: the compact form of [`flat`](crate::traverse::flat).
//!
//! A model tests each numeric feature against a fixed, sorted set of
//! distinct thresholds `t_0 < t_1 < …`. A value's *rank* is how many of them
//! lie below it, and `x <= t_k` exactly when `rank(x) <= k`. So once a block
//! of rows is replaced by ranks (2 bytes a value instead of 8) a split needs
//! only `k`, and a node shrinks from 16 bytes to 8: twice as many per cache
//! line, and a forest's deep trees fit the core's L2 cache. Category splits
//! keep their bit sets, padded per feature to a common width (plus a zero
//! word that every out-of-range code reads), so their test needs no bound.
//! The walks are those of the 16-byte nodes and reach the same leaves.
//!
//! A block's ranks are stored feature by feature (a column of the block's
//! rows per feature): near the root, where a node's rows are split all at
//! once, sixteen rows' ranks of the node's feature then sit in one or two
//! cache lines and the column stays in L1, where rows of 50 features (100
//! bytes each) put every row's rank in a line of its own.

#[cfg(target_arch = "x86_64")]
use crate::traverse::gather;
use crate::traverse::nodes::{RankNode, RankedTree, LEVEL_BY_LEVEL_MAX_DEPTH};

impl RankNode {
    /// The node a row whose feature has rank (or code) `x` moves to.
    #[inline(always)]
    fn step<const MISSING: bool, const CATEGORIES: bool>(self, x: u16, sets: &[u64]) -> u32 {
        let right = if CATEGORIES {
            // Both tests, then a pick: which one a node holds is not predictable.
            // The set words' count is a power of two, so the mask keeps any
            // key in bounds (a threshold split's read is discarded).
            let at = (usize::from(self.key) + usize::from(x >> 6)) & (sets.len() - 1);
            let in_set = sets[at] >> (x & 63) & 1 == 1;
            let categories = self.word & Self::CATEGORIES != 0;
            (categories & !in_set) | (!categories & (x > self.key))
        } else {
            // MISSING is above every k: a missing value goes right here.
            x > self.key
        };
        let goes_right = if MISSING {
            let left_default_applies = x == Self::MISSING && self.word & Self::DEFAULT_LEFT != 0;
            let right_default_applies = x == Self::MISSING && self.word & Self::DEFAULT_LEFT == 0;
            (right & !left_default_applies) | right_default_applies
        } else {
            right
        };
        self.next + goes_right as u32
    }
}

/// The leaf value offset reached by each row of a block: `ranks` holds
/// `n_features` columns of ranks or codes ([`RankNode::MISSING`] for a
/// missing value), feature by feature, each one rank per row: feature `f`'s
/// rank of row `r` is `ranks[f * n_rows + r]`; `values` gets one offset per
/// row. `missing`: some rank may be [`RankNode::MISSING`] (false allows a
/// leaner walk).
///
/// At the `avx512` SIMD level every tree takes the gathered walk of
/// `gather/avx512.rs` (on flights, 0.65 of the scalar walk's
/// time for the fully grown forest, 0.70 for depth-6 boosting); at `avx2`,
/// trees up to [`LEVEL_BY_LEVEL_MAX_DEPTH`]
/// deep take the gathered level-by-level walk of `gather/avx2.rs`; the rest
/// walk in scalar lanes or, up to that depth, level by level.
pub fn ranked_leaves_block(tree: RankedTree<'_>, ranks: &[u16], n_features: usize, missing: bool, values: &mut [u32]) {
    walk_block(tree, ranks, n_features, missing, values, PREFETCH_ABOVE_BYTES);
}

/// [`ranked_leaves_block`], prefetching nodes in the gathered walk when they
/// take more than `prefetch_above` bytes (tests force either choice).
fn walk_block(
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_features: usize,
    missing: bool,
    values: &mut [u32],
    prefetch_above: usize,
) {
    assert_eq!(ranks.len(), values.len() * n_features, "one rank per row and feature");
    assert!(tree.sets.is_empty() || tree.sets.len().is_power_of_two(), "set words come in a power of two");
    let n_rows = values.len();
    macro_rules! walk {
        ($missing:literal, $categories:literal) => {{
            // A gathered walk takes the block's first rows, the scalar one the rest.
            let first = gathered::<$missing, $categories>(tree, ranks, n_features, values, prefetch_above);
            let values = &mut values[first..];
            crate::dispatch::run(RankedWalk::<$missing, $categories> { tree, ranks, n_rows, first, values })
        }};
    }
    match (missing, !tree.sets.is_empty()) {
        (false, false) => walk!(false, false),
        (true, false) => walk!(true, false),
        (false, true) => walk!(false, true),
        (true, true) => walk!(true, true),
    }
}

/// One block's walk through one tree over ranks, as a kernel of the dispatch
/// seam: rows `first..n_rows` of the block, whose offsets go to `values`.
struct RankedWalk<'a, const MISSING: bool, const CATEGORIES: bool> {
    tree: RankedTree<'a>,
    ranks: &'a [u16],
    n_rows: usize,
    first: usize,
    values: &'a mut [u32],
}

impl<const MISSING: bool, const CATEGORIES: bool> pulp::WithSimd for RankedWalk<'_, MISSING, CATEGORIES> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let RankedWalk { tree, ranks, n_rows, first, values } = self;
        walk::<MISSING, CATEGORIES>(tree, ranks, n_rows, first, values);
    }
}

#[inline(always)]
fn walk<const MISSING: bool, const CATEGORIES: bool>(
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_rows: usize,
    first: usize,
    values: &mut [u32],
) {
    let RankedTree { nodes, depth, sets } = tree;
    let step = |node: RankNode, x: u16| node.step::<MISSING, CATEGORIES>(x, sets);
    let rank =
        |row: usize, node: RankNode| ranks[usize::from(node.word & RankNode::FEATURE_MASK) * n_rows + first + row];
    if depth <= LEVEL_BY_LEVEL_MAX_DEPTH {
        // Every row advances one level per pass; a row on a leaf stays there.
        values.fill(0);
        for level in 0..depth {
            for (row, pos) in values.iter_mut().enumerate() {
                let node = nodes[*pos as usize];
                let next = step(node, rank(row, node));
                *pos = if node.word & RankNode::LEAF != 0 { *pos } else { next };
            }
            if level >= EARLY_EXIT_DEPTH
                && level % 4 == 0
                && values.iter().all(|&p| nodes[p as usize].word & RankNode::LEAF != 0)
            {
                break;
            }
        }
        for pos in values.iter_mut() {
            let node = nodes[*pos as usize];
            debug_assert!(node.word & RankNode::LEAF != 0, "the walk ends on leaves");
            *pos = node.next;
        }
    } else {
        // LANES rows walk side by side, each to its own leaf; a lane that
        // lands on a leaf takes the next row at once. The loop is the 16-byte
        // walk's, written out again: a shared generic driver taking the leaf
        // test and the step as closures gave the same leaves but measured 4%
        // slower here (0.27 s against 0.26 s on the flights forest).
        let n = values.len();
        let mut row_of: [usize; LANES] = std::array::from_fn(|lane| lane);
        let mut at = [0u32; LANES];
        let mut active = n.min(LANES);
        let mut next_row = active;
        while active > 0 {
            let mut lane = 0;
            while lane < active {
                let node = nodes[at[lane] as usize];
                if node.word & RankNode::LEAF != 0 {
                    values[row_of[lane]] = node.next;
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
                    let next = step(node, rank(row_of[lane], node));
                    // Wanted again only after every other lane's step.
                    crate::dispatch::prefetch(nodes, next as usize);
                    at[lane] = next;
                }
                lane += 1;
            }
        }
    }
}

/// Walks the first rows of a block with a gathered walk when this thread
/// runs at `avx512` (any tree) or `avx2` (trees up to
/// [`LEVEL_BY_LEVEL_MAX_DEPTH`] deep);
/// returns how many (none otherwise).
#[inline(always)]
fn gathered<const MISSING: bool, const CATEGORIES: bool>(
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_features: usize,
    values: &mut [u32],
    prefetch_above: usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = crate::dispatch::avx512() {
        let prefetch = std::mem::size_of_val(tree.nodes) > prefetch_above;
        return gather::avx512::walk_rows::<MISSING, CATEGORIES>(simd, tree, ranks, n_features, values, prefetch);
    }
    #[cfg(target_arch = "x86_64")]
    if tree.depth <= LEVEL_BY_LEVEL_MAX_DEPTH {
        if let Some(simd) = crate::dispatch::avx2() {
            return gather::avx2::walk_rows::<MISSING, CATEGORIES>(simd, tree, ranks, n_features, values);
        }
    }
    let _ = (tree, ranks, n_features, values, prefetch_above);
    0
}

/// Trees whose nodes take more bytes than this (an L1 data cache) have each
/// lane's next node prefetched in the gathered walk; smaller ones lose by it
/// (on the flights forests: 9% faster on 450 KB trees, 9% slower on 10 KB ones).
const PREFETCH_ABOVE_BYTES: usize = 32 << 10;
/// Rows in flight at once in the walk of deep trees.
const LANES: usize = 32;
/// Past this depth, the level-by-level walk stops as soon as every row of the
/// block sits on a leaf (checked every few levels).
const EARLY_EXIT_DEPTH: usize = 8;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::traverse::flat::leaves_block;
    use crate::traverse::nodes::{FlatNode, TreeNodes};
    use proptest::prelude::*;

    /// A random tree as both node kinds: feature `f`'s thresholds are
    /// `0.5, 1.5, …` (rank `k` is threshold `k + 0.5`), features below
    /// `n_categorical` split on category sets of `set_words` words.
    #[derive(Debug, Clone)]
    pub(crate) struct Pair {
        pub flat: Vec<FlatNode>,
        pub flat_sets: Vec<u64>,
        pub ranked: Vec<RankNode>,
        pub ranked_sets: Vec<u64>,
        pub depth: usize,
    }

    pub(crate) fn pair(
        shape: &[(u8, u16, bool, u64, u64)],
        n_features: u16,
        n_categorical: u16,
        set_words: usize,
    ) -> Pair {
        // Grows a tree mostly breadth first: each entry splits the oldest
        // open leaf, or for half of them (by the entry's key past its
        // rank) another one, so leaves also sit high in deep trees.
        let mut p = Pair { flat: vec![], flat_sets: vec![], ranked: vec![], ranked_sets: vec![], depth: 0 };
        let mut depth_of = vec![1usize];
        let mut open = std::collections::VecDeque::from([0usize]);
        // per node: None for a leaf, else (feature, rank, default left, set words)
        type Split = (u16, u16, bool, [u64; 2]);
        let mut kinds: Vec<Option<Split>> = vec![None];
        let mut children = vec![0u32];
        for &(f, k, default_left, w0, w1) in shape {
            let pick = if (k / 40) % 2 == 0 { usize::from(k / 80) % open.len().max(1) } else { 0 };
            let Some(node) = open.remove(pick) else { break };
            let feature = u16::from(f) % n_features;
            kinds[node] = Some((feature, k, default_left, [w0, w1]));
            children[node] = kinds.len() as u32;
            for _ in 0..2 {
                open.push_back(kinds.len());
                kinds.push(None);
                children.push(0);
                depth_of.push(depth_of[node] + 1);
            }
        }
        p.depth = depth_of.iter().copied().max().unwrap_or(1);
        for (i, kind) in kinds.iter().enumerate() {
            match *kind {
                None => {
                    p.flat.push(FlatNode::leaf(i as u32, i as u32 * 3));
                    p.ranked.push(RankNode::leaf(i as u32 * 3));
                }
                Some((feature, _, default_left, words)) if feature < n_categorical => {
                    let words = &words[..set_words];
                    p.flat.push(FlatNode::categories(
                        feature.into(),
                        p.flat_sets.len() as u32,
                        words.len() as u32,
                        default_left,
                        children[i],
                    ));
                    p.flat_sets.extend_from_slice(words);
                    // padded to the feature's width (here every set's) plus a zero word
                    p.ranked.push(RankNode::categories(feature, p.ranked_sets.len() as u16, default_left, children[i]));
                    p.ranked_sets.extend_from_slice(words);
                    p.ranked_sets.push(0);
                }
                Some((feature, k, default_left, _)) => {
                    let k = k % 40;
                    p.flat.push(FlatNode::split(feature.into(), f64::from(k) + 0.5, default_left, children[i]));
                    p.ranked.push(RankNode::split(feature, k, default_left, children[i]));
                }
            }
        }
        if !p.ranked_sets.is_empty() {
            p.ranked_sets.resize(p.ranked_sets.len().next_power_of_two(), 0);
        }
        p
    }

    /// A value's rank against thresholds `0.5, 1.5, …, 39.5`; a category's code.
    pub(crate) fn rank(x: f64, categorical: bool, set_words: usize) -> u16 {
        if x.is_nan() {
            RankNode::MISSING
        } else if categorical {
            let code = x as i64;
            if (0..64 * set_words as i64).contains(&code) {
                code as u16
            } else {
                64 * set_words as u16
            }
        } else {
            (0..40).filter(|&k| f64::from(k) + 0.5 < x).count() as u16
        }
    }

    pub(crate) fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => (-2i32..140).prop_map(|v| f64::from(v) / 2.0 - 0.25),
            2 => (-2i32..140).prop_map(f64::from),
            1 => Just(f64::NAN),
        ]
    }

    proptest! {
        /// Both walks, level by level and in lanes (scalar, and gathered in
        /// AVX-512 lanes, with and without node prefetches, or level by level
        /// in AVX2 lanes, where the CPU has them), with and without missing
        /// values and category splits,
        /// reach the leaves the 16-byte nodes reach, for any block length.
        #[test]
        fn ranked_walks_reach_the_leaves_of_flat_walks(
            shape in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<bool>(), any::<u64>(), any::<u64>()), 0..120),
            n_categorical in 0u16..3,
            set_words in 1usize..3,
            rows in proptest::collection::vec(value(), 0..(4 * 300)),
            deep in any::<bool>(),
        ) {
            let n_features = 4;
            let p = pair(&shape, n_features, n_categorical, set_words);
            let n_rows = rows.len() / 4;
            let rows = &rows[..n_rows * 4];
            let depth = if deep { p.depth.max(LEVEL_BY_LEVEL_MAX_DEPTH + 1) } else { p.depth };
            // Feature by feature, as the walks read them.
            let ranks: Vec<u16> = (0..4)
                .flat_map(|f| (0..n_rows).map(move |r| (f, r)))
                .map(|(f, r)| rank(rows[r * 4 + f], f < usize::from(n_categorical), set_words))
                .collect();
            let none: Option<&fn(u32, f64) -> bool> = None;
            for missing in [true, false] {
                if !missing && rows.iter().any(|x| x.is_nan()) {
                    continue;
                }
                let mut leaves = vec![0u32; n_rows];
                let sets = (!p.flat_sets.is_empty()).then_some(&p.flat_sets[..]);
                leaves_block(TreeNodes { nodes: &p.flat, depth, sets }, rows, 4, missing, none, &mut leaves);
                let expected: Vec<u32> = leaves.iter().map(|&l| p.flat[l as usize].value()).collect();
                let tree = RankedTree { nodes: &p.ranked, depth, sets: &p.ranked_sets };
                for simd_level in crate::dispatch::SimdLevel::available() {
                    for prefetch_above in [0, usize::MAX] {
                        let mut values = vec![0u32; n_rows];
                        let walk = || walk_block(tree, &ranks, 4, missing, &mut values, prefetch_above);
                        crate::dispatch::with_simd_level(simd_level, walk).unwrap();
                        prop_assert_eq!(&values, &expected, "missing {}, {}, prefetch above {}", missing, simd_level, prefetch_above);
                    }
                }
            }
        }
    }
}
