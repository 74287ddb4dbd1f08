//! A page of `docs/` generated from the code (the SQL reference, the
//! parameter reference) and committed: the tests that own each page include
//! this file with `#[path]` and keep the committed page equal to the code's.

use std::path::Path;

/// Asserts that the committed page at `path` is `generated`; with
/// `ARBOR_UPDATE_DOCS` set, writes it first. `refresh` is the command that
/// regenerates the page, for the failure message.
pub fn assert_page_current(path: &Path, generated: &str, refresh: &str) {
    if std::env::var_os("ARBOR_UPDATE_DOCS").is_some() {
        std::fs::write(path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(committed == generated, "{} is out of date; run `{refresh}`", path.display());
}
