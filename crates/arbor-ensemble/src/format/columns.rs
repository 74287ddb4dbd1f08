//! One tree section read as columns, shared by both formats and by every
//! decoder: the node flags, the index columns and the checked arrays.
//!
//! The columnar encodings of trees: format 3, written, and format 2, read.
//!
//! Each tree is a section of fixed-width little-endian arrays, preceded by
//! its byte length. Decoding is a few straight passes over those arrays
//! instead of a variable-length read per field, and the trees decode in
//! parallel. Trees whose siblings are adjacent (all that arbor writes)
//! decode straight into the flat traversal layout, node for node.
//!
//! Format 3 stores each distinct threshold and each distinct leaf output of
//! a tree once, and refers to them, to features, to leaves and to children
//! by indices only as wide as the tree needs (1, 2 or 4 bytes). A split's
//! right child is stored only when it does not follow its left one. A grown
//! forest's leaves mostly repeat a few class distributions and its splits a
//! few hundred thresholds per feature: the flights forest takes 32 MB
//! instead of format 2's 119 MB, which is written, synced and read back
//! that much faster.
//!
//! ```text
//! u64 tree count, then per tree: u64 section length, then the section:
//!   u32 nodes, u32 category sets, u32 category words, u32 distinct thresholds,
//!   u32 values, u32 group width w, u32 distinct groups
//!   u8  widths of: words, children, threshold indices, group indices
//!   u8  children stored per split: 1 (the right is left + 1) or 2
//!   u8  flags[nodes]              split, default left, test kind, zero left
//!   word[nodes]                   a split's feature, a leaf's value offset / w
//!   child[splits * per split]     left (then right), splits in node order
//!   u32 set_len[]                 words per category set, in node order
//!   u64 set_words[]
//!   f64 thresholds[distinct]      in order of first use
//!   index[numeric splits]         each `x <= t` or zero-as-missing test's threshold
//!   f64 groups[distinct * w]      distinct runs of w leaf values, in order of first use
//!   index[values / w]             the tree's leaf values, a run of w at a time
//! ```
//!
//! `w` is the model's leaf width when every leaf's values start on a multiple
//! of it and the tree holds no more values than its leaves use, else 1.
//!
//! Format 2 has no tables: after five u32 counts (nodes, thresholds, category
//! sets, category words, values) come `u8 flags[nodes]`, `u32 word[nodes]`
//! (the value offset itself), `u32 children[2 * splits]`, `f64 thresholds[]`,
//! `u32 set_len[]`, `u64 set_words[]` and `f64 values[]`.

#[cfg(doc)]
use crate::model::tree::SplitTest;

/// The node is a split (otherwise a leaf).
pub(crate) const SPLIT: u8 = 1;
/// Missing values go left.
pub(crate) const DEFAULT_LEFT: u8 = 1 << 1;
/// The test is [`SplitTest::InCategories`].
pub(crate) const CATEGORIES: u8 = 1 << 2;
/// The test is [`SplitTest::ZeroAsMissing`].
pub(crate) const ZERO_AS_MISSING: u8 = 1 << 3;
/// A zero-as-missing test sends zeros left.
pub(crate) const ZERO_LEFT: u8 = 1 << 4;
/// Every flag a valid node may carry.
const KNOWN: u8 = SPLIT | DEFAULT_LEFT | CATEGORIES | ZERO_AS_MISSING | ZERO_LEFT;

/// A column of indices, each `width` (1, 2 or 4) bytes little endian, read
/// where the section holds them: a loaded forest's millions of indices are
/// never copied out.
#[derive(Clone, Copy)]
pub(crate) struct Indices<'a> {
    bytes: &'a [u8],
    width: usize,
}

impl<'a> Indices<'a> {
    /// The indices of `bytes` (a multiple of `width` long).
    pub(crate) fn new(bytes: &'a [u8], width: usize) -> Indices<'a> {
        debug_assert!(matches!(width, 1 | 2 | 4) && bytes.len() % width == 0);
        Indices { bytes, width }
    }

    /// The number of indices.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    /// Index `i`, if there is one.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<u32> {
        self.bytes.get(i * self.width..(i + 1) * self.width).map(index_at)
    }

    /// Index `i`, which must exist.
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> u32 {
        self.get(i).expect("an index within the column")
    }

    /// Replaces `out` with every index, in order.
    pub fn decode_into(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend(self.iter());
    }

    /// Every index, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + 'a {
        self.bytes.chunks_exact(self.width).map(index_at)
    }
}

/// The little-endian index held by `bytes` (1, 2 or 4 of them).
#[inline(always)]
pub(crate) fn index_at(bytes: &[u8]) -> u32 {
    match *bytes {
        [b] => u32::from(b),
        [b0, b1] => u32::from(u16::from_le_bytes([b0, b1])),
        [b0, b1, b2, b3] => u32::from_le_bytes([b0, b1, b2, b3]),
        _ => unreachable!("indices are 1, 2 or 4 bytes wide"),
    }
}

