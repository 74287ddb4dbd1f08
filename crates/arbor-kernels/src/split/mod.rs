//! Split finding: the best split of a feature from its histogram, or a
//! random one from its rows, scored by a [`Criterion`](criterion::Criterion);
//! or, by absolute error, from the node's rows ranked by response.

pub(crate) mod absolute_error;
pub(crate) mod best;
pub(crate) mod candidate;
pub(crate) mod criterion;
pub(crate) mod monotone;
pub(crate) mod random;
pub(crate) mod rule;
pub(crate) mod scan;
pub(crate) mod threshold_lanes;
