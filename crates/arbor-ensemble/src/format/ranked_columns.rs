//! Loading a model file's trees straight into the trees over ranks.
//!
//! A format 3 tree already refers to its thresholds and its leaf outputs
//! by index into small tables of distinct values. So a forest's rankings
//! come from those tables (a few thousand thresholds a tree, not one per
//! split), each tree's nodes become [`RankNode`]s by looking a split's rank
//! up by its threshold's index, and the leaves keep pointing into the
//! tree's distinct outputs, a table small enough for the L1 cache.
//!
//! Leaves and splits alternate unpredictably in a grown tree, so the work
//! runs as straight passes: one writes every node as a leaf, one visits the
//! splits alone (found by their flags) and overwrites theirs. The passes
//! check the tree as [`crate::model::flat_tree::FlatTree::check`] does, but only
//! say whether all is well: a tree they refuse, for being corrupt or beyond
//! the compact nodes, is decoded again the ordinary way, which names what
//! is wrong.

use arbor_kernels::RankNode;
use arbor_quantize::FeatureType;
use rayon::prelude::*;

use crate::data::key_map::KeyMap;
use crate::format::columns::{Columns, CATEGORIES, DEFAULT_LEFT, SPLIT, ZERO_AS_MISSING};
use crate::model::feature::Feature;
use crate::model::ranked_forest::{key, rankings_from, RankedForest, RankedNodes, Ranking};

