//! Finding a node's best split: whether it may split at all, then the
//! search over every feature (histograms kept and subtracted) or over
//! randomly drawn ones.

use arbor_kernels::{
    best_split, best_split_above, build_histogram, build_histogram_packed, build_value_histogram_records, child_size,
    count_weight, occupied_bins, random_split, records_constant, Criterion, HistogramTarget, NodeRows, RandomSplit,
    RowRecords, SplitCandidate, SplitConstraints, MAX_RECORD_WIDTH, UNCHARGED_DEGREES,
};

use rand::Rng;
use rayon::prelude::*;

use super::{
    draw_feature, gini_index, impure, node_rows, node_variance_until, Evaluated, Grower, Inputs, Pending,
    FUSED_MIN_RECORDS,
};

impl<'a, 't, R: Rng + Send> Grower<'a, 't, R> {
    /// Whether a node of these statistics and rows at this depth is split
    /// (`docs/algorithms.md`, "Termination criteria"), or becomes a leaf.
    pub(super) fn splittable(&self, p: &Pending) -> bool {
        let criterion = self.data.settings.criterion;
        let (count, weight) = count_weight(&p.stats, criterion);
        if self.data.settings.absolute_error {
            // Its impurity, the absolute error, is known once the rows are ranked.
            return self.may_split(count, weight, p.depth);
        }
        let threshold = self.data.settings.impurity_threshold.max(f64::EPSILON);
        let variance = |mean, w, stop| node_variance_until(&self.data, &self.records, self.rows, p, (mean, w, stop));
        self.may_split(count, weight, p.depth) && impure(&p.stats, self.data.target, criterion, variance, threshold)
    }

    pub(super) fn may_split(&self, count: f64, weight: f64, depth: usize) -> bool {
        self.data.settings.may_split(count, weight, depth)
    }

    /// Finds a node's split: `best` is `None` when the node must be a leaf.
    pub(super) fn evaluate(&mut self, mut p: Pending) -> Evaluated {
        let settings = self.data.settings;
        if !self.splittable(&p) {
            return Evaluated { pending: p, best: None, hist: None };
        }
        let known = p.hist.take();
        let (best, hist) = if settings.absolute_error {
            (self.best_by_absolute_error(&p), None)
        } else if self.data.all_features {
            let (best, hist) = self.best_of_all_features(&p, known);
            (best, Some(hist))
        } else {
            (self.best_of_random_features(&p), None)
        };
        let best = best.filter(|(_, s)| s.merit() >= settings.min_gain);
        Evaluated { pending: p, best, hist }
    }

    /// Every feature's best split from the node's histograms (built, or known by subtraction).
    pub(super) fn best_of_all_features(
        &mut self,
        p: &Pending,
        known: Option<Vec<f64>>,
    ) -> (Option<(usize, SplitCandidate)>, Vec<f64>) {
        let (matrix, stride, criterion) = (self.data.matrix, self.data.stride, self.data.settings.criterion);
        let node_rows = &self.rows[p.start..p.end];
        // Many-category subsets are searched charged one per degree; the
        // node's noise (a pass over its rows) is found only when such a
        // split's gain could beat the best merit so far, then scales the charge.
        let per_degree = SplitConstraints { category_charge: 1.0, ..self.data.settings.constraints };
        let c = if self.data.chargeable { &per_degree } else { &self.data.settings.constraints };
        let settings = self.data.settings;
        let h = known.unwrap_or_else(|| {
            self.buffers.layout.build(
                matrix,
                self.data.target,
                node_rows,
                self.data.weights,
                self.data.counts,
                self.data.rowwise,
            )
        });
        let layout = &self.buffers.layout;
        let candidates: Vec<Option<SplitCandidate>> = (0..matrix.n_features())
            .into_par_iter()
            .with_min_len(4)
            .map(|f| {
                let on_f;
                let c = match &p.limits {
                    Some(limits) if !settings.interactions.allows(&limits.path, f) => return None,
                    Some(limits) => {
                        on_f = settings.on_feature(c, f, limits.bounds);
                        &on_f
                    }
                    None => c,
                };
                let fh = layout.feature(&h, f);
                (occupied_bins(fh, stride, criterion) >= 2)
                    .then(|| best_split(fh, stride, criterion, c, matrix.mapper(f).is_categorical()))
                    .flatten()
            })
            .collect();
        // The highest merit wins; on a tie, the lowest feature index.
        let mut best: Option<(usize, SplitCandidate)> = None;
        let mut noise_charge = None;
        for (f, candidate) in candidates.into_iter().enumerate() {
            if let Some(candidate) = candidate {
                offer(&mut best, f, candidate, &mut noise_charge, || {
                    charged_constraints(&self.data, &self.records, self.rows, p).category_charge
                });
            }
        }
        (best, h)
    }

