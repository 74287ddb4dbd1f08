//! Batched tree traversal for prediction: the node types, the walk over
//! values, the walk over ranks with its gathered forms, and values' ranks.

pub(crate) mod flat;
#[cfg(target_arch = "x86_64")]
pub(crate) mod gather;
pub(crate) mod nodes;
pub(crate) mod ranked;
pub(crate) mod threshold_rank;
