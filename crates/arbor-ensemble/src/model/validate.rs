//! The checks of a whole model: its header (features, classes, boosting
//! layout), then its trees. Node lists are checked by [`Tree::validate`]
//! (what flattening them relies on), then every tree in the flat layout by
//! [`FlatTree::check`], the check decoded files get as they load.
//!
//! [`FlatTree::check`]: crate::model::flat_tree::FlatTree::check

use arbor_quantize::FeatureType;
use rayon::prelude::*;

use crate::model::tree::Tree;
use crate::model::Model;
use crate::{Loss, Task};

impl Model {
    /// Checks that the model is internally consistent. Trees decoded into
    /// the flat layout were checked as they decoded; node lists are checked here.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.validate_header()?;
        if self.trees.is_empty() {
            return Err("the model has no trees".into());
        }
        if let Some(b) = &self.boosting {
            if self.trees.len() % b.outputs != 0 {
                return Err(format!("{} trees do not fit {} outputs per round", self.trees.len(), b.outputs));
            }
        }
        if let Some(cover) = &self.cover {
            cover.check(&self.trees.shapes())?;
        }
        match self.trees.lists_if_built() {
            Some(trees) => self.validate_trees(trees),
            None => Ok(()),
        }
    }

    /// Checks everything but the trees' nodes.
    pub(crate) fn validate_header(&self) -> std::result::Result<(), String> {
        let n_features = self.features.len();
        if n_features == 0 {
            return Err("the model has no features".into());
        }
        match (self.task, &self.label.classes) {
            (Task::Classification, Some(c)) if !c.is_empty() => {}
            (Task::Classification, _) => return Err("a classification model needs at least one class".into()),
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
        if let Some(b) = &self.boosting {
            let outputs = match (b.loss, self.task) {
                (Loss::Logistic, Task::Classification) => 1,
                (Loss::Softmax, Task::Classification) => self.value_len(),
                (loss, Task::Regression) if !loss.is_classification() => 1,
                (loss, task) => return Err(format!("loss {} does not fit task {}", loss.name(), task.name())),
            };
            let parameter = match b.loss {
                Loss::Quantile { alpha } => (!(alpha > 0.0 && alpha < 1.0)).then_some(("alpha", alpha)),
                Loss::Huber { delta } => (!(delta > 0.0 && delta.is_finite())).then_some(("huber_delta", delta)),
                Loss::Tweedie { power } => (!(power > 1.0 && power < 2.0)).then_some(("tweedie_power", power)),
                Loss::Lambdarank { ndcg_at: 0, .. } => Some(("ndcg_at", 0.0)),
                Loss::Lambdarank { truncation: 0, .. } => Some(("lambdarank_truncation_level", 0.0)),
                Loss::Lambdarank { sigmoid, .. } if !(sigmoid > 0.0 && sigmoid.is_finite()) => {
                    Some(("sigmoid", sigmoid))
                }
                _ => None,
            };
            if let Some((key, value)) = parameter {
                return Err(format!("loss {} has {key} {value}, out of its range", b.loss.name()));
            }
            if b.loss == Loss::Logistic && self.value_len() != 2 {
                return Err("a logistic model must have two classes".into());
            }
            if b.outputs != outputs || b.base_score.len() != outputs {
                return Err(format!(
                    "{} base scores and {} outputs per round do not fit the model's {outputs} outputs",
                    b.base_score.len(),
                    b.outputs
                ));
            }
        }
        Ok(())
    }

    /// Checks trees in node lists: their structure first, which flattening
    /// relies on, then the flat trees as a decoded file's are checked.
    fn validate_trees(&self, trees: &[Tree]) -> std::result::Result<(), String> {
        let leaf_width = self.leaf_width();
        first_error(trees, |tree| tree.validate(self.features.len(), leaf_width))?;
        first_error(self.trees.flat(), |flat| flat.check(&self.features, leaf_width).map(drop))
    }
}

/// The first tree's error, `tree {t}: ...`, whatever the threads that check them in parallel.
fn first_error<T: Sync>(
    trees: &[T],
    check: impl Fn(&T) -> std::result::Result<(), String> + Sync,
) -> std::result::Result<(), String> {
    match trees.par_iter().enumerate().find_map_first(|(t, tree)| check(tree).err().map(|e| format!("tree {t}: {e}"))) {
        Some(first) => Err(first),
        None => Ok(()),
    }
}