    /// `docs/algorithms.md`, "Tree building strategies": `m` features drawn without replacement (constant ones do not
    /// count), each with its best split or, for the random splitter, a random one.
    pub(super) fn best_of_random_features(&mut self, p: &Pending) -> Option<(usize, SplitCandidate)> {
        let (matrix, stride, settings) = (self.data.matrix, self.data.stride, self.data.settings);
        let criterion = settings.criterion;
        let n_features = matrix.n_features();
        let fused = self.sum_drawn_features(p);
        let node_rows = node_rows(self.rows, &self.records, p);
        // The charge of many-category subsets needs the node's noise (a pass
        // over the rows, for MSE). Such a feature is searched charged one per
        // degree; the noise is found only when its gain could beat the best
        // merit so far (the charge only lowers it), then scales the charge.
        let per_degree = SplitConstraints { category_charge: 1.0, ..settings.constraints };
        let mut noise_charge = None;
        let mut best: Option<(usize, SplitCandidate)> = None;
        let mut visited = 0;
        let pair_split = self.records.is_some() && self.data.keys.is_some() && p.end - p.start == 2;
        for i in 0..n_features {
            if visited >= settings.features_per_node {
                break;
            }
            let Some(rng) = self.rng.as_deref_mut() else {
                unreachable!("subtrees grown apart scan every feature: they never draw one");
            };
            if i >= fused {
                draw_feature(&mut self.buffers.perm, i, rng);
            }
            let f = self.buffers.perm[i];
            if p.limits.as_ref().is_some_and(|limits| !settings.interactions.allows(&limits.path, f)) {
                continue; // not allowed on this path: does not count towards features_per_node
            }
            let mapper = matrix.mapper(f);
            let n_bins = mapper.n_bins();
            let categorical = mapper.is_categorical();
            let charged = categorical && self.data.chargeable && n_bins > UNCHARGED_DEGREES + 2;
            let c = if charged { &per_degree } else { &settings.constraints };
            let on_f;
            let c = match &p.limits {
                Some(limits) => {
                    on_f = settings.on_feature(c, f, limits.bounds);
                    &on_f
                }
                None => c,
            };
            // Only a gain above the best merit so far can win (a charge only lowers it).
            let floor = best.as_ref().map_or(f64::NEG_INFINITY, |(_, b)| b.merit());
            let candidate = if settings.random_splitter {
                let node = NodeRows {
                    rows: node_rows,
                    weights: self.data.weights,
                    counts: self.data.counts,
                    target: self.data.target,
                };
                match random_split(matrix.column(f), mapper, node, criterion, c, &mut || rng.random::<f64>()) {
                    RandomSplit::Constant => continue, // does not count towards features_per_node
                    RandomSplit::Tried(candidate) => candidate,
                }
            } else if self.records.as_ref().is_some_and(|records| {
                i >= fused && records_constant(records.records(p.start..p.end), records.width(), f)
            }) {
                continue; // constant here, found without a histogram: does not count either
            } else if pair_split && best.is_some() {
                // Two records of whole class counts: every feature that tells
                // them apart sends one each way, for the same gain to the
                // bit; the first such split stands, the others count as tried.
                visited += 1;
                continue;
            } else if self.data.keys.is_some() || p.end - p.start < COMPACT_ROWS_PER_BIN * n_bins {
                // Scan only the bins the rows occupy: integer class counts
                // find them cheaply at any size; other statistics when the
                // rows are few for the bins (see COMPACT_ROWS_PER_BIN).
                match (&self.records, self.data.keys, self.data.packed) {
                    (Some(records), None, _) => {
                        let node = records.records(p.start..p.end);
                        self.buffers.compact.build_values_records(node, records.width(), f)
                    }
                    (Some(_), Some((_, n_classes)), _) if i < fused => {
                        self.buffers.compact.take_counts(self.buffers.record_sums.feature(i), n_classes)
                    }
                    (Some(records), Some((_, n_classes)), _) => {
                        let node = records.records(p.start..p.end);
                        self.buffers.compact.build_counts_records(node, records.width(), f, n_classes, n_bins)
                    }
                    (None, Some((keys, n_classes)), _) => {
                        self.buffers.compact.build_counts(matrix.column(f), node_rows, keys, n_classes, n_bins)
                    }
                    (_, None, Some(stats)) => {
                        self.buffers.compact.build_packed(matrix.column(f), node_rows, stats, stride)
                    }
                    (_, None, None) => self.buffers.compact.build(
                        matrix.column(f),
                        node_rows,
                        self.data.weights,
                        self.data.counts,
                        self.data.target,
                    ),
                }
                if occupied_bins(self.buffers.compact.hist(), stride, criterion) < 2 {
                    continue; // constant here: does not count towards features_per_node
                }
                let hist = self.buffers.compact.hist();
                best_split_above(hist, stride, criterion, c, categorical, floor).map(|mut s| {
                    let unseen_left = child_size(&s.left, criterion) >= child_size(&s.right, criterion);
                    s.rule = s.rule.expand(self.buffers.compact.bins(), n_bins, unseen_left);
                    s
                })
            } else {
                let h = &mut self.buffers.hist[..n_bins * stride];
                match (&self.records, self.data.packed) {
                    (Some(_), _) if i < fused => self.buffers.value_sums.write(i, h),
                    (Some(records), _) => {
                        let node = records.records(p.start..p.end);
                        build_value_histogram_records(node, records.width(), f, &mut self.buffers.wide, h)
                    }
                    (None, Some(stats)) => {
                        build_histogram_packed(matrix.column(f), node_rows, stats, &mut self.buffers.wide, h, stride)
                    }
                    (None, None) => {
                        h.fill(0.0);
                        build_histogram(
                            matrix.column(f),
                            node_rows,
                            self.data.weights,
                            self.data.counts,
                            self.data.target,
                            h,
                        );
                    }
                }
                if occupied_bins(h, stride, criterion) < 2 {
                    continue; // constant here: does not count towards features_per_node
                }
                best_split_above(h, stride, criterion, c, categorical, floor)
            };
            visited += 1;
            if let Some(candidate) = candidate {
                offer(&mut best, f, candidate, &mut noise_charge, || {
                    charged_constraints(&self.data, &self.records, self.rows, p).category_charge
                });
            }
        }
        best
    }

