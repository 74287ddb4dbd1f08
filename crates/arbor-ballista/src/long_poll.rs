//! Idle executors' polls that wait for work at the scheduler.
//!
//! Under pull scheduling an executor whose poll finds no task sleeps 50 ms
//! (Ballista's `IDLE_POLL_INTERVAL`) before it asks again, and a level job
//! pays that wait when it starts and again between its stages: about a
//! quarter of gradient boosting's time on a cluster, whose jobs are many and
//! short. Ballista can wake a poll loop when work arrives, but only within
//! one process. [`LongPoll`] does it across processes from the scheduler's
//! side: it answers an idle executor's empty poll only when new work is
//! ready (the scheduler's `on_work_available`) or [`HOLD`] has passed, so
//! the executor's next task reaches it as soon as it can run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arrow_flight::flight_service_server::FlightServiceServer;
use axum::http::StatusCode;
use axum::serve::ListenerExt;
use ballista_core::error::{BallistaError, Result};
use ballista_core::flight_proxy_service::BallistaFlightProxyService;
use ballista_core::serde::protobuf::executor_resource::Resource;
use ballista_core::serde::protobuf::scheduler_grpc_server::{SchedulerGrpc, SchedulerGrpcServer};
use ballista_core::serde::protobuf::{
    CancelJobParams, CancelJobResult, CleanJobDataParams, CleanJobDataResult, CreateUpdateSessionParams,
    CreateUpdateSessionResult, ExecuteQueryParams, ExecuteQueryResult, ExecutorStoppedParams, ExecutorStoppedResult,
    GetJobMetricsParams, GetJobMetricsResult, GetJobStatusParams, GetJobStatusResult, HeartBeatParams, HeartBeatResult,
    PollWorkParams, PollWorkResult, RegisterExecutorParams, RegisterExecutorResult, RemoveSessionParams,
    RemoveSessionResult, UpdateTaskStatusParams, UpdateTaskStatusResult,
};
use ballista_scheduler::config::OnWorkAvailableFn;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tokio::sync::watch;
use tonic::service::RoutesBuilder;
use tonic::{Request, Response, Status};

/// How long an idle executor's empty poll waits for work. Short beside the
/// scheduler's executor timeout (every poll is a heartbeat), long beside
/// the gap between a level job's stages.
pub const HOLD: Duration = Duration::from_millis(200);

/// The scheduler's "work is ready" signal: a counter that every new job
/// and every newly runnable stage advances.
#[derive(Clone)]
pub struct WorkSignal(Arc<watch::Sender<u64>>);

impl Default for WorkSignal {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(0)))
    }
}

impl WorkSignal {
    /// The callback to set as the scheduler's `on_work_available`.
    pub fn callback(&self) -> OnWorkAvailableFn {
        let sender = self.0.clone();
        Arc::new(move |_| sender.send_modify(|count| *count = count.wrapping_add(1)))
    }

    /// A receiver that sees the signals sent from now on.
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// What a gRPC method of the scheduler's answers.
type Answer<T> = std::result::Result<Response<T>, Status>;

/// Ballista's scheduler service, with [`SchedulerGrpc::poll_work`] held for
/// idle executors until there is work for them (see the module's docs).
/// Every other call goes straight to Ballista's.
pub struct LongPoll {
    inner: SchedulerServer<LogicalPlanNode, PhysicalPlanNode>,
    work: WorkSignal,
}

impl LongPoll {
    /// Wraps `inner`, whose `on_work_available` must advance `work`.
    pub fn new(inner: SchedulerServer<LogicalPlanNode, PhysicalPlanNode>, work: WorkSignal) -> Self {
        Self { inner, work }
    }
}

/// Whether an executor polls with every task slot free: holding its poll
/// then delays no finished task's status (statuses travel with polls).
fn idle(params: &PollWorkParams) -> bool {
    let resources = params.metadata.as_ref().and_then(|m| m.specification.as_ref()).map(|s| &s.resources[..]);
    let vcores = resources.unwrap_or_default().iter().find_map(|r| r.resource.map(|Resource::Vcores(v)| v));
    params.num_free_vcores > 0 && vcores == Some(params.num_free_vcores)
}

#[tonic::async_trait]
impl SchedulerGrpc for LongPoll {
    async fn poll_work(&self, request: Request<PollWorkParams>) -> Answer<PollWorkResult> {
        let remote = request.remote_addr();
        let mut params = request.into_inner();
        // A repeated poll is a request of arbor's, without the connection's
        // address, which Ballista reads when an executor names no host.
        if let (Some(metadata), Some(remote)) = (params.metadata.as_mut(), remote) {
            metadata.host.get_or_insert_with(|| remote.ip().to_string());
        }
        let again = idle(&params).then(|| PollWorkParams { task_status: vec![], ..params.clone() });
        // Subscribed before the first poll: a signal sent while it runs is not missed.
        let mut work = self.work.subscribe();
        let mut result = SchedulerGrpc::poll_work(&self.inner, Request::new(params)).await?.into_inner();
        let Some(again) = again else { return Ok(Response::new(result)) };
        let deadline = tokio::time::Instant::now() + HOLD;
        while result.tasks.is_empty() {
            // `changed` marks the signal seen as it returns.
            if !matches!(tokio::time::timeout_at(deadline, work.changed()).await, Ok(Ok(()))) {
                break;
            }
            // The first answer may have drained jobs to clean: keep them
            // whatever this one says.
            match SchedulerGrpc::poll_work(&self.inner, Request::new(again.clone())).await {
                Ok(next) => {
                    let next = next.into_inner();
                    result.tasks = next.tasks;
                    result.jobs_to_clean.extend(next.jobs_to_clean);
                }
                Err(_) => break,
            }
        }
        Ok(Response::new(result))
    }

