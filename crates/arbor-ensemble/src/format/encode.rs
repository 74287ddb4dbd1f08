//! Writing trees in format 3 (see [`super::columns`] for the layout): one
//! section per tree, thresholds and leaf outputs stored once each.

use std::collections::HashMap;
use std::hash::Hash;

use rayon::prelude::*;

use crate::data::key_map::KeyHash;
use crate::format::columns::{CATEGORIES, DEFAULT_LEFT, SPLIT, ZERO_AS_MISSING, ZERO_LEFT};
use crate::model::tree::{Node, SplitTest, Tree};

/// Appends the format 3 encoding of `trees`, whose leaves hold `leaf_width`
/// values each, to `out`.
pub(crate) fn encode(trees: &[Tree], leaf_width: usize, out: &mut Vec<u8>) {
    let sections: Vec<Vec<u8>> = trees.par_iter().map(|tree| encode_tree(tree, leaf_width)).collect();
    out.reserve(8 + sections.iter().map(|s| 8 + s.len()).sum::<usize>());
    let sections: Vec<&[u8]> = sections.iter().map(Vec::as_slice).collect();
    visit_sections(&sections, &mut |piece| out.extend_from_slice(piece));
}

/// Hands `f` the tree count, then each section after its length.
pub(crate) fn visit_sections(sections: &[&[u8]], f: &mut impl FnMut(&[u8])) {
    f(&(sections.len() as u64).to_le_bytes());
    for section in sections {
        f(&(section.len() as u64).to_le_bytes());
        f(section);
    }
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
