//! A [`Backend`] that runs every job in this process's memory, over pieces
//! of the rows as a cluster's partitions would hold them: each piece keeps
//! its shard from the first job that reads it, and every message goes
//! through its bytes, as it would between machines. It trains the model a
//! cluster trains on the same rows, bit for bit; the unit tests and the
//! `level_file` example run on it.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::data::canonical_order::mix;
use crate::data::dataset::TrainingData;
use crate::data::summary::LevelSummary;
use crate::train::distributed::driver::{train_now, Backend, Outcome};
use crate::train::distributed::node_key::NodeKey;
use crate::train::distributed::protocol::Message;
use crate::train::distributed::shard::LevelShard;
use crate::train::distributed::state::LevelState;
use crate::{ArborError, CheckedParams, Result};

/// The tasks a finishing job spreads its nodes over unless told otherwise.
const TASKS: usize = 4;

/// Level-wise training's jobs, run here over pieces of the rows.
#[derive(Debug)]
pub struct InMemory {
    pieces: Vec<TrainingData>,
    params: CheckedParams,
    tasks: usize,
    /// Each piece's shard and the key it was built for ([`LevelState::shard_key`]).
    shards: Option<(u64, Vec<LevelShard>)>,
}

impl InMemory {
    /// Jobs over `pieces`, with the options `params` (as every piece's task would read them).
    pub fn new(pieces: Vec<TrainingData>, params: CheckedParams) -> InMemory {
        InMemory { pieces, params, tasks: TASKS, shards: None }
    }

    /// Finishing jobs spread their nodes over `tasks` tasks (at least one).
    pub fn with_tasks(mut self, tasks: usize) -> InMemory {
        self.tasks = tasks.max(1);
        self
    }

    /// Trains level by level over the pieces ([`train_now`]): the model, or
    /// the reason the rows or options need training on one node.
    pub fn train(&mut self) -> Result<Outcome> {
        let params = self.params.clone();
        Ok(train_now(self, &params, 0, |_, _| {})?)
    }

    /// Each piece's shard for `state`, built from its rows unless kept.
    fn shards(&mut self, state: &LevelState) -> Result<&[LevelShard]> {
        let key = state.shard_key();
        if self.shards.as_ref().is_none_or(|(kept, _)| *kept != key) {
            let shards = self.pieces.iter().map(|piece| state.shard(piece)).collect::<Result<Vec<_>>>()?;
            self.shards = Some((key, shards));
        }
        Ok(self.shards.as_ref().map(|(_, shards)| shards.as_slice()).unwrap_or_default())
    }

    /// Every piece's message, each through its bytes, merged.
    fn merged(pieces: impl Iterator<Item = Result<Message>>) -> Result<Message> {
        let mut merged: Option<Message> = None;
        for message in pieces {
            let message = Message::from_bytes(&message?.to_bytes())?;
            match merged.as_mut() {
                Some(merged) => merged.merge(message)?,
                None => merged = Some(message),
            }
        }
        merged.ok_or_else(|| ArborError::NothingToTrain("training data is empty (no pieces)".into()))
    }
}

impl Backend for InMemory {
    type Error = ArborError;

    async fn summary(&mut self) -> Result<Message> {
        let summaries = self.pieces.iter().map(|piece| Ok(Message::Summary(LevelSummary::of(piece))));
        let merged = Self::merged(summaries).unwrap_or(Message::Summary(LevelSummary::default()));
        merged.conclude(&self.params)
    }

    async fn level(&mut self, state: Vec<u8>) -> Result<Message> {
        let state = LevelState::from_bytes(&state)?;
        let shards = self.shards(&state)?;
        Self::merged(shards.iter().map(|shard| Ok(Message::Sums(state.shard_sums(shard)?))))
    }

