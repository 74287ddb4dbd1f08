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

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Read;

use arbor_kernels::FlatNode;
use rayon::prelude::*;

use crate::flat_tree::FlatTree;
use crate::key_map::KeyHash;
use crate::model::Feature;
use crate::model_format::{Payload, FORMAT_VERSION};
use crate::ranked_columns;
use crate::ranked_forest::RankedForest;
use crate::tree::{Node, SplitTest, Tree};
use crate::tree_sections::Sections;
use crate::trees::Trees;

/// The node is a split (otherwise a leaf).
pub(crate) const SPLIT: u8 = 1;
/// Missing values go left.
pub(crate) const DEFAULT_LEFT: u8 = 1 << 1;
/// The test is [`SplitTest::InCategories`].
pub(crate) const CATEGORIES: u8 = 1 << 2;
/// The test is [`SplitTest::ZeroAsMissing`].
pub(crate) const ZERO_AS_MISSING: u8 = 1 << 3;
/// A zero-as-missing test sends zeros left.
const ZERO_LEFT: u8 = 1 << 4;
/// Every flag a valid node may carry.
const KNOWN: u8 = SPLIT | DEFAULT_LEFT | CATEGORIES | ZERO_AS_MISSING | ZERO_LEFT;

/// Appends the format 3 encoding of `trees`, whose leaves hold `leaf_width`
/// values each, to `out`.
pub(crate) fn encode(trees: &[Tree], leaf_width: usize, out: &mut Vec<u8>) {
    let sections: Vec<Vec<u8>> = trees.par_iter().map(|tree| encode_tree(tree, leaf_width)).collect();
    out.reserve(8 + sections.iter().map(|s| 8 + s.len()).sum::<usize>());
    let sections: Vec<&[u8]> = sections.iter().map(Vec::as_slice).collect();
    visit_sections(&sections, &mut |piece| out.extend_from_slice(piece));
}

/// Hands `f` the tree count, then each section after its length.
fn visit_sections(sections: &[&[u8]], f: &mut impl FnMut(&[u8])) {
    f(&(sections.len() as u64).to_le_bytes());
    for section in sections {
        f(&(section.len() as u64).to_le_bytes());
        f(section);
    }
}

/// A model's trees kept as their format 3 sections, with what decoding them
/// needs. A forest holds its trees this way from the moment each is grown
/// (a tenth of the memory of node lists), and a loaded model keeps its
/// file's sections; either writes them again as they are, and decodes the
/// other forms from them only when something asks.
pub(crate) struct EncodedTrees {
    sections: Sections,
    features: Vec<Feature>,
    leaf_width: usize,
}

impl EncodedTrees {
    /// Sections in the format this build writes, encoded by [`encode_tree`]
    /// or read from a file and checked, so that they decode without error.
    pub(crate) fn new(sections: Sections, features: Vec<Feature>, leaf_width: usize) -> EncodedTrees {
        EncodedTrees { sections, features, leaf_width }
    }

    /// The number of trees.
    pub(crate) fn len(&self) -> usize {
        self.sections.len()
    }

    /// Hands `f` the trees in the model format, in pieces, as [`encode`] would write them.
    pub(crate) fn visit(&self, f: &mut impl FnMut(&[u8])) {
        visit_sections(&self.sections.slices(), f);
    }

    /// The trees in the flat layout.
    pub(crate) fn flat(&self) -> Vec<FlatTree> {
        match decode_sections(&self.sections.slices(), FORMAT_VERSION, &self.features, self.leaf_width) {
            Ok(AllDecoded::Flat(flat)) => flat,
            Ok(AllDecoded::Lists(lists)) => lists.iter().map(FlatTree::new).collect(),
            Err(e) => unreachable!("encoded trees were checked or grown: {e}"),
        }
    }

    /// The trees over ranks, built straight from the sections, or `None`
    /// when the fast path refuses them.
    pub(crate) fn ranked(&self) -> Option<RankedForest> {
        let columns: Vec<Columns<'_>> = self
            .sections
            .slices()
            .into_par_iter()
            .map(|section| Columns::parse(section, FORMAT_VERSION, self.leaf_width).ok())
            .collect::<Option<_>>()?;
        ranked_columns::ranked_forest(&columns, &self.features, self.leaf_width)
    }
}

