//! The level-by-level walk over ranks in AVX2 lanes, for shallow trees at
//! the `avx2` SIMD level, where the gathered walk of
//! [`avx512`](crate::traverse::gather::avx512) (built on AVX-512's compresses and
//! mask registers) does not run.
//!
//! Eight consecutive rows share a vector. Every step fetches each lane's
//! node, the rank of the row in the node's feature and, for a category
//! split, the set word, then moves every lane not on a leaf to the child its
//! compare masks pick, without a branch. Below the third level a step
//! gathers: a node is one 8-byte element (four to a gather), a rank one
//! 4-byte read. The first three levels need no gather: every lane starts at
//! the root, so its node is splatted and its ranks are one load from the
//! feature's column, next stands on one of the root's two children, picked
//! per lane from two splats and two loads, then on one of at most four
//! grandchildren, from four (on Zen 3, the first two levels took 14–19% off
//! the walk's time on depth-6 trees; the third took 11–20% off the whole
//! scoring of the synthetic and flights_reg boosted models). [`GROUPS`]
//! vectors step side by side so that their gathers' waits overlap. A tree
//! `depth` deep takes at most `depth` steps (fewer once every lane sits on a
//! leaf), and a last gather reads the leaves' value offsets. The scalar walk
//! of [`ranked`](crate::traverse::ranked) reaches the same leaves.
//!
//! Every address a gather forms is in bounds by construction, whatever the
//! nodes hold, as in the AVX-512 walk: node indices are clamped to the last
//! node, features to the last feature, set words masked to their (power of
//! two) count, and only rows below the block's last are walked (a rank is
//! read as the 4 bytes at its position). A malformed tree gets wrong
//! leaves, never a stray read.

use pulp::x86::V3;

use crate::traverse::gather::gathers_fit;
use crate::traverse::nodes::{RankNode, RankedTree};

/// Vectors of eight rows that step side by side: independent gathers in
/// flight to hide their latency.
const GROUPS: usize = 4;

/// Walks the first rows of a block (`ranks`: `n_features` columns of one
/// rank per row, feature by feature) through `tree`, writing each one's leaf
/// value offset to `values`; returns how many rows it took (whole groups of
/// `8 * GROUPS` below the last row, or none when the block does not fit its
/// 32-bit indices).
pub(crate) fn walk_rows<const MISSING: bool, const CATEGORIES: bool>(
    simd: V3,
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_features: usize,
    values: &mut [u32],
) -> usize {
    pulp::Simd::vectorize(simd, LevelWalk::<MISSING, CATEGORIES> { simd, tree, ranks, n_features, values })
}

/// One block's walk through one shallow tree over ranks, in AVX2 lanes.
struct LevelWalk<'a, const MISSING: bool, const CATEGORIES: bool> {
    simd: V3,
    tree: RankedTree<'a>,
    ranks: &'a [u16],
    n_features: usize,
    values: &'a mut [u32],
}

impl<const MISSING: bool, const CATEGORIES: bool> pulp::WithSimd for LevelWalk<'_, MISSING, CATEGORIES> {
    /// How many of the block's first rows were walked (the rest are the caller's).
    type Output = usize;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> usize {
        self.walk()
    }
}

