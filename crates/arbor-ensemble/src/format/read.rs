//! Reading the trees of a model payload (format 2 to 4) into the forms
//! prediction walks.

use std::io::Read;

use rayon::prelude::*;

use crate::format::columns::Columns;
use crate::format::decode::{decode_columns, AllDecoded};
use crate::format::encoded::EncodedTrees;
use crate::format::payload::Payload;
use crate::format::ranked_columns;
use crate::format::tree_sections::Sections;
use crate::model::feature::Feature;
use crate::model::trees::Trees;

/// Reads the trees of a format `version` (2 to 4) payload, checking every
/// length and every tree against the model's `features` and `leaf_width`.
///
/// When the trees over ranks can express the model (every forest and
/// boosted model arbor trains), the trees load straight into them: nodes
/// and leaves go from the columns to the 8-byte nodes prediction walks,
/// and the flat layout and node lists are decoded from the kept sections
/// only if something asks for them. Otherwise trees whose splits all have
/// their right child right after their left one decode into the flat
/// layout, and any other tree makes the model hold node lists, which
/// [`crate::Model::validate`] checks.
pub(crate) fn read<R: Read>(
    payload: &mut Payload<R>,
    version: u32,
    features: &[Feature],
    leaf_width: usize,
) -> Result<Trees, String> {
    let n_trees = payload.u64()?;
    // Not preallocated from the count: a corrupt count runs out of bytes instead.
    let mut sections = Vec::new();
    for _ in 0..n_trees {
        let len = payload.u64()?;
        let mut section = Vec::new();
        payload.read_into(&mut section, len)?;
        sections.push(section);
    }
    let columns: Vec<Columns<'_>> = sections
        .par_iter()
        .enumerate()
        .map(|(t, section)| Columns::parse(section, version, leaf_width).map_err(|e| format!("tree {t}: {e}")))
        .collect::<Result<_, _>>()?;
    let ranked = (version >= 3).then(|| ranked_columns::ranked_forest(&columns, features, leaf_width));
    if let Some(ranked) = ranked.flatten() {
        drop(columns);
        let encoded = EncodedTrees::new(Sections::Owned(sections), features.to_vec(), leaf_width);
        return Ok(Trees::from_ranked(ranked, encoded));
    }
    Ok(match decode_columns(columns, features, leaf_width)? {
        AllDecoded::Flat(flat) => Trees::from_flat(flat),
        AllDecoded::Lists(lists) => Trees::from(lists),
    })
}
