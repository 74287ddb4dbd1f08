//! Every random forest option (`docs/algorithms.md`) shows its effect on a model:
//! splitters, growth strategies, termination criteria, criteria, weights,
//! bootstrap, out-of-bag error, variable importance and voting.

use std::sync::Arc;

use arbor_ensemble::{Model, Node, TrainParams, Trained, Trainer, Tree};
use arrow::array::{ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::Int32Type;
use rand::{Rng, SeedableRng};

mod common;
use common::{accuracy, fit, read, rmse, training_data};

/// The model's raw feature values for `batch`, column-major.
fn raw_columns(model: &Model, batch: &RecordBatch) -> Vec<Vec<f64>> {
    let arrays = model.feature_arrays(batch).unwrap();
    model.features().iter().zip(&arrays).map(|(f, a)| f.mapper.raw_values(&f.name, a).unwrap()).collect()
}

/// Per node of `tree`: how many rows of `batch` reach it, and their class counts.
fn node_counts(model: &Model, tree: &Tree, batch: &RecordBatch) -> (Vec<usize>, Vec<[usize; 2]>) {
    let columns = raw_columns(model, batch);
    let labels = batch.column_by_name("label").unwrap().as_primitive::<Int32Type>();
    let mut counts = vec![0; tree.nodes.len()];
    let mut classes = vec![[0usize; 2]; tree.nodes.len()];
    for row in 0..batch.num_rows() {
        let mut i = 0;
        loop {
            counts[i] += 1;
            classes[i][labels.value(row) as usize] += 1;
            match &tree.nodes[i] {
                Node::Leaf { .. } => break,
                Node::Split { feature, test, default_left, left, right } => {
                    let x = columns[*feature as usize][row];
                    let go_left = if x.is_nan() { *default_left } else { test.goes_left(x) };
                    i = if go_left { *left } else { *right } as usize;
                }
            }
        }
    }
    (counts, classes)
}

fn gini(c: &[usize; 2]) -> f64 {
    let n = (c[0] + c[1]) as f64;
    1.0 - (c[0] as f64 / n).powi(2) - (c[1] as f64 / n).powi(2)
}

fn splits(tree: &Tree) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    tree.nodes.iter().enumerate().filter_map(|(i, n)| match n {
        Node::Split { left, right, .. } => Some((i, *left as usize, *right as usize)),
        Node::Leaf { .. } => None,
    })
}

/// The fewest training rows any leaf of the model's first tree holds.
fn fewest_leaf_rows(model: &Model, batch: &RecordBatch) -> usize {
    let tree = &model.trees()[0];
    let (counts, _) = node_counts(model, tree, batch);
    tree.nodes.iter().zip(counts).filter(|(node, _)| matches!(node, Node::Leaf { .. })).map(|(_, c)| c).min().unwrap()
}

fn leaves(model: &Model) -> usize {
    model.tree_shapes().iter().map(|s| s.leaves).sum()
}

/// One CART tree on the whole sample: node counts are exact on the training rows.
const ONE_TREE: &str = "n_trees=1 bootstrap=false max_features=all";

#[test]
fn the_random_splitter_grows_extra_trees() {
    let train = read("flights_cls_train.parquet", 30_000);
    let test = read("flights_cls_test.parquet", 10_000);
    let best = fit(&train, "n_trees=20");
    let random = fit(&train, "n_trees=20 splitter=random");
    assert_ne!(best.trees(), random.trees());
    let (acc_best, acc_random) = (accuracy(&best, &test), accuracy(&random, &test));
    assert!(acc_random > 0.85, "extra trees accuracy {acc_random} (best splitter {acc_best})");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let single = pool.install(|| fit(&train, "n_trees=20 splitter=random"));
    assert_eq!(single.to_bytes(), random.to_bytes(), "same bytes on 1 and 2 threads");

    let train = read("diamonds_reg_train.parquet", 5_000);
    let test = read("diamonds_reg_test.parquet", 2_000);
    for method in ["hist", "exact"] {
        let model = fit(&train, &format!("n_trees=20 max_features=all splitter=random split_method={method}"));
        let rmse = rmse(&model, &test);
        eprintln!("{method}: extra trees RMSE {rmse}");
        assert!(rmse < 0.16, "{method}: extra trees RMSE {rmse}");
    }
}

