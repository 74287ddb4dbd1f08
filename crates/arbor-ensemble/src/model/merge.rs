//! One random forest from forests grown on disjoint parts of a table: how a
//! cluster trains a forest without any task holding every row.
//!
//! Each part's forest was grown on its own rows; the merged forest takes
//! `n_trees` trees from them, allotted in proportion to the parts' row counts
//! (largest remainders first). Parts may have seen different classes or
//! categories: the merged model knows their unions, and every tree's class
//! distributions and category bits are mapped onto them.

use std::collections::HashMap;

use arbor_quantize::BinMapper;

use crate::error::{ArborError, Result};
use crate::model::feature::Feature;
use crate::model::node_cover::NodeCover;
use crate::model::tree::{Node, SplitTest, Tree};
use crate::model::trees::Trees;
use crate::model::Model;
use crate::{Algorithm, Classes};

impl Model {
    /// Merges random forests grown on disjoint parts of one table into a
    /// forest of `n_trees` trees, each part giving trees in proportion to the
    /// rows it was grown on. The result does not depend on the parts' order.
    ///
    /// The parts must agree on task, label, features and options (all but
    /// `n_trees` and `seed`, which the merged model records as `n_trees` and
    /// `seed`). Importances and out-of-bag errors are the parts' averages
    /// weighted by their rows.
    pub fn merge_forests(mut parts: Vec<Model>, n_trees: usize, seed: u64) -> Result<Model> {
        let Some(first) = parts.first() else { return Err(ArborError::Model("no forest to merge".into())) };
        if first.algorithm != Algorithm::RandomForest {
            return Err(ArborError::Model("only random forests can be merged".into()));
        }
        for part in &parts[1..] {
            agree(first, part)?;
        }
        // A canonical order, whatever order the parts arrived in.
        let mut keyed: Vec<(u64, u64, Model)> =
            parts.drain(..).map(|m| (m.training_rows, xxhash_rust::xxh3::xxh3_64(&m.to_bytes()), m)).collect();
        keyed.sort_by_key(|(rows, hash, _)| (std::cmp::Reverse(*rows), *hash));
        let parts: Vec<Model> = keyed.into_iter().map(|(_, _, m)| m).collect();
        let allotted = allot(&parts.iter().map(|m| (m.training_rows, m.trees.len())).collect::<Vec<_>>(), n_trees)?;

        let classes = union_classes(&parts)?;
        let features = union_features(&parts)?;
        let total_rows: u64 = parts.iter().map(|m| m.training_rows).sum();
        let weight = |m: &Model| {
            if total_rows == 0 {
                1.0 / parts.len() as f64
            } else {
                m.training_rows as f64 / total_rows as f64
            }
        };

        let mut trees = Vec::with_capacity(n_trees);
        let mut covers = parts.iter().all(|m| m.cover.is_some()).then(Vec::new);
        for (part, &take) in parts.iter().zip(&allotted) {
            let class_map = match (&classes, &part.label.classes) {
                (Some(all), Some(own)) => Some(position_map(&own.names(), &all.names())),
                _ => None,
            };
            let bin_maps: Vec<Option<(Vec<usize>, usize)>> = part
                .features
                .iter()
                .zip(&features)
                .map(|(own, all)| match (own.mapper.categories(), all.mapper.categories()) {
                    (Some(own), Some(all)) => Some((position_map(own, all), all.len())),
                    _ => None,
                })
                .collect();
            for (t, tree) in part.trees.iter().take(take).enumerate() {
                trees.push(remap_tree(tree, part.leaf_width(), class_map.as_deref(), classes.as_ref(), &bin_maps));
                if let (Some(covers), Some(own)) = (covers.as_mut(), part.cover.as_ref()) {
                    covers.push(own.tree(t).to_vec());
                }
            }
        }

        let mut merged = parts[0].clone();
        merged.features = features;
        if let Some(classes) = classes {
            merged.label.classes = Some(classes);
        }
        merged.trees = Trees::from(trees);
        merged.cover = covers.map(NodeCover::new);
        merged.training_rows = total_rows;
        merged.skipped_null_labels = parts.iter().map(|m| m.skipped_null_labels).sum();
        merged.importance = parts.iter().map(|m| m.importance.clone()).collect::<Option<Vec<_>>>().map(|all| {
            let mut sum = vec![0.0; merged.features.len()];
            for (imp, part) in all.iter().zip(&parts) {
                for (s, v) in sum.iter_mut().zip(imp) {
                    *s += weight(part) * v;
                }
            }
            sum
        });
        merged.oob_error = parts
            .iter()
            .map(|m| m.oob_error.map(|e| weight(m) * e))
            .collect::<Option<Vec<_>>>()
            .map(|e| e.iter().sum());
        for (key, value) in &mut merged.params {
            match key.as_str() {
                "n_trees" => *value = n_trees.to_string(),
                "seed" => *value = seed.to_string(),
                _ => {}
            }
        }
        merged.validate().map_err(|e| ArborError::Model(format!("the merged forest is inconsistent: {e}")))?;
        Ok(merged)
    }
}

