//! Random forest training (`docs/algorithms.md`, "Random forest"): bootstrap sets, trees grown in parallel
//! with per-tree random streams, out-of-bag error and variable importance.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use arbor_kernels::{Criterion, HistogramTarget, Monotone, RowBins, SplitConstraints};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::data::binned_data::BinnedData;
use crate::data::label::Target;
use crate::format::encode::encode_tree;
use crate::format::encoded::EncodedTrees;
use crate::format::tree_sections::{Sections, Spill};
use crate::model::node_cover::NodeCover;
use crate::model::trees::Trees;
use crate::model::Model;
use crate::params::interactions::resolve as resolve_interactions;
use crate::train::grower::interactions::Interactions;
use crate::train::grower::{bin_ranges, fill_row_stats, grow_tree, GrowSettings, RowWise, TreeWeights, FORK_MIN_ROWS};
use crate::train::importance;
use crate::train::loss::check_positive_labels;
use crate::train::out_of_bag::{self, OobFold, OutOfBag};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::train::walk_values::WalkValues;
use crate::{Algorithm, CheckedParams, CriterionKind, ImportanceKind, Progress, Result, Task};

/// The random stream of tree `index`: independent of the thread that grows it
/// and of how many trees are grown, so a seed always gives the same forest.
pub(crate) fn tree_rng(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64);
    rng
}