#[test]
fn best_first_growth_stops_at_max_leaf_nodes() {
    let train = read("flights_cls_train.parquet", 10_000);
    let model = fit(&train, "n_trees=4 max_leaf_nodes=16");
    for shape in model.tree_shapes() {
        assert_eq!(shape.leaves, 16, "{shape:?}");
    }
    // Two leaves: the root's best split, as depth-first growth to depth 1 finds it.
    let two = fit(&train, &format!("{ONE_TREE} max_leaf_nodes=2"));
    let stump = fit(&train, &format!("{ONE_TREE} max_depth=1"));
    assert_eq!(two.trees(), stump.trees());
    // Without a binding limit, best-first grows the same tree as depth-first
    // (nodes numbered in another order, so compare what they predict).
    let unlimited = fit(&train, &format!("{ONE_TREE} max_leaf_nodes=1000000"));
    let depth_first = fit(&train, ONE_TREE);
    assert_eq!(leaves(&unlimited), leaves(&depth_first));
    assert_eq!(unlimited.score(&train).unwrap(), depth_first.score(&train).unwrap());
    // With a limit, the leaves kept are those of the largest improvements: more
    // leaves never fit the training rows worse.
    let train_acc: Vec<f64> =
        [4, 16, 64].iter().map(|k| accuracy(&fit(&train, &format!("{ONE_TREE} max_leaf_nodes={k}")), &train)).collect();
    assert!(train_acc.windows(2).all(|w| w[0] <= w[1]), "{train_acc:?}");
}

#[test]
fn every_termination_criterion_limits_the_tree() {
    let train = read("flights_cls_train.parquet", 5_000);
    let n = train.num_rows() as f64;
    let full = fit(&train, ONE_TREE);
    let full_leaves = leaves(&full);

    let model = fit(&train, &format!("{ONE_TREE} max_depth=3"));
    assert_eq!(model.tree_shapes()[0].depth, 3);
    assert!(full.tree_shapes()[0].depth > 3);

    let model = fit(&train, &format!("{ONE_TREE} min_samples_leaf=50"));
    let fewest = fewest_leaf_rows(&model, &train);
    assert!(fewest >= 50, "a leaf has {fewest} rows");
    assert!(leaves(&model) < full_leaves);

    let model = fit(&train, &format!("{ONE_TREE} min_samples_split=400"));
    let (counts, _) = node_counts(&model, &model.trees()[0], &train);
    for (i, _, _) in splits(&model.trees()[0]) {
        assert!(counts[i] >= 400, "split node {i} has {} rows", counts[i]);
    }
    assert!(leaves(&model) < full_leaves);

    let model = fit(&train, &format!("{ONE_TREE} min_weight_fraction_leaf=0.05"));
    let fewest = fewest_leaf_rows(&model, &train);
    assert!(fewest as f64 >= 0.05 * n, "a leaf has {fewest} rows");
    assert!(leaves(&model) <= 20, "at most 1/0.05 leaves: {}", leaves(&model));

    let model = fit(&train, &format!("{ONE_TREE} impurity_threshold=0.2"));
    let (_, classes) = node_counts(&model, &model.trees()[0], &train);
    for (i, _, _) in splits(&model.trees()[0]) {
        assert!(gini(&classes[i]) > 0.2, "node {i} was split at impurity {}", gini(&classes[i]));
    }
    assert!(leaves(&model) < full_leaves);

    let model = fit(&train, &format!("{ONE_TREE} min_impurity_decrease=0.002"));
    let (counts, classes) = node_counts(&model, &model.trees()[0], &train);
    for (i, l, r) in splits(&model.trees()[0]) {
        let decrease = counts[i] as f64 * gini(&classes[i])
            - counts[l] as f64 * gini(&classes[l])
            - counts[r] as f64 * gini(&classes[r]);
        assert!(decrease / n >= 0.002 - 1e-12, "node {i} decreased impurity by {}", decrease / n);
    }
    assert!(leaves(&model) < full_leaves);

    let model = fit(&train, &format!("{ONE_TREE} max_leaf_nodes=7"));
    assert_eq!(leaves(&model), 7);
}

#[test]
fn entropy_is_a_different_criterion_of_similar_quality() {
    let train = read("flights_cls_train.parquet", 30_000);
    let test = read("flights_cls_test.parquet", 10_000);
    let gini = fit(&train, "n_trees=20 criterion=gini");
    let entropy = fit(&train, "n_trees=20 criterion=entropy");
    assert_ne!(gini.trees(), entropy.trees());
    let acc = accuracy(&entropy, &test);
    assert!(acc > 0.87, "entropy accuracy {acc}");
    assert!(entropy.params().contains(&("criterion".into(), "entropy".into())));
}

