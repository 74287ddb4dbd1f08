//! Trees kept as their format 3 sections, decoded to other forms on demand.

use rayon::prelude::*;

use crate::format::columns::Columns;
use crate::format::decode::{decode_sections, AllDecoded};
use crate::format::encode::visit_sections;
use crate::format::header::FORMAT_VERSION;
use crate::format::ranked_columns;
use crate::format::tree_sections::Sections;
use crate::model::feature::Feature;
use crate::model::flat_tree::FlatTree;
use crate::model::ranked_forest::RankedForest;

/// A model's trees kept as their format 3 sections, with what decoding them
/// needs. A forest holds its trees this way from the moment each is grown
/// (a tenth of the memory of node lists), and a loaded model keeps its
/// file's sections; either writes them again as they are, and decodes the
/// other forms from them only when something asks.
pub(crate) struct EncodedTrees {
    sections: Sections,
    features: Vec<Feature>,
    leaf_width: usize,
}

impl EncodedTrees {
    /// Sections in the format this build writes, encoded by [`encode_tree`](crate::format::encode::encode_tree)
    /// or read from a file and checked, so that they decode without error.
    pub(crate) fn new(sections: Sections, features: Vec<Feature>, leaf_width: usize) -> EncodedTrees {
        EncodedTrees { sections, features, leaf_width }
    }

    /// The number of trees.
    pub(crate) fn len(&self) -> usize {
        self.sections.len()
    }

    /// Hands `f` the trees in the model format, in pieces, as [`encode`](crate::format::encode::encode) would write them.
    pub(crate) fn visit(&self, f: &mut impl FnMut(&[u8])) {
        visit_sections(&self.sections.slices(), f);
    }

    /// The trees in the flat layout.
    pub(crate) fn flat(&self) -> Vec<FlatTree> {
        match decode_sections(&self.sections.slices(), FORMAT_VERSION, &self.features, self.leaf_width) {
            Ok(AllDecoded::Flat(flat)) => flat,
            Ok(AllDecoded::Lists(lists)) => lists.iter().map(FlatTree::new).collect(),
            Err(e) => unreachable!("encoded trees were checked or grown: {e}"),
        }
    }

    /// The trees over ranks, built straight from the sections, or `None`
    /// when the fast path refuses them.
    pub(crate) fn ranked(&self) -> Option<RankedForest> {
        let columns: Vec<Columns<'_>> = self
            .sections
            .slices()
            .into_par_iter()
            .map(|section| Columns::parse(section, FORMAT_VERSION, self.leaf_width).ok())
            .collect::<Option<_>>()?;
        ranked_columns::ranked_forest(&columns, &self.features, self.leaf_width)
    }
}
