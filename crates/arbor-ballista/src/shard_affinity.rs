//! Tasks that follow their shards: a task distribution policy of the
//! scheduler's that sends each partition of a level job to the executor
//! that first ran that partition in the training, where its shard is kept
//! ([`arbor_datafusion::ResidentShards`]).
//!
//! Ballista binds a stage's next partitions to whichever executor asks, so
//! two executors each ended up binning (and keeping) most partitions. Under
//! this policy an executor takes, for a stage that reads kept shards, its
//! own partitions first (a partition is the executor's that first ran it
//! in a level job over the same data arguments, named by the steps' input
//! key), then partitions no executor holds yet, and only then another's,
//! from the back of the queue, when that other has at least two still to
//! run (it is behind) or the stage has waited [`LOCALITY_WAIT`] (its holder
//! may be lost). Binning a partition again costs about ten of its tasks,
//! so an executor whose holder will reach its last partition in a task's
//! time waits, as Spark's delay scheduling does; a lost executor's
//! partitions still run, read again elsewhere. Other stages are bound as
//! Ballista's default (`bias`) binds them.
//!
//! What this relies on that Ballista 55 does not promise: the
//! `DistributionPolicy` extension point, the running stage's public fields
//! (its pending partitions, task infos and failure counts) and
//! `create_task_info`, and that a level job's partition `p` reads the same
//! files in every job of a training (the jobs plan the same input). None of
//! it decides a model's bytes: a partition run elsewhere reads its rows
//! again and gives the same sums.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor_datafusion::LevelStepExec;
use async_trait::async_trait;
use ballista_core::config::BallistaConfig;
use ballista_core::execution_plans::{RangeShuffleReaderExec, ShuffleReaderExec};
use ballista_core::serde::protobuf::{job_status, AvailableVcores};
use ballista_core::serde::scheduler::TaskKey;
use ballista_core::JobId;
use ballista_scheduler::cluster::{BoundTask, DistributionPolicy};
use ballista_scheduler::state::execution_graph::{create_task_info, TaskDescription};
use ballista_scheduler::state::execution_stage::RunningStage;
use ballista_scheduler::state::task_manager::JobInfoCache;
use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;

/// How long a stage that reads kept shards keeps a partition for its
/// holder when that holder is not behind: about ten of a level job's
/// tasks on the benchmark, the time binning the partition again takes.
pub const LOCALITY_WAIT: Duration = Duration::from_millis(300);

/// Which executor holds each partition's shard, as far as the scheduler
/// has bound them: the first executor that ran a partition in a level job
/// over the same data arguments holds it.
#[derive(Debug, Default)]
pub struct ShardAffinity {
    /// (the level steps' input key, the stage's partitions, partition) → executor id.
    holders: Mutex<HashMap<(u64, usize, usize), String>>,
    /// When each running stage that reads kept shards was first offered, by (job, stage).
    offered: Mutex<HashMap<(JobId, usize), Instant>>,
}

#[async_trait]
impl DistributionPolicy for ShardAffinity {
    async fn bind_tasks(
        &self,
        mut budgets: Vec<&mut AvailableVcores>,
        running_jobs: Arc<HashMap<JobId, JobInfoCache>>,
    ) -> Result<Vec<BoundTask>> {
        let mut bound = Vec::new();
        // The largest executors first, as Ballista's `bias` binds.
        budgets.sort_by_key(|b| std::cmp::Reverse(b.vcores));
        lock(&self.offered).retain(|(job, _), _| running_jobs.contains_key(job));
        for (job_id, job) in running_jobs.iter() {
            if !matches!(job.status, Some(job_status::Status::Running(_))) {
                continue;
            }
            let mut graph = job.execution_graph.write().await;
            let session = graph.session_id().to_string();
            let mut done = Vec::new();
            while let Some(stage) = graph.fetch_running_stage(&done) {
                done.push(stage.stage_id);
                let shards = level_step_input(&stage.plan);
                let collapses = collapses_inputs(&stage.plan);
                let waited = shards.is_some().then(|| {
                    lock(&self.offered).entry((job_id.clone(), stage.stage_id)).or_insert_with(Instant::now).elapsed()
                });
                let patient = waited.is_some_and(|waited| waited < LOCALITY_WAIT);
                for budget in budgets.iter_mut().filter(|b| b.vcores > 0) {
                    let picked = match shards {
                        Some(input) => self.pick(stage, input, &budget.executor_id, budget.vcores as usize, patient),
                        None => in_order(stage, collapses, budget.vcores as usize),
                    };
                    if picked.is_empty() {
                        break;
                    }
                    let vcores = if collapses { 1 } else { picked.len() as u32 };
                    bound.push(bind(stage, &session, job_id, budget, picked, vcores));
                }
            }
        }
        Ok(bound)
    }