/// A sample weight of 2 is the same as the row twice (exact bins, so the
/// duplicates do not move quantile edges). Class weights sum exactly; sums of
/// `w·y` round differently from repeated `y`, so regression stops at depth 6,
/// above the small nodes where gains could tie to the last bit.
#[test]
fn integer_weights_equal_repeated_rows() {
    for (file, depth) in [("flights_cls_train.parquet", 0), ("diamonds_reg_train.parquet", 6)] {
        let batch = read(file, 2_000);
        let weight: Vec<f64> = (0..batch.num_rows()).map(|i| (1 + i % 3) as f64).collect();
        let mut columns: Vec<(String, ArrayRef)> =
            batch.schema().fields().iter().map(|f| f.name().clone()).zip(batch.columns().iter().cloned()).collect();
        columns.push(("w".into(), Arc::new(Float64Array::from(weight.clone()))));
        let weighted = RecordBatch::try_from_iter(columns).unwrap();
        let repeat: Vec<u32> =
            (0..batch.num_rows() as u32).flat_map(|i| std::iter::repeat_n(i, weight[i as usize] as usize)).collect();
        let repeated = arrow::compute::take_record_batch(&batch, &arrow::array::UInt32Array::from(repeat)).unwrap();

        let options = format!("{ONE_TREE} split_method=exact min_samples_leaf=1 max_depth={depth}");
        let params = TrainParams::parse_options(&options).unwrap();
        let by_weight = Trainer::new(params.clone()).weight("w").fit(weighted).unwrap();
        let by_rows = Trainer::new(params).fit(repeated).unwrap();
        let (w, r) = (&by_weight.trees()[0], &by_rows.trees()[0]);
        assert!(w.nodes == r.nodes, "{file}: weights and repeated rows grow different trees");
        // The same leaves; means of w·y and of repeated y agree to rounding.
        assert!(w.values.iter().zip(&r.values).all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs().max(1.0)), "{file}");
        let unweighted = fit(&batch, &options);
        assert!(by_weight.trees() != unweighted.trees(), "{file}: the weights must matter");
    }
}

#[test]
fn bootstrap_and_sample_fraction_decide_what_each_tree_sees() {
    let train = read("flights_cls_train.parquet", 3_000);
    let same = fit(&train, "n_trees=3 bootstrap=false max_features=all");
    assert!(same.trees().windows(2).all(|w| w[0] == w[1]), "every tree sees every row: one tree, three times");
    let halves = fit(&train, "n_trees=3 bootstrap=false sample_fraction=0.5 max_features=all");
    assert_ne!(halves.trees()[0], halves.trees()[1]);
    let bagged = fit(&train, "n_trees=3 max_features=all");
    assert_ne!(bagged.trees()[0], bagged.trees()[1]);
}

#[test]
fn out_of_bag_error_per_observation() {
    let train = read("flights_cls_train.parquet", 5_000);
    let params = TrainParams::parse_options("n_trees=30 oob_per_observation=true").unwrap();
    let data = training_data(&train, None, &params);
    let Trained { model, out_of_bag: oob } = Trainer::new(params).fit_data(&data).unwrap();
    let oob = oob.unwrap();
    let rows = oob.per_observation.as_ref().unwrap();
    assert_eq!(rows.len(), train.num_rows());
    assert_eq!(rows.iter().filter(|o| o.error.is_some()).count(), oob.rows);
    assert!(oob.rows as f64 > 0.99 * train.num_rows() as f64, "30 bootstraps leave almost every row out once");
    assert!(rows.iter().filter_map(|o| o.error).all(|e| e == 0.0 || e == 1.0));
    let mean = rows.iter().filter_map(|o| o.error).sum::<f64>() / oob.rows as f64;
    assert!((mean - oob.error).abs() < 1e-12);
    assert_eq!(model.oob_error(), Some(oob.error));
    let labels = train.column_by_name("label").unwrap().as_primitive::<Int32Type>();
    for (r, o) in rows.iter().enumerate().take(200) {
        assert_eq!(o.label, f64::from(labels.value(r)), "row {r}: classes 0 and 1 are their own indices");
        if let (Some(p), Some(e)) = (o.prediction, o.error) {
            assert_eq!(e, f64::from(p as i32 != labels.value(r)), "row {r}");
        }
    }

    let train = read("diamonds_reg_train.parquet", 5_000);
    let model = fit(&train, "n_trees=30 oob=true");
    let oob = model.oob_error().unwrap();
    let held_out = rmse(&model, &read("diamonds_reg_test.parquet", 5_000)).powi(2);
    assert!((oob - held_out).abs() < 0.5 * held_out, "oob MSE {oob} vs held-out MSE {held_out}");

    let e = TrainParams::parse_options("oob=true bootstrap=false").unwrap();
    let e = e.check().unwrap_err().to_string();
    assert!(e.contains("'oob'") && e.contains("bootstrap=true"), "{e}");
}