/// Checks that two parts were trained the same way on the same columns.
fn agree(a: &Model, b: &Model) -> Result<()> {
    let differ = |what: &str| Err(ArborError::Model(format!("the forests to merge differ in their {what}")));
    if a.algorithm != b.algorithm || a.task != b.task {
        return differ("algorithm or task");
    }
    if a.label.name != b.label.name || a.label.data_type != b.label.data_type {
        return differ("label");
    }
    let shape = |m: &Model| m.features.iter().map(|f| (f.name.clone(), f.kind)).collect::<Vec<_>>();
    if shape(a) != shape(b) {
        return differ("features");
    }
    if a.voting != b.voting {
        return differ("voting");
    }
    let options =
        |m: &Model| m.params.iter().filter(|(k, _)| k != "n_trees" && k != "seed").cloned().collect::<Vec<_>>();
    if options(a) != options(b) {
        return differ("options");
    }
    Ok(())
}

/// How many trees each part gives: `n_trees` in proportion to the parts' rows,
/// the remaining trees to the largest remainders, never more than a part has.
fn allot(parts: &[(u64, usize)], n_trees: usize) -> Result<Vec<usize>> {
    let available: usize = parts.iter().map(|&(_, t)| t).sum();
    if available < n_trees {
        return Err(ArborError::Model(format!("the parts hold {available} trees, fewer than the {n_trees} asked for")));
    }
    let rows: u64 = parts.iter().map(|&(r, _)| r).sum::<u64>().max(1);
    let quota: Vec<f64> = parts.iter().map(|&(r, _)| n_trees as f64 * r as f64 / rows as f64).collect();
    let mut take: Vec<usize> = parts.iter().zip(&quota).map(|(&(_, t), q)| (q.floor() as usize).min(t)).collect();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&i, &j| (quota[j] - take[j] as f64).total_cmp(&(quota[i] - take[i] as f64)).then(i.cmp(&j)));
    let mut missing = n_trees - take.iter().sum::<usize>();
    while missing > 0 {
        for &i in &order {
            if missing > 0 && take[i] < parts[i].1 {
                take[i] += 1;
                missing -= 1;
            }
        }
    }
    Ok(take)
}

/// For each name in `own`, its position in `all`.
fn position_map(own: &[String], all: &[String]) -> Vec<usize> {
    let index: HashMap<&str, usize> = all.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
    own.iter().map(|s| index[s.as_str()]).collect()
}

