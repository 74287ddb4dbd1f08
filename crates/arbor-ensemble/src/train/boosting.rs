//! Gradient boosted trees (`docs/algorithms.md`, "Gradient boosting"): second-order boosting on the binned
//! matrix, with shrinkage, `gamma` and `lambda` regularization, row and
//! feature subsampling, and early stopping on a held-out share of the rows.

use std::borrow::Cow;

use arbor_kernels::{Criterion, HistogramTarget, Monotone, QuantizedStats, RowBins, RowStats, SplitConstraints};
use arbor_quantize::BinnedMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::data::binned_data::BinnedData;
use crate::data::label::Target;
use crate::model::node_cover::NodeCover;
use crate::model::tree::Tree;
use crate::model::{Boosting, EarlyStopping, Model, RoundLoss};
use crate::params::interactions::resolve as resolve_interactions;
use crate::train::continued::Continued;
use crate::train::forest::{tree_rng, MIN_TREE_BYTES};
use crate::train::grower::interactions::Interactions;
use crate::train::grower::{bin_ranges, grow_tree, GrowSettings, GrownTree, RowWise, TreeWeights, FORK_MIN_ROWS};
use crate::train::importance::gain_shares;
use crate::train::loss::{softmax, LossTarget, RowWeights};
use crate::train::quantized_gradients::{renew_leaves, tree_key, GradientQuantizer};
use crate::train::ranking::{Gain, Pairs, Queries};
use crate::train::walk_values::WalkValues;
use crate::{
    Algorithm, ArborError, BoostingParams, CheckedParams, ImportanceKind, Loss, Progress, Result, Voting,
    TRAIN_LOSS_EVERY,
};

/// The random stream that holds rows out for early stopping (tree streams use 0, 1, ...).
const VALIDATION_STREAM: usize = usize::MAX;

/// Trains gradient boosted trees; `on_progress` hears of every round. Data
/// handed over (`Cow::Owned`) is freed as training goes: the raw feature
/// columns once binned, and rows the trees did not grow on (held out, not
/// sampled) walk each tree on stand-in values of their bins instead. The
/// model bytes are the same either way. With `init`, the rounds are
/// appended to that model's ([`Continued`]).
pub(crate) fn train_boosting(
    data: Cow<'_, BinnedData>,
    params: &CheckedParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
    init: Option<&Model>,
) -> Result<Model> {
    match data {
        Cow::Borrowed(data) => boost(data, Cow::Borrowed(&data.matrix), params, on_progress, init),
        Cow::Owned(mut data) => {
            // The matrix is training's own: its columns can go into the row-major copy.
            let matrix = std::mem::replace(&mut data.matrix, BinnedMatrix::from_columns(Vec::new(), Vec::new(), 0));
            // Boosting reports nothing per input row, so it needs no way back to input order.
            data.input_row = Vec::new();
            boost(&data, Cow::Owned(matrix), params, on_progress, init)
        }
    }
}

