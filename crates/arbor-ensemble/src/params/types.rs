//! The typed training parameters: the task, the algorithm and each
//! algorithm's settings, with the defaults DESIGN.md gives.

use arbor_quantize::QuantizeParams;
use serde::{Deserialize, Serialize};

use crate::params::rules::invalid;
use crate::Result;

/// What the model predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    /// A class per row.
    Classification,
    /// A real value per row.
    Regression,
}

impl Task {
    /// The name used in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Task::Classification => "classification",
            Task::Regression => "regression",
        }
    }
}

/// Which ensemble is trained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Algorithm {
    /// Random forest (seeds 000–003).
    RandomForest,
    /// Gradient boosted trees (seed 004).
    GradientBoosting,
}

impl Algorithm {
    /// The name used in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::RandomForest => "random-forest",
            Algorithm::GradientBoosting => "gradient-boosting",
        }
    }
}

/// Features tried per split node (seed `featuresPerNode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MaxFeatures {
    /// `sqrt(p)` for classification, `p/3` for regression.
    Default,
    /// A fixed number.
    Count(usize),
    /// `floor(sqrt(p))`, at least 1.
    Sqrt,
    /// `floor(p / 3)`, at least 1.
    Third,
    /// Every feature.
    All,
}

/// Impurity criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CriterionKind {
    /// Gini for classification, MSE for regression.
    Default,
    /// Gini index.
    Gini,
    /// Entropy (information gain).
    Entropy,
    /// Mean squared error.
    Mse,
}

/// How the trees' answers are combined for classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Voting {
    /// Mean of the leaves' class distributions.
    Weighted,
    /// Each tree votes for its leaf's most frequent class.
    Unweighted,
}

/// Which variable importance is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImportanceKind {
    /// None.
    None,
    /// Mean decrease of impurity.
    Mdi,
    /// Mean decrease of accuracy, raw.
    MdaRaw,
    /// Mean decrease of accuracy, scaled by its standard deviation.
    MdaScaled,
}

/// Random forest parameters; `Default` matches DESIGN.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForestParams {
    /// Number of trees.
    pub n_trees: usize,
    /// Features tried per split.
    pub max_features: MaxFeatures,
    /// Draw each tree's rows with replacement.
    pub bootstrap: bool,
    /// Rows per tree as a fraction of the training rows.
    pub sample_fraction: f64,
    /// `hist` (false) or `exact` (true).
    pub exact: bool,
    /// `random` splitter (extra trees) instead of `best`.
    pub random_splitter: bool,
    /// Most bins per feature, the missing-value bin included.
    pub max_bins: usize,
    /// Fewest rows in a bin.
    pub min_bin_size: usize,
    /// Deepest level (0 = unlimited).
    pub max_depth: usize,
    /// Most leaves per tree (0 = depth-first without limit).
    pub max_leaf_nodes: usize,
    /// Fewest rows in a leaf (`None`: 1 classification, 5 regression).
    pub min_samples_leaf: Option<usize>,
    /// Fewest rows in a node that may be split.
    pub min_samples_split: usize,
    /// Fewest rows (weight, with sample weights) of a category in a node for a
    /// subset split to place it on its own; rarer categories of the node are
    /// pooled and move together, so that a few rows' noise cannot pick a split
    /// (10, as LightGBM and scikit-learn's histogram boosting; 1: no pooling).
    pub min_samples_category: usize,
    /// How many times the gain that noise is expected to show a subset split
    /// of `k` categories charges it for each of its `k − 1` degrees of
    /// freedom beyond five: a feature of many categories (flights' 104
    /// destinations) must win a node on signal, not on the number of subsets
    /// it could pick from (24; 0: no charge).
    pub category_penalty: f64,
    /// Fewest total weight in a leaf, as a fraction of all weight.
    pub min_weight_fraction_leaf: f64,
    /// Nodes with impurity at or below this are leaves.
    pub impurity_threshold: f64,
    /// Least weighted impurity decrease (`W_t/W · Δi`) for a split.
    pub min_impurity_decrease: f64,
    /// Impurity criterion.
    pub criterion: CriterionKind,
    /// Voting method.
    pub voting: Voting,
    /// Compute the out-of-bag error.
    pub oob: bool,
    /// Compute per-observation OOB error and prediction.
    pub oob_per_observation: bool,
    /// Variable importance.
    pub importance: ImportanceKind,
    /// Seed of all random streams.
    pub seed: u64,
}

