//! With `n_trees=1 bootstrap=false max_features=all split_method=exact`, a
//! forest is one CART tree: the same splits, thresholds and leaves as
//! scikit-learn's `DecisionTreeClassifier` / `DecisionTreeRegressor`.
//!
//! The reference trees and predictions were made by `tests/cart/make_reference.py`
//! (scikit-learn 1.9.1): on all of cancer_cls, on a synthetic three-class
//! table of continuous features (Gini, entropy, values missing at random,
//! sample weights), and on the numeric columns of the first 2,000
//! diamonds_reg rows, and with `criterion="absolute_error"` on a synthetic
//! regression table and on those rows with sample weights; in each setting the CART tree is unique (no gain ties,
//! which scikit-learn breaks at random). This test reads them; it needs no Python.

use std::fs::File;
use std::path::PathBuf;

use arbor_ensemble::{Model, Node, SplitTest, TrainParams, Trainer};
use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cart").join(name)
}

fn read(name: &str) -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path(name)).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

/// scikit-learn's tree as its arrays.
struct Reference {
    left: Vec<i64>,
    right: Vec<i64>,
    feature: Vec<i64>,
    threshold: Vec<f64>,
    /// Where missing values go at each split: the side chosen with them when
    /// the node held some, else the side of more rows (ties right).
    missing_left: Vec<bool>,
    /// Whether training rows missing the split's feature reached the node.
    saw_missing: Vec<bool>,
    /// Each node's training weight.
    weight: Vec<f64>,
    value: Vec<Vec<f64>>,
}

fn reference(name: &str) -> Reference {
    let json: Value = serde_json::from_reader(File::open(path(name)).unwrap()).unwrap();
    let ints = |k: &str| json[k].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect::<Vec<_>>();
    let floats = |v: &Value| v.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>();
    let bools = |k: &str| json[k].as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect::<Vec<_>>();
    Reference {
        left: ints("children_left"),
        right: ints("children_right"),
        feature: ints("feature"),
        threshold: floats(&json["threshold"]),
        missing_left: bools("missing_go_to_left"),
        saw_missing: bools("saw_missing"),
        weight: floats(&json["weighted_n_node_samples"]),
        value: json["value"].as_array().unwrap().iter().map(floats).collect(),
    }
}

