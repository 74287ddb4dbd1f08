//! The walk over ranks in AVX-512 lanes, in two phases.
//!
//! Near the root, where a node holds many of the block's rows, the rows are
//! split node by node as training splits them: sixteen row ids at a time,
//! one gather of their ranks (from the node's feature's column, in L1), the
//! node's test on all of them, and a compress of the ids into the left and
//! right children's ranges. No node is gathered and no step waits on the one
//! before.
//!
//! Below [`PARTITION_MIN_ROWS`] rows, each row is walked alone from the node
//! it has reached: sixteen rows per vector, each step gathering every lane's
//! node, rank and (for a category split) set word at once, with the child
//! picked by masks instead of branches.
//!
//! A lane that reaches a leaf records its row and value offset (compressed
//! into a list, written out at the end: a scatter per step costs more) and
//! takes the next row in the same step (an expand of the row counter into
//! the freed lanes), so the vectors stay full until the rows run out. A
//! gather waits several nanoseconds, so [`GROUPS`] independent vectors walk
//! side by side and the CPU overlaps their waits. The scalar lane walk in
//! [`ranked`](crate::traverse::ranked) reaches the same leaves.
//!
//! Any depth takes this walk: shallow trees are mostly split node by node.
//! On Zen 5, one thread, scoring the flights test rows takes 0.65 of the
//! scalar walk's time with the 100 fully grown forest trees (117 million
//! steps) and 0.70 with 50 boosted trees of depth 6; `docs/performance.md`
//! has the variants tried.
//!
//! Every address a gather or scatter forms is in bounds by construction,
//! whatever the nodes hold: node indices are clamped to the last node,
//! features to the last feature, set words masked to the (power of two)
//! word count, and only rows below the block's last are walked here (a rank
//! is read as the 4 bytes at its position). A well-formed tree never needs
//! the clamps; a malformed one gets wrong leaves, never a stray read.

use pulp::x86::V4;

use crate::traverse::gather::gathers_fit;
use crate::traverse::nodes::{RankNode, RankedTree};

/// Vectors of 16 rows that walk side by side: enough independent gathers
/// in flight to hide their latency (on Zen 5, 1 is 1.7 times slower than 2,
/// and 3, 4 or 8 are 10–20% slower: their state no longer stays in registers).
const GROUPS: usize = 2;

/// Nodes holding at least this many of a block's rows split them all at
/// once (on the flights forest, 64 is 6% faster than none, 16 slower than none).
const PARTITION_MIN_ROWS: usize = 64;

/// Walks the first rows of a block (`ranks`: `n_features` columns of one
/// rank per row, feature by feature) through
/// `tree`, writing each one's leaf value offset to `values`; returns how
/// many rows it took (all but the last, or none when the block does not fit
/// its 32-bit indices). `prefetch`: fetch each lane's next node ahead, for
/// nodes beyond the L1 cache.
pub(crate) fn walk_rows<const MISSING: bool, const CATEGORIES: bool>(
    simd: V4,
    tree: RankedTree<'_>,
    ranks: &[u16],
    n_features: usize,
    values: &mut [u32],
    prefetch: bool,
) -> usize {
    if prefetch {
        pulp::Simd::vectorize(simd, GatherWalk::<MISSING, CATEGORIES, true> { simd, tree, ranks, n_features, values })
    } else {
        pulp::Simd::vectorize(simd, GatherWalk::<MISSING, CATEGORIES, false> { simd, tree, ranks, n_features, values })
    }
}

/// A thread's lists for the walk, kept from one block and tree to the next
/// (allocating and clearing them per tree took 8% of a boosted model's
/// scoring). Their contents are never read before the walk writes them,
/// except for the slack past a list's end, which masks discard.
#[derive(Default)]
struct Scratch {
    /// Rows that reached a leaf, in order, and their value offsets.
    done_rows: Vec<u32>,
    done_values: Vec<u32>,
    /// Rows left at a node too small to split all at once, and their nodes.
    pending_rows: Vec<u32>,
    pending_nodes: Vec<u32>,
    /// The rows split node by node, and a node's right rows while it splits.
    rows: Vec<u32>,
    right_rows: Vec<u32>,
}

