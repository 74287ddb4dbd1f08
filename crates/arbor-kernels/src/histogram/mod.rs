//! Histograms of per-bin statistics over a node's rows: dense per feature
//! column, compact (occupied bins only), integer class counts, row-wise
//! over many features (float or quantized gradients), and from regression
//! records.

pub(crate) mod column;
pub(crate) mod compact;
pub(crate) mod count;
pub(crate) mod quantized;
pub(crate) mod row;
pub(crate) mod target;
pub(crate) mod value;
