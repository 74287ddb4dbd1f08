//! Boosting losses (`docs/algorithms.md`, "Gradient boosting"): gradients and hessians per row, the base
//! score, the link from raw scores to predictions, and the loss value that
//! progress and early stopping report.

use rayon::prelude::*;

use arbor_kernels::RowStats;

use crate::train::ranking::{check_grades, Gain, Queries};
use crate::{ArborError, Loss, Result};

/// Rows per parallel work unit of the per-row passes.
const PARALLEL_CHUNK: usize = 16384;

/// Smallest hessian used, so a leaf weight `-G / (H + lambda)` stays finite with `lambda = 0`.
const MIN_HESSIAN: f64 = 1e-16;
/// Probabilities are clamped this far from 0 and 1 in log losses and log-odds.
const EPS: f64 = 1e-15;
/// LightGBM's and XGBoost's `max_delta_step` for the Poisson loss: the
/// hessian is taken at `raw + 0.7`, which halves each Newton step on counts
/// and keeps the first rounds from running off where a leaf's counts are 0.
pub(crate) const POISSON_MAX_DELTA_STEP: f64 = 0.7;

/// The training target as the losses read it.
#[derive(Clone, Copy)]
pub(crate) enum LossTarget<'a> {
    /// Regression responses.
    Values(&'a [f64]),
    /// Class index per row.
    Classes(&'a [u32]),
    /// Relevance grades, ranked within queries (`loss=lambdarank`): what
    /// the base score and the loss value read.
    Ranked { grades: &'a [f64], queries: &'a Queries },
    /// A ranking round's derivatives per row, taken query by query
    /// ([`Queries::lambdas`]): what the round's trees grow on.
    Lambdas(&'a [[f64; 2]]),
}

/// The rows' sample weights as the losses read them: given per row, or all
/// one, which needs no vector (a weight of one multiplies exactly, so both
/// give the same bits).
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowWeights<'a> {
    /// Every row weighs one.
    Ones,
    /// Row `r` weighs `w[r]`.
    Given(&'a [f64]),
}

impl<'a> RowWeights<'a> {
    /// The weights of `data`, if it has any.
    pub(crate) fn of(weights: Option<&'a [f64]>) -> RowWeights<'a> {
        weights.map_or(RowWeights::Ones, RowWeights::Given)
    }

    /// Row `r`'s weight.
    #[inline(always)]
    pub(crate) fn get(self, r: usize) -> f64 {
        match self {
            RowWeights::Ones => 1.0,
            RowWeights::Given(w) => w[r],
        }
    }

    /// The weights of rows `span` as a slice.
    fn slice(self, span: std::ops::Range<usize>) -> &'a [f64] {
        match self {
            RowWeights::Ones => &ONES[..span.len()],
            RowWeights::Given(w) => &w[span],
        }
    }
}

/// Weights of one for a chunk of rows that reads its weights as a slice.
static ONES: [f64; PARALLEL_CHUNK] = [1.0; PARALLEL_CHUNK];

/// One output's derivatives over a round's rows ([`Loss::derivatives`]),
/// written as separate arrays ([`Derivatives::write`]) or packed for the
/// row-wise kernel ([`Derivatives::write_packed`]).
pub(crate) struct Derivatives<'a> {
    loss: Loss,
    target: &'a LossTarget<'a>,
    /// The rows to take them for, ascending.
    rows: &'a [u32],
    weight: RowWeights<'a>,
    raw: &'a [f64],
    proba: &'a [f64],
    output: usize,
    outputs: usize,
}

impl<'a> Derivatives<'a> {
    /// Writes `grad[r]`, `hess[r]` for each row `r` of the rows (other slots
    /// keep their values).
    pub(crate) fn write(&self, grad: &mut [f64], hess: &mut [f64]) {
        grad.par_chunks_mut(PARALLEL_CHUNK).zip(hess.par_chunks_mut(PARALLEL_CHUNK)).enumerate().for_each(
            |(k, (grad, hess))| {
                self.chunk(k * PARALLEL_CHUNK, grad, hess);
            },
        );
    }

    /// The derivatives packed as the row-wise histogram kernel reads them,
    /// with each row's count in the tree, over every row id of the scores:
    /// `stats[r] = [1, grad, hess, 0]` for the rows, zeros for the others.
    /// No gradient, hessian or count arrays besides. Returns the largest
    /// gradient magnitude and hessian, found in the same pass (what
    /// quantized gradients scale by).
    pub(crate) fn write_packed(&self, stats: &mut Vec<RowStats>) -> (f64, f64) {
        stats.resize(self.raw.len() / self.outputs, [0.0; 4]);
        stats
            .par_chunks_mut(PARALLEL_CHUNK)
            .enumerate()
            .map(|(k, stats)| {
                let first = k * PARALLEL_CHUNK;
                let (mut grad, mut hess) = (vec![0.0; stats.len()], vec![0.0; stats.len()]);
                let rows = self.chunk(first, &mut grad, &mut hess);
                let mut largest = (0.0f64, 0.0f64);
                for ((s, g), h) in stats.iter_mut().zip(grad).zip(hess) {
                    largest = (largest.0.max(g.abs()), largest.1.max(h));
                    *s = [0.0, g, h, 0.0];
                }
                for &r in rows {
                    stats[r as usize - first][0] = 1.0;
                }
                largest
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
    }

    /// Row `r`'s gradient and hessian, weighted (the hessian at least
    /// `MIN_HESSIAN` before its weight): what [`Derivatives::write`] writes for it.
    pub(crate) fn row(&self, r: usize) -> (f64, f64) {
        let Derivatives { loss, target, weight, raw, proba, output, outputs, .. } = *self;
        let w = weight.get(r);
        let (g, h) = match (loss, target) {
            (Loss::Squared, LossTarget::Values(y)) => (raw[r] - y[r], 1.0),
            (Loss::Quantile { alpha }, LossTarget::Values(y)) => {
                (if raw[r] >= y[r] { 1.0 - alpha } else { -alpha }, 1.0)
            }
            (Loss::Absolute, LossTarget::Values(y)) => (sign(raw[r] - y[r]), 1.0),
            (Loss::Huber { delta }, LossTarget::Values(y)) => ((raw[r] - y[r]).clamp(-delta, delta), 1.0),
            (Loss::Poisson, LossTarget::Values(y)) => (raw[r].exp() - y[r], (raw[r] + POISSON_MAX_DELTA_STEP).exp()),
            (Loss::Gamma, LossTarget::Values(y)) => {
                let ratio = y[r] * (-raw[r]).exp();
                (1.0 - ratio, ratio)
            }
            (Loss::Tweedie { power }, LossTarget::Values(y)) => {
                let (a, b) = (((1.0 - power) * raw[r]).exp(), ((2.0 - power) * raw[r]).exp());
                (b - y[r] * a, (2.0 - power) * b - (1.0 - power) * y[r] * a)
            }
            (Loss::Logistic, LossTarget::Classes(labels)) => {
                return arbor_kernels::logistic_derivatives(raw[r], labels[r], w, MIN_HESSIAN);
            }
            (Loss::Softmax, LossTarget::Classes(labels)) => {
                let p = proba[r * outputs + output];
                let y = f64::from(labels[r] as usize == output);
                // K/(K-1) scales the diagonal hessian to the softmax's curvature
                // (none for a single class, whose probability is always 1).
                let factor = if outputs > 1 { outputs as f64 / (outputs as f64 - 1.0) } else { 1.0 };
                (p - y, factor * p * (1.0 - p))
            }
            (Loss::Lambdarank { .. }, LossTarget::Lambdas(lambdas)) => (lambdas[r][0], lambdas[r][1]),
            _ => unreachable!("the loss was resolved for this target"),
        };
        (w * g, w * h.max(MIN_HESSIAN))
    }

    /// Writes the derivatives of the rows whose ids are `first..first +
    /// grad.len()` to `grad` and `hess`, at `id - first` (other slots keep
    /// their values); returns those rows.
    fn chunk(&self, first: usize, grad: &mut [f64], hess: &mut [f64]) -> &'a [u32] {
        let Derivatives { loss, target, rows, weight, raw, .. } = *self;
        // Each chunk of row ids is written by one task, from the rows that fall in it.
        debug_assert!(rows.is_sorted(), "training rows are kept in ascending order");
        let lo = rows.partition_point(|&r| (r as usize) < first);
        let hi = lo + rows[lo..].partition_point(|&r| (r as usize) < first + grad.len());
        let rows = &rows[lo..hi];
        // A chunk of consecutive logistic rows takes the vector kernel (same bits as the row function).
        if let (Loss::Logistic, LossTarget::Classes(labels)) = (loss, target) {
            if rows.len() == grad.len() {
                let span = first..first + grad.len();
                let (raw, labels, weight) = (&raw[span.clone()], &labels[span.clone()], weight.slice(span));
                arbor_kernels::logistic_derivatives_into(raw, labels, weight, MIN_HESSIAN, grad, hess);
                return rows;
            }
        }
        for &r in rows {
            let (g, h) = self.row(r as usize);
            grad[r as usize - first] = g;
            hess[r as usize - first] = h;
        }
        rows
    }
}

impl Loss {
    /// The raw score before any tree: the weighted mean for squared error
    /// and Huber, the weighted quantile (median) for quantile (absolute)
    /// loss, the log of the weighted mean for the log links, the log-odds of
    /// class 1 for logistic, log class priors for softmax.
    pub(crate) fn base_score(
        self,
        target: &LossTarget<'_>,
        rows: &[u32],
        weight: RowWeights<'_>,
        outputs: usize,
    ) -> Vec<f64> {
        let total: f64 = rows.iter().map(|&r| weight.get(r as usize)).sum();
        match (self, target) {
            // Only the order of a query's scores matters: rankers start at 0, as LightGBM's.
            (_, LossTarget::Ranked { .. } | LossTarget::Lambdas(_)) => vec![0.0],
            (_, LossTarget::Values(y)) if self.refits_leaves() => {
                vec![weighted_quantile(rows.iter().map(|&r| (y[r as usize], weight.get(r as usize))), self.level())]
            }
            (_, LossTarget::Values(y)) => {
                let sum: f64 = rows.iter().map(|&r| weight.get(r as usize) * y[r as usize]).sum();
                let mean = sum / total;
                // The labels were checked (`check_labels`): a log link's mean is positive.
                vec![if self.is_log_link() { mean.max(EPS).ln() } else { mean }]
            }
            (_, LossTarget::Classes(labels)) => {
                let n_classes = if self == Loss::Logistic { 2 } else { outputs };
                let mut share = vec![0.0; n_classes];
                for &r in rows {
                    share[labels[r as usize] as usize] += weight.get(r as usize);
                }
                let p: Vec<f64> = share.iter().map(|s| (s / total).clamp(EPS, 1.0 - EPS)).collect();
                match self {
                    Loss::Logistic => vec![(p[1] / p[0]).ln()],
                    _ => p.iter().map(|p| p.ln()).collect(),
                }
            }
        }
    }

    /// Checks the labels a regression loss reads: counts and claims (Poisson,
    /// Tweedie) must be `>= 0` with a positive mean, Gamma's labels `> 0`,
    /// a ranker's grades whole numbers from 0 to 30.
    /// The error names the label column, the loss and the first bad value.
    pub(crate) fn check_labels(self, label: &str, y: &[f64]) -> Result<()> {
        let strict = match self {
            Loss::Poisson | Loss::Tweedie { .. } => false,
            Loss::Gamma => true,
            Loss::Lambdarank { exp_gain, .. } => return check_grades(label, y, Gain::exponential(exp_gain)),
            _ => return Ok(()),
        };
        check_positive_labels(label, y, &format!("loss={}", self.name()), strict)
    }

    /// The value a leaf of a re-fitted loss ([`Loss::refits_leaves`]) takes
    /// before shrinkage: the weighted quantile (median for absolute error) of
    /// its rows' residuals `y - raw`, as LightGBM renews its quantile and L1
    /// leaves. Zero for a leaf of no rows.
    pub(crate) fn refit_leaf(self, y: &[f64], raw: &[f64], rows: &[u32], weight: RowWeights<'_>) -> f64 {
        let residuals = rows.iter().map(|&r| (y[r as usize] - raw[r as usize], weight.get(r as usize)));
        weighted_quantile(residuals, self.level())
    }

    /// The quantile a re-fitted loss predicts: `alpha`, or the median.
    fn level(self) -> f64 {
        match self {
            Loss::Quantile { alpha } => alpha,
            _ => 0.5,
        }
    }

    /// The derivatives of output `output` for each row in `rows`
    /// (ascending), times the row's weight, from raw scores (`outputs` per
    /// row) and, for softmax, the row's class probabilities in `proba`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn derivatives<'a>(
        self,
        target: &'a LossTarget<'a>,
        rows: &'a [u32],
        weight: RowWeights<'a>,
        raw: &'a [f64],
        proba: &'a [f64],
        output: usize,
        outputs: usize,
    ) -> Derivatives<'a> {
        Derivatives { loss: self, target, rows, weight, raw, proba, output, outputs }
    }

    /// Turns one row's raw scores into its prediction: the value, or class
    /// probabilities (`out` has one slot per class).
    #[inline]
    pub(crate) fn link(self, raw: &[f64], out: &mut [f64]) {
        match self {
            Loss::Logistic => {
                let p = sigmoid(raw[0]);
                out[0] = 1.0 - p;
                out[1] = p;
            }
            Loss::Softmax => softmax(raw, out),
            loss if loss.is_log_link() => out[0] = raw[0].exp(),
            _ => out[0] = raw[0],
        }
    }

    /// Mean loss over `rows` (weighted), in the loss's metric
    /// ([`Loss::metric`]): squared error, log loss, pinball loss, absolute
    /// error, Huber loss, or the Poisson, Gamma or Tweedie deviance.
    pub(crate) fn value(
        self,
        target: &LossTarget<'_>,
        rows: &[u32],
        weight: RowWeights<'_>,
        raw: &[f64],
        outputs: usize,
    ) -> f64 {
        if let (Loss::Lambdarank { ndcg_at, exp_gain, .. }, LossTarget::Ranked { grades, queries }) = (self, target) {
            let gain = Gain::exponential(exp_gain);
            return queries.ndcg_loss(grades, raw, |r| weight.get(r), rows, ndcg_at as usize, gain);
        }
        // Partial sums over fixed chunks, added in chunk order: the same
        // value whatever the thread count.
        let partial = |chunk: &[u32]| {
            let (mut total, mut weight_sum) = (0.0, 0.0);
            let mut p = vec![0.0; outputs.max(2)];
            for &r in chunk {
                let r = r as usize;
                let loss = match (self, target) {
                    (_, LossTarget::Values(y)) => self.row_loss(y[r], raw[r]),
                    (_, LossTarget::Classes(labels)) => {
                        self.link(&raw[r * outputs..(r + 1) * outputs], &mut p);
                        -p[labels[r] as usize].clamp(EPS, 1.0).ln()
                    }
                    _ => unreachable!("a ranking loss is measured by query"),
                };
                total += weight.get(r) * loss;
                weight_sum += weight.get(r);
            }
            (total, weight_sum)
        };
        let sums: Vec<(f64, f64)> = rows.par_chunks(PARALLEL_CHUNK).map(partial).collect();
        let (total, weight_sum) = sums.iter().fold((0.0, 0.0), |(t, w), (ct, cw)| (t + ct, w + cw));
        if weight_sum > 0.0 {
            total / weight_sum
        } else {
            0.0
        }
    }

    /// One regression row's loss (label `y`, raw score `raw`) in the loss's metric.
    #[inline]
    fn row_loss(self, y: f64, raw: f64) -> f64 {
        match self {
            Loss::Quantile { alpha } => {
                let d = y - raw;
                if d >= 0.0 {
                    alpha * d
                } else {
                    (alpha - 1.0) * d
                }
            }
            Loss::Absolute => (y - raw).abs(),
            Loss::Huber { delta } => {
                let d = (y - raw).abs();
                if d <= delta {
                    0.5 * d * d
                } else {
                    delta * (d - 0.5 * delta)
                }
            }
            Loss::Poisson => {
                let mu = raw.exp();
                let y_log = if y > 0.0 { y * (y / mu).ln() } else { 0.0 };
                2.0 * (y_log - y + mu)
            }
            Loss::Gamma => {
                let mu = raw.exp();
                2.0 * ((mu / y).ln() + y / mu - 1.0)
            }
            Loss::Tweedie { power: p } => {
                let y_term = if y > 0.0 { y.powf(2.0 - p) / ((1.0 - p) * (2.0 - p)) } else { 0.0 };
                2.0 * (y_term - y * ((1.0 - p) * raw).exp() / (1.0 - p) + ((2.0 - p) * raw).exp() / (2.0 - p))
            }
            _ => (raw - y).powi(2),
        }
    }
}

