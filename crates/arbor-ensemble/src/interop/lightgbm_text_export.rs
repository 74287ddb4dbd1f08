//! Writing arbor models as LightGBM text model files, which LightGBM
//! (`Booster(model_file=...)`), treelite and Triton's FIL backend load.
//!
//! Boosted models keep their trees and objective, the base score added to
//! each output's first tree as LightGBM keeps its own. A random forest is a
//! LightGBM `rf` model (`average_output`): regression as `regression`, and
//! classification as one tree per class per arbor tree whose leaves hold
//! the class's share (or vote), with no objective, so that LightGBM returns
//! the means, the class probabilities, as they are.
//!
//! LightGBM compares 64-bit values with `x <= threshold`, as arbor does, so
//! thresholds and leaves are written exactly. Categorical features are
//! LightGBM's categorical splits over the category codes, the category
//! lists written as `pandas_categorical`, so a pandas `category` column
//! with those categories predicts directly. LightGBM sends a category set
//! left and missing values right: a split whose missing values go left is
//! written with its children swapped and the complement set.

use std::fmt::Write;

use arbor_quantize::FeatureType;

use super::export::{export_error, shortest, ExportFormat};
use super::exported_trees::{Combine, ExportedTree, ExportedTrees};
use crate::model::tree::{has_bit, Node, SplitTest};
use crate::model::Model;
use crate::{Loss, Result};

const FORMAT: ExportFormat = ExportFormat::LightgbmText;

/// `decision_type` bits: categorical, default left, missing type zero, missing type NaN.
const CATEGORICAL: u8 = 1;
const DEFAULT_LEFT: u8 = 2;
const MISSING_ZERO: u8 = 1 << 2;
const MISSING_NAN: u8 = 2 << 2;

/// The model as a LightGBM text model file.
pub(crate) fn write(model: &Model) -> Result<Vec<u8>> {
    let exported = model.exported_trees().map_err(|e| export_error(FORMAT, e))?;
    if let Some(f) = model.features.iter().find(|f| f.name.is_empty() || f.name.contains(char::is_whitespace)) {
        return Err(export_error(
            FORMAT,
            format!("feature '{}': LightGBM's feature names cannot be empty or hold whitespace", f.name),
        ));
    }
    let (objective, num_class) = objective(model, &exported);
    let mut out = String::new();
    out.push_str("tree\nversion=v4\n");
    let _ = writeln!(out, "num_class={num_class}");
    let _ = writeln!(out, "num_tree_per_iteration={}", exported.outputs);
    out.push_str("label_index=0\n");
    let _ = writeln!(out, "max_feature_idx={}", model.features.len().saturating_sub(1));
    if let Some(objective) = &objective {
        let _ = writeln!(out, "objective={objective}");
    }
    if exported.combine == Combine::Mean {
        out.push_str("average_output\n");
    }
    let names: Vec<&str> = model.features.iter().map(|f| f.name.as_str()).collect();
    let _ = writeln!(out, "feature_names={}", names.join(" "));
    let infos: Vec<String> = (0..model.features.len()).map(|f| feature_info(model, f)).collect();
    let _ = writeln!(out, "feature_infos={}\n", infos.join(" "));
    for (i, tree) in exported.trees.iter().enumerate() {
        write_tree(&mut out, model, i, tree)?;
    }
    out.push_str("end of trees\n\nfeature_importances:\n\nparameters:\n");
    let boosting = if exported.combine == Combine::Mean { "rf" } else { "gbdt" };
    let _ = writeln!(out, "[boosting: {boosting}]");
    let _ = writeln!(out, "[objective: {}]", objective.as_deref().unwrap_or("custom"));
    let _ = writeln!(out, "[num_class: {num_class}]");
    let categorical: Vec<usize> =
        model.features.iter().enumerate().filter(|(_, f)| f.kind == FeatureType::Categorical).map(|(i, _)| i).collect();
    let indices: Vec<String> = categorical.iter().map(usize::to_string).collect();
    let _ = writeln!(out, "[categorical_feature: {}]", indices.join(","));
    out.push_str("end of parameters\n\n");
    let pandas = match categorical.is_empty() {
        true => "null".to_owned(),
        false => {
            let lists: Vec<&[String]> = categorical.iter().filter_map(|&f| model.categories(f)).collect();
            serde_json::to_string(&lists).map_err(|e| export_error(FORMAT, e.to_string()))?
        }
    };
    let _ = writeln!(out, "pandas_categorical:{pandas}");
    Ok(out.into_bytes())
}

