//! The one table of option keys: each key's name, the algorithms it applies
//! to, how it is parsed, the range its typed value must keep, and how the
//! model's report shows it. [`OPTION_KEYS`], `set`, `validate` and `describe`
//! all read this table.

use crate::params::rules::{invalid, parse_bool, parse_choice, Rule};
use crate::params::types::{
    Algorithm, AlgorithmChoice, BoostingParams, CriterionKind, ForestParams, ImportanceKind, Loss, MaxFeatures, Task,
    TrainParams, Voting,
};
use crate::Result;

/// The algorithms a key applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applies {
    /// Random forests and gradient boosting (a shared key sets both).
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
    /// The number of features.
    pub n_features: usize,
    /// The resolved boosting loss.
    pub loss: Option<Loss>,
}

/// One option key.
pub(crate) struct KeySpec {
    /// The key's name.
    pub name: &'static str,
    /// The algorithms it applies to.
    pub applies: Applies,
    /// Parses a value and sets the parameters (both algorithms' for a shared key).
    pub set: fn(&mut TrainParams, &str, &str) -> Result<()>,
    /// Checks the typed value `algorithm` uses by the rule `set` applies.
    pub check: fn(&TrainParams, Algorithm, &str) -> Result<()>,
    /// The effective value for a report (`None`: not reported).
    pub show: fn(&Report<'_>) -> Option<String>,
    /// The key's place in the report of a forest and of a boosted model (the
    /// model file records them in this order).
    pub place: (u8, u8),
}

impl KeySpec {
    /// The key's place in the report of a model of `algorithm`.
    pub(crate) fn place(&self, algorithm: Algorithm) -> u8 {
        match algorithm {
            Algorithm::RandomForest => self.place.0,
            Algorithm::GradientBoosting => self.place.1,
        }
    }
}

/// The key named `key`.
pub(crate) fn key_spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == key)
}

/// Every option key, in the order errors list them: the shared keys, then
/// the forest's, then boosting's.
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

/// The value of a shared key as the chosen algorithm's parameters hold it.
fn shared<T>(
    p: &TrainParams,
    algorithm: Algorithm,
    f: impl Fn(&ForestParams) -> T,
    b: impl Fn(&BoostingParams) -> T,
) -> T {
    match algorithm {
        Algorithm::RandomForest => f(&p.forest),
        Algorithm::GradientBoosting => b(&p.boosting),
    }
}

/// [`shared`] for a report.
fn shown<T: ToString>(
    r: &Report<'_>,
    f: impl Fn(&ForestParams) -> T,
    b: impl Fn(&BoostingParams) -> T,
) -> Option<String> {
    Some(shared(r.params, r.params.algorithm.0, f, b).to_string())
}

