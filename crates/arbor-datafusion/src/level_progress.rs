//! Progress of level-wise training, for a front end to show while the
//! level jobs of a long `train_forest` run on a cluster.

use std::fmt;
use std::sync::Arc;

/// Where level-wise training stands after one of its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelStep {
    /// Jobs run so far for this model: the summary, then one per level.
    pub jobs: usize,
    /// Rounds (boosting) or trees (a forest) finished.
    pub rounds_done: usize,
    /// Rounds or trees the model will have.
    pub n_rounds: usize,
    /// What is counted: `"rounds"` or `"trees"`.
    pub unit: &'static str,
    /// Nodes the next level job sums histograms for (0 once training is done).
    pub open_nodes: usize,
}

/// A callback told of every finished level job. Set it as a session
/// config extension (`SessionConfig::with_extension`) and
/// [`LevelTraining`](crate::LevelTraining) calls it; without one, training
/// is silent.
#[derive(Clone)]
pub struct LevelProgress(Arc<dyn Fn(&LevelStep) + Send + Sync>);

impl LevelProgress {
    /// Calls `report` after every level job.
    pub fn new(report: impl Fn(&LevelStep) + Send + Sync + 'static) -> LevelProgress {
        LevelProgress(Arc::new(report))
    }

    /// Tells the callback of `step`.
    pub fn report(&self, step: &LevelStep) {
        (self.0)(step)
    }
}

impl fmt::Debug for LevelProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LevelProgress")
    }
}
