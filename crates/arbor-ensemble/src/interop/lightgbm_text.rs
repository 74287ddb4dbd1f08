//! Importing LightGBM's text model files (`Booster.save_model("model.txt")`)
//! into arbor models, through the [`ModelBuilder`].
//!
//! Supported: gbdt, dart, goss and rf models (`average_output`) with
//! objectives `regression` (and the other identity-output regressions:
//! `regression_l1`, `huber`, `fair`, `quantile`, `mape`), the log-link
//! `poisson`, `gamma` and `tweedie` (predictions `exp` of the raw score),
//! `binary` (any `sigmoid`) and `multiclass`; numeric splits with every missing-value type
//! of `decision_type` (none, zero, NaN) and categorical splits on
//! integer-coded features. Anything else (linear trees, other objectives) is
//! an error naming it.
//!
//! LightGBM compares 64-bit values with `x <= threshold`, as arbor does, so
//! thresholds import unchanged. Categorical features trained from integer
//! codes stay numeric columns of codes: a code goes left when its bit is set
//! in the split's set, negative codes and missing values go right. Features
//! trained from pandas `category` columns (the file's `pandas_categorical`)
//! become arbor categorical features over the same strings.
//!
//! A regression model that averages its trees (`average_output`, LightGBM's
//! `rf`) is an arbor regression forest. A file with no objective whose
//! `num_class` outputs are averaged
//! (`average_output`) is an exported arbor forest classifier: each run of
//! `num_class` trees, one per class with the same splits, becomes one
//! forest tree of class shares again.

use std::collections::HashMap;

use crate::data::label::Classes;
use crate::model::builder::{BuilderFeature, ModelBuilder, NodeId, Side, TreeBuilder};
use crate::model::tree::SplitTest;
use crate::model::Model;
use crate::{ArborError, Loss, Result};

const FORMAT: &str = "lightgbm-text";
/// Most features or leaves accepted, so a corrupt count cannot exhaust memory.
const MAX_COUNT: usize = 1 << 24;

fn error(message: impl Into<String>) -> ArborError {
    ArborError::Import { format: FORMAT, message: message.into() }
}

/// The `key=value` lines of one section of the file (header or a tree).
struct Section<'a> {
    name: String,
    values: HashMap<&'a str, &'a str>,
}

impl<'a> Section<'a> {
    fn get(&self, key: &str) -> Result<&'a str> {
        self.values.get(key).copied().ok_or_else(|| error(format!("{}: '{key}' is missing", self.name)))
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> Result<T> {
        let value = self.get(key)?;
        value.trim().parse().map_err(|_| error(format!("{}: {key}={value} is not a number", self.name)))
    }

    /// A space-separated list of `len` numbers.
    fn list<T: std::str::FromStr>(&self, key: &str, len: usize) -> Result<Vec<T>> {
        let value = self.get(key)?;
        let items = value
            .split_whitespace()
            .map(|v| v.parse().map_err(|_| error(format!("{}: '{v}' in {key} is not a number", self.name))))
            .collect::<Result<Vec<T>>>()?;
        if items.len() != len {
            return Err(error(format!("{}: {key} has {} values, expected {len}", self.name, items.len())));
        }
        Ok(items)
    }
}

/// The parts of a model file: header, trees, and the lines after the trees
/// (feature importances, parameters, `pandas_categorical`).
struct Parts<'a> {
    header: Section<'a>,
    trees: Vec<Section<'a>>,
    tail: Vec<&'a str>,
}

/// Splits the file into its header, tree sections and tail.
fn sections(text: &str) -> Result<Parts<'_>> {
    let mut lines = text.lines().map(str::trim);
    if lines.next() != Some("tree") {
        return Err(error("not a LightGBM text model: the first line is not 'tree'"));
    }
    let mut header = Section { name: "header".into(), values: HashMap::new() };
    let mut trees: Vec<Section<'_>> = Vec::new();
    while let Some(line) = lines.next() {
        if line == "end of trees" {
            return Ok(Parts { header, trees, tail: lines.collect() });
        }
        if let Some(index) = line.strip_prefix("Tree=") {
            trees.push(Section { name: format!("Tree={index}"), values: HashMap::new() });
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        if key.is_empty() {
            continue;
        }
        match trees.last_mut() {
            Some(tree) => tree.values.insert(key, value),
            None => header.values.insert(key, value),
        };
    }
    Err(error("truncated: no 'end of trees' line"))
}

