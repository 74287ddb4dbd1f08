//! Learning to rank (`loss=lambdarank`, `docs/algorithms.md`, "Ranking"):
//! rows grouped into queries by a group column, LambdaMART's NDCG-weighted
//! pairwise gradients within each query, and the NDCG@k that early
//! stopping and reports measure.
//!
//! The gradients are LightGBM's `lambdarank` (Burges, "From RankNet to
//! LambdaRank to LambdaMART", 2010): for each pair of rows of a query with
//! different grades, at least one of them among the first
//! `lambdarank_truncation_level` (30) by score, the row graded higher is pulled up and the
//! other pushed down by `σ |ΔNDCG| ρ`, where `|ΔNDCG|` is what swapping
//! the two would change the query's NDCG by (divided by `0.01 + |s_i −
//! s_j|` unless every score of the query is equal) and `ρ = 1 / (1 +
//! exp(σ (s_i − s_j)))`; the hessian is `σ² |ΔNDCG| ρ (1 − ρ)`, and each
//! query's derivatives are scaled by `log2(1 + S) / S`, `S` the sum of its
//! pairs' `2 σ |ΔNDCG| ρ`. `σ` is `sigmoid` (default 1, LightGBM's key;
//! XGBoost fixes it at 1).

use rayon::prelude::*;

use crate::data::dataset::dense_ids;
use crate::{ArborError, Result};

/// The highest relevance grade under exponential gains: a grade `y` gains
/// `2^y − 1`, and LightGBM's default `label_gain` stops at grade 30.
pub(crate) const MAX_GRADE: f64 = 30.0;

/// What a relevance grade `y` gains in the DCG (XGBoost's `ndcg_exp_gain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gain {
    /// `2^y − 1` (LightGBM's default `label_gain`, XGBoost's default), grades 0 to 30.
    Exponential,
    /// `y`, any whole grade from 0.
    Linear,
}

impl Gain {
    /// The gain of `grade`.
    #[inline]
    fn of(self, grade: f64) -> f64 {
        match self {
            Gain::Exponential => grade.exp2() - 1.0,
            Gain::Linear => grade,
        }
    }

    /// The gain of XGBoost's flag `ndcg_exp_gain`.
    pub(crate) fn exponential(exp: bool) -> Gain {
        if exp {
            Gain::Exponential
        } else {
            Gain::Linear
        }
    }
}

/// How a ranker weighs its pairs: those with a row among the first
/// `truncation` of its query, under a logistic of steepness `sigmoid`,
/// their NDCG change measured with `gain`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pairs {
    pub truncation: usize,
    pub sigmoid: f64,
    pub gain: Gain,
}

/// The training rows grouped by query: each query's rows ascending, and
/// each row's query. Queries are numbered by their ids' order.
#[derive(Debug)]
pub(crate) struct Queries {
    /// Query `q`'s rows are `rows[starts[q]..starts[q + 1]]`.
    starts: Vec<usize>,
    rows: Vec<u32>,
    /// Each row's query.
    query_of: Vec<u32>,
}

impl Queries {
    /// Groups rows `0..groups.len()` by their query id.
    pub(crate) fn new(groups: &[i64]) -> Queries {
        let (query_of, n_queries) = dense_ids(groups);
        let mut starts = vec![0usize; n_queries + 1];
        for &q in &query_of {
            starts[q as usize + 1] += 1;
        }
        for q in 0..n_queries {
            starts[q + 1] += starts[q];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; query_of.len()];
        for (r, &q) in query_of.iter().enumerate() {
            rows[next[q as usize]] = r as u32;
            next[q as usize] += 1;
        }
        Queries { starts, rows, query_of }
    }

    /// Number of queries.
    pub(crate) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Query `q`'s rows, ascending.
    fn rows_of(&self, q: usize) -> &[u32] {
        &self.rows[self.starts[q]..self.starts[q + 1]]
    }

    /// Row `r`'s query.
    pub(crate) fn query_of(&self, r: usize) -> usize {
        self.query_of[r] as usize
    }

    /// The queries with a row among `rows`, ascending.
    pub(crate) fn queries_in(&self, rows: &[u32]) -> Vec<usize> {
        let mut seen = vec![false; self.len()];
        rows.iter().for_each(|&r| seen[self.query_of[r as usize] as usize] = true);
        (0..self.len()).filter(|&q| seen[q]).collect()
    }

