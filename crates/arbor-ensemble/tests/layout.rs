//! The crate's layout: imports among its source files run one way. A file
//! that imports another (through `use crate::...`, `super::...` or a
//! re-export of `lib.rs`) never ends up imported by it, directly or through
//! others. Test modules at the end of a file (`#[cfg(test)]`) and `tests.rs`
//! files are left out: tests may reach anywhere.

use std::path::Path;

// The graph reader is shared with arbor-kernels' layout test, which also
// tests the reader itself; this test uses only its assertion.
#[allow(dead_code)]
#[path = "../../../tests/support/module_graph.rs"]
mod module_graph;

#[test]
fn imports_among_source_files_have_no_cycle() {
    module_graph::assert_no_cycle("arbor-ensemble", &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 50);
}
