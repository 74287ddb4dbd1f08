//! Decoded models, cached by the fingerprint in their header so a model is
//! decoded once, not once per row or batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arbor_ensemble::{fingerprint, Model};
use datafusion::error::{DataFusionError, Result};

/// Most distinct models kept at once.
const CAPACITY: usize = 64;

/// A small cache of decoded models keyed by (payload length, checksum).
#[derive(Debug, Default)]
pub(crate) struct ModelCache {
    models: Mutex<HashMap<(u64, u64), Arc<Model>>>,
}

impl ModelCache {
    /// The decoded model of `bytes`, from the cache when it was seen before.
    pub fn get(&self, bytes: &[u8]) -> Result<Arc<Model>> {
        let key = fingerprint(bytes);
        if let Some(key) = key {
            if let Some(model) = self.models.lock().expect("cache lock").get(&key) {
                return Ok(model.clone());
            }
        }
        let model = Arc::new(Model::from_bytes(bytes).map_err(|e| DataFusionError::Execution(e.to_string()))?);
        if let Some(key) = key {
            let mut models = self.models.lock().expect("cache lock");
            if models.len() >= CAPACITY {
                models.clear();
            }
            models.insert(key, model.clone());
        }
        Ok(model)
    }
}
