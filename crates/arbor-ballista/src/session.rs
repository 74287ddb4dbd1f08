//! The session state every part of a cluster builds: DataFusion's and
//! Ballista's functions plus arbor's, and the settings models need.

use std::sync::Arc;

use arbor_datafusion::{LevelTraining, TrainForest, TrainStep};
use ballista::prelude::SessionContextExt;
use ballista_core::extension::{
    ballista_aggregate_functions, ballista_scalar_functions, ballista_window_functions, SessionConfigExt,
};
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::AggregateUDF;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::partitioned_training::PartitionedTraining;

/// The largest gRPC message a client or executor accepts: models travel in
/// plans and shuffles, and a 100-tree forest can exceed Ballista's 16 MiB default.
pub const GRPC_MAX_MESSAGE_SIZE: usize = 1 << 30;

/// A Ballista session configuration with the settings arbor's models need:
/// large gRPC messages, and the static planner (Ballista's adaptive planner
/// plans with its own physical rules, without [`PartitionedTraining`]).
pub fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_grpc_client_max_message_size(GRPC_MAX_MESSAGE_SIZE)
        .with_ballista_adaptive_query_planner(false)
}

/// `config`'s session with arbor's functions and the planner rule of
/// distributed training: what the scheduler plans every query with.
pub fn session_state(config: SessionConfig) -> Result<SessionState> {
    let config = config
        .with_ballista_grpc_client_max_message_size(GRPC_MAX_MESSAGE_SIZE)
        .with_ballista_adaptive_query_planner(false);
    // DataFusion's physical rules, then arbor's, once partial aggregates and partitions are final.
    let mut physical_rules = PhysicalOptimizer::new().rules;
    physical_rules.push(Arc::new(PartitionedTraining));
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
    // The steps of level-wise boosting ([`LevelTraining`]), which executors run.
    state.register_udaf(Arc::new(AggregateUDF::new_from_impl(TrainStep::new())))?;
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
pub async fn standalone(parallelism: usize) -> Result<SessionContext> {
    let config = session_config().with_ballista_standalone_parallelism(parallelism).with_target_partitions(parallelism);
    with_arbor(SessionContext::standalone_with_state(session_state(config)?).await?)
}

/// A session on the cluster whose scheduler listens at `url` (`df://HOST:PORT`).
pub async fn remote(url: &str) -> Result<SessionContext> {
    with_arbor(SessionContext::remote_with_state(url, session_state(session_config())?).await?)
}

/// `ctx` with arbor's functions again (Ballista's upgrade of a client
/// session replaces its functions by Ballista's defaults), and a planner
/// that trains gradient boosting level by level on the executors before
/// Ballista plans the statement ([`LevelTraining`]).
fn with_arbor(ctx: SessionContext) -> Result<SessionContext> {
    arbor_datafusion::register(&ctx);
    ctx.register_udaf(AggregateUDF::new_from_impl(TrainForest::distributed()));
    ctx.register_udaf(AggregateUDF::new_from_impl(TrainStep::new()));
    let state = ctx.state();
    let ballista = state.query_planner().clone();
    let state = SessionStateBuilder::new_from_existing(state)
        .with_query_planner(Arc::new(LevelTraining::new(ballista)))
        .build();
    Ok(SessionContext::new_with_state(state))
}