impl Default for ForestParams {
    fn default() -> Self {
        ForestParams {
            n_trees: 100,
            max_features: MaxFeatures::Default,
            bootstrap: true,
            sample_fraction: 1.0,
            exact: false,
            random_splitter: false,
            max_bins: 256,
            min_bin_size: 5,
            max_depth: 0,
            max_leaf_nodes: 0,
            min_samples_leaf: None,
            min_samples_split: 2,
            min_samples_category: 10,
            category_penalty: 24.0,
            min_weight_fraction_leaf: 0.0,
            impurity_threshold: 0.0,
            min_impurity_decrease: 0.0,
            criterion: CriterionKind::Default,
            voting: Voting::Weighted,
            oob: false,
            oob_per_observation: false,
            importance: ImportanceKind::Mdi,
            seed: 777,
        }
    }
}

impl ForestParams {
    /// How features are binned: quantiles (`hist`) or a bin per value (`exact`).
    pub fn quantize_params(&self) -> QuantizeParams {
        binning(self.exact, self.max_bins, self.min_bin_size)
    }

    /// Features tried per node for `p` features and a task.
    pub fn features_per_node(&self, p: usize, task: Task) -> Result<usize> {
        let m = match self.max_features {
            MaxFeatures::Default if task == Task::Classification => (p as f64).sqrt() as usize,
            MaxFeatures::Default | MaxFeatures::Third => p / 3,
            MaxFeatures::Sqrt => (p as f64).sqrt() as usize,
            MaxFeatures::All => p,
            MaxFeatures::Count(k) if k > p => {
                return Err(invalid("max_features", format!("{k} exceeds the number of features ({p})")))
            }
            MaxFeatures::Count(k) => k,
        };
        Ok(m.clamp(1, p.max(1)))
    }

    /// Fewest rows per leaf for a task.
    pub fn min_samples_leaf(&self, task: Task) -> usize {
        self.min_samples_leaf.unwrap_or(match task {
            Task::Classification => 1,
            Task::Regression => 5,
        })
    }
}

/// The loss gradient boosting minimizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Loss {
    /// Squared error, regression.
    Squared,
    /// Binary cross-entropy on one raw score (two classes).
    Logistic,
    /// Multinomial cross-entropy, one tree per class per round.
    Softmax,
}

impl Loss {
    /// The name used in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Loss::Squared => "squared",
            Loss::Logistic => "logistic",
            Loss::Softmax => "softmax",
        }
    }
}

/// Gradient boosting parameters (seed 004); `Default` matches DESIGN.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoostingParams {
    /// Boosting rounds (`maxIterations`).
    pub n_rounds: usize,
    /// Deepest level (0 = unlimited).
    pub max_depth: usize,
    /// Shrinkage applied to every tree's leaves.
    pub learning_rate: f64,
    /// Least loss reduction (`gamma`) for a split.
    pub min_split_loss: f64,
    /// L2 regularization of leaf weights.
    pub lambda: f64,
    /// Rows per tree, drawn without replacement, as a fraction of the training rows.
    pub sample_fraction: f64,
    /// Features tried per split (default: all).
    pub max_features: MaxFeatures,
    /// Fewest rows in a leaf.
    pub min_samples_leaf: usize,
    /// Fewest rows (weight, with sample weights) of a category in a node for a
    /// subset split to place it on its own; rarer categories of the node are
    /// pooled and move together, so that a few rows' noise cannot pick a split
    /// (10, as LightGBM and scikit-learn's histogram boosting; 1: no pooling).
    pub min_samples_category: usize,
    /// How many times the gain that noise is expected to show a subset split
    /// of `k` categories charges it for each of its `k − 1` degrees of
    /// freedom beyond five, as for forests (`ForestParams::category_penalty`),
    /// the noise measured on the node's gradients (1; 0: no charge).
    pub category_penalty: f64,
    /// `hist` (false) or `exact` (true).
    pub exact: bool,
    /// Most bins per feature, the missing-value bin included.
    pub max_bins: usize,
    /// Fewest rows in a bin.
    pub min_bin_size: usize,
    /// The loss (`None`: squared, logistic or softmax from the task and classes).
    pub loss: Option<Loss>,
    /// Stop when the validation loss has not improved for this many rounds (0 = off).
    pub early_stopping_rounds: usize,
    /// Share of the training rows held out for early stopping.
    pub validation_fraction: f64,
    /// Seed of all random streams.
    pub seed: u64,
}

