//! The crate's layout: kernels grouped by family (`histogram`, `records`,
//! `partition`, `split`, `traverse`), and imports among its source files
//! running one way. A file that imports another (through `use crate::...`,
//! `super::...`, a `crate::a::b` path in its code, or a re-export of
//! `lib.rs`) never ends up imported by it, directly or through others:
//! types two families share live in a file below both, not in either.
//! Test modules at the end of a file (`#[cfg(test)]`) are left out: tests
//! may reach anywhere.
//!
//! The graph is read by `tests/support/module_graph.rs`, which
//! `arbor-ensemble`'s layout test shares.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[path = "../../../tests/support/module_graph.rs"]
mod module_graph;

use module_graph::{assert_no_cycle, cycle, imports, Module};

#[test]
fn imports_among_source_files_have_no_cycle() {
    assert_no_cycle("arbor-kernels", &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 20);
}

#[test]
fn a_cycle_is_found() {
    let module = |name: &str| -> Module { name.split("::").map(str::to_owned).collect() };
    let graph = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (from, to) in pairs {
            edges.entry(module(from)).or_default().insert(module(to));
            edges.entry(module(to)).or_default();
        }
        edges
    };
    assert_eq!(cycle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let found = cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).expect("a -> b -> c -> a");
    assert_eq!(found.len(), 3);
    // `super::` from a file names its folder's files; from a `mod.rs`, its parent's.
    let from_file = imports("use super::nodes::RankNode;\n", &module("traverse::ranked"), false);
    assert_eq!(from_file, vec![module("traverse::nodes::RankNode")]);
    let from_mod = imports("use super::dispatch::run;\n", &module("traverse::gather"), true);
    assert_eq!(from_mod, vec![module("traverse::dispatch::run")]);
    let nested = imports("use crate::split::{rule::{SplitRule, threshold_test}, Scan};\n", &module("x"), false);
    for path in ["split::rule::SplitRule", "split::rule::threshold_test", "split::Scan"] {
        assert!(nested.contains(&module(path)), "{path} in {nested:?}");
    }
}
