//! The typed training parameters: the task, the algorithm, the tree settings
//! both algorithms share ([`TreeParams`]) and each algorithm's own, with the
//! defaults `docs/parameters.md` lists.

use arbor_quantize::{BinBoundaries, QuantizeParams};
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
    /// Random forest (docs/algorithms.md, "Random forest").
    RandomForest,
    /// Gradient boosted trees (docs/algorithms.md, "Gradient boosting").
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

/// Features tried per split node (docs/algorithms.md, "Random forest").
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

/// Impurity criterion (docs/algorithms.md, "Split criteria").
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
    /// Half the Poisson deviance (regression of counts; labels `>= 0`).
    Poisson,
    /// Absolute error around the node's weighted median (regression robust
    /// to outliers; leaves hold medians).
    AbsoluteError,
}

/// How the trees' answers are combined for classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Voting {
    /// Mean of the leaves' class distributions.
    Weighted,
    /// Each tree votes for its leaf's most frequent class.
    Unweighted,
}

/// Which variable importance is computed (docs/algorithms.md, "Variable importance").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImportanceKind {
    /// None.
    None,
    /// Mean decrease of impurity (boosting: total gain).
    #[default]
    Mdi,
    /// Mean decrease of accuracy, raw.
    MdaRaw,
    /// Mean decrease of accuracy, scaled by its standard deviation.
    MdaScaled,
}

/// Interaction constraints: the sets of feature names allowed to meet on a
/// path, as the `interaction_constraints` option spells them.
pub type InteractionSets = Vec<Vec<String>>;

/// Classification's class weights (`class_weight`): each row's weight is
/// its sample weight times its class's, as scikit-learn's `class_weight`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ClassWeight {
    /// Every class weighs 1.
    #[default]
    None,
    /// Each class weighs `n / (k · n_c)`: `n` rows, `k` classes, `n_c` rows
    /// of the class (scikit-learn's `balanced`), so every class weighs as much in all.
    Balanced,
    /// The classes named (as label text) weigh as given; the others 1.
    Given(Vec<(String, f64)>),
}

/// Monotone constraints: features and their directions, in the order
/// given (`+1` rising, `-1` falling, `0` none), as the `monotone` option
/// spells them (docs/algorithms.md, "Monotone constraints").
pub type MonotoneConstraints = Vec<(String, i8)>;

/// The settings of how each tree is grown that both algorithms have: one
/// struct that [`ForestParams`] and [`BoostingParams`] each hold, with their
/// own defaults (see `docs/parameters.md`). A key both algorithms accept
/// (`max_depth`, `min_samples_leaf`, ...) sets it in both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TreeParams {
    /// Features tried per split (docs/algorithms.md, "Random forest").
    pub max_features: MaxFeatures,
    /// Rows per tree as a fraction of the training rows.
    pub sample_fraction: f64,
    /// `hist` (false) or `exact` (true) (docs/algorithms.md, "Histogram binning").
    pub exact: bool,
    /// Most bins per feature, the missing-value bin included.
    pub max_bins: usize,
    /// Fewest rows in a bin.
    pub min_bin_size: usize,
    /// Where numeric bin edges fall: quantiles, or LightGBM's greedy bins
    /// (docs/algorithms.md, "Histogram binning").
    pub bin_boundaries: BinBoundaries,
    /// Deepest level (0 = unlimited).
    pub max_depth: usize,
    /// Fewest rows in a leaf (`None`: 1 for classification, 5 for regression).
    pub min_samples_leaf: Option<usize>,
    /// Fewest rows (weight, with sample weights) of a category in a node for a
    /// subset split to place it on its own; rarer categories of the node are
    /// pooled and move together, so that a few rows' noise cannot pick a split
    /// (10, as LightGBM and scikit-learn's histogram boosting; 1: no pooling).
    pub min_samples_category: usize,
    /// How many times the gain that noise is expected to show a subset split
    /// of `k` categories charges it for each of its `k − 1` degrees of
    /// freedom beyond five: a feature of many categories (flights' 104
    /// destinations) must win a node on signal, not on the number of subsets
    /// it could pick from (forests 24, boosting 1, where the noise is measured
    /// on the node's gradients; 0: no charge).
    pub category_penalty: f64,
    /// Features the output may only rise (`+1`) or fall (`-1`) with
    /// (docs/algorithms.md, "Monotone constraints"); empty: none.
    pub monotone: MonotoneConstraints,
    /// Sets of features allowed to meet on one path of a tree
    /// (docs/algorithms.md, "Interaction constraints"); empty: any may.
    pub interaction_constraints: InteractionSets,
    /// Seed of all random streams.
    pub seed: u64,
}

