//! Gradient boosting grown one tree level at a time over rows held in
//! pieces (a cluster's partitions), none of which sees all the rows.
//!
//! Training is a sequence of steps, each a pass over every piece followed
//! by a decision taken once on the merged result:
//! 1. [`LevelSummary::of`] each piece (label classes and sums, categories,
//!    a sample of numeric values chosen by row hash), merged, then
//!    [`LevelBoosting::begin`] (called by [`crate::Message::start`]):
//!    the bins, the loss and the base score;
//! 2. per tree level, [`LevelBoosting::histograms`] of each piece (its rows
//!    scored by the trees so far, binned, and summed by open node), merged,
//!    then [`LevelBoosting::grow`]: every open node split or made a leaf.
//!
//! Sums are exact (see [`ExactHistograms`]) and the sample is chosen by
//! content, so the model depends on the rows and options alone: not on how
//! the rows are cut into pieces, their order, or which piece is summed
//! first. Bins are fitted on at most [`BIN_SAMPLE_ROWS`] values per
//! feature; with fewer rows they are the single-node bins.

use arbor_kernels::dispatch::{prefetch, row_ahead};
use arbor_kernels::{best_split, count_weight, occupied_bins, HistogramTarget, SplitCandidate, SplitConstraints};
use arbor_quantize::BinMapper;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::data::dataset::TrainingData;
use crate::data::label::{Classes, LabelInfo};
use crate::data::summary::{fitted_features, LevelSummary};
use crate::model::feature::Feature;
use crate::model::node_cover::NodeCover;
use crate::model::tree::{Node, Tree};
use crate::model::{Boosting, Model};
use crate::train::boosting::grow_settings;
use crate::train::distributed::shard::{fingerprint, Derivatives, LevelShard, ShardLabels};
use crate::train::exact_histograms::{
    exact_sums_fit, fits_in_64_bits, float, gradient_lanes, ExactHistograms, Lane, GRADIENT_LANES,
};
use crate::train::grower::{best_of_features, leaf_value, place_split, split_test, GrowSettings};
use crate::train::importance::gain_shares;
use crate::train::loss::{softmax, LossTarget, RowWeights};
use crate::{
    Algorithm, ArborError, CheckedParams, ImportanceKind, Loss, MaxFeatures, Result, Task, TrainParams, Voting,
};

/// Rows per parallel work unit when a piece is scored and summed.
const CHUNK_ROWS: usize = 16_384;

/// A tree of the current round, growing.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct GrowingTree {
    tree: Tree,
    cover: Vec<f32>,
}

/// A node waiting for its split: the growing tree it is in, its index
/// there, its depth, and where its histograms come from: summed from the
/// rows, or (`derived`) its parent's less its sibling's, exactly.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct OpenNode {
    tree: u32,
    node: u32,
    depth: u32,
    /// The parent's place among the previous level's open nodes, and the
    /// summed sibling's place among this level's.
    derived: Option<(u32, u32)>,
}

/// Gradient boosting in progress, between levels: the finished trees, the
/// current round's growing trees and their open nodes. What one step hands
/// the next, as bytes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LevelBoosting {
    task: Task,
    label: LabelInfo,
    pub(crate) features: Vec<Feature>,
    loss: Loss,
    outputs: usize,
    base_score: Vec<f64>,
    n_rounds: usize,
    training_rows: u64,
    skipped_null_labels: u64,
    trees: Vec<Tree>,
    covers: Vec<Vec<f32>>,
    gain_per_feature: Vec<f64>,
    growing: Vec<GrowingTree>,
    open: Vec<OpenNode>,
    /// The previous level's histograms, every open node's: the driver
    /// keeps them to derive each larger child from its parent and its
    /// summed sibling. Never sent to the pieces.
    #[serde(skip)]
    previous: Option<ExactHistograms>,
    /// Which training this is, for the shards kept between its jobs (0 until the driver names it).
    pub(crate) training_id: u64,
}

/// Exact gradient sums of one or more pieces' rows, by open node, feature and bin.
#[derive(Clone, Debug)]
pub struct LevelHistograms(ExactHistograms);

impl LevelHistograms {
    /// Adds another piece's histograms (of the same level).
    pub fn merge(&mut self, other: &LevelHistograms) -> Result<()> {
        self.0.merge(&other.0)
    }

    /// Bytes the sums hold on the heap, for a memory pool's accounting.
    pub fn heap_size(&self) -> usize {
        self.0.heap_size()
    }

    /// The sums as bytes, for an aggregate's state.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.to_bytes()
    }

    /// Histograms read back from [`LevelHistograms::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<LevelHistograms> {
        ExactHistograms::from_bytes(bytes).map(LevelHistograms)
    }
}

impl LevelBoosting {
    /// Why `params` cannot be trained level by level, if they cannot: only
    /// gradient boosting on every row and feature, without early stopping,
    /// is (row and feature sampling, hold-outs and exact splits need the
    /// rows in one place).
    pub fn unsupported(params: &TrainParams) -> Option<String> {
        let bp = &params.boosting;
        if params.algorithm.0 != Algorithm::GradientBoosting {
            return Some("only gradient boosting is trained level by level".into());
        }
        if let Some(loss) = bp.loss.filter(|l| l.refits_leaves()) {
            return Some(format!(
                "loss={} re-fits each leaf to a quantile of its rows' residuals, which needs every row on one node",
                loss.name()
            ));
        }
        let reason = if bp.early_stopping_rounds > 0 {
            "early_stopping_rounds"
        } else if bp.tree.sample_fraction < 1.0 {
            "sample_fraction"
        } else if bp.tree.max_features != MaxFeatures::All {
            "max_features"
        } else if bp.tree.exact {
            "splitter exact"
        } else if !bp.tree.monotone.is_empty() {
            "monotone"
        } else if !bp.tree.interaction_constraints.is_empty() {
            "interaction_constraints"
        } else if params.class_weight != crate::ClassWeight::None || bp.scale_pos_weight != 1.0 {
            "class weights"
        } else if bp.use_quantized_grad {
            "use_quantized_grad"
        } else {
            return None;
        };
        Some(format!("{reason} needs every row on one node"))
    }

