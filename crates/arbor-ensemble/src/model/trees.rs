//! A model's trees in the forms their uses need, each built from another
//! on first use.
//!
//! Boosting and the model builder produce node lists ([`Tree`]); reports
//! and export read them. Prediction walks the trees over ranks
//! ([`RankedForest`]) when the model's splits allow them, built on first
//! use, and walks the flat layout ([`FlatTree`]) otherwise. A forest keeps
//! each tree encoded as soon as it is grown, and a model file loads straight
//! into the trees over ranks when it can, keeping its encoded trees
//! ([`EncodedTrees`]): the other forms decode from those only if asked for,
//! so neither training nor scoring pays for the forms it does not use.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::format::encode;
use crate::format::encoded::EncodedTrees;
use crate::model::flat_tree::FlatTree;
use crate::model::ranked_forest::RankedForest;
use crate::model::tree::{Tree, TreeShape};

/// The trees of a model. It reads as a slice of [`Tree`]s; `len` and
/// `is_empty` do not build the node lists.
#[derive(Clone, Default)]
pub struct Trees {
    lists: OnceLock<Vec<Tree>>,
    flat: OnceLock<Vec<FlatTree>>,
    ranked: OnceLock<Option<RankedForest>>,
    /// The trees in the model format, when they were grown or loaded so.
    encoded: Option<Arc<EncodedTrees>>,
}

impl Trees {
    /// Trees decoded straight into the flat layout (already checked).
    pub(crate) fn from_flat(flat: Vec<FlatTree>) -> Trees {
        Trees { flat: OnceLock::from(flat), ..Trees::default() }
    }

    /// Trees loaded straight over ranks (already checked) from `encoded`.
    pub(crate) fn from_ranked(ranked: RankedForest, encoded: EncodedTrees) -> Trees {
        Trees { ranked: OnceLock::from(Some(ranked)), encoded: Some(Arc::new(encoded)), ..Trees::default() }
    }

    /// Trees held in the model format only, every other form built on first use.
    pub(crate) fn from_encoded(encoded: EncodedTrees) -> Trees {
        Trees { encoded: Some(Arc::new(encoded)), ..Trees::default() }
    }

    /// The number of trees.
    pub fn len(&self) -> usize {
        match (self.lists.get(), self.flat.get(), &self.encoded) {
            (Some(lists), _, _) => lists.len(),
            (None, Some(flat), _) => flat.len(),
            (None, None, Some(encoded)) => encoded.len(),
            (None, None, None) => 0,
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
            (None, None, _) if self.encoded.is_some() => self.flat().iter().map(FlatTree::shape).collect(),
            _ => self.iter().map(Tree::shape).collect(),
        }
    }

    /// Appends a tree.
    pub fn push(&mut self, tree: Tree) {
        self.node_lists();
        self.flat = OnceLock::new();
        self.ranked = OnceLock::new();
        self.encoded = None;
        self.lists.get_mut().expect("built just above").push(tree);
    }

    /// Tree `index`'s nodes and leaf values, to walk or check; the node
    /// lists are built from the model's layout the first time one is asked for.
    pub fn get(&self, index: usize) -> Option<&Tree> {
        self.node_lists().get(index)
    }

    /// The node lists, built from the flat trees (themselves built if need be) the first time.
    fn node_lists(&self) -> &[Tree] {
        self.lists.get_or_init(|| self.flat().par_iter().map(FlatTree::to_tree).collect())
    }

    /// The trees are held encoded and nothing has decoded their flat layout
    /// or node lists.
    #[cfg(test)]
    pub(crate) fn held_encoded(&self) -> bool {
        self.encoded.is_some() && self.flat.get().is_none() && self.lists.get().is_none()
    }

    /// The trees were loaded straight over ranks and nothing has asked for
    /// their flat layout yet.
    #[cfg(test)]
    pub(crate) fn loaded_over_ranks(&self) -> bool {
        self.held_encoded() && matches!(self.ranked.get(), Some(Some(_)))
    }

    /// The node lists if they exist, without building them.
    pub(crate) fn lists_if_built(&self) -> Option<&[Tree]> {
        self.lists.get().map(Vec::as_slice)
    }

    /// The flat trees, built from the node lists, or decoded, the first time.
    pub(crate) fn flat(&self) -> &[FlatTree] {
        self.flat.get_or_init(|| match (self.lists.get(), &self.encoded) {
            (Some(lists), _) => lists.par_iter().map(FlatTree::new).collect(),
            (None, Some(encoded)) => encoded.flat(),
            (None, None) => Vec::new(),
        })
    }

    /// The trees in the model format: the kept encoding as it is, else the
    /// node lists encoded.
    pub(crate) fn bytes(&self, leaf_width: usize) -> TreeBytes<'_> {
        match &self.encoded {
            Some(encoded) => TreeBytes::Kept(encoded),
            None => {
                let mut out = Vec::new();
                encode::encode(self.node_lists(), leaf_width, &mut out);
                TreeBytes::Encoded(out)
            }
        }
    }

    /// The trees over ranks, built the first time (straight from the
    /// encoded trees when they allow it, else from the flat trees), or
    /// `None` when the compact nodes cannot express this model's splits.
    /// `n_features` is the model's feature count (the same at every call).
    pub(crate) fn ranked(&self, n_features: usize) -> Option<&RankedForest> {
        self.ranked
            .get_or_init(|| {
                let straight = self.encoded.as_ref().and_then(|encoded| encoded.ranked());
                straight.or_else(|| RankedForest::new(self.flat(), n_features))
            })
            .as_ref()
    }
}

/// A model's trees in the model format.
pub(crate) enum TreeBytes<'a> {
    /// Trees that were kept encoded.
    Kept(&'a EncodedTrees),
    /// Trees encoded just now.
    Encoded(Vec<u8>),
}

impl TreeBytes<'_> {
    /// Hands the bytes to `f` in order, in one or more pieces.
    pub(crate) fn visit(&self, f: &mut impl FnMut(&[u8])) {
        match self {
            TreeBytes::Kept(encoded) => encoded.visit(f),
            TreeBytes::Encoded(bytes) => f(bytes),
        }
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
    use crate::model::tree::{Node, SplitTest};

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
