//! The SQL reference: every arbor function's [`Documentation`], rendered as
//! one Markdown page (`docs/sql-functions.md` is this page, checked by a test).

use arbor_ensemble::{Algorithm, AlgorithmChoice, Task, TrainParams};
use datafusion::logical_expr::{DocSection, Documentation};

use crate::sql_options::SQL_KEYS;
use crate::{aggregate_functions, scalar_functions};

/// The documentation section all of arbor's functions belong to.
pub const DOC_SECTION: DocSection = DocSection {
    include: true,
    label: "Decision forest functions",
    description: Some("Train, apply and inspect decision forests (random forests, extra trees, gradient boosting)."),
};

/// Every arbor function's name and documentation, in alphabetical order.
pub fn function_docs() -> Vec<(String, Documentation)> {
    let mut docs: Vec<(String, Documentation)> = scalar_functions()
        .iter()
        .filter_map(|f| f.documentation().map(|d| (f.name().to_owned(), d.clone())))
        .chain(aggregate_functions().iter().filter_map(|f| f.documentation().map(|d| (f.name().to_owned(), d.clone()))))
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    docs
}

/// The SQL reference page in Markdown, in the layout of DataFusion's function pages.
pub fn reference_markdown() -> String {
    let docs = function_docs();
    let mut page = String::new();
    page.push_str("<!-- Generated from the functions' documentation by arbor_datafusion::reference_markdown;\n");
    page.push_str(
        "     run `ARBOR_UPDATE_DOCS=1 cargo test -p arbor-datafusion --test sql_reference` to refresh.\n     \
         The examples' printed results are arbor's own output (a test runs each and compares): regression pins,\n     \
         not references. -->\n\n",
    );
    page.push_str(&format!("# {}\n\n", DOC_SECTION.label));
    if let Some(description) = DOC_SECTION.description {
        page.push_str(&format!("{description}\n\n"));
    }
    page.push_str(
        "`arbor_datafusion::register(&ctx)` adds them to a DataFusion `SessionContext`; `arbor sql` has them \
         registered. A model is a struct column: `model`, its bytes in arbor's model format (the same bytes \
         `arbor train` writes), and `prediction`, a NULL slot whose type is the type of its predictions, so the \
         type survives scalar subqueries, joins and Parquet files read back with any settings. The functions \
         also take a model's bare bytes (Binary).\n\n",
    );
    for (name, _) in &docs {
        page.push_str(&format!("- [{name}](#{name})\n"));
    }
    for (name, doc) in &docs {
        page.push_str(&format!("\n## `{name}`\n\n{}\n\n", doc.description));
        page.push_str(&format!("```sql\n{}\n```\n", doc.syntax_example));
        if let Some(arguments) = &doc.arguments {
            page.push_str("\n### Arguments\n\n");
            for (arg, text) in arguments {
                page.push_str(&format!("- **{arg}**: {text}\n"));
            }
        }
        if let Some(example) = &doc.sql_example {
            page.push_str(&format!("\n### Example\n\n```sql\n{}\n```\n", example.trim_end()));
        }
        if let Some(related) = &doc.related_udfs {
            page.push_str("\n### Related functions\n\n");
            for other in related {
                page.push_str(&format!("- [{other}](#{other})\n"));
            }
        }
    }
    page.push_str(&options_table());
    page.push_str(&sql_options_table());
    page
}

/// The keys only `train_forest` takes, from the list its parser reads.
fn sql_options_table() -> String {
    let mut table = String::from("\n## SQL options\n\n");
    table.push_str(
        "Keys of `train_forest`'s options string that `arbor train --set` does not take: they decide what SQL \
         does with the function's arguments and groups.\n\n",
    );
    table.push_str("| key | default | meaning |\n|---|---|---|\n");
    for key in &SQL_KEYS {
        table.push_str(&format!("| `{}` | {} | {} |\n", key.name, key.default, key.description));
    }
    table
}

/// Features assumed when the options table resolves `max_features`.
const EXAMPLE_FEATURES: usize = 16;