fn boost(
    data: &BinnedData,
    mut matrix: Cow<'_, BinnedMatrix>,
    params: &CheckedParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
    init: Option<&Model>,
) -> Result<Model> {
    let task = data.task;
    let bp = &params.boosting;
    let n_classes = data.label.classes.as_ref().map_or(0, |c| c.len());
    let (continued, loss) = match init {
        Some(model) => {
            let (continued, loss) = Continued::check(model, data, params)?;
            (Some(continued), loss)
        }
        None => (None, bp.resolve_loss(task, n_classes)?),
    };
    let old_rounds = continued.as_ref().map_or(0, |c| c.rounds);
    let outputs = if loss == Loss::Softmax { n_classes } else { 1 };
    let n_features = matrix.n_features();
    let features_per_node = bp.features_per_node(n_features)?;
    crate::memory::reserve_check(
        bp.n_rounds.saturating_mul(outputs),
        std::mem::size_of::<Tree>() + MIN_TREE_BYTES + 8,
        &format!("boosting with n_rounds={}", bp.n_rounds),
    )?;
    let ranges = data.raw.as_deref().map(|raw| bin_ranges(raw, &matrix));
    let n = data.n_rows();
    let weight = RowWeights::of(data.weights.as_deref());
    let queries = ranking_queries(data, loss)?;
    let target = match (&data.target, &queries) {
        (Target::Classes(labels), _) => LossTarget::Classes(labels),
        (Target::Values(grades), Some(queries)) => LossTarget::Ranked { grades, queries },
        (Target::Values(y), None) => LossTarget::Values(y),
    };
    if let Target::Values(y) = &data.target {
        loss.check_labels(&data.label.name, y)?;
    }

    let (mut train_rows, valid_rows) =
        hold_out(n, queries.as_ref(), bp.early_stopping_rounds, bp.validation_fraction, bp.tree.seed)?;
    // A ranker's training queries, whole: its derivatives are taken over them each round.
    let train_queries = queries.as_ref().map(|q| q.queries_in(&train_rows)).unwrap_or_default();
    let n_sampled = ((bp.tree.sample_fraction * train_rows.len() as f64).round() as usize).clamp(1, train_rows.len());
    let subsample = n_sampled < train_rows.len();
    // Rows outside the trees (held out, not sampled) walk them: on their raw
    // values (exact splits), else on their bins' stand-ins.
    // Every node scans every feature unless features are subsampled: rows are
    // then read once per node, from a row-major copy of the bins, and the
    // trees read nothing else, so owned columns go into the copy.
    let row_bins = if features_per_node >= n_features {
        match &mut matrix {
            Cow::Owned(owned) => RowBins::take(owned),
            Cow::Borrowed(borrowed) => RowBins::new(borrowed),
        }
    } else {
        None
    };
    // Without subsampling or a hold-out the training rows are `0..n`: they
    // are written out when read instead of held, so while a tree grows its
    // own copy of them is the only one in memory (1 MB on flights).
    let every_row = !subsample && valid_rows.is_empty();
    if every_row {
        train_rows = Vec::new(); // frees them: a shadowing binding would keep them alive
    }
    let training_rows = || -> Cow<'_, [u32]> {
        if every_row {
            Cow::Owned((0..n as u32).collect())
        } else {
            Cow::Borrowed(&train_rows)
        }
    };
    let walk = WalkValues::new(data.raw.as_deref(), &matrix, row_bins.as_ref());
    let row_value = |f: usize, r: usize| walk.value(f, r);
    let mut curve = Vec::new();
    // A continued model's trees come first; its covers too, if it has them
    // (models before format 4 do not: then neither does the continuation).
    let mut trees: Vec<Tree> = continued.as_ref().map(Continued::trees).unwrap_or_default();
    let mut covers: Option<Vec<Vec<f32>>> = match &continued {
        Some(c) => c.covers(),
        None => Some(Vec::new()),
    };
    let (base_score, mut raw) = match &continued {
        // The model's rounds replayed: with a validation set, each one's
        // losses begin the curve.
        Some(continued) => {
            let raw = continued.start_scores(&trees, &walk, n, |raw| {
                if !valid_rows.is_empty() {
                    let training = loss.value(&target, &training_rows(), weight, raw, outputs);
                    let validation = loss.value(&target, &valid_rows, weight, raw, outputs);
                    curve.push(RoundLoss { training, validation });
                }
            });
            (continued.boosting.base_score.clone(), raw)
        }
        None => {
            let base_score = loss.base_score(&target, &training_rows(), weight, outputs);
            let raw: Vec<f64> = base_score.iter().copied().cycle().take(n * outputs).collect();
            (base_score, raw)
        }
    };
    let mut proba = if loss == Loss::Softmax { vec![0.0; n * outputs] } else { Vec::new() };
    // Histograms built row-wise read each row's derivatives packed with its
    // count (`row_stats`: 1 for the rows of the tree, 0 for the others), and
    // only there; column-wise ones read them apart, with the counts.
    let column_wise = row_bins.is_none();
    // A softmax round's trees grow side by side, as many at once as there
    // are threads, each on its own derivative buffers (small data: one tree
    // alone keeps one core busy).
    let slots = if outputs > 1 { rayon::current_num_threads().clamp(1, outputs) } else { 1 };
    let mut buffers: Vec<DerivativeBuffers> = (0..slots).map(|_| DerivativeBuffers::new(column_wise, n)).collect();
    let mut counts = if column_wise { vec![0.0; n] } else { Vec::new() };
    // Without subsampling every round grows on every training row: their counts stay 1.
    if !subsample && column_wise {
        training_rows().iter().for_each(|&r| counts[r as usize] = 1.0);
    }
    let monotone = crate::params::monotone::for_training(&bp.tree.monotone, &data.features, n_classes, Some(loss))?;
    let interactions = Interactions::new(&resolve_interactions(&bp.tree.interaction_constraints, &data.features)?);
    let settings = GrowSettings { monotone, interactions, ..grow_settings(bp, features_per_node) };
    let quantizer = bp.use_quantized_grad.then(|| GradientQuantizer::new(bp.num_grad_quant_bins));
    // A node's integer sums stay within 32 bits when every row's bound times the rows does.
    let integer_sums = quantizer.is_some_and(|q| q.row_bound().saturating_mul(n as u64) < 1 << 31);
    // Leaves re-fitted to quantiles of residuals need no renewal.
    let renew = quantizer.is_some() && bp.quant_train_renew_leaf && !loss.refits_leaves();

    let mut gain_per_feature = vec![0.0; n_features];
    // The best round is among this training's: a continued model's rounds are all kept.
    let mut best: Option<(usize, f64)> = None;
    let mut rounds_run = old_rounds;
    for round in old_rounds..old_rounds + bp.n_rounds {
        let mut rng = tree_rng(bp.tree.seed, round);
        let sampled = subsample.then(|| sample_rows(&train_rows, n_sampled, &mut rng));
        if let (Some(sampled), true) = (&sampled, column_wise) {
            counts.iter_mut().for_each(|c| *c = 0.0);
            sampled.iter().for_each(|&r| counts[r as usize] = 1.0);
        }
        let round_rows = || match &sampled {
            Some(sampled) => Cow::Borrowed(sampled.as_slice()),
            None => training_rows(),
        };
        // A ranker's derivatives are taken query by query, over every
        // training row (a sample then grows on its rows' share, as LightGBM's bagging).
        let lambdas = match (&target, &queries, loss) {
            (
                LossTarget::Ranked { grades, .. },
                Some(queries),
                Loss::Lambdarank { truncation, sigmoid, exp_gain, .. },
            ) => {
                let pairs = Pairs { truncation: truncation as usize, sigmoid, gain: Gain::exponential(exp_gain) };
                Some(queries.lambdas(grades, &raw, &train_queries, pairs))
            }
            _ => None,
        };
        let round_target = lambdas.as_deref().map_or(target, LossTarget::Lambdas);
        if loss == Loss::Softmax {
            proba.par_chunks_mut(outputs).zip(raw.par_chunks(outputs)).for_each(|(p, r)| softmax(r, p));
        }
        // One output grows on the round's stream; several each on a stream
        // seeded from it, so trees do not depend on which grows first.
        let mut output_rngs: Vec<ChaCha8Rng> = match outputs {
            1 => vec![rng],
            _ => (0..outputs).map(|_| ChaCha8Rng::seed_from_u64(rng.random())).collect(),
        };
        let grow = |output: usize, rng: &mut ChaCha8Rng, buffers: &mut DerivativeBuffers| {
            let rows = round_rows();
            let derivatives = loss.derivatives(&round_target, &rows, weight, &raw, &proba, output, outputs);
            // Row-wise, the packed target carries the counts and the grower
            // reads no weights or counts apart: `counts` is empty then.
            // Quantized gradients are rounded in place: every kernel sums the
            // rounded values, the row-wise one as integers when they fit 32 bits.
            let key = tree_key(bp.tree.seed, round, output);
            let (kernel_target, rowwise) = match (&row_bins, buffers) {
                (Some(bins), DerivativeBuffers::Packed { stats, ints }) => {
                    let largest = derivatives.write_packed(stats);
                    let quantized = quantizer.map(|q| {
                        let scales = q.quantize_packed(key, largest, stats, ints);
                        let ints: &[QuantizedStats] = ints;
                        (ints, scales)
                    });
                    let quantized = quantized.filter(|_| integer_sums);
                    let stats: &[RowStats] = stats;
                    (HistogramTarget::Packed { stats }, Some(RowWise { bins, stats, quantized }))
                }
                (_, DerivativeBuffers::Apart { grad, hess }) => {
                    derivatives.write(grad, hess);
                    if let Some(q) = quantizer {
                        q.quantize_apart(key, grad, hess);
                    }
                    let (grad, hess): (&[f64], &[f64]) = (grad, hess);
                    (HistogramTarget::Gradients { grad, hess }, None)
                }
                (None, DerivativeBuffers::Packed { .. }) => unreachable!("packed buffers are for row-wise bins"),
            };
            let weights = TreeWeights { counts: Cow::Borrowed(&counts), weights: None };
            let mut grown = grow_tree(
                &matrix,
                rowwise,
                &kernel_target,
                rows.into_owned(),
                weights,
                &settings,
                ranges.as_ref(),
                rng,
            );
            if renew {
                // Its rows are the grown tree's now: the derivatives are taken row by row.
                let derivatives = loss.derivatives(&round_target, &[], weight, &raw, &proba, output, outputs);
                renew_leaves(&mut grown, &derivatives, bp.lambda, bp.learning_rate);
            }
            grown
        };
        let mut round_trees: Vec<GrownTree> = Vec::with_capacity(outputs);
        for (first, rngs) in (0..outputs).step_by(slots).zip(output_rngs.chunks_mut(slots)) {
            if rngs.len() == 1 {
                round_trees.push(grow(first, &mut rngs[0], &mut buffers[0]));
            } else {
                let grown: Vec<GrownTree> = rngs
                    .par_iter_mut()
                    .zip(buffers.par_iter_mut())
                    .enumerate()
                    .map(|(i, (rng, buffers))| grow(first + i, rng, buffers))
                    .collect();
                round_trees.extend(grown);
            }
        }
        if let (true, LossTarget::Values(y)) = (loss.refits_leaves(), &target) {
            for grown in &mut round_trees {
                refit_leaves(grown, loss, y, &raw, weight, bp.learning_rate);
            }
        }
        for grown in &round_trees {
            for (g, acc) in grown.gain_per_feature.iter().zip(gain_per_feature.iter_mut()) {
                *acc += g;
            }
        }
        // Scores move only after every output's gradients are taken at the round's start.
        let rows = round_rows();
        for (output, grown) in round_trees.into_iter().enumerate() {
            add_tree_outputs(&mut raw, outputs, output, &grown, &rows, &row_value);
            trees.push(grown.tree);
            if let Some(covers) = &mut covers {
                covers.push(grown.cover);
            }
        }
        rounds_run = round + 1;
        let done = rounds_run - old_rounds;

        let valid_loss = (!valid_rows.is_empty()).then(|| loss.value(&target, &valid_rows, weight, &raw, outputs));
        let mut stop = false;
        if let Some(v) = valid_loss {
            match best {
                Some((_, b)) if v >= b => {}
                _ => best = Some((round, v)),
            }
            let (best_round, _) = best.expect("set above");
            stop = round - best_round >= bp.early_stopping_rounds;
        }
        // With a validation set the training loss is taken every round, for
        // the curve the model keeps; else now and then, for progress alone.
        let report_train = valid_loss.is_some() || stop || done % TRAIN_LOSS_EVERY == 0 || done == bp.n_rounds;
        let train_loss = report_train.then(|| loss.value(&target, &training_rows(), weight, &raw, outputs));
        if let (Some(training), Some(validation)) = (train_loss, valid_loss) {
            curve.push(RoundLoss { training, validation });
        }
        on_progress(&Progress { done, total: bp.n_rounds, train_loss, valid_loss });
        if stop {
            break;
        }
    }

    let early_stopping = best.map(|(best_round, best_loss)| {
        trees.truncate((best_round + 1) * outputs);
        if let Some(covers) = &mut covers {
            covers.truncate((best_round + 1) * outputs);
        }
        EarlyStopping { rounds_run, best_round: best_round + 1, best_loss, validation_rows: valid_rows.len(), curve }
    });
    let new_rounds = trees.len() / outputs - old_rounds;
    let importance = (params.importance != ImportanceKind::None).then(|| {
        let shares = gain_shares(gain_per_feature);
        match continued.as_ref().and_then(|c| c.importance_weight(new_rounds)) {
            // A continued model's shares and the new rounds', weighed by their rounds.
            Some((old, w)) => old.iter().zip(&shares).map(|(o, s)| w * o + (1.0 - w) * s).collect(),
            None => shares,
        }
    });
    Ok(Model {
        task,
        algorithm: Algorithm::GradientBoosting,
        label: data.label.clone(),
        features: data.features.clone(),
        trees: trees.into(),
        voting: Voting::Weighted,
        importance,
        oob_error: None,
        params: recorded_params(params, task, n_features, loss, old_rounds),
        training_rows: n as u64,
        skipped_null_labels: data.skipped_null_labels as u64,
        boosting: Some(Boosting { loss, base_score, outputs, early_stopping }),
        cover: covers.map(NodeCover::new),
    })
}