    /// For a large node on row records, draws the first `m` features (those
    /// the loop of [`Grower::best_of_random_features`] draws first, in the
    /// same order from the same stream) and sums their class counts or
    /// value statistics in one pass over the records; returns how many it
    /// drew (0 for other nodes).
    pub(super) fn sum_drawn_features(&mut self, p: &Pending) -> usize {
        let (Some(records), Some(rng)) = (&self.records, self.rng.as_deref_mut()) else {
            return 0;
        };
        let n_features = self.data.matrix.n_features();
        let m = self.data.settings.features_per_node.min(n_features);
        // Smaller nodes list their few bins instead (see `build_counts_records`).
        if self.data.settings.random_splitter || p.end - p.start < FUSED_MIN_RECORDS || m < 2 {
            return 0;
        }
        for i in 0..m {
            draw_feature(&mut self.buffers.perm, i, rng);
        }
        // A record holds fewer features than its width.
        let mut n_bins = [0; MAX_RECORD_WIDTH];
        for (n, &f) in n_bins.iter_mut().zip(&self.buffers.perm[..m]) {
            *n = self.data.matrix.mapper(f).n_bins();
        }
        let node = records.records(p.start..p.end);
        let drawn = &self.buffers.perm[..m];
        match self.data.keys {
            Some((_, n_classes)) => {
                self.buffers.record_sums.fill(node, records.width(), drawn, &n_bins[..m], n_classes)
            }
            None => self.buffers.value_sums.fill(node, records.width(), drawn, &n_bins[..m]),
        }
        m
    }
}

