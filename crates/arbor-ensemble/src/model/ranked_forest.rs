//! A model's trees over ranks ([`RankNode`]s), the compact form prediction
//! walks whenever a model allows it: each feature's values become their rank
//! among the thresholds the model tests that feature against (or, for a
//! categorical feature, their category code), once per block of rows, and
//! every tree is walked on 8-byte nodes and 2-byte values.

use std::sync::OnceLock;

use arbor_kernels::{threshold_ranks, FlatNode, QuickScorer, RankNode, RankedTree, TRAVERSAL_BLOCK};
use rayon::prelude::*;

use crate::data::key_map::KeyMap;
use crate::model::flat_tree::FlatTree;
use crate::model::tree::TreeShape;

/// How one feature's raw values become the walk's ranks.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ranking {
    /// No split tests the feature.
    Unused,
    /// The sorted, distinct thresholds of the `x <= t` splits on it: a
    /// value's rank is how many of them are below it.
    Thresholds(Vec<f64>),
    /// Category sets `words` wide (as padded here): a code below `64 * words`
    /// is its own rank, any other reads the zero word that ends every set.
    Categories { words: usize },
}

/// One tree over ranks.
#[derive(Clone, Debug)]
pub(crate) struct RankedNodes {
    pub nodes: Vec<RankNode>,
    pub depth: usize,
    /// Every category split's set, padded to its feature's width, then a zero
    /// word; none, or a power of two of words.
    pub sets: Vec<u64>,
    /// The leaf outputs the leaves' offsets point into.
    pub values: Vec<f64>,
}

/// The trees of a model over ranks, with the rankings of its features.
#[derive(Clone, Debug)]
pub(crate) struct RankedForest {
    rankings: Vec<Ranking>,
    trees: Vec<RankedNodes>,
    /// The trees in QuickScorer's form, made on first use by a boosted model.
    quick: OnceLock<Option<QuickScorer>>,
}

impl RankedForest {
    /// The ranked form of `flat`, trees over `n_features` features; `None`
    /// when the compact nodes cannot express them: special splits, a feature
    /// index past [`RankNode::MAX_FEATURES`], a feature tested both by
    /// thresholds and by category sets, more than [`RankNode::MAX_RANK`]
    /// thresholds on one feature, category sets too wide for a 2-byte code
    /// or a tree whose set words overflow a 2-byte offset.
    pub fn new(flat: &[FlatTree], n_features: usize) -> Option<RankedForest> {
        if n_features > RankNode::MAX_FEATURES || flat.iter().any(|tree| !tree.tests.is_empty()) {
            return None;
        }
        let (rankings, ranks) = rankings(flat, n_features)?;
        let trees = flat.par_iter().map(|tree| ranked_nodes(tree, &rankings, &ranks)).collect::<Option<Vec<_>>>()?;
        Some(RankedForest { rankings, trees, quick: OnceLock::new() })
    }

    /// Trees over ranks built elsewhere ([`crate::format::ranked_columns`]) on `rankings`.
    pub fn from_parts(rankings: Vec<Ranking>, trees: Vec<RankedNodes>) -> RankedForest {
        RankedForest { rankings, trees, quick: OnceLock::new() }
    }

    /// The number of trees.
    pub fn len(&self) -> usize {
        self.trees.len()
    }

    /// Size and shape of tree `t`.
    pub fn shape(&self, t: usize) -> TreeShape {
        let tree = &self.trees[t];
        let leaves = tree.nodes.iter().filter(|node| node.word & RankNode::LEAF != 0).count();
        TreeShape { nodes: tree.nodes.len(), leaves, depth: tree.depth }
    }

    /// Tree `t`'s leaf outputs, which its leaves' offsets point into.
    pub fn values(&self, t: usize) -> &[f64] {
        &self.trees[t].values
    }

    /// The trees in QuickScorer's form, tree `t` adding to output
    /// `t % outputs` (a boosted model's; the same at every call), or `None`
    /// when a tree has more leaves than it takes, category sets wider than
    /// it takes, or leaves more than one value wide.
    pub fn quick_scorer(&self, outputs: usize) -> Option<&QuickScorer> {
        self.quick
            .get_or_init(|| {
                let one_value_each = self.trees.iter().all(|tree| {
                    tree.values.len() == tree.nodes.iter().filter(|node| node.word & RankNode::LEAF != 0).count()
                });
                let set_words: Vec<usize> = self
                    .rankings
                    .iter()
                    .map(|ranking| match ranking {
                        Ranking::Categories { words } => *words,
                        Ranking::Unused | Ranking::Thresholds(_) => 0,
                    })
                    .collect();
                let trees = (0..self.len()).map(|t| (self.tree(t), &self.trees[t].values[..]));
                one_value_each.then(|| QuickScorer::new(trees, &set_words, outputs)).flatten()
            })
            .as_ref()
    }