/// Features trained from pandas `category` columns: LightGBM saw each value
/// as its code, the index in the column's category list, which the file keeps
/// as `pandas_categorical`. Such a feature imports as an arbor categorical
/// feature over the same strings, so it predicts from string columns.
struct PandasCategories {
    /// Per feature index: `None`, or the arbor bin of each LightGBM code.
    bins: Vec<Option<Vec<usize>>>,
    /// Per feature index: the sorted categories of a mapped feature.
    categories: Vec<Option<Vec<String>>>,
}

fn pandas_categories(tail: &[&str], n_features: usize) -> Result<PandasCategories> {
    let mut mapped = PandasCategories { bins: vec![None; n_features], categories: vec![None; n_features] };
    let Some(json) = tail.iter().find_map(|l| l.strip_prefix("pandas_categorical:")) else {
        return Ok(mapped);
    };
    let lists: Option<Vec<Vec<serde_json::Value>>> =
        serde_json::from_str(json).map_err(|e| error(format!("pandas_categorical is not a list of lists: {e}")))?;
    let Some(lists) = lists else {
        return Ok(mapped);
    };
    // The pandas category columns, in column order, are the categorical features.
    let indices: Vec<usize> = tail
        .iter()
        .find_map(|l| l.strip_prefix("[categorical_feature:").and_then(|v| v.strip_suffix(']')))
        .unwrap_or("")
        .split(',')
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim().parse().map_err(|_| error(format!("categorical_feature '{v}' is not a feature index"))))
        .collect::<Result<_>>()?;
    if indices.len() != lists.len() || indices.windows(2).any(|w| w[0] >= w[1]) {
        return Err(error(format!(
            "pandas_categorical has {} category lists for the categorical features [{}]; \
             models mixing pandas categories with other categorical columns are not supported",
            lists.len(),
            indices.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
        )));
    }
    for (&feature, list) in indices.iter().zip(&lists) {
        if feature >= n_features {
            return Err(error(format!("categorical feature {feature} is past the {n_features} features")));
        }
        let names =
            list.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<String>>>().ok_or_else(|| {
                error(format!("feature {feature}: pandas categories that are not strings are not supported"))
            })?;
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != names.len() {
            return Err(error(format!("feature {feature}: pandas categories repeat a value")));
        }
        mapped.bins[feature] = Some(
            names.iter().map(|n| 1 + sorted.binary_search(n).expect("every name is in the sorted list")).collect(),
        );
        mapped.categories[feature] = Some(sorted);
    }
    Ok(mapped)
}

/// How raw scores become predictions, from the `objective` line.
struct Objective {
    classes: Option<Classes>,
    loss: Loss,
    /// Leaf values are multiplied by this (binary's `sigmoid` parameter).
    scale: f64,
}

