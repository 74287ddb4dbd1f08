//! Node cover: the training weight that reached each node of each tree.
//! TreeSHAP weighs the branches a feature's absence takes by it.

use std::sync::Arc;

use crate::model::tree::TreeShape;

/// Per tree, per node (in the order of [`crate::Tree::nodes`]), the
/// training weight that reached the node: the sum of sample weights for
/// random forests (bootstrap multiplicities included), the sum of hessians
/// for gradient boosting (XGBoost's cover), and what an imported file
/// records (XGBoost's `sum_hessian`, LightGBM's data counts). Stored as
/// 32-bit floats, as the model file keeps them; shared between clones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeCover {
    trees: Arc<Vec<Vec<f32>>>,
}

impl NodeCover {
    /// The covers of every tree, in tree order.
    pub(crate) fn new(trees: Vec<Vec<f32>>) -> NodeCover {
        NodeCover { trees: Arc::new(trees) }
    }

    /// Tree `t`'s covers, one per node.
    pub fn tree(&self, t: usize) -> &[f32] {
        &self.trees[t]
    }

    /// The number of trees covered.
    pub fn len(&self) -> usize {
        self.trees.len()
    }

    /// No trees covered.
    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// Every tree's covers, in tree order.
    pub(crate) fn trees(&self) -> &[Vec<f32>] {
        &self.trees
    }

    /// Checks the covers against the trees' `shapes`: one cover per node
    /// of every tree, each finite and not negative.
    pub(crate) fn check(&self, shapes: &[TreeShape]) -> Result<(), String> {
        if self.trees.len() != shapes.len() {
            return Err(format!("node covers for {} trees, but the model has {}", self.trees.len(), shapes.len()));
        }
        for (t, (cover, shape)) in self.trees.iter().zip(shapes).enumerate() {
            if cover.len() != shape.nodes {
                return Err(format!("tree {t}: {} node covers for {} nodes", cover.len(), shape.nodes));
            }
            if let Some((i, c)) = cover.iter().enumerate().find(|(_, c)| !c.is_finite() || **c < 0.0) {
                return Err(format!("tree {t}: node {i} has a cover of {c}"));
            }
        }
        Ok(())
    }
}
