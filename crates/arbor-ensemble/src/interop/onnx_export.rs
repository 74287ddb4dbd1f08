//! Writing arbor models as ONNX models (`ai.onnx.ml` `TreeEnsembleRegressor`
//! and a few `ai.onnx` nodes after it), which onnxruntime serves in every
//! language it has.
//!
//! The graph reads `features`, a float tensor of one column per arbor
//! feature ([`Model::export_columns`]), and writes `prediction` (regression,
//! `[N, 1]`) or `probabilities` (`[N, classes]`) and `label` (the index of
//! the most probable class, the lowest on ties, as arbor picks it). Boosted
//! trees add to the output of their class with the base score as
//! `base_values`, then the loss's link: `Sigmoid` (with the first class's
//! probability as one minus it), `Softmax` or `Exp`. A forest's trees are
//! averaged (`AVERAGE`), each leaf voting its class shares (or its one vote).
//!
//! ONNX has no set test: a categorical split becomes a chain of `BRANCH_EQ`
//! nodes over the smaller side's codes, each sending a match to that side's
//! child and the next code down the chain, the last to the other child; a
//! missing value takes the chain's first node's `missing_value_tracks_true`
//! to the split's missing direction. Thresholds and leaves are 32-bit
//! floats, as onnxruntime reads them: a threshold `t` becomes `t as f32`
//! with `BRANCH_LEQ`, so every value `x <= t` goes left (a value above `t`
//! goes right unless it rounds to the same 32-bit float).

use arbor_quantize::FeatureType;

use super::export::{export_error, ExportFormat};
use super::protobuf::Message;
use crate::model::tree::{has_bit, Node, SplitTest, Tree};
use crate::model::Model;
use crate::predict::arg_max;
use crate::{Loss, Result, Task, Voting};

const FORMAT: ExportFormat = ExportFormat::Onnx;
/// The opsets the graph uses: `ai.onnx` 17 and `ai.onnx.ml` 3, in an IR version 8 model.
const ONNX_OPSET: i64 = 17;
const ML_OPSET: i64 = 3;
const IR_VERSION: i64 = 8;
/// `TensorProto` element types.
const FLOAT: i64 = 1;
const INT64: i64 = 7;

/// A leaf's `(output, weight)` votes, from its values.
type LeafVotes<'a> = dyn Fn(&[f64]) -> Vec<(usize, f64)> + 'a;

/// The node arrays of a `TreeEnsembleRegressor`, tree after tree.
#[derive(Default)]
struct Ensemble {
    tree_ids: Vec<i64>,
    node_ids: Vec<i64>,
    feature_ids: Vec<i64>,
    modes: Vec<&'static str>,
    values: Vec<f32>,
    true_ids: Vec<i64>,
    false_ids: Vec<i64>,
    missing_tracks_true: Vec<i64>,
    target_tree_ids: Vec<i64>,
    target_node_ids: Vec<i64>,
    target_ids: Vec<i64>,
    target_weights: Vec<f32>,
}