    /// The start of training from every piece's merged summary (checked
    /// by [`crate::Message::start`]: rows, options and classes): bins,
    /// loss and base score, and the first round's roots open; or why
    /// boosting must train otherwise.
    pub(crate) fn begin(
        params: &CheckedParams,
        task: Task,
        label: LabelInfo,
        summary: LevelSummary,
    ) -> Result<std::result::Result<LevelBoosting, String>> {
        let bp = &params.boosting;
        let n_classes = label.classes.as_ref().map_or(0, Classes::len);
        // A squared-error gradient is `w·(prediction − y)`, predictions staying
        // near the labels' range: 4·|w·y| leaves room for both and for overshoot.
        let gradient = if task == Task::Regression { 4.0 * summary.largest } else { summary.largest };
        if !exact_sums_fit(gradient, summary.rows) {
            return Ok(Err(format!(
                "label '{}': values up to {:e} (times their weights) are too large to sum exactly over {} rows",
                label.name, summary.largest, summary.rows
            )));
        }
        let loss = bp.resolve_loss(task, n_classes)?;
        let outputs = if loss == Loss::Softmax { n_classes } else { 1 };
        let base_score = match &label.classes {
            Some(classes) => {
                let shares: Vec<f64> =
                    classes.names().iter().map(|c| float(summary.class_weights.get(c).copied().unwrap_or(0))).collect();
                let index: Vec<u32> = (0..shares.len() as u32).collect();
                loss.base_score(&LossTarget::Classes(&index), &index, RowWeights::Given(&shares), outputs)
            }
            None => {
                let mean = float(summary.weighted_sum) / float(summary.weight_total);
                loss.base_score(&LossTarget::Values(&[mean]), &[0], RowWeights::Ones, outputs)
            }
        };
        let features =
            fitted_features(summary.features, summary.categories, summary.samples, &bp.tree.quantize_params())?;
        let mut boosting = LevelBoosting {
            task,
            label,
            loss,
            outputs,
            base_score,
            n_rounds: bp.n_rounds,
            training_rows: summary.rows,
            skipped_null_labels: summary.skipped_null_labels,
            trees: Vec::with_capacity(bp.n_rounds * outputs),
            covers: Vec::with_capacity(bp.n_rounds * outputs),
            gain_per_feature: vec![0.0; features.len()],
            features,
            growing: Vec::new(),
            open: Vec::new(),
            previous: None,
            training_id: 0,
        };
        if boosting.n_rounds > 0 {
            boosting.start_round();
        }
        Ok(Ok(boosting))
    }

    /// Opens the roots of the next round's trees, one per output.
    fn start_round(&mut self) {
        self.growing = (0..self.outputs)
            .map(|_| GrowingTree {
                tree: Tree { nodes: vec![Node::Leaf { value: 0 }], values: Vec::new() },
                cover: vec![0.0],
            })
            .collect();
        self.open = (0..self.outputs as u32).map(|tree| OpenNode { tree, node: 0, depth: 0, derived: None }).collect();
        self.previous = None;
    }

    /// True once every round's trees are grown: [`LevelBoosting::into_model`] then gives the model.
    pub fn is_done(&self) -> bool {
        self.open.is_empty()
    }

    /// Rounds whose trees are finished.
    pub fn rounds_done(&self) -> usize {
        self.trees.len() / self.outputs
    }

    /// Rounds the model will have.
    pub fn n_rounds(&self) -> usize {
        self.n_rounds
    }

    /// Nodes the next level job sums histograms for.
    pub fn open_nodes(&self) -> usize {
        self.open.len()
    }

    /// Open nodes whose histograms the pieces sum (the others are derived).
    fn summed(&self) -> impl Iterator<Item = &OpenNode> {
        self.open.iter().filter(|o| o.derived.is_none())
    }

    /// Every open node's histograms: the summed ones as the pieces gave
    /// them, each derived one as its parent's less its sibling's.
    fn full_histograms(&self, sums: &ExactHistograms) -> Result<ExactHistograms> {
        let bins_per_feature: Vec<usize> = self.features.iter().map(|f| f.mapper.n_bins()).collect();
        let mut full = ExactHistograms::new(&bins_per_feature, self.open.len());
        let mut summed_slot = vec![u32::MAX; self.open.len()];
        for (k, i) in (0..self.open.len()).filter(|&i| self.open[i].derived.is_none()).enumerate() {
            summed_slot[i] = k as u32;
            full.copy_node(i, sums, k);
        }
        for (i, open) in self.open.iter().enumerate() {
            let Some((parent, sibling)) = open.derived else { continue };
            let (Some(previous), Some(&sibling)) = (&self.previous, summed_slot.get(sibling as usize)) else {
                return Err(ArborError::Data("a derived node's parent histograms are not kept".into()));
            };
            if sibling == u32::MAX || parent as usize >= previous.nodes() {
                return Err(ArborError::Data("a derived node's parent or sibling is not summed".into()));
            }
            full.set_difference(i, previous, parent as usize, sums, sibling as usize)?;
        }
        Ok(full)
    }

