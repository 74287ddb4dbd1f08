//! The one table of option keys: each key's name, the algorithms it applies
//! to, what it means and accepts, how it is parsed, the range its typed
//! value must keep, and how the model's report shows it. [`OPTION_KEYS`],
//! `set`, `check`, `describe` and `docs/parameters.md` all read this table,
//! and its order is the order reports and model files list the keys in
//! (gradient boosting's models keep an older order, [`BOOSTING_RECORD_ORDER`]).

use arbor_quantize::BinBoundaries;

use crate::params::class_weight;
use crate::params::interactions;
use crate::params::monotone;
use crate::params::rules::{invalid, parse_bool, parse_choice, Rule};
use crate::params::types::{
    Algorithm, AlgorithmChoice, ClassWeight, CriterionKind, ImportanceKind, Loss, MaxFeatures, Task, TrainParams,
    TreeParams, Voting,
};
use crate::Result;

/// The algorithms a key applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applies {
    /// Random forests and gradient boosting (a tree setting sets both's [`TreeParams`]).
    Both,
    /// Random forests only.
    Forest,
    /// Gradient boosting only.
    Boosting,
}

impl Applies {
    /// The key applies to `algorithm`.
    pub(crate) fn to(self, algorithm: Algorithm) -> bool {
        match self {
            Applies::Both => true,
            Applies::Forest => algorithm == Algorithm::RandomForest,
            Applies::Boosting => algorithm == Algorithm::GradientBoosting,
        }
    }
}

/// What a report of the effective options knows besides the parameters.
pub(crate) struct Report<'a> {
    /// The parameters reported.
    pub params: &'a TrainParams,
    /// The task trained.
    pub task: Task,
    /// The number of features (`None`: the reference page, which names
    /// `max_features`' default rather than resolving it).
    pub n_features: Option<usize>,
    /// The resolved boosting loss.
    pub loss: Option<Loss>,
}

impl Report<'_> {
    /// The tree settings of the algorithm reported.
    fn tree(&self) -> &TreeParams {
        self.params.tree()
    }
}

/// One option key.
pub(crate) struct KeySpec {
    /// The key's name.
    pub name: &'static str,
    /// The algorithms it applies to.
    pub applies: Applies,
    /// What it means, in one line (for `docs/parameters.md`).
    pub about: &'static str,
    /// The values it accepts, in words (for `docs/parameters.md`).
    pub accepts: fn() -> String,
    /// Parses a value and sets the parameters (both algorithms' tree settings for a tree key).
    pub set: fn(&mut TrainParams, &str, &str) -> Result<()>,
    /// Checks the typed value of the chosen algorithm by the rule `set` applies.
    pub check: fn(&TrainParams, &str) -> Result<()>,
    /// The effective value, as reports show it.
    pub value: fn(&Report<'_>) -> String,
    /// Whether a model's report records the key (most always do).
    pub recorded: fn(&TrainParams) -> bool,
}

/// The key named `key`.
pub(crate) fn key_spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == key)
}

/// Every option key, in the table's order (the order forests' reports list them).
pub const OPTION_KEYS: &[&str] = &names::<{ KEYS.len() }>();

/// The names of [`KEYS`].
const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = KEYS[i].name;
        i += 1;
    }
    out
}

/// The order gradient-boosted models record their options in. The table's
/// order cannot give it and a forest's both: a forest records `max_features`
/// before `max_depth` and `split_method` before `min_samples_leaf`, boosting
/// the other way round, and model files already written hold these orders.
/// A boosting key missing here would follow, in the table's order.
pub(crate) const BOOSTING_RECORD_ORDER: &[&str] = &[
    "task",
    "algorithm",
    "n_rounds",
    "max_depth",
    "learning_rate",
    "min_split_loss",
    "lambda",
    "sample_fraction",
    "max_features",
    "min_samples_leaf",
    "min_samples_category",
    "category_penalty",
    "split_method",
    "max_bins",
    "min_bin_size",
    "bin_boundaries",
    "loss",
    "alpha",
    "huber_delta",
    "tweedie_power",
    "ndcg_at",
    "lambdarank_truncation_level",
    "sigmoid",
    "ndcg_exp_gain",
    "use_quantized_grad",
    "num_grad_quant_bins",
    "quant_train_renew_leaf",
    "monotone",
    "interaction_constraints",
    "class_weight",
    "scale_pos_weight",
    "early_stopping_rounds",
    "importance",
    "seed",
    "validation_fraction",
];

/// Sets a tree setting in both algorithms' [`TreeParams`].
fn both(p: &mut TrainParams, set: impl Fn(&mut TreeParams)) -> Result<()> {
    set(&mut p.forest.tree);
    set(&mut p.boosting.tree);
    Ok(())
}

