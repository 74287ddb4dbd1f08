//! Continued training (`init_model`): boosting rounds appended to a boosted
//! model that arbor trained, on rows binned on the model's own bins
//! ([`crate::data::model_bins`]).
//!
//! The new rounds start from the scores the model's trees give each row,
//! added to its base score tree by tree in the order training added them,
//! and draw their random streams as rounds `k, k + 1, ...` of a model of
//! `k` rounds: so 30 rounds then 20 more grow the trees 50 rounds at once
//! grow on the same rows. The model's loss, classes, features and bins are
//! kept; a mismatch is an error naming the key or the column.

use crate::data::binned_data::BinnedData;
use crate::model::tree::Tree;
use crate::model::{Boosting, Model};
use crate::train::walk_values::{add_tree_scores, WalkValues};
use crate::{Algorithm, ArborError, CheckedParams, Loss, Result};

/// The model continued, checked against the data and parameters.
pub(crate) struct Continued<'a> {
    /// The model whose trees come first.
    pub model: &'a Model,
    /// Its boosting record.
    pub boosting: &'a Boosting,
    /// Its rounds: trees per output.
    pub rounds: usize,
}

impl<'a> Continued<'a> {
    /// `model` checked as the start of boosting on `data` with `params`:
    /// a boosted model arbor trained, of the data's task, classes,
    /// features and bins. Returns it with the loss the new rounds use: the
    /// model's, which `loss` (and its parameters) may repeat but not change.
    pub(crate) fn check(model: &'a Model, data: &BinnedData, params: &CheckedParams) -> Result<(Continued<'a>, Loss)> {
        let boosting = continuable(model)?;
        let refuse = |message: String| ArborError::InvalidOption { key: "init_model".into(), message };
        refuse_exact(data.raw.is_some())?;
        if data.task != model.task {
            return Err(refuse(format!(
                "the model is a {} model and the data was read for {}",
                model.task.name(),
                data.task.name()
            )));
        }
        if data.features.len() != model.features.len() {
            return Err(refuse(format!(
                "the model has {} features and the data {}; continued training needs the model's features",
                model.features.len(),
                data.features.len()
            )));
        }
        for (here, known) in data.features.iter().zip(&model.features) {
            if here != known {
                return Err(ArborError::Data(format!(
                    "init_model: column '{}' is not binned as the model bins its feature '{}'; \
                     bin the rows with a trainer given the model (Trainer::init_model, then Trainer::bin)",
                    here.name, known.name
                )));
            }
        }
        let names = |info: &crate::LabelInfo| info.classes.as_ref().map(|c| c.names());
        if names(&data.label) != names(&model.label) {
            return Err(ArborError::Data(format!(
                "init_model: the classes of label column '{}' ({}) are not the model's ({})",
                data.label.name,
                names(&data.label).unwrap_or_default().join(", "),
                names(&model.label).unwrap_or_default().join(", ")
            )));
        }
        let n_classes = data.label.classes.as_ref().map_or(0, |c| c.len());
        let trained = boosting.loss;
        if params.boosting.loss.is_some() {
            let asked = params.boosting.resolve_loss(data.task, n_classes)?;
            if asked != trained {
                return Err(ArborError::InvalidOption {
                    key: "loss".into(),
                    message: format!(
                        "{asked:?} asked, but init_model was trained with {trained:?}; \
                         continued training keeps the model's loss (leave loss unset to use it)"
                    ),
                });
            }
        }
        let rounds = model.trees.len() / boosting.outputs.max(1);
        Ok((Continued { model, boosting, rounds }, trained))
    }

    /// The model's trees, which the continued model's begin with.
    pub(crate) fn trees(&self) -> Vec<Tree> {
        (0..self.model.trees.len()).map(|t| self.model.trees.get(t).expect("t < len").clone()).collect()
    }

    /// Every row's raw scores (`outputs` a row) under the model's `trees`:
    /// its base score, then the trees added in order, read on `walk`.
    /// `after_round` sees the scores after each of the model's rounds.
    pub(crate) fn start_scores(
        &self,
        trees: &[Tree],
        walk: &WalkValues<'_>,
        n: usize,
        mut after_round: impl FnMut(&[f64]),
    ) -> Vec<f64> {
        let outputs = self.boosting.outputs;
        let mut raw: Vec<f64> = self.boosting.base_score.iter().copied().cycle().take(n * outputs).collect();
        for round in trees.chunks(outputs) {
            add_tree_scores(&mut raw, outputs, 0, round, |f, r| walk.value(f, r));
            after_round(&raw);
        }
        raw
    }

    /// The model's node covers, for its trees ahead of the new ones, if it has them.
    pub(crate) fn covers(&self) -> Option<Vec<Vec<f32>>> {
        self.model.cover.as_ref().map(|cover| cover.trees().to_vec())
    }

    /// The model's importances scaled to its share of the rounds, to add the
    /// new rounds' to (the model keeps shares of gain, not the gains).
    pub(crate) fn importance_weight(&self, new_rounds: usize) -> Option<(&'a [f64], f64)> {
        let total = self.rounds + new_rounds;
        self.model.importance.as_deref().map(|shares| (shares, self.rounds as f64 / total.max(1) as f64))
    }
}

/// The boosting record of a model that can be continued: a boosted model
/// arbor trained (an imported or hand-built one has no bins to train on).
pub(crate) fn continuable(model: &Model) -> Result<&Boosting> {
    let refuse = |message: String| ArborError::InvalidOption { key: "init_model".into(), message };
    let (Algorithm::GradientBoosting, Some(boosting)) = (model.algorithm, &model.boosting) else {
        return Err(refuse(format!(
            "the model is a {}; only gradient boosting can be continued",
            model.algorithm.name().replace('-', " ")
        )));
    };
    if model.params.iter().any(|(key, _)| key == "built_by") {
        return Err(refuse(
            "the model was imported or built by hand and has no bins to continue on; \
             continue a model arbor trained"
                .into(),
        ));
    }
    Ok(boosting)
}

/// An error for `split_method=exact` with `init_model`: exact splits fit
/// their bins on the data's values, continued training keeps the model's.
pub(crate) fn refuse_exact(exact: bool) -> Result<()> {
    if exact {
        return Err(ArborError::InvalidOption {
            key: "split_method".into(),
            message: "exact fits its bins on the data's values, and continued training keeps the model's; \
                      use split_method=hist with init_model"
                .into(),
        });
    }
    Ok(())
}
