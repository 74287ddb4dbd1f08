//! The versioned binary model format.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "ARBORMDL"
//! 8       4     format version (u32, little endian)
//! 12      8     payload length in bytes (u64, little endian)
//! 20      8     XXH3-64 checksum of the payload (u64, little endian)
//! 28      n     payload
//! ```
//!
//! The payload of version 2 is a u64 length, the model without its trees
//! (postcard-encoded, `trees` empty), then the trees in the columnar layout
//! of [`crate::tree_columns`]. Version 1, whose payload is the whole model
//! postcard-encoded, is still read.
//!
//! Decoding checks every field and the model's structure, so corrupt or
//! truncated bytes give an error, never a panic or a wrong prediction.

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::flat_tree::FlatCache;
use crate::model::Model;
use crate::tree::{Node, SplitTest, Tree};
use crate::tree_columns;
use crate::{ArborError, Loss, Result, Task};
use arbor_quantize::FeatureType;

/// First bytes of every arbor model.
pub const MAGIC: &[u8; 8] = b"ARBORMDL";
/// The format version this build writes (it reads this one and version 1).
pub const FORMAT_VERSION: u32 = 2;
const HEADER_LEN: usize = 28;

impl Model {
    /// Encodes the model. The same model always gives the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Everything but the trees, which follow in their columnar layout.
        let rest = Model {
            task: self.task,
            algorithm: self.algorithm,
            label: self.label.clone(),
            features: self.features.clone(),
            trees: Vec::new(),
            voting: self.voting,
            importance: self.importance.clone(),
            oob_error: self.oob_error,
            params: self.params.clone(),
            training_rows: self.training_rows,
            skipped_null_labels: self.skipped_null_labels,
            boosting: self.boosting.clone(),
            flat: FlatCache::default(),
        };
        let rest = postcard::to_stdvec(&rest).expect("a model always serializes");
        // The payload is written in place after the header, whose length and
        // checksum are filled in last: no second copy of a large forest.
        let mut out = Vec::with_capacity(HEADER_LEN + 8 + rest.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.resize(HEADER_LEN, 0);
        out.extend_from_slice(&(rest.len() as u64).to_le_bytes());
        out.extend_from_slice(&rest);
        tree_columns::encode(&self.trees, &mut out);
        let (header, payload) = out.split_at_mut(HEADER_LEN);
        header[12..20].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        header[20..28].copy_from_slice(&xxh3_64(payload).to_le_bytes());
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
        if version != 1 && version != FORMAT_VERSION {
            return Err(ArborError::Model(format!(
                "format version {version} is not supported (this build reads versions 1 to {FORMAT_VERSION})"
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
        let corrupt = |e: String| ArborError::Model(format!("corrupt payload: {e}"));
        let model = if version == 1 {
            postcard::from_bytes(payload).map_err(|e| corrupt(e.to_string()))?
        } else {
            let len = payload.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
            let (rest, trees) = len
                .and_then(|len| payload[8..].split_at_checked(usize::try_from(len).ok()?))
                .ok_or_else(|| corrupt("the model's length runs past the payload".into()))?;
            let mut model: Model = postcard::from_bytes(rest).map_err(|e| corrupt(e.to_string()))?;
            if !model.trees.is_empty() {
                return Err(corrupt("trees inside the model's header".into()));
            }
            model.trees = tree_columns::decode(trees).map_err(corrupt)?;
            model
        };
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
        let check_tree = |(t, tree): (usize, &Tree)| -> std::result::Result<(), String> {
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
            Ok(())
        };
        // In parallel, but the error reported is the first tree's, whatever the threads.
        match self.trees.par_iter().enumerate().find_map_first(|t| check_tree(t).err()) {
            Some(first) => Err(first),
            None => Ok(()),
        }
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