/// Nothing to check: every typed value is valid.
fn any(_: &TrainParams, _: &str) -> Result<()> {
    Ok(())
}

/// Recorded in every report.
fn always(_: &TrainParams) -> bool {
    true
}

/// The names of a choice table, for the reference page.
fn choices<T>(table: &[(&str, T)]) -> String {
    table.iter().map(|(name, _)| format!("`{name}`")).collect::<Vec<_>>().join(", ")
}

/// The name of `value` in a choice table.
fn name_of<T: PartialEq>(table: &[(&'static str, T)], value: T) -> String {
    table.iter().find(|(_, v)| *v == value).map_or("", |(name, _)| name).into()
}

/// `none` for a list option left empty (the reference page's default), else the list.
fn none_if_empty(shown: String) -> String {
    if shown.is_empty() {
        "none".into()
    } else {
        shown
    }
}

/// Booleans, for the reference page.
fn booleans() -> String {
    "`true` or `false`".into()
}

/// The rule of `max_features`: a count of at least 1, or a named share.
fn check_max_features(key: &str, m: MaxFeatures, shown: &str) -> Result<MaxFeatures> {
    match m {
        MaxFeatures::Count(0) => {
            Err(invalid(key, format!("expected an integer >= 1, sqrt, third or all, got '{shown}'")))
        }
        m => Ok(m),
    }
}

/// `max_features` as reported: its name, or the count it resolves to
/// (`None`: no data to resolve it on; the default is named by the task).
fn max_features_name(m: MaxFeatures, task: Task, resolved: Option<Result<usize>>) -> String {
    match m {
        MaxFeatures::Count(k) => k.to_string(),
        MaxFeatures::Sqrt => "sqrt".into(),
        MaxFeatures::Third => "third".into(),
        MaxFeatures::All => "all".into(),
        MaxFeatures::Default => match resolved {
            Some(resolved) => resolved.map_or("default".into(), |m| m.to_string()),
            None if task == Task::Classification => "sqrt".into(),
            None => "third".into(),
        },
    }
}

const TASKS: &[(&str, Task)] = &[("classification", Task::Classification), ("regression", Task::Regression)];
const ALGORITHMS: &[(&str, Algorithm)] =
    &[("random-forest", Algorithm::RandomForest), ("gradient-boosting", Algorithm::GradientBoosting)];
const SPLIT_METHODS: &[(&str, bool)] = &[("hist", false), ("exact", true), ("dense", true)];
/// `bin_boundaries`.
const BIN_BOUNDARIES: &[(&str, BinBoundaries)] =
    &[(BinBoundaries::Quantile.name(), BinBoundaries::Quantile), (BinBoundaries::Greedy.name(), BinBoundaries::Greedy)];
const IMPORTANCES: &[(&str, ImportanceKind)] = &[
    ("none", ImportanceKind::None),
    ("mdi", ImportanceKind::Mdi),
    ("mda_raw", ImportanceKind::MdaRaw),
    ("mda_scaled", ImportanceKind::MdaScaled),
];
const SPLITTERS: &[(&str, bool)] = &[("best", false), ("random", true)];
const CRITERIA: &[(&str, CriterionKind)] = &[
    ("gini", CriterionKind::Gini),
    ("entropy", CriterionKind::Entropy),
    ("mse", CriterionKind::Mse),
    ("poisson", CriterionKind::Poisson),
    ("absolute_error", CriterionKind::AbsoluteError),
];
const VOTINGS: &[(&str, Voting)] = &[("weighted", Voting::Weighted), ("unweighted", Voting::Unweighted)];
/// The losses by name; the parameters shown are placeholders that
/// [`BoostingParams::resolve_loss`](crate::BoostingParams::resolve_loss) replaces with `alpha`, `huber_delta`
/// and `tweedie_power`.
const LOSSES: &[(&str, Loss)] = &[
    ("squared", Loss::Squared),
    ("logistic", Loss::Logistic),
    ("softmax", Loss::Softmax),
    ("quantile", Loss::Quantile { alpha: 0.5 }),
    ("huber", Loss::Huber { delta: 1.0 }),
    ("absolute", Loss::Absolute),
    ("poisson", Loss::Poisson),
    ("gamma", Loss::Gamma),
    ("tweedie", Loss::Tweedie { power: 1.5 }),
    ("lambdarank", Loss::LAMBDARANK),
];

const SAMPLE_FRACTION: Rule = Rule::Fraction { low_open: true, high: 1.0 };
const MAX_BINS: Rule = Rule::CountIn { min: 2, max: 65_536 };
const MIN_BIN_SIZE: Rule = Rule::Count { min: 1 };
const MAX_DEPTH: Rule = Rule::Count { min: 0 };
const MIN_SAMPLES_LEAF: Rule = Rule::Count { min: 1 };
const MIN_SAMPLES_CATEGORY: Rule = Rule::Count { min: 1 };
const N_TREES: Rule = Rule::Count { min: 1 };
const MAX_LEAF_NODES: Rule = Rule::Count { min: 0 };
const MIN_SAMPLES_SPLIT: Rule = Rule::Count { min: 2 };
const MIN_WEIGHT_FRACTION_LEAF: Rule = Rule::Fraction { low_open: false, high: 0.5 };
const NON_NEGATIVE: Rule = Rule::NonNegative;
const N_ROUNDS: Rule = Rule::Count { min: 1 };
const LEARNING_RATE: Rule = Rule::Fraction { low_open: true, high: 1.0 };
const EARLY_STOPPING_ROUNDS: Rule = Rule::Count { min: 0 };
const VALIDATION_FRACTION: Rule = Rule::Fraction { low_open: true, high: 0.5 };
const ALPHA: Rule = Rule::Between { low: 0.0, high: 1.0 };
const HUBER_DELTA: Rule = Rule::Positive;
const TWEEDIE_POWER: Rule = Rule::Between { low: 1.0, high: 2.0 };
const SCALE_POS_WEIGHT: Rule = Rule::Positive;
const NDCG_AT: Rule = Rule::CountIn { min: 1, max: u32::MAX as usize };
const TRUNCATION: Rule = Rule::CountIn { min: 1, max: u32::MAX as usize };
const SIGMOID: Rule = Rule::Positive;
const GRAD_QUANT_BINS: Rule = Rule::CountIn { min: 2, max: 4096 };

/// The loss a parameter key belongs to (`alpha`: quantile, ...), if it is one.
pub(crate) fn loss_of_parameter(key: &str) -> Option<&'static str> {
    match key {
        "alpha" => Some("quantile"),
        "huber_delta" => Some("huber"),
        "tweedie_power" => Some("tweedie"),
        "ndcg_at" | "lambdarank_truncation_level" | "sigmoid" | "ndcg_exp_gain" => Some("lambdarank"),
        _ => None,
    }
}

/// Whether the loss parameter `key` belongs to the chosen loss ([`loss_of_parameter`]):
/// it is recorded, and may be given, with its loss only.
pub(crate) fn with_its_loss(p: &TrainParams, key: &str) -> bool {
    loss_of_parameter(key).is_some_and(|owner| p.boosting.loss.is_some_and(|l| l.name() == owner))
}

/// Every option key, in the order reports list them (a forest's records
/// follow it exactly; see [`BOOSTING_RECORD_ORDER`] for boosting's).
pub(crate) const KEYS: &[KeySpec] = &[
    KeySpec {
        name: "task",
        applies: Applies::Both,
        about: "What the model predicts; unset, it follows the label's type (floats and decimals: regression).",
        accepts: || choices(TASKS),
        set: |p, k, v| {
            p.task = Some(parse_choice(k, v, TASKS)?);
            Ok(())
        },
        check: any,
        value: |r| r.task.name().into(),
        recorded: always,
    },
    KeySpec {
        name: "algorithm",
        applies: Applies::Both,
        about:
            "The ensemble trained (docs/algorithms.md, \"Random forest\"; docs/algorithms.md, \"Gradient boosting\").",
        accepts: || choices(ALGORITHMS),
        set: |p, k, v| {
            p.algorithm = AlgorithmChoice(parse_choice(k, v, ALGORITHMS)?);
            Ok(())
        },
        check: any,
        value: |r| r.params.algorithm.0.name().into(),
        recorded: always,
    },
    KeySpec {
        name: "n_trees",
        applies: Applies::Forest,
        about: "Number of trees.",
        accepts: || N_TREES.describe(),
        set: |p, k, v| {
            p.forest.n_trees = N_TREES.parse_count(k, v)?;
            Ok(())
        },
        check: |p, k| N_TREES.count(k, p.forest.n_trees),
        value: |r| r.params.forest.n_trees.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "n_rounds",
        applies: Applies::Boosting,
        about: "Boosting rounds (a tree per round, or one per class with softmax).",
        accepts: || N_ROUNDS.describe(),
        set: |p, k, v| {
            p.boosting.n_rounds = N_ROUNDS.parse_count(k, v)?;
            Ok(())
        },
        check: |p, k| N_ROUNDS.count(k, p.boosting.n_rounds),
        value: |r| r.params.boosting.n_rounds.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "max_features",
        applies: Applies::Both,
        about: "Features tried per split: `sqrt(p)`, `p/3`, all, or a count (reports give the count).",
        accepts: || "an integer >= 1, `sqrt`, `third` or `all`".into(),
        set: |p, k, v| {
            let m = match v {
                "sqrt" => MaxFeatures::Sqrt,
                "third" => MaxFeatures::Third,
                "all" => MaxFeatures::All,
                _ => check_max_features(k, MaxFeatures::Count(v.parse::<usize>().unwrap_or(0)), v)?,
            };
            both(p, |t| t.max_features = m)
        },
        check: |p, k| {
            let m = p.tree().max_features;
            let shown = if let MaxFeatures::Count(c) = m { c.to_string() } else { String::new() };
            check_max_features(k, m, &shown).map(drop)
        },
        value: |r| {
            let (f, b) = (&r.params.forest, &r.params.boosting);
            let resolved = r.n_features.map(|n| match r.params.algorithm.0 {
                Algorithm::RandomForest => f.features_per_node(n, r.task),
                Algorithm::GradientBoosting => b.features_per_node(n),
            });
            max_features_name(r.tree().max_features, r.task, resolved)
        },
        recorded: always,
    },
    KeySpec {
        name: "bootstrap",
        applies: Applies::Forest,
        about: "Draw each tree's rows with replacement (else without).",
        accepts: booleans,
        set: |p, k, v| {
            p.forest.bootstrap = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.forest.bootstrap.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "sample_fraction",
        applies: Applies::Both,
        about: "Rows drawn per tree, as a share of the training rows (boosting draws without replacement).",
        accepts: || SAMPLE_FRACTION.describe(),
        set: |p, k, v| {
            let v = SAMPLE_FRACTION.parse_number(k, v)?;
            both(p, |t| t.sample_fraction = v)
        },
        check: |p, k| SAMPLE_FRACTION.number(k, p.tree().sample_fraction),
        value: |r| r.tree().sample_fraction.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "split_method",
        applies: Applies::Both,
        about: "Quantile bins (`hist`) or a bin per distinct value (`exact`, also `dense`) \
                (docs/algorithms.md, \"Histogram binning\").",
        accepts: || choices(SPLIT_METHODS),
        set: |p, k, v| {
            let v = parse_choice(k, v, SPLIT_METHODS)?;
            both(p, |t| t.exact = v)
        },
        check: any,
        value: |r| if r.tree().exact { "exact" } else { "hist" }.into(),
        recorded: always,
    },
    KeySpec {
        name: "splitter",
        applies: Applies::Forest,
        about:
            "The best split of each feature, or one at random (extra trees) (docs/algorithms.md, \"Random splitter\").",
        accepts: || choices(SPLITTERS),
        set: |p, k, v| {
            p.forest.random_splitter = parse_choice(k, v, SPLITTERS)?;
            Ok(())
        },
        check: any,
        value: |r| name_of(SPLITTERS, r.params.forest.random_splitter),
        recorded: always,
    },
    KeySpec {
        name: "max_bins",
        applies: Applies::Both,
        about: "Most bins per feature, the missing-value bin included (`hist` only).",
        accepts: || MAX_BINS.describe(),
        set: |p, k, v| {
            let v = MAX_BINS.parse_count(k, v)?;
            both(p, |t| t.max_bins = v)
        },
        check: |p, k| MAX_BINS.count(k, p.tree().max_bins),
        value: |r| r.tree().max_bins.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_bin_size",
        applies: Applies::Both,
        about: "Fewest rows in a bin (`hist` only).",
        accepts: || MIN_BIN_SIZE.describe(),
        set: |p, k, v| {
            let v = MIN_BIN_SIZE.parse_count(k, v)?;
            both(p, |t| t.min_bin_size = v)
        },
        check: |p, k| MIN_BIN_SIZE.count(k, p.tree().min_bin_size),
        value: |r| r.tree().min_bin_size.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "bin_boundaries",
        applies: Applies::Both,
        about: "Where numeric bin edges fall (`hist` only): `quantile`, bins of about equal rows, or `greedy`, \
                LightGBM's: a value in a bin's share of the rows gets a bin of its own, zero a bin of its own, \
                negative and positive values the rest by their rows (docs/algorithms.md, \"Histogram binning\"); \
                recorded only when `greedy`.",
        accepts: || choices(BIN_BOUNDARIES),
        set: |p, k, v| {
            let v = parse_choice(k, v, BIN_BOUNDARIES)?;
            both(p, |t| t.bin_boundaries = v)
        },
        check: any,
        value: |r| name_of(BIN_BOUNDARIES, r.tree().bin_boundaries),
        recorded: |p| p.tree().bin_boundaries != BinBoundaries::Quantile,
    },
    KeySpec {
        name: "max_depth",
        applies: Applies::Both,
        about: "Deepest level of a tree; 0 for no limit (docs/algorithms.md, \"Termination criteria\").",
        accepts: || MAX_DEPTH.describe(),
        set: |p, k, v| {
            let v = MAX_DEPTH.parse_count(k, v)?;
            both(p, |t| t.max_depth = v)
        },
        check: |p, k| MAX_DEPTH.count(k, p.tree().max_depth),
        value: |r| r.tree().max_depth.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "learning_rate",
        applies: Applies::Boosting,
        about: "Shrinkage applied to every tree's leaves.",
        accepts: || LEARNING_RATE.describe(),
        set: |p, k, v| {
            p.boosting.learning_rate = LEARNING_RATE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| LEARNING_RATE.number(k, p.boosting.learning_rate),
        value: |r| r.params.boosting.learning_rate.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_split_loss",
        applies: Applies::Boosting,
        about: "Least gain for a split (XGBoost's `gamma`, LightGBM's `min_gain_to_split`): `G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)` must reach it.",
        accepts: || NON_NEGATIVE.describe(),
        set: |p, k, v| {
            p.boosting.min_split_loss = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| NON_NEGATIVE.number(k, p.boosting.min_split_loss),
        value: |r| r.params.boosting.min_split_loss.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "lambda",
        applies: Applies::Boosting,
        about: "L2 regularization of leaf weights.",
        accepts: || NON_NEGATIVE.describe(),
        set: |p, k, v| {
            p.boosting.lambda = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| NON_NEGATIVE.number(k, p.boosting.lambda),
        value: |r| r.params.boosting.lambda.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "max_leaf_nodes",
        applies: Applies::Forest,
        about: "Most leaves per tree, grown best node first; 0 grows depth-first without limit \
                (docs/algorithms.md, \"Tree building strategies\").",
        accepts: || MAX_LEAF_NODES.describe(),
        set: |p, k, v| {
            p.forest.max_leaf_nodes = MAX_LEAF_NODES.parse_count(k, v)?;
            Ok(())
        },
        check: |p, k| MAX_LEAF_NODES.count(k, p.forest.max_leaf_nodes),
        value: |r| r.params.forest.max_leaf_nodes.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_samples_leaf",
        applies: Applies::Both,
        about: "Fewest rows in a leaf.",
        accepts: || MIN_SAMPLES_LEAF.describe(),
        set: |p, k, v| {
            let v = MIN_SAMPLES_LEAF.parse_count(k, v)?;
            both(p, |t| t.min_samples_leaf = Some(v))
        },
        check: |p, k| match p.tree().min_samples_leaf {
            Some(v) => MIN_SAMPLES_LEAF.count(k, v),
            None => Ok(()),
        },
        value: |r| {
            match r.params.algorithm.0 {
                Algorithm::RandomForest => r.tree().min_samples_leaf(r.task),
                Algorithm::GradientBoosting => r.params.boosting.min_samples_leaf(),
            }
            .to_string()
        },
        recorded: always,
    },
    KeySpec {
        name: "min_samples_split",
        applies: Applies::Forest,
        about: "Fewest rows in a node that may be split.",
        accepts: || MIN_SAMPLES_SPLIT.describe(),
        set: |p, k, v| {
            p.forest.min_samples_split = MIN_SAMPLES_SPLIT.parse_count(k, v)?;
            Ok(())
        },
        check: |p, k| MIN_SAMPLES_SPLIT.count(k, p.forest.min_samples_split),
        value: |r| r.params.forest.min_samples_split.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_samples_category",
        applies: Applies::Both,
        about: "Fewest rows (or weight) of a category for a subset split to place it on its own; \
                rarer ones are pooled (1: no pooling).",
        accepts: || MIN_SAMPLES_CATEGORY.describe(),
        set: |p, k, v| {
            let v = MIN_SAMPLES_CATEGORY.parse_count(k, v)?;
            both(p, |t| t.min_samples_category = v)
        },
        check: |p, k| MIN_SAMPLES_CATEGORY.count(k, p.tree().min_samples_category),
        value: |r| r.tree().min_samples_category.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "category_penalty",
        applies: Applies::Both,
        about: "How many times the gain noise would show a subset split is charged per category \
                beyond five (0: no charge).",
        accepts: || NON_NEGATIVE.describe(),
        set: |p, k, v| {
            let v = NON_NEGATIVE.parse_number(k, v)?;
            both(p, |t| t.category_penalty = v)
        },
        check: |p, k| NON_NEGATIVE.number(k, p.tree().category_penalty),
        value: |r| r.tree().category_penalty.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_weight_fraction_leaf",
        applies: Applies::Forest,
        about: "Fewest total weight in a leaf, as a share of all weight.",
        accepts: || MIN_WEIGHT_FRACTION_LEAF.describe(),
        set: |p, k, v| {
            p.forest.min_weight_fraction_leaf = MIN_WEIGHT_FRACTION_LEAF.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| MIN_WEIGHT_FRACTION_LEAF.number(k, p.forest.min_weight_fraction_leaf),
        value: |r| r.params.forest.min_weight_fraction_leaf.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "impurity_threshold",
        applies: Applies::Forest,
        about: "Nodes of impurity at or below this are leaves (docs/algorithms.md, \"Termination criteria\").",
        accepts: || NON_NEGATIVE.describe(),
        set: |p, k, v| {
            p.forest.impurity_threshold = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| NON_NEGATIVE.number(k, p.forest.impurity_threshold),
        value: |r| r.params.forest.impurity_threshold.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "min_impurity_decrease",
        applies: Applies::Forest,
        about: "Least weighted impurity decrease (`W_t/W · Δi`) for a split \
                (docs/algorithms.md, \"Termination criteria\").",
        accepts: || NON_NEGATIVE.describe(),
        set: |p, k, v| {
            p.forest.min_impurity_decrease = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| NON_NEGATIVE.number(k, p.forest.min_impurity_decrease),
        value: |r| r.params.forest.min_impurity_decrease.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "criterion",
        applies: Applies::Forest,
        about: "Impurity criterion: gini or entropy for classification, mse, poisson (counts) or absolute_error \
                (medians) for regression (docs/algorithms.md, \"Split criteria\").",
        accepts: || choices(CRITERIA),
        set: |p, k, v| {
            p.forest.criterion = parse_choice(k, v, CRITERIA)?;
            Ok(())
        },
        check: any,
        value: |r| {
            match (r.params.forest.criterion, r.task) {
                (CriterionKind::Gini, _) | (CriterionKind::Default, Task::Classification) => "gini",
                (CriterionKind::Entropy, _) => "entropy",
                (CriterionKind::Mse, _) | (CriterionKind::Default, Task::Regression) => "mse",
                (CriterionKind::Poisson, _) => "poisson",
                (CriterionKind::AbsoluteError, _) => "absolute_error",
            }
            .into()
        },
        recorded: always,
    },
    KeySpec {
        name: "voting",
        applies: Applies::Forest,
        about: "Classification: the mean of the leaves' class shares, or a vote per tree.",
        accepts: || choices(VOTINGS),
        set: |p, k, v| {
            p.forest.voting = parse_choice(k, v, VOTINGS)?;
            Ok(())
        },
        check: any,
        value: |r| name_of(VOTINGS, r.params.forest.voting),
        recorded: always,
    },
    KeySpec {
        name: "oob",
        applies: Applies::Forest,
        about:
            "Compute the out-of-bag error (needs rows a tree did not draw; docs/algorithms.md, \"Out-of-bag error\").",
        accepts: booleans,
        set: |p, k, v| {
            p.forest.oob = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.forest.oob.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "oob_per_observation",
        applies: Applies::Forest,
        about: "Compute each row's out-of-bag prediction and error.",
        accepts: booleans,
        set: |p, k, v| {
            p.forest.oob_per_observation = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.forest.oob_per_observation.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "loss",
        applies: Applies::Boosting,
        about: "The loss boosting minimizes (docs/algorithms.md, \"Losses\"): squared, quantile, huber, \
                absolute, poisson, gamma or tweedie (regression), lambdarank (ranking within the queries of a \
                group column; the task is then regression unless given), logistic (two classes) or softmax; \
                unset, squared, logistic or softmax from the task and the classes.",
        accepts: || choices(LOSSES),
        set: |p, k, v| {
            let loss = parse_choice(k, v, LOSSES)?;
            // Relevance grades are numbers to rank by, not classes.
            if loss.is_ranking() && p.task.is_none() {
                p.task = Some(Task::Regression);
            }
            p.boosting.loss = Some(loss);
            Ok(())
        },
        check: any,
        value: |r| r.loss.or(r.params.boosting.loss).map_or("default", Loss::name).into(),
        recorded: always,
    },
    KeySpec {
        name: "alpha",
        applies: Applies::Boosting,
        about: "The quantile `loss=quantile` predicts.",
        accepts: || ALPHA.describe(),
        set: |p, k, v| {
            p.boosting.alpha = ALPHA.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| ALPHA.number(k, p.boosting.alpha),
        value: |r| r.params.boosting.alpha.to_string(),
        recorded: |p| with_its_loss(p, "alpha"),
    },
    KeySpec {
        name: "huber_delta",
        applies: Applies::Boosting,
        about: "Where `loss=huber` turns from squared to absolute error.",
        accepts: || HUBER_DELTA.describe(),
        set: |p, k, v| {
            p.boosting.huber_delta = HUBER_DELTA.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| HUBER_DELTA.number(k, p.boosting.huber_delta),
        value: |r| r.params.boosting.huber_delta.to_string(),
        recorded: |p| with_its_loss(p, "huber_delta"),
    },
    KeySpec {
        name: "tweedie_power",
        applies: Applies::Boosting,
        about: "The variance power of `loss=tweedie` (near 1: Poisson-like, near 2: Gamma-like).",
        accepts: || TWEEDIE_POWER.describe(),
        set: |p, k, v| {
            p.boosting.tweedie_power = TWEEDIE_POWER.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| TWEEDIE_POWER.number(k, p.boosting.tweedie_power),
        value: |r| r.params.boosting.tweedie_power.to_string(),
        recorded: |p| with_its_loss(p, "tweedie_power"),
    },
    KeySpec {
        name: "ndcg_at",
        applies: Applies::Boosting,
        about: "The cut-off k of the NDCG@k that `loss=lambdarank` reports and stops early on \
                (the gradients' pairs are cut at `lambdarank_truncation_level`).",
        accepts: || NDCG_AT.describe(),
        set: |p, k, v| {
            p.boosting.ndcg_at = NDCG_AT.parse_count(k, v)? as u32;
            Ok(())
        },
        check: |p, k| NDCG_AT.count(k, p.boosting.ndcg_at as usize),
        value: |r| r.params.boosting.ndcg_at.to_string(),
        recorded: |p| with_its_loss(p, "ndcg_at"),
    },
    KeySpec {
        name: "lambdarank_truncation_level",
        applies: Applies::Boosting,
        about: "`loss=lambdarank` weighs the pairs of a query's rows of which one is among its first this many \
                by score, and cuts the gradients' NDCG there (LightGBM's key and default).",
        accepts: || TRUNCATION.describe(),
        set: |p, k, v| {
            p.boosting.lambdarank_truncation_level = TRUNCATION.parse_count(k, v)? as u32;
            Ok(())
        },
        check: |p, k| TRUNCATION.count(k, p.boosting.lambdarank_truncation_level as usize),
        value: |r| r.params.boosting.lambdarank_truncation_level.to_string(),
        recorded: |p| with_its_loss(p, "lambdarank_truncation_level"),
    },
    KeySpec {
        name: "sigmoid",
        applies: Applies::Boosting,
        about: "The steepness σ of `loss=lambdarank`'s pairwise logistic `log(1 + e^(−σ(s_i − s_j)))` \
                (LightGBM's key and default): larger values push harder on pairs already ordered.",
        accepts: || SIGMOID.describe(),
        set: |p, k, v| {
            p.boosting.sigmoid = SIGMOID.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| SIGMOID.number(k, p.boosting.sigmoid),
        value: |r| r.params.boosting.sigmoid.to_string(),
        recorded: |p| with_its_loss(p, "sigmoid"),
    },
    KeySpec {
        name: "ndcg_exp_gain",
        applies: Applies::Boosting,
        about: "Whether `loss=lambdarank`'s grades gain `2^y − 1` in the NDCG (grades 0 to 30) or `y` \
                (any whole grade): XGBoost's key and default.",
        accepts: booleans,
        set: |p, k, v| {
            p.boosting.ndcg_exp_gain = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.boosting.ndcg_exp_gain.to_string(),
        recorded: |p| with_its_loss(p, "ndcg_exp_gain"),
    },
    KeySpec {
        name: "use_quantized_grad",
        applies: Applies::Boosting,
        about: "Round each round's gradients and hessians stochastically to whole multiples of a power-of-two \
                unit and sum histograms in 32-bit integers (LightGBM 4's key; docs/algorithms.md, \
                \"Quantized gradients\"); recorded only when true.",
        accepts: booleans,
        set: |p, k, v| {
            p.boosting.use_quantized_grad = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.boosting.use_quantized_grad.to_string(),
        recorded: |p| p.boosting.use_quantized_grad,
    },
    KeySpec {
        name: "num_grad_quant_bins",
        applies: Applies::Boosting,
        about: "With `use_quantized_grad`, the least number of levels the gradients span: the unit is the \
                power of two at or below the largest gradient over half this (LightGBM's key and default).",
        accepts: || GRAD_QUANT_BINS.describe(),
        set: |p, k, v| {
            p.boosting.num_grad_quant_bins = GRAD_QUANT_BINS.parse_count(k, v)? as u32;
            Ok(())
        },
        check: |p, k| GRAD_QUANT_BINS.count(k, p.boosting.num_grad_quant_bins as usize),
        value: |r| r.params.boosting.num_grad_quant_bins.to_string(),
        recorded: |p| p.boosting.use_quantized_grad,
    },
    KeySpec {
        name: "quant_train_renew_leaf",
        applies: Applies::Boosting,
        about: "With `use_quantized_grad`, set each leaf again from its rows' exact gradients once the tree \
                is grown (LightGBM's key and default).",
        accepts: booleans,
        set: |p, k, v| {
            p.boosting.quant_train_renew_leaf = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        value: |r| r.params.boosting.quant_train_renew_leaf.to_string(),
        recorded: |p| p.boosting.use_quantized_grad,
    },
    KeySpec {
        name: "monotone",
        applies: Applies::Both,
        about: "Features the prediction may only rise (`+1`) or only fall (`-1`) with, numeric ones only \
                (docs/algorithms.md, \"Monotone constraints\"); recorded only when set.",
        accepts: || "`feature:+1,other:-1` (directions `+1`, `-1` or `0`), or `none`".into(),
        set: |p, _, v| {
            let v = monotone::parse(v)?;
            both(p, |t| t.monotone = v.clone())
        },
        check: any,
        value: |r| none_if_empty(monotone::show(&r.tree().monotone)),
        recorded: |p| !p.tree().monotone.is_empty(),
    },
    KeySpec {
        name: "interaction_constraints",
        applies: Applies::Both,
        about: "Sets of features allowed to meet on one path of a tree (a feature in no set stands alone) \
                (docs/algorithms.md, \"Interaction constraints\"); recorded only when set.",
        accepts: || "`[a,b],[c,d,e]`, or `none`".into(),
        set: |p, _, v| {
            let v = interactions::parse(v)?;
            both(p, |t| t.interaction_constraints = v.clone())
        },
        check: any,
        value: |r| none_if_empty(interactions::show(&r.tree().interaction_constraints)),
        recorded: |p| !p.tree().interaction_constraints.is_empty(),
    },
    KeySpec {
        name: "class_weight",
        applies: Applies::Both,
        about: "Classification: each class's weight, multiplied into its rows' sample weights; `balanced` \
                weighs each class `n / (k · n_c)`; recorded only when set.",
        accepts: || "`balanced`, `class:weight,...` (weights > 0; classes not named weigh 1), or `none`".into(),
        set: |p, _, v| {
            p.class_weight = class_weight::parse(v)?;
            Ok(())
        },
        check: any,
        value: |r| class_weight::show(&r.params.class_weight),
        recorded: |p| p.class_weight != ClassWeight::None,
    },
    KeySpec {
        name: "scale_pos_weight",
        applies: Applies::Boosting,
        about: "Two classes: the second (positive) class's rows weigh this many times more; recorded only when not 1.",
        accepts: || SCALE_POS_WEIGHT.describe(),
        set: |p, k, v| {
            p.boosting.scale_pos_weight = SCALE_POS_WEIGHT.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| SCALE_POS_WEIGHT.number(k, p.boosting.scale_pos_weight),
        value: |r| r.params.boosting.scale_pos_weight.to_string(),
        recorded: |p| p.boosting.scale_pos_weight != 1.0,
    },
    KeySpec {
        name: "early_stopping_rounds",
        applies: Applies::Boosting,
        about: "Stop when the held-out loss has not improved for this many rounds; 0 turns it off.",
        accepts: || EARLY_STOPPING_ROUNDS.describe(),
        set: |p, k, v| {
            p.boosting.early_stopping_rounds = EARLY_STOPPING_ROUNDS.parse_count(k, v)?;
            Ok(())
        },
        check: |p, k| EARLY_STOPPING_ROUNDS.count(k, p.boosting.early_stopping_rounds),
        value: |r| r.params.boosting.early_stopping_rounds.to_string(),
        recorded: always,
    },
    KeySpec {
        name: "validation_fraction",
        applies: Applies::Boosting,
        about: "Share of the training rows held out for early stopping (recorded only with it).",
        accepts: || VALIDATION_FRACTION.describe(),
        set: |p, k, v| {
            p.boosting.validation_fraction = VALIDATION_FRACTION.parse_number(k, v)?;
            Ok(())
        },
        check: |p, k| VALIDATION_FRACTION.number(k, p.boosting.validation_fraction),
        value: |r| r.params.boosting.validation_fraction.to_string(),
        recorded: |p| p.boosting.early_stopping_rounds > 0,
    },
    KeySpec {
        name: "importance",
        applies: Applies::Both,
        about: "Variable importance: mean decrease of impurity (boosting: total gain) or of accuracy \
                (forests only), raw or scaled (docs/algorithms.md, \"Variable importance\").",
        accepts: || choices(IMPORTANCES),
        set: |p, k, v| {
            p.importance = parse_choice(k, v, IMPORTANCES)?;
            Ok(())
        },
        check: any,
        value: |r| name_of(IMPORTANCES, r.params.importance),
        recorded: always,
    },
    KeySpec {
        name: "seed",
        applies: Applies::Both,
        about: "Seed of every random stream: the same seed and data give the same model.",
        accepts: || "an integer >= 0".into(),
        set: |p, k, v| {
            let v = v.parse::<u64>().map_err(|_| invalid(k, format!("expected an integer >= 0, got '{v}'")))?;
            both(p, |t| t.seed = v)
        },
        check: any,
        value: |r| r.tree().seed.to_string(),
        recorded: always,
    },
];