/// The objective of the header's `objective` line; `tail` is the file's
/// end, whose `parameters:` block (`[alpha: 0.9]`) holds the objective's
/// parameters where the line does not.
fn objective(line: &str, num_class: usize, tail: &[&str]) -> Result<Objective> {
    let mut tokens = line.split_whitespace();
    let name = tokens.next().unwrap_or("");
    let mut options: HashMap<&str, &str> =
        tail.iter().filter_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']')?.split_once(": ")).collect();
    options.extend(tokens.filter_map(|t| t.split_once(':')));
    let regression = |loss: Loss| Ok(Objective { classes: None, loss, scale: 1.0 });
    let parameter = |key: &str, default: f64, admits: fn(f64) -> bool| -> Result<f64> {
        let Some(text) = options.get(key) else { return Ok(default) };
        text.parse::<f64>()
            .ok()
            .filter(|&v| admits(v))
            .ok_or_else(|| error(format!("objective '{line}': {key} {text} is out of its range")))
    };
    if line.split_whitespace().any(|t| t == "sqrt") {
        return Err(error(format!("objective '{line}': reg_sqrt models are not supported")));
    }
    match name {
        "regression" | "regression_l2" | "fair" | "mape" => regression(Loss::Squared),
        "regression_l1" => regression(Loss::Absolute),
        // LightGBM names both the quantile and Huber's delta `alpha`.
        "quantile" => regression(Loss::Quantile { alpha: parameter("alpha", 0.9, |a| a > 0.0 && a < 1.0)? }),
        "huber" => regression(Loss::Huber { delta: parameter("alpha", 0.9, |d| d > 0.0 && d.is_finite())? }),
        // The log links: LightGBM's raw scores are log means, as arbor's are.
        "poisson" => regression(Loss::Poisson),
        "gamma" => regression(Loss::Gamma),
        // A ranker's score is its raw sum; the cut-off is arbor's default.
        "lambdarank" | "rank_xendcg" => regression(Loss::LAMBDARANK),
        "tweedie" => {
            regression(Loss::Tweedie { power: parameter("tweedie_variance_power", 1.5, |p| p > 1.0 && p < 2.0)? })
        }
        "binary" => {
            let sigmoid = options.get("sigmoid").map_or(Ok(1.0), |s| {
                s.parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| error(format!("objective '{line}': sigmoid {s} is not a positive number")))
            })?;
            Ok(Objective { classes: Some(Classes::Int(vec![0, 1])), loss: Loss::Logistic, scale: sigmoid })
        }
        "multiclass" => {
            if num_class < 2 {
                return Err(error(format!("objective '{line}' with num_class {num_class}")));
            }
            let classes = Classes::Int((0..num_class as i64).collect());
            Ok(Objective { classes: Some(classes), loss: Loss::Softmax, scale: 1.0 })
        }
        "" => Err(error("the header has no objective (custom objectives are not supported)")),
        other => Err(error(format!(
            "objective '{other}' is not supported (supported: regression, regression_l1, huber, fair, quantile, \
             mape, poisson, gamma, tweedie, binary, multiclass)"
        ))),
    }
}

impl Model {
    /// Imports a LightGBM text model file's contents. The model's features
    /// are LightGBM's feature names; its label is `label`, with classes
    /// `0..num_class` for classification. Categorical features are numeric
    /// columns of integer codes, as LightGBM takes them.
    pub fn from_lightgbm_text(text: &str) -> Result<Model> {
        let Parts { header, trees, tail } = sections(text)?;
        let num_class: usize = header.number("num_class")?;
        let per_iteration: usize = header.number("num_tree_per_iteration")?;
        let max_feature_idx: usize = header.number("max_feature_idx")?;
        if max_feature_idx >= MAX_COUNT || num_class >= MAX_COUNT {
            return Err(error(format!(
                "header: max_feature_idx {max_feature_idx} or num_class {num_class} is too large"
            )));
        }
        let n_features = max_feature_idx + 1;
        let names: Vec<&str> = header.get("feature_names")?.split_whitespace().collect();
        if names.len() != n_features {
            return Err(error(format!("header: {} feature names for max_feature_idx {max_feature_idx}", names.len())));
        }
        let pandas = pandas_categories(&tail, n_features)?;
        let features: Vec<BuilderFeature> = names
            .iter()
            .zip(&pandas.categories)
            .map(|(n, categories)| match categories {
                Some(c) => BuilderFeature::categorical(*n, c.clone()),
                None => BuilderFeature::numeric(*n),
            })
            .collect();
        let version = header.values.get("version").copied().unwrap_or("unknown");
        let averaged = header.values.contains_key("average_output");
        // No objective over averaged class outputs: an exported arbor forest classifier.
        if !header.values.contains_key("objective") && averaged && num_class >= 2 {
            if per_iteration != num_class || trees.is_empty() || trees.len() % num_class != 0 {
                return Err(error(format!(
                    "a forest classifier of {num_class} classes needs whole runs of {num_class} trees, \
                     not {} trees of {per_iteration} per iteration",
                    trees.len()
                )));
            }
            let classes = Classes::Int((0..num_class as i64).collect());
            let mut builder = ModelBuilder::classification("label", classes, features)?
                .param("imported_from", format!("lightgbm text {version}"));
            for (t, run) in trees.chunks(num_class).enumerate() {
                let per_class =
                    run.iter().map(|section| tree(section, &pandas.bins, 1.0)).collect::<Result<Vec<_>>>()?;
                let merged =
                    TreeBuilder::side_by_side(&per_class, 1.0).map_err(|e| error(format!("iteration {t}: {e}")))?;
                builder.add_tree(merged)?;
            }
            return builder.build();
        }
        let objective = objective(header.get("objective")?, num_class, &tail)?;
        let outputs = if objective.loss == Loss::Softmax { num_class } else { 1 };
        if per_iteration != outputs {
            return Err(error(format!(
                "header: num_tree_per_iteration {per_iteration} does not fit {outputs} outputs \
                 (multiclassova and multi-model files are not supported)"
            )));
        }
        if trees.is_empty() || trees.len() % outputs != 0 {
            return Err(error(format!("{} trees do not make whole iterations of {outputs}", trees.len())));
        }
        // Random forests (`boosting=rf`) average their iterations: a
        // regression forest's mean is an arbor forest's, others average
        // raw scores before the link.
        let forest = averaged && objective.classes.is_none() && objective.loss == Loss::Squared;
        let mut scale = objective.scale;
        if averaged && !forest {
            scale /= (trees.len() / outputs) as f64;
        }

        let builder = match objective.classes {
            Some(classes) => ModelBuilder::classification("label", classes, features)?,
            None => ModelBuilder::regression("label", features)?,
        };
        let builder = match forest {
            true => builder,
            false => builder.boosting(objective.loss, vec![0.0; outputs]),
        };
        let mut builder = builder
            .param("imported_from", format!("lightgbm text {version}"))
            .param("objective", header.get("objective")?.to_owned());
        for section in &trees {
            builder.add_tree(tree(section, &pandas.bins, scale)?)?;
        }
        builder.build()
    }
}

