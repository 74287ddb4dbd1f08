//! A tree's rows as byte records kept in node order: one record layout
//! (a row's bins, then a class key or a count and response), and what
//! reads records besides the histograms.

pub(crate) mod bin_range;
pub(crate) mod byte_layout;
pub(crate) mod count_key;
pub(crate) mod variance;
