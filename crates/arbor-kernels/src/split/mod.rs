//! Split finding: the best split of a feature from its histogram, or a
//! random one from its rows, scored by a [`Criterion`](criterion::Criterion).

pub(crate) mod best;
pub(crate) mod candidate;
pub(crate) mod criterion;
pub(crate) mod monotone;
pub(crate) mod random;
pub(crate) mod rule;
pub(crate) mod scan;