    /// The open nodes' histograms over one piece of the rows: each row
    /// scored by the finished trees, its derivatives taken, and summed into
    /// the open node it reaches in each growing tree.
    pub fn histograms(&self, data: &TrainingData) -> Result<LevelHistograms> {
        self.shard_histograms(&self.shard(data)?)
    }

    /// A piece's rows prepared for every level's histograms ([`LevelShard`]).
    /// Its labels are checked against the loss here, once a shard, not every round.
    pub(crate) fn shard(&self, data: &TrainingData) -> Result<LevelShard> {
        let shard = LevelShard::new(&self.features, &self.label, data, false)?;
        if let ShardLabels::Values(y) = &shard.labels {
            self.loss.check_labels(&self.label.name, y)?;
        }
        Ok(shard)
    }

    /// [`LevelBoosting::histograms`] over a prepared piece, whose scores
    /// by the trees finished before are kept for the next level.
    pub(crate) fn shard_histograms(&self, shard: &LevelShard) -> Result<LevelHistograms> {
        let round = fingerprint(&self.base_score, &self.trees);
        // The derivatives depend on the loss too (a shard is one training's, but say so).
        let loss = postcard::to_stdvec(&self.loss).expect("a loss always serializes");
        let of_loss = xxhash_rust::xxh3::xxh3_64_with_seed(&loss, round);
        let derivatives = shard.round_derivatives(of_loss, || self.derivatives(shard))?;
        let slot_of = self.summed_slots();
        // 64-bit sums where this piece's magnitudes allow, exact either way.
        let sums = match &*derivatives {
            Derivatives::Narrow(lanes) => {
                self.sum_rows::<i64>(shard, round, &slot_of, |t, r| lanes[t][r], |t, r| prefetch(&lanes[t], r)).widen()
            }
            Derivatives::Wide(outputs) => self.sum_rows::<i128>(
                shard,
                round,
                &slot_of,
                |t, r| gradient_lanes(outputs[t].0[r], outputs[t].1[r]),
                |t, r| {
                    prefetch(&outputs[t].0, r);
                    prefetch(&outputs[t].1, r);
                },
            ),
        };
        Ok(LevelHistograms(sums))
    }

    /// Each growing tree's derivatives for every row of `shard` under the
    /// finished trees' scores ([`LevelBoosting::gradients`]), as the lanes
    /// a level sums: in 64-bit fixed point, converted once for the round's
    /// levels, where this piece's magnitudes allow.
    fn derivatives(&self, shard: &LevelShard) -> Result<Derivatives> {
        let outputs = self.gradients(shard)?;
        let n = shard.n_rows();
        let narrow = outputs.iter().all(|(grad, hess)| {
            let total = |values: &[f64], f: fn(f64) -> f64| values.iter().map(|&v| f(v)).sum::<f64>();
            fits_in_64_bits(&[n as f64, total(grad, f64::abs), total(hess, f64::abs), total(grad, |g| g * g)])
        });
        Ok(match narrow {
            true => Derivatives::Narrow(
                outputs
                    .iter()
                    .map(|(grad, hess)| grad.par_iter().zip(hess).map(|(&g, &h)| gradient_lanes(g, h)).collect())
                    .collect(),
            ),
            false => Derivatives::Wide(outputs),
        })
    }

    /// Each growing tree's gradient and hessian for every row of `shard`
    /// under the finished trees' scores; an error if one could overflow
    /// the level's exact sums.
    fn gradients(&self, shard: &LevelShard) -> Result<Vec<(Vec<f64>, Vec<f64>)>> {
        let n = shard.n_rows();
        let target = match &shard.labels {
            ShardLabels::Classes(labels) => LossTarget::Classes(labels),
            ShardLabels::Values(y) => LossTarget::Values(y),
        };
        let outputs = self.outputs;
        let rows: Vec<u32> = (0..n as u32).collect();
        let weight = RowWeights::of(shard.weights.as_deref());
        let derivatives: Vec<(Vec<f64>, Vec<f64>)> = shard.with_raw_scores(&self.base_score, &self.trees, |raw| {
            let mut proba = Vec::new();
            if self.loss == Loss::Softmax {
                proba = vec![0.0; n * outputs];
                proba.par_chunks_mut(outputs).zip(raw.par_chunks(outputs)).for_each(|(p, r)| softmax(r, p));
            }
            (0..self.growing.len())
                .map(|output| {
                    let (mut grad, mut hess) = (vec![0.0; n], vec![0.0; n]);
                    self.loss
                        .derivatives(&target, &rows, weight, raw, &proba, output, outputs)
                        .write(&mut grad, &mut hess);
                    (grad, hess)
                })
                .collect()
        });
        let rows_total = self.training_rows.max(n as u64);
        for (grad, hess) in &derivatives {
            let worst = grad.iter().chain(hess).map(|d| d.abs()).fold(0.0, f64::max);
            if grad.iter().chain(hess).any(|d| !d.is_finite()) || !exact_sums_fit(worst, rows_total) {
                return Err(ArborError::Data(format!(
                    "label '{}': a gradient of {worst:e} is too large to sum exactly over {rows_total} rows",
                    self.label.name
                )));
            }
        }
        Ok(derivatives)
    }

