//! Writing arbor models as XGBoost JSON model files, which XGBoost
//! (`Booster(model_file=...)`), treelite and Triton's FIL backend load.
//!
//! Boosted models keep their trees and objective (each loss maps to the
//! XGBoost objective with the same link). A random forest becomes one
//! iteration of `num_parallel_tree` trees per output with
//! `reg:squarederror`, its leaves divided by the number of trees: the
//! outputs are the forest's means, class probabilities or votes included
//! (one target per class).
//!
//! XGBoost compares 32-bit floats with `x < condition`: a threshold `t`
//! becomes the 32-bit float just above `t`'s own 32-bit rounding, so every
//! value `x <= t` goes left in XGBoost too (rounding keeps order); a value
//! above `t` goes right unless it rounds to the same 32-bit float as `t`,
//! which no 32-bit comparison can tell apart. Leaf
//! values are 32-bit floats too, so sums agree to about 1e-7 relative.
//! Categorical splits are XGBoost's native ones over the category codes
//! (feature type `c`): XGBoost lists the categories that go right.

use arbor_quantize::FeatureType;
use serde_json::{json, Value};

use super::export::{export_error, ExportFormat};
use super::exported_trees::{Combine, ExportedTree, ExportedTrees};
use super::xgboost_json::{CATEGORIES_ATTRIBUTE, FOREST_ATTRIBUTE};
use crate::model::tree::{has_bit, Node, SplitTest};
use crate::model::Model;
use crate::{Loss, Result};

const FORMAT: ExportFormat = ExportFormat::XgboostJson;

/// The model as an XGBoost JSON model file.
pub(crate) fn write(model: &Model) -> Result<Vec<u8>> {
    let exported = model.exported_trees().map_err(|e| export_error(FORMAT, e))?;
    let n_features = model.features.len();
    let (objective, base_score, num_class, num_target) = objective(&exported);
    let scale = match exported.combine {
        Combine::Mean => 1.0 / exported.rounds() as f64,
        Combine::Sum(_) => 1.0,
    };
    let trees = exported
        .trees
        .iter()
        .enumerate()
        .map(|(i, tree)| xgboost_tree(model, i, tree, scale))
        .collect::<Result<Vec<Value>>>()?;
    let tree_info: Vec<usize> = exported.trees.iter().map(|t| t.output).collect();
    let (parallel, per_iteration) = match exported.combine {
        Combine::Mean => (exported.rounds(), exported.trees.len()),
        Combine::Sum(_) => (1, exported.outputs),
    };
    let iteration_indptr: Vec<usize> = (0..=exported.trees.len() / per_iteration).map(|i| i * per_iteration).collect();
    let feature_types: Vec<&str> =
        model.features.iter().map(|f| if f.kind == FeatureType::Categorical { "c" } else { "float" }).collect();
    let file = json!({
        "version": [2, 1, 0],
        "learner": {
            "attributes": attributes(model, &exported)?,
            "feature_names": model.features.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            "feature_types": feature_types,
            "gradient_booster": {
                "name": "gbtree",
                "model": {
                    "gbtree_model_param": {
                        "num_parallel_tree": parallel.to_string(),
                        "num_trees": exported.trees.len().to_string(),
                    },
                    "iteration_indptr": iteration_indptr,
                    "tree_info": tree_info,
                    "trees": trees,
                },
            },
            "learner_model_param": {
                "base_score": base_score,
                "boost_from_average": "0",
                "num_class": num_class.to_string(),
                "num_feature": n_features.to_string(),
                "num_target": num_target.to_string(),
            },
            "objective": objective,
        },
    });
    serde_json::to_vec(&file).map_err(|e| export_error(FORMAT, format!("could not write JSON: {e}")))
}

/// What arbor's importer needs to give the model back as it was: each
/// categorical feature's categories in code order, and whether the outputs
/// are a forest's class shares. XGBoost keeps attributes as strings.
fn attributes(model: &Model, exported: &ExportedTrees<'_>) -> Result<Value> {
    let mut attributes = serde_json::Map::new();
    let categories: serde_json::Map<String, Value> = (0..model.features.len())
        .filter_map(|f| Some((model.features[f].name.clone(), json!(model.categories(f)?))))
        .collect();
    if !categories.is_empty() {
        let text = serde_json::to_string(&categories).map_err(|e| export_error(FORMAT, e.to_string()))?;
        attributes.insert(CATEGORIES_ATTRIBUTE.into(), Value::String(text));
    }
    if exported.combine == Combine::Mean {
        attributes.insert(FOREST_ATTRIBUTE.into(), json!(model.task.name()));
    }
    Ok(Value::Object(attributes))
}

