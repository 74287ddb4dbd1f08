//! Training data and what is read from it: the checked feature and label
//! columns ([`dataset`], [`label`]), their canonical row order
//! ([`canonical_order`]), the raw columns training may free early
//! ([`raw_columns`]), and the hash maps keyed by float bits that the tree
//! forms share ([`key_map`]).

pub(crate) mod canonical_order;
pub(crate) mod dataset;
pub(crate) mod key_map;
pub(crate) mod label;
pub(crate) mod raw_columns;