impl Ensemble {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        tree: i64,
        node: i64,
        feature: i64,
        mode: &'static str,
        value: f32,
        to: (i64, i64),
        tracks: bool,
    ) {
        self.tree_ids.push(tree);
        self.node_ids.push(node);
        self.feature_ids.push(feature);
        self.modes.push(mode);
        self.values.push(value);
        self.true_ids.push(to.0);
        self.false_ids.push(to.1);
        self.missing_tracks_true.push(i64::from(tracks));
    }

    /// Adds arbor tree `t` as ONNX tree `t`; `targets` gives a leaf's
    /// `(output, weight)` votes from its values.
    fn add_tree(&mut self, model: &Model, t: usize, tree: &Tree, width: usize, targets: &LeafVotes<'_>) -> Result<()> {
        let id = t as i64;
        // Each node's tests: one for a leaf or a threshold, a chain of
        // equality tests for a category set.
        let mut chains: Vec<Option<Chain>> = Vec::with_capacity(tree.nodes.len());
        let mut first = Vec::with_capacity(tree.nodes.len());
        let mut next = 0i64;
        for (i, node) in tree.nodes.iter().enumerate() {
            first.push(next);
            let chain = match node {
                Node::Split { feature, test: SplitTest::InCategories(words), .. } => {
                    Some(Chain::new(model, *feature as usize, words))
                }
                Node::Split { feature, test: SplitTest::ZeroAsMissing { .. }, .. } => {
                    let name = &model.features[*feature as usize].name;
                    return Err(export_error(
                        FORMAT,
                        format!("tree {t}, node {i} on feature '{name}': LightGBM's zero-as-missing test, which ONNX has no form of"),
                    ));
                }
                _ => None,
            };
            next += chain.as_ref().map_or(1, |c| c.codes.len().max(1) as i64);
            chains.push(chain);
        }
        for (i, (node, chain)) in tree.nodes.iter().zip(&chains).enumerate() {
            let at = first[i];
            match (node, chain) {
                (Node::Leaf { value }, _) => {
                    self.push(id, at, 0, "LEAF", 0.0, (0, 0), false);
                    for (output, weight) in targets(&tree.values[*value as usize..*value as usize + width]) {
                        self.target_tree_ids.push(id);
                        self.target_node_ids.push(at);
                        self.target_ids.push(output as i64);
                        self.target_weights.push(weight as f32);
                    }
                }
                (Node::Split { feature, left, right, default_left, .. }, Some(chain)) => {
                    let (left, right) = (first[*left as usize], first[*right as usize]);
                    let (matched, other) = if chain.left { (left, right) } else { (right, left) };
                    // Missing values go to the matched side from the first test, else
                    // down the chain, matching nothing, to the other side.
                    let missing_to_matched = *default_left == chain.left;
                    if chain.codes.is_empty() {
                        // No code to match: every value goes the other way, missing ones too
                        // unless they go to the (empty) matched side.
                        self.push(id, at, i64::from(*feature), "BRANCH_EQ", -1.0, (matched, other), missing_to_matched);
                    }
                    for (k, &code) in chain.codes.iter().enumerate() {
                        let last = k + 1 == chain.codes.len();
                        let no = if last { other } else { at + k as i64 + 1 };
                        let tracks = k == 0 && missing_to_matched;
                        self.push(
                            id,
                            at + k as i64,
                            i64::from(*feature),
                            "BRANCH_EQ",
                            code as f32,
                            (matched, no),
                            tracks,
                        );
                    }
                }
                (Node::Split { feature, test, left, right, default_left }, None) => {
                    let SplitTest::LessOrEqual(threshold) = test else { unreachable!("chains and errors above") };
                    if model.features[*feature as usize].kind == FeatureType::Categorical {
                        let name = &model.features[*feature as usize].name;
                        return Err(export_error(
                            FORMAT,
                            format!("tree {t}, node {i}: a numeric threshold on categorical feature '{name}'"),
                        ));
                    }
                    let to = (first[*left as usize], first[*right as usize]);
                    self.push(id, at, i64::from(*feature), "BRANCH_LEQ", *threshold as f32, to, *default_left);
                }
            }
        }
        Ok(())
    }

    /// The `TreeEnsembleRegressor` node reading `input` into `output`.
    fn node(&self, input: &str, output: &str, outputs: usize, base: &[f32], average: bool) -> Message {
        let mut node = Message::new();
        node.string(1, input).string(2, output).string(3, "trees").string(4, "TreeEnsembleRegressor");
        node.string(7, "ai.onnx.ml");
        let attributes = [
            attribute_string("aggregate_function", if average { "AVERAGE" } else { "SUM" }),
            attribute_floats("base_values", base),
            attribute_int("n_targets", outputs as i64),
            attribute_ints("nodes_falsenodeids", &self.false_ids),
            attribute_ints("nodes_featureids", &self.feature_ids),
            attribute_ints("nodes_missing_value_tracks_true", &self.missing_tracks_true),
            attribute_strings("nodes_modes", &self.modes),
            attribute_ints("nodes_nodeids", &self.node_ids),
            attribute_ints("nodes_treeids", &self.tree_ids),
            attribute_ints("nodes_truenodeids", &self.true_ids),
            attribute_floats("nodes_values", &self.values),
            attribute_string("post_transform", "NONE"),
            attribute_ints("target_ids", &self.target_ids),
            attribute_ints("target_nodeids", &self.target_node_ids),
            attribute_ints("target_treeids", &self.target_tree_ids),
            attribute_floats("target_weights", &self.target_weights),
        ];
        for a in &attributes {
            node.message(5, a);
        }
        node
    }
}

