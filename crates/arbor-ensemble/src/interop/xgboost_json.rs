//! Importing XGBoost's JSON model files (`Booster.save_model("model.json")`)
//! into arbor models, through the [`ModelBuilder`].
//!
//! Supported: the `gbtree` booster (any `num_parallel_tree`) with objectives
//! `reg:squarederror`, `reg:absoluteerror`, `reg:quantileerror` (one
//! quantile), `reg:pseudohubererror`, `count:poisson`, `reg:gamma`,
//! `reg:tweedie`, `binary:logistic`, `multi:softprob` and `multi:softmax`;
//! numeric splits with their missing-value directions and categorical
//! splits (features of type `c`, read as integer codes); the base score of
//! XGBoost 1.x to 3.x. Anything else (dart, gblinear, multi-target trees,
//! other objectives) is an error naming it.
//!
//! Files arbor exported come back as they left: their `arbor_categories`
//! attribute names each categorical feature's categories (so the model
//! reads the strings again), and a forest classifier (attribute
//! `arbor_forest`, one target per class) becomes a forest again.
//!
//! XGBoost reads features as 32-bit floats and sends `x < condition` left.
//! The importer turns each condition into the arbor threshold `t` for which
//! `x <= t` holds exactly when `(x as f32) < condition`, so an imported model
//! routes every 64-bit input as XGBoost does.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::data::label::Classes;
use crate::model::builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
use crate::model::tree::SplitTest;
use crate::model::Model;
use crate::{ArborError, Loss, Result};

const FORMAT: &str = "xgboost-json";

fn error(message: impl Into<String>) -> ArborError {
    ArborError::Import { format: FORMAT, message: message.into() }
}

#[derive(Deserialize)]
struct File {
    learner: Learner,
    #[serde(default)]
    version: Vec<u32>,
}

#[derive(Deserialize)]
struct Learner {
    #[serde(default)]
    feature_names: Vec<String>,
    #[serde(default)]
    feature_types: Vec<String>,
    gradient_booster: Value,
    learner_model_param: LearnerParam,
    objective: Objective,
    /// Free-form attributes; arbor's exports keep their categories and
    /// forest layout here.
    #[serde(default)]
    attributes: HashMap<String, String>,
}

/// The attribute naming a categorical feature's categories in order of their codes.
pub(crate) const CATEGORIES_ATTRIBUTE: &str = "arbor_categories";
/// The attribute marking an exported forest classifier.
pub(crate) const FOREST_ATTRIBUTE: &str = "arbor_forest";

#[derive(Deserialize)]
struct LearnerParam {
    base_score: String,
    num_class: String,
    num_feature: String,
    #[serde(default)]
    num_target: Option<String>,
}

#[derive(Deserialize)]
struct Objective {
    name: String,
    /// The parameter objects of the objectives that have some
    /// (`quantile_loss_param`, `tweedie_regression_param`, `pseudo_huber_param`, ...).
    #[serde(flatten)]
    params: serde_json::Map<String, Value>,
}

impl Objective {
    /// The number in `group.key` (XGBoost writes numbers as strings, a
    /// quantile list as `"[0.9]"`); `None` when absent.
    fn number(&self, group: &str, key: &str) -> Result<Option<f64>> {
        let Some(value) = self.params.get(group).and_then(|g| g.get(key)) else { return Ok(None) };
        let text = match value {
            Value::String(s) => s.trim().trim_start_matches('[').trim_end_matches(']').to_owned(),
            other => other.to_string(),
        };
        if text.contains(',') {
            return Err(error(format!(
                "{}: {key} {text} names several quantiles (multi-target) and is not supported",
                self.name
            )));
        }
        text.trim()
            .parse::<f64>()
            .map(Some)
            .map_err(|_| error(format!("{}: {key} '{text}' is not a number", self.name)))
    }
}

#[derive(Deserialize)]
struct GbTree {
    trees: Vec<XgbTree>,
    tree_info: Vec<i64>,
}