impl<const MISSING: bool, const CATEGORIES: bool> LevelWalk<'_, MISSING, CATEGORIES> {
    #[inline(always)]
    fn walk(self) -> usize {
        let LevelWalk { simd, tree, ranks, n_features, values } = self;
        let RankedTree { nodes, depth, sets } = tree;
        let n = values.len();
        let group = 8 * GROUPS;
        // The last row is left to the caller (its rank's 4-byte read would
        // pass the end of `ranks`), and so are the rows past the last whole group.
        let walked = n.saturating_sub(1) / group * group;
        if walked == 0 || !gathers_fit(tree, ranks, n, n_features, CATEGORIES) {
            return 0;
        }
        let (avx, avx2) = (simd.avx, simd.avx2);
        let splat = |x: usize| avx._mm256_set1_epi32(x as i32);
        let one = splat(1);
        let low16 = splat(0xFFFF);
        let leaf_flag = splat(RankNode::LEAF.into());
        let categories_flag = splat(RankNode::CATEGORIES.into());
        let default_left_flag = splat(RankNode::DEFAULT_LEFT.into());
        let feature_mask = splat(RankNode::FEATURE_MASK.into());
        let missing = splat(RankNode::MISSING.into());
        let last_node = splat(nodes.len() - 1);
        let last_feature = splat(n_features - 1);
        let set_words = splat(sets.len().max(1) - 1);
        let bit_in_word = splat(31);
        // A feature's column of ranks starts at `feature * column`.
        let column = splat(n);
        let lane = avx._mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

        let node_next = nodes.as_ptr().cast::<i32>();
        let whole_nodes = nodes.as_ptr().cast::<i64>();
        let rank_words = ranks.as_ptr().cast::<i32>();
        let set_halves = sets.as_ptr().cast::<i32>();
        // All-ones lanes where `word` has every bit of `flag`.
        let has = |word, flag| avx2._mm256_cmpeq_epi32(avx2._mm256_and_si256(word, flag), flag);
        // All-ones lanes that go right at their node (key and word), given the rank or code `x`.
        let goes_right = |key, word, x| {
            // Ranks and keys are below 2^16, so a signed compare is exact.
            let mut right = avx2._mm256_cmpgt_epi32(x, key);
            if CATEGORIES {
                // Bit `x % 64` of the set's word `x / 64` is bit `x % 32`
                // of its low or high half.
                let tested = has(word, categories_flag);
                let word_at =
                    avx2._mm256_and_si256(avx2._mm256_add_epi32(key, avx2._mm256_srli_epi32::<6>(x)), set_words);
                let half = avx2._mm256_and_si256(avx2._mm256_srli_epi32::<5>(x), one);
                let half_at = avx2._mm256_add_epi32(avx2._mm256_slli_epi32::<1>(word_at), half);
                // SAFETY: the word index is masked to the set words' count
                // (a power of two), so both halves are in bounds.
                let bits = unsafe { avx2._mm256_i32gather_epi32::<4>(set_halves, half_at) };
                let shifted = avx2._mm256_srlv_epi32(bits, avx2._mm256_and_si256(x, bit_in_word));
                let in_set = avx2._mm256_cmpeq_epi32(avx2._mm256_and_si256(shifted, one), one);
                right = avx2
                    ._mm256_or_si256(avx2._mm256_andnot_si256(in_set, tested), avx2._mm256_andnot_si256(tested, right));
            }
            if MISSING {
                let absent = avx2._mm256_cmpeq_epi32(x, missing);
                let goes_left = has(word, default_left_flag);
                right = avx2._mm256_or_si256(
                    avx2._mm256_andnot_si256(absent, right),
                    avx2._mm256_andnot_si256(goes_left, absent),
                );
            }
            right
        };

        // A node's two halves splatted to every lane, and its feature.
        let splat_node = |at: usize| {
            let node = nodes[at.min(nodes.len() - 1)];
            let key_word = u32::from(node.key) | u32::from(node.word) << 16;
            let feature = usize::from(node.word & RankNode::FEATURE_MASK).min(n_features - 1);
            (avx._mm256_set1_epi32(node.next as i32), avx._mm256_set1_epi32(key_word as i32), feature)
        };
        // The ranks of eight consecutive rows from `first` in `feature`: one
        // load, where every lane reads the same column.
        let column_ranks = |feature: usize, first: usize| {
            let at = feature * n + first;
            // SAFETY: `first + 8 <= walked < n`, so the eight ranks lie in the feature's column.
            avx2._mm256_cvtepu16_epi32(unsafe { simd.sse2._mm_loadu_si128(ranks.as_ptr().add(at).cast()) })
        };
        // The root, and its two children (clamped, as the walk's indices are).
        let root = splat_node(0);
        let first_child = (nodes[0].next as usize).min(nodes.len() - 1);
        let second_child = (nodes[0].next as usize + 1).min(nodes.len() - 1);
        let (left, right) = (splat_node(first_child), splat_node(second_child));
        let at_right = splat(second_child);
        // The four nodes a lane can stand on at the third level: each
        // child's two children, or the child itself twice when it is a leaf
        // (its lanes stay there). Clamped as the walk clamps a step.
        let slots: [usize; 4] = {
            let below = |child: usize| {
                let node = nodes[child];
                if node.word & RankNode::LEAF != 0 {
                    [child, child]
                } else {
                    let last = nodes.len() - 1;
                    [(node.next as usize).min(last), (node.next as usize + 1).min(last)]
                }
            };
            let ([a, b], [c, d]) = (below(first_child), below(second_child));
            [a, b, c, d]
        };
        let grandchildren = slots.map(splat_node);
        let at_slot = slots.map(splat);

        for start in (0..walked).step_by(group) {
            let row: [_; GROUPS] = std::array::from_fn(|g| avx2._mm256_add_epi32(splat(start + 8 * g), lane));
            let mut at = [avx._mm256_setzero_si256(); GROUPS];
            for level in 0..depth {
                let mut settled = true;
                for g in 0..GROUPS {
                    let first = start + 8 * g;
                    // Each lane's node (its two halves) and the rank of the
                    // row in the node's feature. Every lane starts at the
                    // root, then stands on one of its two children, then on
                    // one of four grandchildren: those levels need no gather.
                    let (next, key_word, x) = match level {
                        0 => (root.0, root.1, column_ranks(root.2, first)),
                        1 => {
                            // All-ones lanes at the second child (the first
                            // when both indices were clamped to one node).
                            let on_right = avx2._mm256_cmpeq_epi32(at[g], at_right);
                            let pick = |l, r| avx2._mm256_blendv_epi8(l, r, on_right);
                            let x = pick(column_ranks(left.2, first), column_ranks(right.2, first));
                            (pick(left.0, right.0), pick(left.1, right.1), x)
                        }
                        2 => {
                            // All-ones lanes on the second child's side (slots 2
                            // and 3), then on the second slot of their side; a
                            // lane whose node several slots name picks one of them.
                            let is = |slot: usize| avx2._mm256_cmpeq_epi32(at[g], at_slot[slot]);
                            let high = avx2._mm256_or_si256(is(2), is(3));
                            let odd = avx2._mm256_blendv_epi8(is(1), is(3), high);
                            let pick = |[a, b, c, d]: [_; 4]| {
                                avx2._mm256_blendv_epi8(
                                    avx2._mm256_blendv_epi8(a, b, odd),
                                    avx2._mm256_blendv_epi8(c, d, odd),
                                    high,
                                )
                            };
                            let x = pick(grandchildren.map(|node| column_ranks(node.2, first)));
                            (pick(grandchildren.map(|node| node.0)), pick(grandchildren.map(|node| node.1)), x)
                        }
                        _ => {
                            // Whole 8-byte nodes, four to a gather: the lanes'
                            // nodes in the order 0, 1, 4, 5 and 2, 3, 6, 7, so
                            // that one shuffle per half puts them back in lane order.
                            let split = avx2._mm256_permute4x64_epi64::<0b11_01_10_00>(at[g]);
                            // SAFETY: every `at` lane is at most the last node
                            // (clamped below), so its 8-byte node is in bounds.
                            let (low, high) = unsafe {
                                (
                                    avx2._mm256_i32gather_epi64::<8>(whole_nodes, avx._mm256_castsi256_si128(split)),
                                    avx2._mm256_i32gather_epi64::<8>(
                                        whole_nodes,
                                        avx2._mm256_extracti128_si256::<1>(split),
                                    ),
                                )
                            };
                            let (low, high) = (avx._mm256_castsi256_ps(low), avx._mm256_castsi256_ps(high));
                            let next = avx._mm256_castps_si256(avx._mm256_shuffle_ps::<0b10_00_10_00>(low, high));
                            let key_word = avx._mm256_castps_si256(avx._mm256_shuffle_ps::<0b11_01_11_01>(low, high));
                            let word = avx2._mm256_srli_epi32::<16>(key_word);
                            let feature =
                                avx2._mm256_min_epu32(avx2._mm256_and_si256(word, feature_mask), last_feature);
                            let rank_at = avx2._mm256_add_epi32(row[g], avx2._mm256_mullo_epi32(feature, column));
                            // SAFETY: the rank sits at `feature * n + row` with
                            // row < n - 1 and feature < n_features, so the 4 bytes
                            // read from its position end inside the block's ranks.
                            let x = unsafe { avx2._mm256_i32gather_epi32::<2>(rank_words, rank_at) };
                            (next, key_word, avx2._mm256_and_si256(x, low16))
                        }
                    };
                    let key = avx2._mm256_and_si256(key_word, low16);
                    let word = avx2._mm256_srli_epi32::<16>(key_word);
                    let leaf = has(word, leaf_flag);
                    // Right lanes are -1: subtracting them picks the right child.
                    let child = avx2._mm256_min_epu32(avx2._mm256_sub_epi32(next, goes_right(key, word, x)), last_node);
                    at[g] = avx2._mm256_blendv_epi8(child, at[g], leaf);
                    settled &= avx2._mm256_movemask_epi8(leaf) == -1;
                }
                if settled {
                    break;
                }
            }
            for (g, &at) in at.iter().enumerate() {
                // SAFETY: `at` lanes are clamped nodes, as above; the eight
                // offsets go to rows `start + 8 * g ..` below `walked <= n`.
                unsafe {
                    let offsets = avx2._mm256_i32gather_epi32::<8>(node_next, at);
                    avx._mm256_storeu_si256(values.as_mut_ptr().add(start + 8 * g).cast(), offsets);
                }
            }
        }
        walked
    }
}
