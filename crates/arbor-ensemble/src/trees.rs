//! A model's trees in the two forms their uses need, each built from the
//! other on first use.
//!
//! Training and the model builder produce node lists ([`Tree`]); reports,
//! export and encoding read them. Prediction walks the trees over ranks
//! ([`RankedForest`]) when the model's splits allow them, built from the
//! flat layout ([`FlatTree`]) on first use, and walks the flat layout
//! otherwise. A model file loads straight into the trees over ranks when it
//! can (its flat layout then decodes from the file's kept sections only if
//! asked for), else into the flat layout: scoring a file never pays for the
//! forms it does not walk.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::flat_tree::FlatTree;
use crate::ranked_forest::RankedForest;
use crate::tree::{Tree, TreeShape};

/// The trees of a model. It reads as a slice of [`Tree`]s; `len` and
/// `is_empty` do not build the node lists.
#[derive(Clone, Default)]
pub struct Trees {
    lists: OnceLock<Vec<Tree>>,
    flat: OnceLock<Vec<FlatTree>>,
    ranked: OnceLock<Option<RankedForest>>,
    /// Decodes the flat layout of trees loaded straight over ranks.
    decode_flat: Option<Arc<DecodeFlat>>,
}

/// Decodes a loaded model's trees into the flat layout, from its kept bytes.
pub(crate) type DecodeFlat = dyn Fn() -> Vec<FlatTree> + Send + Sync;

impl Trees {
    /// Trees decoded straight into the flat layout (already checked).
    pub(crate) fn from_flat(flat: Vec<FlatTree>) -> Trees {
        Trees { flat: OnceLock::from(flat), ..Trees::default() }
    }

    /// Trees loaded straight over ranks (already checked), whose flat layout
    /// `decode_flat` gives if it is ever needed.
    pub(crate) fn from_ranked(ranked: RankedForest, decode_flat: Arc<DecodeFlat>) -> Trees {
        Trees { ranked: OnceLock::from(Some(ranked)), decode_flat: Some(decode_flat), ..Trees::default() }
    }

    /// The number of trees.
    pub fn len(&self) -> usize {
        match (self.lists.get(), self.flat.get(), self.ranked.get()) {
            (Some(lists), _, _) => lists.len(),
            (None, Some(flat), _) => flat.len(),
            (None, None, Some(Some(ranked))) => ranked.len(),
            _ => 0,
        }
    }

    /// No trees at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size and shape of every tree, read from whichever form is built (a
    /// loaded model's flat trees know theirs without the node lists).
    pub fn shapes(&self) -> Vec<TreeShape> {
        match (self.lists.get(), self.flat.get(), self.ranked.get()) {
            (None, Some(flat), _) => flat.iter().map(FlatTree::shape).collect(),
            (None, None, Some(Some(ranked))) => (0..ranked.len()).map(|t| ranked.shape(t)).collect(),
            _ => self.iter().map(Tree::shape).collect(),
        }
    }

    /// Appends a tree.
    pub fn push(&mut self, tree: Tree) {
        self.node_lists();
        self.flat = OnceLock::new();
        self.ranked = OnceLock::new();
        self.decode_flat = None;
        self.lists.get_mut().expect("built just above").push(tree);
    }

    /// The node lists, built from the flat trees (themselves built if need be) the first time.
    fn node_lists(&self) -> &[Tree] {
        self.lists.get_or_init(|| self.flat().par_iter().map(FlatTree::to_tree).collect())
    }

    /// The trees were loaded straight over ranks and nothing has asked for
    /// their flat layout yet.
    #[cfg(test)]
    pub(crate) fn loaded_over_ranks(&self) -> bool {
        self.decode_flat.is_some() && self.flat.get().is_none() && self.lists.get().is_none()
    }

    /// The node lists if they exist, without building them.
    pub(crate) fn lists_if_built(&self) -> Option<&[Tree]> {
        self.lists.get().map(Vec::as_slice)
    }

    /// The flat trees, built from the node lists, or decoded, the first time.
    pub(crate) fn flat(&self) -> &[FlatTree] {
        self.flat.get_or_init(|| match (self.lists.get(), &self.decode_flat) {
            (Some(lists), _) => lists.par_iter().map(FlatTree::new).collect(),
            (None, Some(decode)) => decode(),
            (None, None) => Vec::new(),
        })
    }

    /// The trees over ranks, built from the flat trees the first time, or
    /// `None` when the compact nodes cannot express this model's splits.
    /// `n_features` is the model's feature count (the same at every call).
    pub(crate) fn ranked(&self, n_features: usize) -> Option<&RankedForest> {
        self.ranked.get_or_init(|| RankedForest::new(self.flat(), n_features)).as_ref()
    }
}

impl From<Vec<Tree>> for Trees {
    fn from(lists: Vec<Tree>) -> Trees {
        Trees { lists: OnceLock::from(lists), ..Trees::default() }
    }
}

impl Deref for Trees {
    type Target = [Tree];

    fn deref(&self) -> &[Tree] {
        self.node_lists()
    }
}

impl<'a> IntoIterator for &'a Trees {
    type Item = &'a Tree;
    type IntoIter = std::slice::Iter<'a, Tree>;

    fn into_iter(self) -> Self::IntoIter {
        self.node_lists().iter()
    }
}

impl PartialEq for Trees {
    fn eq(&self, other: &Trees) -> bool {
        self.len() == other.len() && **self == **other
    }
}

impl std::fmt::Debug for Trees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Trees {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.node_lists().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Trees {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Trees, D::Error> {
        Vec::<Tree>::deserialize(deserializer).map(Trees::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Node, SplitTest};

    fn stump(threshold: f64) -> Tree {
        Tree {
            nodes: vec![
                Node::Split {
                    feature: 0,
                    test: SplitTest::LessOrEqual(threshold),
                    default_left: true,
                    left: 1,
                    right: 2,
                },
                Node::Leaf { value: 0 },
                Node::Leaf { value: 1 },
            ],
            values: vec![-1.0, 1.0],
        }
    }

    #[test]
    fn each_form_is_built_from_the_other() {
        let trees = Trees::from(vec![stump(0.5), stump(2.0)]);
        let flat = trees.flat().to_vec();
        assert_eq!(flat[1].nodes[0].threshold, 2.0);
        let loaded = Trees::from_flat(flat);
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded.shapes(), trees.shapes());
        assert_eq!(loaded.shapes()[0], TreeShape { nodes: 3, leaves: 2, depth: 1 });
        assert!(loaded.lists_if_built().is_none(), "len does not build the node lists");
        assert_eq!(loaded, trees);
        assert!(loaded.lists_if_built().is_some());
    }

    #[test]
    fn pushing_a_tree_drops_the_stale_flat_form() {
        let mut trees = Trees::from(vec![stump(0.5)]);
        assert_eq!(trees.flat().len(), 1);
        trees.push(stump(1.0));
        assert_eq!(trees.len(), 2);
        assert_eq!(trees.flat().len(), 2);
    }
}