/// One tree section. Node `i >= 0` is internal; child `c < 0` is leaf `!c`.
fn tree(section: &Section<'_>, pandas_bins: &[Option<Vec<usize>>], scale: f64) -> Result<TreeBuilder> {
    let n_features = pandas_bins.len();
    let named = |message: String| error(format!("{}: {message}", section.name));
    if section.values.get("is_linear").is_some_and(|v| v.trim() != "0") {
        return Err(named("linear trees (linear_tree=true) are not supported".into()));
    }
    let num_leaves: usize = section.number("num_leaves")?;
    if num_leaves == 0 || num_leaves > MAX_COUNT {
        return Err(named(format!("num_leaves {num_leaves} is out of range")));
    }
    let leaf_values: Vec<f64> = section.list("leaf_value", num_leaves)?;
    // Node covers from the data counts, as LightGBM's own contributions
    // weigh branches, when the file has them.
    let counts = |key: &str, len: usize| section.values.contains_key(key).then(|| section.list::<f64>(key, len));
    let leaf_count = counts("leaf_count", num_leaves).transpose()?;
    let mut builder = TreeBuilder::new();
    if num_leaves == 1 {
        let id = builder.add_leaf(None, &[leaf_values[0] * scale]).map_err(|e| named(e.to_string()))?;
        // A lone leaf's cover weighs nothing: any value serves.
        builder.cover(id, leaf_count.as_ref().map_or(0.0, |c| c[0])).map_err(|e| named(e.to_string()))?;
        return Ok(builder);
    }
    let n = num_leaves - 1;
    let split_feature: Vec<i64> = section.list("split_feature", n)?;
    let threshold: Vec<f64> = section.list("threshold", n)?;
    let decision_type: Vec<u8> = section.list("decision_type", n)?;
    let left_child: Vec<i64> = section.list("left_child", n)?;
    let right_child: Vec<i64> = section.list("right_child", n)?;
    let internal_count = counts("internal_count", n).transpose()?;
    let (leaf_count, internal_count) = match (leaf_count, internal_count) {
        (Some(l), Some(i)) => (Some(l), Some(i)),
        _ => (None, None),
    };
    let num_cat: usize = section.values.get("num_cat").map_or(Ok(0), |_| section.number("num_cat"))?;
    let (cat_boundaries, cat_threshold): (Vec<usize>, Vec<u32>) = if num_cat > 0 {
        if num_cat > n {
            return Err(named(format!("num_cat {num_cat} exceeds the {n} splits")));
        }
        let boundaries: Vec<usize> = section.list("cat_boundaries", num_cat + 1)?;
        // the category sets end where the last boundary says
        let threshold = section.list("cat_threshold", boundaries[num_cat])?;
        (boundaries, threshold)
    } else {
        (Vec::new(), Vec::new())
    };

    enum Child {
        Split(usize),
        Leaf(usize),
    }
    let child = |c: i64, node: usize| -> Result<Child> {
        if c >= 0 {
            usize::try_from(c).ok().filter(|&c| c < n && c != node).map(Child::Split)
        } else {
            usize::try_from(!c).ok().filter(|&l| l < num_leaves).map(Child::Leaf)
        }
        .ok_or_else(|| named(format!("node {node} has a child {c} outside the tree")))
    };

    let mut seen_nodes = vec![false; n];
    let mut seen_leaves = vec![false; num_leaves];
    let mut stack: Vec<(Child, Option<(NodeId, Side)>)> = vec![(Child::Split(0), None)];
    while let Some((next, parent)) = stack.pop() {
        let node = match next {
            Child::Leaf(leaf) => {
                if std::mem::replace(&mut seen_leaves[leaf], true) {
                    return Err(named(format!("leaf {leaf} is reached twice")));
                }
                let id = builder.add_leaf(parent, &[leaf_values[leaf] * scale]).map_err(|e| named(e.to_string()))?;
                if let Some(count) = &leaf_count {
                    builder.cover(id, count[leaf]).map_err(|e| named(e.to_string()))?;
                }
                continue;
            }
            Child::Split(node) => node,
        };
        if std::mem::replace(&mut seen_nodes[node], true) {
            return Err(named(format!("node {node} is reached twice")));
        }
        let feature = usize::try_from(split_feature[node])
            .ok()
            .filter(|&f| f < n_features)
            .ok_or_else(|| named(format!("node {node} splits on feature {}", split_feature[node])))?;
        let (mut test, default_left) = split(decision_type[node], threshold[node], &cat_boundaries, &cat_threshold)
            .map_err(|message| named(format!("node {node}: {message}")))?;
        if let (SplitTest::InCategories(codes), Some(bins)) = (&test, &pandas_bins[feature]) {
            test = SplitTest::InCategories(codes_to_bins(codes, bins));
        }
        let id = builder.add_split(parent, feature, test, default_left).map_err(|e| named(e.to_string()))?;
        if let Some(count) = &internal_count {
            builder.cover(id, count[node]).map_err(|e| named(e.to_string()))?;
        }
        stack.push((child(right_child[node], node)?, Some((id, Side::Right))));
        stack.push((child(left_child[node], node)?, Some((id, Side::Left))));
    }
    Ok(builder)
}

