//! The columnar encoding of trees in model format 2.
//!
//! Each tree is a section of fixed-width little-endian arrays (a flag byte
//! and a feature or leaf offset per node, the split nodes' children, the
//! thresholds, the category sets, the leaf values), preceded by its byte
//! length. Decoding is a few straight passes over those arrays instead of a
//! variable-length read per field, and the trees decode in parallel: a
//! 100 MB forest loads several times faster than through the field-by-field
//! encoding of format 1. Trees whose siblings are adjacent (all that arbor
//! writes) decode straight into the flat traversal layout, node for node.
//!
//! ```text
//! u64 tree count, then per tree: u64 section length, then the section:
//!   u32 nodes, u32 thresholds, u32 category sets, u32 category words, u32 values
//!   u8  flags[nodes]          split, default left, test kind, zero left
//!   u32 word[nodes]           a split's feature, a leaf's value offset
//!   u32 children[2 * splits]  left then right, splits in node order
//!   f64 thresholds[]          of `x <= t` and zero-as-missing tests, in node order
//!   u32 set_len[]             words per category set, in node order
//!   u64 set_words[]
//!   f64 values[]
//! ```

use std::io::Read;

use arbor_kernels::FlatNode;
use rayon::prelude::*;

use crate::flat_tree::FlatTree;
use crate::model::Feature;
use crate::model_format::Payload;
use crate::tree::{Node, SplitTest, Tree};
use crate::trees::Trees;

/// The node is a split (otherwise a leaf).
const SPLIT: u8 = 1;
/// Missing values go left.
const DEFAULT_LEFT: u8 = 1 << 1;
/// The test is [`SplitTest::InCategories`].
const CATEGORIES: u8 = 1 << 2;
/// The test is [`SplitTest::ZeroAsMissing`].
const ZERO_AS_MISSING: u8 = 1 << 3;
/// A zero-as-missing test sends zeros left.
const ZERO_LEFT: u8 = 1 << 4;
/// Every flag a valid node may carry.
const KNOWN: u8 = SPLIT | DEFAULT_LEFT | CATEGORIES | ZERO_AS_MISSING | ZERO_LEFT;

/// Appends the encoding of `trees` to `out`.
pub(crate) fn encode(trees: &[Tree], out: &mut Vec<u8>) {
    let sections: Vec<Vec<u8>> = trees.par_iter().map(encode_tree).collect();
    out.reserve(8 + sections.iter().map(|s| 8 + s.len()).sum::<usize>());
    out.extend_from_slice(&(trees.len() as u64).to_le_bytes());
    for section in sections {
        out.extend_from_slice(&(section.len() as u64).to_le_bytes());
        out.extend_from_slice(&section);
    }
}

/// Trees read at a time: enough to keep every thread decoding, few enough
/// that their sections' buffers, reused from batch to batch, stay small.
const BATCH: usize = 16;

/// A tree as decoded: in the flat layout when its siblings are adjacent.
enum Decoded {
    Flat(FlatTree),
    Lists(Tree),
}

/// Reads the trees written by [`encode`] from a model's payload, checking
/// every length, a batch of trees at a time. Trees whose splits all have
/// their right child right after their left one (every tree arbor writes)
/// decode straight into the flat layout prediction walks, checked against
/// the model's `features` and `leaf_width`; any other tree makes the model
/// hold node lists, which [`crate::Model::validate`] checks.
pub(crate) fn read<R: Read>(
    payload: &mut Payload<R>,
    features: &[Feature],
    leaf_width: usize,
) -> Result<Trees, String> {
    let n_trees = payload.u64()?;
    let mut buffers: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::new()).collect();
    // Not preallocated from the count: a corrupt count runs out of bytes instead.
    let mut trees = Vec::new();
    let mut first = 0;
    while first < n_trees {
        let batch = (n_trees - first).min(BATCH as u64) as usize;
        for buffer in &mut buffers[..batch] {
            let len = payload.u64()?;
            payload.read_into(buffer, len)?;
        }
        let decoded: Vec<Decoded> = buffers[..batch]
            .par_iter()
            .enumerate()
            .map(|(i, section)| {
                decode(section, features, leaf_width).map_err(|e| format!("tree {}: {e}", first + i as u64))
            })
            .collect::<Result<_, _>>()?;
        trees.extend(decoded);
        first += batch as u64;
    }
    if trees.iter().all(|t| matches!(t, Decoded::Flat(_))) {
        let flat = trees.into_iter().filter_map(|t| if let Decoded::Flat(f) = t { Some(f) } else { None });
        return Ok(Trees::from_flat(flat.collect()));
    }
    let lists = trees.into_iter().map(|t| match t {
        Decoded::Flat(flat) => flat.to_tree(),
        Decoded::Lists(tree) => tree,
    });
    Ok(Trees::from(lists.collect::<Vec<_>>()))
}