    async fn register_executor(&self, request: Request<RegisterExecutorParams>) -> Answer<RegisterExecutorResult> {
        SchedulerGrpc::register_executor(&self.inner, request).await
    }

    async fn heart_beat_from_executor(&self, request: Request<HeartBeatParams>) -> Answer<HeartBeatResult> {
        SchedulerGrpc::heart_beat_from_executor(&self.inner, request).await
    }

    async fn update_task_status(&self, request: Request<UpdateTaskStatusParams>) -> Answer<UpdateTaskStatusResult> {
        SchedulerGrpc::update_task_status(&self.inner, request).await
    }

    async fn create_update_session(
        &self,
        request: Request<CreateUpdateSessionParams>,
    ) -> Answer<CreateUpdateSessionResult> {
        SchedulerGrpc::create_update_session(&self.inner, request).await
    }

    async fn remove_session(&self, request: Request<RemoveSessionParams>) -> Answer<RemoveSessionResult> {
        SchedulerGrpc::remove_session(&self.inner, request).await
    }

    type ExecuteQueryPushStream =
        <SchedulerServer<LogicalPlanNode, PhysicalPlanNode> as SchedulerGrpc>::ExecuteQueryPushStream;

    async fn execute_query_push(&self, request: Request<ExecuteQueryParams>) -> Answer<Self::ExecuteQueryPushStream> {
        SchedulerGrpc::execute_query_push(&self.inner, request).await
    }

    async fn execute_query(&self, request: Request<ExecuteQueryParams>) -> Answer<ExecuteQueryResult> {
        SchedulerGrpc::execute_query(&self.inner, request).await
    }

    async fn get_job_status(&self, request: Request<GetJobStatusParams>) -> Answer<GetJobStatusResult> {
        SchedulerGrpc::get_job_status(&self.inner, request).await
    }

    async fn get_job_metrics(&self, request: Request<GetJobMetricsParams>) -> Answer<GetJobMetricsResult> {
        SchedulerGrpc::get_job_metrics(&self.inner, request).await
    }

    async fn executor_stopped(&self, request: Request<ExecutorStoppedParams>) -> Answer<ExecutorStoppedResult> {
        SchedulerGrpc::executor_stopped(&self.inner, request).await
    }

    async fn cancel_job(&self, request: Request<CancelJobParams>) -> Answer<CancelJobResult> {
        SchedulerGrpc::cancel_job(&self.inner, request).await
    }

    async fn clean_job_data(&self, request: Request<CleanJobDataParams>) -> Answer<CleanJobDataResult> {
        SchedulerGrpc::clean_job_data(&self.inner, request).await
    }
}

/// Serves `scheduler` on `address` as Ballista's `start_server` does without
/// its REST API (which arbor's build leaves out): the scheduler's gRPC
/// service, here through [`LongPoll`], the embedded Flight proxy when the
/// configuration asks for it, and `/healthz`.
pub async fn serve(
    scheduler: SchedulerServer<LogicalPlanNode, PhysicalPlanNode>,
    work: WorkSignal,
    address: SocketAddr,
) -> Result<()> {
    let config = scheduler.state.config.clone();
    let most_in = config.grpc_server_max_decoding_message_size as usize;
    let most_out = config.grpc_server_max_encoding_message_size as usize;
    let mut routes = RoutesBuilder::default();
    routes.add_service(
        SchedulerGrpcServer::new(LongPoll::new(scheduler, work))
            .max_encoding_message_size(most_out)
            .max_decoding_message_size(most_in),
    );
    if config.enable_embedded_flight_proxy {
        let proxy = BallistaFlightProxyService::new(most_in, most_out, config.use_tls, None);
        routes.add_service(
            FlightServiceServer::new(proxy).max_decoding_message_size(most_in).max_encoding_message_size(most_out),
        );
    }
    let router = routes
        .routes()
        .into_axum_router()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .fallback(|| async { StatusCode::NOT_FOUND });
    // Without TCP_NODELAY a poll's answer waits out the executor's delayed
    // acknowledgement (40 ms on Linux) behind Nagle's algorithm.
    let listener = tokio::net::TcpListener::bind(address).await.map_err(BallistaError::from)?.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            log::warn!("could not set TCP_NODELAY on a scheduler connection: {e}");
        }
    });
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.map_err(BallistaError::from)
}

#[cfg(test)]
mod tests {
    use ballista_core::serde::protobuf::{ExecutorRegistration, ExecutorResource};

    use super::*;

    fn poll(vcores: u32, free: u32) -> PollWorkParams {
        PollWorkParams {
            metadata: Some(ExecutorRegistration {
                specification: Some(ballista_core::serde::protobuf::ExecutorSpecification {
                    resources: vec![ExecutorResource { resource: Some(Resource::Vcores(vcores)) }],
                }),
                ..Default::default()
            }),
            num_free_vcores: free,
            task_status: vec![],
        }
    }

    #[test]
    fn only_executors_with_every_slot_free_are_held() {
        assert!(idle(&poll(1, 1)));
        assert!(idle(&poll(4, 4)));
        // A running task's status waits for the next poll: answer at once.
        assert!(!idle(&poll(4, 3)));
        assert!(!idle(&poll(1, 0)));
        assert!(!idle(&PollWorkParams { metadata: None, ..poll(1, 1) }));
    }
}