impl TreeParams {
    /// How features are binned: quantiles (`hist`) or a bin per value (`exact`).
    pub fn quantize_params(&self) -> QuantizeParams {
        if self.exact {
            QuantizeParams::exact()
        } else {
            QuantizeParams { max_bins: self.max_bins, min_bin_size: self.min_bin_size, boundaries: self.bin_boundaries }
        }
    }

    /// Fewest rows per leaf for a task.
    pub fn min_samples_leaf(&self, task: Task) -> usize {
        self.min_samples_leaf.unwrap_or(match task {
            Task::Classification => 1,
            Task::Regression => 5,
        })
    }

    /// Features tried per node for `p` features and a task, `Default` read as `default`.
    fn features_per_node(&self, p: usize, task: Task, default: MaxFeatures) -> Result<usize> {
        let m = match self.max_features {
            MaxFeatures::Default => default,
            other => other,
        };
        let m = match m {
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
}

/// Random forest parameters (docs/algorithms.md, "Random forest"); `Default`
/// gives the defaults of `docs/parameters.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForestParams {
    /// Number of trees.
    pub n_trees: usize,
    /// How each tree is grown: the settings boosting has too.
    pub tree: TreeParams,
    /// Draw each tree's rows with replacement.
    pub bootstrap: bool,
    /// `random` splitter (extra trees) instead of `best` (docs/algorithms.md, "Random splitter").
    pub random_splitter: bool,
    /// Most leaves per tree, grown best-first (0 = depth-first without limit;
    /// docs/algorithms.md, "Tree building strategies").
    pub max_leaf_nodes: usize,
    /// Fewest rows in a node that may be split.
    pub min_samples_split: usize,
    /// Fewest total weight in a leaf, as a fraction of all weight.
    pub min_weight_fraction_leaf: f64,
    /// Nodes with impurity at or below this are leaves.
    pub impurity_threshold: f64,
    /// Least weighted impurity decrease (`W_t/W · Δi`) for a split
    /// (docs/algorithms.md, "Termination criteria").
    pub min_impurity_decrease: f64,
    /// Impurity criterion (docs/algorithms.md, "Split criteria").
    pub criterion: CriterionKind,
    /// Voting method.
    pub voting: Voting,
    /// Compute the out-of-bag error (docs/algorithms.md, "Out-of-bag error").
    pub oob: bool,
    /// Compute per-observation OOB error and prediction.
    pub oob_per_observation: bool,
}

impl Default for ForestParams {
    fn default() -> Self {
        ForestParams {
            n_trees: 100,
            tree: TreeParams {
                max_features: MaxFeatures::Default,
                sample_fraction: 1.0,
                exact: false,
                max_bins: 256,
                min_bin_size: 5,
                bin_boundaries: BinBoundaries::Quantile,
                max_depth: 0,
                min_samples_leaf: None,
                min_samples_category: 10,
                category_penalty: 24.0,
                monotone: Vec::new(),
                interaction_constraints: Vec::new(),
                seed: 777,
            },
            bootstrap: true,
            random_splitter: false,
            max_leaf_nodes: 0,
            min_samples_split: 2,
            min_weight_fraction_leaf: 0.0,
            impurity_threshold: 0.0,
            min_impurity_decrease: 0.0,
            criterion: CriterionKind::Default,
            voting: Voting::Weighted,
            oob: false,
            oob_per_observation: false,
        }
    }
}

impl ForestParams {
    /// Features tried per node for `p` features and a task (`Default`:
    /// `sqrt(p)` for classification, `p/3` for regression).
    pub fn features_per_node(&self, p: usize, task: Task) -> Result<usize> {
        self.tree.features_per_node(p, task, MaxFeatures::Default)
    }
}

/// The loss gradient boosting minimizes, with its own parameters
/// (`docs/algorithms.md`, "Losses"). The regression losses after the first
/// three are LightGBM's and XGBoost's: a robust or quantile loss on the raw
/// score, or a log link (`poisson`, `gamma`, `tweedie`) whose predictions
/// are `exp(raw)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Loss {
    /// Squared error, regression.
    Squared,
    /// Binary cross-entropy on one raw score (two classes).
    Logistic,
    /// Multinomial cross-entropy, one tree per class per round.
    Softmax,
    /// Pinball loss at level `alpha`: predicts the `alpha`-quantile; leaf
    /// values are re-fitted to the quantile of their rows' residuals.
    Quantile {
        /// The quantile level, in (0, 1).
        alpha: f64,
    },
    /// Huber loss: squared within `delta` of the label, linear beyond.
    Huber {
        /// Where the loss turns linear, > 0.
        delta: f64,
    },
    /// Absolute error: predicts the median; leaf values are re-fitted to
    /// their rows' median residual.
    Absolute,
    /// Poisson deviance of counts (labels >= 0), log link.
    Poisson,
    /// Gamma deviance of positive labels, log link.
    Gamma,
    /// Tweedie deviance of labels >= 0 (a compound Poisson-gamma), log link.
    Tweedie {
        /// The variance power, in (1, 2).
        power: f64,
    },
    /// LambdaMART ranking: NDCG-weighted pairwise gradients within each
    /// query (labels are relevance grades 0 to 31); the raw score ranks.
    Lambdarank {
        /// The cut-off of the NDCG that early stopping and reports measure.
        ndcg_at: u32,
        /// Pairs weighed: those with a row among the first `truncation` of
        /// its query by score (LightGBM's `lambdarank_truncation_level`).
        truncation: u32,
        /// The steepness `σ` of the pairs' logistic surrogate (LightGBM's `sigmoid`).
        sigmoid: f64,
        /// Grades gain `2^y − 1` (else `y`; XGBoost's `ndcg_exp_gain`).
        exp_gain: bool,
    },
}