    async fn finish(&mut self, state: Vec<u8>) -> Result<Vec<(NodeKey, Vec<u8>)>> {
        let state = LevelState::from_bytes(&state)?;
        let LevelState::Forest(forest) = &state else {
            return Err(ArborError::Data("only a forest finishes small nodes from their rows".into()));
        };
        // Each node's records from every piece, grouped by node as a GROUP BY
        // groups them; the pieces and then the nodes on rayon's threads, as
        // a cluster's tasks would run them side by side.
        let shards = self.shards(&state)?;
        let per_piece = shards.par_iter().map(|shard| state.shard_records(shard)).collect::<Result<Vec<_>>>()?;
        let mut by_node = BTreeMap::<NodeKey, Vec<Vec<u8>>>::new();
        for (key, records) in per_piece.into_iter().flat_map(|records| records.nodes) {
            by_node.entry(key).or_default().push(records);
        }
        by_node
            .into_par_iter()
            .map(|(key, records)| {
                let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
                Ok((key, forest.grow_node(&self.params, key, &records)?))
            })
            .collect()
    }

    fn tasks(&self) -> usize {
        self.tasks
    }

    fn task_of(&self, keys: &[u64], tasks: usize) -> Result<Vec<usize>> {
        Ok(keys.iter().map(|&key| (mix(key) % tasks as u64) as usize).collect())
    }

    fn release(&mut self, shards: u64) {
        if self.shards.as_ref().is_some_and(|(kept, _)| *kept == shards) {
            self.shards = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::distributed::test_rows::{rmse, table, trainer};
    use crate::Model;

    /// The in-memory backend over the pieces `cuts` makes of `batch`, finishing over `tasks` tasks.
    fn backend(options: &str, label: &str, cuts: &[(usize, usize)], tasks: usize) -> InMemory {
        let trainer = trainer(options, label);
        let batch = table(0..12_000, 9, |i| ((i * 2_654_435_761) % 1000) as f64 / 250.0);
        let pieces = cuts.iter().map(|&(at, len)| trainer.training_data(vec![batch.slice(at, len)]).unwrap());
        InMemory::new(pieces.collect(), trainer.params().check().unwrap()).with_tasks(tasks)
    }

    fn model(backend: &mut InMemory) -> Model {
        match backend.train().unwrap() {
            Outcome::Model(model) => *model,
            Outcome::OneNode(reason) => panic!("trains on one node: {reason}"),
        }
    }

    /// Both algorithms train through the driver to a model that depends on
    /// the rows alone (not the pieces, their order or the finishing
    /// tasks), fits them, and leaves no shard behind.
    #[test]
    fn the_driver_trains_both_algorithms_whatever_the_pieces() {
        let batch = table(0..12_000, 9, |i| ((i * 2_654_435_761) % 1000) as f64 / 250.0);
        let y = batch.column_by_name("y").unwrap().as_any().downcast_ref::<arrow::array::Float64Array>().unwrap();
        let mean = y.values().iter().sum::<f64>() / y.len() as f64;
        let spread = (y.values().iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / y.len() as f64).sqrt();
        for options in ["n_trees=4 seed=3", "algorithm=gradient-boosting n_rounds=20 learning_rate=0.3 max_depth=4"] {
            let mut whole = backend(options, "y", &[(0, 12_000)], 1);
            let one = model(&mut whole);
            assert!(whole.shards.is_none(), "{options}: the shards are let go");
            let three = model(&mut backend(options, "y", &[(8100, 3900), (0, 5234), (5234, 2866)], 5));
            assert_eq!(one.to_bytes(), three.to_bytes(), "{options}");
            // Trained on these rows, it predicts them well within their spread.
            let error = rmse(&one, &batch);
            assert!(error < spread / 2.0, "{options}: rmse {error} against a spread of {spread}");
        }
    }

    /// What levels cannot train comes back as the reason, not a model or an error.
    #[test]
    fn what_levels_cannot_train_comes_back_as_its_reason() {
        match backend("n_trees=2 oob=true", "y", &[(0, 6000), (6000, 6000)], 2).train().unwrap() {
            Outcome::OneNode(reason) => assert!(reason.contains("out-of-bag"), "{reason}"),
            Outcome::Model(_) => panic!("oob trains on one node"),
        }
        let mut none = InMemory::new(Vec::new(), trainer("n_trees=2", "y").params().check().unwrap());
        match none.train().unwrap() {
            Outcome::OneNode(reason) => assert!(reason.contains("empty"), "{reason}"),
            Outcome::Model(_) => panic!("no rows, no model"),
        }
    }
}
