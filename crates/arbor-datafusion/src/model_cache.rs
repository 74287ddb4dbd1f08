//! Decoded models of one session, so a model is decoded once, not once per
//! row or batch.
//!
//! An entry answers only for the very bytes it was decoded from: it keeps
//! them, and a lookup matches by address (the same Arrow buffer, which the
//! entry keeps alive and unchanged) or else by comparing every byte. What a
//! model's header claims (length, checksum) is never trusted as a key, so a
//! corrupt copy of a cached model is decoded, and rejected, on its own.

use std::sync::{Arc, Mutex};

use arbor_ensemble::Model;
use arrow::buffer::Buffer;

/// Most distinct models kept at once; the oldest goes first.
const CAPACITY: usize = 16;

/// The decoded models of one set of arbor functions (one `register` call).
#[derive(Debug, Default)]
pub struct ModelCache {
    entries: Mutex<Vec<(Buffer, Arc<Model>)>>,
}

impl ModelCache {
    /// A new, empty cache.
    pub fn new() -> Arc<ModelCache> {
        Arc::new(ModelCache::default())
    }

    /// The decoded model of `bytes`, from the cache when these bytes were seen before.
    pub fn decode(&self, bytes: Buffer) -> arbor_ensemble::Result<Arc<Model>> {
        if let Some(model) = self.lookup(&bytes) {
            return Ok(model);
        }
        let model = Arc::new(Model::from_bytes(&bytes)?);
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        entries.push((bytes, model.clone()));
        Ok(model)
    }

    /// The cached model of exactly these bytes.
    fn lookup(&self, bytes: &Buffer) -> Option<Arc<Model>> {
        let entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries
            .iter()
            .find(|(held, _)| {
                held.len() == bytes.len() && (held.as_ptr() == bytes.as_ptr() || held.as_slice() == bytes.as_slice())
            })
            .map(|(_, model)| model.clone())
    }

    /// How many models are held.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    /// Whether no model is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every cache is the same as any other to a function that holds one: which
/// cache decodes a model never changes an answer, so functions compare and
/// hash as if they held none.
impl PartialEq for ModelCache {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for ModelCache {}

impl std::hash::Hash for ModelCache {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}
