//! TreeSHAP against the definition: Shapley values computed over every
//! subset of the features, on random small trees.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::explain::leaf_patterns::LeafPatterns;
use crate::explain::tree_shap::{reciprocals, ShapTree, Step};
use crate::model::builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
use crate::model::tree::{Node, SplitTest, Tree};
use crate::{Classes, Loss, Model};

/// Features 0..n-1 are numeric (values 0..10), the last is categorical over four categories.
fn features(n: usize) -> Vec<BuilderFeature> {
    let mut features: Vec<BuilderFeature> = (0..n - 1).map(|i| BuilderFeature::numeric(format!("x{i}"))).collect();
    features.push(BuilderFeature::categorical("c", ["a", "b", "c", "d"].map(String::from).to_vec()));
    features
}

/// Adds a random subtree under `parent` of at most `depth` levels whose
/// leaves hold `width` values; features repeat along paths.
fn grow(
    tree: &mut TreeBuilder,
    parent: Option<(NodeId, Side)>,
    depth: usize,
    n_features: usize,
    width: usize,
    rng: &mut ChaCha8Rng,
) {
    grow_covered(tree, parent, depth, (n_features, width), 1000, rng);
}

/// [`grow`] below a node that `cover` rows reached, shared out between its
/// children at random (one may get none, as with sample weights of 0).
fn grow_covered(
    tree: &mut TreeBuilder,
    parent: Option<(NodeId, Side)>,
    depth: usize,
    (n_features, width): (usize, usize),
    cover: u32,
    rng: &mut ChaCha8Rng,
) {
    let leaf = depth == 0 || (parent.is_some() && rng.random_bool(0.2));
    let id = if leaf {
        let values: Vec<f64> = (0..width).map(|_| rng.random_range(-3.0..3.0)).collect();
        tree.add_leaf(parent, &values).unwrap()
    } else {
        let feature = rng.random_range(0..n_features);
        let test = if feature == n_features - 1 {
            SplitTest::InCategories(vec![rng.random_range(1..31u64) << 1])
        } else {
            SplitTest::LessOrEqual(f64::from(rng.random_range(0..10u8)) + 0.5)
        };
        let id = tree.add_split(parent, feature, test, rng.random_bool(0.5)).unwrap();
        let left = rng.random_range(0..=cover);
        grow_covered(tree, Some((id, Side::Left)), depth - 1, (n_features, width), left, rng);
        grow_covered(tree, Some((id, Side::Right)), depth - 1, (n_features, width), cover - left, rng);
        id
    };
    tree.cover(id, f64::from(cover)).unwrap();
}

/// A tree's expected output when only the features in `known` (a bit set)
/// are known: known features follow the row, unknown ones both branches in
/// proportion to their cover.
fn conditional(tree: &Tree, cover: &[f32], node: usize, x: &[f64], known: u32, k: usize) -> f64 {
    match &tree.nodes[node] {
        Node::Leaf { value } => tree.values[*value as usize + k],
        Node::Split { feature, test, default_left, left, right } => {
            let (l, r) = (*left as usize, *right as usize);
            if known >> feature & 1 == 1 {
                let v = x[*feature as usize];
                let go_left = if v.is_nan() { *default_left } else { test.goes_left(v) };
                return conditional(tree, cover, if go_left { l } else { r }, x, known, k);
            }
            let parent = f64::from(cover[node]);
            if parent == 0.0 {
                return 0.0;
            }
            let share = |c: usize| f64::from(cover[c]) / parent;
            share(l) * conditional(tree, cover, l, x, known, k) + share(r) * conditional(tree, cover, r, x, known, k)
        }
    }
}

/// Shapley values by their definition: feature `i`'s is the mean over
/// subsets `S` of the others, weighted `|S|!(M-|S|-1)!/M!`, of what knowing
/// `i` adds to the expected output given `S`.
fn brute_force(model: &Model, x: &[f64], width: usize, leaf_k: impl Fn(usize) -> usize) -> Vec<f64> {
    let m = model.features().len();
    let factorial = |n: usize| (1..=n).map(|v| v as f64).product::<f64>();
    let stride = m + 1;
    let mut phi = vec![0.0; stride * width];
    let trees = model.trees();
    let n_trees = trees.len() as f64;
    let scale = if model.boosting().is_some() { 1.0 } else { 1.0 / n_trees };
    for (t, tree) in trees.iter().enumerate() {
        let cover = model.node_cover().unwrap().tree(t);
        let out = if model.boosting().is_some() { t % width } else { 0 };
        for k in 0..(if model.boosting().is_some() { 1 } else { width }) {
            let block = out + k;
            let v = |known: u32| conditional(tree, cover, 0, x, known, leaf_k(k));
            for i in 0..m {
                for known in 0u32..1 << m {
                    if known >> i & 1 == 1 {
                        continue;
                    }
                    let s = known.count_ones() as usize;
                    let weight = factorial(s) * factorial(m - s - 1) / factorial(m);
                    phi[block * stride + i] += scale * weight * (v(known | 1 << i) - v(known));
                }
            }
            phi[block * stride + m] += scale * v(0);
        }
    }
    if let Some(b) = model.boosting() {
        for (k, base) in b.base_score.iter().enumerate() {
            phi[k * stride + m] += base;
        }
    }
    phi
}

/// Random rows: numeric values 0..10 and categories 1..4, a fifth missing.
fn rows(n_features: usize, n_rows: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
    (0..n_features)
        .map(|f| {
            (0..n_rows)
                .map(|_| match rng.random_bool(0.2) {
                    true => f64::NAN,
                    false if f == n_features - 1 => f64::from(rng.random_range(1..5u8)),
                    false => f64::from(rng.random_range(0..10u8)),
                })
                .collect()
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-10 * (1.0 + w.abs()), "{what}: value {i}: {g} against {w}\n{got:?}\n{want:?}");
    }
}