/// The objective object, the base score (in XGBoost's output space, adding
/// nothing: arbor's is in the first trees), `num_class` and `num_target`.
fn objective(exported: &ExportedTrees<'_>) -> (Value, &'static str, usize, usize) {
    let loss = match exported.combine {
        Combine::Sum(loss) => loss,
        // A forest's outputs are plain sums of scaled leaves.
        Combine::Mean => {
            let objective = json!({"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}});
            return (objective, "0", 0, exported.outputs);
        }
    };
    let reg_loss = json!({"scale_pos_weight": "1"});
    match loss {
        Loss::Squared => (json!({"name": "reg:squarederror", "reg_loss_param": reg_loss}), "0", 0, 1),
        Loss::Logistic => (json!({"name": "binary:logistic", "reg_loss_param": reg_loss}), "5E-1", 0, 1),
        Loss::Softmax => {
            let param = json!({"num_class": exported.outputs.to_string()});
            (json!({"name": "multi:softprob", "softmax_multiclass_param": param}), "0", exported.outputs, 1)
        }
        Loss::Quantile { alpha } => {
            let param = json!({"quantile_alpha": format!("[{alpha}]")});
            (json!({"name": "reg:quantileerror", "quantile_loss_param": param}), "0", 0, 1)
        }
        // XGBoost's Huber is the pseudo-Huber loss: the same identity output.
        Loss::Huber { delta } => {
            let param = json!({"huber_slope": delta.to_string()});
            (json!({"name": "reg:pseudohubererror", "pseudo_huber_param": param}), "0", 0, 1)
        }
        Loss::Absolute => (json!({"name": "reg:absoluteerror"}), "0", 0, 1),
        // Log links: a base score of 1 is a margin of 0.
        Loss::Poisson => {
            let param = json!({"max_delta_step": "0.699999988"});
            (json!({"name": "count:poisson", "poisson_regression_param": param}), "1", 0, 1)
        }
        Loss::Gamma => (json!({"name": "reg:gamma", "reg_loss_param": reg_loss}), "1", 0, 1),
        Loss::Tweedie { power } => {
            let param = json!({"tweedie_variance_power": power.to_string()});
            (json!({"name": "reg:tweedie", "tweedie_regression_param": param}), "1", 0, 1)
        }
        // A ranking model's output is its raw score.
        Loss::Lambdarank { truncation, exp_gain, .. } => {
            let param = json!({
                "lambdarank_pair_method": "topk",
                "lambdarank_num_pair_per_sample": truncation.to_string(),
                "ndcg_exp_gain": if exp_gain { "1" } else { "0" },
                "lambdarank_normalization": "1",
                "lambdarank_score_normalization": "1",
                "lambdarank_unbiased": "0",
                "lambdarank_bias_norm": "1"
            });
            (json!({"name": "rank:ndcg", "lambdarank_param": param}), "0", 0, 1)
        }
    }
}

/// The 32-bit float just above `t as f32`: `(x as f32) < c` holds for
/// every `x <= t`, and for `x > t` unless `x as f32 == t as f32`; `None`
/// past the 32-bit range.
pub(crate) fn condition_above(t: f64) -> Option<f32> {
    let rounded = t as f32;
    // The next 32-bit float toward +inf (`f32::next_up`, newer than the MSRV).
    let c = match rounded {
        0.0 => f32::from_bits(1),
        r if r > 0.0 => f32::from_bits(r.to_bits() + 1),
        r => f32::from_bits(r.to_bits() - 1),
    };
    c.is_finite().then_some(c)
}

/// Tree `index` in XGBoost's node arrays (nodes keep arbor's order).
fn xgboost_tree(model: &Model, index: usize, tree: &ExportedTree<'_>, scale: f64) -> Result<Value> {
    let n = tree.nodes.len();
    let mut left = vec![-1i64; n];
    let mut right = vec![-1i64; n];
    let mut parents = vec![i64::from(i32::MAX); n];
    let mut split_indices = vec![0u32; n];
    let mut conditions = vec![0f32; n];
    let mut default_left = vec![0u8; n];
    let mut split_type = vec![0u8; n];
    let mut base_weights = vec![0f32; n];
    let (mut categories, mut categories_nodes, mut segments, mut sizes) = (vec![], vec![], vec![], vec![]);
    for (i, node) in tree.nodes.iter().enumerate() {
        match node {
            Node::Leaf { .. } => {
                let value = (tree.leaf[i] * scale) as f32;
                conditions[i] = value;
                base_weights[i] = value;
            }
            Node::Split { feature, test, default_left: d, left: l, right: r } => {
                let feature_info = &model.features[*feature as usize];
                let name = &feature_info.name;
                let cannot =
                    |what: &str| export_error(FORMAT, format!("tree {index}, node {i} on feature '{name}': {what}"));
                left[i] = i64::from(*l);
                right[i] = i64::from(*r);
                parents[*l as usize] = i as i64;
                parents[*r as usize] = i as i64;
                split_indices[i] = *feature;
                default_left[i] = u8::from(*d);
                match test {
                    SplitTest::LessOrEqual(t) if feature_info.kind != FeatureType::Categorical => {
                        conditions[i] = condition_above(*t)
                            .ok_or_else(|| cannot(&format!("the threshold {t} is beyond XGBoost's 32-bit range")))?;
                    }
                    SplitTest::InCategories(words) if feature_info.kind == FeatureType::Categorical => {
                        let n_categories = model.categories(*feature as usize).map_or(0, <[String]>::len);
                        // Arbor sets the bits of the (1-based) bins going left; XGBoost
                        // lists the codes going right.
                        let goes_left = |code: usize| has_bit(words, code + 1);
                        let right_codes: Vec<u32> =
                            (0..n_categories).filter(|&c| !goes_left(c)).map(|c| c as u32).collect();
                        split_type[i] = 1;
                        categories_nodes.push(i as u32);
                        segments.push(categories.len());
                        sizes.push(right_codes.len());
                        categories.extend(right_codes);
                    }
                    SplitTest::InCategories(_) => {
                        return Err(cannot(
                            "a category set over integer codes of a numeric feature (an imported LightGBM \
                             model); XGBoost's categorical splits need a categorical feature",
                        ));
                    }
                    SplitTest::ZeroAsMissing { .. } => {
                        return Err(cannot("LightGBM's zero-as-missing test, which XGBoost has no form of"));
                    }
                    SplitTest::LessOrEqual(_) => {
                        return Err(cannot("a numeric threshold on a categorical feature"));
                    }
                }
            }
        }
    }
    let sum_hessian: Vec<f32> = match tree.cover {
        Some(cover) => cover.to_vec(),
        None => vec![0.0; n],
    };
    Ok(json!({
        "base_weights": base_weights,
        "categories": categories,
        "categories_nodes": categories_nodes,
        "categories_segments": segments,
        "categories_sizes": sizes,
        "default_left": default_left,
        "id": index,
        "left_children": left,
        "loss_changes": vec![0f32; n],
        "parents": parents,
        "right_children": right,
        "split_conditions": conditions,
        "split_indices": split_indices,
        "split_type": split_type,
        "sum_hessian": sum_hessian,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": model.features.len().to_string(),
            "num_nodes": n.to_string(),
            "size_leaf_vector": "1",
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::xgboost_json::f32_less_than_threshold;

    #[test]
    fn conditions_send_every_value_at_or_below_the_threshold_left() {
        // 67.9 as f64 lies below 67.9 as f32: the value itself must go left.
        for t in [67.9, 2.5, 0.1, -0.1, 0.0, -0.0, 1e-40, 7.000000000000001, -3.4e38, 123456.789] {
            let c = condition_above(t).unwrap();
            let next_up = |x: f64| f64::from_bits(if x >= 0.0 { x.to_bits() + 1 } else { x.to_bits() - 1 });
            for x in [t, t - t.abs() * 1e-12, t - 1.0, next_up(t)] {
                let xgboost_left = (x as f32) < c;
                assert_eq!(xgboost_left, x <= t || x as f32 == t as f32, "threshold {t}, value {x}");
            }
            // Read back, the condition's threshold keeps t's side of every 32-bit value.
            assert!(f32_less_than_threshold(c) >= t, "{t}");
            assert!((f32_less_than_threshold(c) as f32) == t as f32, "{t}");
        }
        assert_eq!(condition_above(f64::MAX), None);
        assert_eq!(condition_above(3.5e38), None);
    }
}
