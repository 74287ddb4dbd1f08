//! Out-of-bag evaluation of a random forest (`docs/algorithms.md`, "Out-of-bag error")
//! and the permutation importance built on it (MDA: `docs/algorithms.md`, "Variable importance").
//!
//! Each tree is scored on the rows its bootstrap left out while the forest
//! trains (in parallel, each with its own random stream); the forest-level
//! figures are then summed in tree order, so they do not depend on the thread count.

use std::collections::BTreeMap;

use rand::Rng;

use crate::data::binned_data::BinnedData;
use crate::data::label::Target;
use crate::model::tree::{Node, Tree};
use crate::predict::arg_max;
use crate::train::importance;
use crate::train::walk_values::WalkValues;
use crate::Voting;

/// The out-of-bag results of a trained forest.
#[derive(Clone, Debug, PartialEq)]
pub struct OutOfBag {
    /// Misclassification rate (classification) or mean squared error
    /// (regression) of the out-of-bag predictions, over the rows that were
    /// out of bag for at least one tree.
    pub error: f64,
    /// Rows out of bag for at least one tree.
    pub rows: usize,
    /// Per training row in input order (null labels skipped), when `oob_per_observation` was asked.
    pub per_observation: Option<Vec<OobObservation>>,
}

/// One training row's out-of-bag prediction and error (`docs/algorithms.md`, "Out-of-bag error").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OobObservation {
    /// The row's label: class index (classification) or value (regression).
    pub label: f64,
    /// Class index (classification) or value (regression); `None` when the
    /// row was in every tree's bootstrap set.
    pub prediction: Option<f64>,
    /// `I{y != ŷ}` or `(y − ŷ)²`; `None` like `prediction`.
    pub error: Option<f64>,
}

/// What one tree contributes to the out-of-bag figures.
pub(crate) struct TreeOob {
    /// `(row, leaf offset)` for every row out of the tree's bag (empty unless
    /// the forest's OOB error was asked).
    leaves: Vec<(u32, u32)>,
    /// The tree's leaf outputs, which `leaves` index (kept with them: a
    /// forest does not keep its grown trees).
    values: Vec<f64>,
    /// Per feature, `E_{b,j} − E_b`: the error increase when feature `j` is
    /// permuted among the out-of-bag rows (empty unless MDA was asked).
    increases: Vec<f64>,
}

/// The error of a leaf's output for row `r`: 0/1 for classification, squared for regression.
#[inline]
fn leaf_error(target: &Target, tree: &Tree, leaf: usize, width: usize, r: usize) -> f64 {
    match target {
        Target::Classes(labels) => f64::from(arg_max(&tree.values[leaf..leaf + width]) != labels[r] as usize),
        Target::Values(y) => (y[r] - tree.values[leaf]).powi(2),
    }
}

/// Scores `tree` on the rows with a zero bootstrap count, keeping each row's
/// leaf when `keep_leaves` (for the forest's OOB error); with `mda`, also on
/// those rows with each feature the tree uses permuted in turn.
pub(crate) fn evaluate_tree(
    tree: &Tree,
    target: &Target,
    walk: &WalkValues<'_>,
    counts: &[f64],
    width: usize,
    (keep_leaves, mda): (bool, bool),
    rng: &mut impl Rng,
) -> TreeOob {
    let oob: Vec<u32> = (0..counts.len() as u32).filter(|&r| counts[r as usize] == 0.0).collect();
    let mean = |sum: f64| if oob.is_empty() { 0.0 } else { sum / oob.len() as f64 };
    let mut leaves = Vec::with_capacity(if keep_leaves { oob.len() } else { 0 });
    let mut errors = 0.0;
    for &r in &oob {
        let leaf = tree.leaf(|f| walk.value(f, r as usize));
        errors += leaf_error(target, tree, leaf, width, r as usize);
        if keep_leaves {
            leaves.push((r, leaf as u32));
        }
    }
    let error = mean(errors);
    let mut increases = Vec::new();
    if mda {
        let mut used = vec![false; walk.n_features()];
        for node in &tree.nodes {
            if let Node::Split { feature, .. } = node {
                used[*feature as usize] = true;
            }
        }
        let mut shuffled = oob.clone();
        increases = vec![0.0; walk.n_features()];
        for (j, increase) in increases.iter_mut().enumerate() {
            if !used[j] {
                continue; // a feature the tree never tests cannot change its answers
            }
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, rng.random_range(0..=i));
            }
            let permuted: f64 = oob
                .iter()
                .zip(&shuffled)
                .map(|(&r, &donor)| {
                    let value = |f: usize| walk.value(f, if f == j { donor } else { r } as usize);
                    leaf_error(target, tree, tree.leaf(value), width, r as usize)
                })
                .sum();
            *increase = mean(permuted) - error;
        }
    }
    let values = if keep_leaves { tree.values.clone() } else { Vec::new() };
    TreeOob { leaves, values, increases }
}

/// Every tree's out-of-bag answers, folded in tree order while the trees
/// finish in any order: a tree's answers wait only for the trees before it,
/// so the forest holds a few trees' answers rather than all of them (about
/// 1 MB a tree on flights), and each row's sums are added in tree order,
/// whatever the thread count.
pub(crate) struct OobFold {
    width: usize,
    voting: Voting,
    /// Each row's summed answers (`width` values), when the error was asked.
    votes: Vec<f64>,
    /// How many trees each row was out of bag for.
    seen: Vec<u32>,
    /// Per tree folded, `E_{b,j} − E_b` for each feature (MDA).
    increases: Vec<Vec<f64>>,
    /// Trees that finished before one of the trees ahead of them.
    waiting: BTreeMap<usize, TreeOob>,
}

