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