    /// Tree `t` as the walk reads it.
    pub fn tree(&self, t: usize) -> RankedTree<'_> {
        let tree = &self.trees[t];
        RankedTree { nodes: &tree.nodes, depth: tree.depth, sets: &tree.sets }
    }

    /// Fills `ranks` with the ranks of rows `start..start + n` of `columns`
    /// (raw values, column-major), as the walk reads them: in traversal
    /// blocks of [`TRAVERSAL_BLOCK`] rows (the last one shorter), each one's
    /// ranks feature by feature, a column of the block's rows per feature;
    /// returns whether a feature some split tests is missing in one of them.
    pub fn ranks(&self, columns: &[Vec<f64>], start: usize, ranks: &mut [u16]) -> bool {
        let n_features = columns.len().max(1);
        let n = ranks.len() / n_features;
        let mut missing = false;
        for (block, ranks) in ranks.chunks_mut(TRAVERSAL_BLOCK * n_features).enumerate() {
            let rows = start + block * TRAVERSAL_BLOCK..start + (block * TRAVERSAL_BLOCK + TRAVERSAL_BLOCK).min(n);
            for ((column, ranking), ranks) in columns.iter().zip(&self.rankings).zip(ranks.chunks_mut(rows.len())) {
                missing |= rank_column(ranking, &column[rows.clone()], ranks);
            }
        }
        missing
    }
}

/// Writes the ranks (or codes) of a feature's `values` under `ranking` to
/// `ranks`, one each; returns whether a tested value is missing.
fn rank_column(ranking: &Ranking, values: &[f64], ranks: &mut [u16]) -> bool {
    match ranking {
        Ranking::Unused => {
            ranks.fill(0);
            false
        }
        Ranking::Thresholds(thresholds) => threshold_ranks(thresholds, values, ranks),
        Ranking::Categories { words } => {
            let limit = 64 * *words as i64;
            let mut missing = false;
            for (r, &x) in ranks.iter_mut().zip(values) {
                missing |= x.is_nan();
                // Truncates toward zero, as the 16-byte nodes' test does.
                let code = x as i64;
                *r = if x.is_nan() {
                    RankNode::MISSING
                } else if (0..limit).contains(&code) {
                    code as u16
                } else {
                    limit as u16
                };
            }
            missing
        }
    }
}

/// A threshold's hash key: its bits, with `-0.0` read as `0.0` (one threshold).
pub(crate) fn key(threshold: f64) -> u64 {
    (threshold + 0.0).to_bits()
}

/// Each feature's ranking, from every split of every tree, with each
/// threshold's rank by key; `None` when a feature is tested both ways, has
/// too many thresholds or too wide sets.
fn rankings(flat: &[FlatTree], n_features: usize) -> Option<(Vec<Ranking>, Vec<KeyMap<u16>>)> {
    // Per feature: the distinct threshold keys, the widest category set.
    type Seen = (Vec<KeyMap<()>>, Vec<Option<usize>>);
    let empty = || -> Seen { (vec![KeyMap::default(); n_features], vec![None; n_features]) };
    let (keys, words) = flat
        .par_iter()
        .fold(empty, |(mut keys, mut words), tree| {
            for node in tree.nodes.iter().filter(|node| node.word & FlatNode::LEAF == 0) {
                let f = (node.word & FlatNode::FEATURE_MASK) as usize;
                if node.word & FlatNode::CATEGORIES != 0 {
                    let width = node.category_words().1;
                    words[f] = Some(words[f].map_or(width, |w: usize| w.max(width)));
                } else {
                    keys[f].insert(key(node.threshold), ());
                }
            }
            (keys, words)
        })
        .reduce(empty, |(mut keys, mut words), (more_keys, more_words)| {
            for (k, more) in keys.iter_mut().zip(more_keys) {
                k.extend(more);
            }
            for (w, more) in words.iter_mut().zip(more_words) {
                *w = (*w).max(more);
            }
            (keys, words)
        });
    rankings_from(keys, words)
}

/// Each feature's ranking, from the distinct keys of the thresholds it is
/// tested against and the widest category set it is tested by, with each
/// threshold's rank by key; `None` when a feature is tested both ways, has
/// too many thresholds or too wide sets.
pub(crate) fn rankings_from(
    keys: Vec<KeyMap<()>>,
    words: Vec<Option<usize>>,
) -> Option<(Vec<Ranking>, Vec<KeyMap<u16>>)> {
    keys.into_iter()
        .zip(words)
        .map(|(keys, words)| match (keys.is_empty(), words) {
            (true, None) => Some((Ranking::Unused, KeyMap::default())),
            (false, None) => {
                let mut thresholds: Vec<f64> = keys.into_keys().map(f64::from_bits).collect();
                thresholds.sort_unstable_by(f64::total_cmp);
                let ranks = thresholds.iter().enumerate().map(|(k, &t)| (key(t), k as u16)).collect();
                (thresholds.len() <= usize::from(RankNode::MAX_RANK))
                    .then_some((Ranking::Thresholds(thresholds), ranks))
            }
            // the zero word's code, 64 * words, must be a rank below MISSING
            (true, Some(words)) => (64 * words <= usize::from(RankNode::MAX_RANK))
                .then_some((Ranking::Categories { words }, KeyMap::default())),
            (false, Some(_)) => None,
        })
        .collect::<Option<Vec<_>>>()
        .map(|both| both.into_iter().unzip())
}

