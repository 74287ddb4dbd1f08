//! The measures a report gives of a model on labelled rows: accuracy, log
//! loss, AUC, the ROC curve and the confusion matrix for classification;
//! RMSE, MAE and R² for regression.

/// How a classifier did on labelled rows.
pub(crate) struct ClassMetrics {
    pub accuracy: f64,
    pub log_loss: f64,
    /// Rows by true class, columns by predicted class.
    pub confusion: Vec<Vec<u64>>,
    /// Binary only: the area under the ROC curve and the curve's points
    /// (false positive rate, true positive rate), of the second class.
    pub roc: Option<(f64, Vec<(f64, f64)>)>,
}

/// Measures `probabilities` (row-major, `k` per row) against each row's
/// true class (`None`: a label the model does not know, counted wrong).
pub(crate) fn classification(probabilities: &[f64], k: usize, truth: &[Option<usize>]) -> ClassMetrics {
    let n = truth.len().max(1) as f64;
    let mut confusion = vec![vec![0u64; k]; k];
    let (mut right, mut loss) = (0usize, 0.0);
    for (p, t) in probabilities.chunks_exact(k).zip(truth) {
        let predicted = crate::predict::arg_max(p);
        match t {
            Some(t) => {
                confusion[*t][predicted] += 1;
                right += usize::from(*t == predicted);
                loss -= p[*t].clamp(1e-15, 1.0).ln();
            }
            None => loss -= 1e-15f64.ln(),
        }
    }
    let roc = (k == 2).then(|| {
        let scored: Vec<(f64, bool)> =
            probabilities.chunks_exact(2).zip(truth).filter_map(|(p, t)| t.map(|t| (p[1], t == 1))).collect();
        roc(scored)
    });
    ClassMetrics { accuracy: right as f64 / n, log_loss: loss / n, confusion, roc }
}

/// The ROC curve of `(score, positive)` pairs and its area (ties counted
/// half, as the Mann-Whitney statistic does); at most about 200 points.
fn roc(mut scored: Vec<(f64, bool)>) -> (f64, Vec<(f64, f64)>) {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let positives = scored.iter().filter(|s| s.1).count() as f64;
    let negatives = scored.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return (f64::NAN, vec![(0.0, 0.0), (1.0, 1.0)]);
    }
    let (mut tp, mut fp, mut area) = (0.0, 0.0, 0.0);
    let mut curve = vec![(0.0, 0.0)];
    let step = (scored.len() / 200).max(1);
    let mut i = 0;
    while i < scored.len() {
        // A run of equal scores moves the curve diagonally.
        let start = i;
        let (tp0, fp0) = (tp, fp);
        while i < scored.len() && scored[i].0 == scored[start].0 {
            if scored[i].1 {
                tp += 1.0;
            } else {
                fp += 1.0;
            }
            i += 1;
        }
        area += (fp - fp0) * (tp + tp0) / 2.0;
        if i / step != start / step || i == scored.len() {
            curve.push((fp / negatives, tp / positives));
        }
    }
    (area / (positives * negatives), curve)
}

/// How a regressor did on labelled rows.
pub(crate) struct RegressionMetrics {
    pub rmse: f64,
    pub mae: f64,
    pub r2: f64,
}

/// Measures `predicted` against `truth` (rows with a missing label skipped).
pub(crate) fn regression(predicted: &[f64], truth: &[f64]) -> RegressionMetrics {
    let pairs: Vec<(f64, f64)> =
        predicted.iter().zip(truth).filter(|(_, t)| t.is_finite()).map(|(p, t)| (*p, *t)).collect();
    let n = pairs.len().max(1) as f64;
    let mean = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let squared: f64 = pairs.iter().map(|(p, t)| (p - t).powi(2)).sum();
    let total: f64 = pairs.iter().map(|(_, t)| (t - mean).powi(2)).sum();
    RegressionMetrics {
        rmse: (squared / n).sqrt(),
        mae: pairs.iter().map(|(p, t)| (p - t).abs()).sum::<f64>() / n,
        r2: if total > 0.0 { 1.0 - squared / total } else { f64::NAN },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_ordered_pairs_and_half_the_ties() {
        // Positives scored 0.9, 0.5; negatives 0.5, 0.1: 3 ordered pairs and one tie of 4.
        let (auc, curve) = roc(vec![(0.9, true), (0.5, true), (0.5, false), (0.1, false)]);
        assert!((auc - 3.5 / 4.0).abs() < 1e-12, "{auc}");
        assert_eq!(curve.first(), Some(&(0.0, 0.0)));
        assert_eq!(curve.last(), Some(&(1.0, 1.0)));
    }

    #[test]
    fn classification_and_regression_measures() {
        let m = classification(&[0.8, 0.2, 0.3, 0.7, 0.6, 0.4], 2, &[Some(0), Some(1), Some(1)]);
        assert!((m.accuracy - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.confusion, vec![vec![1, 0], vec![1, 1]]);
        let expected = -(0.8f64.ln() + 0.7f64.ln() + 0.4f64.ln()) / 3.0;
        assert!((m.log_loss - expected).abs() < 1e-12);
        let r = regression(&[1.0, 2.0, 3.0], &[1.0, 2.0, 5.0]);
        assert!((r.rmse - (4.0f64 / 3.0).sqrt()).abs() < 1e-12 && (r.mae - 2.0 / 3.0).abs() < 1e-12);
        // Labels 1, 2, 5 lie 78/9 squared from their mean; the errors sum to 4.
        assert!((r.r2 - (1.0 - 36.0 / 78.0)).abs() < 1e-12, "{}", r.r2);
    }
}
