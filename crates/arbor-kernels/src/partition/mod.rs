//! The partition of a node's rows into its two children by a split rule:
//! rows by id (stable, with scratch) or row records (in place).

pub(crate) mod records;
pub(crate) mod rows;
