//! The gathered walks over ranks, at the `avx512` and `avx2` SIMD levels:
//! x86-64 only, each reaching the leaves of the scalar walk.

use crate::traverse::nodes::RankedTree;

pub(crate) mod avx2;
pub(crate) mod avx512;

/// Whether a gathered walk can take a block of `n_rows` rows: something to
/// walk, every index it forms fits a 32-bit lane (nodes, ranks and set
/// words, with room for a scale of two), one rank per row and feature, and
/// set words in a power of two when `categories` (so a mask bounds them).
pub(crate) fn gathers_fit(
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_rows: usize,
    n_features: usize,
    categories: bool,
) -> bool {
    let fits = |len: usize| len <= i32::MAX as usize / 2;
    let RankedTree { nodes, sets, .. } = tree;
    n_features > 0
        && !nodes.is_empty()
        && fits(nodes.len())
        && fits(ranks.len())
        && fits(sets.len())
        && ranks.len() >= n_rows * n_features
        && (!categories || sets.len().is_power_of_two())
}