/// The queries of a ranking loss, from the data's group column: an error
/// naming what is missing when the loss ranks and no group column was
/// given, or a group column was given to a loss that does not rank.
fn ranking_queries(data: &BinnedData, loss: Loss) -> Result<Option<Queries>> {
    match (loss.is_ranking(), &data.groups) {
        (true, Some(groups)) => Ok(Some(Queries::new(groups))),
        (true, None) => Err(ArborError::InvalidOption {
            key: "loss".into(),
            message: format!(
                "{} ranks the rows of each query: name the query column (arbor train --group COL, \
                 SQL option group=ARG, Python fit(X, y, group=ids))",
                loss.name()
            ),
        }),
        (false, Some(_)) => Err(ArborError::InvalidOption {
            key: "group".into(),
            message: format!("a query column is read by loss=lambdarank only; the loss is {}", loss.name()),
        }),
        (false, None) => Ok(None),
    }
}

/// The parameters the model records: the options, and for continued
/// training the rounds of the model continued (`init_model_rounds`), which
/// come before this training's `n_rounds`.
fn recorded_params(
    params: &CheckedParams,
    task: crate::Task,
    n_features: usize,
    loss: Loss,
    old_rounds: usize,
) -> Vec<(String, String)> {
    let mut recorded = params.describe(task, n_features, Some(loss));
    if old_rounds > 0 {
        recorded.push(("init_model_rounds".into(), old_rounds.to_string()));
    }
    recorded
}

