//! The session state every part of a cluster builds: DataFusion's and
//! Ballista's functions plus arbor's, and the settings models need.

use std::sync::Arc;

use arbor_datafusion::{LevelFunctions, LevelTraining, ResidentShards, TrainForest};
use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionStateExt;
use ballista_core::extension::{
    ballista_aggregate_functions, ballista_scalar_functions, ballista_window_functions, SessionConfigExt,
};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_executor::new_standalone_executor_from_state;
use ballista_scheduler::standalone::new_standalone_scheduler_from_state;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::AggregateUDF;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::codec::{ArborCodec, ArborLogicalCodec};
use crate::partitioned_training::PartitionedTraining;

/// The largest gRPC message a client or executor accepts: models travel in
/// plans and shuffles, and a 100-tree forest can exceed Ballista's 16 MiB default.
pub const GRPC_MAX_MESSAGE_SIZE: usize = 1 << 30;

/// A Ballista session configuration with the settings arbor's models need:
/// large gRPC messages; each task reading the files it was planned with
/// (`datafusion.execution.enable_file_stream_work_stealing` off); shuffles read through Arrow Flight (Ballista 55's
/// block reader failed on a partition holding a forest level's 10 MiB
/// partial sums: it found no schema within its 8 MiB limit); and the static
/// planner (Ballista's adaptive planner plans with its own physical rules,
/// without [`PartitionedTraining`]).
pub fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_physical_extension_codec(Arc::new(ArborCodec::default()))
        .with_ballista_logical_extension_codec(Arc::new(ArborLogicalCodec::default()))
        .with_ballista_grpc_client_max_message_size(GRPC_MAX_MESSAGE_SIZE)
        .with_ballista_adaptive_query_planner(false)
        .with_ballista_shuffle_reader_remote_prefer_flight(true)
        .set_bool(OWN_FILE_GROUPS, false)
}

/// DataFusion's file work stealing, which lets a partition read files its
/// siblings were planned to read. Off: a Ballista task then reads the files
/// it was planned with (DataFusion's documentation asks Ballista to turn it
/// off), and a level job's shard is named by the files it holds.
const OWN_FILE_GROUPS: &str = "datafusion.execution.enable_file_stream_work_stealing";

/// `config`'s session with arbor's functions and the planner rule of
/// distributed training: what the scheduler plans every query with.
pub fn session_state(config: SessionConfig) -> Result<SessionState> {
    let config = config
        .with_ballista_grpc_client_max_message_size(GRPC_MAX_MESSAGE_SIZE)
        .with_ballista_adaptive_query_planner(false)
        .set_bool(OWN_FILE_GROUPS, false);
    // DataFusion's physical rules, then arbor's, once partial aggregates and partitions are final.
    let mut physical_rules = PhysicalOptimizer::new().rules;
    physical_rules.push(Arc::new(PartitionedTraining));
    // Level and finishing jobs read each partition through the executor's kept shard.
    let physical_rules = ResidentShards::placed_in(physical_rules);
    // What Ballista's default session builder sets, plus arbor's functions and rule.
    let mut state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(Arc::new(RuntimeEnvBuilder::new().build()?))
        .with_optimizer_rules(ballista_core::optimizer::ballista_default_optimizer_rules())
        .with_scalar_functions(ballista_scalar_functions())
        .with_aggregate_functions(ballista_aggregate_functions())
        .with_window_functions(ballista_window_functions())
        .with_physical_optimizer_rules(physical_rules)
        .build();
    arbor_datafusion::register_all(&mut state)?;
    state.register_udaf(Arc::new(AggregateUDF::new_from_impl(TrainForest::distributed())))?;
    // The steps of level-wise training ([`LevelTraining`]), which executors run.
    LevelFunctions::new().register(&mut state)?;
    Ok(state)
}

/// Every function an executor must know: DataFusion's, Ballista's and arbor's.
pub fn function_registry() -> Result<BallistaFunctionRegistry> {
    let state = session_state(session_config())?;
    let mut registry = BallistaFunctionRegistry::default();
    let arbor = BallistaFunctionRegistry::from(&state);
    registry.scalar_functions.extend(arbor.scalar_functions);
    registry.aggregate_functions.extend(arbor.aggregate_functions);
    Ok(registry)
}

