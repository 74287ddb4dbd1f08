//! `arbor cluster executor`: a Ballista executor that knows arbor's functions.

use std::sync::Arc;

use ballista_core::error::Result;
use ballista_executor::config::Config;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};

use crate::arbor_executors::ARBOR_EXECUTOR_PREFIX;
use crate::codec::ArborCodec;
use crate::process_start::{init_logging, parse_flags, DEFAULT_SCHEDULING_POLICY};
use crate::session::{function_registry, session_config, GRPC_MAX_MESSAGE_SIZE};

/// Runs an executor until it is stopped. `args` are Ballista's executor
/// flags (`--scheduler-host`, `--bind-port`, `--work-dir`, `--vcores`, ...),
/// the program name first. Its tasks are pulled from the scheduler unless
/// `--task-scheduling-policy` says otherwise ([`DEFAULT_SCHEDULING_POLICY`]).
///
/// arbor's training and prediction run on as many threads as the executor
/// has task slots, so that executors sharing a machine do not oversubscribe it.
pub async fn run_executor<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let Some((mut opt, default_policy)) = parse_flags::<Config, _, _>(args, "task_scheduling_policy")? else {
        return Ok(());
    };
    if default_policy {
        opt.task_scheduling_policy = DEFAULT_SCHEDULING_POLICY;
    }
    init_logging(&opt.log_level_setting);
    let mut config: ExecutorProcessConfig = opt.try_into()?;
    config.executor_id = format!("{ARBOR_EXECUTOR_PREFIX}{}", config.executor_id);
    config.override_function_registry = Some(Arc::new(function_registry()?));
    config.override_config_producer = Some(Arc::new(session_config));
    config.override_physical_codec = Some(Arc::new(ArborCodec::default()));
    config.grpc_max_decoding_message_size = config.grpc_max_decoding_message_size.max(GRPC_MAX_MESSAGE_SIZE as u32);
    config.grpc_max_encoding_message_size = config.grpc_max_encoding_message_size.max(GRPC_MAX_MESSAGE_SIZE as u32);
    // Ignored when a pool already exists (a test that runs several in one process).
    let _ = rayon::ThreadPoolBuilder::new().num_threads(config.vcores.max(1)).build_global();
    start_executor_process(Arc::new(config)).await
}
