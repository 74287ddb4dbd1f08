//! QuickScorer's leaf bitvectors (Lucchese et al., SIGIR 2015) over ranks:
//! boosted trees scored without walking them.
//!
//! Each tree of at most 64 leaves gets a bitvector of the leaves a row can
//! still reach, leaf `i` from the left at bit `63 - i`. A split the row fails
//! (it goes right) rules out its left subtree's leaves: the row's bitvector
//! is ANDed with the split's mask. After every split of the tree, the row's
//! exit leaf is the leftmost leaf left: the highest set bit. Every split is
//! tested, but no test waits on another and no branch depends on the data.
//!
//! At the `avx512` SIMD level, 32 rows go together: a threshold split is one
//! compare of their 16-bit ranks (a category split a lookup of their codes
//! in the set, held as 32 words of 16 bits in one register) and four masked
//! ANDs of eight rows' 64-bit bitvectors, held in registers for the whole
//! tree. QuickScorer proper goes feature by feature over every tree's splits,
//! stopping at the first one every row passes; written so (eight rows a
//! vector, the bitvectors in memory) it took 1.25 times the gathered walk's
//! time on 50 depth-6 trees, bound by the bitvectors' loads and stores.
//! Tree by tree in registers, two threads score the test rows of the
//! boosting peer table's models in 0.38–0.50 of the walk's whole time, with
//! the rank search of `threshold_rank` (a tie on digits' 360 rows;
//! `docs/performance.md`). Other SIMD levels keep the walk, and
//! [`QuickScorer::add_scores_scalar`] is the definition the lanes are tested
//! against.

use crate::traverse::nodes::{RankNode, RankedTree};

/// One split as the scorer reads it (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct Split {
    /// The tree's bitvector after a row fails the split: its left subtree's leaves cleared.
    mask: u64,
    /// The split's feature.
    feature: u32,
    /// Ranks up to `key` pass (go left); for a category split, its set's
    /// index in the scorer's sets.
    key: u16,
    /// A missing value passes.
    default_left: bool,
    /// Codes in the set at `key` pass.
    categories: bool,
}

/// Boosted trees as leaf bitvectors: each tree's splits with the leaves a
/// failed one rules out, and its leaf values in leaf order.
#[derive(Clone, Debug, PartialEq)]
pub struct QuickScorer {
    n_features: usize,
    /// Where each tree's splits start in `splits` (one more entry than trees).
    starts: Vec<usize>,
    splits: Vec<Split>,
    /// The category splits' sets, as 32 words of 16 bits: code `c` is bit
    /// `c % 16` of word `c / 16`, and word 31 is zero for the codes past
    /// every set (and, as the last word, for missing values).
    sets: Vec<[u16; 32]>,
    /// Per tree, [`QuickScorer::MAX_LEAVES`] values: its leaves' from the
    /// left, then zeros.
    leaf_values: Vec<f64>,
    /// Per tree, the output its values add to.
    outputs: Vec<usize>,
}

impl QuickScorer {
    /// The most leaves a tree can have: one bit each in a 64-bit word.
    pub const MAX_LEAVES: usize = 64;

    /// The most words (of 64 codes) of a feature's category sets: their
    /// 448 codes and the one past them (which reads as outside every set)
    /// index words 0–28 of the 32 16-bit words a set is held in, so word 31,
    /// where missing values and larger codes land, stays zero.
    pub const MAX_SET_WORDS: usize = 7;