#[test]
fn tree_shap_equals_shapley_values_by_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..40 {
        let n_features = 3 + case % 6;
        let mut builder = ModelBuilder::regression("y", features(n_features)).unwrap();
        for _ in 0..1 + case % 3 {
            let mut tree = TreeBuilder::new();
            grow(&mut tree, None, 1 + case % 7, n_features, 1, &mut rng);
            builder.add_tree(tree).unwrap();
        }
        let model = builder.build().unwrap();
        let columns = rows(n_features, 12, &mut rng);
        let got = model.contributions_columns(&columns, 12).unwrap();
        // Many rows pay for leaf tables: the first twelve again, then others.
        let mut many = columns.clone();
        many.iter_mut().zip(rows(n_features, 4000, &mut rng)).for_each(|(c, more)| c.extend(more));
        let tabled = model.contributions_columns(&many, 4012).unwrap();
        for r in 0..12 {
            let x: Vec<f64> = columns.iter().map(|c| c[r]).collect();
            let want = brute_force(&model, &x, 1, |_| 0);
            assert_close(got.row(r), &want, &format!("case {case}, row {r}"));
            assert_close(tabled.row(r), &want, &format!("case {case}, row {r}, from leaf tables"));
        }
    }
}

/// Leaf tables give what the walk gives, row for row, on trees of every
/// depth they are built for, forest leaves of three values included.
#[test]
fn leaf_tables_explain_as_the_walk_does() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut built = 0;
    for case in 0..30 {
        let width = 1 + 2 * (case % 2);
        let mut tree = TreeBuilder::new();
        grow(&mut tree, None, 2 + case % 9, 6, width, &mut rng);
        let classes = Classes::Int((0..3).collect());
        let mut builder = match width {
            1 => ModelBuilder::regression("y", features(6)).unwrap(),
            _ => ModelBuilder::classification("y", classes, features(6)).unwrap(),
        };
        builder.add_tree(tree).unwrap();
        let model = builder.build().unwrap();
        let shap = ShapTree::new(&model.trees()[0], model.node_cover().unwrap().tree(0), width, width, |v, out| {
            out.extend_from_slice(v)
        });
        let Some(tables) = LeafPatterns::new(&shap, usize::MAX) else { continue };
        built += 1;
        let columns = rows(6, 50, &mut rng);
        let mut path = vec![Step::default(); shap.path_len()];
        let inverse = reciprocals(shap.path_len());
        for r in 0..50 {
            let x: Vec<f64> = columns.iter().map(|c| c[r]).collect();
            let (mut walked, mut tabled) = (vec![0.0; 7 * width], vec![0.0; 7 * width]);
            shap.explain(&x, &mut path, &inverse, &mut walked, 7);
            tables.explain(&shap, &x, &mut tabled, 7);
            assert_close(&tabled, &walked, &format!("case {case}, row {r}"));
        }
    }
    assert!(built >= 25, "tables were built for {built} trees");
}

#[test]
fn boosted_softmax_and_forest_classes_match_the_definition_per_output() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let classes = || Classes::Str(["p", "q", "r"].map(String::from).to_vec());
    // Softmax: tree t scores class t % 3, each output with its own base score.
    let mut boosted = ModelBuilder::classification("y", classes(), features(5))
        .unwrap()
        .boosting(Loss::Softmax, vec![0.1, -0.2, 0.3]);
    for _ in 0..6 {
        let mut tree = TreeBuilder::new();
        grow(&mut tree, None, 4, 5, 1, &mut rng);
        boosted.add_tree(tree).unwrap();
    }
    let boosted = boosted.build().unwrap();
    // A forest of class distributions: every class is an output.
    let mut forest = ModelBuilder::classification("y", classes(), features(5)).unwrap();
    for _ in 0..3 {
        let mut tree = TreeBuilder::new();
        grow(&mut tree, None, 4, 5, 3, &mut rng);
        forest.add_tree(tree).unwrap();
    }
    let forest = forest.build().unwrap();
    let columns = rows(5, 10, &mut rng);
    for (model, leaf_k) in [(&boosted, (|_| 0) as fn(usize) -> usize), (&forest, |k| k)] {
        assert_eq!(model.contribution_outputs(), 3);
        let got = model.contributions_columns(&columns, 10).unwrap();
        assert_eq!(got.width(), 18);
        for r in 0..10 {
            let x: Vec<f64> = columns.iter().map(|c| c[r]).collect();
            assert_close(got.row(r), &brute_force(model, &x, 3, leaf_k), &format!("row {r}"));
        }
    }
}

#[test]
fn a_model_without_node_cover_is_refused_by_name() {
    let mut builder = ModelBuilder::regression("y", features(3)).unwrap();
    let mut tree = TreeBuilder::new();
    let root = tree.add_split(None, 0, SplitTest::LessOrEqual(1.0), true).unwrap();
    tree.add_leaf(Some((root, Side::Left)), &[1.0]).unwrap();
    tree.add_leaf(Some((root, Side::Right)), &[2.0]).unwrap();
    builder.add_tree(tree).unwrap();
    let model = builder.build().unwrap();
    assert!(model.node_cover().is_none(), "a node without a cover leaves the model without covers");
    let e = model.contributions_columns(&[vec![0.0], vec![0.0], vec![1.0]], 1).unwrap_err().to_string();
    assert!(e.contains("no node cover") && e.contains("format 4"), "{e}");
}