/// A flag written as `0`/`1` (XGBoost 1.x to 3.x) or `false`/`true`.
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Flag {
    Bool(bool),
    Int(i64),
}

impl Flag {
    fn is_set(self) -> bool {
        match self {
            Flag::Bool(b) => b,
            Flag::Int(i) => i != 0,
        }
    }
}

#[derive(Deserialize)]
struct XgbTree {
    tree_param: TreeParam,
    left_children: Vec<i64>,
    right_children: Vec<i64>,
    split_indices: Vec<i64>,
    split_conditions: Vec<f64>,
    default_left: Vec<Flag>,
    #[serde(default)]
    split_type: Vec<i64>,
    /// Each node's cover (its training rows' hessian sum), when recorded.
    #[serde(default)]
    sum_hessian: Vec<f64>,
    /// The category codes sent right by the categorical splits, node by
    /// node: node `categories_nodes[i]` sends the `categories_sizes[i]`
    /// codes from `categories_segments[i]` right.
    #[serde(default)]
    categories: Vec<i64>,
    #[serde(default)]
    categories_nodes: Vec<i64>,
    #[serde(default)]
    categories_segments: Vec<i64>,
    #[serde(default)]
    categories_sizes: Vec<i64>,
}

#[derive(Deserialize)]
struct TreeParam {
    #[serde(default)]
    size_leaf_vector: Option<String>,
}

fn parse_number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| error(format!("learner_model_param.{key} = '{value}' is not a number")))
}

/// The base score, scalar (`"5E-1"`) or, from XGBoost 3, a list (`"[5E-1]"`).
fn parse_base_score(value: &str) -> Result<Vec<f64>> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    let scores = inner.split(',').map(|v| parse_number::<f64>("base_score", v)).collect::<Result<Vec<f64>>>()?;
    if let Some(s) = scores.iter().find(|s| !s.is_finite()) {
        return Err(error(format!("base_score {s} is not finite")));
    }
    Ok(scores)
}

/// The largest `t` with `x <= t` exactly when `(x as f32) < condition`, for
/// every `f64` value `x`: XGBoost's `<` on 32-bit floats as an arbor threshold.
/// `condition` is finite (the importer rejects other conditions).
pub(crate) fn f32_less_than_threshold(condition: f32) -> f64 {
    debug_assert!(condition.is_finite());
    // The 32-bit float just below `condition` (its bit pattern stepped toward -inf).
    let below = if condition == 0.0 {
        -f32::from_bits(1)
    } else if condition > 0.0 {
        f32::from_bits(condition.to_bits() - 1)
    } else {
        f32::from_bits(condition.to_bits() + 1)
    };
    // Below f32::MIN, values round to -inf as if the next float were -2^128.
    let below = if below.is_infinite() { -(2f64.powi(128)) } else { f64::from(below) };
    // Halfway between them, exact in f64; it rounds (to even) to one of the two.
    let mid = (below + f64::from(condition)) / 2.0;
    if (mid as f32) < condition {
        mid
    } else {
        next_down(mid)
    }
}