/// One tree section's arrays, their lengths and indices checked.
pub(crate) struct Columns<'a> {
    pub flags: &'a [u8],
    /// A split's feature, a leaf's value offset divided by `group`.
    pub words: Indices<'a>,
    /// Each split's left child, or its left and right children when `pairs`.
    pub children: Indices<'a>,
    pub pairs: bool,
    pub set_lens: Vec<u32>,
    pub set_words: Vec<u64>,
    /// The distinct thresholds, and each numeric split's index among them
    /// in node order (`None`: one threshold per split, in order).
    pub distinct: Vec<f64>,
    pub threshold_at: Option<Indices<'a>>,
    /// The distinct runs of `group` leaf values, and the index of each run
    /// of the tree's values among them (`None`: the values in order).
    pub groups: Vec<f64>,
    pub group: usize,
    pub group_at: Option<Indices<'a>>,
}

impl<'a> Columns<'a> {
    /// A section of format `version` (2 to 4: sections of 3 and 4 are alike), whose trees have leaves `leaf_width` values wide.
    pub(crate) fn parse(section: &'a [u8], version: u32, leaf_width: usize) -> Result<Columns<'a>, String> {
        if version == 2 {
            Columns::read_v2(section)
        } else {
            Columns::read(section, leaf_width)
        }
    }

    /// The category sets are one per category split and hold the set words exactly.
    pub(crate) fn check_sets(&self, n_sets: usize, n_categories: usize) -> Result<(), String> {
        if n_categories != n_sets {
            return Err("more or fewer category sets than its nodes use".into());
        }
        if self.set_lens.iter().map(|&l| l as usize).sum::<usize>() != self.set_words.len() {
            return Err("more or fewer category words than its sets use".into());
        }
        Ok(())
    }

    /// Every split's right child comes right after its left one.
    pub(crate) fn siblings_adjacent(&self) -> bool {
        !self.pairs
            || (0..self.children.len() / 2)
                .all(|k| self.children.at(2 * k).checked_add(1) == Some(self.children.at(2 * k + 1)))
    }

    /// Split `k`'s children.
    pub(crate) fn children(&self, k: usize) -> (u32, u32) {
        if self.pairs {
            (self.children.at(2 * k), self.children.at(2 * k + 1))
        } else {
            let left = self.children.at(k);
            (left, left.wrapping_add(1))
        }
    }

    /// One threshold per numeric split, in node order.
    pub fn thresholds(&self) -> Vec<f64> {
        match &self.threshold_at {
            Some(at) => expand(&self.distinct, 1, *at),
            None => self.distinct.clone(),
        }
    }

    /// The tree's leaf values, in order.
    pub fn values(&self) -> Vec<f64> {
        match &self.group_at {
            Some(at) => expand(&self.groups, self.group, *at),
            None => self.groups.clone(),
        }
    }
}

/// The runs of `group` values of `table` that `at` lists (checked to be in it), one after another.
pub(crate) fn expand(table: &[f64], group: usize, at: Indices<'_>) -> Vec<f64> {
    let mut values = Vec::with_capacity(at.len() * group);
    match group {
        1 => values.extend(at.iter().map(|i| table[i as usize])),
        // Two classes, a forest's usual leaf: no copy call per leaf.
        2 => values.extend(at.iter().flat_map(|i| {
            let i = 2 * i as usize;
            [table[i], table[i + 1]]
        })),
        _ => at.iter().for_each(|i| values.extend_from_slice(&table[i as usize * group..][..group])),
    }
    values
}

/// Checks that every one of `at` indexes a table of `len` entries of `what`.
pub(crate) fn check_indices(at: Indices<'_>, len: usize, what: &str) -> Result<(), String> {
    match at.iter().max() {
        Some(i) if i as usize >= len => Err(format!("{what} {i} of {len}")),
        _ => Ok(()),
    }
}

/// Checks that each of `flags` is known; counts the splits and the category splits.
pub(crate) fn count_flags(flags: &[u8]) -> Result<(usize, usize), String> {
    let (mut n_splits, mut n_categories) = (0, 0);
    for (i, &f) in flags.iter().enumerate() {
        if f & !KNOWN != 0 || (f & CATEGORIES != 0 && f & ZERO_AS_MISSING != 0) {
            return Err(format!("node {i} has unknown flags {f:#04x}"));
        }
        if f & SPLIT == 0 && f != 0 {
            return Err(format!("leaf {i} has split flags {f:#04x}"));
        }
        n_splits += usize::from(f & SPLIT != 0);
        n_categories += usize::from(f & CATEGORIES != 0);
    }
    Ok((n_splits, n_categories))
}

/// Little-endian u32s of `bytes` (a multiple of 4 long).
pub(crate) fn u32s(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

pub(crate) fn f64_at(bytes: &[u8]) -> f64 {
    f64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

pub(crate) fn u64_at(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// Reads consecutive pieces of a byte slice, failing cleanly at its end.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        if len > self.0.len() {
            return Err(format!("truncated: {len} bytes wanted, {} left", self.0.len()));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    /// `count` items of `width` bytes.
    pub(crate) fn array(&mut self, count: usize, width: usize) -> Result<&'a [u8], String> {
        self.take(count.checked_mul(width).ok_or("an array length overflows")?)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub(crate) fn finish(&self, place: &str) -> Result<(), String> {
        match self.0.len() {
            0 => Ok(()),
            extra => Err(format!("{extra} unexpected bytes {place}")),
        }
    }
}
