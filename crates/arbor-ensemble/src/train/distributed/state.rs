//! Level-wise training in progress, of either algorithm: what the steps of
//! a cluster's training hand each other. Gradient boosting grows one
//! round's trees a level at a time ([`LevelBoosting`]); a random forest
//! grows every tree a level at a time and finishes small nodes from their
//! rows ([`LevelForest`]). Both start from the same [`LevelSummary`].

use serde::{Deserialize, Serialize};

use crate::data::dataset::TrainingData;
use crate::model::Model;
use crate::train::distributed::boosting::{LevelBoosting, LevelHistograms};
use crate::train::distributed::forest::{LevelForest, LevelForestSums};
use crate::train::distributed::node_key::NodeKey;
use crate::train::distributed::node_records::NodeRecords;
use crate::train::distributed::shard::LevelShard;
use crate::{Algorithm, ArborError, CheckedParams, Result, TrainParams};

/// Training in progress between two level jobs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum LevelState {
    /// Gradient boosting.
    Boosting(LevelBoosting),
    /// A random forest.
    Forest(LevelForest),
}

/// One or more pieces' sums for a level, of either algorithm.
#[derive(Clone, Debug)]
pub enum LevelSums {
    /// Boosting's gradient histograms.
    Boosting(LevelHistograms),
    /// A forest's histograms and small nodes' rows.
    Forest(LevelForestSums),
}

/// Where training stands, for progress reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelStanding {
    /// Boosting rounds or forest trees finished.
    pub done: usize,
    /// Rounds or trees the model will have.
    pub total: usize,
    /// What `done` and `total` count: `"rounds"` (boosting) or `"trees"` (a forest).
    pub unit: &'static str,
    /// Nodes the next level job sums.
    pub open_nodes: usize,
}

impl LevelState {
    /// Why `params` cannot be trained level by level, if they cannot.
    pub fn unsupported(params: &TrainParams) -> Option<String> {
        match params.algorithm.0 {
            Algorithm::GradientBoosting => LevelBoosting::unsupported(params),
            Algorithm::RandomForest => LevelForest::unsupported(params),
        }
    }

    /// True once every tree is grown: [`LevelState::into_model`] then gives the model.
    pub fn is_done(&self) -> bool {
        match self {
            LevelState::Boosting(b) => b.is_done(),
            LevelState::Forest(f) => f.is_done(),
        }
    }

    /// Rounds or trees done and to do, and the nodes open.
    pub fn standing(&self) -> LevelStanding {
        match self {
            LevelState::Boosting(b) => {
                LevelStanding { done: b.rounds_done(), total: b.n_rounds(), unit: "rounds", open_nodes: b.open_nodes() }
            }
            LevelState::Forest(f) => {
                LevelStanding { done: f.trees_done(), total: f.n_trees(), unit: "trees", open_nodes: f.open_nodes() }
            }
        }
    }

    /// One piece's sums for the next level.
    pub fn sums(&self, data: &TrainingData) -> Result<LevelSums> {
        self.shard_sums(&self.shard(data)?)
    }

    /// A piece's rows prepared for every level job of this training
    /// ([`LevelShard`]): kept between jobs, it gives the sums
    /// [`LevelState::sums`] gives on the piece's rows, bit for bit.
    pub fn shard(&self, data: &TrainingData) -> Result<LevelShard> {
        match self {
            LevelState::Boosting(b) => b.shard(data),
            LevelState::Forest(f) => f.shard(data),
        }
    }

    /// One piece's sums for the next level, from its shard.
    pub fn shard_sums(&self, shard: &LevelShard) -> Result<LevelSums> {
        Ok(match self {
            LevelState::Boosting(b) => LevelSums::Boosting(b.shard_histograms(shard)?),
            LevelState::Forest(f) => LevelSums::Forest(f.shard_sums(shard)?),
        })
    }

    /// One piece's records of the small nodes the next job finishes, from its shard.
    pub fn shard_records(&self, shard: &LevelShard) -> Result<NodeRecords> {
        match self {
            LevelState::Boosting(_) => Err(ArborError::Data("boosting has no small nodes to finish".into())),
            LevelState::Forest(f) => f.shard_records(shard),
        }
    }

    /// Names the training (the driver does, once, with a random number):
    /// a shard kept for one training is never read by another.
    pub fn set_training_id(&mut self, id: u64) {
        match self {
            LevelState::Boosting(b) => b.training_id = id,
            LevelState::Forest(f) => f.training_id = id,
        }
    }