    /// Each row's LambdaMART gradient and hessian (unweighted; zero for
    /// rows outside `queries`, those [`Queries::queries_in`] the training
    /// rows), at raw scores `raw`, for relevance grades `grades`, weighing
    /// the pairs as `pairs` says.
    /// Queries are independent: each is computed on its own, so the result
    /// does not depend on the threads.
    pub(crate) fn lambdas(&self, grades: &[f64], raw: &[f64], queries: &[usize], pairs: Pairs) -> Vec<[f64; 2]> {
        let per_query: Vec<Vec<[f64; 2]>> =
            queries.par_iter().map(|&q| query_lambdas(self.rows_of(q), grades, raw, pairs)).collect();
        let mut out = vec![[0.0; 2]; raw.len()];
        for (&q, lambdas) in queries.iter().zip(per_query) {
            for (&r, l) in self.rows_of(q).iter().zip(lambdas) {
                out[r as usize] = l;
            }
        }
        out
    }

    /// One minus the mean NDCG@`k` of the queries of `rows` at raw scores
    /// `raw` (lower is better, as the other losses), grades gaining `gain`, each query weighing
    /// its rows' mean `weight`. A query with nothing relevant counts as
    /// ranked perfectly (NDCG 1), as LightGBM and XGBoost count it.
    pub(crate) fn ndcg_loss(
        &self,
        grades: &[f64],
        raw: &[f64],
        weight: impl Fn(usize) -> f64 + Sync,
        rows: &[u32],
        k: usize,
        gain: Gain,
    ) -> f64 {
        let queries = self.queries_in(rows);
        let scored: Vec<(f64, f64)> = queries
            .par_iter()
            .map(|&q| {
                let rows = self.rows_of(q);
                let w = rows.iter().map(|&r| weight(r as usize)).sum::<f64>() / rows.len() as f64;
                (w, ndcg(rows, grades, raw, k, gain))
            })
            .collect();
        let (total, weight_sum) = scored.iter().fold((0.0, 0.0), |(t, s), &(w, n)| (t + w * n, s + w));
        if weight_sum > 0.0 {
            1.0 - total / weight_sum
        } else {
            0.0
        }
    }
}