/// Decodes one tree section.
fn decode(section: &[u8], features: &[Feature], leaf_width: usize) -> Result<Decoded, String> {
    let columns = Columns::read(section)?;
    if columns.siblings_adjacent() {
        columns.flat_tree(features, leaf_width).map(Decoded::Flat)
    } else {
        columns.tree().map(Decoded::Lists)
    }
}

fn encode_tree(tree: &Tree) -> Vec<u8> {
    let n = tree.nodes.len();
    let mut flags = Vec::with_capacity(n);
    let mut words = Vec::with_capacity(n);
    let mut children = Vec::with_capacity(n);
    let mut thresholds = Vec::with_capacity(n / 2);
    let (mut set_lens, mut set_words) = (Vec::new(), Vec::new());
    for node in &tree.nodes {
        match node {
            Node::Leaf { value } => {
                flags.push(0);
                words.push(*value);
            }
            Node::Split { feature, test, default_left, left, right } => {
                let mut flag = SPLIT | if *default_left { DEFAULT_LEFT } else { 0 };
                match test {
                    SplitTest::LessOrEqual(t) => thresholds.push(*t),
                    SplitTest::InCategories(set) => {
                        flag |= CATEGORIES;
                        set_lens.push(set.len() as u32);
                        set_words.extend_from_slice(set);
                    }
                    SplitTest::ZeroAsMissing { threshold, zero_left } => {
                        flag |= ZERO_AS_MISSING | if *zero_left { ZERO_LEFT } else { 0 };
                        thresholds.push(*threshold);
                    }
                }
                flags.push(flag);
                words.push(*feature);
                children.extend_from_slice(&[*left, *right]);
            }
        }
    }
    let counts = [n, thresholds.len(), set_lens.len(), set_words.len(), tree.values.len()];
    let mut out = Vec::with_capacity(20 + n * 5 + children.len() * 4 + (thresholds.len() + tree.values.len()) * 8);
    for count in counts {
        out.extend_from_slice(&(count as u32).to_le_bytes());
    }
    out.extend_from_slice(&flags);
    words.iter().chain(&children).chain(&set_lens).for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    thresholds.iter().for_each(|t| out.extend_from_slice(&t.to_le_bytes()));
    set_words.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    tree.values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    out
}

/// One tree section's arrays, their lengths checked.
struct Columns<'a> {
    flags: &'a [u8],
    words: &'a [u8],
    children: &'a [u8],
    set_lens: &'a [u8],
    thresholds: &'a [u8],
    set_words: &'a [u8],
    values: &'a [u8],
}

