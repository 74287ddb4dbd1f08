//! Training parameters: one set of names for the Rust API, `--set` and SQL
//! options (DESIGN.md "Parameters"), parsed and validated in one place.

use arbor_quantize::QuantizeParams;
use serde::{Deserialize, Serialize};

use crate::{ArborError, Result};

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

    /// The loss for a task with `n_classes` classes, checking an explicit choice.
    pub fn resolve_loss(&self, task: Task, n_classes: usize) -> Result<Loss> {
        let natural = match (task, n_classes) {
            (Task::Regression, _) => Loss::Squared,
            (Task::Classification, 2) => Loss::Logistic,
            (Task::Classification, _) => Loss::Softmax,
        };
        match (self.loss, task) {
            (None, _) => Ok(natural),
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

/// Keys that apply to both algorithms.
const COMMON_KEYS: &[&str] = &[
    "task",
    "algorithm",
    "max_features",
    "sample_fraction",
    "split_method",
    "max_bins",
    "min_bin_size",
    "max_depth",
    "min_samples_leaf",
    "min_samples_category",
    "importance",
    "seed",
];

/// Keys of random forests only.
const FOREST_KEYS: &[&str] = &[
    "n_trees",
    "bootstrap",
    "splitter",
    "max_leaf_nodes",
    "min_samples_split",
    "min_weight_fraction_leaf",
    "impurity_threshold",
    "min_impurity_decrease",
    "criterion",
    "voting",
    "oob",
    "oob_per_observation",
];

/// Keys of gradient boosting only.
const BOOSTING_KEYS: &[&str] =
    &["n_rounds", "learning_rate", "min_split_loss", "lambda", "loss", "early_stopping_rounds", "validation_fraction"];

/// Every option key.
pub const OPTION_KEYS: &[&str] = &[
    "task",
    "algorithm",
    "max_features",
    "sample_fraction",
    "split_method",
    "max_bins",
    "min_bin_size",
    "max_depth",
    "min_samples_leaf",
    "min_samples_category",
    "importance",
    "seed",
    "n_trees",
    "bootstrap",
    "splitter",
    "max_leaf_nodes",
    "min_samples_split",
    "min_weight_fraction_leaf",
    "impurity_threshold",
    "min_impurity_decrease",
    "criterion",
    "voting",
    "oob",
    "oob_per_observation",
    "n_rounds",
    "learning_rate",
    "min_split_loss",
    "lambda",
    "loss",
    "early_stopping_rounds",
    "validation_fraction",
];

/// The binning of `split_method`: exact, or quantiles with `max_bins` and `min_bin_size`.
fn binning(exact: bool, max_bins: usize, min_bin_size: usize) -> QuantizeParams {
    if exact {
        QuantizeParams::exact()
    } else {
        QuantizeParams { max_bins, min_bin_size }
    }
}

fn invalid(key: &str, message: impl Into<String>) -> ArborError {
    ArborError::InvalidOption { key: key.to_owned(), message: message.into() }
}

fn parse_count(key: &str, value: &str, min: usize) -> Result<usize> {
    match value.parse::<usize>() {
        Ok(v) if v >= min => Ok(v),
        _ => Err(invalid(key, format!("expected an integer >= {min}, got '{value}'"))),
    }
}

fn parse_fraction(key: &str, value: &str, low_open: bool, high: f64) -> Result<f64> {
    let range = if low_open { format!("in (0, {high}]") } else { format!("in [0, {high}]") };
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v <= high && (v > 0.0 || !low_open && v == 0.0) => Ok(v),
        _ => Err(invalid(key, format!("expected a number {range}, got '{value}'"))),
    }
}

fn parse_non_negative(key: &str, value: &str) -> Result<f64> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(invalid(key, format!("expected a finite number >= 0, got '{value}'"))),
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(key, format!("expected true or false, got '{value}'"))),
    }
}

fn parse_choice<T: Copy>(key: &str, value: &str, choices: &[(&str, T)]) -> Result<T> {
    choices.iter().find(|(name, _)| name.eq_ignore_ascii_case(value)).map(|(_, v)| *v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        invalid(key, format!("expected one of {}, got '{value}'", names.join(", ")))
    })
}

