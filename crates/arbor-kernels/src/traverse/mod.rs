//! Batched tree traversal for prediction: the node types, the walk over
//! values, the walk over ranks with its gathered forms, QuickScorer's
//! bitvectors for boosted trees, and values' ranks.

pub(crate) mod flat;
#[cfg(target_arch = "x86_64")]
pub(crate) mod gather;
pub(crate) mod nodes;
pub(crate) mod quick_scorer;
pub(crate) mod ranked;
pub(crate) mod threshold_rank;