/// A set of pandas category codes as a set of arbor category bins (codes
/// past the category list never occur and are dropped).
fn codes_to_bins(codes: &[u64], bins: &[usize]) -> Vec<u64> {
    let mut words = vec![0u64; bins.iter().max().map_or(0, |&b| b / 64 + 1)];
    for (code, &bin) in bins.iter().enumerate() {
        if crate::model::tree::has_bit(codes, code) {
            words[bin / 64] |= 1 << (bin % 64);
        }
    }
    words
}

/// The arbor test and missing-value direction of a LightGBM split.
fn split(
    decision_type: u8,
    threshold: f64,
    cat_boundaries: &[usize],
    cat_threshold: &[u32],
) -> std::result::Result<(SplitTest, bool), String> {
    const CATEGORICAL: u8 = 1;
    const DEFAULT_LEFT: u8 = 2;
    if threshold.is_nan() {
        return Err("the threshold is NaN".into());
    }
    let default_left = decision_type & DEFAULT_LEFT != 0;
    if decision_type & CATEGORICAL != 0 {
        // `threshold` indexes the node's category set; missing values and negative codes go right.
        if threshold < 0.0 || threshold.fract() != 0.0 {
            return Err(format!("category set {threshold} is not an index"));
        }
        let set = threshold as usize;
        let (Some(&start), Some(&end)) = (cat_boundaries.get(set), cat_boundaries.get(set.saturating_add(1))) else {
            return Err(format!("category set {threshold} is not in cat_boundaries"));
        };
        let Some(words32) = cat_threshold.get(start..end) else {
            return Err(format!("category set {set} spans {start}..{end}, past cat_threshold"));
        };
        let words = words32
            .chunks(2)
            .map(|pair| u64::from(pair[0]) | pair.get(1).map_or(0, |&hi| u64::from(hi) << 32))
            .collect();
        return Ok((SplitTest::InCategories(words), false));
    }
    match (decision_type >> 2) & 3 {
        // No missing values in training: LightGBM reads NaN as 0.
        0 => Ok((SplitTest::LessOrEqual(threshold), 0.0 <= threshold)),
        // Zero as missing: zeros and NaN take the default direction.
        1 => Ok((SplitTest::ZeroAsMissing { threshold, zero_left: default_left }, default_left)),
        2 => Ok((SplitTest::LessOrEqual(threshold), default_left)),
        other => Err(format!("decision_type {decision_type} has an unknown missing type {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_types_map_to_arbor_tests() {
        assert_eq!(split(0, -1.0, &[], &[]).unwrap(), (SplitTest::LessOrEqual(-1.0), false));
        assert_eq!(split(2, 1.0, &[], &[]).unwrap(), (SplitTest::LessOrEqual(1.0), true), "NaN reads as 0 <= 1");
        assert_eq!(split(10, 1.0, &[], &[]).unwrap(), (SplitTest::LessOrEqual(1.0), true));
        assert_eq!(split(8, 1.0, &[], &[]).unwrap(), (SplitTest::LessOrEqual(1.0), false));
        let zero = split(6, -2.0, &[], &[]).unwrap();
        assert_eq!(zero, (SplitTest::ZeroAsMissing { threshold: -2.0, zero_left: true }, true));
        assert!(split(12, 1.0, &[], &[]).unwrap_err().contains("unknown missing type 3"));
        // categories 1 and 33 of set 1, which spans words 1..3
        let (test, default_left) = split(9, 1.0, &[0, 1, 3], &[7, 2, 2]).unwrap();
        assert_eq!(test, SplitTest::InCategories(vec![2 | 2 << 32]));
        assert!(!default_left);
        for (x, left) in [(1.0, true), (1.9, true), (33.0, true), (0.0, false), (-1.0, false), (64.0, false)] {
            assert_eq!(test.goes_left(x), left, "{x}");
        }
        assert!(split(9, 2.0, &[0, 1, 3], &[7, 2, 2]).unwrap_err().contains("not in cat_boundaries"));
    }

    #[test]
    fn unsupported_constructs_are_named() {
        let header = |objective: &str| {
            format!(
                "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=0\n\
                 objective={objective}\nfeature_names=x\n\nTree=0\nnum_leaves=1\nleaf_value=0.5\n\nend of trees\n"
            )
        };
        let e = |text: &str| Model::from_lightgbm_text(text).unwrap_err().to_string();
        assert!(e("hello").contains("first line is not 'tree'"));
        assert!(e(&header("cross_entropy")).contains("objective 'cross_entropy' is not supported"));
        assert!(
            e(&header("tweedie tweedie_variance_power:2.5")).contains("tweedie_variance_power 2.5 is out of its range")
        );
        // A log link predicts exp of the raw score; the parameters block gives the quantile.
        let poisson = Model::from_lightgbm_text(&header("poisson")).unwrap();
        assert_eq!(poisson.score_columns(&[vec![3.0]], 1).unwrap().values, vec![0.5f64.exp()]);
        let quantile = header("quantile").replace("end of trees\n", "end of trees\n\nparameters:\n[alpha: 0.3]\n");
        let quantile = Model::from_lightgbm_text(&quantile).unwrap();
        assert_eq!(quantile.boosting().unwrap().loss, Loss::Quantile { alpha: 0.3 });
        assert!(e(&header("regression sqrt")).contains("reg_sqrt"));
        assert!(e(&header("regression").replace("end of trees\n", "")).contains("truncated"));
        let model = Model::from_lightgbm_text(&header("regression")).unwrap();
        assert_eq!(model.score_columns(&[vec![3.0]], 1).unwrap().values, vec![0.5]);
    }
}
