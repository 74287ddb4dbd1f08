//! `arbor cluster scheduler`: a Ballista scheduler whose sessions know
//! arbor's functions and which admits only arbor's executors.

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::error::{BallistaError, Result};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{Config, SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::create_scheduler;

use crate::arbor_executors::ArborExecutors;
use crate::codec::{ArborCodec, ArborLogicalCodec};
use crate::long_poll::{serve, WorkSignal};
use crate::process_start::{init_logging, parse_flags, DEFAULT_SCHEDULING_POLICY};
use crate::session::{session_config, session_state, GRPC_MAX_MESSAGE_SIZE};
use crate::shard_affinity::ShardAffinity;

/// Runs a scheduler until it is stopped. `args` are Ballista's scheduler
/// flags (`--bind-host`, `--bind-port`, ...), the program name first.
/// Executors pull their tasks unless `--scheduler-policy` says otherwise
/// ([`DEFAULT_SCHEDULING_POLICY`]).
pub async fn run_scheduler<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let Some((mut opt, default_policy)) = parse_flags::<Config, _, _>(args, "scheduler_policy")? else {
        return Ok(());
    };
    if default_policy {
        opt.scheduler_policy = DEFAULT_SCHEDULING_POLICY;
    }
    init_logging(&opt.log_level_setting);
    let addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_port)
        .parse()
        .map_err(|e: std::net::AddrParseError| BallistaError::Configuration(e.to_string()))?;
    let mut config: SchedulerConfig = opt.try_into()?;
    let most = GRPC_MAX_MESSAGE_SIZE as u32;
    config.grpc_server_max_decoding_message_size = config.grpc_server_max_decoding_message_size.max(most);
    config.grpc_server_max_encoding_message_size = config.grpc_server_max_encoding_message_size.max(most);
    config.grpc_client_max_message_size = config.grpc_client_max_message_size.max(most);
    config.override_physical_codec = Some(Arc::new(ArborCodec::default()));
    config.override_logical_codec = Some(Arc::new(ArborLogicalCodec::default()));
    // Level jobs' tasks follow their shards, unless `--task-distribution` asked for round-robin.
    if matches!(config.task_distribution, TaskDistributionPolicy::Bias) {
        config.task_distribution = TaskDistributionPolicy::Custom(Arc::new(ShardAffinity::default()));
    }
    // Idle executors' polls wait for work (`long_poll.rs`); pushed tasks need no such wait.
    let work = WorkSignal::default();
    let config = config
        .with_override_config_producer(Arc::new(session_config))
        .with_override_session_builder(Arc::new(session_state))
        .with_on_work_available(work.callback());
    config.validate()?;
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let cluster = BallistaCluster::new(Arc::new(ArborExecutors(cluster.cluster_state())), cluster.job_state());
    let scheduler = create_scheduler(cluster, Arc::new(config)).await?;
    log::info!("arbor's Ballista scheduler listening on {addr}");
    serve(scheduler, work, addr).await
}
