//! The trained model and its trees.
//!
//! Here live [`Model`] (this file) with what it records of its features
//! ([`feature`]), a tree's node list ([`tree`]), the forms prediction walks
//! built one from another ([`flat_tree`] from node lists, [`ranked_forest`]
//! from flat trees), the holder of those forms ([`trees`]), the builder that
//! assembles models from imported trees ([`builder`]), the checks of a
//! whole model ([`validate`]) and the summaries `arbor inspect` prints
//! ([`summary`]).

pub(crate) mod builder;
pub(crate) mod feature;
pub(crate) mod flat_tree;
pub(crate) mod merge;
pub(crate) mod node_cover;
pub(crate) mod ranked_forest;
pub(crate) mod summary;
pub(crate) mod tree;
pub(crate) mod trees;
pub(crate) mod validate;

use serde::{Deserialize, Serialize};

use crate::data::label::LabelInfo;
use crate::model::feature::Feature;
use crate::model::node_cover::NodeCover;
use crate::model::trees::Trees;
use crate::{Algorithm, Loss, Task, Voting};

/// What a boosted model adds to its trees: how their outputs combine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Boosting {
    /// The loss trained, which fixes how raw scores become predictions.
    pub loss: Loss,
    /// The raw score before any tree, per output.
    pub base_score: Vec<f64>,
    /// Raw scores per row: the number of classes for softmax, else 1.
    /// Tree `t` adds its leaf value to output `t % outputs`.
    pub outputs: usize,
    /// Early stopping, when it was on.
    pub early_stopping: Option<EarlyStopping>,
}

/// What early stopping saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopping {
    /// Rounds trained before stopping.
    pub rounds_run: usize,
    /// Rounds kept: the round with the lowest validation loss, counted from 1.
    pub best_round: usize,
    /// The validation loss at that round.
    pub best_loss: f64,
    /// Rows held out for validation.
    pub validation_rows: usize,
    /// The loss after each round run, the rounds past the best included:
    /// the training curve a report draws. Empty for models written before
    /// format 5; kept in its own section of the model bytes.
    #[serde(skip)]
    pub curve: Vec<RoundLoss>,
}

/// The loss of one boosting round, on the rows it trained on and on the
/// rows held out for validation (the loss's own metric, as early stopping
/// compares it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundLoss {
    /// On the training rows (all of them, whatever the round sampled).
    pub training: f64,
    /// On the validation rows.
    pub validation: f64,
}

/// A trained forest with its metadata; encode it with [`Model::to_bytes`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Classification or regression.
    pub(crate) task: Task,
    /// The algorithm that trained it.
    pub(crate) algorithm: Algorithm,
    /// The label's name, type and classes.
    pub(crate) label: LabelInfo,
    /// The features, in the order trees index them.
    pub(crate) features: Vec<Feature>,
    /// The trees.
    pub(crate) trees: Trees,
    /// How classification votes are combined.
    pub(crate) voting: Voting,
    /// Importance per feature, when computed: for forests MDI, MDA raw or MDA
    /// scaled as `docs/algorithms.md` ("Variable importance") defines them (mean weighted impurity decrease;
    /// mean OOB error increase, raw or over its standard error); for boosting,
    /// each feature's share of the total gain.
    pub(crate) importance: Option<Vec<f64>>,
    /// Out-of-bag error, when computed.
    pub(crate) oob_error: Option<f64>,
    /// The effective value of every training option.
    pub(crate) params: Vec<(String, String)>,
    /// Rows trained on.
    pub(crate) training_rows: u64,
    /// Rows skipped because their label was null.
    pub(crate) skipped_null_labels: u64,
    /// Gradient boosting's base score and output layout (`None` for forests).
    pub(crate) boosting: Option<Boosting>,
    /// The training weight that reached each node, which explanations need
    /// (`None` for models written before format 4 stored it). Written after
    /// the trees, not with the rest of the model.
    #[serde(skip)]
    pub(crate) cover: Option<NodeCover>,
}

impl Model {
    /// Classification or regression.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The algorithm that trained it.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The label's name, type and classes.
    pub fn label(&self) -> &LabelInfo {
        &self.label
    }

    /// The features, in the order trees index them.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// The trees.
    pub fn trees(&self) -> &Trees {
        &self.trees
    }

    /// How classification votes are combined.
    pub fn voting(&self) -> Voting {
        self.voting
    }

    /// Importance per feature, in feature order, when computed.
    pub fn importance(&self) -> Option<&[f64]> {
        self.importance.as_deref()
    }

    /// Out-of-bag error, when computed.
    pub fn oob_error(&self) -> Option<f64> {
        self.oob_error
    }

    /// The effective value of every training option, in report order.
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// Rows trained on.
    pub fn training_rows(&self) -> u64 {
        self.training_rows
    }

    /// Rows skipped in training because their label was null.
    pub fn skipped_null_labels(&self) -> u64 {
        self.skipped_null_labels
    }

    /// Gradient boosting's base score and output layout (`None` for forests).
    pub fn boosting(&self) -> Option<&Boosting> {
        self.boosting.as_ref()
    }

    /// The loss after each boosting round on the training and validation
    /// rows, when rows were held out for early stopping (else empty).
    pub fn curve(&self) -> &[RoundLoss] {
        self.boosting.as_ref().and_then(|b| b.early_stopping.as_ref()).map_or(&[], |e| &e.curve)
    }

    /// Each node's cover (the training weight that reached it), when the
    /// model records it: every model trained or imported by this version.
    pub fn node_cover(&self) -> Option<&NodeCover> {
        self.cover.as_ref()
    }

    /// Outputs per prediction: the number of classes, or 1 for regression.
    pub fn value_len(&self) -> usize {
        match (&self.task, &self.label.classes) {
            (Task::Classification, Some(c)) => c.len(),
            _ => 1,
        }
    }

    /// Numbers per leaf: a class distribution for forest classification, else 1.
    pub fn leaf_width(&self) -> usize {
        if self.boosting.is_some() {
            1
        } else {
            self.value_len()
        }
    }

    /// The recorded value of parameter `key`, if any.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The one class of a model trained on a label that held a single class
    /// (as text): the model predicts it for every row, with probability 1.
    pub fn single_class(&self) -> Option<String> {
        match (&self.task, &self.label.classes) {
            (Task::Classification, Some(classes)) if classes.len() == 1 => classes.names().pop(),
            _ => None,
        }
    }

    /// The class names, for classification.
    pub fn class_names(&self) -> Vec<String> {
        self.label.classes.as_ref().map(|c| c.names()).unwrap_or_default()
    }
}