impl OobFold {
    /// An empty fold over `n_rows` training rows; `error` keeps the per-row
    /// sums the out-of-bag error needs.
    pub(crate) fn new(n_rows: usize, width: usize, voting: Voting, error: bool) -> OobFold {
        OobFold {
            width,
            voting,
            votes: if error { vec![0.0; n_rows * width] } else { Vec::new() },
            seen: if error { vec![0; n_rows] } else { Vec::new() },
            increases: Vec::new(),
            waiting: BTreeMap::new(),
        }
    }

    /// Takes tree `t`'s answers; folds them, and those of the trees after
    /// it that were waiting, once every tree before it is folded.
    pub(crate) fn add(&mut self, t: usize, tree: TreeOob, target: &Target) {
        self.waiting.insert(t, tree);
        while let Some(tree) = self.waiting.remove(&self.increases.len()) {
            self.fold(tree, target);
        }
    }

    fn fold(&mut self, tree: TreeOob, target: &Target) {
        let width = self.width;
        for &(r, leaf) in &tree.leaves {
            let (r, leaf) = (r as usize, leaf as usize);
            let leaf_values = &tree.values[leaf..leaf + width];
            let row_votes = &mut self.votes[r * width..(r + 1) * width];
            match (target, self.voting) {
                (Target::Classes(_), Voting::Unweighted) => row_votes[arg_max(leaf_values)] += 1.0,
                _ => row_votes.iter_mut().zip(leaf_values).for_each(|(v, l)| *v += l),
            }
            self.seen[r] += 1;
        }
        self.increases.push(tree.increases);
    }

    /// The forest's out-of-bag error: each row is predicted by the trees it
    /// was out of bag for, voting as the model votes. Every tree must have
    /// been added.
    pub(crate) fn error(&self, data: &BinnedData, per_observation: bool) -> OutOfBag {
        debug_assert!(self.waiting.is_empty(), "trees missing before {:?}", self.waiting.keys().next());
        let (votes, seen, width) = (&self.votes, &self.seen, self.width);
        let observations: Vec<OobObservation> = (0..data.n_rows())
            .map(|r| {
                let label = match &data.target {
                    Target::Classes(labels) => f64::from(labels[r]),
                    Target::Values(y) => y[r],
                };
                if seen[r] == 0 {
                    return OobObservation { label, prediction: None, error: None };
                }
                let row_votes = &votes[r * width..(r + 1) * width];
                let (prediction, error) = match &data.target {
                    Target::Classes(_) => {
                        let class = arg_max(row_votes);
                        (class as f64, f64::from(class as f64 != label))
                    }
                    Target::Values(_) => {
                        let value = row_votes[0] / f64::from(seen[r]);
                        (value, (label - value).powi(2))
                    }
                };
                OobObservation { label, prediction: Some(prediction), error: Some(error) }
            })
            .collect();
        let rows = seen.iter().filter(|&&s| s > 0).count();
        let total: f64 = observations.iter().filter_map(|o| o.error).sum();
        OutOfBag {
            error: if rows > 0 { total / rows as f64 } else { f64::NAN },
            rows,
            per_observation: per_observation.then(|| data.in_input_order(&observations)),
        }
    }

    /// Mean decrease of accuracy per feature (`docs/algorithms.md`, "Variable importance") over the trees folded.
    pub(crate) fn mean_decrease_accuracy(&self, n_features: usize, scaled: bool) -> Vec<f64> {
        importance::mean_decrease_accuracy(&self.increases, n_features, scaled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three trees' answers for regression rows, whose sums depend on the
    /// order they are added in.
    fn trees() -> Vec<TreeOob> {
        (0..3)
            .map(|t| TreeOob {
                leaves: (0..4).map(|r| (r, (r + t) % 3)).collect(),
                values: vec![0.1 * f64::from(t + 1), 1e16, 0.3 / f64::from(t + 1)],
                increases: vec![f64::from(t), 1.0 / f64::from(t + 1)],
            })
            .collect()
    }

    #[test]
    fn trees_folded_out_of_order_sum_as_in_order() {
        let target = Target::Values(vec![0.0; 4]);
        let mut in_order = OobFold::new(4, 1, Voting::Weighted, true);
        for (t, tree) in trees().into_iter().enumerate() {
            in_order.add(t, tree, &target);
        }
        let mut shuffled = OobFold::new(4, 1, Voting::Weighted, true);
        let mut trees = trees().into_iter().map(Some).collect::<Vec<_>>();
        // Tree 2 waits for trees 0 and 1; tree 1's arrival folds both.
        for (t, folded) in [(2, 0), (0, 1), (1, 3)] {
            shuffled.add(t, trees[t].take().unwrap(), &target);
            assert_eq!(shuffled.increases.len(), folded, "after tree {t}");
        }
        let bits = |fold: &OobFold| fold.votes.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&shuffled), bits(&in_order));
        assert_eq!(shuffled.seen, vec![3; 4]);
        assert_eq!(shuffled.increases, in_order.increases);
        assert!(shuffled.waiting.is_empty());
    }
}