/// Walks both trees together; returns the number of nodes compared.
fn assert_same_tree(model: &Model, reference: &Reference) -> usize {
    let tree = &model.trees()[0];
    let width = model.leaf_width();
    let mut stack = vec![(0usize, 0usize)];
    let mut compared = 0;
    while let Some((ours, theirs)) = stack.pop() {
        compared += 1;
        match &tree.nodes[ours] {
            Node::Leaf { value } => {
                assert_eq!(reference.left[theirs], -1, "scikit-learn splits node {theirs}; arbor made a leaf");
                let values = &tree.values[*value as usize..*value as usize + width];
                for (a, b) in values.iter().zip(&reference.value[theirs]) {
                    assert!(
                        (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                        "leaf {theirs}: {values:?} vs {:?}",
                        reference.value[theirs]
                    );
                }
            }
            Node::Split { feature, test: SplitTest::LessOrEqual(t), left, right, default_left } => {
                assert_ne!(reference.left[theirs], -1, "arbor splits where scikit-learn made leaf {theirs}");
                assert_eq!(i64::from(*feature), reference.feature[theirs], "feature of node {theirs}");
                // Learned where the node saw missing values: scikit-learn's side.
                // Else the heavier child's, ties left (scikit-learn: more rows, ties right).
                let side = if reference.saw_missing[theirs] {
                    reference.missing_left[theirs]
                } else {
                    let child = |c: &[i64]| reference.weight[c[theirs] as usize];
                    child(&reference.left) >= child(&reference.right)
                };
                assert_eq!(*default_left, side, "missing values' side at node {theirs}");
                let expected = reference.threshold[theirs];
                assert!(
                    (t - expected).abs() <= 1e-12 * expected.abs().max(1.0),
                    "node {theirs}: threshold {t} vs {expected}"
                );
                stack.push((*left as usize, reference.left[theirs] as usize));
                stack.push((*right as usize, reference.right[theirs] as usize));
            }
            other => panic!("unexpected node {other:?}"),
        }
    }
    assert_eq!(compared, reference.left.len(), "both trees have the same number of nodes");
    compared
}

fn fit_cart(train_file: &str, options: &str) -> Model {
    let batch = read(train_file);
    let params =
        TrainParams::parse_options(&format!("n_trees=1 bootstrap=false max_features=all split_method=exact {options}"))
            .unwrap();
    let trainer = Trainer::new(params);
    match batch.schema().column_with_name("weight") {
        Some(_) => trainer.weight("weight").fit(&batch).unwrap(),
        None => trainer.fit(&batch).unwrap(),
    }
}

fn assert_same_classes(name: &str, options: &str, min_nodes: usize) {
    let model = fit_cart(&format!("{name}_train.parquet"), options);
    let nodes = assert_same_tree(&model, &reference(&format!("{name}_tree.json")));
    assert!(nodes >= min_nodes, "a real tree: {nodes} nodes");

    let test = read(&format!("{name}_test.parquet"));
    let p = model.score(&test).unwrap();
    let ours = arrow::compute::cast(&model.prediction_array(&p).unwrap(), &DataType::Int64).unwrap();
    let theirs = arrow::compute::cast(test.column_by_name("sklearn_prediction").unwrap(), &DataType::Int64).unwrap();
    assert_eq!(ours.as_primitive::<Int64Type>().values(), theirs.as_primitive::<Int64Type>().values());
    for k in 0..p.width() {
        let proba = test.column_by_name(&format!("sklearn_proba_{k}")).unwrap().as_primitive::<Float64Type>();
        for (i, expected) in proba.values().iter().enumerate() {
            assert!((p.values()[i * p.width() + k] - expected).abs() < 1e-9, "row {i}, class {k}");
        }
    }
}

#[test]
fn one_exact_tree_is_scikit_learns_classification_tree() {
    assert_same_classes("cart_cls", "max_depth=4 min_samples_leaf=10", 13);
}

#[test]
fn one_exact_tree_is_scikit_learns_three_class_tree() {
    assert_same_classes("cart_multi", "max_depth=6 min_samples_leaf=20", 87);
}

/// The entropy criterion (`criterion=entropy`) against scikit-learn's
/// `criterion="entropy"` tree on the same three-class table: a different
/// tree from the Gini one, split for split.
#[test]
fn one_exact_tree_is_scikit_learns_entropy_tree() {
    assert_same_classes("cart_entropy", "criterion=entropy max_depth=6 min_samples_leaf=20", 85);
}

/// Values missing at random (15% of x0, 30% of x3) against scikit-learn's
/// own handling of NaN (1.3 and later): each split tries the missing rows on
/// either side, and a node that saw none sends them where more rows went.
#[test]
fn one_exact_tree_is_scikit_learns_tree_with_missing_values() {
    let learned = reference("cart_missing_tree.json").saw_missing.iter().filter(|&&s| s).count();
    assert_eq!(learned, 14, "splits whose missing side was learned from rows");
    assert_same_classes("cart_missing", "max_depth=6 min_samples_leaf=30", 73);
}

/// Sample weights (uniform on [0.5, 3]) against scikit-learn's
/// `sample_weight`: weighted impurities and leaf fractions, `min_samples_leaf`
/// counted in rows.
#[test]
fn one_exact_tree_is_scikit_learns_weighted_tree() {
    assert_same_classes("cart_weighted", "max_depth=6 min_samples_leaf=20", 85);
}

/// Fits a regression tree and checks it node for node and prediction for
/// prediction against scikit-learn's reference `name`.
fn assert_same_values(name: &str, options: &str, min_nodes: usize) {
    let model = fit_cart(&format!("{name}_train.parquet"), &format!("task=regression {options}"));
    let nodes = assert_same_tree(&model, &reference(&format!("{name}_tree.json")));
    assert!(nodes >= min_nodes, "a real tree: {nodes} nodes");

    let test = read(&format!("{name}_test.parquet"));
    let p = model.score(&test).unwrap();
    let theirs = test.column_by_name("sklearn_prediction").unwrap().as_primitive::<Float64Type>();
    assert_eq!(theirs.len(), p.values().len());
    for (i, (a, b)) in p.values().iter().zip(theirs.values()).enumerate() {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "row {i}: {a} vs {b}");
    }
}

#[test]
fn one_exact_tree_is_scikit_learns_regression_tree() {
    assert_same_values("cart_reg", "min_samples_leaf=20", 151);
}

/// `criterion=absolute_error` against scikit-learn's
/// `criterion="absolute_error"`: splits by the children's absolute error
/// around their medians, leaves holding weighted medians (the mean of the
/// two middle responses when the weight splits exactly in half), on
/// continuous features with heavy-tailed noise.
#[test]
fn one_exact_tree_is_scikit_learns_absolute_error_tree() {
    assert_same_values("cart_mae", "criterion=absolute_error min_samples_leaf=20", 233);
}

/// The same with sample weights (uniform on [0.5, 3]) on the diamonds
/// slice: weighted medians and weighted absolute errors.
#[test]
fn one_exact_tree_is_scikit_learns_weighted_absolute_error_tree() {
    assert_same_values("cart_mae_weighted", "criterion=absolute_error min_samples_leaf=20", 155);
}