/// Three informative features and three of pure noise: every importance
/// measure ranks each informative feature above each noise feature.
#[test]
fn importance_ranks_informative_features_above_noise() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let n = 3_000;
    let x: Vec<Vec<f64>> = (0..6).map(|_| (0..n).map(|_| rng.random::<f64>()).collect()).collect();
    let score: Vec<f64> = (0..n).map(|i| 3.0 * x[0][i] + 2.0 * x[1][i] + x[2][i] + 0.3 * rng.random::<f64>()).collect();
    let mut columns: Vec<(String, ArrayRef)> = x
        .iter()
        .enumerate()
        .map(|(f, v)| (format!("x{f}"), Arc::new(Float64Array::from(v.clone())) as ArrayRef))
        .collect();
    let regression = {
        let mut c = columns.clone();
        c.push(("label".into(), Arc::new(Float64Array::from(score.clone()))));
        RecordBatch::try_from_iter(c).unwrap()
    };
    columns.push(("label".into(), Arc::new(Int64Array::from_iter_values(score.iter().map(|&s| i64::from(s > 3.15))))));
    let classification = RecordBatch::try_from_iter(columns).unwrap();

    // MDI is Σ p(t)·Δi (`docs/algorithms.md`, "Variable importance"): one tree grown to pure leaves decreases
    // impurity by all of the root's Gini index.
    let model = fit(&classification, &format!("{ONE_TREE} importance=mdi"));
    let labels = classification.column_by_name("label").unwrap().as_primitive::<arrow::datatypes::Int64Type>();
    let p1 = labels.values().iter().sum::<i64>() as f64 / n as f64;
    let root_gini = 1.0 - p1 * p1 - (1.0 - p1) * (1.0 - p1);
    let total: f64 = model.importance().unwrap().iter().sum();
    assert!((total - root_gini).abs() < 1e-12, "{total} vs {root_gini}");

    for (batch, what) in [(&regression, "regression"), (&classification, "classification")] {
        for importance in ["mdi", "mda_raw", "mda_scaled"] {
            let model = fit(batch, &format!("n_trees=30 max_features=2 importance={importance}"));
            let imp = model.importance().unwrap();
            let informative = imp[..3].iter().copied().fold(f64::INFINITY, f64::min);
            let noise = imp[3..].iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert!(informative > noise, "{what} {importance}: {imp:?}");
            assert!(imp[0] > imp[2], "{what} {importance}: x0 matters most: {imp:?}");
        }
    }
}

#[test]
fn unweighted_voting_counts_the_trees_votes() {
    let train = read("flights_cls_train.parquet", 10_000);
    let test = read("flights_cls_test.parquet", 2_000);
    let weighted = fit(&train, "n_trees=10 min_samples_leaf=20");
    let unweighted = fit(&train, "n_trees=10 min_samples_leaf=20 voting=unweighted");
    assert_eq!(weighted.trees(), unweighted.trees(), "voting changes prediction only");
    let (pw, pu) = (weighted.score(&test).unwrap(), unweighted.score(&test).unwrap());
    for p in pu.values().chunks(2) {
        assert!((p[0] + p[1] - 1.0).abs() < 1e-12);
        assert!(((p[0] * 10.0).round() - p[0] * 10.0).abs() < 1e-9, "a share of 10 votes: {p:?}");
    }
    assert!(
        pw.values().chunks(2).any(|p| ((p[0] * 10.0).round() - p[0] * 10.0).abs() > 1e-6),
        "weighted averages leaves"
    );
    let agree = pw.class_index().iter().zip(pu.class_index()).filter(|(a, b)| *a == b).count();
    assert!(agree as f64 > 0.95 * test.num_rows() as f64, "{agree}");
}
