//! Training data and what is read from it: the checked feature and label
//! columns ([`dataset`], [`label`]), the rows as bins ([`binned_data`]), on a model's own bins for continued training ([`model_bins`]), their canonical row order
//! ([`canonical_order`]), the first pass that decides the bins ([`summary`]),
//! and the hash maps keyed by float bits that the tree
//! forms share ([`key_map`]).

pub(crate) mod binned_data;
pub(crate) mod canonical_order;
pub(crate) mod dataset;
pub(crate) mod key_map;
pub(crate) mod label;
pub(crate) mod model_bins;
pub(crate) mod sample_encoding;
pub(crate) mod summary;
