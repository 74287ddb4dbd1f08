//! Finding a node's best split: whether it may split at all, then the
//! search over every feature (histograms kept and subtracted) or over
//! randomly drawn ones.

use arbor_kernels::{
    best_split, best_split_above, build_histogram, build_histogram_packed, build_value_histogram_records, child_size,
    count_weight, occupied_bins, random_split, records_constant, Criterion, HistogramTarget, NodeRows, RandomSplit,
    RowRecords, SplitCandidate, SplitConstraints, MAX_RECORD_WIDTH,
};

use rand::Rng;
use rayon::prelude::*;

use super::drawn_search::{DrawnSearch, DrawnSplit, Searched};
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
        let best = best_of_features(candidates, || {
            charged_constraints(&self.data, &self.records, self.rows, p).category_charge
        });
        (best, h)
    }

    /// `docs/algorithms.md`, "Tree building strategies": `m` features drawn without replacement (constant ones do not
    /// count), each with its best split or, for the random splitter, a random one.
    pub(super) fn best_of_random_features(&mut self, p: &Pending) -> Option<(usize, SplitCandidate)> {
        let (matrix, stride, settings) = (self.data.matrix, self.data.stride, self.data.settings);
        let criterion = settings.criterion;
        let fused = self.sum_drawn_features(p);
        let node_rows = node_rows(self.rows, &self.records, p);
        let pair_split = self.records.is_some() && self.data.keys.is_some() && p.end - p.start == 2;
        let Some(rng) = self.rng.as_deref_mut() else {
            unreachable!("subtrees grown apart scan every feature: they never draw one");
        };
        let drawn = DrawnSearch {
            settings,
            m: settings.features_per_node,
            drawn: fused,
            available: matrix.n_features(),
            chargeable: self.data.chargeable,
        };
        let mut perm = std::mem::take(&mut self.buffers.perm);
        let (buffers, records, data, rows) = (&mut self.buffers, &self.records, &self.data, &*self.rows);
        // The charge of many-category subsets needs the node's noise (a
        // pass over the rows, for MSE), found only when it could matter.
        let noise = || charged_constraints(data, records, rows, p).category_charge;
        let constrain = p.limits.as_ref().map(|limits| {
            move |f, c: &SplitConstraints| {
                let allowed = settings.interactions.allows(&limits.path, f);
                allowed.then(|| settings.on_feature(c, f, limits.bounds))
            }
        });
        let search = |i: usize, f: usize, c: &SplitConstraints, floor: f64, rng: &mut R| {
            let mapper = matrix.mapper(f);
            let (n_bins, categorical) = (mapper.n_bins(), mapper.is_categorical());
            let candidate = if settings.random_splitter {
                let node =
                    NodeRows { rows: node_rows, weights: data.weights, counts: data.counts, target: data.target };
                match random_split(matrix.column(f), mapper, node, criterion, c, &mut || rng.random::<f64>()) {
                    RandomSplit::Constant => return Searched::Constant,
                    RandomSplit::Tried(candidate) => candidate,
                }
            } else if records.as_ref().is_some_and(|records| {
                i >= fused && records_constant(records.records(p.start..p.end), records.width(), f)
            }) {
                return Searched::Constant; // found without a histogram
            } else if pair_split && floor > f64::NEG_INFINITY {
                // Two records of whole class counts: every feature that tells
                // them apart sends one each way, for the same gain to the
                // bit; the first such split stands (a finite floor is its
                // merit), the others count as tried.
                return Searched::Tried(None);
            } else if data.keys.is_some() || p.end - p.start < COMPACT_ROWS_PER_BIN * n_bins {
                // Scan only the bins the rows occupy: integer class counts
                // find them cheaply at any size; other statistics when the
                // rows are few for the bins (see COMPACT_ROWS_PER_BIN).
                match (records, data.keys, data.packed) {
                    (Some(records), None, _) => {
                        let node = records.records(p.start..p.end);
                        buffers.compact.build_values_records(node, records.width(), f)
                    }
                    (Some(_), Some((_, n_classes)), _) if i < fused => {
                        buffers.compact.take_counts(buffers.record_sums.feature(i), n_classes)
                    }
                    (Some(records), Some((_, n_classes)), _) => {
                        let node = records.records(p.start..p.end);
                        buffers.compact.build_counts_records(node, records.width(), f, n_classes, n_bins)
                    }
                    (None, Some((keys, n_classes)), _) => {
                        buffers.compact.build_counts(matrix.column(f), node_rows, keys, n_classes, n_bins)
                    }
                    (_, None, Some(stats)) => buffers.compact.build_packed(matrix.column(f), node_rows, stats, stride),
                    (_, None, None) => {
                        buffers.compact.build(matrix.column(f), node_rows, data.weights, data.counts, data.target)
                    }
                }
                let hist = buffers.compact.hist();
                if occupied_bins(hist, stride, criterion) < 2 {
                    return Searched::Constant;
                }
                best_split_above(hist, stride, criterion, c, categorical, floor).map(|mut s| {
                    let unseen_left = child_size(&s.left, criterion) >= child_size(&s.right, criterion);
                    s.rule = s.rule.expand(buffers.compact.bins(), n_bins, unseen_left);
                    s
                })
            } else {
                let h = &mut buffers.hist[..n_bins * stride];
                match (records, data.packed) {
                    (Some(_), _) if i < fused => buffers.value_sums.write(i, h),
                    (Some(records), _) => {
                        let node = records.records(p.start..p.end);
                        build_value_histogram_records(node, records.width(), f, &mut buffers.wide, h)
                    }
                    (None, Some(stats)) => {
                        build_histogram_packed(matrix.column(f), node_rows, stats, &mut buffers.wide, h, stride)
                    }
                    (None, None) => {
                        h.fill(0.0);
                        build_histogram(matrix.column(f), node_rows, data.weights, data.counts, data.target, h);
                    }
                }
                if occupied_bins(h, stride, criterion) < 2 {
                    return Searched::Constant;
                }
                best_split_above(h, stride, criterion, c, categorical, floor)
            };
            Searched::Tried(candidate)
        };
        let found = drawn.run(&mut perm, rng, |f| matrix.mapper(f), constrain, search, noise);
        self.buffers.perm = perm;
        match found {
            DrawnSplit::Found(best) => best,
            DrawnSplit::NeedsFeatures(_) => unreachable!("the single-node grower can search every feature"),
        }
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

/// The best of every feature's split (`candidates[f]` for feature `f`):
/// the highest merit, on a tie the lowest feature index, each offered as
/// [`offer`] takes it (`noise` asked at most once). Every grower that
/// searches all features of a node picks its split here.
pub(crate) fn best_of_features(
    candidates: Vec<Option<SplitCandidate>>,
    mut noise: impl FnMut() -> f64,
) -> Option<(usize, SplitCandidate)> {
    let (mut best, mut unit) = (None, None);
    for (f, candidate) in candidates.into_iter().enumerate() {
        if let Some(candidate) = candidate {
            offer(&mut best, f, candidate, &mut unit, &mut noise);
        }
    }
    best
}

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