/// A category split as equality tests: the codes of its smaller side.
struct Chain {
    /// The codes tested, ascending.
    codes: Vec<usize>,
    /// Whether the codes are the left side's.
    left: bool,
}

impl Chain {
    fn new(model: &Model, feature: usize, words: &[u64]) -> Chain {
        let bit = |b: usize| has_bit(words, b);
        match model.categories(feature) {
            // A categorical feature: bins count from 1, codes from 0; every
            // known code is on one side, so the smaller side is tested.
            Some(categories) => {
                let left: Vec<usize> = (0..categories.len()).filter(|&c| bit(c + 1)).collect();
                let right: Vec<usize> = (0..categories.len()).filter(|&c| !bit(c + 1)).collect();
                match left.len() <= right.len() {
                    true => Chain { codes: left, left: true },
                    false => Chain { codes: right, left: false },
                }
            }
            // Integer codes of a numeric feature (an imported LightGBM model):
            // the set goes left, every other value right.
            None => Chain { codes: (0..words.len() * 64).filter(|&c| bit(c)).collect(), left: true },
        }
    }
}

fn attribute(name: &str, kind: i64) -> Message {
    let mut a = Message::new();
    a.string(1, name).int(20, kind);
    a
}

fn attribute_int(name: &str, value: i64) -> Message {
    let mut a = attribute(name, 2);
    a.int(3, value);
    a
}

fn attribute_string(name: &str, value: &str) -> Message {
    let mut a = attribute(name, 3);
    a.string(4, value);
    a
}

fn attribute_floats(name: &str, values: &[f32]) -> Message {
    let mut a = attribute(name, 6);
    a.packed_floats(7, values);
    a
}

fn attribute_ints(name: &str, values: &[i64]) -> Message {
    let mut a = attribute(name, 7);
    a.packed_ints(8, values);
    a
}

fn attribute_strings(name: &str, values: &[&str]) -> Message {
    let mut a = attribute(name, 8);
    for v in values {
        a.string(9, v);
    }
    a
}

/// A graph node of the default domain.
fn op(op_type: &str, inputs: &[&str], output: &str, attributes: &[Message]) -> Message {
    let mut node = Message::new();
    for input in inputs {
        node.string(1, input);
    }
    node.string(2, output).string(3, output).string(4, op_type);
    for a in attributes {
        node.message(5, a);
    }
    node
}