// The parameters are checked finite (`alpha`, `huber_delta`,
// `tweedie_power`), so equality is reflexive.
impl Eq for Loss {}

impl Loss {
    /// The name used in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Loss::Squared => "squared",
            Loss::Logistic => "logistic",
            Loss::Softmax => "softmax",
            Loss::Quantile { .. } => "quantile",
            Loss::Huber { .. } => "huber",
            Loss::Absolute => "absolute",
            Loss::Poisson => "poisson",
            Loss::Gamma => "gamma",
            Loss::Tweedie { .. } => "tweedie",
            Loss::Lambdarank { .. } => "lambdarank",
        }
    }

    /// Ranking losses: they read a query column, and score rows against
    /// the other rows of their query.
    pub fn is_ranking(self) -> bool {
        matches!(self, Loss::Lambdarank { .. })
    }

    /// `loss=lambdarank` with its defaults: NDCG@10, pairs of the first 30
    /// ranks, `σ = 1`, exponential gains.
    pub const LAMBDARANK: Loss = Loss::Lambdarank { ndcg_at: 10, truncation: 30, sigmoid: 1.0, exp_gain: true };

    /// Classification losses (class probabilities out), as against regression's.
    pub fn is_classification(self) -> bool {
        matches!(self, Loss::Logistic | Loss::Softmax)
    }

    /// Log-link losses: predictions are `exp(raw)`, raw scores are log means.
    pub fn is_log_link(self) -> bool {
        matches!(self, Loss::Poisson | Loss::Gamma | Loss::Tweedie { .. })
    }

    /// Losses whose leaf values are re-fitted to a quantile of their rows'
    /// residuals after the tree is grown (their hessian is a constant).
    pub fn refits_leaves(self) -> bool {
        matches!(self, Loss::Quantile { .. } | Loss::Absolute)
    }

    /// The name of the metric [`Loss`] values are reported in (progress,
    /// early stopping, `inspect`): lower is better, so a ranking loss
    /// reports `1 - NDCG@k`.
    pub fn metric(self) -> String {
        let name = match self {
            Loss::Squared => "mse",
            Loss::Logistic | Loss::Softmax => "log_loss",
            Loss::Quantile { .. } => "pinball_loss",
            Loss::Huber { .. } => "huber_loss",
            Loss::Absolute => "mae",
            Loss::Poisson => "poisson_deviance",
            Loss::Gamma => "gamma_deviance",
            Loss::Tweedie { .. } => "tweedie_deviance",
            Loss::Lambdarank { ndcg_at, .. } => return format!("1-ndcg@{ndcg_at}"),
        };
        name.to_owned()
    }
}