/// The trees of `columns` over ranks, checked against the model's
/// `features` and `leaf_width`; `None` when a tree is not format 3 with
/// adjacent siblings, is not valid, or does not fit the compact nodes.
pub(crate) fn ranked_forest(columns: &[Columns<'_>], features: &[Feature], leaf_width: usize) -> Option<RankedForest> {
    let n_features = features.len();
    if n_features == 0 || n_features > RankNode::MAX_FEATURES {
        return None;
    }
    let tests: Vec<Tests> = columns
        .par_iter()
        .map_init(Scratch::default, |scratch, tree| tests(tree, n_features, scratch))
        .collect::<Option<_>>()?;
    let mut keys = vec![KeyMap::default(); n_features];
    let mut words: Vec<Option<usize>> = vec![None; n_features];
    for (tree, tests) in columns.iter().zip(&tests) {
        for &(f, at) in &tests.thresholds {
            keys[usize::from(f)].insert(key(tree.distinct[at as usize]), ());
        }
        for (w, width) in words.iter_mut().zip(&tests.set_words) {
            *w = (*w).max(*width);
        }
    }
    let (rankings, ranks) = rankings_from(keys, words)?;
    // Per feature: the span of a category split's set (its feature's widest
    // set and a zero word), and whether only category sets may test it.
    let features: Vec<(u32, bool)> = rankings
        .iter()
        .zip(features)
        .map(|(r, f)| {
            let span = if let Ranking::Categories { words } = r { *words as u32 + 1 } else { 0 };
            (span, f.kind == FeatureType::Categorical)
        })
        .collect();
    let tables = Tables { ranks: &ranks, features: &features, leaf_width };
    let trees = columns
        .par_iter()
        .zip(&tests)
        .map_init(Scratch::default, |scratch, (tree, tests)| ranked_nodes(tree, tests, &tables, scratch))
        .collect::<Option<Vec<_>>>()?;
    Some(RankedForest::from_parts(rankings, trees))
}

/// One thread's buffers, reused from tree to tree: a tree's index columns
/// decoded, its splits' positions, and the check's per-pair marks.
#[derive(Default)]
struct Scratch {
    words: Vec<u32>,
    children: Vec<u32>,
    thresholds: Vec<u32>,
    runs: Vec<u32>,
    splits: Vec<u32>,
    /// Per pair of siblings: 1 + the split whose children they are.
    owner: Vec<u32>,
    /// Per pair of siblings: their depth.
    depth: Vec<u32>,
}

impl Scratch {
    /// Decodes the words of `tree` and finds its splits.
    fn nodes(&mut self, tree: &Columns<'_>) {
        tree.words.decode_into(&mut self.words);
        self.splits.clear();
        self.splits.resize(tree.flags.len() + 1, 0);
        let mut k = 0;
        for (i, &flag) in tree.flags.iter().enumerate() {
            self.splits[k] = i as u32;
            k += usize::from(flag & SPLIT);
        }
        self.splits.truncate(k);
    }
}

/// The most (feature, threshold) cells a tree's tables may span here: a
/// tree with more distinct thresholds than that over its model's features
/// loads the ordinary way instead, so that no table is outsized.
const MAX_CELLS: usize = 1 << 22;

/// What one tree tests each feature against.
struct Tests {
    /// The distinct (feature, threshold index) pairs of its numeric splits.
    thresholds: Vec<(u16, u32)>,
    /// Per feature, the widest category set it is tested by, if any.
    set_words: Vec<Option<usize>>,
}

/// The tests of `tree`, a format 3 tree with adjacent siblings and no
/// special test; `None` otherwise, when its tables span more than
/// [`MAX_CELLS`], or when a split's feature is past `n_features` or a
/// threshold it uses is NaN.
fn tests(tree: &Columns<'_>, n_features: usize, scratch: &mut Scratch) -> Option<Tests> {
    let at = tree.threshold_at?;
    if tree.pairs || tree.group_at.is_none() {
        return None;
    }
    scratch.nodes(tree);
    at.decode_into(&mut scratch.thresholds);
    let n_distinct = tree.distinct.len();
    // Byte `f * n_distinct + index` is set when feature f is tested against
    // threshold `index` (by stores alone: no load waits on the last store),
    // the extra last byte by category splits.
    let cells = n_features * n_distinct;
    if cells > MAX_CELLS {
        return None;
    }
    let mut seen = vec![0u8; cells + 1];
    let mut set_words = vec![0usize; n_features];
    let mut categorical = vec![false; n_features];
    let (mut numeric, mut sets, mut bad) = (0, 0, false);
    for &i in &scratch.splits {
        let (flag, word) = (tree.flags[i as usize], scratch.words[i as usize]);
        let category = flag & CATEGORIES != 0;
        bad |= (word as usize >= n_features) | (flag & ZERO_AS_MISSING != 0);
        let f = (word as usize).min(n_features - 1);
        // The counts were checked against the flags: each read is in bounds when it is used.
        let index = scratch.thresholds.get(numeric).map_or(0, |&i| i as usize);
        seen[if category { cells } else { f * n_distinct + index }] = 1;
        numeric += usize::from(!category);
        let len = tree.set_lens.get(sets).map_or(0, |&l| l as usize);
        set_words[f] = set_words[f].max(len * usize::from(category));
        categorical[f] |= category;
        sets += usize::from(category);
    }
    let mut thresholds = Vec::new();
    for (cell, _) in seen[..cells].iter().enumerate().filter(|(_, &s)| s != 0) {
        let (f, index) = (cell / n_distinct, cell % n_distinct);
        bad |= tree.distinct[index].is_nan();
        thresholds.push((f as u16, index as u32));
    }
    let set_words = set_words.into_iter().zip(categorical).map(|(w, c)| c.then_some(w)).collect();
    (!bad).then_some(Tests { thresholds, set_words })
}

/// What every tree of the model is built and checked against.
struct Tables<'a> {
    /// Each feature's threshold ranks by key.
    ranks: &'a [KeyMap<u16>],
    /// Each feature's category set span and whether it is categorical.
    features: &'a [(u32, bool)],
    leaf_width: usize,
}