/// The `f64` just below `x` (finite, non-NaN `x`).
fn next_down(x: f64) -> f64 {
    if x == 0.0 {
        -f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// The objective's task, classes, loss and base score (as raw margins).
fn objective(
    objective: &Objective,
    num_class: usize,
    base_score: Vec<f64>,
) -> Result<(Option<Classes>, Loss, Vec<f64>)> {
    let name = objective.name.as_str();
    let regression = |loss: Loss| {
        let [base] = base_score[..] else {
            return Err(error(format!("{name} with {} base scores (multi-target) is not supported", base_score.len())));
        };
        if !loss.is_log_link() {
            return Ok((None, loss, vec![base]));
        }
        // A log link's base score is a mean: its margin is the logarithm.
        if base <= 0.0 {
            return Err(error(format!("{name} base_score {base} is not a positive mean")));
        }
        Ok((None, loss, vec![base.ln()]))
    };
    let parameter = |group: &str, key: &str, default: f64, admits: fn(f64) -> bool| -> Result<f64> {
        let value = objective.number(group, key)?.unwrap_or(default);
        if admits(value) {
            Ok(value)
        } else {
            Err(error(format!("{name}: {key} {value} is out of its range")))
        }
    };
    match name {
        "reg:squarederror" | "reg:linear" => regression(Loss::Squared),
        "reg:absoluteerror" => regression(Loss::Absolute),
        "reg:quantileerror" => {
            let alpha = parameter("quantile_loss_param", "quantile_alpha", 0.5, |a| a > 0.0 && a < 1.0)?;
            regression(Loss::Quantile { alpha })
        }
        // XGBoost's pseudo-Huber is the smooth cousin of arbor's Huber: both
        // predict the raw score, which is what an imported model needs.
        "reg:pseudohubererror" => {
            let delta = parameter("pseudo_huber_param", "huber_slope", 1.0, |d| d > 0.0 && d.is_finite())?;
            regression(Loss::Huber { delta })
        }
        "count:poisson" => regression(Loss::Poisson),
        // A ranker's score is its margin; the cut-off is arbor's default.
        "rank:ndcg" | "rank:pairwise" | "rank:map" => regression(Loss::LAMBDARANK),
        "reg:gamma" => regression(Loss::Gamma),
        "reg:tweedie" => {
            let power = parameter("tweedie_regression_param", "tweedie_variance_power", 1.5, |p| p > 1.0 && p < 2.0)?;
            regression(Loss::Tweedie { power })
        }
        "binary:logistic" => {
            let [p] = base_score[..] else {
                return Err(error(format!("binary:logistic needs one base score, found {}", base_score.len())));
            };
            if p <= 0.0 || p >= 1.0 {
                return Err(error(format!("binary:logistic base_score {p} is not a probability in (0, 1)")));
            }
            Ok((Some(Classes::Int(vec![0, 1])), Loss::Logistic, vec![(p / (1.0 - p)).ln()]))
        }
        "multi:softprob" | "multi:softmax" => {
            if num_class < 2 {
                return Err(error(format!("{name} with num_class {num_class}: two classes or more are needed")));
            }
            // Softmax's base score is a margin: XGBoost adds it to every class unchanged.
            let base = match base_score[..] {
                [b] => vec![b; num_class],
                _ if base_score.len() == num_class => base_score,
                _ => {
                    return Err(error(format!("{} base scores for {num_class} classes", base_score.len())));
                }
            };
            Ok((Some(Classes::Int((0..num_class as i64).collect())), Loss::Softmax, base))
        }
        other => Err(error(format!(
            "objective '{other}' is not supported (supported: reg:squarederror, reg:absoluteerror, \
             reg:quantileerror, reg:pseudohubererror, count:poisson, reg:gamma, reg:tweedie, binary:logistic, \
             multi:softprob, multi:softmax)"
        ))),
    }
}

impl Model {
    /// Imports an XGBoost JSON model file's contents. The model's features are
    /// XGBoost's feature names (`f0`, `f1`, ... when it has none) and its
    /// label is `label`, with classes `0..num_class` for classification.
    pub fn from_xgboost_json(json: &[u8]) -> Result<Model> {
        let file: File = serde_json::from_slice(json).map_err(|e| error(format!("not an XGBoost JSON model: {e}")))?;
        let learner = file.learner;
        let booster_name = learner.gradient_booster.get("name").and_then(Value::as_str).unwrap_or("(none)");
        if booster_name != "gbtree" {
            return Err(error(format!(
                "booster '{booster_name}' is not supported: only gbtree models import (dart and gblinear do not)"
            )));
        }
        let model = learner.gradient_booster.get("model").ok_or_else(|| error("gradient_booster has no 'model'"))?;
        let gbtree = GbTree::deserialize(model).map_err(|e| error(format!("gradient_booster.model: {e}")))?;

        let param = &learner.learner_model_param;
        let num_feature: usize = parse_number("num_feature", &param.num_feature)?;
        let num_class: usize = parse_number("num_class", &param.num_class)?;
        let forest_task = learner.attributes.get(FOREST_ATTRIBUTE).map(String::as_str);
        let targets: usize = param.num_target.as_deref().map_or(Ok(1), |t| parse_number("num_target", t))?;
        match forest_task {
            None if targets > 1 => {
                return Err(error(format!("multi-target models ({targets} targets) are not supported")));
            }
            Some("classification") if targets < 2 || learner.objective.name != "reg:squarederror" => {
                return Err(error(format!(
                    "an arbor forest classifier is reg:squarederror with a target per class, not {} with {targets}",
                    learner.objective.name
                )));
            }
            Some("regression") if targets != 1 || learner.objective.name != "reg:squarederror" => {
                return Err(error(format!(
                    "an arbor regression forest is reg:squarederror with one target, not {} with {targets}",
                    learner.objective.name
                )));
            }
            Some(other) if other != "classification" && other != "regression" => {
                return Err(error(format!(
                    "{FOREST_ATTRIBUTE} '{other}' is unknown (known: classification, regression)"
                )));
            }
            _ => {}
        }
        if num_feature == 0 || num_feature > 1 << 20 {
            return Err(error(format!("num_feature {num_feature} is out of range")));
        }
        let (features, bins) =
            features(&learner.feature_names, &learner.feature_types, &learner.attributes, num_feature)?;
        if let Some(task) = forest_task {
            return forest(
                &gbtree,
                features,
                &bins,
                (task == "classification").then_some(targets),
                &version(&file.version),
            );
        }
        let base_score = parse_base_score(&param.base_score)?;
        let (classes, loss, base_score) = objective(&learner.objective, num_class, base_score)?;
        let outputs = base_score.len();

        let version = version(&file.version);
        let builder = match classes {
            Some(classes) => ModelBuilder::classification("label", classes, features)?,
            None => ModelBuilder::regression("label", features)?,
        };
        let mut builder = builder
            .boosting(loss, base_score)
            .param("imported_from", version)
            .param("objective", learner.objective.name.clone());

        if gbtree.trees.len() != gbtree.tree_info.len() {
            return Err(error(format!(
                "{} trees but {} tree_info entries",
                gbtree.trees.len(),
                gbtree.tree_info.len()
            )));
        }
        // arbor adds tree t to output t % outputs: regroup the trees by output,
        // keeping their order, and interleave them round by round.
        let mut by_output: Vec<Vec<&XgbTree>> = vec![Vec::new(); outputs];
        for (t, (tree, &group)) in gbtree.trees.iter().zip(&gbtree.tree_info).enumerate() {
            let slot = usize::try_from(group).ok().filter(|&g| g < outputs).ok_or_else(|| {
                error(format!("tree {t} belongs to output {group}, but the model has {outputs} outputs"))
            })?;
            by_output[slot].push(tree);
        }
        let rounds = by_output[0].len();
        if by_output.iter().any(|trees| trees.len() != rounds) || rounds == 0 {
            return Err(error("every class needs the same number of trees, and at least one"));
        }
        for round in 0..rounds {
            for (output, trees) in by_output.iter().enumerate() {
                let index = round * outputs + output;
                builder.add_tree(tree(trees[round], &bins).map_err(|e| match e {
                    ArborError::Import { message, .. } => error(format!("tree {index}: {message}")),
                    other => other,
                })?)?;
            }
        }
        builder.build()
    }
}

/// `imported_from`: XGBoost and the version that wrote the file.
fn version(version: &[u32]) -> String {
    let version = version.iter().map(u32::to_string).collect::<Vec<_>>().join(".");
    format!("xgboost {version}").trim_end().to_owned()
}

/// An exported forest: one iteration of trees whose leaves are divided by
/// the number of arbor trees. A classifier (`classes` given) has a target
/// per class, tree `i` scoring class `i % classes`, and each run of
/// `classes` trees is one arbor tree.
fn forest(
    gbtree: &GbTree,
    features: Vec<BuilderFeature>,
    bins: &[Option<Vec<usize>>],
    classes: Option<usize>,
    version: &str,
) -> Result<Model> {
    let builder = match classes {
        Some(k) => ModelBuilder::classification("label", Classes::Int((0..k as i64).collect()), features)?,
        None => ModelBuilder::regression("label", features)?,
    };
    let classes = classes.unwrap_or(1);
    let n = gbtree.trees.len();
    if n == 0 || n % classes != 0 || gbtree.tree_info.iter().enumerate().any(|(i, &t)| t != (i % classes) as i64) {
        return Err(error(format!("{n} trees are not whole runs of one tree per class for {classes} classes")));
    }
    let arbor_trees = n / classes;
    let mut builder = builder.param("imported_from", version);
    for (t, run) in gbtree.trees.chunks(classes).enumerate() {
        let per_class = run.iter().map(|tree_of_class| tree(tree_of_class, bins)).collect::<Result<Vec<_>>>()?;
        let merged = TreeBuilder::side_by_side(&per_class, arbor_trees as f64)
            .map_err(|e| error(format!("arbor tree {t}: {e}")))?;
        builder.add_tree(merged)?;
    }
    builder.build()
}

/// Per feature, the arbor bin of each category code, for categorical features.
type CodeBins = Vec<Option<Vec<usize>>>;

/// The model's features: XGBoost's names, or `f0`, `f1`, ... without them;
/// and, per feature, the arbor bin of each code of a categorical feature
/// whose categories the `arbor_categories` attribute names (other features
/// of type `c` stay numeric columns of codes).
fn features(
    names: &[String],
    types: &[String],
    attributes: &HashMap<String, String>,
    num_feature: usize,
) -> Result<(Vec<BuilderFeature>, CodeBins)> {
    if !names.is_empty() && names.len() != num_feature {
        return Err(error(format!("{} feature names for num_feature {num_feature}", names.len())));
    }
    let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("f{i}"));
    if let Some((i, t)) =
        types.iter().enumerate().find(|(_, t)| !matches!(t.as_str(), "float" | "int" | "i" | "q" | "c"))
    {
        return Err(error(format!(
            "feature '{}' has type '{t}', which is not supported (float, int, i, q, c)",
            name(i)
        )));
    }
    let named: HashMap<String, Vec<String>> = match attributes.get(CATEGORIES_ATTRIBUTE) {
        Some(json) => serde_json::from_str(json)
            .map_err(|e| error(format!("attribute {CATEGORIES_ATTRIBUTE} is not an object of string lists: {e}")))?,
        None => HashMap::new(),
    };
    let mut features = Vec::with_capacity(num_feature);
    let mut bins: CodeBins = vec![None; num_feature];
    for (i, code_bins) in bins.iter_mut().enumerate() {
        let categorical = types.get(i).is_some_and(|t| t == "c");
        match named.get(&name(i)).filter(|_| categorical) {
            Some(categories) => {
                let mut sorted = categories.clone();
                sorted.sort();
                sorted.dedup();
                if sorted.len() != categories.len() {
                    return Err(error(format!("feature '{}': {CATEGORIES_ATTRIBUTE} repeats a category", name(i))));
                }
                *code_bins = Some(categories.iter().map(|c| 1 + sorted.binary_search(c).expect("listed")).collect());
                features.push(BuilderFeature::categorical(name(i), sorted));
            }
            None => features.push(BuilderFeature::numeric(name(i))),
        }
    }
    Ok((features, bins))
}

/// The codes node `node` sends right, from the tree's category lists.
fn right_codes(t: &XgbTree, node: usize) -> Result<&[i64]> {
    let at = t
        .categories_nodes
        .iter()
        .position(|&n| n == node as i64)
        .ok_or_else(|| error(format!("node {node} is a categorical split with no categories")))?;
    let (Some(&start), Some(&size)) = (t.categories_segments.get(at), t.categories_sizes.get(at)) else {
        return Err(error(format!("node {node}: categories_segments and categories_sizes are too short")));
    };
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(size).ok())
        .and_then(|(start, size)| t.categories.get(start..start.checked_add(size)?))
        .ok_or_else(|| error(format!("node {node}: categories {start}+{size} are past the tree's list")))
}

