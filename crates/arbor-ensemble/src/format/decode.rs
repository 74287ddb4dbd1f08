//! Decoding tree columns into node lists, or straight into the flat layout
//! (checked as they decode) when a tree's siblings are adjacent.

use arbor_kernels::FlatNode;
use rayon::prelude::*;

use crate::format::columns::{Columns, CATEGORIES, DEFAULT_LEFT, SPLIT, ZERO_AS_MISSING, ZERO_LEFT};
use crate::model::feature::Feature;
use crate::model::flat_tree::FlatTree;
use crate::model::tree::{Node, SplitTest, Tree};

/// A tree as decoded: in the flat layout when its siblings are adjacent.
enum Decoded {
    Flat(FlatTree),
    Lists(Tree),
}

/// A model's trees as decoded: all in the flat layout, or all in node lists.
pub(crate) enum AllDecoded {
    Flat(Vec<FlatTree>),
    Lists(Vec<Tree>),
}

/// Every tree of `sections`, parsed and decoded as [`decode_columns`] does.
pub(crate) fn decode_sections(
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
pub(crate) fn decode_columns(
    columns: Vec<Columns<'_>>,
    features: &[Feature],
    leaf_width: usize,
) -> Result<AllDecoded, String> {
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

impl Columns<'_> {
    pub(crate) fn tree(&self) -> Result<Tree, String> {
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
    pub(crate) fn flat_tree(self, features: &[Feature], leaf_width: usize) -> Result<FlatTree, String> {
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