/// Trains a random forest; with `spill_dir`, finished trees wait in an
/// unnamed temporary file there instead of in memory. Returns, besides the
/// model, its out-of-bag results when `oob`, `oob_per_observation` or an MDA
/// importance asked for them. Data handed over (`Cow::Owned`) is freed as
/// training goes: unless out-of-bag results or an MDA importance walk the raw
/// values, the raw feature columns go once binned. The same model either way.
pub(crate) fn train_forest(
    data: Cow<'_, BinnedData>,
    params: &CheckedParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
    spill_dir: Option<&Path>,
) -> Result<(Model, Option<OutOfBag>)> {
    let data = &*data;
    let task = data.task;
    let fp = &params.forest;
    let matrix = &data.matrix;
    let n_features = matrix.n_features();
    let m = fp.features_per_node(n_features, task)?;
    let n_classes = data.label.classes.as_ref().map_or(0, |c| c.len());
    let monotone = crate::params::monotone::for_training(&fp.tree.monotone, &data.features, n_classes, None)?;
    let interactions = Interactions::new(&resolve_interactions(&fp.tree.interaction_constraints, &data.features)?);
    if let (Criterion::Poisson, Target::Values(y)) = (forest_criterion(params, task), &data.target) {
        check_positive_labels(&data.label.name, y, "criterion=poisson", false)?;
    }
    let ranges = data.raw.as_deref().map(|raw| bin_ranges(raw, matrix));
    // Regression trees that scan every feature read rows once per node through a row-major copy.
    // (Absolute error reads the columns: it sorts each node's rows by bin.)
    let absolute_error = fp.criterion == CriterionKind::AbsoluteError;
    let row_bins = (m >= n_features && !fp.random_splitter && task == Task::Regression && !absolute_error)
        .then(|| RowBins::new(matrix))
        .flatten();

    let target = match &data.target {
        Target::Classes(labels) => {
            let n = data.label.classes.as_ref().map_or(0, |c| c.len());
            HistogramTarget::Classes { labels, n_classes: n }
        }
        Target::Values(y) => HistogramTarget::Values { y },
    };
    let n = data.n_rows();
    let sample_weight = |r: usize| data.weights.as_ref().map_or(1.0, |w| w[r]);
    let n_draws = ((fp.tree.sample_fraction * n as f64).round() as usize).clamp(1, n);
    let done = AtomicUsize::new(0);
    let mda = matches!(params.importance, ImportanceKind::MdaRaw | ImportanceKind::MdaScaled);
    let report_oob = fp.oob || fp.oob_per_observation;
    let want_oob = report_oob || mda;
    let width = match &data.target {
        Target::Classes(_) => data.label.classes.as_ref().map_or(0, |c| c.len()),
        Target::Values(_) => 1,
    };
    let walk = want_oob.then(|| WalkValues::new(data.raw.as_deref(), matrix, None));
    let spill = spill_dir.map(Spill::create).transpose()?;
    let row_records = records_fit(data, n_draws, fp.bootstrap, fp.n_trees);

    // Per tree, where its section is kept and its gain per feature; the
    // out-of-bag answers are folded as the trees finish.
    // A forest holds at least each tree's bookkeeping and smallest section.
    let per_tree = std::mem::size_of::<Option<Finished>>() + MIN_TREE_BYTES + n_features * 8;
    crate::memory::reserve_check(fp.n_trees, per_tree, &format!("a forest of n_trees={}", fp.n_trees))?;
    let finished: Mutex<Vec<Option<Finished>>> = Mutex::new((0..fp.n_trees).map(|_| None).collect());
    let oob_fold = want_oob.then(|| Mutex::new(OobFold::new(n, width, fp.voting, report_oob)));
    each_tree_in_order(fp.n_trees, |t| {
        let mut rng = tree_rng(fp.tree.seed, t);
        let mut counts = vec![0.0; n];
        if fp.bootstrap {
            for _ in 0..n_draws {
                counts[rng.random_range(0..n)] += 1.0;
            }
        } else if n_draws == n {
            counts.fill(1.0);
        } else {
            let mut order: Vec<u32> = (0..n as u32).collect();
            for i in 0..n_draws {
                let j = rng.random_range(i..n);
                order.swap(i, j);
                counts[order[i] as usize] = 1.0;
            }
        }
        // Without sample weights a row's weight is its count: no second array.
        let sample_weights: Option<Vec<f64>> =
            data.weights.as_ref().map(|_| counts.iter().enumerate().map(|(r, &c)| c * sample_weight(r)).collect());
        let weights = sample_weights.as_deref().unwrap_or(&counts);
        // Allocated at its size: a bootstrap keeps about 63% of the rows.
        let mut rows = Vec::with_capacity(counts.iter().filter(|&&c| c > 0.0).count());
        rows.extend((0..n as u32).filter(|&r| counts[r as usize] > 0.0));
        let root_weight: f64 = weights.iter().sum();
        let (monotone, interactions) = (monotone.clone(), interactions.clone());
        let settings =
            GrowSettings { row_records, monotone, interactions, ..forest_settings(params, task, m, root_weight) };
        let mut row_stats = Vec::new();
        let rowwise = row_bins.as_ref().map(|bins| {
            fill_row_stats(&target, weights, &counts, &mut row_stats);
            RowWise { bins, stats: &row_stats, quantized: None }
        });
        let sample_weights = sample_weights.map(Cow::Owned);
        let grow = |counts| {
            let weights = TreeWeights { counts, weights: sample_weights };
            grow_tree(matrix, rowwise, &target, rows, weights, &settings, ranges.as_ref(), &mut rng)
        };
        // The out-of-bag walks read the counts after growth; otherwise the
        // tree owns them, and frees them once it no longer reads them.
        let (mut grown, oob) = if let Some(walk) = &walk {
            let grown = grow(Cow::Borrowed(&counts));
            let oob =
                out_of_bag::evaluate_tree(&grown.tree, &data.target, walk, &counts, width, (report_oob, mda), &mut rng);
            (grown, Some(oob))
        } else {
            (grow(Cow::Owned(counts)), None)
        };
        // MDI weighs each decrease by p(t) = |D_t| / |D| (`docs/algorithms.md`,
        // "Variable importance"): gains are W_t·Δi.
        if root_weight > 0.0 {
            grown.gain_per_feature.iter_mut().for_each(|g| *g /= root_weight);
        }
        // The tree is kept encoded, a tenth of its nodes' memory, or in the spill file.
        let section = encode_tree(&grown.tree, width);
        let kept = match &spill {
            Some(spill) => Kept::Spilled(spill.put(&section)?),
            None => Kept::Held(section),
        };
        if let (Some(fold), Some(oob)) = (&oob_fold, oob) {
            lock(fold).add(t, oob, &data.target);
        }
        lock(&finished)[t] = Some(Finished { kept, gains: grown.gain_per_feature, cover: grown.cover });
        let done = done.fetch_add(1, Ordering::Relaxed) + 1;
        on_progress(&Progress { done, total: fp.n_trees, train_loss: None, valid_loss: None });
        Ok(())
    })?;
    let mut held = Vec::new();
    let mut spans = Vec::new();
    let mut gains = Vec::with_capacity(fp.n_trees);
    let mut covers = Vec::with_capacity(fp.n_trees);
    for tree in finished.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
        let Finished { kept, gains: tree_gains, cover } = tree.expect("every tree index was grown");
        covers.push(cover);
        match kept {
            Kept::Held(section) => held.push(section),
            Kept::Spilled(span) => spans.push(span),
        }
        gains.push(tree_gains);
    }
    let oob_fold = oob_fold.map(|fold| fold.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()));
    let sections = match spill {
        Some(spill) => spill.into_sections(spans)?,
        None => Sections::Owned(held),
    };

    let mdi =
        (params.importance == ImportanceKind::Mdi).then(|| importance::mean_decrease_impurity(&gains, n_features));
    let oob = oob_fold.as_ref().filter(|_| report_oob).map(|fold| fold.error(data, fp.oob_per_observation));
    let importance = match (params.importance, &oob_fold) {
        (ImportanceKind::MdaRaw, Some(fold)) => Some(fold.mean_decrease_accuracy(n_features, false)),
        (ImportanceKind::MdaScaled, Some(fold)) => Some(fold.mean_decrease_accuracy(n_features, true)),
        _ => mdi,
    };

    let features = data.features.clone();
    let trees = Trees::from_encoded(EncodedTrees::new(sections, features.clone(), width));
    let model = Model {
        task,
        algorithm: Algorithm::RandomForest,
        label: data.label.clone(),
        features,
        trees,
        voting: fp.voting,
        importance,
        oob_error: oob.as_ref().map(|o| o.error),
        params: params.describe(task, n_features, None),
        training_rows: n as u64,
        skipped_null_labels: data.skipped_null_labels as u64,
        boosting: None,
        cover: Some(NodeCover::new(covers)),
    };
    Ok((model, oob))
}