    /// Each growing tree's summed open nodes by node index, as their
    /// places among the summed nodes (`u32::MAX` elsewhere: rows of a
    /// derived node or a leaf add nothing).
    fn summed_slots(&self) -> Vec<Vec<u32>> {
        let mut slot_of: Vec<Vec<u32>> = self.growing.iter().map(|g| vec![u32::MAX; g.tree.nodes.len()]).collect();
        for (slot, open) in self.summed().enumerate() {
            slot_of[open.tree as usize][open.node as usize] = slot as u32;
        }
        slot_of
    }

    /// Each row's sums (`lanes(tree, row)`) added into the summed open node
    /// it reaches in each growing tree (`slot_of[tree][node]`), in integers
    /// of type `T`; `ahead(tree, row)` prefetches what `lanes` will read.
    fn sum_rows<T: Lane>(
        &self,
        shard: &LevelShard,
        round: u64,
        slot_of: &[Vec<u32>],
        lanes: impl Fn(usize, usize) -> [T; GRADIENT_LANES] + Sync,
        ahead: impl Fn(usize, usize) + Sync,
    ) -> ExactHistograms<T> {
        let n_features = self.features.len();
        let bins_per_feature: Vec<usize> = self.features.iter().map(|f| f.mapper.n_bins()).collect();
        let empty = || ExactHistograms::<T>::new(&bins_per_feature, self.summed().count());
        let growing: Vec<&Tree> = self.growing.iter().map(|g| &g.tree).collect();
        shard.with_node_rows(round, &growing, |grouped| {
            // The summed nodes' rows, node by node, in runs of at most CHUNK_ROWS.
            let mut work: Vec<(usize, usize, &[u32])> = Vec::new();
            for (t, rows) in grouped.iter().enumerate() {
                for (node, run) in rows.runs() {
                    let slot = slot_of[t][node];
                    if slot != u32::MAX {
                        work.extend(run.chunks(CHUNK_ROWS).map(|rows| (t, slot as usize, rows)));
                    }
                }
            }
            work.par_iter()
                .fold(empty, |mut sums, &(t, slot, rows)| {
                    let mut bins = vec![0u16; n_features];
                    for (i, &r) in rows.iter().enumerate() {
                        // A node's rows are scattered over the shard: ask for a later row's line before it is read.
                        if let Some(later) = row_ahead(rows, i) {
                            shard.prefetch_row(later);
                            ahead(t, later);
                        }
                        let r = r as usize;
                        shard.row_bins(r, &mut bins);
                        sums.add_lanes(slot, &bins, lanes(t, r));
                    }
                    sums
                })
                .reduce(empty, |mut a, b| {
                    a.merge(&b).expect("the histograms of one level have one shape");
                    a
                })
        })
    }

    /// Splits every open node by its merged histograms, or makes it a leaf,
    /// as the single-node grower decides; a round whose trees are finished
    /// is closed and the next one's roots opened.
    pub fn grow(&mut self, params: &CheckedParams, sums: &LevelHistograms) -> Result<()> {
        let summed = self.summed().count();
        if sums.0.nodes() != summed {
            return Err(ArborError::Data(format!(
                "histograms of {} nodes for a level of {summed} summed open nodes",
                sums.0.nodes()
            )));
        }
        let full = self.full_histograms(&sums.0)?;
        let sums = &full;
        let settings = grow_settings(&params.boosting, self.features.len());
        let criterion = settings.criterion;
        let mappers: Vec<&BinMapper> = self.features.iter().map(|f| &f.mapper).collect();
        let per_degree = SplitConstraints { category_charge: 1.0, ..settings.constraints };
        let constraints =
            if settings.charges_categories(mappers.iter().copied()) { &per_degree } else { &settings.constraints };
        let mut next = Vec::new();
        for (slot, open) in std::mem::take(&mut self.open).into_iter().enumerate() {
            let stats = sums.node_stats(slot);
            let (count, weight) = count_weight(&stats, criterion);
            let mut best: Option<(usize, SplitCandidate)> = None;
            if settings.may_split(count, weight, open.depth as usize) {
                let candidates: Vec<Option<SplitCandidate>> = (0..mappers.len())
                    .into_par_iter()
                    .map(|f| {
                        let hist = sums.feature(slot, f, 3);
                        (occupied_bins(&hist, 3, criterion) >= 2)
                            .then(|| best_split(&hist, 3, criterion, constraints, mappers[f].is_categorical()))
                            .flatten()
                    })
                    .collect();
                best = best_of_features(candidates, || settings.category_penalty * sums.node_noise(slot, criterion));
                best = best.filter(|(_, s)| s.merit() >= settings.min_gain);
            }
            let growing = &mut self.growing[open.tree as usize];
            let node = open.node as usize;
            let Some((f, split)) = best else {
                make_leaf(growing, node, &stats, &settings);
                continue;
            };
            self.gain_per_feature[f] += split.gain.max(0.0);
            let test = split_test(&split.rule, |bin| mappers[f].threshold(bin));
            let left = place_split(&mut growing.tree.nodes, &mut growing.cover, node, f, test, weight as f32);
            let mut opened = Vec::new();
            for (child, child_stats) in [(left, &split.left), (left + 1, &split.right)] {
                let (count, weight) = count_weight(child_stats, criterion);
                if settings.may_split(count, weight, open.depth as usize + 1) {
                    opened.push((child as u32, count));
                } else {
                    make_leaf(growing, child, child_stats, &settings);
                }
            }
            // Both children open: the pieces sum the smaller, the larger is the parent less it.
            let first = next.len() as u32;
            let smaller = match opened[..] {
                [(_, a), (_, b)] => Some(if b < a { 1 } else { 0 }),
                _ => None,
            };
            for (k, &(child, _)) in opened.iter().enumerate() {
                let derived = smaller.filter(|&s| s != k).map(|s| (slot as u32, first + s as u32));
                next.push(OpenNode { tree: open.tree, node: child, depth: open.depth + 1, derived });
            }
        }
        self.open = next;
        self.previous = Some(full);
        if self.open.is_empty() {
            for growing in std::mem::take(&mut self.growing) {
                self.trees.push(growing.tree);
                self.covers.push(growing.cover);
            }
            if self.rounds_done() < self.n_rounds {
                self.start_round();
            }
        }
        Ok(())
    }