    fn name(&self) -> &str {
        "arbor-shard-affinity"
    }
}

impl ShardAffinity {
    /// Up to `room` pending partitions of a stage that reads kept shards for
    /// `executor` ([`choose`]); those nobody held are its own from now on.
    fn pick(&self, stage: &mut RunningStage, input: u64, executor: &str, room: usize, patient: bool) -> Vec<usize> {
        let total = stage.partitions;
        let mut pending = stage.pending.next_slice(stage.pending.remaining());
        let mut holders = lock(&self.holders);
        let picked = choose(&pending, |p| holders.get(&(input, total, p)).map(String::as_str), executor, room, patient);
        for &p in &picked {
            holders.entry((input, total, p)).or_insert_with(|| executor.to_string());
        }
        pending.retain(|p| !picked.contains(p));
        stage.pending.reschedule(pending);
        picked
    }
}

/// Up to `room` of the `pending` partitions (in queue order) for
/// `executor`, given each partition's `holder`: its own first, in order,
/// then those nobody holds, then another's, from the back of the queue
/// (where its holder would reach them last). While the stage is `patient`,
/// another's partition is taken only while that other has at least two
/// left, so a holder that is not behind runs its own last partition.
fn choose<'a>(
    pending: &[usize],
    holder: impl Fn(usize) -> Option<&'a str>,
    executor: &str,
    room: usize,
    patient: bool,
) -> Vec<usize> {
    let mut picked: Vec<usize> = pending.iter().copied().filter(|&p| holder(p) == Some(executor)).collect();
    picked.extend(pending.iter().copied().filter(|&p| holder(p).is_none()));
    let mut left: HashMap<&str, usize> = HashMap::new();
    for other in pending.iter().filter_map(|&p| holder(p)).filter(|&h| h != executor) {
        *left.entry(other).or_default() += 1;
    }
    for p in pending.iter().rev().copied() {
        let Some(other) = holder(p).filter(|&h| h != executor) else { continue };
        let count = left.get_mut(other).expect("counted above");
        if !patient || *count >= 2 {
            *count -= 1;
            picked.push(p);
        }
    }
    picked.truncate(room);
    picked
}

/// The map behind `mutex`, whether or not a binding panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The next `room` pending partitions in order (all of them for a stage
/// whose tasks must each take every input: `collapses`), as Ballista binds.
fn in_order(stage: &mut RunningStage, collapses: bool, room: usize) -> Vec<usize> {
    let cap = stage
        .session_config
        .options()
        .extensions
        .get::<BallistaConfig>()
        .map(|config| config.max_partitions_per_task())
        .filter(|&n| n > 0)
        .unwrap_or(usize::MAX);
    let most = if collapses { usize::MAX } else { room.min(cap) };
    stage.pending.next_slice(most)
}