/// A category set as arbor bits: each code's bin when `bins` maps them,
/// else the code itself; a code that is negative or past the list is an error.
fn category_bits(codes: &[i64], bins: Option<&Vec<usize>>, node: usize) -> Result<Vec<u64>> {
    let mut words: Vec<u64> = Vec::new();
    for &code in codes {
        let bit = usize::try_from(code).ok().and_then(|c| match bins {
            Some(bins) => bins.get(c).copied(),
            None => (c < 1 << 24).then_some(c),
        });
        let bit = bit.ok_or_else(|| error(format!("node {node}: category code {code} is out of range")))?;
        if words.len() <= bit / 64 {
            words.resize(bit / 64 + 1, 0);
        }
        words[bit / 64] |= 1 << (bit % 64);
    }
    Ok(words)
}

/// One XGBoost tree, walked from its root (node 0); `bins` maps the codes
/// of named categorical features to their bins.
///
/// XGBoost sends a categorical split's listed codes right, everything else
/// (other codes, negative ones) left and missing values by `default_left`.
/// Arbor's set goes left and other codes right: the listed codes become
/// arbor's set with the children swapped, and the missing direction too.
fn tree(t: &XgbTree, bins: &[Option<Vec<usize>>]) -> Result<TreeBuilder> {
    let num_feature = bins.len();
    let n = t.left_children.len();
    if let Some(size) = &t.tree_param.size_leaf_vector {
        if !matches!(size.trim(), "0" | "1") {
            return Err(error(format!("size_leaf_vector {size}: multi-target trees are not supported")));
        }
    }
    let lengths = [t.right_children.len(), t.split_indices.len(), t.split_conditions.len(), t.default_left.len()];
    if n == 0 || lengths.iter().any(|&l| l != n) || (!t.split_type.is_empty() && t.split_type.len() != n) {
        return Err(error(format!("node arrays of different lengths ({n}, {lengths:?}) or no nodes")));
    }
    let mut builder = TreeBuilder::new();
    let mut seen = vec![false; n];
    let mut stack: Vec<(usize, Option<(NodeId, Side)>)> = vec![(0, None)];
    // Covers when every node has one, as every file since XGBoost 1.0 does.
    let cover = |builder: &mut TreeBuilder, id: NodeId, node: usize| match t.sum_hessian.len() == n {
        true => builder.cover(id, t.sum_hessian[node]).map_err(|_| error(format!("node {node}'s sum_hessian"))),
        false => Ok(()),
    };
    while let Some((node, parent)) = stack.pop() {
        if std::mem::replace(&mut seen[node], true) {
            return Err(error(format!("node {node} is reached twice")));
        }
        let value = t.split_conditions[node];
        let (left, right) = (t.left_children[node], t.right_children[node]);
        if left == -1 {
            let id = builder
                .add_leaf(parent, &[f64::from(value as f32)])
                .map_err(|_| error(format!("leaf {node} is {value}")))?;
            cover(&mut builder, id, node)?;
            continue;
        }
        let child = |c: i64| usize::try_from(c).ok().filter(|&c| c < n && c != node);
        let (Some(l), Some(r)) = (child(left), child(right)) else {
            return Err(error(format!("node {node} has children {left} and {right}, not nodes of the tree")));
        };
        let feature = usize::try_from(t.split_indices[node])
            .ok()
            .filter(|&f| f < num_feature)
            .ok_or_else(|| error(format!("node {node} splits on feature {}", t.split_indices[node])))?;
        let default_left = t.default_left[node].is_set();
        let (test, default_left, l, r) = if t.split_type.get(node).is_some_and(|&s| s != 0) {
            let bits = category_bits(right_codes(t, node)?, bins[feature].as_ref(), node)?;
            (SplitTest::InCategories(bits), !default_left, r, l)
        } else {
            let condition = value as f32;
            if !condition.is_finite() {
                return Err(error(format!("node {node} has split condition {value}")));
            }
            (SplitTest::LessOrEqual(f32_less_than_threshold(condition)), default_left, l, r)
        };
        let id = builder.add_split(parent, feature, test, default_left)?;
        cover(&mut builder, id, node)?;
        stack.push((r, Some((id, Side::Right))));
        stack.push((l, Some((id, Side::Left))));
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_route_like_32_bit_less_than() {
        let conditions = [5.55f32, 1.0, 0.0, -0.0, -3.25, 1e-40, -1e-40, f32::MAX, f32::MIN, 0.1, 2412.5];
        for &c in &conditions {
            let t = f32_less_than_threshold(c);
            assert!((t as f32) < c, "{c}: the threshold itself goes left");
            assert!((next_up(t) as f32) >= c, "{c}: the next value goes right");
            for x in [t, next_up(t), f64::from(c), next_down(f64::from(c)), f64::from(c) * 0.999_999_9] {
                assert_eq!(x <= t, (x as f32) < c, "condition {c}, x {x}");
            }
        }
    }

    fn next_up(x: f64) -> f64 {
        -next_down(-x)
    }

    /// The layout of XGBoost 1.x and 2.x: a scalar base score in probability
    /// space, boolean default directions, no feature names, no split types.
    #[test]
    fn older_files_with_a_scalar_base_score_import() {
        let json = r#"{"version": [1, 7, 6], "learner": {
            "feature_names": [], "feature_types": [],
            "objective": {"name": "binary:logistic"},
            "learner_model_param": {"base_score": "2E-1", "num_class": "0", "num_feature": "2"},
            "gradient_booster": {"name": "gbtree", "model": {"tree_info": [0], "trees": [{
                "tree_param": {"num_nodes": "3", "size_leaf_vector": "0"},
                "left_children": [1, -1, -1], "right_children": [2, -1, -1],
                "split_indices": [1, 0, 0], "split_conditions": [0.5, -1.5, 2.0],
                "default_left": [true, false, false]}]}}}}"#;
        let model = Model::from_xgboost_json(json.as_bytes()).unwrap();
        assert_eq!(model.features[1].name, "f1");
        let p = model.score_columns(&[vec![0.0; 3], vec![0.25, 0.5, f64::NAN]], 3).unwrap();
        let margin = |leaf: f64| (0.2f64 / 0.8).ln() + leaf;
        let expected = [margin(-1.5), margin(2.0), margin(-1.5)].map(|m| 1.0 / (1.0 + (-m).exp()));
        for (row, e) in expected.iter().enumerate() {
            assert!((p.values[row * 2 + 1] - e).abs() < 1e-12, "row {row}: {:?}", p.values);
        }
    }

    #[test]
    fn unsupported_constructs_are_named() {
        let e = |json: &str| Model::from_xgboost_json(json.as_bytes()).unwrap_err().to_string();
        let learner = |booster: &str, objective: &str| {
            format!(
                r#"{{"learner": {{"gradient_booster": {booster}, "objective": {{"name": "{objective}"}},
                "learner_model_param": {{"base_score": "5E-1", "num_class": "0", "num_feature": "1"}}}}}}"#
            )
        };
        assert!(e("{").contains("not an XGBoost JSON model"));
        let gblinear = e(&learner(r#"{"name": "gblinear", "model": {}}"#, "reg:squarederror"));
        assert!(gblinear.contains("booster 'gblinear' is not supported"), "{gblinear}");
        let empty = r#"{"name": "gbtree", "model": {"trees": [], "tree_info": []}}"#;
        let survival = e(&learner(empty, "survival:cox"));
        assert!(survival.contains("objective 'survival:cox' is not supported"), "{survival}");
        let no_trees = e(&learner(empty, "reg:squarederror"));
        assert!(no_trees.contains("at least one"), "{no_trees}");
    }
}