/// `tree` over ranks (`ranks`: each feature's threshold ranks by key), or
/// `None` when its set words overflow a 2-byte offset.
fn ranked_nodes(tree: &FlatTree, rankings: &[Ranking], ranks: &[KeyMap<u16>]) -> Option<RankedNodes> {
    let all_sets = tree.sets.as_deref().unwrap_or_default();
    let mut sets = Vec::new();
    let mut nodes = Vec::with_capacity(tree.nodes.len());
    for node in &tree.nodes {
        if node.word & FlatNode::LEAF != 0 {
            nodes.push(RankNode::leaf(node.value()));
            continue;
        }
        let f = (node.word & FlatNode::FEATURE_MASK) as usize;
        let default_left = node.word & FlatNode::DEFAULT_LEFT != 0;
        let feature = f as u16;
        nodes.push(match &rankings[f] {
            Ranking::Thresholds(_) => {
                let k = ranks[f][&key(node.threshold)];
                RankNode::split(feature, k, default_left, node.next)
            }
            Ranking::Categories { words } => {
                let offset = u16::try_from(sets.len()).ok()?;
                let (start, len) = node.category_words();
                sets.extend_from_slice(&all_sets[start..start + len]);
                sets.resize(sets.len() + words - len + 1, 0);
                RankNode::categories(feature, offset, default_left, node.next)
            }
            Ranking::Unused => unreachable!("a split tests feature {f}, so it has a ranking"),
        });
    }
    if !sets.is_empty() {
        sets.resize(sets.len().next_power_of_two(), 0);
    }
    Some(RankedNodes { nodes, depth: tree.depth, sets, values: tree.values.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_zeros_are_one_threshold() {
        assert_eq!(key(-0.0), key(0.0));
        assert_ne!(key(1.0), key(-1.0));
    }
}

#[cfg(test)]
mod prediction_tests {
    use std::fs::File;

    use arrow::array::RecordBatch;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use arbor_kernels::dispatch::{with_simd_level, SimdLevel};

    use crate::model::trees::Trees;
    use crate::{Model, Predictions, TrainParams};

    /// The first `rows` rows of a bundled Parquet file.
    fn read(name: &str, rows: usize) -> RecordBatch {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name);
        let mut reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
            .unwrap()
            .with_batch_size(rows)
            .build()
            .unwrap();
        reader.next().unwrap().unwrap()
    }

    fn fit(batch: &RecordBatch, options: &str) -> Model {
        let params = TrainParams::parse_options(options).unwrap();
        crate::Trainer::new(params).fit(batch).unwrap()
    }

    /// Asserts that two predictions are the same to the bit.
    fn assert_same_bits(expected: &Predictions, got: &Predictions, what: &str) {
        assert_eq!(expected.values.len(), got.values.len(), "{what}: lengths");
        let same = expected.values.iter().zip(&got.values).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{what}: predictions");
    }

    /// A saved model loads straight into the trees over ranks, never
    /// decoding the flat layout to predict, and predicts exactly as the
    /// trained model does: forests with category splits, boosting (leaves
    /// one value wide), ten classes, regression. Saved again, it writes its
    /// kept sections, which are also what its decoded trees encode to.
    #[test]
    fn loaded_models_predict_over_ranks_as_trained() {
        let cases = [
            ("flights_cls", "n_trees=6"),
            ("flights_cls", "algorithm=gradient-boosting n_rounds=8 max_depth=6"),
            ("digits_cls", "n_trees=4"),
            ("diamonds_reg", "n_trees=4 max_features=all"),
        ];
        for (data, options) in cases {
            let model = fit(&read(&format!("{data}_train.parquet"), 3000), options);
            let bytes = model.to_bytes();
            let loaded = Model::from_bytes(&bytes).unwrap();
            assert!(loaded.trees.loaded_over_ranks(), "{data} {options}: loads over ranks");
            let test = read(&format!("{data}_test.parquet"), 2000);
            let (expected, got) = (model.score(&test).unwrap(), loaded.score(&test).unwrap());
            assert_same_bits(&expected, &got, &format!("{data} {options}"));
            assert!(loaded.trees.loaded_over_ranks(), "{data} {options}: predicting needs no flat layout");
            assert_eq!(loaded.trees.shapes(), model.trees.shapes(), "{data} {options}: shapes");
            assert!(loaded.to_bytes() == bytes, "{data} {options}: saved again, the same bytes");
            assert!(loaded.trees.loaded_over_ranks(), "{data} {options}: saving decodes nothing");
            let decoded = Model { trees: Trees::from(loaded.trees.to_vec()), ..loaded.clone() };
            assert!(decoded.to_bytes() == bytes, "{data} {options}: decoded and encoded again, the same bytes");
        }
    }

    /// A forest holds each tree encoded from the moment it is grown: it
    /// predicts (over ranks built straight from the encoding) and saves
    /// without decoding them, and gives the bytes and predictions of the
    /// same trees held as node lists.
    #[test]
    fn a_grown_forest_is_held_encoded() {
        let model = fit(&read("flights_cls_train.parquet", 3000), "n_trees=6 oob=true");
        assert!(model.trees.held_encoded());
        let test = read("flights_cls_test.parquet", 2000);
        let got = model.score(&test).unwrap();
        let bytes = model.to_bytes();
        let mut written = Vec::new();
        assert_eq!(model.write_to(&mut written).unwrap(), bytes.len() as u64);
        assert!(written == bytes, "write_to writes the bytes of to_bytes");
        assert!(model.trees.held_encoded(), "predicting and saving decode nothing");
        let lists = Model { trees: Trees::from(model.trees.to_vec()), ..model.clone() };
        assert!(lists.to_bytes() == bytes, "the node lists encode to the kept bytes");
        assert_same_bits(&lists.score(&test).unwrap(), &got, "grown forest");
    }

    /// Walking the trees over ranks gives the predictions of the flat trees,
    /// to the bit, at every SIMD level, on real data with missing values in
    /// every feature: deep forests (the walk in lanes, gathered under
    /// AVX-512), boosting (level by level, or as QuickScorer's bitvectors
    /// where they run: trees of at most 64 leaves, here all but the depth-8
    /// ones, with one output or ten), category splits and numeric ones,
    /// CART thresholds between values.
    #[test]
    fn ranked_prediction_equals_flat_prediction() {
        let cases = [
            ("flights_cls", "n_trees=8"),
            ("flights_cls", "algorithm=gradient-boosting n_rounds=10 max_depth=6"),
            ("flights_cls", "algorithm=gradient-boosting n_rounds=4 max_depth=8"),
            ("flights_cls", "n_trees=4 max_depth=12 max_bins=1024"),
            ("diamonds_reg", "n_trees=6 max_features=all"),
            ("diamonds_reg", "algorithm=gradient-boosting n_rounds=8"),
            ("digits_cls", "algorithm=gradient-boosting n_rounds=3 max_depth=5"),
        ];
        // the level is forced on the calling thread: a pool of that thread alone
        let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        for (data, options) in cases {
            let model = fit(&read(&format!("{data}_train.parquet"), 4000), options);
            let test = read(&format!("{data}_test.parquet"), 3000);
            let arrays = model.feature_arrays(&test).unwrap();
            let mut columns: Vec<Vec<f64>> =
                model.features.iter().zip(&arrays).map(|(f, a)| f.mapper.raw_values(&f.name, a).unwrap()).collect();
            // every 7th value of each feature missing, at a different phase per feature
            for (f, column) in columns.iter_mut().enumerate() {
                column.iter_mut().skip(f).step_by(7).for_each(|x| *x = f64::NAN);
            }
            let n = test.num_rows();
            let ranked = model.trees.ranked(model.features.len());
            assert!(ranked.is_some(), "{data} {options}: trained splits fit the trees over ranks");
            if let (Some(boosting), Some(forest)) = (&model.boosting, ranked) {
                let fits = forest.quick_scorer(boosting.outputs).is_some();
                assert_eq!(fits, !options.contains("max_depth=8"), "{data} {options}: trees QuickScorer takes");
            }
            // The rows repeated past three traversal blocks: a work unit's
            // ranks come block by block, each feature by feature.
            let long = 3 * arbor_kernels::TRAVERSAL_BLOCK + 5;
            let tiled: Vec<Vec<f64>> =
                columns.iter().map(|column| column.iter().copied().cycle().take(long).collect()).collect();
            for (columns, rows) in [(&columns, n), (&columns, 300), (&columns, 1), (&tiled, long)] {
                let expected = model.predict_with(columns, rows, None);
                for level in SimdLevel::available() {
                    let walk = || with_simd_level(level, || model.predict_with(columns, rows, ranked)).unwrap();
                    let got = one_thread.install(walk);
                    assert_same_bits(&expected, &got, &format!("{data} {options}: {rows} rows, {level}"));
                }
            }
        }
    }
}