/// The union of the parts' classes, sorted as training sorts them.
fn union_classes(parts: &[Model]) -> Result<Option<Classes>> {
    let mut all: Option<Classes> = None;
    for part in parts {
        let Some(own) = &part.label.classes else { continue };
        all = Some(match (all, own) {
            (None, own) => own.clone(),
            (Some(Classes::Int(mut a)), Classes::Int(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                Classes::Int(a)
            }
            (Some(Classes::UInt(mut a)), Classes::UInt(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                Classes::UInt(a)
            }
            (Some(Classes::Bool(mut a)), Classes::Bool(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                Classes::Bool(a)
            }
            (Some(Classes::Str(mut a)), Classes::Str(b)) => {
                a.extend(b.iter().cloned());
                a.sort_unstable();
                a.dedup();
                Classes::Str(a)
            }
            _ => return Err(ArborError::Model("the forests to merge have classes of different kinds".into())),
        });
    }
    Ok(all)
}

/// The parts' features, categorical ones over the union of their categories.
fn union_features(parts: &[Model]) -> Result<Vec<Feature>> {
    let mut features = parts[0].features.clone();
    for (i, feature) in features.iter_mut().enumerate() {
        if feature.mapper.categories().is_none() {
            continue;
        }
        let mut all: Vec<String> =
            parts.iter().flat_map(|m| m.features[i].mapper.categories().unwrap_or_default().iter().cloned()).collect();
        all.sort_unstable();
        all.dedup();
        if all.len() >= u16::MAX as usize {
            return Err(ArborError::Model(format!("feature '{}' has too many categories to merge", feature.name)));
        }
        feature.mapper = BinMapper::categorical(all);
    }
    Ok(features)
}

/// A part's tree over the merged classes and categories.
fn remap_tree(
    tree: &Tree,
    leaf_width: usize,
    class_map: Option<&[usize]>,
    classes: Option<&Classes>,
    bin_maps: &[Option<(Vec<usize>, usize)>],
) -> Tree {
    // Leaves widen to the union's classes when their part saw fewer: their
    // offsets into the values move with them.
    let width = match (class_map, classes) {
        (Some(map), Some(all)) if map.len() != all.len() || map.iter().enumerate().any(|(i, &j)| i != j) => {
            Some(all.len())
        }
        _ => None,
    };
    let nodes = tree
        .nodes
        .iter()
        .map(|node| match node {
            Node::Leaf { value } => match width {
                Some(width) => Node::Leaf { value: (*value as usize / leaf_width.max(1) * width) as u32 },
                None => node.clone(),
            },
            Node::Split { feature, test: SplitTest::InCategories(words), default_left, left, right } => {
                match &bin_maps[*feature as usize] {
                    Some((map, n_all)) => {
                        // A category this part never saw went where missing
                        // values go (`default_left`); in the union it has a
                        // bin of its own, which must go the same way.
                        let mut goes_left = vec![*default_left; *n_all];
                        for (own, &all) in map.iter().enumerate() {
                            let b = own + 1;
                            goes_left[all] = crate::model::tree::has_bit(words, b);
                        }
                        let mut bits: Vec<u64> = Vec::new();
                        for (all, _) in goes_left.iter().enumerate().filter(|(_, &l)| l) {
                            let nb = all + 1;
                            if bits.len() <= nb / 64 {
                                bits.resize(nb / 64 + 1, 0);
                            }
                            bits[nb / 64] |= 1 << (nb % 64);
                        }
                        Node::Split {
                            feature: *feature,
                            test: SplitTest::InCategories(bits),
                            default_left: *default_left,
                            left: *left,
                            right: *right,
                        }
                    }
                    None => node.clone(),
                }
            }
            other => other.clone(),
        })
        .collect();
    let values = match (class_map, width) {
        (Some(map), Some(width)) => {
            let mut values = Vec::with_capacity(tree.values.len() / leaf_width.max(1) * width);
            for leaf in tree.values.chunks(leaf_width.max(1)) {
                let start = values.len();
                values.resize(start + width, 0.0);
                for (own, &v) in leaf.iter().enumerate() {
                    values[start + map[own]] = v;
                }
            }
            values
        }
        _ => tree.values.clone(),
    };
    Tree { nodes, values }
}

#[cfg(test)]
mod tests {
    use super::allot;

    #[test]
    fn trees_follow_rows_and_never_exceed_a_part() {
        assert_eq!(allot(&[(50, 10), (50, 10)], 10).unwrap(), vec![5, 5]);
        assert_eq!(allot(&[(70, 10), (30, 10)], 10).unwrap(), vec![7, 3]);
        // A part with most rows but few trees: the others make up the rest.
        assert_eq!(allot(&[(90, 5), (10, 5)], 10).unwrap(), vec![5, 5]);
        assert_eq!(allot(&[(1, 4), (1, 4), (1, 4)], 10).unwrap().iter().sum::<usize>(), 10);
        assert!(allot(&[(1, 2)], 3).is_err());
    }
}