/// The grower's settings for boosting's trees: Newton gains with `lambda`,
/// leaves shrunk by the learning rate, a split only where it reduces the loss.
pub(crate) fn grow_settings(bp: &BoostingParams, features_per_node: usize) -> GrowSettings {
    GrowSettings {
        criterion: Criterion::Newton { lambda: bp.lambda },
        constraints: SplitConstraints {
            min_samples_leaf: bp.min_samples_leaf() as f64,
            min_weight_leaf: 0.0,
            min_samples_category: bp.tree.min_samples_category as f64,
            category_charge: 0.0,
            monotone: Monotone::NONE,
        },
        category_penalty: bp.tree.category_penalty,
        max_depth: bp.tree.max_depth,
        min_samples_split: 2.0,
        features_per_node,
        impurity_threshold: 0.0,
        // Gains are G²/(H+λ) sums (`docs/algorithms.md`, "Gradient boosting"), held
        // against γ itself as oneDAL's specification, XGBoost and LightGBM do;
        // a split must reduce the loss.
        min_gain: bp.min_split_loss + f64::MIN_POSITIVE,
        leaf_scale: bp.learning_rate,
        random_splitter: false,
        max_leaf_nodes: 0,
        fork_min_rows: FORK_MIN_ROWS,
        row_records: true,
        absolute_error: false,
        monotone: Vec::new(),
        interactions: Interactions::default(),
    }
}