/// A session on an in-process cluster (a scheduler and an executor with
/// `parallelism` task slots) that knows arbor's functions.
///
/// Built as Ballista's `standalone_with_state` builds it, except that the
/// executor's client of the scheduler takes messages of up to
/// [`GRPC_MAX_MESSAGE_SIZE`] (Ballista leaves it at tonic's 4 MiB, and a
/// task that carries a forest's training state is larger: the executor
/// would never receive it, and the job would wait forever).
pub async fn standalone(parallelism: usize) -> Result<SessionContext> {
    standalone_partitioned(parallelism, parallelism).await
}

/// [`standalone`] with tables read in `partitions` partitions
/// (`target_partitions`), for tests of tasks that read fewer partitions than a stage has.
pub async fn standalone_partitioned(parallelism: usize, partitions: usize) -> Result<SessionContext> {
    let config = session_config().with_ballista_standalone_parallelism(parallelism).with_target_partitions(partitions);
    let state = session_state(config)?;
    let address = new_standalone_scheduler_from_state(&state).await.map_err(|e| config_error(e.to_string()))?;
    let url = format!("http://localhost:{}", address.port());
    let mut attempts = 0;
    let scheduler = loop {
        match SchedulerGrpcClient::connect(url.clone()).await {
            Ok(client) => break client,
            Err(e) if attempts >= 100 => return Err(config_error(format!("the in-process scheduler at {url}: {e}"))),
            Err(_) => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    let scheduler =
        scheduler.max_decoding_message_size(GRPC_MAX_MESSAGE_SIZE).max_encoding_message_size(GRPC_MAX_MESSAGE_SIZE);
    new_standalone_executor_from_state(scheduler, parallelism, &state)
        .await
        .map_err(|e| config_error(e.to_string()))?;
    with_arbor(SessionContext::new_with_state(state.upgrade_for_ballista(url)?))
}

fn config_error(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

/// A session on the cluster whose scheduler listens at `url` (`df://HOST:PORT`).
pub async fn remote(url: &str) -> Result<SessionContext> {
    with_arbor(SessionContext::remote_with_state(url, session_state(session_config())?).await?)
}

/// `ctx` with arbor's functions again (Ballista's upgrade of a client
/// session replaces its functions by Ballista's defaults), and a planner
/// that trains forests and gradient boosting level by level on the
/// executors before Ballista plans the statement ([`LevelTraining`]).
fn with_arbor(ctx: SessionContext) -> Result<SessionContext> {
    arbor_datafusion::register(&ctx);
    ctx.register_udaf(AggregateUDF::new_from_impl(TrainForest::distributed()));
    LevelFunctions::new().register_on(&ctx);
    let state = ctx.state();
    let ballista = state.query_planner().clone();
    let state = SessionStateBuilder::new_from_existing(state)
        .with_query_planner(Arc::new(LevelTraining::new(ballista)))
        .build();
    Ok(SessionContext::new_with_state(state))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Level-wise training writes its shuffles uncompressed through the
    /// setting Ballista's sessions list ([`arbor_datafusion::level_training::SHUFFLE_CODEC`]):
    /// a renamed setting would leave them compressed without a word.
    #[test]
    fn ballista_sessions_have_the_shuffle_codec_training_turns_off() {
        let config = session_config();
        let entries = config.options().entries();
        let codec = entries.iter().find(|entry| entry.key == arbor_datafusion::level_training::SHUFFLE_CODEC);
        assert_eq!(codec.and_then(|entry| entry.value.as_deref()), Some("lz4"), "{:?}", codec);
        let mut off = config.clone();
        off.options_mut().set(arbor_datafusion::level_training::SHUFFLE_CODEC, "none").unwrap();
        assert_eq!(off.ballista_config().shuffle_compression_codec().unwrap(), None);
    }

    /// A job whose result Ballista's client could not fetch from a lost
    /// executor is run again: arbor knows that error by Ballista's words for
    /// it, which a Ballista upgrade must keep (or this test says so).
    #[test]
    fn a_result_lost_with_its_executor_is_known_by_its_words() {
        let fetch =
            ballista_core::error::BallistaError::FetchFailed("arbor-1".into(), 2, 0, "tcp connect error".into());
        let lost = datafusion::error::DataFusionError::External(Box::new(fetch));
        assert!(arbor_datafusion::lost_result(&lost), "{lost}");
        let other = datafusion::error::DataFusionError::Execution("label 'y' holds NaN".into());
        assert!(!arbor_datafusion::lost_result(&other));
    }
}