/// A node on value statistics with fewer rows than this many times a
/// feature's bins lists the bins its rows occupy instead of filling and
/// scanning every bin. Measured on one thread (`train_file`, the peer
/// table's forest settings, same model bytes): 2 against the former
/// 1/2 trained synth_reg 2%, diamonds 3% and flights_reg 1% faster; 1
/// and 4 were slower on flights_reg (`docs/performance.md`, "Round three
/// (issue 57): forests' small nodes (project 3)").
const COMPACT_ROWS_PER_BIN: usize = 2;

/// Offers feature `f`'s best split to `best`, where the highest merit wins
/// and, on a tie, the feature offered first. A split searched charged one
/// per degree (a subset of many categories: its charge is positive, since
/// the settings' own constraints carry none) has its charge scaled by the
/// node's noise, which `noise` finds once into `unit`, and only when the
/// split's gain could beat the best merit so far (a charge only lowers it).
pub(crate) fn offer(
    best: &mut Option<(usize, SplitCandidate)>,
    f: usize,
    mut candidate: SplitCandidate,
    unit: &mut Option<f64>,
    noise: impl FnOnce() -> f64,
) {
    if candidate.charge > 0.0 {
        if best.as_ref().is_some_and(|(_, b)| candidate.gain <= b.merit()) {
            return; // cannot win, whatever its charge
        }
        candidate.charge *= *unit.get_or_insert_with(noise);
    }
    if best.as_ref().is_none_or(|(_, b)| candidate.merit() > b.merit()) {
        *best = Some((f, candidate));
    }
}

/// The gain a Newton split of pure noise shows per degree of freedom: on
/// noise, a `k`-way partition's `Σ G_j²/H_j − G²/H` is close to `χ²` with
/// `k − 1` degrees times the rows' gradient variance over their mean
/// hessian, that is `Σ (g − ḡ)² / H` (1 for a calibrated logistic model,
/// the residuals' variance for squared error). `hess` is the node's `H`.
fn gradient_noise(target: &HistogramTarget<'_>, rows: &[u32], hess: f64) -> f64 {
    let gradient = |r: u32| match *target {
        HistogramTarget::Gradients { grad, .. } => grad[r as usize],
        HistogramTarget::Packed { stats } => stats[r as usize][1],
        _ => unreachable!("Newton splits are grown on gradients"),
    };
    if rows.is_empty() || hess <= 0.0 {
        return 0.0;
    }
    // A large node's variance is estimated from an even sample of its rows
    // (every `step`-th: a relative error of about 2% at 4,096 rows), so the
    // pass costs no more than a small node's. Two passes over the sample.
    let step = rows.len().div_ceil(NOISE_SAMPLE);
    let sample = || rows.iter().step_by(step).map(|&r| gradient(r));
    let m = rows.len().div_ceil(step) as f64;
    let mean = sample().sum::<f64>() / m;
    let variance = sample().map(|g| (g - mean) * (g - mean)).sum::<f64>() / m;
    variance * rows.len() as f64 / hess
}

/// Rows of a node that [`gradient_noise`] reads at most (about).
const NOISE_SAMPLE: usize = 4096;

