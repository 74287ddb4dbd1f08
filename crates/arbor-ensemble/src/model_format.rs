//! The versioned binary model format.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "ARBORMDL"
//! 8       4     format version (u32, little endian)
//! 12      8     payload length in bytes (u64, little endian)
//! 20      8     XXH3-64 checksum of the payload (u64, little endian)
//! 28      n     payload: the model, postcard-encoded
//! ```
//!
//! Decoding checks every field and the model's structure, so corrupt or
//! truncated bytes give an error, never a panic or a wrong prediction.

use xxhash_rust::xxh3::xxh3_64;

use crate::model::Model;
use crate::tree::{Node, SplitTest};
use crate::{ArborError, Loss, Result, Task};
use arbor_quantize::FeatureType;

/// First bytes of every arbor model.
pub const MAGIC: &[u8; 8] = b"ARBORMDL";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 28;

impl Model {
    /// Encodes the model. The same model always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let payload = postcard::to_stdvec(self).expect("a model always serializes");
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&xxh3_64(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    /// Decodes and validates model bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let (len, checksum) = fingerprint(bytes).ok_or_else(|| {
            if bytes.len() >= MAGIC.len() && &bytes[..MAGIC.len()] != MAGIC {
                ArborError::Model("not an arbor model (the file does not start with ARBORMDL)".into())
            } else {
                ArborError::Model(format!(
                    "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header",
                    bytes.len()
                ))
            }
        })?;
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            return Err(ArborError::Model(format!(
                "format version {version} is not supported (this build reads version {FORMAT_VERSION})"
            )));
        }
        let payload = &bytes[HEADER_LEN..];
        if payload.len() as u64 != len {
            return Err(ArborError::Model(format!(
                "truncated or padded: the header announces {len} payload bytes, found {}",
                payload.len()
            )));
        }
        if xxh3_64(payload) != checksum {
            return Err(ArborError::Model("corrupt: the payload does not match its checksum".into()));
        }
        let model: Model =
            postcard::from_bytes(payload).map_err(|e| ArborError::Model(format!("corrupt payload: {e}")))?;
        model.validate().map_err(ArborError::Model)?;
        Ok(model)
    }

    /// Checks that the model is internally consistent.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n_features = self.features.len();
        if n_features == 0 {
            return Err("the model has no features".into());
        }
        match (self.task, &self.label.classes) {
            (Task::Classification, Some(c)) if c.len() >= 2 => {}
            (Task::Classification, _) => return Err("a classification model needs two classes or more".into()),
            (Task::Regression, None) => {}
            (Task::Regression, Some(_)) => return Err("a regression model has no classes".into()),
        }
        self.label.arrow_type().map_err(|e| e.to_string())?;
        for f in &self.features {
            if (f.kind == FeatureType::Categorical) != f.mapper.is_categorical() {
                return Err(format!("feature '{}' has bins of the wrong kind", f.name));
            }
        }
        if let Some(imp) = &self.importance {
            if imp.len() != n_features {
                return Err(format!("{} importances for {n_features} features", imp.len()));
            }
        }
        if self.trees.is_empty() {
            return Err("the model has no trees".into());
        }
        if let Some(b) = &self.boosting {
            let outputs = match (b.loss, self.task) {
                (Loss::Squared, Task::Regression) | (Loss::Logistic, Task::Classification) => 1,
                (Loss::Softmax, Task::Classification) => self.value_len(),
                (loss, task) => return Err(format!("loss {} does not fit task {}", loss.name(), task.name())),
            };
            if b.loss == Loss::Logistic && self.value_len() != 2 {
                return Err("a logistic model must have two classes".into());
            }
            if b.outputs != outputs || b.base_score.len() != outputs || self.trees.len() % outputs != 0 {
                return Err(format!(
                    "{} trees and {} base scores do not fit {} outputs per round",
                    self.trees.len(),
                    b.base_score.len(),
                    b.outputs
                ));
            }
        }
        let leaf_width = self.leaf_width();
        for (t, tree) in self.trees.iter().enumerate() {
            tree.validate(n_features, leaf_width).map_err(|e| format!("tree {t}: {e}"))?;
            for node in &tree.nodes {
                if let Node::Split { feature, test, .. } = node {
                    // Numeric features may hold integer category codes (imported LightGBM models).
                    let categorical = self.features[*feature as usize].kind == FeatureType::Categorical;
                    if categorical && !matches!(test, SplitTest::InCategories(_)) {
                        return Err(format!("tree {t}: a split does not fit the type of its feature"));
                    }
                    if test.threshold().is_some_and(f64::is_nan) {
                        return Err(format!("tree {t}: a split has a NaN threshold"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Payload length and checksum of model bytes, read from the header alone:
/// a cheap key under which a decoded model can be cached.
pub fn fingerprint(bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let checksum = u64::from_le_bytes(bytes[20..28].try_into().ok()?);
    Some((len, checksum))
}
