//! The training state a level-wise job's functions were given, decoded
//! once per job rather than once per batch or per group.
//!
//! A job hands every batch (and every group) the same state literal, which
//! can be megabytes. The cache keeps the bytes it decoded, and answers
//! only when every byte matches.

use std::sync::{Arc, Mutex};

use arbor_ensemble::{ArborError, LevelState};

/// The last training state decoded, with its bytes.
#[derive(Debug, Default)]
pub(crate) struct StateCache {
    last: Mutex<Option<(Vec<u8>, Arc<LevelState>)>>,
}

impl StateCache {
    /// The state `bytes` encode, decoded unless they are the last state's.
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<Arc<LevelState>, ArborError> {
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((seen, state)) = last.as_ref() {
            if seen.as_slice() == bytes {
                return Ok(state.clone());
            }
        }
        let state = Arc::new(LevelState::from_bytes(bytes)?);
        *last = Some((bytes.to_vec(), state.clone()));
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arbor_ensemble::{LevelSummary, Message, NamedColumn, TrainParams, TrainingData};
    use arrow::array::{ArrayRef, Float64Array};

    use super::*;

    /// A forest's first state over 200 rows, for `options`.
    fn state(options: &str) -> Vec<u8> {
        let x: ArrayRef = Arc::new(Float64Array::from_iter_values((0..200).map(f64::from)));
        let y: ArrayRef = Arc::new(Float64Array::from_iter_values((0..200).map(|i| f64::from(i % 7))));
        let column = |name: &str, array: &ArrayRef| NamedColumn { name: name.into(), arrays: vec![array.clone()] };
        let data = TrainingData::from_columns_unsorted(
            column("y", &y),
            vec![column("x", &x)],
            arbor_ensemble::RowColumns::default(),
            None,
            |_| None,
        )
        .unwrap();
        let params = TrainParams::parse_options(options).unwrap().check().unwrap();
        let Message::Grow(state) = Message::start(&params, LevelSummary::of(&data)).unwrap() else {
            panic!("a forest grows level by level")
        };
        state.to_bytes()
    }

    /// Equal bytes give the state decoded before; other bytes are decoded
    /// on their own (corrupt ones refused), never answered by the cached state.
    #[test]
    fn answers_only_for_the_same_bytes() {
        let cache = StateCache::default();
        let (two, three) = (state("n_trees=2"), state("n_trees=3"));
        let first = cache.decode(&two).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.decode(&two.clone()).unwrap()));
        let other = cache.decode(&three).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.to_bytes(), three);
        assert!(cache.decode(&three[..three.len() - 1]).is_err());
        assert!(cache.decode(&[]).is_err());
        assert_eq!(cache.decode(&two).unwrap().to_bytes(), two);
    }
}