/// `tree` over ranks, checked; `None` when it is not valid or its set words
/// overflow a 2-byte offset.
fn ranked_nodes(tree: &Columns<'_>, tests: &Tests, tables: &Tables<'_>, scratch: &mut Scratch) -> Option<RankedNodes> {
    let n = tree.flags.len();
    // Decoded again rather than kept from `tests`: keeping every tree's
    // words and splits until now would take fresh pages, which cost more.
    scratch.nodes(tree);
    let n_splits = scratch.splits.len();
    // A tree whose nodes all have one parent: every split adds two nodes to the root.
    if n != 2 * n_splits + 1 {
        return None;
    }
    tree.children.decode_into(&mut scratch.children);
    tree.threshold_at?.decode_into(&mut scratch.thresholds);
    tree.group_at?.decode_into(&mut scratch.runs);
    let Scratch { words, children, thresholds, runs, splits, owner, depth } = scratch;
    // Leaves point into the distinct runs when those are a leaf wide, else into all the values.
    let compact = tree.group == tables.leaf_width;
    let values = if compact { tree.groups.clone() } else { tree.values() };
    let group = tree.group as u32;
    // A leaf's value offset may be at most this.
    let last_value = values.len().checked_sub(tables.leaf_width).map_or(-1, |v| v as i64);
    let mut bad = false;

    // Every node as a leaf; the splits' nodes are overwritten below.
    let mut nodes = Vec::with_capacity(n);
    for (&flag, &word) in tree.flags.iter().zip(words.iter()) {
        let (run, in_range) = if compact {
            let in_range = (word as usize) < runs.len();
            (runs.get(word as usize).copied().unwrap_or(0), in_range)
        } else {
            (word, true)
        };
        let value = run.wrapping_mul(group);
        bad |= (flag & SPLIT == 0) & (!in_range | (i64::from(value) > last_value));
        nodes.push(RankNode::leaf(value));
    }

    // Each (feature, threshold index) pair's rank.
    let n_distinct = tree.distinct.len();
    let mut rank_of = vec![0u16; (tables.features.len() * n_distinct).max(1)];
    for &(f, index) in &tests.thresholds {
        let f = usize::from(f);
        rank_of[f * n_distinct + index as usize] = tables.ranks[f][&key(tree.distinct[index as usize])];
    }
    // The splits: their nodes, and their children's pair (left child `2k + 1`).
    owner.clear();
    owner.resize(n_splits.max(1), 0);
    depth.clear();
    depth.resize(n_splits.max(1), 0);
    let (mut numeric, mut set_offset, mut deepest) = (0, 0u32, 0u32);
    let last_pair = n_splits.saturating_sub(1);
    for (j, (&i, &left)) in splits.iter().zip(children.iter()).enumerate() {
        let i = i as usize;
        let flag = tree.flags[i];
        let category = flag & CATEGORIES != 0;
        // Features were checked against the model's by `tests`.
        let f = words[i] as usize;
        let (span, categorical) = tables.features[f];
        let index = thresholds.get(numeric).map_or(0, |&i| i as usize);
        numeric += usize::from(!category);
        let rank = u32::from(rank_of[f * n_distinct + index]);
        let key = if category { set_offset } else { rank };
        set_offset += span * u32::from(category);
        let word = f as u16
            | (u16::from(category) * RankNode::CATEGORIES)
            | (u16::from(flag & DEFAULT_LEFT != 0) * RankNode::DEFAULT_LEFT);
        nodes[i] = RankNode { next: left, key: key as u16, word };
        let l = left as usize;
        bad |= (l <= i) | (l + 1 >= n) | (l % 2 == 0) | (categorical & !category);
        let pair = (l / 2).min(last_pair);
        owner[pair] = j as u32 + 1;
        // A node's depth is its pair's, set when its parent (an earlier split) was visited.
        let here = if i == 0 { 0 } else { depth[(i - 1) / 2] };
        depth[pair] = here + 1;
        deepest = deepest.max(here + 1);
    }
    // As many pairs as splits, each the children of the split that claims
    // it last: so every node but the root has one parent, before it.
    bad |= children.iter().enumerate().any(|(j, &l)| owner[(l as usize / 2).min(last_pair)] != j as u32 + 1);
    if bad || set_offset > u32::from(u16::MAX) {
        return None;
    }
    let sets = padded_sets(tree, words, tables.features);
    Some(RankedNodes { nodes, depth: deepest as usize, sets, values })
}

/// The category splits' sets, in node order, each padded to its feature's
/// span (its widest set and a zero word), the whole padded to a power of
/// two words.
fn padded_sets(tree: &Columns<'_>, words: &[u32], features: &[(u32, bool)]) -> Vec<u64> {
    let mut sets = Vec::new();
    let mut start = 0;
    let category_features =
        tree.flags.iter().zip(words).filter(|(&flag, _)| flag & CATEGORIES != 0).map(|(_, &f)| f as usize);
    for (f, &len) in category_features.zip(&tree.set_lens) {
        let len = len as usize;
        sets.extend_from_slice(&tree.set_words[start..start + len]);
        sets.resize(sets.len() + features[f].0 as usize - len, 0);
        start += len;
    }
    if !sets.is_empty() {
        sets.resize(sets.len().next_power_of_two(), 0);
    }
    sets
}

