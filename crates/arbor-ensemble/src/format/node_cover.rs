//! The node covers in the model bytes (format 4), after the trees:
//!
//! ```text
//! u64                 trees covered: 0 (no covers) or the model's tree count
//! per tree:  u64      its node count n
//!            n × f32  each node's cover, little endian, in node order
//! ```

use std::io::Read;

use crate::format::payload::Payload;
use crate::model::node_cover::NodeCover;

/// Hands `f` the covers' bytes, the count of trees covered excepted.
pub(crate) fn visit(cover: &NodeCover, f: &mut impl FnMut(&[u8])) {
    let mut bytes = Vec::new();
    for tree in cover.trees() {
        f(&(tree.len() as u64).to_le_bytes());
        bytes.clear();
        bytes.extend(tree.iter().flat_map(|c| c.to_le_bytes()));
        f(&bytes);
    }
}

/// Reads the node covers; their count against the trees is checked with
/// the whole model.
pub(crate) fn read<R: Read>(payload: &mut Payload<R>) -> Result<Option<NodeCover>, String> {
    let n_trees = payload.u64()?;
    if n_trees == 0 {
        return Ok(None);
    }
    let mut trees = Vec::new();
    let mut bytes = Vec::new();
    for t in 0..n_trees {
        let n = payload.u64()?;
        let len = n.checked_mul(4).ok_or_else(|| format!("tree {t}: {n} node covers"))?;
        payload.read_into(&mut bytes, len).map_err(|e| format!("tree {t}'s node covers: {e}"))?;
        trees.push(bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect());
    }
    Ok(Some(NodeCover::new(trees)))
}