/// A tree as decoded: in the flat layout when its siblings are adjacent.
enum Decoded {
    Flat(FlatTree),
    Lists(Tree),
}

/// Reads the trees of a format `version` (2 or 3) payload, checking every
/// length and every tree against the model's `features` and `leaf_width`.
///
/// When the trees over ranks can express the model (every forest and
/// boosted model arbor trains), the trees load straight into them: nodes
/// and leaves go from the columns to the 8-byte nodes prediction walks,
/// and the flat layout and node lists are decoded from the kept sections
/// only if something asks for them. Otherwise trees whose splits all have
/// their right child right after their left one decode into the flat
/// layout, and any other tree makes the model hold node lists, which
/// [`crate::Model::validate`] checks.
pub(crate) fn read<R: Read>(
    payload: &mut Payload<R>,
    version: u32,
    features: &[Feature],
    leaf_width: usize,
) -> Result<Trees, String> {
    let n_trees = payload.u64()?;
    // Not preallocated from the count: a corrupt count runs out of bytes instead.
    let mut sections = Vec::new();
    for _ in 0..n_trees {
        let len = payload.u64()?;
        let mut section = Vec::new();
        payload.read_into(&mut section, len)?;
        sections.push(section);
    }
    let columns: Vec<Columns<'_>> = sections
        .par_iter()
        .enumerate()
        .map(|(t, section)| Columns::parse(section, version, leaf_width).map_err(|e| format!("tree {t}: {e}")))
        .collect::<Result<_, _>>()?;
    let ranked = (version == FORMAT_VERSION).then(|| ranked_columns::ranked_forest(&columns, features, leaf_width));
    if let Some(ranked) = ranked.flatten() {
        drop(columns);
        let encoded = EncodedTrees::new(Sections::Owned(sections), features.to_vec(), leaf_width);
        return Ok(Trees::from_ranked(ranked, encoded));
    }
    Ok(match decode_columns(columns, features, leaf_width)? {
        AllDecoded::Flat(flat) => Trees::from_flat(flat),
        AllDecoded::Lists(lists) => Trees::from(lists),
    })
}

/// A model's trees as decoded: all in the flat layout, or all in node lists.
enum AllDecoded {
    Flat(Vec<FlatTree>),
    Lists(Vec<Tree>),
}

/// Every tree of `sections`, parsed and decoded as [`decode_columns`] does.
fn decode_sections(
    sections: &[&[u8]],
    version: u32,
    features: &[Feature],
    leaf_width: usize,
) -> Result<AllDecoded, String> {
    let columns: Vec<Columns<'_>> = sections
        .par_iter()
        .enumerate()
        .map(|(t, section)| Columns::parse(section, version, leaf_width).map_err(|e| format!("tree {t}: {e}")))
        .collect::<Result<_, _>>()?;
    decode_columns(columns, features, leaf_width)
}