#[cfg(test)]
mod tests {
    use arbor_quantize::BinMapper;

    use super::*;
    use crate::format::payload::Payload;
    use crate::format::{encode, read};
    use crate::model::tree::{Node, SplitTest, Tree};

    /// A threshold split on `feature` sending rows left to `left`.
    fn split(feature: u32, threshold: f64, left: u32) -> Node {
        let test = SplitTest::LessOrEqual(threshold);
        Node::Split { feature, test, default_left: false, left, right: left + 1 }
    }

    /// The format tests' tree, made one the trees over ranks can hold (its
    /// special split a threshold split), two of its leaves alike.
    fn tree() -> Tree {
        let mut tree = crate::format::tests::tree();
        tree.nodes[2] = split(1, -0.25, 5);
        tree.values[6..].copy_from_slice(&[0.5, 0.5]);
        tree
    }

    /// Three features, the last of them `last` (numeric or categorical).
    fn features(last: FeatureType) -> Vec<Feature> {
        (0..3)
            .map(|i| Feature {
                name: format!("x{i}"),
                data_type: "Float64".into(),
                kind: if i == 2 { last } else { FeatureType::Numeric },
                mapper: BinMapper::Numeric { edges: vec![0.0] },
            })
            .collect()
    }

    /// What the fast path makes of `tree` (leaves two wide), and what the
    /// whole decoding does.
    fn load(tree: &Tree, features: &[Feature]) -> (Option<RankedForest>, Result<(), String>) {
        let mut bytes = Vec::new();
        encode::encode(std::slice::from_ref(tree), 2, &mut bytes);
        // one tree: its count, its length, its section
        let section = &bytes[16..];
        let columns = Columns::parse(section, 3, 2).unwrap();
        let fast = ranked_forest(std::slice::from_ref(&columns), features, 2);
        let mut payload = Payload::unframed(&bytes[..], bytes.len() as u64);
        (fast, read::read(&mut payload, 3, features, 2).map(drop))
    }

    #[test]
    fn a_valid_tree_loads_over_ranks() {
        let (fast, decoded) = load(&tree(), &features(FeatureType::Numeric));
        let forest = fast.expect("the fast path takes a valid tree");
        assert!(decoded.is_ok());
        assert_eq!(forest.shape(0), tree().shape());
        // the leaves' two outputs are stored once per distinct pair: [0.5, 0.5] twice
        assert_eq!(forest.values(0), &[0.5, 0.5, 1.0, 0.0, 0.25, 0.75]);
    }

    /// Every fault the flat layout's check finds, the fast path refuses too,
    /// and the decoding that follows names it.
    #[test]
    fn trees_the_fast_path_refuses_are_decoding_errors() {
        type Edit<'a> = &'a dyn Fn(&mut Tree);
        let cases: [(Edit<'_>, FeatureType, &str); 6] = [
            (&|t| t.nodes[0] = split(7, 1.5, 1), FeatureType::Numeric, "tests feature 7, but the model has 3"),
            (&|t| t.nodes[6] = Node::Leaf { value: 7 }, FeatureType::Numeric, "leaf 6 points past"),
            (&|t| t.nodes[2] = split(1, f64::NAN, 5), FeatureType::Numeric, "NaN threshold"),
            (&|t| t.nodes[2] = split(1, 0.0, 3), FeatureType::Numeric, "2 parents"),
            (&|t| t.nodes[2] = split(1, 0.0, 1), FeatureType::Numeric, "invalid child"),
            (&|_| {}, FeatureType::Categorical, "does not fit the type of its feature"),
        ];
        for (edit, last, message) in cases {
            let mut t = tree();
            edit(&mut t);
            let (fast, decoded) = load(&t, &features(last));
            assert!(fast.is_none(), "{message}: the fast path refuses the tree");
            let e = decoded.unwrap_err();
            assert!(e.contains(message), "{message}: {e}");
        }
    }
}
