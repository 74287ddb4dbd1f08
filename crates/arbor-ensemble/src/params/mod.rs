//! Training parameters: one set of names for the Rust API, `--set`, SQL and
//! Python options (`docs/parameters.md`, generated from the key table),
//! parsed and checked in one place.
//!
//! The typed parameters live in [`types`]: the tree settings both
//! algorithms hold ([`TreeParams`](types::TreeParams)) and each algorithm's
//! own. [`keys`] is the one table of option keys (name, algorithms, meaning,
//! setter, range check, report), from which [`options`] derives parsing
//! (`set`), `check` and `describe`, and [`reference`] the reference page;
//! [`rules`] holds the range rule each numeric key applies both when parsed
//! and when checked. `check` gives the [`CheckedParams`](checked::CheckedParams)
//! training takes ([`checked`]).

pub(crate) mod checked;
pub(crate) mod class_weight;
pub(crate) mod interactions;
pub(crate) mod keys;
pub(crate) mod monotone;
pub(crate) mod options;
pub(crate) mod reference;
pub(crate) mod rules;
pub(crate) mod types;