/// Where one tree's derivatives are written before it grows: packed with
/// the counts for the row-wise kernel, or as gradient and hessian arrays by
/// row id for the column-wise one. Reused from round to round.
enum DerivativeBuffers {
    /// With quantized gradients, `ints` holds them as integers too.
    Packed {
        stats: Vec<RowStats>,
        ints: Vec<QuantizedStats>,
    },
    Apart {
        grad: Vec<f64>,
        hess: Vec<f64>,
    },
}

impl DerivativeBuffers {
    /// Buffers for `n` rows: arrays allocated now when `column_wise`; packed
    /// statistics sized on first use.
    fn new(column_wise: bool, n: usize) -> DerivativeBuffers {
        if column_wise {
            DerivativeBuffers::Apart { grad: vec![0.0; n], hess: vec![0.0; n] }
        } else {
            DerivativeBuffers::Packed { stats: Vec::new(), ints: Vec::new() }
        }
    }
}

/// Sets each leaf of a tree grown under a re-fitted loss
/// ([`Loss::refits_leaves`]) to the quantile of its rows' residuals under
/// the scores before the tree (`raw`, one per row), shrunk by the learning rate.
fn refit_leaves(grown: &mut GrownTree, loss: Loss, y: &[f64], raw: &[f64], weight: RowWeights<'_>, shrink: f64) {
    for (offset, range) in &grown.leaves {
        grown.tree.values[*offset] = shrink * loss.refit_leaf(y, raw, &grown.rows[range.clone()], weight);
    }
}

