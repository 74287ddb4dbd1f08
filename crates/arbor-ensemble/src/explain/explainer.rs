//! A model's trees laid out for TreeSHAP, and the walk of many rows.

use rayon::prelude::*;

use crate::explain::leaf_patterns::LeafPatterns;
use crate::explain::tree_shap::{reciprocals, ShapTree, Step};
use crate::predict::arg_max;
use crate::{ArborError, Model, Result, Task, Voting};

/// Rows one parallel task explains.
const TASK_ROWS: usize = 64;

/// Everything explaining a model's rows needs ([`Model::explainer`]): each
/// tree with the values it explains and the output it adds to, and each
/// output's bias. Laying it out costs about what explaining one row does.
#[derive(Debug)]
pub struct Explainer {
    trees: Vec<ShapTree>,
    /// The output (block of contributions) each tree's first value adds to.
    first_output: Vec<usize>,
    n_features: usize,
    outputs: usize,
    /// Each output's expected raw score: the base score and the trees' expectations.
    bias: Vec<f64>,
    /// What the trees' sum is multiplied by: 1 for boosting, 1/trees for forests.
    scale: f64,
}

impl Explainer {
    /// Lays out `model`'s trees; an error when the model has no node covers.
    pub(crate) fn new(model: &Model) -> Result<Explainer> {
        let cover = model.node_cover().ok_or_else(|| {
            ArborError::Model(
                "the model records no node cover (models written before format 4 do not): train it again, or \
                 import it again, to explain its predictions"
                    .into(),
            )
        })?;
        let trees = model.trees();
        let n_trees = trees.len();
        let leaf_width = model.leaf_width();
        let classes = model.value_len();
        let outputs = model.contribution_outputs();
        let (laid_out, first_output, scale, mut bias): (Vec<ShapTree>, Vec<usize>, f64, Vec<f64>) =
            match model.boosting() {
                Some(boosting) => {
                    let laid_out = trees
                        .par_iter()
                        .enumerate()
                        .map(|(t, tree)| ShapTree::new(tree, cover.tree(t), 1, 1, |v, out| out.push(v[0])))
                        .collect();
                    let first = (0..n_trees).map(|t| t % boosting.outputs).collect();
                    (laid_out, first, 1.0, boosting.base_score.clone())
                }
                None => {
                    // A forest explains its averaged leaf values: the value,
                    // the second class's probability of two, or every class's.
                    let votes = model.task() == Task::Classification && model.voting() == Voting::Unweighted;
                    let pick = move |v: &[f64], out: &mut Vec<f64>| {
                        let start = out.len();
                        if votes {
                            out.extend((0..classes).map(|c| f64::from(u8::from(c == arg_max(v)))));
                        } else {
                            out.extend_from_slice(v);
                        }
                        if classes == 2 {
                            out.remove(start);
                        }
                    };
                    let laid_out = trees
                        .par_iter()
                        .enumerate()
                        .map(|(t, tree)| ShapTree::new(tree, cover.tree(t), leaf_width, outputs, pick))
                        .collect();
                    (laid_out, vec![0; n_trees], 1.0 / n_trees as f64, vec![0.0; outputs])
                }
            };
        // Summed in tree order, as predictions are, and scaled last.
        for (tree, &first) in laid_out.iter().zip(&first_output) {
            bias[first..].iter_mut().zip(tree.expected()).for_each(|(b, e)| *b += e);
        }
        if scale != 1.0 {
            bias.iter_mut().for_each(|b| *b *= scale);
        }
        Ok(Explainer { trees: laid_out, first_output, n_features: model.features().len(), outputs, bias, scale })
    }

    /// Blocks of contributions per row: one per output explained.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Each output's bias: its expected raw score when no feature is known.
    pub fn bias(&self) -> &[f64] {
        &self.bias
    }

    /// Explains `n_rows` rows of raw feature values (column-major, NaN for
    /// missing, categories as their 1-based bin): per row, `outputs` blocks
    /// of one contribution per feature then the bias. The trees take turns,
    /// each explaining every row, so a tree's leaf tables (built when the
    /// rows pay for them) are all the memory it adds, and rows are shared out
    /// between threads; each row's sums run in tree order, so the result does
    /// not depend on the threads.
    pub(crate) fn explain_columns(&self, columns: &[Vec<f64>], n_rows: usize) -> Vec<f64> {
        let n_features = self.n_features;
        let stride = n_features + 1;
        let width = stride * self.outputs;
        // Each row's features together.
        let mut x = vec![0.0; n_rows * n_features];
        x.par_chunks_mut(TASK_ROWS * n_features).enumerate().for_each(|(task, x)| {
            for (f, column) in columns.iter().enumerate() {
                let rows = &column[task * TASK_ROWS..task * TASK_ROWS + x.len() / n_features];
                for (i, &v) in rows.iter().enumerate() {
                    x[i * n_features + f] = v;
                }
            }
        });
        let mut values = vec![0.0; n_rows * width];
        for (tree, &first) in self.trees.iter().zip(&self.first_output) {
            let patterns = LeafPatterns::new(tree, n_rows);
            let tasks = values.par_chunks_mut(TASK_ROWS * width).zip(x.par_chunks(TASK_ROWS * n_features));
            tasks.for_each(|(out, x)| {
                let rows = x.chunks_exact(n_features).zip(out.chunks_exact_mut(width));
                match &patterns {
                    Some(patterns) => {
                        for (x, phi) in rows {
                            patterns.explain(tree, x, &mut phi[first * stride..], stride);
                        }
                    }
                    None => {
                        let mut path = vec![Step::default(); tree.path_len()];
                        let inverse = reciprocals(tree.path_len());
                        for (x, phi) in rows {
                            tree.explain(x, &mut path, &inverse, &mut phi[first * stride..], stride);
                        }
                    }
                }
            });
        }
        values.par_chunks_mut(width).for_each(|phi| {
            for (k, block) in phi.chunks_exact_mut(stride).enumerate() {
                if self.scale != 1.0 {
                    block.iter_mut().for_each(|v| *v *= self.scale);
                }
                block[n_features] = self.bias[k];
            }
        });
        values
    }
}