/// Gradient boosting parameters (docs/algorithms.md, "Gradient boosting");
/// `Default` gives the defaults of `docs/parameters.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoostingParams {
    /// Boosting rounds (`maxIterations`).
    pub n_rounds: usize,
    /// How each tree is grown: the settings forests have too (rows drawn
    /// without replacement; `max_features` all by default).
    pub tree: TreeParams,
    /// Shrinkage applied to every tree's leaves.
    pub learning_rate: f64,
    /// Least gain `G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)` for a split (XGBoost's `gamma`).
    pub min_split_loss: f64,
    /// L2 regularization of leaf weights.
    pub lambda: f64,
    /// The loss (`None`: squared, logistic or softmax from the task and
    /// classes); its parameters come from the fields below.
    pub loss: Option<Loss>,
    /// The quantile level of `loss=quantile`.
    pub alpha: f64,
    /// Where `loss=huber` turns linear.
    pub huber_delta: f64,
    /// The variance power of `loss=tweedie`.
    pub tweedie_power: f64,
    /// The NDCG cut-off `loss=lambdarank` measures (early stopping, reports).
    pub ndcg_at: u32,
    /// The ranks whose pairs `loss=lambdarank` weighs (LightGBM's name).
    pub lambdarank_truncation_level: u32,
    /// The steepness of `loss=lambdarank`'s pairwise logistic (LightGBM's `sigmoid`).
    pub sigmoid: f64,
    /// Whether `loss=lambdarank`'s grades gain `2^y − 1` (else `y`; XGBoost's `ndcg_exp_gain`).
    pub ndcg_exp_gain: bool,
    /// Whether each round's gradients and hessians are rounded stochastically
    /// to whole multiples of power-of-two units before trees grow on them
    /// (LightGBM 4's `use_quantized_grad`; docs/algorithms.md, "Quantized gradients").
    pub use_quantized_grad: bool,
    /// How many levels the quantized gradients span at least (LightGBM's `num_grad_quant_bins`).
    pub num_grad_quant_bins: u32,
    /// Whether leaves of trees grown on quantized gradients are set again
    /// from their rows' exact gradients (LightGBM's `quant_train_renew_leaf`).
    pub quant_train_renew_leaf: bool,
    /// Binary classification: the positive (second) class's rows weigh
    /// this many times their weight (XGBoost's `scale_pos_weight`).
    pub scale_pos_weight: f64,
    /// Stop when the validation loss has not improved for this many rounds (0 = off).
    pub early_stopping_rounds: usize,
    /// Share of the training rows held out for early stopping.
    pub validation_fraction: f64,
}

impl Default for BoostingParams {
    fn default() -> Self {
        BoostingParams {
            n_rounds: 50,
            tree: TreeParams {
                max_features: MaxFeatures::All,
                sample_fraction: 1.0,
                exact: false,
                max_bins: 256,
                min_bin_size: 5,
                bin_boundaries: BinBoundaries::Quantile,
                max_depth: 6,
                min_samples_leaf: Some(5),
                min_samples_category: 10,
                category_penalty: 1.0,
                monotone: Vec::new(),
                interaction_constraints: Vec::new(),
                seed: 777,
            },
            learning_rate: 0.3,
            min_split_loss: 0.0,
            lambda: 1.0,
            loss: None,
            alpha: 0.5,
            huber_delta: 1.0,
            tweedie_power: 1.5,
            ndcg_at: 10,
            lambdarank_truncation_level: 30,
            sigmoid: 1.0,
            ndcg_exp_gain: true,
            use_quantized_grad: false,
            num_grad_quant_bins: 4,
            quant_train_renew_leaf: false,
            scale_pos_weight: 1.0,
            early_stopping_rounds: 0,
            validation_fraction: 0.1,
        }
    }
}

