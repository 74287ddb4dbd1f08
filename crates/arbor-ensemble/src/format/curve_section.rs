//! The training curve in the model bytes (format 5), after the node covers:
//!
//! ```text
//! u64                  rounds recorded r: 0 (no curve) or the rounds early stopping ran
//! per round:  f64      the loss on the training rows (little endian)
//!             f64      the loss on the validation rows
//! ```

use std::io::Read;

use crate::format::payload::Payload;
use crate::model::RoundLoss;

/// Bytes per recorded round.
const ROUND_LEN: u64 = 16;

/// The curve's bytes, its round count first.
pub(crate) fn bytes(curve: &[RoundLoss]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + curve.len() * ROUND_LEN as usize);
    out.extend_from_slice(&(curve.len() as u64).to_le_bytes());
    for round in curve {
        out.extend_from_slice(&round.training.to_le_bytes());
        out.extend_from_slice(&round.validation.to_le_bytes());
    }
    out
}

/// Reads the training curve; its length against the rounds run is checked
/// with the whole model.
pub(crate) fn read<R: Read>(payload: &mut Payload<R>) -> Result<Vec<RoundLoss>, String> {
    let rounds = payload.u64()?;
    let len = rounds
        .checked_mul(ROUND_LEN)
        .filter(|&len| len <= payload.remaining())
        .ok_or_else(|| format!("a training curve of {rounds} rounds runs past the payload"))?;
    let mut bytes = Vec::new();
    payload.read_into(&mut bytes, len)?;
    let f64_at = |at: usize| f64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
    Ok((0..rounds as usize).map(|r| RoundLoss { training: f64_at(r * 16), validation: f64_at(r * 16 + 8) }).collect())
}
