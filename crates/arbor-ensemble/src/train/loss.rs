//! Boosting losses (`docs/algorithms.md`, "Gradient boosting"): gradients and hessians per row, the base
//! score, the link from raw scores to predictions, and the loss value that
//! progress and early stopping report.

use rayon::prelude::*;

use arbor_kernels::RowStats;

use crate::Loss;

/// Rows per parallel work unit of the per-row passes.
const PARALLEL_CHUNK: usize = 16384;

/// Smallest hessian used, so a leaf weight `-G / (H + lambda)` stays finite with `lambda = 0`.
const MIN_HESSIAN: f64 = 1e-16;
/// Probabilities are clamped this far from 0 and 1 in log losses and log-odds.
const EPS: f64 = 1e-15;

/// The training target as the losses read it.
pub(crate) enum LossTarget<'a> {
    /// Regression responses.
    Values(&'a [f64]),
    /// Class index per row.
    Classes(&'a [u32]),
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
    fn get(self, r: usize) -> f64 {
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
    /// No gradient, hessian or count arrays besides.
    pub(crate) fn write_packed(&self, stats: &mut Vec<RowStats>) {
        stats.resize(self.raw.len() / self.outputs, [0.0; 4]);
        stats.par_chunks_mut(PARALLEL_CHUNK).enumerate().for_each(|(k, stats)| {
            let first = k * PARALLEL_CHUNK;
            let (mut grad, mut hess) = (vec![0.0; stats.len()], vec![0.0; stats.len()]);
            let rows = self.chunk(first, &mut grad, &mut hess);
            for ((s, g), h) in stats.iter_mut().zip(grad).zip(hess) {
                *s = [0.0, g, h, 0.0];
            }
            for &r in rows {
                stats[r as usize - first][0] = 1.0;
            }
        });
    }

    /// Writes the derivatives of the rows whose ids are `first..first +
    /// grad.len()` to `grad` and `hess`, at `id - first` (other slots keep
    /// their values); returns those rows.
    fn chunk(&self, first: usize, grad: &mut [f64], hess: &mut [f64]) -> &'a [u32] {
        let Derivatives { loss, target, rows, weight, raw, proba, output, outputs } = *self;
        let derivatives = |r: usize| {
            let w = weight.get(r);
            let (g, h) = match (loss, target) {
                (Loss::Squared, LossTarget::Values(y)) => (raw[r] - y[r], 1.0),
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
                _ => unreachable!("the loss was resolved for this target"),
            };
            (w * g, w * h.max(MIN_HESSIAN))
        };
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
            let (g, h) = derivatives(r as usize);
            grad[r as usize - first] = g;
            hess[r as usize - first] = h;
        }
        rows
    }
}

impl Loss {
    /// The raw score before any tree: the weighted mean for squared error,
    /// the log-odds of class 1 for logistic, log class priors for softmax.
    pub(crate) fn base_score(
        self,
        target: &LossTarget<'_>,
        rows: &[u32],
        weight: RowWeights<'_>,
        outputs: usize,
    ) -> Vec<f64> {
        let total: f64 = rows.iter().map(|&r| weight.get(r as usize)).sum();
        match (self, target) {
            (Loss::Squared, LossTarget::Values(y)) => {
                let sum: f64 = rows.iter().map(|&r| weight.get(r as usize) * y[r as usize]).sum();
                vec![sum / total]
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
            (_, LossTarget::Values(_)) => unreachable!("a classification loss is resolved only for class labels"),
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
            Loss::Squared => out[0] = raw[0],
            Loss::Logistic => {
                let p = sigmoid(raw[0]);
                out[0] = 1.0 - p;
                out[1] = p;
            }
            Loss::Softmax => softmax(raw, out),
        }
    }

    /// Mean loss over `rows` (weighted): squared error, or the log loss.
    pub(crate) fn value(
        self,
        target: &LossTarget<'_>,
        rows: &[u32],
        weight: RowWeights<'_>,
        raw: &[f64],
        outputs: usize,
    ) -> f64 {
        // Partial sums over fixed chunks, added in chunk order: the same
        // value whatever the thread count.
        let partial = |chunk: &[u32]| {
            let (mut total, mut weight_sum) = (0.0, 0.0);
            let mut p = vec![0.0; outputs.max(2)];
            for &r in chunk {
                let r = r as usize;
                let loss = match (self, target) {
                    (Loss::Squared, LossTarget::Values(y)) => (raw[r] - y[r]).powi(2),
                    (_, LossTarget::Classes(labels)) => {
                        self.link(&raw[r * outputs..(r + 1) * outputs], &mut p);
                        -p[labels[r] as usize].clamp(EPS, 1.0).ln()
                    }
                    _ => unreachable!("the loss was resolved for this target"),
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
                // squared error's value is (f - y)², so its gradient is half the derivative
                let scale = if loss == Loss::Squared { 0.5 } else { 1.0 };
                let numeric_g = scale * (at(eps) - at(-eps)) / (2.0 * eps);
                assert!((g[0] - numeric_g).abs() < 1e-6, "{loss:?} grad {} vs {numeric_g}", g[0]);
                let numeric_h = scale * (at(eps) - 2.0 * at(0.0) + at(-eps)) / (eps * eps);
                let factor = if loss == Loss::Softmax { outputs as f64 / (outputs as f64 - 1.0) } else { 1.0 };
                assert!((h[0] - factor * numeric_h).abs() < 1e-3, "{loss:?} hess {} vs {numeric_h}", h[0]);
            }
        };
        check(Loss::Squared, LossTarget::Values(&[1.5]), 1, vec![0.25]);
        check(Loss::Logistic, LossTarget::Classes(&[1]), 1, vec![0.3]);
        check(Loss::Softmax, LossTarget::Classes(&[2]), 3, vec![0.1, -0.4, 0.7]);
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
                    derivatives.write_packed(&mut stats);
                    assert_eq!(stats.len(), n);
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