    /// The scorer of `trees` over features whose category sets are
    /// `set_words[f]` words wide (0 for a feature split by thresholds; the
    /// width the walk pads them to), each tree given with the values its
    /// leaves' offsets point into (one per leaf), tree `t` adding to output
    /// `t % n_outputs`; `None` when a tree has more than
    /// [`QuickScorer::MAX_LEAVES`] leaves, a category split on a feature
    /// wider than [`QuickScorer::MAX_SET_WORDS`], a feature past
    /// `set_words` or a leaf offset past its values.
    pub fn new<'a>(
        trees: impl IntoIterator<Item = (RankedTree<'a>, &'a [f64])>,
        set_words: &[usize],
        n_outputs: usize,
    ) -> Option<QuickScorer> {
        let n_outputs = n_outputs.max(1);
        let n_features = set_words.len();
        let mut scorer = QuickScorer {
            n_features,
            starts: vec![0],
            splits: Vec::new(),
            sets: Vec::new(),
            leaf_values: Vec::new(),
            outputs: Vec::new(),
        };
        let mut leaves = Vec::with_capacity(Self::MAX_LEAVES);
        for (t, (tree, values)) in trees.into_iter().enumerate() {
            leaves.clear();
            let first = scorer.splits.len();
            leaf_order(tree.nodes, 0, 0, &mut leaves, &mut scorer.splits)?;
            for split in &mut scorer.splits[first..] {
                let words = *set_words.get(split.feature as usize)?;
                if split.categories {
                    if words > Self::MAX_SET_WORDS {
                        return None;
                    }
                    let offset = usize::from(split.key);
                    let mut set = [0u16; 32];
                    for (w, &word) in tree.sets.get(offset..offset + words)?.iter().enumerate() {
                        for quarter in 0..4 {
                            set[4 * w + quarter] = (word >> (16 * quarter)) as u16;
                        }
                    }
                    split.key = u16::try_from(scorer.sets.len()).ok()?;
                    scorer.sets.push(set);
                }
            }
            scorer.starts.push(scorer.splits.len());
            let start = scorer.leaf_values.len();
            scorer.leaf_values.resize(start + Self::MAX_LEAVES, 0.0);
            for (slot, &offset) in scorer.leaf_values[start..].iter_mut().zip(&leaves) {
                *slot = *values.get(offset as usize)?;
            }
            scorer.outputs.push(t % n_outputs);
        }
        Some(scorer)
    }

    /// The number of trees.
    pub fn n_trees(&self) -> usize {
        self.outputs.len()
    }

    /// Whether [`QuickScorer::add_scores`] runs on this thread (at the
    /// `avx512` SIMD level); elsewhere the walk is faster.
    pub fn runs_here() -> bool {
        #[cfg(target_arch = "x86_64")]
        if crate::dispatch::avx512().is_some() {
            return true;
        }
        false
    }

    /// Adds every tree's value for each row of a traversal block to its
    /// output's score, tree by tree in order, and returns true; returns false
    /// and adds nothing unless [`QuickScorer::runs_here`]. `ranks`: the
    /// block's `n_rows` ranks of each feature, feature by feature (as the
    /// walk reads them); row `r`'s score for output `o` is
    /// `scores[o * stride + r]`. `missing`: some rank may be [`RankNode::MISSING`].
    pub fn add_scores(&self, ranks: &[u16], n_rows: usize, missing: bool, scores: &mut [f64], stride: usize) -> bool {
        self.check(ranks, n_rows, scores, stride);
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = crate::dispatch::avx512() {
            pulp::Simd::vectorize(simd, Lanes { simd, scorer: self, ranks, n_rows, missing, scores, stride });
            return true;
        }
        let _ = (missing, scores, stride);
        false
    }

    /// [`QuickScorer::add_scores`] one row at a time, at any SIMD level: the
    /// definition the lanes must match to the bit.
    pub fn add_scores_scalar(&self, ranks: &[u16], n_rows: usize, scores: &mut [f64], stride: usize) {
        self.check(ranks, n_rows, scores, stride);
        for r in 0..n_rows {
            for t in 0..self.n_trees() {
                let mut reach = u64::MAX;
                for split in &self.splits[self.starts[t]..self.starts[t + 1]] {
                    let rank = ranks[split.feature as usize * n_rows + r];
                    let fails = if rank == RankNode::MISSING {
                        !split.default_left
                    } else if split.categories {
                        let word = self.sets[usize::from(split.key)][usize::from(rank >> 4).min(31)];
                        word >> (rank & 15) & 1 == 0
                    } else {
                        rank > split.key
                    };
                    if fails {
                        reach &= split.mask;
                    }
                }
                let leaf = (reach.leading_zeros() as usize).min(Self::MAX_LEAVES - 1);
                scores[self.outputs[t] * stride + r] += self.leaf_values[t * Self::MAX_LEAVES + leaf];
            }
        }
    }

    /// Panics unless the block's ranks and scores have the shapes `add_scores` documents.
    fn check(&self, ranks: &[u16], n_rows: usize, scores: &[f64], stride: usize) {
        assert_eq!(ranks.len(), n_rows * self.n_features, "one rank per row and feature");
        let outputs = self.outputs.iter().max().map_or(0, |&o| o + 1);
        assert!(n_rows <= stride || outputs <= 1, "the outputs' scores do not overlap");
        assert!(outputs == 0 || scores.len() >= (outputs - 1) * stride + n_rows, "a score per row and output");
    }
}