/// The constraints of node `p` with its [`SplitConstraints::category_charge`]:
/// `category_penalty` times the gain a split of pure noise shows per degree
/// of freedom. On noise a `k`-way partition's weighted impurity decrease is
/// close to `χ²` with `k − 1` degrees of freedom times: the node's Gini
/// index, or its weighted variance of the response (MSE); for entropy (in
/// nats) it is `χ²/2` with `(k − 1)(C − 1)` degrees, so `(C − 1)/2` a degree.
/// The tree's `records` or `rows` give the node's variance.
fn charged_constraints(
    data: &Inputs<'_, '_>,
    records: &Option<RowRecords>,
    rows: &[u32],
    p: &Pending,
) -> SplitConstraints {
    let settings = data.settings;
    let (_, w) = count_weight(&p.stats, settings.criterion);
    let noise = match (settings.criterion, data.target) {
        _ if w <= 0.0 => 0.0,
        (Criterion::Gini, &HistogramTarget::Classes { n_classes, .. }) => gini_index(&p.stats, n_classes, w),
        (Criterion::Entropy, &HistogramTarget::Classes { n_classes, .. }) => (n_classes as f64 - 1.0) / 2.0,
        (Criterion::Mse, &HistogramTarget::Values { .. }) => {
            node_variance_until(data, records, rows, p, (p.stats[2] / w, w, f64::INFINITY))
        }
        // Half the Poisson deviance a split of noise gains is about `χ²/2`
        // times the responses' dispersion (variance over mean; 1 for Poisson counts).
        (Criterion::Poisson, &HistogramTarget::Values { .. }) if p.stats[2] > 0.0 => {
            let mean = p.stats[2] / w;
            node_variance_until(data, records, rows, p, (mean, w, f64::INFINITY)) / (2.0 * mean)
        }
        (Criterion::Newton { .. }, target) => gradient_noise(target, node_rows(rows, records, p), p.stats[2]),
        _ => 0.0,
    };
    SplitConstraints { category_charge: settings.category_penalty * noise, ..settings.constraints }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise per degree: about 1 for the gradients of a calibrated logistic
    /// model (their variance is their hessian), the residuals' variance for
    /// squared error; large nodes read a sample and land close.
    #[test]
    fn gradient_noise_is_the_gradient_variance_over_the_mean_hessian() {
        let n = 100_000u32;
        // Labels drawn at probability p from a fixed sequence: gradients p - y, hessians p(1 - p).
        let p = |r: u32| 0.2 + 0.6 * f64::from(r % 7) / 6.0;
        let y = |r: u32| f64::from(u8::from(f64::from(r.wrapping_mul(2_654_435_761) >> 8) / 16_777_216.0 < p(r)));
        let grad: Vec<f64> = (0..n).map(|r| p(r) - y(r)).collect();
        let hess: Vec<f64> = (0..n).map(|r| p(r) * (1.0 - p(r))).collect();
        let target = HistogramTarget::Gradients { grad: &grad, hess: &hess };
        for rows in [(0..n).collect::<Vec<_>>(), (0..n).filter(|r| r % 3 == 0).take(2_000).collect()] {
            let h: f64 = rows.iter().map(|&r| hess[r as usize]).sum();
            let noise = gradient_noise(&target, &rows, h);
            assert!((noise - 1.0).abs() < 0.1, "logistic noise {noise} over {} rows", rows.len());
        }
        // Squared error: residuals of spread 3 around a mean of 50, unit hessians.
        let residual: Vec<f64> = (0..n).map(|r| 50.0 + 3.0 * (f64::from(r % 13) - 6.0) / 3.742).collect();
        let ones = vec![1.0; n as usize];
        let rows: Vec<u32> = (0..n).collect();
        let noise = gradient_noise(&HistogramTarget::Gradients { grad: &residual, hess: &ones }, &rows, f64::from(n));
        assert!((noise - 9.0).abs() < 0.3, "squared-error noise {noise}");
        let packed: Vec<arbor_kernels::RowStats> = residual.iter().map(|&g| [1.0, g, 1.0, 0.0]).collect();
        assert_eq!(noise, gradient_noise(&HistogramTarget::Packed { stats: &packed }, &rows, f64::from(n)));
        assert_eq!(gradient_noise(&target, &[], 0.0), 0.0, "an empty node has no noise");
    }
}
