//! The node covers in the model bytes (format 4), after the trees:
//!
//! ```text
//! u64                     trees covered: 0 (no covers) or the model's tree count
//! per tree:  u64          its node count n
//!            u8           encoding: 0 = n little-endian f32, 1 = n unsigned LEB128 integers
//!            u64          the length in bytes of what follows
//!            ...          the covers, in node order
//! ```
//!
//! A forest's covers are row counts (with unit sample weights), most of
//! them small: as integers they take a byte or two where an f32 takes four.

use std::io::Read;

use crate::format::payload::Payload;
use crate::model::node_cover::NodeCover;

/// Covers as little-endian f32s.
const FLOATS: u8 = 0;
/// Covers as unsigned LEB128 integers (every cover a whole number below 2^32).
const INTEGERS: u8 = 1;

/// Hands `f` the covers' bytes, the count of trees covered excepted.
pub(crate) fn visit(cover: &NodeCover, f: &mut impl FnMut(&[u8])) {
    let mut bytes = Vec::new();
    for tree in cover.trees() {
        bytes.clear();
        let integers = tree.iter().all(|&c| c >= 0.0 && c.fract() == 0.0 && c < 4_294_967_296.0);
        if integers {
            for &c in tree {
                let mut v = c as u64;
                loop {
                    let byte = (v & 0x7f) as u8;
                    v >>= 7;
                    if v == 0 {
                        bytes.push(byte);
                        break;
                    }
                    bytes.push(byte | 0x80);
                }
            }
        } else {
            bytes.extend(tree.iter().flat_map(|c| c.to_le_bytes()));
        }
        f(&(tree.len() as u64).to_le_bytes());
        f(&[if integers { INTEGERS } else { FLOATS }]);
        f(&(bytes.len() as u64).to_le_bytes());
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
        payload.read_into(&mut bytes, 1)?;
        let encoding = bytes[0];
        let len = payload.u64()?;
        payload.read_into(&mut bytes, len).map_err(|e| format!("tree {t}'s node covers: {e}"))?;
        let covers = match encoding {
            FLOATS if Some(len) == n.checked_mul(4) => {
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect()
            }
            INTEGERS => integers(&bytes).ok_or_else(|| format!("tree {t}'s node covers are not whole numbers"))?,
            _ => return Err(format!("tree {t}: {len} bytes of node covers in encoding {encoding}")),
        };
        let covers: Vec<f32> = covers;
        if covers.len() as u64 != n {
            return Err(format!("tree {t}: {} node covers where {n} were announced", covers.len()));
        }
        trees.push(covers);
    }
    Ok(Some(NodeCover::new(trees)))
}

/// The LEB128 integers of `bytes`, none cut short and none of more than 32 bits.
fn integers(bytes: &[u8]) -> Option<Vec<f32>> {
    let mut out = Vec::new();
    let (mut value, mut shift) = (0u64, 0);
    for &b in bytes {
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            out.push(u32::try_from(value).ok()? as f32);
            (value, shift) = (0, 0);
        } else if shift > 28 {
            return None;
        }
    }
    (shift == 0).then_some(out)
}
