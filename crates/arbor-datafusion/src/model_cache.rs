//! Decoded models, cached by the fingerprint in their header so a model is
//! decoded once, not once per row or batch.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use arbor_ensemble::{fingerprint, Model};

/// Most distinct models kept at once.
const CAPACITY: usize = 64;

/// The one cache every arbor function decodes through, so a model used by
/// several functions, queries or sessions is decoded once.
static SHARED: LazyLock<ModelCache> = LazyLock::new(ModelCache::default);

/// The decoded model of `bytes`, from the shared cache when it was seen before.
pub(crate) fn decoded(bytes: &[u8]) -> arbor_ensemble::Result<Arc<Model>> {
    SHARED.get(bytes)
}

/// A small cache of decoded models keyed by (payload length, checksum).
#[derive(Debug, Default)]
struct ModelCache {
    models: Mutex<HashMap<(u64, u64), Arc<Model>>>,
}

impl ModelCache {
    fn get(&self, bytes: &[u8]) -> arbor_ensemble::Result<Arc<Model>> {
        let key = fingerprint(bytes);
        if let Some(key) = key {
            if let Some(model) = self.models.lock().expect("cache lock").get(&key) {
                return Ok(model.clone());
            }
        }
        let model = Arc::new(Model::from_bytes(bytes)?);
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