impl TrainParams {
    /// Parses an options string: `key=value` pairs separated by spaces or commas.
    ///
    /// ```
    /// use arbor_ensemble::{TrainParams, Task};
    /// let p = TrainParams::parse_options("task=regression n_trees=20, max_depth=8").unwrap();
    /// assert_eq!(p.task, Some(Task::Regression));
    /// assert_eq!(p.forest.n_trees, 20);
    /// assert!(TrainParams::parse_options("n_tree=20").is_err());
    /// ```
    pub fn parse_options(options: &str) -> Result<TrainParams> {
        let mut params = TrainParams::default();
        for (key, value) in TrainParams::option_pairs(options)? {
            params.set(key, value)?;
        }
        Ok(params)
    }

    /// The `key=value` pairs of an options string (separated by spaces or
    /// commas), unchecked: for callers that take some keys of their own first.
    pub fn option_pairs(options: &str) -> Result<Vec<(&str, &str)>> {
        options
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((key, value)) => Ok((key.trim(), value.trim())),
                None => Err(invalid(pair, "expected key=value".to_owned())),
            })
            .collect()
    }

    /// Sets one option by name, checking its value. Keys both algorithms
    /// share (`max_depth`, `min_samples_leaf`, ...) set both; which algorithm
    /// a key applies to is checked by [`TrainParams::validate`].
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let (f, b) = (&mut self.forest, &mut self.boosting);
        match key {
            "task" => {
                self.task = Some(parse_choice(
                    key,
                    value,
                    &[("classification", Task::Classification), ("regression", Task::Regression)],
                )?)
            }
            "algorithm" => {
                self.algorithm = AlgorithmChoice(parse_choice(
                    key,
                    value,
                    &[("random-forest", Algorithm::RandomForest), ("gradient-boosting", Algorithm::GradientBoosting)],
                )?)
            }
            "max_features" => {
                let m = match value {
                    "sqrt" => MaxFeatures::Sqrt,
                    "third" => MaxFeatures::Third,
                    "all" => MaxFeatures::All,
                    _ => MaxFeatures::Count(value.parse::<usize>().ok().filter(|&v| v >= 1).ok_or_else(|| {
                        invalid(key, format!("expected an integer >= 1, sqrt, third or all, got '{value}'"))
                    })?),
                };
                (f.max_features, b.max_features) = (m, m);
            }
            "sample_fraction" => {
                let v = parse_fraction(key, value, true, 1.0)?;
                (f.sample_fraction, b.sample_fraction) = (v, v);
            }
            "split_method" => {
                let v = parse_choice(key, value, &[("hist", false), ("exact", true), ("dense", true)])?;
                (f.exact, b.exact) = (v, v);
            }
            "max_bins" => {
                let v = parse_count(key, value, 2)?;
                if v > 65_536 {
                    return Err(invalid(key, format!("expected an integer in [2, 65536], got '{value}'")));
                }
                (f.max_bins, b.max_bins) = (v, v);
            }
            "min_bin_size" => {
                let v = parse_count(key, value, 1)?;
                (f.min_bin_size, b.min_bin_size) = (v, v);
            }
            "max_depth" => {
                let v = parse_count(key, value, 0)?;
                (f.max_depth, b.max_depth) = (v, v);
            }
            "min_samples_leaf" => {
                let v = parse_count(key, value, 1)?;
                (f.min_samples_leaf, b.min_samples_leaf) = (Some(v), v);
            }
            "min_samples_category" => {
                let v = parse_count(key, value, 1)?;
                (f.min_samples_category, b.min_samples_category) = (v, v);
            }
            "importance" => {
                f.importance = parse_choice(
                    key,
                    value,
                    &[
                        ("none", ImportanceKind::None),
                        ("mdi", ImportanceKind::Mdi),
                        ("mda_raw", ImportanceKind::MdaRaw),
                        ("mda_scaled", ImportanceKind::MdaScaled),
                    ],
                )?
            }
            "seed" => {
                let v = value
                    .parse::<u64>()
                    .map_err(|_| invalid(key, format!("expected an integer >= 0, got '{value}'")))?;
                (f.seed, b.seed) = (v, v);
            }
            "n_trees" => f.n_trees = parse_count(key, value, 1)?,
            "bootstrap" => f.bootstrap = parse_bool(key, value)?,
            "splitter" => f.random_splitter = parse_choice(key, value, &[("best", false), ("random", true)])?,
            "max_leaf_nodes" => f.max_leaf_nodes = parse_count(key, value, 0)?,
            "min_samples_split" => f.min_samples_split = parse_count(key, value, 2)?,
            "min_weight_fraction_leaf" => f.min_weight_fraction_leaf = parse_fraction(key, value, false, 0.5)?,
            "impurity_threshold" => f.impurity_threshold = parse_non_negative(key, value)?,
            "min_impurity_decrease" => f.min_impurity_decrease = parse_non_negative(key, value)?,
            "criterion" => {
                f.criterion = parse_choice(
                    key,
                    value,
                    &[("gini", CriterionKind::Gini), ("entropy", CriterionKind::Entropy), ("mse", CriterionKind::Mse)],
                )?
            }
            "voting" => {
                f.voting =
                    parse_choice(key, value, &[("weighted", Voting::Weighted), ("unweighted", Voting::Unweighted)])?
            }
            "oob" => f.oob = parse_bool(key, value)?,
            "oob_per_observation" => f.oob_per_observation = parse_bool(key, value)?,
            "n_rounds" => b.n_rounds = parse_count(key, value, 1)?,
            "learning_rate" => b.learning_rate = parse_fraction(key, value, true, 1.0)?,
            "min_split_loss" => b.min_split_loss = parse_non_negative(key, value)?,
            "lambda" => b.lambda = parse_non_negative(key, value)?,
            "loss" => {
                b.loss = Some(parse_choice(
                    key,
                    value,
                    &[("squared", Loss::Squared), ("logistic", Loss::Logistic), ("softmax", Loss::Softmax)],
                )?)
            }
            "early_stopping_rounds" => b.early_stopping_rounds = parse_count(key, value, 0)?,
            "validation_fraction" => {
                let v = parse_fraction(key, value, true, 0.5)?;
                b.validation_fraction = v;
            }
            _ => return Err(ArborError::UnknownOption { key: key.to_owned(), accepted: OPTION_KEYS.join(", ") }),
        }
        if !self.explicit.iter().any(|k| k == key) {
            self.explicit.push(key.to_owned());
        }
        Ok(())
    }

    /// Checks the combination of options for `task`; each error names its key.
    /// Keys of the other algorithm, and options this build does not implement
    /// yet, are refused here, never ignored.
    pub fn validate(&self, task: Task) -> Result<()> {
        let algorithm = self.algorithm.0;
        let (own, other, other_name) = match algorithm {
            Algorithm::RandomForest => (FOREST_KEYS, BOOSTING_KEYS, "gradient-boosting"),
            Algorithm::GradientBoosting => (BOOSTING_KEYS, FOREST_KEYS, "random-forest"),
        };
        for key in &self.explicit {
            if other.contains(&key.as_str()) {
                return Err(invalid(
                    key,
                    format!(
                        "applies to algorithm={other_name} only; {} accepts {}",
                        algorithm.name(),
                        COMMON_KEYS.iter().chain(own).copied().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        let exact = match algorithm {
            Algorithm::RandomForest => self.forest.exact,
            Algorithm::GradientBoosting => self.boosting.exact,
        };
        if exact {
            if let Some(key) = self.explicit.iter().find(|k| *k == "max_bins" || *k == "min_bin_size") {
                return Err(invalid(key, "applies to split_method=hist; exact gives every distinct value a bin"));
            }
        }
        if algorithm == Algorithm::GradientBoosting {
            let b = &self.boosting;
            if matches!(self.forest.importance, ImportanceKind::MdaRaw | ImportanceKind::MdaScaled) {
                return Err(invalid("importance", "gradient boosting accepts mdi (total gain) or none"));
            }
            if b.early_stopping_rounds == 0 && self.explicit.iter().any(|k| k == "validation_fraction") {
                return Err(invalid("validation_fraction", "needs early_stopping_rounds > 0"));
            }
            return Ok(());
        }
        let f = &self.forest;
        let wants_oob = f.oob || f.oob_per_observation;
        let mda = matches!(f.importance, ImportanceKind::MdaRaw | ImportanceKind::MdaScaled);
        if (wants_oob || mda) && !f.bootstrap && f.sample_fraction >= 1.0 {
            let key = if f.oob {
                "oob"
            } else if f.oob_per_observation {
                "oob_per_observation"
            } else {
                "importance"
            };
            return Err(invalid(
                key,
                "needs out-of-bag rows: set bootstrap=true or sample_fraction below 1 \
                 (every tree sees every row with bootstrap=false sample_fraction=1)",
            ));
        }
        match (task, f.criterion) {
            (Task::Classification, CriterionKind::Mse) => {
                return Err(invalid("criterion", "mse is for regression; classification accepts gini or entropy"))
            }
            (Task::Regression, CriterionKind::Gini | CriterionKind::Entropy) => {
                return Err(invalid("criterion", "regression accepts mse only"))
            }
            _ => {}
        }
        if task == Task::Regression && f.voting == Voting::Unweighted {
            return Err(invalid("voting", "applies to classification only; regression averages the trees"));
        }
        Ok(())
    }

    /// The effective value of every option of the chosen algorithm, for
    /// reports and the model file; `loss` is the resolved boosting loss.
    pub fn describe(&self, task: Task, n_features: usize, loss: Option<Loss>) -> Vec<(String, String)> {
        let name = |m: MaxFeatures, resolved: Result<usize>| match m {
            MaxFeatures::Count(k) => k.to_string(),
            MaxFeatures::Sqrt => "sqrt".into(),
            MaxFeatures::Third => "third".into(),
            MaxFeatures::All => "all".into(),
            MaxFeatures::Default => resolved.map_or("default".into(), |m| m.to_string()),
        };
        let importance = match self.forest.importance {
            ImportanceKind::None => "none",
            ImportanceKind::Mdi => "mdi",
            ImportanceKind::MdaRaw => "mda_raw",
            ImportanceKind::MdaScaled => "mda_scaled",
        };
        let mut pairs: Vec<(&str, String)> =
            vec![("task", task.name().into()), ("algorithm", self.algorithm.0.name().into())];
        match self.algorithm.0 {
            Algorithm::GradientBoosting => {
                let b = &self.boosting;
                pairs.extend([
                    ("n_rounds", b.n_rounds.to_string()),
                    ("max_depth", b.max_depth.to_string()),
                    ("learning_rate", b.learning_rate.to_string()),
                    ("min_split_loss", b.min_split_loss.to_string()),
                    ("lambda", b.lambda.to_string()),
                    ("sample_fraction", b.sample_fraction.to_string()),
                    ("max_features", name(b.max_features, b.features_per_node(n_features))),
                    ("min_samples_leaf", b.min_samples_leaf.to_string()),
                    ("min_samples_category", b.min_samples_category.to_string()),
                    ("split_method", if b.exact { "exact" } else { "hist" }.into()),
                    ("max_bins", b.max_bins.to_string()),
                    ("min_bin_size", b.min_bin_size.to_string()),
                    ("loss", loss.or(b.loss).map_or("default", Loss::name).into()),
                    ("early_stopping_rounds", b.early_stopping_rounds.to_string()),
                    ("importance", importance.into()),
                    ("seed", b.seed.to_string()),
                ]);
                if b.early_stopping_rounds > 0 {
                    pairs.push(("validation_fraction", b.validation_fraction.to_string()));
                }
            }
            Algorithm::RandomForest => {
                let f = &self.forest;
                let criterion = match (f.criterion, task) {
                    (CriterionKind::Gini, _) | (CriterionKind::Default, Task::Classification) => "gini",
                    (CriterionKind::Entropy, _) => "entropy",
                    (CriterionKind::Mse, _) | (CriterionKind::Default, Task::Regression) => "mse",
                };
                pairs.extend([
                    ("n_trees", f.n_trees.to_string()),
                    ("max_features", name(f.max_features, f.features_per_node(n_features, task))),
                    ("bootstrap", f.bootstrap.to_string()),
                    ("sample_fraction", f.sample_fraction.to_string()),
                    ("split_method", if f.exact { "exact" } else { "hist" }.into()),
                    ("splitter", if f.random_splitter { "random" } else { "best" }.into()),
                    ("max_bins", f.max_bins.to_string()),
                    ("min_bin_size", f.min_bin_size.to_string()),
                    ("max_depth", f.max_depth.to_string()),
                    ("max_leaf_nodes", f.max_leaf_nodes.to_string()),
                    ("min_samples_leaf", f.min_samples_leaf(task).to_string()),
                    ("min_samples_split", f.min_samples_split.to_string()),
                    ("min_samples_category", f.min_samples_category.to_string()),
                    ("min_weight_fraction_leaf", f.min_weight_fraction_leaf.to_string()),
                    ("impurity_threshold", f.impurity_threshold.to_string()),
                    ("min_impurity_decrease", f.min_impurity_decrease.to_string()),
                    ("criterion", criterion.into()),
                    ("voting", if f.voting == Voting::Weighted { "weighted" } else { "unweighted" }.into()),
                    ("oob", f.oob.to_string()),
                    ("oob_per_observation", f.oob_per_observation.to_string()),
                    ("importance", importance.into()),
                    ("seed", f.seed.to_string()),
                ]);
            }
        }
        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let p = TrainParams::default();
        assert_eq!(p.forest.n_trees, 100);
        assert_eq!(p.forest.seed, 777);
        assert_eq!(p.forest.min_samples_leaf(Task::Classification), 1);
        assert_eq!(p.forest.min_samples_leaf(Task::Regression), 5);
        assert_eq!((p.forest.min_samples_category, p.boosting.min_samples_category), (10, 10));
        assert_eq!(p.forest.features_per_node(12, Task::Classification).unwrap(), 3);
        assert_eq!(p.forest.features_per_node(9, Task::Regression).unwrap(), 3);
    }

    #[test]
    fn errors_name_the_key_and_the_accepted_values() {
        let e = TrainParams::parse_options("n_trees=0").unwrap_err().to_string();
        assert!(e.contains("n_trees") && e.contains(">= 1"), "{e}");
        let e = TrainParams::parse_options("sample_fraction=1.5").unwrap_err().to_string();
        assert!(e.contains("sample_fraction") && e.contains("(0, 1]"), "{e}");
        let e = TrainParams::parse_options("min_samples_category=0").unwrap_err().to_string();
        assert!(e.contains("min_samples_category") && e.contains(">= 1"), "{e}");
        let e = TrainParams::parse_options("voting=loud").unwrap_err().to_string();
        assert!(e.contains("weighted, unweighted"), "{e}");
        let e = TrainParams::parse_options("ntrees=3").unwrap_err().to_string();
        assert!(e.contains("unknown option 'ntrees'") && e.contains("n_trees"), "{e}");
        let e = TrainParams::parse_options("n_trees").unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
    }

    #[test]
    fn every_described_key_is_accepted_and_listed() {
        for algorithm in ["random-forest", "gradient-boosting"] {
            let mut p = TrainParams::parse_options(&format!("algorithm={algorithm}")).unwrap();
            for (key, value) in p.clone().describe(Task::Classification, 4, Some(Loss::Logistic)) {
                assert!(OPTION_KEYS.contains(&key.as_str()), "{key}");
                p.set(&key, &value).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
            }
            p.validate(Task::Classification).unwrap();
        }
        let listed = COMMON_KEYS.len() + FOREST_KEYS.len() + BOOSTING_KEYS.len();
        assert_eq!(listed, OPTION_KEYS.len());
    }

    #[test]
    fn boosting_defaults_match_the_design() {
        let b = TrainParams::default().boosting;
        assert_eq!((b.n_rounds, b.max_depth, b.min_samples_leaf, b.max_bins, b.min_bin_size), (50, 6, 5, 256, 5));
        assert_eq!((b.learning_rate, b.lambda, b.min_split_loss, b.sample_fraction), (0.3, 1.0, 0.0, 1.0));
        assert_eq!(b.features_per_node(12).unwrap(), 12);
        assert_eq!(b.resolve_loss(Task::Classification, 2).unwrap(), Loss::Logistic);
        assert_eq!(b.resolve_loss(Task::Classification, 10).unwrap(), Loss::Softmax);
        assert_eq!(b.resolve_loss(Task::Regression, 0).unwrap(), Loss::Squared);
    }

    #[test]
    fn keys_of_the_other_algorithm_are_refused() {
        let p = TrainParams::parse_options("algorithm=gradient-boosting n_trees=10").unwrap();
        let e = p.validate(Task::Classification).unwrap_err().to_string();
        assert!(e.contains("'n_trees'") && e.contains("random-forest") && e.contains("n_rounds"), "{e}");
        let p = TrainParams::parse_options("learning_rate=0.1").unwrap();
        let e = p.validate(Task::Regression).unwrap_err().to_string();
        assert!(e.contains("'learning_rate'") && e.contains("gradient-boosting"), "{e}");
        let p = TrainParams::parse_options("max_depth=3 algorithm=gradient-boosting lambda=2").unwrap();
        assert_eq!(p.boosting.max_depth, 3, "shared keys apply whatever their order");
        p.validate(Task::Regression).unwrap();
        let p = TrainParams::parse_options("algorithm=gradient-boosting loss=logistic").unwrap();
        let e = p.boosting.resolve_loss(Task::Classification, 3).unwrap_err().to_string();
        assert!(e.contains("'loss'") && e.contains("softmax"), "{e}");
    }
}
