//! Progress bars on a terminal; nothing when output is not one.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `total` steps of `what` (hidden unless stderr is a terminal).
pub fn bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg} ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_owned());
    bar
}

/// A counter of `what` with no known total (hidden unless stderr is a terminal).
pub fn counter(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{msg:>10} {pos} ({elapsed}, {per_sec})").expect("valid template"));
    bar.set_message(what.to_owned());
    bar
}

/// A bar of boosting rounds while a cluster trains level by level, one
/// bar per model (hidden unless stderr is a terminal).
#[cfg(feature = "cluster")]
pub fn level_rounds() -> arbor_datafusion::LevelProgress {
    let shown: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);
    arbor_datafusion::LevelProgress::new(move |step| {
        let mut shown = shown.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // A model's first job: a bar left by a model whose training failed is dropped.
        if step.jobs == 1 {
            if let Some(stale) = shown.take() {
                stale.abandon();
            }
        }
        let rounds = shown.get_or_insert_with(|| bar(step.n_rounds as u64, step.unit));
        rounds.set_position(step.rounds_done as u64);
        rounds.set_message(format!("level job {}, {} open nodes", step.jobs, step.open_nodes));
        if step.open_nodes == 0 {
            rounds.finish_and_clear();
            *shown = None;
        }
    })
}
