//! The trees the walks read: 16-byte [`FlatNode`]s over values and 8-byte
//! [`RankNode`]s over ranks, and the depth and block sizes the walks share.

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
    /// The test is "the value's integer part is in a set of categories":
    /// `threshold`'s bits hold where the set's words start in the caller's
    /// category words (low 32 bits) and how many there are (high 32 bits).
    pub const CATEGORIES: u32 = 1 << 28;
    /// The bits of `word` that hold the feature index.
    pub const FEATURE_MASK: u32 = Self::CATEGORIES - 1;

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

    /// A split sending `x` left when bit `x` (the value's integer part) of
    /// the set is on: the set is `words` words from `offset` in the caller's
    /// category words. Values below 0 or past the set go right.
    pub fn categories(feature: u32, offset: u32, words: u32, default_left: bool, left: u32) -> FlatNode {
        let flag = if default_left { Self::DEFAULT_LEFT } else { 0 };
        let threshold = f64::from_bits(u64::from(offset) | u64::from(words) << 32);
        FlatNode { threshold, word: feature | flag | Self::CATEGORIES, next: left }
    }

    /// A leaf at `index` whose output starts at `value` in the caller's
    /// values: every row stays on it, NaN included.
    pub fn leaf(index: u32, value: u32) -> FlatNode {
        let threshold = f64::from_bits(Self::LEAF_NAN | u64::from(value));
        FlatNode { threshold, word: Self::LEAF | Self::DEFAULT_LEFT, next: index }
    }

    /// Where a [`FlatNode::CATEGORIES`] split's set starts in the category
    /// words, and how many words it has.
    pub fn category_words(self) -> (usize, usize) {
        let packed = self.threshold.to_bits();
        (packed as u32 as usize, (packed >> 32) as usize)
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
}

/// A flattened tree as the walk reads it.
#[derive(Clone, Copy, Debug)]
pub struct TreeNodes<'a> {
    /// The nodes; node 0 is the root.
    pub nodes: &'a [FlatNode],
    /// The longest root-to-leaf path.
    pub depth: usize,
    /// The words of the [`FlatNode::CATEGORIES`] tests' sets; `None` when the
    /// tree has no such test (`Some` of no words when all its sets are empty).
    pub sets: Option<&'a [u64]>,
}

/// Deepest tree traversed level by level; deeper trees walk in lanes. On
/// the flights models, scalar lanes beat level by level past this depth
/// (forest trees about 40 deep) and lose to it on boosting's depth-6 trees.
/// (At the `avx512` SIMD level the walk over ranks gathers at every depth.)
pub const LEVEL_BY_LEVEL_MAX_DEPTH: usize = 16;
/// Rows that go through a tree together: enough that the walk in lanes
/// rarely runs with lanes idle at a block's end, and that the gathered walk
/// splits many levels node by node (on the flights forest, 256 made the
/// scalar walk 6% slower; 8,192 takes the gathered walk from 0.213 s at
/// 2,048 to 0.200 s, 16,384 only to 0.196 s).
pub const TRAVERSAL_BLOCK: usize = 8192;
/// One node of a tree over ranks (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct RankNode {
    /// A split's left child (the right child follows it); a leaf's value offset.
    pub next: u32,
    /// A threshold split's rank `k` (ranks up to `k` go left); a category
    /// split's first word in the tree's set words.
    pub key: u16,
    /// The feature index and the [`RankNode::LEAF`], [`RankNode::DEFAULT_LEFT`]
    /// and [`RankNode::CATEGORIES`] flags.
    pub word: u16,
}

impl RankNode {
    /// The node is a leaf.
    pub const LEAF: u16 = 1 << 15;
    /// Missing values go left.
    pub const DEFAULT_LEFT: u16 = 1 << 14;
    /// The test is "bit `code` of the set at `key` is on".
    pub const CATEGORIES: u16 = 1 << 13;
    /// The bits of `word` that hold the feature index.
    pub const FEATURE_MASK: u16 = Self::CATEGORIES - 1;
    /// Features a tree over ranks can test.
    pub const MAX_FEATURES: usize = Self::FEATURE_MASK as usize + 1;
    /// The rank of a missing value (NaN).
    pub const MISSING: u16 = u16::MAX;
    /// The largest rank or category code of a present value, so a threshold
    /// split's `k` is below it and a feature has at most this many thresholds.
    pub const MAX_RANK: u16 = u16::MAX - 1;

    /// A split sending ranks up to `rank` to `left`, the rest to `left + 1`.
    pub fn split(feature: u16, rank: u16, default_left: bool, left: u32) -> RankNode {
        debug_assert!(usize::from(feature) < Self::MAX_FEATURES && rank < Self::MAX_RANK);
        RankNode { next: left, key: rank, word: feature | Self::flag(default_left) }
    }

    /// A split sending category `code` left when bit `code` of the set whose
    /// words start at `offset` is on.
    pub fn categories(feature: u16, offset: u16, default_left: bool, left: u32) -> RankNode {
        debug_assert!(usize::from(feature) < Self::MAX_FEATURES);
        RankNode { next: left, key: offset, word: feature | Self::CATEGORIES | Self::flag(default_left) }
    }

    /// A leaf whose output starts at `value` in the caller's values.
    pub fn leaf(value: u32) -> RankNode {
        RankNode { next: value, key: 0, word: Self::LEAF }
    }

    fn flag(default_left: bool) -> u16 {
        if default_left {
            Self::DEFAULT_LEFT
        } else {
            0
        }
    }
}

/// A tree over ranks as the walk reads it.
#[derive(Clone, Copy, Debug)]
pub struct RankedTree<'a> {
    /// The nodes; node 0 is the root.
    pub nodes: &'a [RankNode],
    /// The longest root-to-leaf path.
    pub depth: usize,
    /// The words of the category splits' sets: none, or a power of two of
    /// them (padded with zeros), so a mask keeps every read in bounds.
    pub sets: &'a [u64],
}