impl Default for BoostingParams {
    fn default() -> Self {
        BoostingParams {
            n_rounds: 50,
            max_depth: 6,
            learning_rate: 0.3,
            min_split_loss: 0.0,
            lambda: 1.0,
            sample_fraction: 1.0,
            max_features: MaxFeatures::All,
            min_samples_leaf: 5,
            min_samples_category: 10,
            category_penalty: 1.0,
            exact: false,
            max_bins: 256,
            min_bin_size: 5,
            loss: None,
            early_stopping_rounds: 0,
            validation_fraction: 0.1,
            seed: 777,
        }
    }
}

impl BoostingParams {
    /// How features are binned: quantiles (`hist`, seed "inexact") or a bin per value (`exact`).
    pub fn quantize_params(&self) -> QuantizeParams {
        binning(self.exact, self.max_bins, self.min_bin_size)
    }

    /// Features tried per node for `p` features (`Default` means all).
    pub fn features_per_node(&self, p: usize) -> Result<usize> {
        let forest = ForestParams {
            max_features: match self.max_features {
                MaxFeatures::Default => MaxFeatures::All,
                other => other,
            },
            ..ForestParams::default()
        };
        forest.features_per_node(p, Task::Regression)
    }

    /// The loss for a task with `n_classes` classes, checking an explicit
    /// choice; a single class takes softmax (one output) whatever the choice.
    pub fn resolve_loss(&self, task: Task, n_classes: usize) -> Result<Loss> {
        let natural = match (task, n_classes) {
            (Task::Regression, _) => Loss::Squared,
            (Task::Classification, 2) => Loss::Logistic,
            (Task::Classification, _) => Loss::Softmax,
        };
        match (self.loss, task) {
            (None, _) => Ok(natural),
            // A single class has one output, whose probability is 1 under any
            // classification loss: softmax is the one that has a single output.
            (Some(Loss::Logistic | Loss::Softmax), Task::Classification) if n_classes == 1 => Ok(Loss::Softmax),
            (Some(Loss::Squared), Task::Regression) => Ok(Loss::Squared),
            (Some(Loss::Logistic), Task::Classification) if n_classes == 2 => Ok(Loss::Logistic),
            (Some(Loss::Softmax), Task::Classification) => Ok(Loss::Softmax),
            (Some(loss), _) => Err(invalid(
                "loss",
                format!(
                    "{} does not fit a {} task with {n_classes} classes; use {}",
                    loss.name(),
                    task.name(),
                    match task {
                        Task::Regression => "squared",
                        Task::Classification if n_classes == 2 => "logistic or softmax",
                        Task::Classification => "softmax",
                    }
                ),
            )),
        }
    }
}

/// Everything that decides how a model is trained.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainParams {
    /// The task, or `None` to take it from the label's type.
    pub task: Option<Task>,
    /// The algorithm.
    pub algorithm: AlgorithmChoice,
    /// Random forest parameters.
    pub forest: ForestParams,
    /// Gradient boosting parameters.
    pub boosting: BoostingParams,
    /// The keys given explicitly, checked against the chosen algorithm.
    pub explicit: Vec<String>,
}

/// The algorithm option, random forest unless set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlgorithmChoice(pub Algorithm);

impl Default for AlgorithmChoice {
    fn default() -> Self {
        AlgorithmChoice(Algorithm::RandomForest)
    }
}

/// The binning of `split_method`: exact, or quantiles with `max_bins` and `min_bin_size`.
fn binning(exact: bool, max_bins: usize, min_bin_size: usize) -> QuantizeParams {
    if exact {
        QuantizeParams::exact()
    } else {
        QuantizeParams { max_bins, min_bin_size }
    }
}