impl BoostingParams {
    /// Features tried per node for `p` features (`Default` means all).
    pub fn features_per_node(&self, p: usize) -> Result<usize> {
        self.tree.features_per_node(p, Task::Regression, MaxFeatures::All)
    }

    /// Fewest rows per leaf, whatever the task (`None`: 5).
    pub fn min_samples_leaf(&self) -> usize {
        self.tree.min_samples_leaf.unwrap_or(5)
    }

    /// The loss for a task with `n_classes` classes, checking an explicit
    /// choice and giving it its parameters; a single class takes softmax (one
    /// output) whatever the classification loss chosen.
    pub fn resolve_loss(&self, task: Task, n_classes: usize) -> Result<Loss> {
        let natural = match (task, n_classes) {
            (Task::Regression, _) => Loss::Squared,
            (Task::Classification, 2) => Loss::Logistic,
            (Task::Classification, _) => Loss::Softmax,
        };
        let Some(chosen) = self.loss else { return Ok(natural) };
        let fits = match task {
            Task::Regression => !chosen.is_classification(),
            Task::Classification => chosen == Loss::Softmax || chosen == Loss::Logistic && n_classes <= 2,
        };
        if !fits {
            return Err(invalid(
                "loss",
                format!(
                    "{} does not fit a {} task with {n_classes} classes; use {}",
                    chosen.name(),
                    task.name(),
                    match task {
                        Task::Regression => {
                            "squared, quantile, huber, absolute, poisson, gamma, tweedie or lambdarank"
                        }
                        Task::Classification if n_classes == 2 => "logistic or softmax",
                        Task::Classification => "softmax",
                    }
                ),
            ));
        }
        Ok(match chosen {
            // A single class has one output, whose probability is 1 under any
            // classification loss: softmax is the one that has a single output.
            Loss::Logistic if n_classes == 1 => Loss::Softmax,
            Loss::Quantile { .. } => Loss::Quantile { alpha: self.alpha },
            Loss::Huber { .. } => Loss::Huber { delta: self.huber_delta },
            Loss::Tweedie { .. } => Loss::Tweedie { power: self.tweedie_power },
            Loss::Lambdarank { .. } => Loss::Lambdarank {
                ndcg_at: self.ndcg_at,
                truncation: self.lambdarank_truncation_level,
                sigmoid: self.sigmoid,
                exp_gain: self.ndcg_exp_gain,
            },
            loss => loss,
        })
    }
}

/// Everything that decides how a model is trained, as parsed or written:
/// unchecked until [`TrainParams::check`] turns it into the
/// [`CheckedParams`](crate::CheckedParams) training takes.
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
    /// Variable importance, of either algorithm (boosting: `mdi`, as total gain, or `none`).
    pub importance: ImportanceKind,
    /// Classification: each class's weight, multiplied into its rows'
    /// sample weights (`class_weight`).
    pub class_weight: ClassWeight,
    /// The keys given explicitly, checked against the chosen algorithm.
    pub explicit: Vec<String>,
}

impl TrainParams {
    /// The tree settings of the chosen algorithm.
    pub fn tree(&self) -> &TreeParams {
        match self.algorithm.0 {
            Algorithm::RandomForest => &self.forest.tree,
            Algorithm::GradientBoosting => &self.boosting.tree,
        }
    }
}

/// The algorithm option, random forest unless set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlgorithmChoice(pub Algorithm);

impl Default for AlgorithmChoice {
    fn default() -> Self {
        AlgorithmChoice(Algorithm::RandomForest)
    }
}