/// Every tree of `columns`: in the flat layout when every tree's siblings
/// are adjacent (checked), otherwise in node lists.
fn decode_columns(columns: Vec<Columns<'_>>, features: &[Feature], leaf_width: usize) -> Result<AllDecoded, String> {
    let trees: Vec<Decoded> = columns
        .into_par_iter()
        .enumerate()
        .map(|(t, columns)| {
            let decoded = if columns.siblings_adjacent() {
                columns.flat_tree(features, leaf_width).map(Decoded::Flat)
            } else {
                columns.tree().map(Decoded::Lists)
            };
            decoded.map_err(|e| format!("tree {t}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    if trees.iter().all(|t| matches!(t, Decoded::Flat(_))) {
        let flat = trees.into_iter().filter_map(|t| if let Decoded::Flat(f) = t { Some(f) } else { None });
        return Ok(AllDecoded::Flat(flat.collect()));
    }
    let lists = trees.into_iter().map(|t| match t {
        Decoded::Flat(flat) => flat.to_tree(),
        Decoded::Lists(tree) => tree,
    });
    Ok(AllDecoded::Lists(lists.collect()))
}

/// One tree's section in format 3.
pub(crate) fn encode_tree(tree: &Tree, leaf_width: usize) -> Vec<u8> {
    let n = tree.nodes.len();
    let adjacent = tree.siblings_adjacent();
    let group = group_width(tree, leaf_width);
    let mut flags = Vec::with_capacity(n);
    let mut words = Vec::with_capacity(n);
    let mut children = Vec::with_capacity(n);
    let (mut set_lens, mut set_words) = (Vec::new(), Vec::new());
    let mut thresholds = Table::default();
    for node in &tree.nodes {
        match node {
            Node::Leaf { value } => {
                flags.push(0);
                words.push(value / group as u32);
            }
            Node::Split { feature, test, default_left, left, right } => {
                let mut flag = SPLIT | if *default_left { DEFAULT_LEFT } else { 0 };
                match test {
                    SplitTest::LessOrEqual(t) => thresholds.add_key(t.to_bits(), std::slice::from_ref(t)),
                    SplitTest::InCategories(set) => {
                        flag |= CATEGORIES;
                        set_lens.push(set.len() as u32);
                        set_words.extend_from_slice(set);
                    }
                    SplitTest::ZeroAsMissing { threshold, zero_left } => {
                        flag |= ZERO_AS_MISSING | if *zero_left { ZERO_LEFT } else { 0 };
                        thresholds.add_key(threshold.to_bits(), std::slice::from_ref(threshold));
                    }
                }
                flags.push(flag);
                words.push(*feature);
                children.push(*left);
                if !adjacent {
                    children.push(*right);
                }
            }
        }
    }
    let bits: &[u64] = bytemuck::cast_slice(&tree.values);
    let mut groups = Table::default();
    for (run, values) in bits.chunks_exact(group).zip(tree.values.chunks_exact(group)) {
        groups.add_key(run, values);
    }
    let counts = [
        n,
        set_lens.len(),
        set_words.len(),
        thresholds.distinct.len(),
        tree.values.len(),
        group,
        groups.distinct.len() / group,
    ];
    let widths = [&words, &children, &thresholds.indices, &groups.indices].map(|column| index_width(column));
    // The exact size: a forest keeps every tree's section until it is written.
    let index_bytes = [&words, &children, &thresholds.indices, &groups.indices]
        .iter()
        .zip(widths)
        .map(|(column, width)| column.len() * width)
        .sum::<usize>();
    let size = counts.len() * 4
        + widths.len()
        + 1
        + flags.len()
        + index_bytes
        + set_lens.len() * 4
        + (set_words.len() + thresholds.distinct.len() + groups.distinct.len()) * 8;
    let mut out = Vec::with_capacity(size);
    for count in counts {
        out.extend_from_slice(&(count as u32).to_le_bytes());
    }
    out.extend_from_slice(&widths.map(|w| w as u8));
    out.push(if adjacent { 1 } else { 2 });
    out.extend_from_slice(&flags);
    put_indices(&mut out, widths[0], &words);
    put_indices(&mut out, widths[1], &children);
    set_lens.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    set_words.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    thresholds.distinct.iter().for_each(|t| out.extend_from_slice(&t.to_le_bytes()));
    put_indices(&mut out, widths[2], &thresholds.indices);
    groups.distinct.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    put_indices(&mut out, widths[3], &groups.indices);
    debug_assert_eq!(out.len(), size, "the section's size is computed exactly");
    out
}

/// How many leaf values `tree`'s leaf outputs are stored by: `leaf_width`
/// when every leaf's output starts on a multiple of it and the tree holds no
/// more values than its leaves use (so a decoder may bound what it expands),
/// else 1.
fn group_width(tree: &Tree, leaf_width: usize) -> usize {
    let w = leaf_width.max(1);
    let mut leaves = 0;
    let aligned = tree.nodes.iter().all(|node| match node {
        Node::Leaf { value } => {
            leaves += 1;
            *value as usize % w == 0
        }
        Node::Split { .. } => true,
    });
    if w > 1 && aligned && tree.values.len() % w == 0 && tree.values.len() <= leaves * w {
        w
    } else {
        1
    }
}

/// Distinct runs of values in order of first use, known by their bits `K`,
/// and the index of each run added.
struct Table<K> {
    map: HashMap<K, u32, KeyHash>,
    distinct: Vec<f64>,
    indices: Vec<u32>,
}

impl<K> Default for Table<K> {
    fn default() -> Self {
        Table { map: HashMap::default(), distinct: Vec::new(), indices: Vec::new() }
    }
}

impl<K: Eq + Hash> Table<K> {
    /// Adds `values`, whose bits are `key`.
    fn add_key(&mut self, key: K, values: &[f64]) {
        let next = (self.distinct.len() / values.len().max(1)) as u32;
        let index = *self.map.entry(key).or_insert_with(|| {
            self.distinct.extend_from_slice(values);
            next
        });
        self.indices.push(index);
    }
}

/// Bytes per index: the fewest of 1, 2 and 4 that hold every one of `column`.
fn index_width(column: &[u32]) -> usize {
    match column.iter().max().copied().unwrap_or(0) {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        _ => 4,
    }
}

/// Appends `column`, each index `width` bytes little endian.
fn put_indices(out: &mut Vec<u8>, width: usize, column: &[u32]) {
    match width {
        1 => out.extend(column.iter().map(|&i| i as u8)),
        2 => column.iter().for_each(|&i| out.extend_from_slice(&(i as u16).to_le_bytes())),
        _ => column.iter().for_each(|&i| out.extend_from_slice(&i.to_le_bytes())),
    }
}

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
    fn new(bytes: &'a [u8], width: usize) -> Indices<'a> {
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
    fn at(&self, i: usize) -> u32 {
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
fn index_at(bytes: &[u8]) -> u32 {
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
    /// A section of format `version` (2 or 3), whose trees have leaves `leaf_width` values wide.
    pub(crate) fn parse(section: &'a [u8], version: u32, leaf_width: usize) -> Result<Columns<'a>, String> {
        if version == 2 {
            Columns::read_v2(section)
        } else {
            Columns::read(section, leaf_width)
        }
    }

    /// A format 3 section, whose trees have leaves `leaf_width` values wide.
    fn read(section: &'a [u8], leaf_width: usize) -> Result<Columns<'a>, String> {
        let mut reader = Reader(section);
        let mut counts = [0usize; 7];
        for count in &mut counts {
            *count = reader.u32()? as usize;
        }
        let [n, n_sets, n_set_words, n_thresholds, n_values, group, n_groups] = counts;
        let layout = reader.take(5)?;
        let widths = [layout[0], layout[1], layout[2], layout[3]].map(usize::from);
        if let Some(w) = widths.iter().find(|w| ![1, 2, 4].contains(*w)) {
            return Err(format!("an index {w} bytes wide"));
        }
        let per_split = usize::from(layout[4]);
        if per_split != 1 && per_split != 2 {
            return Err(format!("{per_split} children stored per split"));
        }
        // Expanded, the values may take at most what the tree's leaves use.
        if group == 0 || group != 1 && group != leaf_width || n_values % group != 0 {
            return Err(format!("{n_values} leaf values in runs of {group}, for leaves of {leaf_width}"));
        }
        let flags = reader.take(n)?;
        let (n_splits, n_categories) = count_flags(flags)?;
        let n_leaves = n - n_splits;
        if group > 1 && n_values > n_leaves * group {
            return Err(format!("{n_values} leaf values for {n_leaves} leaves"));
        }
        let words = Indices::new(reader.array(n, widths[0])?, widths[0]);
        let children = Indices::new(reader.array(n_splits * per_split, widths[1])?, widths[1]);
        let set_lens: Vec<u32> = u32s(reader.array(n_sets, 4)?).collect();
        let set_words = reader.array(n_set_words, 8)?.chunks_exact(8).map(u64_at).collect();
        let distinct: Vec<f64> = reader.array(n_thresholds, 8)?.chunks_exact(8).map(f64_at).collect();
        let threshold_at = Indices::new(reader.array(n_splits - n_categories, widths[2])?, widths[2]);
        check_indices(threshold_at, distinct.len(), "threshold")?;
        let groups: Vec<f64> = reader
            .array(n_groups.checked_mul(group).ok_or("a table length overflows")?, 8)?
            .chunks_exact(8)
            .map(f64_at)
            .collect();
        let group_at = Indices::new(reader.array(n_values / group, widths[3])?, widths[3]);
        check_indices(group_at, n_groups, "leaf values")?;
        reader.finish("after the leaf values")?;
        if group > 1 {
            // Leaves and splits alternate unpredictably: no branch per node.
            let last_run = words.iter().zip(flags).map(|(w, &f)| if f & SPLIT == 0 { w } else { 0 }).max();
            if u64::from(last_run.unwrap_or(0)) * group as u64 > u64::from(u32::MAX) {
                return Err("a leaf's value offset overflows".into());
            }
        }
        let columns = Columns {
            flags,
            words,
            children,
            pairs: per_split == 2,
            set_lens,
            set_words,
            distinct,
            threshold_at: Some(threshold_at),
            groups,
            group,
            group_at: Some(group_at),
        };
        columns.check_sets(n_sets, n_categories)?;
        Ok(columns)
    }

    /// A format 2 section.
    fn read_v2(section: &'a [u8]) -> Result<Columns<'a>, String> {
        let mut reader = Reader(section);
        let mut counts = [0usize; 5];
        for count in &mut counts {
            *count = reader.u32()? as usize;
        }
        let [n, n_thresholds, n_sets, n_set_words, n_values] = counts;
        let flags = reader.take(n)?;
        let (n_splits, n_categories) = count_flags(flags)?;
        let columns = Columns {
            flags,
            words: Indices::new(reader.array(n, 4)?, 4),
            children: Indices::new(reader.array(n_splits, 8)?, 4),
            pairs: true,
            set_lens: u32s(reader.array(n_sets, 4)?).collect(),
            distinct: reader.array(n_thresholds, 8)?.chunks_exact(8).map(f64_at).collect(),
            threshold_at: None,
            set_words: reader.array(n_set_words, 8)?.chunks_exact(8).map(u64_at).collect(),
            groups: reader.array(n_values, 8)?.chunks_exact(8).map(f64_at).collect(),
            group: 1,
            group_at: None,
        };
        reader.finish("after the leaf values")?;
        if n_splits - n_categories != n_thresholds {
            return Err("more or fewer thresholds than its nodes use".into());
        }
        columns.check_sets(n_sets, n_categories)?;
        Ok(columns)
    }

    /// The category sets are one per category split and hold the set words exactly.
    fn check_sets(&self, n_sets: usize, n_categories: usize) -> Result<(), String> {
        if n_categories != n_sets {
            return Err("more or fewer category sets than its nodes use".into());
        }
        if self.set_lens.iter().map(|&l| l as usize).sum::<usize>() != self.set_words.len() {
            return Err("more or fewer category words than its sets use".into());
        }
        Ok(())
    }

    /// Every split's right child comes right after its left one.
    fn siblings_adjacent(&self) -> bool {
        !self.pairs
            || (0..self.children.len() / 2)
                .all(|k| self.children.at(2 * k).checked_add(1) == Some(self.children.at(2 * k + 1)))
    }

    /// Split `k`'s children.
    fn children(&self, k: usize) -> (u32, u32) {
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

    /// The tree in node lists.
    fn tree(&self) -> Result<Tree, String> {
        let mut set_lens = self.set_lens.iter();
        let mut thresholds = self.thresholds().into_iter();
        let mut set_words = self.set_words.iter().copied();
        let mut nodes = Vec::with_capacity(self.flags.len());
        let mut split = 0;
        for (&flag, word) in self.flags.iter().zip(self.words.iter()) {
            if flag & SPLIT == 0 {
                nodes.push(Node::Leaf { value: word * self.group as u32 });
                continue;
            }
            // The counts were checked against the flags: the arrays do not run out.
            let test = if flag & CATEGORIES != 0 {
                let len = *set_lens.next().expect("a set per category split") as usize;
                SplitTest::InCategories(set_words.by_ref().take(len).collect())
            } else {
                let threshold = thresholds.next().expect("a threshold per numeric split");
                if flag & ZERO_AS_MISSING != 0 {
                    SplitTest::ZeroAsMissing { threshold, zero_left: flag & ZERO_LEFT != 0 }
                } else {
                    SplitTest::LessOrEqual(threshold)
                }
            };
            let (left, right) = self.children(split);
            split += 1;
            nodes.push(Node::Split { feature: word, test, default_left: flag & DEFAULT_LEFT != 0, left, right });
        }
        Ok(Tree { nodes, values: self.values() })
    }

    /// The tree in the flat layout, node `i` staying node `i` (the caller
    /// made sure siblings are adjacent), checked.
    fn flat_tree(self, features: &[Feature], leaf_width: usize) -> Result<FlatTree, String> {
        let mut set_lens = self.set_lens.iter().copied();
        let mut thresholds = self.thresholds().into_iter();
        let mut split = 0;
        let has_sets = !self.set_lens.is_empty();
        let mut flat = FlatTree {
            nodes: Vec::with_capacity(self.flags.len()),
            depth: 0,
            sets: None,
            tests: Vec::new(),
            values: Vec::new(),
        };
        let mut set_offset = 0u32;
        for (i, (&flag, word)) in self.flags.iter().zip(self.words.iter()).enumerate() {
            if flag & SPLIT == 0 {
                flat.nodes.push(FlatNode::leaf(i as u32, word * self.group as u32));
                continue;
            }
            // A feature index too large would reach the flag bits of the node.
            if word as usize >= features.len() {
                return Err(format!("node {i} tests feature {word}, but the model has {}", features.len()));
            }
            let (left, _) = self.children(split);
            split += 1;
            let default_left = flag & DEFAULT_LEFT != 0;
            flat.nodes.push(if flag & CATEGORIES != 0 {
                let len = set_lens.next().expect("a set per category split");
                let node = FlatNode::categories(word, set_offset, len, default_left, left);
                set_offset += len;
                node
            } else {
                let threshold = thresholds.next().expect("a threshold per numeric split");
                if flag & ZERO_AS_MISSING != 0 {
                    flat.tests.push(SplitTest::ZeroAsMissing { threshold, zero_left: flag & ZERO_LEFT != 0 });
                    FlatNode::special(word, flat.tests.len() as u32 - 1, default_left, left)
                } else {
                    FlatNode::split(word, threshold, default_left, left)
                }
            });
        }
        flat.values = self.values();
        flat.sets = has_sets.then_some(self.set_words);
        flat.depth = flat.check(features, leaf_width)?;
        Ok(flat)
    }
}

/// The runs of `group` values of `table` that `at` lists (checked to be in it), one after another.
fn expand(table: &[f64], group: usize, at: Indices<'_>) -> Vec<f64> {
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
fn check_indices(at: Indices<'_>, len: usize, what: &str) -> Result<(), String> {
    match at.iter().max() {
        Some(i) if i as usize >= len => Err(format!("{what} {i} of {len}")),
        _ => Ok(()),
    }
}

/// Checks that each of `flags` is known; counts the splits and the category splits.
fn count_flags(flags: &[u8]) -> Result<(usize, usize), String> {
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
fn u32s(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

fn f64_at(bytes: &[u8]) -> f64 {
    f64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

fn u64_at(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// Reads consecutive pieces of a byte slice, failing cleanly at its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        if len > self.0.len() {
            return Err(format!("truncated: {len} bytes wanted, {} left", self.0.len()));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    /// `count` items of `width` bytes.
    fn array(&mut self, count: usize, width: usize) -> Result<&'a [u8], String> {
        self.take(count.checked_mul(width).ok_or("an array length overflows")?)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn finish(&self, place: &str) -> Result<(), String> {
        match self.0.len() {
            0 => Ok(()),
            extra => Err(format!("{extra} unexpected bytes {place}")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use arbor_quantize::{BinMapper, FeatureType};

    use super::*;

    /// A tree with every kind of split, leaves two values wide.
    pub(crate) fn tree() -> Tree {
        Tree {
            nodes: vec![
                Node::Split { feature: 2, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 1, right: 2 },
                Node::Split {
                    feature: 0,
                    test: SplitTest::InCategories(vec![0b1010, 1 << 63]),
                    default_left: false,
                    left: 3,
                    right: 4,
                },
                Node::Split {
                    feature: 1,
                    test: SplitTest::ZeroAsMissing { threshold: -0.25, zero_left: true },
                    default_left: false,
                    left: 5,
                    right: 6,
                },
                Node::Leaf { value: 0 },
                Node::Leaf { value: 2 },
                Node::Leaf { value: 4 },
                Node::Leaf { value: 6 },
            ],
            values: vec![0.5, 0.5, 1.0, 0.0, 0.25, 0.75, f64::MIN_POSITIVE, 1.0],
        }
    }

    /// Three numeric features (a numeric feature may hold category codes).
    fn features() -> Vec<Feature> {
        (0..3)
            .map(|i| Feature {
                name: format!("x{i}"),
                data_type: "Float64".into(),
                kind: FeatureType::Numeric,
                mapper: BinMapper::Numeric { edges: vec![0.0] },
            })
            .collect()
    }

    /// The encoding of `trees`, leaves two values wide.
    fn encoded(trees: &[Tree]) -> Vec<u8> {
        let mut bytes = Vec::new();
        encode(trees, 2, &mut bytes);
        bytes
    }

    /// Reads `bytes`, which must hold the trees exactly.
    fn decode(bytes: &[u8]) -> Result<Trees, String> {
        let mut payload = Payload::unframed(bytes, bytes.len() as u64);
        let trees = read(&mut payload, 3, &features(), 2)?;
        match payload.remaining() {
            0 => Ok(trees),
            extra => Err(format!("{extra} unexpected bytes")),
        }
    }

    #[test]
    fn every_kind_of_node_round_trips() {
        let trees = vec![tree(), Tree { nodes: vec![Node::Leaf { value: 0 }], values: vec![3.0, 3.0] }];
        let bytes = encoded(&trees);
        let decoded = decode(&bytes).unwrap();
        assert!(decoded.lists_if_built().is_none(), "adjacent siblings decode into the flat layout");
        assert_eq!(decoded.flat()[0].depth, 2);
        assert_eq!(*decoded, trees);
    }

    #[test]
    fn trees_with_siblings_apart_decode_into_node_lists() {
        // the root's children swapped: right before left
        let mut apart = tree();
        apart.nodes[0] =
            Node::Split { feature: 2, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 2, right: 1 };
        let bytes = encoded(&[apart.clone()]);
        let decoded = decode(&bytes).unwrap();
        assert!(decoded.lists_if_built().is_some());
        assert_eq!(*decoded, [apart]);
    }

    #[test]
    fn flat_trees_are_checked_as_they_decode() {
        let corrupt = |edit: &dyn Fn(&mut Tree)| {
            let mut t = tree();
            edit(&mut t);
            let bytes = encoded(&[t]);
            decode(&bytes).unwrap_err()
        };
        let e = corrupt(&|t| {
            t.nodes[0] =
                Node::Split { feature: 7, test: SplitTest::LessOrEqual(1.5), default_left: true, left: 1, right: 2 }
        });
        assert!(e.contains("tests feature 7, but the model has 3"), "{e}");
        let e = corrupt(&|t| t.nodes[6] = Node::Leaf { value: 7 });
        assert!(e.contains("leaf 6 points past"), "{e}");
        let e = corrupt(&|t| {
            t.nodes[2] = Node::Split {
                feature: 1,
                test: SplitTest::LessOrEqual(f64::NAN),
                default_left: false,
                left: 5,
                right: 6,
            }
        });
        assert!(e.contains("NaN threshold"), "{e}");
        let e = corrupt(&|t| {
            t.nodes[2] =
                Node::Split { feature: 1, test: SplitTest::LessOrEqual(0.0), default_left: false, left: 3, right: 4 }
        });
        assert!(e.contains("2 parents"), "{e}");
        let e = corrupt(&|t| {
            t.nodes[2] =
                Node::Split { feature: 1, test: SplitTest::LessOrEqual(0.0), default_left: false, left: 1, right: 2 }
        });
        assert!(e.contains("invalid child"), "{e}");
    }

    /// A comb of `splits` splits on feature `f % 3`: each split's left child
    /// is a leaf, its right child the next split; thresholds cycle through
    /// `distinct` values, leaf outputs through `outputs` pairs.
    fn comb(splits: usize, distinct: usize, outputs: usize) -> Tree {
        let mut nodes = Vec::with_capacity(2 * splits + 1);
        let mut values = Vec::new();
        for s in 0..splits {
            let at = nodes.len() as u32;
            let test = SplitTest::LessOrEqual((s % distinct) as f64 * 0.25);
            nodes.push(Node::Split {
                feature: (s % 3) as u32,
                test,
                default_left: s % 2 == 0,
                left: at + 1,
                right: at + 2,
            });
            nodes.push(Node::Leaf { value: values.len() as u32 });
            values.extend([(s % outputs) as f64, 1.0 / (1 + s % outputs) as f64]);
        }
        nodes.push(Node::Leaf { value: values.len() as u32 });
        values.extend([-1.0, -2.0]);
        Tree { nodes, values }
    }

    /// The layout bytes of the first tree of `bytes`: its 7 counts and 5 widths.
    fn layout(bytes: &[u8]) -> ([u32; 7], [u8; 5]) {
        let counts = std::array::from_fn(|i| u32::from_le_bytes(bytes[16 + 4 * i..20 + 4 * i].try_into().unwrap()));
        (counts, bytes[44..49].try_into().unwrap())
    }

    #[test]
    fn repeated_thresholds_and_outputs_are_stored_once() {
        let tree = comb(1000, 7, 5);
        let bytes = encoded(std::slice::from_ref(&tree));
        let (counts, widths) = layout(&bytes);
        assert_eq!(counts, [2001, 0, 0, 7, 2002, 2, 6], "7 thresholds, 5 leaf pairs and the last leaf's");
        assert_eq!(widths, [2, 2, 1, 1, 1], "2001 nodes need 2-byte words and children");
        let decoded = decode(&bytes).unwrap();
        assert!(decoded.lists_if_built().is_none());
        assert_eq!(*decoded, [tree]);
    }

    #[test]
    fn large_trees_take_wide_indices() {
        // 70 000 splits: children past 65 535, as many distinct thresholds and outputs
        let tree = comb(70_000, 70_000, 70_000);
        let bytes = encoded(std::slice::from_ref(&tree));
        let (counts, widths) = layout(&bytes);
        assert_eq!(counts[3], 70_000);
        assert_eq!(widths, [4, 4, 4, 4, 1]);
        assert_eq!(*decode(&bytes).unwrap(), [tree]);
    }

    #[test]
    fn leaves_off_the_leaf_width_store_values_one_by_one() {
        // the first leaf's output starts at 1, not a multiple of the width 2
        let mut t = tree();
        t.values.insert(0, 9.0);
        for node in &mut t.nodes {
            if let Node::Leaf { value } = node {
                *value += 1;
            }
        }
        let bytes = encoded(std::slice::from_ref(&t));
        assert_eq!(layout(&bytes).0[5], 1, "values in runs of 1");
        assert_eq!(*decode(&bytes).unwrap(), [t]);
    }

    #[test]
    fn indices_past_their_tables_are_errors() {
        let tree = comb(10, 3, 2);
        let bytes = encoded(std::slice::from_ref(&tree));
        // the last byte is the last value run's index, the one before it the one before
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() = 9;
        assert!(decode(&bad).unwrap_err().contains("leaf values 9 of 3"), "{:?}", decode(&bad));
        // a threshold index: the comb's 10 of them end before 3 distinct pairs of
        // leaf outputs (48 bytes) and 11 value indices
        let mut bad = bytes;
        let at = bad.len() - 11 - 48 - 1;
        bad[at] = 5;
        assert!(decode(&bad).unwrap_err().contains("threshold 5 of 3"), "{:?}", decode(&bad));
    }

    #[test]
    fn every_truncation_and_extension_is_an_error() {
        let mut bytes = encoded(&[tree()]);
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_err(), "{len} of {} bytes decoded", bytes.len());
        }
        bytes.push(0);
        assert!(decode(&bytes).unwrap_err().contains("unexpected bytes"));
    }

    #[test]
    fn unknown_flags_and_miscounted_arrays_are_errors() {
        let bytes = encoded(&[tree()]);
        let flags_at = 16 + 33;
        let mut bad = bytes.clone();
        bad[flags_at] |= 1 << 7;
        assert!(decode(&bad).unwrap_err().contains("unknown flags"), "{:?}", decode(&bad));
        // a leaf turned into a split wants children the section does not have
        let mut bad = bytes.clone();
        bad[flags_at + 3] = SPLIT;
        assert!(decode(&bad).is_err());
        // one distinct threshold fewer announced than the nodes use
        let mut bad = bytes.clone();
        bad[16 + 12] -= 1;
        assert!(decode(&bad).is_err());
        // an index width that is not 1, 2 or 4 bytes
        let mut bad = bytes.clone();
        bad[16 + 28] = 3;
        assert!(decode(&bad).unwrap_err().contains("3 bytes wide"));
        // leaf values in runs of a width other than 1 or the leaves', or of none
        for run in [3, 0] {
            let mut bad = bytes.clone();
            bad[16 + 20] = run;
            assert!(decode(&bad).unwrap_err().contains(&format!("in runs of {run}")));
        }
    }
}