/// The header's objective (none for a forest of class shares, which
/// LightGBM then returns unchanged) and `num_class`.
fn objective(model: &Model, exported: &ExportedTrees<'_>) -> (Option<String>, usize) {
    let k = exported.outputs;
    let loss = match exported.combine {
        Combine::Sum(loss) => loss,
        Combine::Mean if model.task == crate::Task::Regression => return (Some("regression".into()), 1),
        Combine::Mean => return (None, k),
    };
    let objective = match loss {
        Loss::Squared => "regression".to_owned(),
        Loss::Logistic => "binary sigmoid:1".to_owned(),
        Loss::Softmax => format!("multiclass num_class:{k}"),
        Loss::Quantile { alpha } => format!("quantile alpha:{alpha}"),
        Loss::Huber { delta } => format!("huber alpha:{delta}"),
        Loss::Absolute => "regression_l1".to_owned(),
        Loss::Poisson => "poisson".to_owned(),
        Loss::Gamma => "gamma".to_owned(),
        Loss::Tweedie { power } => format!("tweedie tweedie_variance_power:{power}"),
        Loss::Lambdarank { .. } => "lambdarank".to_owned(),
    };
    (Some(objective), if loss == Loss::Softmax { k } else { 1 })
}

/// `feature_infos`: a numeric feature's range of bin edges, a categorical
/// feature's codes.
fn feature_info(model: &Model, f: usize) -> String {
    match (model.categories(f), &model.features[f].mapper) {
        (Some(categories), _) => (0..categories.len()).map(|c| c.to_string()).collect::<Vec<_>>().join(":"),
        (None, arbor_quantize::BinMapper::Numeric { edges }) if !edges.is_empty() => {
            format!("[{}:{}]", shortest(edges[0]), shortest(edges[edges.len() - 1]))
        }
        _ => "none".to_owned(),
    }
}

/// The arrays of one tree section, built node by node.
#[derive(Default)]
struct Section {
    split_feature: Vec<String>,
    threshold: Vec<String>,
    decision_type: Vec<String>,
    left_child: Vec<String>,
    right_child: Vec<String>,
    internal_weight: Vec<String>,
    internal_count: Vec<String>,
    leaf_value: Vec<String>,
    leaf_weight: Vec<String>,
    leaf_count: Vec<String>,
    cat_boundaries: Vec<usize>,
    cat_threshold: Vec<u32>,
}