/// Rows whose scores one task updates in [`add_tree_outputs`].
const SCORE_CHUNK: usize = 16384;

/// Adds a grown tree's output to every row's raw score (column `output` of
/// `outputs`): the rows it grew on (`grown_on`, ascending) from their leaves,
/// the others (not sampled, held out) by walking the tree. Chunks of row ids
/// are updated in parallel, each by one task; every score gets exactly one
/// add, so the result does not depend on the threads.
fn add_tree_outputs(
    raw: &mut [f64],
    outputs: usize,
    output: usize,
    grown: &GrownTree,
    grown_on: &[u32],
    row_value: &(impl Fn(usize, usize) -> f64 + Sync),
) {
    raw.par_chunks_mut(SCORE_CHUNK * outputs).enumerate().for_each(|(k, chunk)| {
        let first = k * SCORE_CHUNK;
        let end = first + chunk.len() / outputs;
        // Each leaf's rows ascend (the sample is sorted, partitions are stable).
        for (offset, range) in &grown.leaves {
            let value = grown.tree.values[*offset];
            let rows = &grown.rows[range.clone()];
            let lo = rows.partition_point(|&r| (r as usize) < first);
            let hi = lo + rows[lo..].partition_point(|&r| (r as usize) < end);
            for &r in &rows[lo..hi] {
                chunk[(r as usize - first) * outputs + output] += value;
            }
        }
        // The chunk's rows the tree did not grow on: those between its grown rows.
        let lo = grown_on.partition_point(|&r| (r as usize) < first);
        let hi = lo + grown_on[lo..].partition_point(|&r| (r as usize) < end);
        let mut grown_rows = grown_on[lo..hi].iter().map(|&r| r as usize).peekable();
        for r in first..end {
            if grown_rows.next_if_eq(&r).is_some() {
                continue;
            }
            let value = grown.tree.values[grown.tree.leaf(|f| row_value(f, r))];
            chunk[(r - first) * outputs + output] += value;
        }
    });
}