/// A graph input or output: a tensor of `element` type and shape `dims`
/// (`None` for the batch's rows, named `N`).
fn value_info(name: &str, element: i64, dims: &[Option<i64>]) -> Message {
    let mut shape = Message::new();
    for d in dims {
        let mut dim = Message::new();
        match d {
            Some(size) => dim.int(1, *size),
            None => dim.string(2, "N"),
        };
        shape.message(1, &dim);
    }
    let mut tensor = Message::new();
    tensor.int(1, element).message(2, &shape);
    let mut r#type = Message::new();
    r#type.message(1, &tensor);
    let mut info = Message::new();
    info.string(1, name).message(2, &r#type);
    info
}

/// The model as an ONNX model file.
pub(crate) fn write(model: &Model) -> Result<Vec<u8>> {
    let width = model.leaf_width();
    let classes = model.class_names().len();
    let mut ensemble = Ensemble::default();
    let (outputs, base, average) = match &model.boosting {
        Some(boosting) => {
            let k = boosting.outputs.max(1);
            for t in 0..model.trees.len() {
                let tree = model.trees.get(t).expect("t < the number of trees");
                ensemble.add_tree(model, t, tree, 1, &|v| vec![(t % k, v[0])])?;
            }
            (k, boosting.base_score.iter().map(|&b| b as f32).collect::<Vec<_>>(), false)
        }
        None => {
            let votes = model.task == Task::Classification && model.voting == Voting::Unweighted;
            for t in 0..model.trees.len() {
                let tree = model.trees.get(t).expect("t < the number of trees");
                let targets = |v: &[f64]| match votes {
                    true => vec![(arg_max(v), 1.0)],
                    false => v.iter().copied().enumerate().collect(),
                };
                ensemble.add_tree(model, t, tree, width, &targets)?;
            }
            (width, vec![0.0; width], true)
        }
    };
    if model.trees.is_empty() {
        // onnxruntime needs a tree: one leaf adding nothing.
        ensemble.push(0, 0, 0, "LEAF", 0.0, (0, 0), false);
        ensemble.target_tree_ids.push(0);
        ensemble.target_node_ids.push(0);
        ensemble.target_ids.push(0);
        ensemble.target_weights.push(0.0);
    }

    let n_features = model.features.len() as i64;
    let mut graph = Message::new();
    graph.string(2, "arbor");
    let raw = match model.task {
        Task::Regression if model.boosting.as_ref().is_some_and(|b| b.loss.is_log_link()) => "raw",
        Task::Regression => "prediction",
        Task::Classification => match model.boosting.as_ref().map(|b| b.loss) {
            None => "probabilities",
            Some(_) => "raw",
        },
    };
    graph.message(1, &ensemble.node("features", raw, outputs, &base, average));
    let axis = |value: i64| attribute_int("axis", value);
    match (model.task, model.boosting.as_ref().map(|b| b.loss)) {
        (Task::Regression, Some(loss)) if loss.is_log_link() => {
            graph.message(1, &op("Exp", &["raw"], "prediction", &[]));
        }
        (Task::Classification, Some(Loss::Logistic)) => {
            graph.message(1, &op("Sigmoid", &["raw"], "second", &[]));
            graph.message(1, &op("Sub", &["one", "second"], "first", &[]));
            graph.message(1, &op("Concat", &["first", "second"], "probabilities", &[axis(1)]));
            let mut one = Message::new();
            one.int(2, FLOAT).packed_floats(4, &[1.0]).string(8, "one");
            graph.message(5, &one);
        }
        (Task::Classification, Some(_)) => {
            graph.message(1, &op("Softmax", &["raw"], "probabilities", &[axis(1)]));
        }
        _ => {}
    }
    graph.message(11, &value_info("features", FLOAT, &[None, Some(n_features)]));
    match model.task {
        Task::Regression => {
            graph.message(12, &value_info("prediction", FLOAT, &[None, Some(1)]));
        }
        Task::Classification => {
            let argmax = [axis(1), attribute_int("keepdims", 0)];
            graph.message(1, &op("ArgMax", &["probabilities"], "label", &argmax));
            graph.message(12, &value_info("label", INT64, &[None]));
            graph.message(12, &value_info("probabilities", FLOAT, &[None, Some(classes as i64)]));
        }
    }

    let mut file = Message::new();
    file.int(1, IR_VERSION).string(2, "arbor").string(3, env!("CARGO_PKG_VERSION"));
    file.message(7, &graph);
    for (domain, version) in [("", ONNX_OPSET), ("ai.onnx.ml", ML_OPSET)] {
        let mut opset = Message::new();
        opset.string(1, domain).int(2, version);
        file.message(8, &opset);
    }
    for (key, value) in metadata(model)? {
        let mut entry = Message::new();
        entry.string(1, key).string(2, &value);
        file.message(14, &entry);
    }
    Ok(file.into_bytes())
}

/// What a server needs to feed and read the graph: the features in order,
/// each categorical feature's categories in code order, the classes in
/// output order (JSON, in the model's metadata).
fn metadata(model: &Model) -> Result<Vec<(&'static str, String)>> {
    let json = |v: serde_json::Value| serde_json::to_string(&v).map_err(|e| export_error(FORMAT, e.to_string()));
    let features: Vec<&str> = model.features.iter().map(|f| f.name.as_str()).collect();
    let categories: serde_json::Map<String, serde_json::Value> = (0..model.features.len())
        .filter_map(|f| Some((model.features[f].name.clone(), serde_json::json!(model.categories(f)?))))
        .collect();
    let mut entries = vec![("features", json(serde_json::json!(features))?)];
    entries.push(("categories", json(serde_json::Value::Object(categories))?));
    if model.task == Task::Classification {
        entries.push(("classes", json(serde_json::json!(model.class_names()))?));
    }
    Ok(entries)
}