/// The discount of 0-based rank `i`, `1 / log2(i + 2)`.
#[inline]
fn discount(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

/// `rows` ordered by score, highest first; ties keep row order.
fn by_score(rows: &[u32], raw: &[f64]) -> Vec<u32> {
    let mut sorted = rows.to_vec();
    sorted.sort_by(|&a, &b| raw[b as usize].total_cmp(&raw[a as usize]));
    sorted
}

/// The best DCG@`k` the grades of `rows` allow.
fn ideal_dcg(rows: &[u32], grades: &[f64], k: usize, gain: Gain) -> f64 {
    let mut g: Vec<f64> = rows.iter().map(|&r| grades[r as usize]).collect();
    g.sort_by(|a, b| b.total_cmp(a));
    g.iter().take(k).enumerate().map(|(i, &y)| gain.of(y) * discount(i)).sum()
}

/// NDCG@`k` of one query's rows ranked by `raw` (1 when nothing is relevant).
pub(crate) fn ndcg(rows: &[u32], grades: &[f64], raw: &[f64], k: usize, gain: Gain) -> f64 {
    let ideal = ideal_dcg(rows, grades, k, gain);
    if ideal <= 0.0 {
        return 1.0;
    }
    let dcg: f64 =
        by_score(rows, raw).iter().take(k).enumerate().map(|(i, &r)| gain.of(grades[r as usize]) * discount(i)).sum();
    dcg / ideal
}

/// One query's LambdaMART derivatives (see the module's documentation),
/// in the order of `rows`, over the pairs `pairs` weighs.
fn query_lambdas(rows: &[u32], grades: &[f64], raw: &[f64], pairs: Pairs) -> Vec<[f64; 2]> {
    let Pairs { truncation, sigmoid: sigma, gain } = pairs;
    let n = rows.len();
    let mut out = vec![[0.0; 2]; n];
    let ideal = ideal_dcg(rows, grades, truncation, gain);
    if n < 2 || ideal <= 0.0 {
        return out;
    }
    let inverse_ideal = 1.0 / ideal;
    // Positions in `rows`, by score.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| raw[rows[b] as usize].total_cmp(&raw[rows[a] as usize]));
    let score = |i: usize| raw[rows[order[i]] as usize];
    let grade = |i: usize| grades[rows[order[i]] as usize];
    let all_equal = score(0) == score(n - 1);
    // Each rank's discount, once per query rather than once per pair.
    let discounts: Vec<f64> = (0..n).map(discount).collect();
    let mut sum_lambdas = 0.0;
    for i in 0..(n - 1).min(truncation) {
        for j in i + 1..n {
            if grade(i) == grade(j) {
                continue;
            }
            let (high, low) = if grade(i) > grade(j) { (i, j) } else { (j, i) };
            let delta_score = score(high) - score(low);
            let mut delta_ndcg =
                (gain.of(grade(high)) - gain.of(grade(low))) * (discounts[high] - discounts[low]).abs() * inverse_ideal;
            if !all_equal {
                delta_ndcg /= 0.01 + delta_score.abs();
            }
            let rho = 1.0 / (1.0 + (sigma * delta_score).exp());
            let lambda = sigma * delta_ndcg * rho;
            let hessian = sigma * sigma * delta_ndcg * rho * (1.0 - rho);
            out[order[high]][0] -= lambda;
            out[order[high]][1] += hessian;
            out[order[low]][0] += lambda;
            out[order[low]][1] += hessian;
            sum_lambdas += 2.0 * lambda;
        }
    }
    if sum_lambdas > 0.0 {
        let factor = (1.0 + sum_lambdas).log2() / sum_lambdas;
        out.iter_mut().for_each(|l| {
            l[0] *= factor;
            l[1] *= factor;
        });
    }
    out
}

/// An error unless every grade is a whole number from 0 to [`MAX_GRADE`]
/// (exponential gains; linear ones take any whole grade up to `u32::MAX`),
/// naming the label column and the first grade refused.
pub(crate) fn check_grades(label: &str, y: &[f64], gain: Gain) -> Result<()> {
    let max = match gain {
        Gain::Exponential => MAX_GRADE,
        Gain::Linear => f64::from(u32::MAX),
    };
    match y.iter().find(|&&v| !(0.0..=max).contains(&v) || v.fract() != 0.0) {
        Some(bad) => Err(ArborError::Data(format!(
            "label '{label}': loss=lambdarank needs relevance grades, whole numbers from 0 to {max}; found {bad}"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT_PAIRS: Pairs = Pairs { truncation: 30, sigmoid: 1.0, gain: Gain::Exponential };

    /// Queries group their rows whatever order the ids come in.
    #[test]
    fn queries_group_rows_by_id() {
        let q = Queries::new(&[7, -2, 7, 3, -2, 7]);
        assert_eq!(q.len(), 3);
        assert_eq!(q.rows_of(0), &[1, 4]);
        assert_eq!(q.rows_of(1), &[3]);
        assert_eq!(q.rows_of(2), &[0, 2, 5]);
        assert_eq!(q.queries_in(&[2, 3]), vec![1, 2]);
    }

    /// NDCG of a perfect and of a reversed ranking, against sums written out.
    #[test]
    fn ndcg_is_dcg_over_the_ideal() {
        let grades = [0.0, 1.0, 3.0];
        let rows = [0, 1, 2];
        assert_eq!(ndcg(&rows, &grades, &[0.0, 1.0, 2.0], 10, Gain::Exponential), 1.0);
        let got = ndcg(&rows, &grades, &[2.0, 1.0, 0.0], 10, Gain::Exponential);
        // Reversed: grade 0 first (gain 0), grade 1 second, grade 3 third.
        let expected = (1.0 / 3f64.log2() + 7.0 / 4f64.log2()) / (7.0 + 1.0 / 3f64.log2());
        assert!((got - expected).abs() < 1e-15, "{got} vs {expected}");
        assert_eq!(ndcg(&rows, &[0.0; 3], &[2.0, 1.0, 0.0], 10, Gain::Exponential), 1.0);
        // Cut at 1: only the top row counts.
        assert_eq!(ndcg(&rows, &grades, &[2.0, 1.0, 0.0], 1, Gain::Exponential), 0.0);
    }

    /// The gradients are those of the pairwise surrogate `Σ |ΔNDCG| log(1 +
    /// exp(−σ (s_high − s_low)))` with `|ΔNDCG|` held at its current value,
    /// over the pairs with a row among the first `truncation`: checked
    /// against finite differences of that sum, before the query's
    /// normalisation (undone here), with every pair and with the first two ranks'.
    #[test]
    fn lambdas_are_the_pairwise_surrogate_gradients() {
        for (truncation, sigma, gain) in [
            (30, 1.0, Gain::Exponential),
            (2, 1.0, Gain::Exponential),
            (30, 2.5, Gain::Exponential),
            (30, 1.0, Gain::Linear),
        ] {
            surrogate_gradients_at(truncation, sigma, gain);
        }
    }

    fn surrogate_gradients_at(truncation: usize, sigma: f64, gain: Gain) {
        let grades = [2.0, 0.0, 1.0, 3.0, 1.0];
        let raw = [0.3, -0.2, 0.9, 0.1, -1.4];
        let rows = [0u32, 1, 2, 3, 4];
        let lambdas = query_lambdas(&rows, &grades, &raw, Pairs { truncation, sigmoid: sigma, gain });
        // The weight of each pair at the current scores, and the surrogate.
        let order = by_score(&rows, &raw);
        let rank = |r: usize| order.iter().position(|&o| o as usize == r).unwrap();
        let ideal = ideal_dcg(&rows, &grades, truncation, gain);
        let mut pairs = Vec::new();
        for a in 0..5 {
            for b in 0..5 {
                if grades[a] > grades[b] && rank(a).min(rank(b)) < truncation {
                    let w = (gain.of(grades[a]) - gain.of(grades[b])) * (discount(rank(a)) - discount(rank(b))).abs()
                        / ideal
                        / (0.01 + (raw[a] - raw[b]).abs());
                    pairs.push((a, b, w));
                }
            }
        }
        let surrogate =
            |s: &[f64]| -> f64 { pairs.iter().map(|&(a, b, w)| w * (1.0 + (-sigma * (s[a] - s[b])).exp()).ln()).sum() };
        let sum: f64 = pairs.iter().map(|&(a, b, w)| 2.0 * sigma * w / (1.0 + (sigma * (raw[a] - raw[b])).exp())).sum();
        let factor = (1.0 + sum).log2() / sum;
        for r in 0..5 {
            let eps = 1e-6;
            let mut up = raw.to_vec();
            up[r] += eps;
            let mut down = raw.to_vec();
            down[r] -= eps;
            let numeric = (surrogate(&up) - surrogate(&down)) / (2.0 * eps);
            assert!(
                (lambdas[r][0] / factor - numeric).abs() < 1e-6,
                "row {r}: {} vs {numeric}",
                lambdas[r][0] / factor
            );
            assert!(lambdas[r][1] > 0.0);
        }
        // Gradients of a query sum to zero: each pair pushes one row as far as it pulls the other.
        assert!(lambdas.iter().map(|l| l[0]).sum::<f64>().abs() < 1e-12);
    }

    /// A query whose grades are all equal, or of one row, has no pairs.
    #[test]
    fn queries_without_pairs_have_no_gradient() {
        assert_eq!(query_lambdas(&[0, 1], &[2.0, 2.0], &[0.5, 0.1], DEFAULT_PAIRS), vec![[0.0; 2]; 2]);
        assert_eq!(query_lambdas(&[0], &[3.0], &[0.5], DEFAULT_PAIRS), vec![[0.0; 2]]);
    }

    /// Grades outside 0..=30 (exponential gains) or with a fraction are refused by name.
    #[test]
    fn grades_are_whole_and_bounded() {
        assert!(check_grades("rel", &[0.0, 4.0, 30.0], Gain::Exponential).is_ok());
        assert!(check_grades("rel", &[0.0, 31.0, 1000.0], Gain::Linear).is_ok(), "linear gains take any grade");
        assert!(check_grades("rel", &[2.5], Gain::Linear).is_err());
        for bad in [-1.0, 31.0, 1.5, f64::NAN] {
            let err = check_grades("rel", &[0.0, bad], Gain::Exponential).unwrap_err().to_string();
            assert!(err.contains("label 'rel'") && err.contains("lambdarank"), "{err}");
        }
    }
}