/// Splits rows `0..n` into training and validation rows (sorted), holding out
/// `fraction` of them when early stopping is on: of the rows, or of a
/// ranker's `queries`, whole, so that no query is ranked on both sides.
fn hold_out(
    n: usize,
    queries: Option<&Queries>,
    early_stopping_rounds: usize,
    fraction: f64,
    seed: u64,
) -> Result<(Vec<u32>, Vec<u32>)> {
    if early_stopping_rounds == 0 {
        return Ok(((0..n as u32).collect(), Vec::new()));
    }
    let (units, what) = queries.map_or((n, "rows"), |q| (q.len(), "queries"));
    let n_valid = (fraction * units as f64).round() as usize;
    if n_valid == 0 || n_valid >= units {
        return Err(ArborError::InvalidOption {
            key: "validation_fraction".into(),
            message: format!("{fraction} of {units} {what} leaves no {what} to validate on or none to train on"),
        });
    }
    let mut rng = tree_rng(seed, VALIDATION_STREAM);
    let mut held = vec![false; units];
    sample_rows(&(0..units as u32).collect::<Vec<_>>(), n_valid, &mut rng)
        .iter()
        .for_each(|&u| held[u as usize] = true);
    let unit_of = |r: u32| queries.map_or(r as usize, |q| q.query_of(r as usize));
    let (valid, train): (Vec<u32>, Vec<u32>) = (0..n as u32).partition(|&r| held[unit_of(r)]);
    Ok((train, valid))
}

/// `k` of `rows` drawn without replacement, in ascending order (for memory locality).
fn sample_rows(rows: &[u32], k: usize, rng: &mut impl Rng) -> Vec<u32> {
    if k >= rows.len() {
        return rows.to_vec();
    }
    let mut pool = rows.to_vec();
    for i in 0..k {
        let j = rng.random_range(i..pool.len());
        pool.swap(i, j);
    }
    pool.truncate(k);
    pool.sort_unstable();
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ranker's queries are held out whole, the split is the same each
    /// time, and a share of too few queries is refused by count.
    #[test]
    fn hold_out_keeps_queries_whole() {
        let groups: Vec<i64> = (0..200).map(|r| (r * 37 % 20) as i64).collect();
        let q = Queries::new(&groups);
        let (train, valid) = hold_out(200, Some(&q), 5, 0.2, 7).unwrap();
        assert_eq!(train.len() + valid.len(), 200);
        let valid_queries = q.queries_in(&valid);
        assert_eq!(valid_queries.len(), 4);
        assert!(train.iter().all(|&r| !valid_queries.contains(&q.query_of(r as usize))));
        assert_eq!(hold_out(200, Some(&q), 5, 0.2, 7).unwrap(), (train, valid));
        let err = hold_out(200, Some(&q), 5, 0.01, 7).unwrap_err().to_string();
        assert!(err.contains("validation_fraction") && err.contains("of 20 queries leaves no queries"), "{err}");
        let (rows_train, rows_valid) = hold_out(200, None, 5, 0.2, 7).unwrap();
        assert_eq!((rows_train.len(), rows_valid.len()), (160, 40));
    }
}