/// Appends the leaves under `node` to `leaves` (their value offsets, from
/// the left) and its splits to `splits` (a category split's `key` still
/// its set's offset in the tree's set words); `None` past
/// [`QuickScorer::MAX_LEAVES`] leaves, or on a child index out of bounds
/// or a path longer than any tree of that many leaves.
fn leaf_order(
    nodes: &[RankNode],
    node: usize,
    depth: usize,
    leaves: &mut Vec<u32>,
    splits: &mut Vec<Split>,
) -> Option<()> {
    let at = *nodes.get(node)?;
    if at.word & RankNode::LEAF != 0 {
        if leaves.len() == QuickScorer::MAX_LEAVES {
            return None;
        }
        leaves.push(at.next);
        return Some(());
    }
    if depth >= QuickScorer::MAX_LEAVES {
        return None;
    }
    let first = leaves.len();
    leaf_order(nodes, at.next as usize, depth + 1, leaves, splits)?;
    let left: u64 = (first..leaves.len()).map(|i| 1u64 << (63 - i)).sum();
    leaf_order(nodes, at.next as usize + 1, depth + 1, leaves, splits)?;
    let feature = at.word & RankNode::FEATURE_MASK;
    let default_left = at.word & RankNode::DEFAULT_LEFT != 0;
    let categories = at.word & RankNode::CATEGORIES != 0;
    splits.push(Split { mask: !left, feature: feature.into(), key: at.key, default_left, categories });
    Some(())
}

