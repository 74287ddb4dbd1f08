//! What every export format writes, worked out once from a model: trees that
//! each add one number per leaf to one output, and how the outputs combine.
//!
//! Boosted models keep their trees; the base score is added to the leaves
//! of each output's first tree (as LightGBM keeps its own), so that a format
//! whose base score is a 32-bit number in another space loses nothing. A
//! forest of `k` classes becomes `k` trees per arbor tree, one per class,
//! whose leaves hold the class's share of the leaf (weighted voting) or its
//! vote, 1 or 0 (unweighted voting); the outputs are the trees' means.

use std::borrow::Cow;

use crate::model::tree::Node;
use crate::model::Model;
use crate::predict::arg_max;
use crate::{Loss, Task, Voting};

/// How an exported model's outputs are made of its trees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Combine {
    /// Gradient boosting: the sum of the trees, through the loss's link.
    Sum(Loss),
    /// A random forest: the mean of the trees, per output.
    Mean,
}

/// One exported tree: arbor's nodes with one number per leaf.
pub(crate) struct ExportedTree<'m> {
    /// The output the tree adds to.
    pub output: usize,
    /// The nodes, as the model holds them (children after their parent).
    pub nodes: Cow<'m, [Node]>,
    /// Per node: the leaf's number (0 for splits).
    pub leaf: Vec<f64>,
    /// Per node: the training weight that reached it, when recorded.
    pub cover: Option<&'m [f32]>,
}

/// A model as the export formats see it.
pub(crate) struct ExportedTrees<'m> {
    /// Outputs per row: classes for softmax boosting and forest
    /// classification, else 1.
    pub outputs: usize,
    /// How the outputs are made.
    pub combine: Combine,
    /// Rounds: tree `i` belongs to round `i / outputs` and adds to output
    /// `i % outputs`.
    pub trees: Vec<ExportedTree<'m>>,
}

impl ExportedTrees<'_> {
    /// The number of rounds (a forest's trees).
    pub fn rounds(&self) -> usize {
        self.trees.len() / self.outputs.max(1)
    }
}

impl Model {
    /// The model's trees as the export formats write them; an error names
    /// what no format can hold.
    pub(crate) fn exported_trees(&self) -> std::result::Result<ExportedTrees<'_>, String> {
        let cover = |t: usize| self.cover.as_ref().filter(|c| c.len() == self.trees.len()).map(|c| c.tree(t));
        let leaf_numbers = |nodes: &[Node], values: &[f64], pick: &dyn Fn(&[f64]) -> f64, width: usize| {
            nodes
                .iter()
                .map(|node| match node {
                    Node::Leaf { value } => pick(&values[*value as usize..*value as usize + width]),
                    Node::Split { .. } => 0.0,
                })
                .collect::<Vec<f64>>()
        };
        match &self.boosting {
            Some(boosting) => {
                let outputs = boosting.outputs.max(1);
                let mut trees: Vec<ExportedTree<'_>> = (0..self.trees.len())
                    .map(|t| {
                        let tree = self.trees.get(t).expect("t < the number of trees");
                        ExportedTree {
                            output: t % outputs,
                            nodes: Cow::Borrowed(&tree.nodes[..]),
                            leaf: leaf_numbers(&tree.nodes, &tree.values, &|v| v[0], 1),
                            cover: cover(t),
                        }
                    })
                    .collect();
                // A model without trees still predicts its base score.
                if trees.len() < outputs {
                    trees = (0..outputs)
                        .map(|output| ExportedTree {
                            output,
                            nodes: Cow::Owned(vec![Node::Leaf { value: 0 }]),
                            leaf: vec![0.0],
                            cover: None,
                        })
                        .collect();
                }
                for (tree, base) in trees.iter_mut().zip(&boosting.base_score) {
                    for (node, leaf) in tree.nodes.iter().zip(tree.leaf.iter_mut()) {
                        if matches!(node, Node::Leaf { .. }) {
                            *leaf += base;
                        }
                    }
                }
                Ok(ExportedTrees { outputs, combine: Combine::Sum(boosting.loss), trees })
            }
            None => {
                let width = self.leaf_width();
                let votes = self.task == Task::Classification && self.voting == Voting::Unweighted;
                let mut trees = Vec::with_capacity(self.trees.len() * width);
                for t in 0..self.trees.len() {
                    let tree = self.trees.get(t).expect("t < the number of trees");
                    for output in 0..width {
                        let pick = |v: &[f64]| match votes {
                            true => f64::from(u8::from(arg_max(v) == output)),
                            false => v[output],
                        };
                        trees.push(ExportedTree {
                            output,
                            nodes: Cow::Borrowed(&tree.nodes[..]),
                            leaf: leaf_numbers(&tree.nodes, &tree.values, &pick, width),
                            cover: cover(t),
                        });
                    }
                }
                if trees.is_empty() {
                    return Err("the model has no trees".into());
                }
                Ok(ExportedTrees { outputs: width, combine: Combine::Mean, trees })
            }
        }
    }
}
