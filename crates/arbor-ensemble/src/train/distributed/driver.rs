//! The driver of level-wise training: one loop, over any [`Backend`] that
//! runs its jobs. A summary job starts the training; then each job either
//! sums a level over every piece (the driver grows the level from the
//! merged sums) or, for a forest whose large nodes are split, grows a
//! batch of small nodes from their rows (the driver grafts the subtrees).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::model::Model;
use crate::train::distributed::node_key::NodeKey;
use crate::train::distributed::protocol::Message;
use crate::train::distributed::state::{LevelStanding, LevelState};
use crate::{ArborError, CheckedParams};

/// Where the jobs of a level-wise training run: each job is one pass over
/// every piece of the rows, the pieces' messages merged into one.
///
/// The futures are `Send`, so that a driver may run on a multi-threaded
/// runtime (a DataFusion planner's).
pub trait Backend {
    /// What a job that could not run fails with (the training's own errors are [`ArborError`]s).
    type Error;

    /// The summary job: every piece's [`Message::Summary`], merged and
    /// concluded ([`Message::conclude`]) into a [`Message::Grow`] or a
    /// [`Message::OneNode`].
    fn summary(&mut self) -> impl Future<Output = Result<Message, Self::Error>> + Send;

    /// A level job from the training state's bytes: every piece's
    /// [`Message::Sums`], merged.
    fn level(&mut self, state: Vec<u8>) -> impl Future<Output = Result<Message, Self::Error>> + Send;

    /// A finishing job from a forest's state as [`LevelState::finishing_bytes`]
    /// gives it: each small node's key and its grown subtree's bytes.
    fn finish(&mut self, state: Vec<u8>) -> impl Future<Output = Result<Vec<(NodeKey, Vec<u8>)>, Self::Error>> + Send;

    /// The tasks a finishing job spreads its nodes over.
    fn tasks(&self) -> usize;

    /// The task of `tasks` that the finishing job's grouping gives each of
    /// `keys` ([`LevelState::route_finishing`] balances the tasks with it).
    fn task_of(&self, keys: &[u64], tasks: usize) -> Result<Vec<usize>, Self::Error>;

    /// Lets go of what the pieces kept for the training whose shards are
    /// kept under `shards` ([`LevelState::shard_key`]): it ended or failed.
    fn release(&mut self, shards: u64);
}

/// What a level-wise training ends in.
#[derive(Debug)]
pub enum Outcome {
    /// The trained model.
    Model(Box<Model>),
    /// The rows or options need training on one node, for this reason.
    OneNode(String),
}

/// Why a level-wise training failed: the training's own error, or its backend's.
#[derive(Debug, thiserror::Error)]
pub enum DriverError<E> {
    /// The training's rows, options or messages.
    #[error(transparent)]
    Training(#[from] ArborError),
    /// A job the backend could not run.
    #[error(transparent)]
    Backend(E),
}

impl From<DriverError<ArborError>> for ArborError {
    fn from(error: DriverError<ArborError>) -> ArborError {
        match error {
            DriverError::Training(e) | DriverError::Backend(e) => e,
        }
    }
}

/// Trains with `params` level by level, each job run by `backend`;
/// `on_job` hears where training stands after each job, with the jobs run
/// so far. `training_id` names the training's shards, so that no other
/// training reads them (a cluster's driver draws it at random). The
/// backend is told to let the shards go however training ends.
pub async fn train<B: Backend>(
    backend: &mut B,
    params: &CheckedParams,
    training_id: u64,
    mut on_job: impl FnMut(&LevelStanding, usize) + Send,
) -> Result<Outcome, DriverError<B::Error>> {
    let mut state = match backend.summary().await.map_err(DriverError::Backend)? {
        Message::Grow(state) => state,
        Message::OneNode(reason) => return Ok(Outcome::OneNode(reason)),
        other => return Err(unexpected("summary", &other).into()),
    };
    state.set_training_id(training_id);
    let shards = state.shard_key();
    on_job(&state.standing(), 1);
    let grown = grow(backend, params, &mut state, &mut on_job).await;
    backend.release(shards);
    grown?;
    Ok(Outcome::Model(Box::new(state.into_model(params)?)))
}

/// [`train`] over a backend whose jobs answer at once (this process's
/// memory: [`crate::distributed::InMemory`], or one wrapping it), run here
/// without an async runtime. A job that waits is an error.
pub fn train_now<B: Backend>(
    backend: &mut B,
    params: &CheckedParams,
    training_id: u64,
    on_job: impl FnMut(&LevelStanding, usize) + Send,
) -> Result<Outcome, DriverError<B::Error>> {
    let future = pin!(train(backend, params, training_id, on_job));
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Err(ArborError::Data("a job of a backend that answers at once waited".into()).into()),
    }
}

