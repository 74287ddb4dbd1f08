//! The SQL reference page: generated from the functions' documentation, kept
//! in the repository, and every example in it runs and prints what it shows.

use std::path::PathBuf;

use arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/sql-functions.md")
}

#[path = "../../../tests/support/generated_page.rs"]
mod generated_page;

#[test]
fn reference_page_is_current() {
    generated_page::assert_page_current(
        &page_path(),
        &arbor_datafusion::reference_markdown(),
        "ARBOR_UPDATE_DOCS=1 cargo test -p arbor-datafusion --test sql_reference",
    );
}

#[test]
fn every_function_is_documented() {
    let documented: Vec<String> = arbor_datafusion::function_docs().into_iter().map(|(name, _)| name).collect();
    let mut names: Vec<String> = arbor_datafusion::scalar_functions()
        .iter()
        .map(|f| f.name().to_owned())
        .chain(arbor_datafusion::aggregate_functions().iter().map(|f| f.name().to_owned()))
        .collect();
    names.sort();
    assert_eq!(documented, names);
    for (name, doc) in arbor_datafusion::function_docs() {
        assert!(doc.syntax_example.starts_with(&format!("{name}(")), "{name}: {}", doc.syntax_example);
        assert!(doc.sql_example.is_some(), "{name} has no example");
        assert!(doc.related_udfs.iter().flatten().all(|r| documented.contains(r)), "{name}: unknown related function");
    }
}

/// An example's statements, each with the table it prints (empty for none).
fn steps(example: &str) -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = Vec::new();
    for line in example.lines() {
        match line.strip_prefix("> ") {
            Some(sql) => steps.push((sql.to_owned(), String::new())),
            None => {
                let (_, expected) = steps.last_mut().expect("an example starts with a '> ' statement");
                expected.push_str(line);
                expected.push('\n');
            }
        }
    }
    steps
}

#[tokio::test]
async fn examples_print_what_they_show() {
    for (name, doc) in arbor_datafusion::function_docs() {
        let ctx = SessionContext::new();
        arbor_datafusion::register(&ctx);
        for (sql, expected) in steps(doc.sql_example.as_deref().unwrap_or_default()) {
            let df = ctx.sql(&sql).await.unwrap_or_else(|e| panic!("{name}: {sql}: {e}"));
            let batches = df.collect().await.unwrap_or_else(|e| panic!("{name}: {sql}: {e}"));
            let printed = if batches.iter().all(|b| b.num_columns() == 0 || b.num_rows() == 0) && expected.is_empty() {
                String::new()
            } else {
                format!("{}\n", pretty_format_batches(&batches).unwrap())
            };
            assert_eq!(printed, expected, "{name}: {sql}");
        }
    }
}
