//! What both cluster processes do as they start: read Ballista's flags and
//! set up logging.

use std::sync::Once;

use ballista_core::error::{BallistaError, Result};

/// Ballista's flags for a process, the program name first; `None` when they
/// asked for `--help` or `--version`, which are printed and leave the process
/// nothing more to do.
pub(crate) fn parse_flags<C, I, T>(args: I) -> Result<Option<C>>
where
    C: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match C::try_parse_from(args) {
        Ok(flags) => Ok(Some(flags)),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            Ok(None)
        }
        Err(e) => Err(BallistaError::Configuration(e.render().to_string())),
    }
}

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