impl<'a> Columns<'a> {
    fn read(section: &'a [u8]) -> Result<Columns<'a>, String> {
        let mut reader = Reader(section);
        let mut counts = [0usize; 5];
        for count in &mut counts {
            *count = reader.u32()? as usize;
        }
        let [n, n_thresholds, n_sets, n_set_words, n_values] = counts;
        let flags = reader.take(n)?;
        // One pass over the flags: each is known, and the splits and category splits counted.
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
        let columns = Columns {
            flags,
            words: reader.array(n, 4)?,
            children: reader.array(n_splits, 8)?,
            set_lens: reader.array(n_sets, 4)?,
            thresholds: reader.array(n_thresholds, 8)?,
            set_words: reader.array(n_set_words, 8)?,
            values: reader.array(n_values, 8)?,
        };
        reader.finish("after the leaf values")?;
        if n_categories != n_sets || n_splits - n_categories != n_thresholds {
            return Err("more or fewer thresholds or category sets than its nodes use".into());
        }
        if u32s(columns.set_lens).map(|l| l as usize).sum::<usize>() != n_set_words {
            return Err("more or fewer category words than its sets use".into());
        }
        Ok(columns)
    }

    /// Every split's right child comes right after its left one.
    fn siblings_adjacent(&self) -> bool {
        self.children.chunks_exact(8).all(|c| {
            let [left, right] = [&c[..4], &c[4..]].map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
            left.checked_add(1) == Some(right)
        })
    }

    /// The tree in node lists.
    fn tree(&self) -> Result<Tree, String> {
        let mut words = u32s(self.words);
        let mut children = u32s(self.children);
        let mut set_lens = u32s(self.set_lens);
        let mut thresholds = self.thresholds.chunks_exact(8).map(f64_at);
        let mut set_words = self.set_words.chunks_exact(8).map(u64_at);
        let mut nodes = Vec::with_capacity(self.flags.len());
        for &flag in self.flags {
            let word = words.next().expect("one word per node");
            if flag & SPLIT == 0 {
                nodes.push(Node::Leaf { value: word });
                continue;
            }
            // The counts were checked against the flags: the arrays do not run out.
            let test = if flag & CATEGORIES != 0 {
                let len = set_lens.next().expect("a set per category split") as usize;
                SplitTest::InCategories(set_words.by_ref().take(len).collect())
            } else {
                let threshold = thresholds.next().expect("a threshold per numeric split");
                if flag & ZERO_AS_MISSING != 0 {
                    SplitTest::ZeroAsMissing { threshold, zero_left: flag & ZERO_LEFT != 0 }
                } else {
                    SplitTest::LessOrEqual(threshold)
                }
            };
            let (left, right) = (children.next().expect("two per split"), children.next().expect("two per split"));
            nodes.push(Node::Split { feature: word, test, default_left: flag & DEFAULT_LEFT != 0, left, right });
        }
        Ok(Tree { nodes, values: self.values.chunks_exact(8).map(f64_at).collect() })
    }

    /// The tree in the flat layout, node `i` staying node `i` (the caller
    /// made sure siblings are adjacent), checked.
    fn flat_tree(&self, features: &[Feature], leaf_width: usize) -> Result<FlatTree, String> {
        let mut words = u32s(self.words);
        let mut lefts = self.children.chunks_exact(8).map(|c| u32::from_le_bytes(c[..4].try_into().expect("4 bytes")));
        let mut set_lens = u32s(self.set_lens);
        let mut thresholds = self.thresholds.chunks_exact(8).map(f64_at);
        let has_sets = !self.set_lens.is_empty();
        let mut flat = FlatTree {
            nodes: Vec::with_capacity(self.flags.len()),
            depth: 0,
            sets: has_sets.then(|| self.set_words.chunks_exact(8).map(u64_at).collect()),
            tests: Vec::new(),
            values: self.values.chunks_exact(8).map(f64_at).collect(),
        };
        let mut set_offset = 0u32;
        for (i, &flag) in self.flags.iter().enumerate() {
            let word = words.next().expect("one word per node");
            if flag & SPLIT == 0 {
                flat.nodes.push(FlatNode::leaf(i as u32, word));
                continue;
            }
            // A feature index too large would reach the flag bits of the node.
            if word as usize >= features.len() {
                return Err(format!("node {i} tests feature {word}, but the model has {}", features.len()));
            }
            let left = lefts.next().expect("a pair per split");
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
        flat.depth = flat.check(features, leaf_width)?;
        Ok(flat)
    }
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
mod tests {
    use arbor_quantize::{BinMapper, FeatureType};

    use super::*;

    fn tree() -> Tree {
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

    /// Reads `bytes`, which must hold the trees exactly.
    fn decode(bytes: &[u8]) -> Result<Trees, String> {
        let mut payload = Payload::unframed(bytes, bytes.len() as u64);
        let trees = read(&mut payload, &features(), 2)?;
        match payload.remaining() {
            0 => Ok(trees),
            extra => Err(format!("{extra} unexpected bytes")),
        }
    }

    #[test]
    fn every_kind_of_node_round_trips() {
        let trees = vec![tree(), Tree { nodes: vec![Node::Leaf { value: 0 }], values: vec![3.0, 3.0] }];
        let mut bytes = Vec::new();
        encode(&trees, &mut bytes);
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
        let mut bytes = Vec::new();
        encode(&[apart.clone()], &mut bytes);
        let decoded = decode(&bytes).unwrap();
        assert!(decoded.lists_if_built().is_some());
        assert_eq!(*decoded, [apart]);
    }

    #[test]
    fn flat_trees_are_checked_as_they_decode() {
        let corrupt = |edit: &dyn Fn(&mut Tree)| {
            let mut t = tree();
            edit(&mut t);
            let mut bytes = Vec::new();
            encode(&[t], &mut bytes);
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

    #[test]
    fn every_truncation_and_extension_is_an_error() {
        let mut bytes = Vec::new();
        encode(&[tree()], &mut bytes);
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_err(), "{len} of {} bytes decoded", bytes.len());
        }
        bytes.push(0);
        assert!(decode(&bytes).unwrap_err().contains("unexpected bytes"));
    }

    #[test]
    fn unknown_flags_and_miscounted_arrays_are_errors() {
        let mut bytes = Vec::new();
        encode(&[tree()], &mut bytes);
        let flags_at = 16 + 20;
        let mut bad = bytes.clone();
        bad[flags_at] |= 1 << 7;
        assert!(decode(&bad).unwrap_err().contains("unknown flags"), "{:?}", decode(&bad));
        // a leaf turned into a split wants children the section does not have
        let mut bad = bytes.clone();
        bad[flags_at + 3] = SPLIT;
        assert!(decode(&bad).is_err());
        // one threshold fewer announced than the nodes use
        let mut bad = bytes;
        bad[16 + 4] = 1;
        assert!(decode(&bad).is_err());
    }
}
