//! The parameter reference, `docs/parameters.md`: every key of the table in
//! [`keys`](crate::params::keys), with its default (from the code's
//! `Default`s), the values it accepts and what it means. A test keeps the
//! committed page equal to this one.

use crate::params::keys::{Applies, KeySpec, Report, KEYS};
use crate::params::types::{Algorithm, AlgorithmChoice, Task, TrainParams};

/// The command that rewrites the page.
const REFRESH: &str = "ARBOR_UPDATE_DOCS=1 cargo test -p arbor-ensemble --test parameter_reference";

/// The parameter reference page (`docs/parameters.md`) in Markdown,
/// generated from the key table.
pub fn parameter_reference() -> String {
    let mut page = String::new();
    page.push_str(
        "<!-- Generated from the key table (crates/arbor-ensemble/src/params/keys.rs) by \
         arbor_ensemble::parameter_reference;\n",
    );
    page.push_str(&format!("     run `{REFRESH}` to refresh. -->\n\n"));
    page.push_str("# Training parameters\n\n");
    page.push_str(
        "The keys of `arbor train --set KEY=VALUE`, of SQL's `train_forest` options string, of Python's \
         options and of `TrainParams::parse_options` and `TrainParams::set` in Rust, in the order a \
         model's report lists them (a random forest's exactly; a gradient-boosted model keeps the \
         order its first models recorded). A key of the other algorithm is an error, and so is a value \
         out of range; both name the key. Keys both algorithms take are tree settings each \
         algorithm holds with its own default. What the settings do to the trees is in \
         [algorithms.md](algorithms.md).\n\n",
    );
    page.push_str("| key | applies to | default | accepts | meaning |\n|---|---|---|---|---|\n");
    for spec in KEYS {
        let applies = match spec.applies {
            Applies::Both => "both",
            Applies::Forest => Algorithm::RandomForest.name(),
            Applies::Boosting => Algorithm::GradientBoosting.name(),
        };
        page.push_str(&format!(
            "| `{}` | {applies} | {} | {} | {} |\n",
            spec.name,
            default_of(spec),
            (spec.accepts)(),
            linked(spec.about)
        ));
    }
    page
}

/// A key's default: per algorithm it applies to, per task where they differ.
fn default_of(spec: &KeySpec) -> String {
    match spec.name {
        // The one default the parameters do not hold: the label's type gives it.
        "task" => return "the label's type".into(),
        // The choice of algorithm, which the per-algorithm defaults below assume.
        "algorithm" => return format!("`{}`", TrainParams::default().algorithm.0.name()),
        _ => {}
    }
    let per_algorithm: Vec<(Algorithm, String)> = [Algorithm::RandomForest, Algorithm::GradientBoosting]
        .into_iter()
        .filter(|&a| spec.applies.to(a))
        .map(|a| (a, default_for(spec, a)))
        .collect();
    match per_algorithm.as_slice() {
        [(_, only)] => only.clone(),
        [(_, forest), (_, boosting)] if forest == boosting => forest.clone(),
        pairs => pairs.iter().map(|(a, d)| format!("{}: {d}", a.name())).collect::<Vec<_>>().join("; "),
    }
}

/// A key's default for one algorithm, naming the task where the two differ.
fn default_for(spec: &KeySpec, algorithm: Algorithm) -> String {
    let params = TrainParams { algorithm: AlgorithmChoice(algorithm), ..TrainParams::default() };
    let value = |task: Task| {
        let loss = (algorithm == Algorithm::GradientBoosting).then(|| params.boosting.resolve_loss(task, 2).ok());
        (spec.value)(&Report { params: &params, task, n_features: None, loss: loss.flatten() })
    };
    let (classification, regression) = (value(Task::Classification), value(Task::Regression));
    if classification == regression {
        format!("`{classification}`")
    } else {
        format!("`{classification}` (classification), `{regression}` (regression)")
    }
}

/// `text` with each citation `docs/algorithms.md, "Section"` a link to the section.
fn linked(text: &str) -> String {
    const CITE: &str = "docs/algorithms.md, \"";
    let (mut out, mut rest) = (String::new(), text);
    while let Some(at) = rest.find(CITE) {
        let after = &rest[at + CITE.len()..];
        let Some(end) = after.find('"') else { break };
        let section = &after[..end];
        let anchor = section.to_lowercase().replace(' ', "-");
        out.push_str(&rest[..at]);
        out.push_str(&format!("[algorithms.md, {section}](algorithms.md#{anchor})"));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}