/// The scorer's pass over one traversal block in AVX-512 lanes, 32 rows at a time.
#[cfg(target_arch = "x86_64")]
struct Lanes<'a> {
    simd: pulp::x86::V4,
    scorer: &'a QuickScorer,
    ranks: &'a [u16],
    n_rows: usize,
    missing: bool,
    scores: &'a mut [f64],
    stride: usize,
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Lanes<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        if self.missing {
            self.run::<true>()
        } else {
            self.run::<false>()
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes<'_> {
    #[inline(always)]
    fn run<const MISSING: bool>(self) {
        let Lanes { simd, scorer, ranks, n_rows, scores, stride, .. } = self;
        let a = simd.avx512f;
        let bw = simd.avx512bw;
        let everything = a._mm512_set1_epi64(-1);
        let absent_rank = a._mm512_set1_epi16(RankNode::MISSING as i16);
        let last_leaf = a._mm512_set1_epi64(QuickScorer::MAX_LEAVES as i64 - 1);
        let (last_word, low_four, one) = (a._mm512_set1_epi16(31), a._mm512_set1_epi16(15), a._mm512_set1_epi16(1));
        let nf = scorer.n_features;
        // Per feature, the ranks of 32 rows (zeros past the block's end), and which are missing.
        let mut rank_lanes = vec![[0u16; 32]; nf];
        let mut absent = vec![0u32; nf];
        for r0 in (0..n_rows).step_by(32) {
            let lanes = (n_rows - r0).min(32);
            let tail = (u32::MAX as u64 >> (32 - lanes)) as u32;
            let tails: [u8; 4] = std::array::from_fn(|g| (tail >> (8 * g)) as u8);
            for f in 0..nf {
                let at = ranks.as_ptr().wrapping_add(f * n_rows + r0);
                // SAFETY: the lanes read are rows below `n_rows` of feature
                // `f`'s column, in bounds (checked on entry); the rest read 0.
                let rank = unsafe { bw._mm512_maskz_loadu_epi16(tail, at.cast()) };
                // SAFETY: 32 ranks of a `[u16; 32]`.
                unsafe { a._mm512_storeu_epi64(rank_lanes[f].as_mut_ptr().cast(), rank) };
                if MISSING {
                    absent[f] = bw._mm512_cmpeq_epi16_mask(rank, absent_rank);
                }
            }
            for t in 0..scorer.n_trees() {
                let mut bits = [everything; 4];
                for split in &scorer.splits[scorer.starts[t]..scorer.starts[t + 1]] {
                    let key = a._mm512_set1_epi16(split.key as i16);
                    let mask = a._mm512_set1_epi64(split.mask as i64);
                    let f = split.feature as usize;
                    // SAFETY: 32 ranks of a `[u16; 32]`.
                    let rank = unsafe { a._mm512_loadu_epi64(rank_lanes[f].as_ptr().cast()) };
                    let mut fails = if split.categories {
                        // Bit `c % 16` of the set's word `c / 16`, the last (zero) word past it.
                        // SAFETY: 32 words of a `[u16; 32]`.
                        let set = unsafe { a._mm512_loadu_epi64(scorer.sets[usize::from(split.key)].as_ptr().cast()) };
                        let word = bw._mm512_permutexvar_epi16(
                            bw._mm512_min_epu16(bw._mm512_srli_epi16::<4>(rank), last_word),
                            set,
                        );
                        let bit = bw._mm512_srlv_epi16(word, a._mm512_and_si512(rank, low_four));
                        bw._mm512_testn_epi16_mask(bit, one)
                    } else {
                        bw._mm512_cmpgt_epu16_mask(rank, key)
                    };
                    if MISSING && split.default_left {
                        fails &= !absent[f];
                    }
                    for (g, bits) in bits.iter_mut().enumerate() {
                        *bits = a._mm512_mask_and_epi64(*bits, (fails >> (8 * g)) as u8, *bits, mask);
                    }
                }
                for g in 0..4 {
                    if tails[g] == 0 {
                        break;
                    }
                    // The leftmost leaf left; a tree always keeps its rightmost
                    // leaf, and the clamp keeps any other word in bounds.
                    let leaf = a._mm512_min_epu64(simd.avx512cd._mm512_lzcnt_epi64(bits[g]), last_leaf);
                    let at = scorer.outputs[t] * stride + r0 + 8 * g;
                    // SAFETY: the leaf index is below 64, in tree `t`'s values;
                    // the rows masked in are below `n_rows`, whose scores are in
                    // bounds for every output (checked on entry).
                    unsafe {
                        let values = scorer.leaf_values.as_ptr().add(t * QuickScorer::MAX_LEAVES);
                        let value = a._mm512_i64gather_pd::<8>(leaf, values.cast());
                        let out = scores.as_mut_ptr().add(at);
                        let sum = a._mm512_add_pd(a._mm512_maskz_loadu_pd(tails[g], out), value);
                        a._mm512_mask_storeu_pd(out, tails[g], sum);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::ranked::ranked_leaves_block;
    use crate::traverse::ranked::tests::{pair, rank, value, Pair};
    use proptest::prelude::*;

    type Shape = Vec<(u8, u16, bool, u64, u64)>;

    fn shapes() -> impl Strategy<Value = Vec<Shape>> {
        // At most 63 splits: at most 64 leaves.
        let shape =
            proptest::collection::vec((any::<u8>(), any::<u16>(), any::<bool>(), any::<u64>(), any::<u64>()), 0..64);
        proptest::collection::vec(shape, 1..5)
    }

    proptest! {
        /// The scorer adds, tree by tree, the values of the leaves the walk
        /// over ranks reaches, to the bit: one row at a time and in AVX-512
        /// lanes where the CPU has them, with missing values and category
        /// splits, several outputs, any block length (partial groups of 32
        /// rows included).
        #[test]
        fn the_scorer_adds_the_values_of_the_walks_leaves(
            shapes in shapes(),
            n_categorical in 0u16..3,
            set_words in 1usize..3,
            rows in proptest::collection::vec(value(), 0..(4 * 200)),
            n_outputs in 1usize..3,
        ) {
            let n_features = 4;
            let trees: Vec<Pair> = shapes.iter().map(|shape| pair(shape, n_features, n_categorical, set_words)).collect();
            // Leaf `i` holds value offset `3 * i`.
            let values: Vec<Vec<f64>> =
                trees.iter().map(|p| (0..3 * p.ranked.len()).map(|v| (v as f64 * 0.37).sin()).collect()).collect();
            let n_rows = rows.len() / 4;
            let ranks: Vec<u16> = (0..4)
                .flat_map(|f| (0..n_rows).map(move |r| (f, r)))
                .map(|(f, r)| rank(rows[r * 4 + f], f < usize::from(n_categorical), set_words))
                .collect();
            let missing = ranks.contains(&RankNode::MISSING);
            let stride = n_rows + 3;
            let base: Vec<f64> = (0..n_outputs * stride).map(|i| i as f64 * 0.5).collect();
            let mut expected = base.clone();
            for (t, (p, values)) in trees.iter().zip(&values).enumerate() {
                let tree = RankedTree { nodes: &p.ranked, depth: p.depth, sets: &p.ranked_sets };
                let mut leaves = vec![0u32; n_rows];
                ranked_leaves_block(tree, &ranks, 4, missing, &mut leaves);
                for (r, &leaf) in leaves.iter().enumerate() {
                    expected[(t % n_outputs) * stride + r] += values[leaf as usize];
                }
            }
            let widths: Vec<usize> = (0..4).map(|f| if f < usize::from(n_categorical) { set_words } else { 0 }).collect();
            let scorer = QuickScorer::new(
                trees.iter().zip(&values).map(|(p, values)| {
                    (RankedTree { nodes: &p.ranked, depth: p.depth, sets: &p.ranked_sets }, &values[..])
                }),
                &widths,
                n_outputs,
            );
            let scorer = scorer.expect("trees of at most 64 leaves and narrow sets");
            let mut scalar = base.clone();
            scorer.add_scores_scalar(&ranks, n_rows, &mut scalar, stride);
            prop_assert_eq!(scalar.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            for level in crate::dispatch::SimdLevel::available() {
                let mut lanes = base.clone();
                let ran = crate::dispatch::with_simd_level(level, || scorer.add_scores(&ranks, n_rows, missing, &mut lanes, stride)).unwrap();
                let runs_here = crate::dispatch::with_simd_level(level, QuickScorer::runs_here).unwrap();
                prop_assert_eq!(ran, runs_here);
                let want = if ran { &expected } else { &base };
                prop_assert_eq!(lanes.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{}", level);
            }
        }
    }

    /// Trees the bitvectors cannot hold are refused: 65 leaves, category
    /// sets wider than [`QuickScorer::MAX_SET_WORDS`], a feature past the
    /// widths given, a leaf offset past the values.
    #[test]
    fn trees_past_its_limits_are_refused() {
        // Each split's left child is a leaf, its right child the next split.
        let chain = |splits: usize| {
            let mut tree = Vec::new();
            for s in 0..splits {
                let left = tree.len() as u32 + 1;
                tree.push(RankNode::split(0, s as u16, false, left));
                tree.push(RankNode::leaf(s as u32));
            }
            tree.push(RankNode::leaf(splits as u32));
            tree
        };
        let values = vec![1.0; 70];
        let scorer = |nodes: &[RankNode], widths: &[usize], values: &[f64]| {
            let tree = RankedTree { nodes, depth: 70, sets: &[] };
            QuickScorer::new([(tree, values)], widths, 1)
        };
        assert!(scorer(&chain(63), &[0], &values).is_some(), "64 leaves fit");
        assert!(scorer(&chain(64), &[0], &values).is_none(), "65 leaves do not");
        assert!(scorer(&chain(3), &[], &values).is_none(), "feature 0 has no width");
        assert!(scorer(&chain(3), &[0], &values[..3]).is_none(), "leaf offset 3 past three values");
        let sets = vec![0u64; 16];
        let categories = [RankNode::categories(0, 0, true, 1), RankNode::leaf(0), RankNode::leaf(1)];
        let tree = RankedTree { nodes: &categories, depth: 2, sets: &sets };
        assert!(QuickScorer::new([(tree, &values[..])], &[QuickScorer::MAX_SET_WORDS], 1).is_some());
        assert!(QuickScorer::new([(tree, &values[..])], &[QuickScorer::MAX_SET_WORDS + 1], 1).is_none());
    }
}