impl Scratch {
    /// Makes every list `len` long.
    fn fit(&mut self, len: usize) {
        for list in [
            &mut self.done_rows,
            &mut self.done_values,
            &mut self.pending_rows,
            &mut self.pending_nodes,
            &mut self.rows,
            &mut self.right_rows,
        ] {
            list.resize(len, 0);
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

/// One block's walk through one tree over ranks, in AVX-512 lanes;
/// `PREFETCH`: fetch each lane's next node ahead.
struct GatherWalk<'a, const MISSING: bool, const CATEGORIES: bool, const PREFETCH: bool> {
    simd: V4,
    tree: RankedTree<'a>,
    ranks: &'a [u16],
    n_features: usize,
    values: &'a mut [u32],
}

impl<const MISSING: bool, const CATEGORIES: bool, const PREFETCH: bool> pulp::WithSimd
    for GatherWalk<'_, MISSING, CATEGORIES, PREFETCH>
{
    /// How many of the block's first rows were walked (the rest are the caller's).
    type Output = usize;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> usize {
        self.walk()
    }
}

impl<const MISSING: bool, const CATEGORIES: bool, const PREFETCH: bool> GatherWalk<'_, MISSING, CATEGORIES, PREFETCH> {
    #[inline(always)]
    fn walk(self) -> usize {
        let GatherWalk { simd, tree, ranks, n_features, values } = self;
        let RankedTree { nodes, sets, .. } = tree;
        let n = values.len();
        // The last row is left to the caller: its rank's 4-byte read would
        // pass the end of `ranks`.
        let walked = n.saturating_sub(1);
        if walked == 0 || !gathers_fit(tree, ranks, n, n_features, CATEGORIES) {
            return 0;
        }
        let a = simd.avx512f;
        let splat = |x: usize| a._mm512_set1_epi32(x as i32);
        let zero = a._mm512_setzero_si512();
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
        let lane = a._mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

        let node_next = nodes.as_ptr().cast::<i32>();
        let node_key_word = node_next.wrapping_add(1);
        let rank_words = ranks.as_ptr().cast::<i32>();
        let set_halves = sets.as_ptr().cast::<i32>();
        let mut scratch = SCRATCH.take();
        scratch.fit(walked + 16);
        let Scratch { done_rows, done_values, pending_rows, pending_nodes, rows, right_rows } = &mut scratch;
        let mut done = 0usize;

        // Which lanes go right at their node (key and word), given the rank or code `x`.
        let goes_right = |walking: u16, key, word, x| {
            let mut right = a._mm512_mask_cmpgt_epu32_mask(walking, x, key);
            if CATEGORIES {
                // Bit `x % 64` of the set's word `x / 64` is bit `x % 32`
                // of its low or high half.
                let tested = a._mm512_mask_test_epi32_mask(walking, word, categories_flag);
                let word_at = a._mm512_and_si512(a._mm512_add_epi32(key, a._mm512_srli_epi32::<6>(x)), set_words);
                let half = a._mm512_and_si512(a._mm512_srli_epi32::<5>(x), one);
                let half_at = a._mm512_add_epi32(a._mm512_slli_epi32::<1>(word_at), half);
                // SAFETY: the word index is masked to the set words'
                // count (a power of two), so both halves are in bounds.
                let bits = unsafe { a._mm512_mask_i32gather_epi32::<4>(zero, tested, half_at, set_halves) };
                let shifted = a._mm512_srlv_epi32(bits, a._mm512_and_si512(x, bit_in_word));
                let in_set = a._mm512_mask_test_epi32_mask(tested, shifted, one);
                right = (tested & !in_set) | (!tested & right);
            }
            if MISSING {
                let absent = a._mm512_mask_cmpeq_epi32_mask(walking, x, missing);
                let goes_left = a._mm512_mask_test_epi32_mask(absent, word, default_left_flag);
                right = (right & !absent) | (absent & !goes_left);
            }
            right
        };

        // First, rows are split node by node from the root while a node
        // holds at least PARTITION_MIN_ROWS of them; smaller groups are left
        // pending at their node for the lanes.
        let mut pending = 0usize;
        {
            rows.iter_mut().zip(0..walked as u32).for_each(|(r, i)| *r = i);
            let mut stack = vec![(0usize, 0usize, walked)];
            while let Some((at, lo, hi)) = stack.pop() {
                let node = nodes[at.min(nodes.len() - 1)];
                if node.word & RankNode::LEAF != 0 {
                    for &r in &rows[lo..hi] {
                        done_rows[done] = r;
                        done_values[done] = node.next;
                        done += 1;
                    }
                    continue;
                }
                if hi - lo < PARTITION_MIN_ROWS {
                    pending_rows[pending..pending + hi - lo].copy_from_slice(&rows[lo..hi]);
                    pending_nodes[pending..pending + hi - lo].fill(at as u32);
                    pending += hi - lo;
                    continue;
                }
                let key = splat(node.key.into());
                let word = splat(node.word.into());
                let column_at = splat(usize::from(node.word & RankNode::FEATURE_MASK).min(n_features - 1) * n);
                let (mut n_left, mut n_right) = (0usize, 0usize);
                for start in (lo..hi).step_by(16) {
                    let lanes = if hi - start >= 16 { u16::MAX } else { (1u16 << (hi - start)) - 1 };
                    // SAFETY: `rows` has 16 words of slack past `walked`.
                    let r = unsafe { a._mm512_loadu_epi32(rows.as_ptr().add(start).cast()) };
                    let rank_at = a._mm512_add_epi32(r, column_at);
                    // SAFETY: as the lanes' rank reads below.
                    let x = unsafe { a._mm512_mask_i32gather_epi32::<2>(zero, lanes, rank_at, rank_words) };
                    let x = a._mm512_and_si512(x, low16);
                    let right = goes_right(lanes, key, word, x);
                    let left = lanes & !right;
                    // SAFETY: the left rows go back over positions already
                    // read (n_left <= start - lo), and only as many as there
                    // are (the next range's rows follow); the right ones to a
                    // buffer with 16 words of slack.
                    let n_new_left = left.count_ones();
                    unsafe {
                        a._mm512_mask_storeu_epi32(
                            rows.as_mut_ptr().add(lo + n_left).cast(),
                            ((1u32 << n_new_left) - 1) as u16,
                            a._mm512_maskz_compress_epi32(left, r),
                        );
                        a._mm512_storeu_epi32(
                            right_rows.as_mut_ptr().add(n_right).cast(),
                            a._mm512_maskz_compress_epi32(right, r),
                        );
                    }
                    n_left += n_new_left as usize;
                    n_right += right.count_ones() as usize;
                }
                rows[lo + n_left..hi].copy_from_slice(&right_rows[..n_right]);
                let left_child = node.next as usize;
                stack.push((left_child + 1, lo + n_left, hi));
                stack.push((left_child, lo, lo + n_left));
            }
        }

        // Per vector: each lane's row, its node, and which lanes hold a row at all.
        let mut row = [zero; GROUPS];
        let mut at = [zero; GROUPS];
        let mut active = [0u16; GROUPS];
        let mut next_row = 0usize;
        loop {
            let mut busy = 0u16;
            for g in 0..GROUPS {
                let lanes = active[g];
                // SAFETY: every `at` lane is at most the last node (clamped
                // below, or 0), so both halves of its 8-byte node are in bounds.
                let (next, key_word) = unsafe {
                    (
                        a._mm512_mask_i32gather_epi32::<8>(zero, lanes, at[g], node_next),
                        a._mm512_mask_i32gather_epi32::<8>(zero, lanes, at[g], node_key_word),
                    )
                };
                let key = a._mm512_and_si512(key_word, low16);
                let word = a._mm512_srli_epi32::<16>(key_word);
                let leaf = a._mm512_mask_test_epi32_mask(lanes, word, leaf_flag);
                if PREFETCH {
                    // Both children share a cache line (mostly): it is on its
                    // way while the rank and set words are gathered. A leaf's
                    // `next` is no node, but a prefetch never faults.
                    let mut children = [0u32; 16];
                    // SAFETY: 16 lanes of 4 bytes fill the 16 words.
                    unsafe { a._mm512_storeu_epi32(children.as_mut_ptr().cast(), next) };
                    for &child in &children {
                        crate::dispatch::prefetch(nodes, child as usize);
                    }
                }
                let walking = lanes & !leaf;
                // SAFETY: each row reaches one leaf, so at most `walked` entries are written.
                unsafe {
                    let rows_done = a._mm512_maskz_compress_epi32(leaf, row[g]);
                    let values_done = a._mm512_maskz_compress_epi32(leaf, next);
                    a._mm512_storeu_epi32(done_rows.as_mut_ptr().add(done).cast(), rows_done);
                    a._mm512_storeu_epi32(done_values.as_mut_ptr().add(done).cast(), values_done);
                }
                done += leaf.count_ones() as usize;

                let feature = a._mm512_min_epu32(a._mm512_and_si512(word, feature_mask), last_feature);
                let rank_at = a._mm512_add_epi32(row[g], a._mm512_mullo_epi32(feature, column));
                // SAFETY: the rank sits at `feature * n + row` with
                // row < n - 1 and feature < n_features, so the 4 bytes read
                // from its position end inside the block's `n * n_features` ranks.
                let x = unsafe { a._mm512_mask_i32gather_epi32::<2>(zero, walking, rank_at, rank_words) };
                let x = a._mm512_and_si512(x, low16);
                let right = goes_right(walking, key, word, x);
                let child = a._mm512_min_epu32(a._mm512_mask_add_epi32(next, right, next, one), last_node);

                // Lanes without a row (on a leaf, or idle) take the next rows
                // in lane order, as many as remain.
                let free = !walking;
                let slot = a._mm512_maskz_expand_epi32(free, lane);
                let remaining = splat((pending - next_row).min(16));
                let take = a._mm512_mask_cmplt_epu32_mask(free, slot, remaining);
                // SAFETY: both lists have 16 words of slack past `pending`.
                let (new_row, new_at) = unsafe {
                    (
                        a._mm512_loadu_epi32(pending_rows.as_ptr().add(next_row).cast()),
                        a._mm512_loadu_epi32(pending_nodes.as_ptr().add(next_row).cast()),
                    )
                };
                let new_row = a._mm512_maskz_expand_epi32(take, new_row);
                let new_at = a._mm512_min_epu32(a._mm512_maskz_expand_epi32(take, new_at), last_node);
                row[g] = a._mm512_mask_blend_epi32(take, row[g], new_row);
                at[g] = a._mm512_mask_blend_epi32(take, child, new_at);
                next_row += take.count_ones() as usize;
                active[g] = walking | take;
                busy |= active[g];
            }
            if busy == 0 {
                for (&r, &v) in done_rows[..walked].iter().zip(done_values.iter()) {
                    values[r as usize] = v;
                }
                SCRATCH.set(scratch);
                return walked;
            }
        }
    }
}