    /// The finished model (see [`LevelBoosting::is_done`]).
    pub fn into_model(self, params: &CheckedParams) -> Result<Model> {
        if !self.is_done() {
            return Err(ArborError::Data(format!(
                "level-wise training stopped after {} of {} rounds",
                self.rounds_done(),
                self.n_rounds
            )));
        }
        let n_features = self.features.len();
        let importance = (params.importance != ImportanceKind::None).then(|| gain_shares(self.gain_per_feature));
        Ok(Model {
            task: self.task,
            algorithm: Algorithm::GradientBoosting,
            label: self.label,
            features: self.features,
            trees: self.trees.into(),
            voting: Voting::Weighted,
            importance,
            oob_error: None,
            params: params.describe(self.task, n_features, Some(self.loss)),
            training_rows: self.training_rows,
            skipped_null_labels: self.skipped_null_labels,
            boosting: Some(Boosting {
                loss: self.loss,
                base_score: self.base_score,
                outputs: self.outputs,
                early_stopping: None,
            }),
            cover: Some(NodeCover::new(self.covers)),
        })
    }

    /// The state as bytes, for the next step.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("training state always serializes")
    }

    /// A state read back from [`LevelBoosting::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<LevelBoosting> {
        let state: LevelBoosting = postcard::from_bytes(bytes)
            .map_err(|e| ArborError::Data(format!("level-wise training state is corrupt: {e}")))?;
        if !state.well_formed() {
            return Err(ArborError::Data("level-wise training state is corrupt: its trees do not fit together".into()));
        }
        Ok(state)
    }

    /// Whether every index in the state points where it may: children after
    /// their parent and inside the tree, features and leaf values that exist
    /// (open nodes have no value yet), one base score per output.
    pub(crate) fn well_formed(&self) -> bool {
        let n_features = self.features.len() as u32;
        let tree_fits = |tree: &Tree, open: &dyn Fn(usize) -> bool| {
            tree.nodes.iter().enumerate().all(|(i, node)| match *node {
                Node::Split { feature, left, right, .. } => {
                    feature < n_features
                        && left as usize > i
                        && right as usize > i
                        && (right as usize) < tree.nodes.len()
                }
                Node::Leaf { value } => (value as usize) < tree.values.len() || open(i),
            })
        };
        let open_fits = self
            .open
            .iter()
            .all(|o| self.growing.get(o.tree as usize).is_some_and(|g| (o.node as usize) < g.tree.nodes.len()));
        self.outputs > 0
            && self.base_score.len() == self.outputs
            && self.trees.len() % self.outputs == 0
            && self.covers.len() == self.trees.len()
            && self.gain_per_feature.len() == self.features.len()
            && self.growing.len() <= self.outputs
            && open_fits
            && self.trees.iter().all(|t| tree_fits(t, &|_| false))
            && self.growing.iter().enumerate().all(|(g, growing)| {
                growing.cover.len() == growing.tree.nodes.len()
                    && tree_fits(&growing.tree, &|i| {
                        self.open.iter().any(|o| o.tree as usize == g && o.node as usize == i)
                    })
            })
    }
}