/// Nothing to check: every typed value is valid.
fn any(_: &TrainParams, _: Algorithm, _: &str) -> Result<()> {
    Ok(())
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

/// `max_features` as reported: its name, or the count it resolves to.
fn max_features_name(m: MaxFeatures, resolved: Result<usize>) -> String {
    match m {
        MaxFeatures::Count(k) => k.to_string(),
        MaxFeatures::Sqrt => "sqrt".into(),
        MaxFeatures::Third => "third".into(),
        MaxFeatures::All => "all".into(),
        MaxFeatures::Default => resolved.map_or("default".into(), |m| m.to_string()),
    }
}

const TASKS: &[(&str, Task)] = &[("classification", Task::Classification), ("regression", Task::Regression)];
const ALGORITHMS: &[(&str, Algorithm)] =
    &[("random-forest", Algorithm::RandomForest), ("gradient-boosting", Algorithm::GradientBoosting)];
const SPLIT_METHODS: &[(&str, bool)] = &[("hist", false), ("exact", true), ("dense", true)];
const IMPORTANCES: &[(&str, ImportanceKind)] = &[
    ("none", ImportanceKind::None),
    ("mdi", ImportanceKind::Mdi),
    ("mda_raw", ImportanceKind::MdaRaw),
    ("mda_scaled", ImportanceKind::MdaScaled),
];
const SPLITTERS: &[(&str, bool)] = &[("best", false), ("random", true)];
const CRITERIA: &[(&str, CriterionKind)] =
    &[("gini", CriterionKind::Gini), ("entropy", CriterionKind::Entropy), ("mse", CriterionKind::Mse)];
const VOTINGS: &[(&str, Voting)] = &[("weighted", Voting::Weighted), ("unweighted", Voting::Unweighted)];
const LOSSES: &[(&str, Loss)] = &[("squared", Loss::Squared), ("logistic", Loss::Logistic), ("softmax", Loss::Softmax)];

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

/// Every option key: the shared keys, then the forest's, then boosting's.
pub(crate) const KEYS: &[KeySpec] = &[
    // Shared keys.
    KeySpec {
        name: "task",
        applies: Applies::Both,
        set: |p, k, v| {
            p.task = Some(parse_choice(k, v, TASKS)?);
            Ok(())
        },
        check: any,
        show: |r| Some(r.task.name().into()),
        place: (0, 0),
    },
    KeySpec {
        name: "algorithm",
        applies: Applies::Both,
        set: |p, k, v| {
            p.algorithm = AlgorithmChoice(parse_choice(k, v, ALGORITHMS)?);
            Ok(())
        },
        check: any,
        show: |r| Some(r.params.algorithm.0.name().into()),
        place: (1, 1),
    },
    KeySpec {
        name: "max_features",
        applies: Applies::Both,
        set: |p, k, v| {
            let m = match v {
                "sqrt" => MaxFeatures::Sqrt,
                "third" => MaxFeatures::Third,
                "all" => MaxFeatures::All,
                _ => check_max_features(k, MaxFeatures::Count(v.parse::<usize>().unwrap_or(0)), v)?,
            };
            (p.forest.max_features, p.boosting.max_features) = (m, m);
            Ok(())
        },
        check: |p, a, k| {
            let m = shared(p, a, |f| f.max_features, |b| b.max_features);
            let shown = if let MaxFeatures::Count(c) = m { c.to_string() } else { String::new() };
            check_max_features(k, m, &shown).map(drop)
        },
        show: |r| {
            let (f, b, n) = (&r.params.forest, &r.params.boosting, r.n_features);
            Some(match r.params.algorithm.0 {
                Algorithm::RandomForest => max_features_name(f.max_features, f.features_per_node(n, r.task)),
                Algorithm::GradientBoosting => max_features_name(b.max_features, b.features_per_node(n)),
            })
        },
        place: (3, 8),
    },
    KeySpec {
        name: "sample_fraction",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = SAMPLE_FRACTION.parse_number(k, v)?;
            (p.forest.sample_fraction, p.boosting.sample_fraction) = (v, v);
            Ok(())
        },
        check: |p, a, k| SAMPLE_FRACTION.number(k, shared(p, a, |f| f.sample_fraction, |b| b.sample_fraction)),
        show: |r| shown(r, |f| f.sample_fraction, |b| b.sample_fraction),
        place: (5, 7),
    },
    KeySpec {
        name: "split_method",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = parse_choice(k, v, SPLIT_METHODS)?;
            (p.forest.exact, p.boosting.exact) = (v, v);
            Ok(())
        },
        check: any,
        show: |r| {
            let exact = shared(r.params, r.params.algorithm.0, |f| f.exact, |b| b.exact);
            Some(if exact { "exact" } else { "hist" }.into())
        },
        place: (6, 12),
    },
    KeySpec {
        name: "max_bins",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = MAX_BINS.parse_count(k, v)?;
            (p.forest.max_bins, p.boosting.max_bins) = (v, v);
            Ok(())
        },
        check: |p, a, k| MAX_BINS.count(k, shared(p, a, |f| f.max_bins, |b| b.max_bins)),
        show: |r| shown(r, |f| f.max_bins, |b| b.max_bins),
        place: (8, 13),
    },
    KeySpec {
        name: "min_bin_size",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = MIN_BIN_SIZE.parse_count(k, v)?;
            (p.forest.min_bin_size, p.boosting.min_bin_size) = (v, v);
            Ok(())
        },
        check: |p, a, k| MIN_BIN_SIZE.count(k, shared(p, a, |f| f.min_bin_size, |b| b.min_bin_size)),
        show: |r| shown(r, |f| f.min_bin_size, |b| b.min_bin_size),
        place: (9, 14),
    },
    KeySpec {
        name: "max_depth",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = MAX_DEPTH.parse_count(k, v)?;
            (p.forest.max_depth, p.boosting.max_depth) = (v, v);
            Ok(())
        },
        check: |p, a, k| MAX_DEPTH.count(k, shared(p, a, |f| f.max_depth, |b| b.max_depth)),
        show: |r| shown(r, |f| f.max_depth, |b| b.max_depth),
        place: (10, 3),
    },
    KeySpec {
        name: "min_samples_leaf",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = MIN_SAMPLES_LEAF.parse_count(k, v)?;
            (p.forest.min_samples_leaf, p.boosting.min_samples_leaf) = (Some(v), v);
            Ok(())
        },
        check: |p, a, k| match shared(p, a, |f| f.min_samples_leaf, |b| Some(b.min_samples_leaf)) {
            Some(v) => MIN_SAMPLES_LEAF.count(k, v),
            None => Ok(()),
        },
        show: |r| shown(r, |f| f.min_samples_leaf(r.task), |b| b.min_samples_leaf),
        place: (12, 9),
    },
    KeySpec {
        name: "min_samples_category",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = MIN_SAMPLES_CATEGORY.parse_count(k, v)?;
            (p.forest.min_samples_category, p.boosting.min_samples_category) = (v, v);
            Ok(())
        },
        check: |p, a, k| {
            MIN_SAMPLES_CATEGORY.count(k, shared(p, a, |f| f.min_samples_category, |b| b.min_samples_category))
        },
        show: |r| shown(r, |f| f.min_samples_category, |b| b.min_samples_category),
        place: (14, 10),
    },
    KeySpec {
        name: "importance",
        applies: Applies::Both,
        set: |p, k, v| {
            p.forest.importance = parse_choice(k, v, IMPORTANCES)?;
            Ok(())
        },
        check: any,
        show: |r| IMPORTANCES.iter().find(|(_, i)| *i == r.params.forest.importance).map(|(name, _)| (*name).into()),
        place: (23, 17),
    },
    KeySpec {
        name: "seed",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = v.parse::<u64>().map_err(|_| invalid(k, format!("expected an integer >= 0, got '{v}'")))?;
            (p.forest.seed, p.boosting.seed) = (v, v);
            Ok(())
        },
        check: any,
        show: |r| shown(r, |f| f.seed, |b| b.seed),
        place: (24, 18),
    },
    // Random forest keys.
    KeySpec {
        name: "n_trees",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.n_trees = N_TREES.parse_count(k, v)?;
            Ok(())
        },
        check: |p, _, k| N_TREES.count(k, p.forest.n_trees),
        show: |r| Some(r.params.forest.n_trees.to_string()),
        place: (2, 0),
    },
    KeySpec {
        name: "bootstrap",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.bootstrap = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        show: |r| Some(r.params.forest.bootstrap.to_string()),
        place: (4, 0),
    },
    KeySpec {
        name: "splitter",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.random_splitter = parse_choice(k, v, SPLITTERS)?;
            Ok(())
        },
        check: any,
        show: |r| Some(if r.params.forest.random_splitter { "random" } else { "best" }.into()),
        place: (7, 0),
    },
    KeySpec {
        name: "max_leaf_nodes",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.max_leaf_nodes = MAX_LEAF_NODES.parse_count(k, v)?;
            Ok(())
        },
        check: |p, _, k| MAX_LEAF_NODES.count(k, p.forest.max_leaf_nodes),
        show: |r| Some(r.params.forest.max_leaf_nodes.to_string()),
        place: (11, 0),
    },
    KeySpec {
        name: "min_samples_split",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.min_samples_split = MIN_SAMPLES_SPLIT.parse_count(k, v)?;
            Ok(())
        },
        check: |p, _, k| MIN_SAMPLES_SPLIT.count(k, p.forest.min_samples_split),
        show: |r| Some(r.params.forest.min_samples_split.to_string()),
        place: (13, 0),
    },
    KeySpec {
        name: "category_penalty",
        applies: Applies::Both,
        set: |p, k, v| {
            let v = NON_NEGATIVE.parse_number(k, v)?;
            (p.forest.category_penalty, p.boosting.category_penalty) = (v, v);
            Ok(())
        },
        check: |p, a, k| NON_NEGATIVE.number(k, shared(p, a, |f| f.category_penalty, |b| b.category_penalty)),
        show: |r| shown(r, |f| f.category_penalty, |b| b.category_penalty),
        place: (15, 11),
    },
    KeySpec {
        name: "min_weight_fraction_leaf",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.min_weight_fraction_leaf = MIN_WEIGHT_FRACTION_LEAF.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| MIN_WEIGHT_FRACTION_LEAF.number(k, p.forest.min_weight_fraction_leaf),
        show: |r| Some(r.params.forest.min_weight_fraction_leaf.to_string()),
        place: (16, 0),
    },
    KeySpec {
        name: "impurity_threshold",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.impurity_threshold = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| NON_NEGATIVE.number(k, p.forest.impurity_threshold),
        show: |r| Some(r.params.forest.impurity_threshold.to_string()),
        place: (17, 0),
    },
    KeySpec {
        name: "min_impurity_decrease",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.min_impurity_decrease = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| NON_NEGATIVE.number(k, p.forest.min_impurity_decrease),
        show: |r| Some(r.params.forest.min_impurity_decrease.to_string()),
        place: (18, 0),
    },
    KeySpec {
        name: "criterion",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.criterion = parse_choice(k, v, CRITERIA)?;
            Ok(())
        },
        check: any,
        show: |r| {
            Some(
                match (r.params.forest.criterion, r.task) {
                    (CriterionKind::Gini, _) | (CriterionKind::Default, Task::Classification) => "gini",
                    (CriterionKind::Entropy, _) => "entropy",
                    (CriterionKind::Mse, _) | (CriterionKind::Default, Task::Regression) => "mse",
                }
                .into(),
            )
        },
        place: (19, 0),
    },
    KeySpec {
        name: "voting",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.voting = parse_choice(k, v, VOTINGS)?;
            Ok(())
        },
        check: any,
        show: |r| Some(if r.params.forest.voting == Voting::Weighted { "weighted" } else { "unweighted" }.into()),
        place: (20, 0),
    },
    KeySpec {
        name: "oob",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.oob = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        show: |r| Some(r.params.forest.oob.to_string()),
        place: (21, 0),
    },
    KeySpec {
        name: "oob_per_observation",
        applies: Applies::Forest,
        set: |p, k, v| {
            p.forest.oob_per_observation = parse_bool(k, v)?;
            Ok(())
        },
        check: any,
        show: |r| Some(r.params.forest.oob_per_observation.to_string()),
        place: (22, 0),
    },
    // Gradient boosting keys.
    KeySpec {
        name: "n_rounds",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.n_rounds = N_ROUNDS.parse_count(k, v)?;
            Ok(())
        },
        check: |p, _, k| N_ROUNDS.count(k, p.boosting.n_rounds),
        show: |r| Some(r.params.boosting.n_rounds.to_string()),
        place: (0, 2),
    },
    KeySpec {
        name: "learning_rate",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.learning_rate = LEARNING_RATE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| LEARNING_RATE.number(k, p.boosting.learning_rate),
        show: |r| Some(r.params.boosting.learning_rate.to_string()),
        place: (0, 4),
    },
    KeySpec {
        name: "min_split_loss",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.min_split_loss = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| NON_NEGATIVE.number(k, p.boosting.min_split_loss),
        show: |r| Some(r.params.boosting.min_split_loss.to_string()),
        place: (0, 5),
    },
    KeySpec {
        name: "lambda",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.lambda = NON_NEGATIVE.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| NON_NEGATIVE.number(k, p.boosting.lambda),
        show: |r| Some(r.params.boosting.lambda.to_string()),
        place: (0, 6),
    },
    KeySpec {
        name: "loss",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.loss = Some(parse_choice(k, v, LOSSES)?);
            Ok(())
        },
        check: any,
        show: |r| Some(r.loss.or(r.params.boosting.loss).map_or("default", Loss::name).into()),
        place: (0, 15),
    },
    KeySpec {
        name: "early_stopping_rounds",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.early_stopping_rounds = EARLY_STOPPING_ROUNDS.parse_count(k, v)?;
            Ok(())
        },
        check: |p, _, k| EARLY_STOPPING_ROUNDS.count(k, p.boosting.early_stopping_rounds),
        show: |r| Some(r.params.boosting.early_stopping_rounds.to_string()),
        place: (0, 16),
    },
    KeySpec {
        name: "validation_fraction",
        applies: Applies::Boosting,
        set: |p, k, v| {
            p.boosting.validation_fraction = VALIDATION_FRACTION.parse_number(k, v)?;
            Ok(())
        },
        check: |p, _, k| VALIDATION_FRACTION.number(k, p.boosting.validation_fraction),
        show: |r| {
            let b = &r.params.boosting;
            (b.early_stopping_rounds > 0).then(|| b.validation_fraction.to_string())
        },
        place: (0, 19),
    },
];