/// Runs jobs until every tree of `state` is grown.
async fn grow<B: Backend>(
    backend: &mut B,
    params: &CheckedParams,
    state: &mut LevelState,
    on_job: &mut (impl FnMut(&LevelStanding, usize) + Send),
) -> Result<(), DriverError<B::Error>> {
    let mut jobs = 1;
    while !state.is_done() {
        if state.finishing().is_empty() {
            // The level grows here, where the previous level's histograms are kept.
            match backend.level(state.to_bytes()).await.map_err(DriverError::Backend)? {
                Message::Sums(sums) => state.grow(params, sums)?,
                other => return Err(unexpected("level", &other).into()),
            }
        } else {
            // Near-equal rows in each task of the job's grouping, the largest nodes first.
            let tasks = backend.tasks();
            state.route_finishing(tasks, |keys| backend.task_of(keys, tasks)).map_err(DriverError::Backend)?;
            let grown = backend.finish(state.finishing_bytes()).await.map_err(DriverError::Backend)?;
            state.graft_nodes(params, grown)?;
        }
        jobs += 1;
        on_job(&state.standing(), jobs);
    }
    Ok(())
}

/// A job's answer of the wrong kind.
fn unexpected(job: &str, message: &Message) -> ArborError {
    match message {
        Message::OneNode(reason) => ArborError::Data(format!("level-wise training stopped at a {job} job: {reason}")),
        other => ArborError::Data(format!("a {job} job answered with a {}", other.kind())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::summary::LevelSummary;
    use crate::train::distributed::in_memory::InMemory;
    use crate::train::distributed::test_rows::{table, trainer};

    /// The in-memory backend, failing or answering wrongly at its second level job.
    struct Faulty {
        jobs: InMemory,
        levels: usize,
        wrong_answer: bool,
        released: Vec<u64>,
    }

    impl Backend for Faulty {
        type Error = String;

        async fn summary(&mut self) -> Result<Message, String> {
            self.jobs.summary().await.map_err(|e| e.to_string())
        }

        async fn level(&mut self, state: Vec<u8>) -> Result<Message, String> {
            self.levels += 1;
            match (self.levels, self.wrong_answer) {
                (2, false) => Err("the executor was lost".into()),
                (2, true) => Ok(Message::Summary(LevelSummary::default())),
                _ => self.jobs.level(state).await.map_err(|e| e.to_string()),
            }
        }

        async fn finish(&mut self, state: Vec<u8>) -> Result<Vec<(NodeKey, Vec<u8>)>, String> {
            self.jobs.finish(state).await.map_err(|e| e.to_string())
        }

        fn tasks(&self) -> usize {
            self.jobs.tasks()
        }

        fn task_of(&self, keys: &[u64], tasks: usize) -> Result<Vec<usize>, String> {
            self.jobs.task_of(keys, tasks).map_err(|e| e.to_string())
        }

        fn release(&mut self, shards: u64) {
            self.released.push(shards);
            self.jobs.release(shards);
        }
    }

    /// A failed job ends the training with the backend's error, and a job
    /// that answers with the wrong message with an error naming the job;
    /// either way the training's shards are let go, once.
    #[test]
    fn a_failed_training_lets_its_shards_go_and_says_why() {
        let trainer = trainer("algorithm=gradient-boosting n_rounds=3 max_depth=3", "y");
        let params = trainer.params().check().unwrap();
        let batch = table(0..2000, 5, |_| 0.0);
        for wrong_answer in [false, true] {
            let pieces = vec![trainer.training_data(vec![batch.slice(0, 900)]).unwrap()];
            let mut faulty =
                Faulty { jobs: InMemory::new(pieces, params.clone()), levels: 0, wrong_answer, released: vec![] };
            let mut reports = 0;
            let outcome = train_now(&mut faulty, &params, 7, |_, _| reports += 1);
            match (outcome, wrong_answer) {
                (Err(DriverError::Backend(e)), false) => assert_eq!(e, "the executor was lost"),
                (Err(DriverError::Training(e)), true) => {
                    assert!(e.to_string().contains("a level job answered with a summary"), "{e}")
                }
                (other, _) => panic!("wrong_answer={wrong_answer}: {other:?}"),
            }
            assert_eq!(reports, 2, "the summary and the first level were reported");
            assert_eq!(faulty.released.len(), 1, "the shards are let go once");
        }
    }
}