/// The `train_forest` options and their defaults, from the same code that applies them.
fn options_table() -> String {
    let defaults = |algorithm: Algorithm, task: Task| {
        let params = TrainParams { algorithm: AlgorithmChoice(algorithm), ..TrainParams::default() };
        let loss = params.boosting.resolve_loss(task, 2).ok();
        params.describe(task, EXAMPLE_FEATURES, loss)
    };
    let column = |algorithm: Algorithm| -> Vec<(String, String)> {
        let classification = defaults(algorithm, Task::Classification);
        let regression = defaults(algorithm, Task::Regression);
        classification
            .into_iter()
            .zip(regression)
            .filter(|((key, _), _)| key != "task")
            .map(|((key, c), (_, r))| {
                let value =
                    if c == r { format!("`{c}`") } else { format!("`{c}` (classification), `{r}` (regression)") };
                (key, value)
            })
            .collect()
    };
    let mut forest = column(Algorithm::RandomForest);
    let mut boosting = column(Algorithm::GradientBoosting);
    // A loss's own parameters are recorded with that loss only: their rows
    // come from boosting with each regression loss.
    for loss in ["quantile", "huber", "absolute", "poisson", "gamma", "tweedie"] {
        let params = TrainParams::parse_options(&format!("algorithm=gradient-boosting loss={loss}"))
            .expect("every regression loss parses");
        let resolved = params.boosting.resolve_loss(Task::Regression, 0).ok();
        for (key, value) in params.describe(Task::Regression, EXAMPLE_FEATURES, resolved) {
            if key != "task" && !boosting.iter().any(|(k, _)| *k == key) {
                boosting.push((key, format!("`{value}` (with `loss={loss}`)")));
            }
        }
    }
    // Constraints and class weights are recorded only when given: none by default.
    for column in [&mut forest, &mut boosting] {
        column.push(("monotone".into(), "none (`feature:+1,other:-1`)".into()));
        column.push(("interaction_constraints".into(), "none (`[a,b],[c,d,e]`)".into()));
        column.push(("class_weight".into(), "none (`balanced` or `class:weight,...`)".into()));
    }
    boosting.push(("scale_pos_weight".into(), "`1` (two classes)".into()));
    let mut keys: Vec<&String> = forest.iter().map(|(k, _)| k).collect();
    for (key, _) in &boosting {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let lookup = |pairs: &[(String, String)], key: &str| {
        pairs.iter().find(|(k, _)| k == key).map_or_else(|| "—".to_owned(), |(_, v)| v.clone())
    };
    let mut table = String::from("\n## Training options\n\n");
    table.push_str(&format!(
        "The keys of `train_forest`'s options string, also `arbor train --set KEY=VALUE`, with their defaults. \
         `task` defaults from the label's type. `max_features` is shown for {EXAMPLE_FEATURES} features: \
         `sqrt(p)` for classification and `p/3` for regression forests, all of them for boosting; it also \
         accepts an integer, `sqrt`, `third` or `all`. `loss` is shown for two classes; more classes, or a \
         single one, use `softmax`; regression also takes `quantile`, `huber`, `absolute`, `poisson`, `gamma` \
         and `tweedie` (docs/algorithms.md, \"Losses\"), whose parameters close the table; `monotone` (docs/algorithms.md, \"Monotone constraints\") takes numeric \
         features of either algorithm, `interaction_constraints` (\"Interaction constraints\") sets of features, \
         `criterion=poisson` (\"Split criteria\") regression forests of counts, `criterion=absolute_error` forests of medians, `class_weight` multiplies each class's rows' weights. `max_depth=0` means unlimited depth, `max_leaf_nodes=0` depth-first growth. \
         Unknown keys and out-of-range values are errors naming the key.\n\n"
    ));
    table.push_str("| key | `algorithm=random-forest` | `algorithm=gradient-boosting` |\n|---|---|---|\n");
    for key in keys {
        table.push_str(&format!("| `{key}` | {} | {} |\n", lookup(&forest, key), lookup(&boosting, key)));
    }
    table
}