    /// What this training's shards are kept under: its id and its
    /// features' bins, the same for every level of one training.
    pub fn shard_key(&self) -> u64 {
        let (id, features) = match self {
            LevelState::Boosting(b) => (b.training_id, &b.features),
            LevelState::Forest(f) => (f.training_id, &f.features),
        };
        let bins = postcard::to_stdvec(features).expect("features always serialize");
        xxhash_rust::xxh3::xxh3_64_with_seed(&bins, id)
    }

    /// The small nodes the next job finishes from their rows (a forest's,
    /// once no large node is open; see [`LevelForest::finishing`]): none
    /// when the next job sums a level.
    pub fn finishing(&self) -> Vec<NodeKey> {
        match self {
            LevelState::Boosting(_) => Vec::new(),
            LevelState::Forest(f) => f.finishing(),
        }
    }

    /// Routes the nodes the next finishing job grows over its `tasks` tasks
    /// ([`LevelForest::route_finishing`]); boosting has none.
    pub fn route_finishing<E>(
        &mut self,
        tasks: usize,
        task_of: impl FnOnce(&[u64]) -> std::result::Result<Vec<usize>, E>,
    ) -> std::result::Result<(), E> {
        match self {
            LevelState::Boosting(_) => Ok(()),
            LevelState::Forest(f) => f.route_finishing(tasks, task_of),
        }
    }

    /// The state a finishing job carries: a forest without the trees already
    /// grown ([`LevelForest::job_view`]), as bytes.
    pub fn finishing_bytes(&self) -> Vec<u8> {
        match self {
            LevelState::Boosting(_) => self.to_bytes(),
            LevelState::Forest(f) => LevelState::Forest(f.job_view()).to_bytes(),
        }
    }

    /// Grafts the subtrees a finishing job grew ([`LevelForest::graft_nodes`]).
    pub fn graft_nodes(&mut self, params: &CheckedParams, grown: Vec<(NodeKey, Vec<u8>)>) -> Result<()> {
        match self {
            LevelState::Boosting(_) => Err(ArborError::Data("boosting has no small nodes to finish".into())),
            LevelState::Forest(f) => f.graft_nodes(params, grown),
        }
    }

    /// Grows the level from every piece's merged sums.
    pub fn grow(&mut self, params: &CheckedParams, sums: LevelSums) -> Result<()> {
        match (self, sums) {
            (LevelState::Boosting(b), LevelSums::Boosting(sums)) => b.grow(params, &sums),
            (LevelState::Forest(f), LevelSums::Forest(sums)) => f.grow(params, sums),
            _ => Err(ArborError::Data("sums of one algorithm for the training of another".into())),
        }
    }

    /// The finished model (see [`LevelState::is_done`]).
    pub fn into_model(self, params: &CheckedParams) -> Result<Model> {
        match self {
            LevelState::Boosting(b) => b.into_model(params),
            LevelState::Forest(f) => f.into_model(params),
        }
    }

    /// The state as bytes, for the next step.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("training state always serializes")
    }

    /// A state read back from [`LevelState::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<LevelState> {
        let state: LevelState = postcard::from_bytes(bytes)
            .map_err(|e| ArborError::Data(format!("level-wise training state is corrupt: {e}")))?;
        let well_formed = match &state {
            LevelState::Boosting(b) => b.well_formed(),
            LevelState::Forest(f) => f.well_formed(),
        };
        if !well_formed {
            return Err(ArborError::Data("level-wise training state is corrupt: its trees do not fit together".into()));
        }
        Ok(state)
    }
}

impl LevelSums {
    /// Adds another piece's sums (of the same level).
    pub fn merge(&mut self, other: LevelSums) -> Result<()> {
        match (self, other) {
            (LevelSums::Boosting(a), LevelSums::Boosting(b)) => a.merge(&b),
            (LevelSums::Forest(a), LevelSums::Forest(b)) => a.merge(b),
            _ => Err(ArborError::Data("partial sums of two algorithms".into())),
        }
    }

    /// Bytes held on the heap, for a memory pool's accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            LevelSums::Boosting(h) => h.heap_size(),
            LevelSums::Forest(f) => f.heap_size(),
        }
    }

    /// The sums as bytes: a tag, then the algorithm's own bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            LevelSums::Boosting(h) => [vec![0], h.to_bytes()].concat(),
            LevelSums::Forest(f) => [vec![1], f.to_bytes()].concat(),
        }
    }

    /// Sums read back from [`LevelSums::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<LevelSums> {
        match bytes.split_first() {
            Some((0, h)) => Ok(LevelSums::Boosting(LevelHistograms::from_bytes(h)?)),
            Some((1, f)) => Ok(LevelSums::Forest(LevelForestSums::from_bytes(f)?)),
            _ => Err(ArborError::Data("partial level sums are corrupt".into())),
        }
    }
}
