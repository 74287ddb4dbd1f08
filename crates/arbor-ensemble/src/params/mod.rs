//! Training parameters: one set of names for the Rust API, `--set` and SQL
//! options (DESIGN.md "Parameters"), parsed and validated in one place.
//!
//! The typed parameters live in [`types`]; [`keys`] is the one table of
//! option keys (name, algorithms, setter, range check, report), from which
//! [`options`] derives parsing (`set`), `validate` and `describe`; [`rules`]
//! holds the range rule each numeric key applies both when parsed and when
//! validated.

pub(crate) mod keys;
pub(crate) mod options;
pub(crate) mod rules;
pub(crate) mod types;