/// The sign of `d`, 0 at 0 (absolute error's gradient, as LightGBM takes it).
#[inline]
fn sign(d: f64) -> f64 {
    if d > 0.0 {
        1.0
    } else if d < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// Labels of a count or amount model (`loss=poisson`, `criterion=poisson`,
/// ...; `option` names it): none below 0 (`strict`: none at 0 either), and
/// some above 0 (all zero, the mean has no logarithm and no node splits);
/// the error names the label column, the option and the first value refused.
pub(crate) fn check_positive_labels(label: &str, y: &[f64], option: &str, strict: bool) -> Result<()> {
    let (admits, needs): (fn(f64) -> bool, &str) = if strict { (|v| v > 0.0, "> 0") } else { (|v| v >= 0.0, ">= 0") };
    if let Some(bad) = y.iter().find(|&&v| !admits(v)) {
        return Err(ArborError::Data(format!("label '{label}': {option} needs labels {needs}, found {bad}")));
    }
    if !y.iter().any(|&v| v > 0.0) {
        return Err(ArborError::Data(format!(
            "label '{label}': {option} needs a positive label somewhere (every label is 0, \
             so the mean has no logarithm)"
        )));
    }
    Ok(())
}

/// The weighted `level`-quantile of `(value, weight)` pairs: the smallest
/// value whose share of the total weight at or below it reaches `level`
/// (the lower median for 0.5 over an even count; 0 for no weight).
pub(crate) fn weighted_quantile(pairs: impl Iterator<Item = (f64, f64)>, level: f64) -> f64 {
    let mut pairs: Vec<(f64, f64)> = pairs.filter(|&(_, w)| w > 0.0).collect();
    if pairs.is_empty() {
        return 0.0;
    }
    if pairs.iter().all(|&(_, w)| w == 1.0) {
        // Unit weights (no sample weights): the `k`-th smallest value, `k`
        // the first count reaching `level·n` (counts add exactly), found by
        // selection in linear time instead of a sort: the same value.
        let n = pairs.len();
        let k = ((level * n as f64).ceil() as usize).clamp(1, n);
        let (_, kth, _) = pairs.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0));
        return kth.0;
    }
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|&(_, w)| w).sum();
    let goal = level * total;
    let mut seen = 0.0;
    for &(v, w) in &pairs {
        seen += w;
        if seen >= goal {
            return v;
        }
    }
    pairs[pairs.len() - 1].0
}