/// Whether the class-keyed row records of the trees grown at once fit the memory limit
/// beside the binned data and each tree's counts: a tree copies the bins of
/// its distinct rows (about 63% of them under the bootstrap) into records,
/// twice as fast to grow on as reading the columns by row id, and the same
/// tree either way. Under a tight limit (a memory cgroup, `--memory-limit`)
/// classification trees read by row id instead (regression keeps them).
fn records_fit(data: &BinnedData, n_draws: usize, bootstrap: bool, n_trees: usize) -> bool {
    let n = data.n_rows() as f64;
    let distinct = if bootstrap { n * (1.0 - (-(n_draws as f64) / n.max(1.0)).exp()) } else { n_draws as f64 };
    let in_flight = rayon::current_num_threads().clamp(1, n_trees.max(1)) as f64;
    let record = (data.features.len() + 8) as f64;
    let per_tree = distinct * record + n * 8.0 + distinct * 4.0;
    let needed = data.size_bytes() as f64 + in_flight * per_tree;
    needed <= crate::memory::memory_limit().0 as f64
}

/// The fewest bytes a finished tree's encoded section takes (a single leaf).
pub(crate) const MIN_TREE_BYTES: usize = 32;

/// The impurity criterion a forest's trees split by.
pub(crate) fn forest_criterion(params: &CheckedParams, task: Task) -> Criterion {
    match (params.forest.criterion, task) {
        (CriterionKind::Entropy, _) => Criterion::Entropy,
        (CriterionKind::Poisson, _) => Criterion::Poisson,
        (_, Task::Classification) => Criterion::Gini,
        (_, Task::Regression) => Criterion::Mse,
    }
}

/// How a forest's tree of `root_weight` (its bootstrap rows' total weight)
/// grows, trying `m` features per node.
pub(crate) fn forest_settings(params: &CheckedParams, task: Task, m: usize, root_weight: f64) -> GrowSettings {
    let fp = &params.forest;
    GrowSettings {
        criterion: forest_criterion(params, task),
        constraints: SplitConstraints {
            min_samples_leaf: fp.tree.min_samples_leaf(task) as f64,
            min_weight_leaf: fp.min_weight_fraction_leaf * root_weight,
            min_samples_category: fp.tree.min_samples_category as f64,
            category_charge: 0.0,
            monotone: Monotone::NONE,
        },
        category_penalty: fp.tree.category_penalty,
        max_depth: fp.tree.max_depth,
        min_samples_split: fp.min_samples_split as f64,
        features_per_node: m,
        impurity_threshold: fp.impurity_threshold,
        min_gain: fp.min_impurity_decrease * root_weight,
        leaf_scale: 1.0,
        random_splitter: fp.random_splitter,
        max_leaf_nodes: fp.max_leaf_nodes,
        fork_min_rows: FORK_MIN_ROWS,
        row_records: true,
        absolute_error: fp.criterion == CriterionKind::AbsoluteError && task == Task::Regression,
        monotone: Vec::new(),
        interactions: Interactions::default(),
    }
}

/// Runs `grow(t)` for every tree index on the thread pool, handing the
/// indices out in order: trees finish about in order, so the few that
/// finish ahead of a slower one are all the out-of-bag fold holds. Stops
/// handing out trees at the first error, which it returns.
fn each_tree_in_order(n_trees: usize, grow: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let workers = rayon::current_num_threads().clamp(1, n_trees.max(1));
    (0..workers).into_par_iter().try_for_each(|_| loop {
        let t = next.fetch_add(1, Ordering::Relaxed);
        if t >= n_trees || failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Err(e) = grow(t) {
            failed.store(true, Ordering::Relaxed);
            return Err(e);
        }
    })
}

/// The value behind `mutex`, also after a panic elsewhere (which ends
/// training anyway: nothing half-done in it is read).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the forest keeps of a grown tree.
struct Finished {
    /// Its encoded section.
    kept: Kept,
    /// Its split gains per feature, for MDI.
    gains: Vec<f64>,
    /// Its node covers.
    cover: Vec<f32>,
}

/// Where a finished tree's section is kept.
enum Kept {
    /// In memory.
    Held(Vec<u8>),
    /// At this byte range of the spill file.
    Spilled(Range<usize>),
}
