//! What both cluster processes do as they start: read Ballista's flags and
//! set up logging.

use std::sync::Once;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::error::{BallistaError, Result};

/// Ballista's flags for a process, the program name first, and whether
/// `policy_flag` (the id of its task scheduling policy) was left to its
/// default; `None` when they asked for `--help` or `--version`, which are
/// printed and leave the process nothing more to do.
pub(crate) fn parse_flags<C, I, T>(args: I, policy_flag: &str) -> Result<Option<(C, bool)>>
where
    C: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let parsed = C::command().try_get_matches_from(args).and_then(|matches| {
        let defaulted = matches.value_source(policy_flag) != Some(clap::parser::ValueSource::CommandLine);
        C::from_arg_matches(&matches).map(|flags| (flags, defaulted))
    });
    match parsed {
        Ok(parsed) => Ok(Some(parsed)),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            Ok(None)
        }
        Err(e) => Err(BallistaError::Configuration(e.render().to_string())),
    }
}

/// The task scheduling policy of arbor's clusters when the command line does
/// not choose one: executors pull their tasks. Under Ballista's default,
/// where the scheduler pushes them, a job that loses an executor while one of
/// its stages is rolled back never frees the surviving executors' task slots
/// and hangs; pulling executors carry no such count.
pub const DEFAULT_SCHEDULING_POLICY: TaskSchedulingPolicy = TaskSchedulingPolicy::PullStaged;

/// Logs to standard output at `level` (or as `RUST_LOG` says), once per process.
pub(crate) fn init_logging(level: &str) {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| level.to_owned());
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .try_init();
    });
}
