//! `arbor cluster executor`: a Ballista executor that knows arbor's functions.

use std::sync::{Arc, Once};

use ballista_core::error::{BallistaError, Result};
use ballista_executor::config::Config;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use clap::Parser;

use crate::arbor_executors::ARBOR_EXECUTOR_PREFIX;
use crate::session::{function_registry, session_config, GRPC_MAX_MESSAGE_SIZE};

/// Runs an executor until it is stopped. `args` are Ballista's executor
/// flags (`--scheduler-host`, `--bind-port`, `--work-dir`, `--concurrent-tasks`, ...),
/// the program name first.
///
/// arbor's training and prediction run on as many threads as the executor
/// has task slots, so that executors sharing a machine do not oversubscribe it.
pub async fn run_executor<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let opt = match Config::try_parse_from(args) {
        Ok(opt) => opt,
        // --help and --version print, and the process has nothing more to do.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(());
        }
        Err(e) => return Err(BallistaError::Configuration(e.render().to_string())),
    };
    init_logging(&opt.log_level_setting);
    let mut config: ExecutorProcessConfig = opt.try_into()?;
    config.executor_id = format!("{ARBOR_EXECUTOR_PREFIX}{}", config.executor_id);
    config.override_function_registry = Some(Arc::new(function_registry()?));
    config.override_config_producer = Some(Arc::new(session_config));
    config.grpc_max_decoding_message_size = config.grpc_max_decoding_message_size.max(GRPC_MAX_MESSAGE_SIZE as u32);
    config.grpc_max_encoding_message_size = config.grpc_max_encoding_message_size.max(GRPC_MAX_MESSAGE_SIZE as u32);
    // Ignored when a pool already exists (a test that runs several in one process).
    let _ = rayon::ThreadPoolBuilder::new().num_threads(config.vcores.max(1)).build_global();
    start_executor_process(Arc::new(config)).await
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