/// The logistic link of prediction, on the C library's `exp`. Training's
/// derivatives use [`arbor_kernels::sigmoid`], whose `exp` vectorizes; the
/// link keeps this one so predictions of existing models do not move.
#[inline]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Softmax of `raw` into `out`, shifted by the maximum so no exponent overflows.
#[inline]
pub(crate) fn softmax(raw: &[f64], out: &mut [f64]) {
    let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for (o, r) in out.iter_mut().zip(raw) {
        *o = (r - max).exp();
        sum += *o;
    }
    out.iter_mut().for_each(|o| *o /= sum);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit weights take the selection path, which finds the value the
    /// walk over the sorted values finds, at every level and count.
    #[test]
    fn selected_quantiles_are_the_sorted_ones() {
        let values: Vec<f64> = (0..1001).map(|i| f64::from((i * 7919) % 613) - 300.0).collect();
        for level in [0.001, 0.1, 0.25, 0.5, 0.9, 0.999, 1.0 / 3.0] {
            for n in [1, 2, 3, 10, 11, 1001] {
                let selected = weighted_quantile(values[..n].iter().map(|&v| (v, 1.0)), level);
                let mut sorted = values[..n].to_vec();
                sorted.sort_by(f64::total_cmp);
                let mut seen = 0.0;
                let walked = sorted.iter().copied().find(|_| {
                    seen += 1.0;
                    seen >= level * n as f64
                });
                assert_eq!(selected, walked.unwrap_or(sorted[n - 1]), "level {level}, {n} values");
            }
        }
    }

    /// Gradients and hessians agree with finite differences of the loss value.
    #[test]
    fn derivatives_match_finite_differences() {
        let rows = [0u32];
        let w = [1.0];
        let check = |loss: Loss, target: LossTarget<'_>, outputs: usize, raw: Vec<f64>| {
            for k in 0..outputs {
                let mut proba = vec![0.0; outputs.max(2)];
                loss.link(&raw, &mut proba);
                let (mut g, mut h) = ([0.0], [0.0]);
                loss.derivatives(&target, &rows, RowWeights::Given(&w), &raw, &proba, k, outputs).write(&mut g, &mut h);
                let eps = 1e-5;
                let at = |d: f64| {
                    let mut r = raw.clone();
                    r[k] += d;
                    loss.value(&target, &rows, RowWeights::Given(&w), &r, outputs)
                };
                // Squared error and the deviances are twice the loss whose gradient is taken.
                let halved = loss == Loss::Squared || loss.is_log_link();
                let scale = if halved { 0.5 } else { 1.0 };
                let numeric_g = scale * (at(eps) - at(-eps)) / (2.0 * eps);
                assert!((g[0] - numeric_g).abs() < 1e-6, "{loss:?} grad {} vs {numeric_g}", g[0]);
                if loss.refits_leaves() {
                    // A piecewise linear loss: a constant hessian, its leaves re-fitted.
                    assert_eq!(h[0], 1.0, "{loss:?} hess");
                    continue;
                }
                let numeric_h = scale * (at(eps) - 2.0 * at(0.0) + at(-eps)) / (eps * eps);
                let factor = match loss {
                    Loss::Softmax => outputs as f64 / (outputs as f64 - 1.0),
                    Loss::Poisson => POISSON_MAX_DELTA_STEP.exp(),
                    _ => 1.0,
                };
                let tolerance = 1e-3 * numeric_h.abs().max(1.0);
                assert!((h[0] - factor * numeric_h).abs() < tolerance, "{loss:?} hess {} vs {numeric_h}", h[0]);
            }
        };
        check(Loss::Squared, LossTarget::Values(&[1.5]), 1, vec![0.25]);
        check(Loss::Logistic, LossTarget::Classes(&[1]), 1, vec![0.3]);
        check(Loss::Softmax, LossTarget::Classes(&[2]), 3, vec![0.1, -0.4, 0.7]);
        for raw in [-0.8, 0.25, 2.4] {
            check(Loss::Quantile { alpha: 0.9 }, LossTarget::Values(&[1.5]), 1, vec![raw]);
            check(Loss::Quantile { alpha: 0.1 }, LossTarget::Values(&[1.5]), 1, vec![raw]);
            check(Loss::Absolute, LossTarget::Values(&[1.5]), 1, vec![raw]);
            check(Loss::Poisson, LossTarget::Values(&[3.0]), 1, vec![raw]);
            check(Loss::Poisson, LossTarget::Values(&[0.0]), 1, vec![raw]);
            check(Loss::Gamma, LossTarget::Values(&[2.5]), 1, vec![raw]);
            for power in [1.1, 1.5, 1.9] {
                check(Loss::Tweedie { power }, LossTarget::Values(&[2.0]), 1, vec![raw]);
                check(Loss::Tweedie { power }, LossTarget::Values(&[0.0]), 1, vec![raw]);
            }
        }
        // Huber inside its delta (squared) and beyond it (linear, whose hessian stays 1).
        check(Loss::Huber { delta: 1.0 }, LossTarget::Values(&[1.5]), 1, vec![1.2]);
        let (mut g, mut h) = ([0.0], [0.0]);
        let target = LossTarget::Values(&[1.5]);
        Loss::Huber { delta: 1.0 }
            .derivatives(&target, &rows, RowWeights::Ones, &[4.0], &[], 0, 1)
            .write(&mut g, &mut h);
        assert_eq!((g[0], h[0]), (1.0, 1.0));
    }

    /// The weighted quantile is the smallest value whose weight at or below
    /// it reaches the level, and a leaf's re-fit is the quantile of its residuals.
    #[test]
    fn quantiles_are_weighted_and_leaves_refit_to_residuals() {
        let q = |pairs: &[(f64, f64)], level| weighted_quantile(pairs.iter().copied(), level);
        assert_eq!(q(&[(3.0, 1.0), (1.0, 1.0), (2.0, 1.0)], 0.5), 2.0);
        assert_eq!(q(&[(1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (4.0, 1.0)], 0.5), 2.0);
        assert_eq!(q(&[(1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (4.0, 1.0)], 0.9), 4.0);
        assert_eq!(q(&[(1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (4.0, 1.0)], 0.1), 1.0);
        // A heavy row pulls the median to itself; weightless rows count for nothing.
        assert_eq!(q(&[(1.0, 1.0), (2.0, 1.0), (9.0, 5.0), (-7.0, 0.0)], 0.5), 9.0);
        assert_eq!(q(&[], 0.5), 0.0);
        let y = [10.0, 0.0, 5.0, 7.0, 1.0];
        let raw = [1.0, 0.0, 1.0, 1.0, 0.0];
        // Residuals of rows 0, 2, 3: 9, 4, 6.
        assert_eq!(Loss::Absolute.refit_leaf(&y, &raw, &[0, 2, 3], RowWeights::Ones), 6.0);
        assert_eq!(Loss::Quantile { alpha: 0.9 }.refit_leaf(&y, &raw, &[0, 2, 3], RowWeights::Ones), 9.0);
        let every = [0, 1, 2, 3, 4];
        let base = Loss::Quantile { alpha: 0.25 }.base_score(&LossTarget::Values(&y), &every, RowWeights::Ones, 1);
        assert_eq!(base, vec![1.0]);
        let log_mean = Loss::Poisson.base_score(&LossTarget::Values(&y), &every, RowWeights::Ones, 1);
        assert!((log_mean[0] - 4.6f64.ln()).abs() < 1e-12);
    }

    /// Labels a loss cannot take are refused by name, with the value found.
    #[test]
    fn labels_outside_a_loss_are_refused() {
        let err = |loss: Loss, y: &[f64]| loss.check_labels("claims", y).unwrap_err().to_string();
        assert!(err(Loss::Poisson, &[1.0, -2.0]).contains("label 'claims': loss=poisson needs labels >= 0, found -2"));
        assert!(err(Loss::Gamma, &[1.0, 0.0]).contains("loss=gamma needs labels > 0, found 0"));
        assert!(err(Loss::Tweedie { power: 1.5 }, &[0.0, 0.0]).contains("positive label"));
        assert!(Loss::Tweedie { power: 1.5 }.check_labels("claims", &[0.0, 3.0]).is_ok());
        assert!(Loss::Quantile { alpha: 0.5 }.check_labels("claims", &[-4.0]).is_ok());
    }

    /// The packed derivatives are those of `Derivatives::write`, bit for bit, with a
    /// count of one beside them, and the rows outside `rows` are all zeros,
    /// for every loss, over chunks taken whole (the logistic vector kernel)
    /// and in part (a sample of the rows).
    #[test]
    fn packed_derivatives_are_the_gradients_with_their_counts() {
        let n = 2 * PARALLEL_CHUNK + 123;
        let labels: Vec<u32> = (0..n).map(|r| (r * 7 % 3) as u32).collect();
        let binary: Vec<u32> = labels.iter().map(|&l| l % 2).collect();
        let y: Vec<f64> = (0..n).map(|r| (r as f64 * 0.37).sin()).collect();
        let weight: Vec<f64> = (0..n).map(|r| 0.5 + (r % 5) as f64 * 0.25).collect();
        let every: Vec<u32> = (0..n as u32).collect();
        let sample: Vec<u32> = (0..n as u32).filter(|r| r % 3 != 1).collect();
        let cases: [(Loss, LossTarget<'_>, usize); 3] = [
            (Loss::Squared, LossTarget::Values(&y), 1),
            (Loss::Logistic, LossTarget::Classes(&binary), 1),
            (Loss::Softmax, LossTarget::Classes(&labels), 3),
        ];
        for (loss, target, outputs) in cases {
            let raw: Vec<f64> = (0..n * outputs).map(|i| (i as f64 * 0.11).cos()).collect();
            let mut proba = vec![0.0; n * outputs];
            if outputs > 1 {
                proba.chunks_mut(outputs).zip(raw.chunks(outputs)).for_each(|(p, r)| softmax(r, p));
            }
            for rows in [&every, &sample] {
                for output in 0..outputs {
                    let weight = RowWeights::Given(&weight);
                    let derivatives = loss.derivatives(&target, rows, weight, &raw, &proba, output, outputs);
                    let (mut grad, mut hess) = (vec![0.0; n], vec![0.0; n]);
                    derivatives.write(&mut grad, &mut hess);
                    let mut stats = Vec::new();
                    let largest = derivatives.write_packed(&mut stats);
                    assert_eq!(stats.len(), n);
                    let expected = rows
                        .iter()
                        .fold((0.0f64, 0.0f64), |(g, h), &r| (g.max(grad[r as usize].abs()), h.max(hess[r as usize])));
                    assert_eq!(largest, expected, "{loss:?} output {output}: the largest derivatives");
                    let mut grown_on = rows.iter().map(|&r| r as usize).peekable();
                    for (r, s) in stats.iter().enumerate() {
                        let expected = match grown_on.next_if_eq(&r) {
                            Some(_) => [1.0, grad[r], hess[r], 0.0],
                            None => [0.0; 4],
                        };
                        assert_eq!(s.map(f64::to_bits), expected.map(f64::to_bits), "{loss:?} output {output} row {r}");
                    }
                }
            }
        }
    }

    /// Rows without weights give the bits of rows all weighing one: base
    /// scores, derivatives (row by row and whole logistic chunks) and loss
    /// values, with no vector of ones held.
    #[test]
    fn unweighted_rows_are_rows_weighing_one() {
        let n = PARALLEL_CHUNK + 77;
        let labels: Vec<u32> = (0..n).map(|r| (r * 5 % 3) as u32).collect();
        let binary: Vec<u32> = labels.iter().map(|&l| l % 2).collect();
        let y: Vec<f64> = (0..n).map(|r| (r as f64 * 0.29).cos()).collect();
        let ones = vec![1.0; n];
        let every: Vec<u32> = (0..n as u32).collect();
        let sample: Vec<u32> = (0..n as u32).filter(|r| r % 4 != 0).collect();
        let cases: [(Loss, LossTarget<'_>, usize); 3] = [
            (Loss::Squared, LossTarget::Values(&y), 1),
            (Loss::Logistic, LossTarget::Classes(&binary), 1),
            (Loss::Softmax, LossTarget::Classes(&labels), 3),
        ];
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (loss, target, outputs) in cases {
            let raw: Vec<f64> = (0..n * outputs).map(|i| (i as f64 * 0.13).sin()).collect();
            let mut proba = vec![0.0; n * outputs];
            if outputs > 1 {
                proba.chunks_mut(outputs).zip(raw.chunks(outputs)).for_each(|(p, r)| softmax(r, p));
            }
            for rows in [&every, &sample] {
                let given = RowWeights::Given(&ones);
                let base = |w| bits(&loss.base_score(&target, rows, w, outputs));
                assert_eq!(base(RowWeights::Ones), base(given), "{loss:?} base score");
                let value = |w| loss.value(&target, rows, w, &raw, outputs).to_bits();
                assert_eq!(value(RowWeights::Ones), value(given), "{loss:?} loss value");
                for output in 0..outputs {
                    let derivatives = |w| {
                        let (mut grad, mut hess) = (vec![0.0; n], vec![0.0; n]);
                        loss.derivatives(&target, rows, w, &raw, &proba, output, outputs).write(&mut grad, &mut hess);
                        (bits(&grad), bits(&hess))
                    };
                    assert_eq!(derivatives(RowWeights::Ones), derivatives(given), "{loss:?} output {output}");
                }
            }
        }
    }

    #[test]
    fn base_scores_are_the_optimal_constants() {
        let rows: Vec<u32> = (0..4).collect();
        let w = [1.0; 4];
        let mean =
            Loss::Squared.base_score(&LossTarget::Values(&[1.0, 2.0, 3.0, 6.0]), &rows, RowWeights::Given(&w), 1);
        assert_eq!(mean, vec![3.0]);
        let log_odds = Loss::Logistic.base_score(&LossTarget::Classes(&[0, 1, 1, 1]), &rows, RowWeights::Given(&w), 1);
        assert!((log_odds[0] - 3f64.ln()).abs() < 1e-12);
        let priors = Loss::Softmax.base_score(&LossTarget::Classes(&[0, 1, 2, 2]), &rows, RowWeights::Given(&w), 3);
        let mut p = [0.0; 3];
        softmax(&priors, &mut p);
        assert!((p[2] - 0.5).abs() < 1e-12 && (p[0] - 0.25).abs() < 1e-12);
    }
}