/// A task of `stage` over `partitions` for `budget`'s executor, taking
/// `vcores` of its slots, recorded in the stage as Ballista records the
/// tasks it binds.
fn bind(
    stage: &mut RunningStage,
    session: &str,
    job_id: &JobId,
    budget: &mut AvailableVcores,
    partitions: Vec<usize>,
    vcores: u32,
) -> BoundTask {
    let executor = budget.executor_id.clone();
    let task_id = stage.task_infos.len();
    let attempt = partitions.iter().map(|&p| stage.task_failure_numbers[p]).max().unwrap_or(0);
    let mut info = create_task_info(executor.clone(), task_id);
    info.global_input_partition_ids = partitions.clone();
    info.vcores_consumed = vcores;
    stage.task_infos.push(info);
    let task = TaskDescription {
        session_id: session.to_string(),
        key: TaskKey { job_id: job_id.clone(), stage_id: stage.stage_id, task_id },
        stage_attempt_num: stage.stage_attempt_num,
        task_attempt: attempt,
        global_input_partition_ids: partitions,
        vcores_consumed: vcores,
        plan: stage.plan.clone(),
        session_config: stage.session_config.clone(),
    };
    budget.vcores = budget.vcores.saturating_sub(vcores);
    (executor, task)
}

/// The input key of the level step in `plan` ([`LevelStepExec::input_key`]),
/// if it holds one: its partitions read kept shards.
fn level_step_input(plan: &Arc<dyn ExecutionPlan>) -> Option<u64> {
    match plan.downcast_ref::<LevelStepExec>() {
        Some(step) => Some(step.input_key()),
        None => plan.children().iter().find_map(|child| level_step_input(child)),
    }
}

/// True when the stage's tasks each read every input partition (a single
/// partition below the root, before any stage boundary), as Ballista's
/// binding decides it.
fn collapses_inputs(root: &Arc<dyn ExecutionPlan>) -> bool {
    fn walk(node: &Arc<dyn ExecutionPlan>) -> bool {
        if node.downcast_ref::<ShuffleReaderExec>().is_some() || node.downcast_ref::<RangeShuffleReaderExec>().is_some()
        {
            return false;
        }
        if node.properties().output_partitioning().partition_count() == 1 {
            return true;
        }
        match node.children().as_slice() {
            [child] => walk(child),
            _ => false,
        }
    }
    match root.children().as_slice() {
        [child] => walk(child),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn an_executor_takes_its_own_partitions_then_free_ones_then_the_last_of_anothers() {
        // Partitions 0, 2 and 4 are a's, 1 and 3 are b's, 5 and 6 nobody's.
        let holder = |p: usize| match p {
            0 | 2 | 4 => Some("a"),
            1 | 3 => Some("b"),
            _ => None,
        };
        let pending = [1, 2, 3, 4, 5, 6];
        for patient in [true, false] {
            assert_eq!(choose(&pending, holder, "a", 1, patient), vec![2]);
            assert_eq!(choose(&pending, holder, "a", 4, patient), vec![2, 4, 5, 6]);
            assert_eq!(choose(&pending, holder, "b", 2, patient), vec![1, 3]);
            // Nothing of its own or free left, and a behind: b runs a's last partition.
            assert_eq!(choose(&[0, 2, 4], holder, "b", 1, patient), vec![4]);
            // An executor that joined later takes free partitions, then steals.
            assert_eq!(choose(&pending, holder, "c", 3, patient), vec![5, 6, 4]);
            assert!(choose(&[], holder, "a", 2, patient).is_empty());
        }
        // a has one partition left: it will run it, unless the stage has waited too long.
        assert!(choose(&[1, 4], holder, "b", 2, true) == vec![1]);
        assert_eq!(choose(&[1, 4], holder, "b", 2, false), vec![1, 4]);
        assert!(choose(&[4], holder, "c", 1, true).is_empty());
        // Of a's three, c takes from the back until a has one left.
        assert_eq!(choose(&[0, 2, 4], holder, "c", 3, true), vec![4, 2]);
        assert_eq!(choose(&[0, 2, 4], holder, "c", 3, false), vec![4, 2, 0]);
    }
}
