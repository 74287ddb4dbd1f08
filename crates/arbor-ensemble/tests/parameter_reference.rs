//! The parameter reference page, `docs/parameters.md`: generated from the
//! key table and kept in the repository; this test keeps the two equal.

use std::path::Path;

#[path = "../../../tests/support/generated_page.rs"]
mod generated_page;

#[test]
fn parameter_reference_is_current() {
    generated_page::assert_page_current(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/parameters.md"),
        &arbor_ensemble::parameter_reference(),
        "ARBOR_UPDATE_DOCS=1 cargo test -p arbor-ensemble --test parameter_reference",
    );
}

#[test]
fn every_key_is_in_the_reference() {
    let page = arbor_ensemble::parameter_reference();
    for key in arbor_ensemble::OPTION_KEYS {
        assert!(page.contains(&format!("| `{key}` |")), "{key} is missing");
    }
}