/// Makes node `node` a leaf of `stats`' value.
fn make_leaf(growing: &mut GrowingTree, node: usize, stats: &[f64], settings: &GrowSettings) {
    let offset = growing.tree.values.len();
    let gradients = HistogramTarget::Gradients { grad: &[], hess: &[] };
    leaf_value(stats, &gradients, settings.criterion, settings.leaf_scale, &mut growing.tree.values);
    growing.tree.nodes[node] = Node::Leaf { value: offset as u32 };
    growing.cover[node] = count_weight(stats, settings.criterion).1 as f32;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array, RecordBatch};

    use super::*;
    use crate::train::distributed::driver::Outcome;
    use crate::train::distributed::in_memory::InMemory;
    use crate::train::distributed::protocol::Message;
    use crate::train::distributed::state::LevelState;
    use crate::train::distributed::test_rows::{self, rmse, trainer};

    /// Rows with a categorical feature of twelve categories and a response
    /// whose noise repeats every seven rows.
    fn table(n: usize) -> RecordBatch {
        test_rows::table(0..n, 12, |i| (i % 7) as f64 / 3.0)
    }

    /// Boosting's start from `summary`, or why it trains on one node.
    fn begin(params: &CheckedParams, summary: LevelSummary) -> std::result::Result<LevelBoosting, String> {
        match Message::start(params, summary).unwrap() {
            Message::Grow(state) => match *state {
                LevelState::Boosting(boosting) => Ok(boosting),
                LevelState::Forest(_) => panic!("a forest"),
            },
            Message::OneNode(reason) => Err(reason),
            other => panic!("started with a {}", other.kind()),
        }
    }

    /// Trains level by level on the pieces `cuts` makes of `batch` (row
    /// ranges), merging the pieces' results in the order given, through
    /// the driver and the in-memory backend.
    fn train_in_pieces(options: &str, label: &str, batch: &RecordBatch, cuts: &[(usize, usize)]) -> Model {
        let trainer = trainer(options, label);
        let pieces: Vec<TrainingData> =
            cuts.iter().map(|&(at, len)| trainer.training_data(vec![batch.slice(at, len)]).unwrap()).collect();
        match InMemory::new(pieces, trainer.params().check().unwrap()).train().unwrap() {
            Outcome::Model(model) => *model,
            Outcome::OneNode(reason) => panic!("trains on one node: {reason}"),
        }
    }

    /// The model depends on the rows alone: one piece, or three of any
    /// sizes merged in another order, give the same bytes.
    #[test]
    fn pieces_and_their_order_do_not_change_the_model() {
        let batch = table(3000);
        for (options, label) in
            [("algorithm=gradient-boosting n_rounds=8", "y"), ("algorithm=gradient-boosting n_rounds=4", "class")]
        {
            let whole = train_in_pieces(options, label, &batch, &[(0, 3000)]);
            let pieces = train_in_pieces(options, label, &batch, &[(2100, 900), (0, 1234), (1234, 866)]);
            assert_eq!(whole.to_bytes(), pieces.to_bytes(), "{options} {label}");
            assert_eq!(whole.trees().len(), if label == "y" { 8 } else { 12 });
        }
    }

    /// `table(n)` with `count`, a label of whole numbers >= 0 made from `y`
    /// (for the log-link losses, which refuse negative labels).
    fn with_counts(batch: &RecordBatch) -> RecordBatch {
        let y = batch.column_by_name("y").unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
        let counts: Float64Array = y.values().iter().map(|v| Some((v / 4.0).max(0.0).round())).collect();
        let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(arrow::datatypes::Field::new("count", arrow::datatypes::DataType::Float64, false)));
        let mut columns = batch.columns().to_vec();
        columns.push(Arc::new(counts));
        RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns).unwrap()
    }

    /// The regression losses beyond squared error train level by level as
    /// they do on one node: pieces in any order give the same bytes, and the
    /// fit is one node's within a hundredth; the leaf-refitting losses train
    /// on one node; a label a loss refuses fails by name on the pieces too.
    #[test]
    fn other_losses_train_level_by_level() {
        let batch = with_counts(&table(3000));
        for (options, label) in [
            ("algorithm=gradient-boosting n_rounds=6 loss=huber huber_delta=2", "y"),
            ("algorithm=gradient-boosting n_rounds=6 loss=poisson", "count"),
            ("algorithm=gradient-boosting n_rounds=6 loss=tweedie tweedie_power=1.2", "count"),
        ] {
            let whole = train_in_pieces(options, label, &batch, &[(0, 3000)]);
            let pieces = train_in_pieces(options, label, &batch, &[(2100, 900), (0, 1234), (1234, 866)]);
            assert_eq!(whole.to_bytes(), pieces.to_bytes(), "{options}");
            let single = trainer(options, label).fit(std::slice::from_ref(&batch)).unwrap();
            let loss = single.boosting().unwrap().loss;
            assert_eq!(whole.boosting().unwrap().loss, loss, "{options}");
            let truth = batch.column_by_name(label).unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
            let rows: Vec<u32> = (0..3000).collect();
            let deviance = |model: &Model| {
                let predicted = model.score(&batch).unwrap();
                // Back to raw scores: the log links predict exp(raw).
                let raw: Vec<f64> =
                    predicted.values().iter().map(|&p| if loss.is_log_link() { p.ln() } else { p }).collect();
                loss.value(&LossTarget::Values(truth.values()), &rows, RowWeights::Ones, &raw, 1)
            };
            let (a, b) = (deviance(&single), deviance(&whole));
            assert!((a - b).abs() <= 0.01 * a, "{options}: one node {a}, level by level {b}");
        }
        for loss in ["quantile", "absolute"] {
            let params = TrainParams::parse_options(&format!("algorithm=gradient-boosting loss={loss}")).unwrap();
            let reason = LevelBoosting::unsupported(&params).unwrap();
            assert!(reason.contains(&format!("loss={loss} re-fits each leaf")), "{reason}");
        }
        let trainer = trainer("algorithm=gradient-boosting n_rounds=2 loss=poisson", "y");
        let params = trainer.params().check().unwrap();
        let piece = trainer.training_data(vec![batch.clone()]).unwrap();
        let Ok(state) = begin(&params, LevelSummary::of(&piece)) else { panic!("grows") };
        let err = state.histograms(&piece).unwrap_err().to_string();
        assert!(err.contains("label 'y': loss=poisson needs labels >= 0"), "{err}");
    }

    /// On rows fewer than the bin sample, bins are the single-node bins and
    /// the trees differ only where sums' last bits break ties: the fit is
    /// as good as single-node boosting's.
    #[test]
    fn level_wise_boosting_fits_as_single_node_boosting_does() {
        let batch = table(4000);
        let options = "algorithm=gradient-boosting n_rounds=30 max_depth=4";
        let single = trainer(options, "y").fit(std::slice::from_ref(&batch)).unwrap();
        let levels = train_in_pieces(options, "y", &batch, &[(0, 1500), (1500, 2500)]);
        assert_eq!(single.features(), levels.features());
        let (a, b) = (rmse(&single, &batch), rmse(&levels, &batch));
        assert!((a - b).abs() <= 0.01 * a, "single-node RMSE {a}, level-wise {b}");
        assert_eq!(levels.trees().len(), 30);
        // Classes: the same accuracy within a row in a hundred.
        let options = "algorithm=gradient-boosting n_rounds=10";
        let single = trainer(options, "class").fit(std::slice::from_ref(&batch)).unwrap();
        let levels = train_in_pieces(options, "class", &batch, &[(0, 3000), (3000, 1000)]);
        let truth = batch.column_by_name("class").unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
        let accuracy = |model: &Model| {
            let classes = model.score(&batch).unwrap().class_index();
            classes.iter().zip(truth.values()).filter(|(&c, &t)| c as i64 == t).count() as f64 / 4000.0
        };
        let (a, b) = (accuracy(&single), accuracy(&levels));
        assert!((a - b).abs() <= 0.01, "single-node accuracy {a}, level-wise {b}");
    }

    /// Shards kept from level to level (their scores extended by each
    /// round's trees, not recomputed) give the model rows read every level
    /// give; a shard whose kept scores belong to other trees (another
    /// training's) scores from the start, so is never wrong.
    #[test]
    fn kept_shards_give_the_bytes_of_rows_read_every_level() {
        let batch = table(3000);
        for (options, label) in [
            ("algorithm=gradient-boosting n_rounds=6 max_depth=3", "y"),
            ("algorithm=gradient-boosting n_rounds=3", "class"),
        ] {
            let read = train_in_pieces(options, label, &batch, &[(0, 1800), (1800, 1200)]);
            let trainer = trainer(options, label);
            let params = trainer.params().check().unwrap();
            let pieces: Vec<TrainingData> = [(0, 1800), (1800, 1200)]
                .iter()
                .map(|&(at, n)| trainer.training_data(vec![batch.slice(at, n)]).unwrap())
                .collect();
            let mut summary = LevelSummary::default();
            pieces.iter().for_each(|p| summary.merge(LevelSummary::of(p)).unwrap());
            let Ok(mut state) = begin(&params, summary.clone()) else { panic!("grows") };
            let shards: Vec<LevelShard> = pieces.iter().map(|p| state.shard(p).unwrap()).collect();
            // Another training's trees leave scores in the first shard first.
            let other = train_in_pieces(
                "algorithm=gradient-boosting n_rounds=2 learning_rate=0.9",
                label,
                &batch,
                &[(0, 3000)],
            );
            let other_trees: Vec<Tree> = other.trees().iter().cloned().collect();
            shards[0].with_raw_scores(&state.base_score, &other_trees, |_| ());
            // And another training's first levels leave rows grouped by its nodes, and its derivatives.
            let deeper = test_rows::trainer(&format!("{options} max_depth=5 learning_rate=0.9 lambda=3"), label);
            let deeper_params = deeper.params().check().unwrap();
            let Ok(mut other_state) = begin(&deeper_params, summary.clone()) else { panic!("grows") };
            for _ in 0..2 {
                let sums = other_state.shard_histograms(&shards[0]).unwrap();
                other_state.grow(&deeper_params, &sums).unwrap();
            }
            while !state.is_done() {
                let mut sums: Option<LevelHistograms> = None;
                for shard in &shards {
                    let part = state.shard_histograms(shard).unwrap();
                    match sums.as_mut() {
                        Some(sums) => sums.merge(&part).unwrap(),
                        None => sums = Some(part),
                    }
                }
                state.grow(&params, &sums.unwrap()).unwrap();
            }
            assert_eq!(state.into_model(&params).unwrap().to_bytes(), read.to_bytes(), "{options} {label}");
        }
    }

    /// The pieces sum only the smaller child of each split; the larger is
    /// its parent's histograms less the smaller's, exactly: the model is
    /// the bytes every node's summed histograms gave (their hashes, taken
    /// before siblings were derived, when every open node was summed), and
    /// the pieces sum fewer nodes than are open.
    #[test]
    fn siblings_by_subtraction_give_the_bytes_of_every_node_summed() {
        let batch =
            crate::train::distributed::test_rows::table(0..5000, 9, |i| ((i * 2_654_435_761) % 1000) as f64 / 250.0);
        for (options, label, hash) in [
            ("algorithm=gradient-boosting n_rounds=6", "y", 0x2e60_a561_0b6c_a182_u64),
            ("algorithm=gradient-boosting n_rounds=4", "class", 0xf586_e0ea_3ff3_168c),
        ] {
            let model = train_in_pieces(options, label, &batch, &[(0, 3000), (3000, 2000)]);
            assert_eq!(xxhash_rust::xxh3::xxh3_64(&model.to_bytes()), hash, "{options} {label}");
        }
        let trainer = trainer("algorithm=gradient-boosting n_rounds=1 max_depth=4", "y");
        let params = trainer.params().check().unwrap();
        let data = trainer.training_data(vec![batch]).unwrap();
        let Ok(mut state) = begin(&params, LevelSummary::of(&data)) else { panic!("grows") };
        let mut fewer = false;
        while !state.is_done() {
            fewer |= state.summed().count() < state.open_nodes();
            let sums = state.histograms(&data).unwrap();
            state.grow(&params, &sums).unwrap();
        }
        assert!(fewer, "some level summed fewer nodes than were open");
    }

    /// A piece's sums in 64-bit lanes, widened, are the bits 128-bit lanes
    /// give, at every level; and labels too large for 64 bits take 128.
    #[test]
    fn sums_in_64_bits_are_the_sums_in_128() {
        for (scale, narrow) in [(1.0, true), (1e6, false)] {
            let batch = scaled(3000, scale);
            let trainer = trainer("algorithm=gradient-boosting n_rounds=3 max_depth=3", "y");
            let params = trainer.params().check().unwrap();
            let data = trainer.training_data(vec![batch]).unwrap();
            let Ok(mut state) = begin(&params, LevelSummary::of(&data)) else { panic!("grows") };
            let shard = state.shard(&data).unwrap();
            while !state.is_done() {
                let outputs = state.gradients(&shard).unwrap();
                let slot_of = state.summed_slots();
                let round = fingerprint(&state.base_score, &state.trees);
                let of_floats = |t: usize, r: usize| gradient_lanes(outputs[t].0[r], outputs[t].1[r]);
                let wide = state.sum_rows::<i128>(&shard, round, &slot_of, of_floats, |_, _| {});
                match state.derivatives(&shard).unwrap() {
                    Derivatives::Narrow(lanes) => {
                        assert!(narrow, "scale {scale} summed in 64 bits");
                        let kept = state.sum_rows::<i64>(&shard, round, &slot_of, |t, r| lanes[t][r], |_, _| {});
                        assert_eq!(kept.widen(), wide, "lanes kept for the round are the lanes of each level");
                        let of_floats = |t: usize, r: usize| gradient_lanes(outputs[t].0[r], outputs[t].1[r]);
                        let each_level = state.sum_rows::<i64>(&shard, round, &slot_of, of_floats, |_, _| {});
                        assert_eq!(each_level.widen(), wide);
                    }
                    Derivatives::Wide(_) => assert!(!narrow, "scale {scale} summed in 128 bits"),
                }
                let sums = state.shard_histograms(&shard).unwrap();
                assert_eq!(sums.0, wide, "the level's sums are the 128-bit sums");
                state.grow(&params, &sums).unwrap();
            }
        }
    }

    /// Options that need the rows in one place say so; corrupt state is an error.
    #[test]
    fn unsupported_options_and_corrupt_state_are_refused() {
        let params = TrainParams::parse_options("algorithm=gradient-boosting sample_fraction=0.5").unwrap();
        assert!(LevelBoosting::unsupported(&params).unwrap().contains("sample_fraction"));
        assert!(LevelBoosting::unsupported(&TrainParams::default()).is_some());
        assert!(LevelBoosting::from_bytes(&[1, 2, 3]).is_err());
        // A state whose tree points outside itself is refused, not walked.
        let batch = table(500);
        let trainer = trainer("algorithm=gradient-boosting n_rounds=2", "y");
        let params = trainer.params().check().unwrap();
        let data = trainer.training_data(vec![batch]).unwrap();
        let Ok(mut state) = begin(&params, LevelSummary::of(&data)) else { panic!("grows") };
        state.grow(&params, &state.histograms(&data).unwrap()).unwrap();
        assert!(LevelBoosting::from_bytes(&state.to_bytes()).is_ok());
        let Node::Split { right, .. } = &mut state.growing[0].tree.nodes[0] else { panic!("the root split") };
        *right = 99;
        let error = LevelBoosting::from_bytes(&state.to_bytes()).unwrap_err().to_string();
        assert!(error.contains("corrupt"), "{error}");
        assert!(LevelSummary::from_bytes(&[0xff; 9]).is_err());
        assert!(LevelHistograms::from_bytes(&[7; 20]).is_err());
    }

    /// `table`'s rows with the regression label multiplied by `scale`.
    fn scaled(n: usize, scale: f64) -> RecordBatch {
        let batch = table(n);
        let y = batch.column_by_name("y").unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
        let y: Float64Array = y.values().iter().map(|v| Some(v * scale)).collect();
        let mut columns = batch.columns().to_vec();
        columns[3] = Arc::new(y);
        RecordBatch::try_new(batch.schema(), columns).unwrap()
    }

    /// Labels whose gradients could overflow the exact sums train on one
    /// node (the summary tells before any level runs); a piece whose
    /// gradients outgrow what the summary promised is an error naming the
    /// label, never a wrapped sum.
    #[test]
    fn labels_too_large_for_exact_sums_are_refused() {
        let trainer = trainer("algorithm=gradient-boosting n_rounds=2", "y");
        let params = trainer.params().check().unwrap();
        let start = |scale: f64| {
            let data = trainer.training_data(vec![scaled(500, scale)]).unwrap();
            begin(&params, LevelSummary::of(&data))
        };
        // Labels near 4e10 fit over 500 rows; near 4e13 they do not.
        assert!(start(1e9).is_ok());
        let Err(reason) = start(1e12) else { panic!("4e13 labels cannot be summed exactly") };
        assert!(reason.contains("label 'y'") && reason.contains("too large"), "{reason}");
        let Ok(state) = start(1.0) else { panic!("grows") };
        let huge = trainer.training_data(vec![scaled(500, 1e12)]).unwrap();
        let error = state.histograms(&huge).unwrap_err().to_string();
        assert!(error.contains("label 'y'") && error.contains("too large"), "{error}");
    }
}