/// Writes tree `index` as a `Tree=` section: splits numbered in arbor's
/// order from 0, leaves as `-(leaf + 1)`.
fn write_tree(out: &mut String, model: &Model, index: usize, tree: &ExportedTree<'_>) -> Result<()> {
    // LightGBM's index of each node: internal nodes and leaves counted apart.
    let mut lgb_index = vec![0i64; tree.nodes.len()];
    let (mut splits, mut leaves) = (0i64, 0i64);
    for (i, node) in tree.nodes.iter().enumerate() {
        lgb_index[i] = match node {
            Node::Split { .. } => {
                splits += 1;
                splits - 1
            }
            Node::Leaf { .. } => {
                leaves += 1;
                -leaves
            }
        };
    }
    let mut s = Section { cat_boundaries: vec![0], ..Section::default() };
    for (i, node) in tree.nodes.iter().enumerate() {
        let cover = tree.cover.map_or(0.0, |c| f64::from(c[i]));
        match node {
            Node::Leaf { .. } => {
                s.leaf_value.push(shortest(tree.leaf[i]));
                s.leaf_weight.push(shortest(cover));
                s.leaf_count.push(format!("{}", cover.round() as u64));
            }
            Node::Split { feature, test, default_left, left, right } => {
                let (mut left, mut right) = (lgb_index[*left as usize], lgb_index[*right as usize]);
                let f = &model.features[*feature as usize];
                let (threshold, decision) = match test {
                    SplitTest::LessOrEqual(t) => (shortest(*t), MISSING_NAN | (u8::from(*default_left) * DEFAULT_LEFT)),
                    SplitTest::ZeroAsMissing { threshold, zero_left } => {
                        (shortest(*threshold), MISSING_ZERO | (u8::from(*zero_left) * DEFAULT_LEFT))
                    }
                    SplitTest::InCategories(words) => {
                        // A categorical feature's bits count bins from 1, its codes from 0;
                        // an imported feature of integer codes counts its codes as bits.
                        let (offset, n_codes) = match model.categories(*feature as usize) {
                            Some(categories) => (1, categories.len()),
                            None => (0, words.len() * 64),
                        };
                        let bit = |code: usize| has_bit(words, code + offset);
                        // Missing values go right in LightGBM: when they go left in
                        // arbor, the children swap and the set is the other side's.
                        let swap = *default_left;
                        if swap {
                            std::mem::swap(&mut left, &mut right);
                        }
                        let set: Vec<usize> = (0..n_codes).filter(|&c| bit(c) != swap).collect();
                        if f.kind != FeatureType::Categorical && swap {
                            return Err(export_error(
                                FORMAT,
                                format!(
                                    "tree {index}, node {i} on feature '{}': integer codes whose missing values \
                                     go left",
                                    f.name
                                ),
                            ));
                        }
                        let words32 = set.last().map_or(1, |&last| last / 32 + 1);
                        let mut bits = vec![0u32; words32];
                        for c in set {
                            bits[c / 32] |= 1 << (c % 32);
                        }
                        let cat_index = s.cat_boundaries.len() - 1;
                        s.cat_threshold.extend(bits);
                        s.cat_boundaries.push(s.cat_threshold.len());
                        (cat_index.to_string(), CATEGORICAL | MISSING_NAN)
                    }
                };
                s.split_feature.push(feature.to_string());
                s.threshold.push(threshold);
                s.decision_type.push(decision.to_string());
                s.left_child.push(left.to_string());
                s.right_child.push(right.to_string());
                s.internal_weight.push(shortest(cover));
                s.internal_count.push(format!("{}", cover.round() as u64));
            }
        }
    }
    let join = |v: &[String]| v.join(" ");
    let n_splits = s.split_feature.len();
    let _ = writeln!(out, "Tree={index}");
    let _ = writeln!(out, "num_leaves={}", s.leaf_value.len());
    let _ = writeln!(out, "num_cat={}", s.cat_boundaries.len() - 1);
    let _ = writeln!(out, "split_feature={}", join(&s.split_feature));
    let _ = writeln!(out, "split_gain={}", vec!["0"; n_splits].join(" "));
    let _ = writeln!(out, "threshold={}", join(&s.threshold));
    let _ = writeln!(out, "decision_type={}", join(&s.decision_type));
    let _ = writeln!(out, "left_child={}", join(&s.left_child));
    let _ = writeln!(out, "right_child={}", join(&s.right_child));
    let _ = writeln!(out, "leaf_value={}", join(&s.leaf_value));
    let _ = writeln!(out, "leaf_weight={}", join(&s.leaf_weight));
    let _ = writeln!(out, "leaf_count={}", join(&s.leaf_count));
    let _ = writeln!(out, "internal_value={}", vec!["0"; n_splits].join(" "));
    let _ = writeln!(out, "internal_weight={}", join(&s.internal_weight));
    let _ = writeln!(out, "internal_count={}", join(&s.internal_count));
    if s.cat_boundaries.len() > 1 {
        let boundaries: Vec<String> = s.cat_boundaries.iter().map(usize::to_string).collect();
        let thresholds: Vec<String> = s.cat_threshold.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "cat_boundaries={}", boundaries.join(" "));
        let _ = writeln!(out, "cat_threshold={}", thresholds.join(" "));
    }
    out.push_str("is_linear=0\nshrinkage=1\n\n\n");
    Ok(())
}
