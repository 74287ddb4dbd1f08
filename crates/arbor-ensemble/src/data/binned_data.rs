//! Training rows as bins: what training reads, built once and fitted on as
//! often as asked.
//!
//! Rows are binned as they are read, in two passes over a [`BatchSource`]:
//! the first decides the bins (a content-chosen sample of each numeric
//! feature, every category, the label's classes: [`LevelSummary`]), the
//! second bins each batch as it arrives and drops its values. So training
//! holds one byte per value (at up to 256 bins), never the table's floats.
//! The rows are then put in their canonical order, a function of their
//! bins, label and weight alone (rows equal in all three are
//! interchangeable to training), so a model does not depend on the order
//! or the batches its rows came in.
//!
//! `split_method=exact` places thresholds between raw values and needs every
//! distinct value: its binned data keeps the raw columns beside the bins.

use std::borrow::Cow;

use arbor_quantize::{BinColumn, BinMapper, BinnedMatrix, FeatureColumn, QuantizeParams};
use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use rayon::prelude::*;

use crate::data::canonical_order::binned_order;
use crate::data::dataset::{
    check_features, feature_names, field_list, gather, index_of, target_len, ColumnRoles, FeatureSpec, LabelRows,
    NamedColumn, RowColumns, TrainingData,
};
use crate::data::label::{LabelInfo, Target};
use crate::data::summary::{
    add_column_hashes, column_sample, finish_row_hashes, fitted_features, global_labels, LevelSummary, SummaryStream,
    BIN_SAMPLE_ROWS,
};
use crate::model::feature::Feature;
use crate::{ArborError, Result, Task};

/// Record batches that can be read more than once, in the same order each
/// time: what [`BinnedData`] reads in two passes. In-memory batches are
/// one; `arbor train` reads a Parquet file as another.
pub trait BatchSource: Sync {
    /// The batches' schema.
    fn schema(&self) -> SchemaRef;

    /// A pass over every batch, from the first; each call starts a new pass.
    fn batches(&self) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send + '_>>;
}

/// Batches held in memory.
impl BatchSource for [RecordBatch] {
    fn schema(&self) -> SchemaRef {
        self.first().map_or_else(|| std::sync::Arc::new(Schema::empty()), RecordBatch::schema)
    }

    fn batches(&self) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send + '_>> {
        Ok(Box::new(self.iter().cloned().map(Ok)))
    }
}

/// Training rows binned: each feature's bins and codes, the target and
/// the weights, in canonical order. Built by [`crate::Trainer::bin`] (or
/// [`BinnedData::read`]); [`crate::Trainer::fit_binned`] trains on it as
/// often as asked, with any parameters that keep its bins.
#[derive(Clone, Debug)]
pub struct BinnedData {
    pub(crate) task: Task,
    pub(crate) label: LabelInfo,
    /// The features as the model will know them: names, types and bins.
    pub(crate) features: Vec<Feature>,
    /// Each feature's codes, by row.
    pub(crate) matrix: BinnedMatrix,
    pub(crate) target: Target,
    pub(crate) weights: Option<Vec<f64>>,
    /// Each row's query id (ranking), when a group column was given.
    pub(crate) groups: Option<Vec<i64>>,
    pub(crate) skipped_null_labels: usize,
    /// Each row's position among the input rows with a non-null label.
    pub(crate) input_row: Vec<u32>,
    /// How finely the features were binned.
    pub(crate) quantize: QuantizeParams,
    /// `split_method=exact`: the raw columns, in the rows' order.
    pub(crate) raw: Option<Vec<FeatureColumn>>,
}

impl BinnedData {
    /// Reads `source` in two passes (see the module's documentation): the
    /// label, features and weight of `roles`, binned as `quantize` says.
    /// `task` defaults to the one the label's type implies.
    pub fn read(
        source: &(impl BatchSource + ?Sized),
        roles: &ColumnRoles,
        task: Option<Task>,
        quantize: QuantizeParams,
    ) -> Result<BinnedData> {
        let schema = source.schema();
        let pieces = Pieces { schema: &schema, roles, task };

        // First pass: the summary the bins are fitted on.
        let mut stream = SummaryStream::default();
        let mut zero_weights = false;
        for batch in source.batches()? {
            match pieces.read(&batch?)? {
                Piece::Rows(data) => stream.add(&data)?,
                Piece::NullLabels(rows) => stream.add_null_labels(rows as u64)?,
                Piece::ZeroWeights => zero_weights = true,
                Piece::Empty => {}
            }
        }
        let summary = stream.finish().filter(|s| s.label.is_some());
        let Some(summary) = summary else {
            return Err(pieces.no_rows(source, zero_weights));
        };
        let rows = usize::try_from(summary.rows).map_err(|_| too_many_rows(summary.rows))?;
        if u32::try_from(rows).is_err() {
            return Err(too_many_rows(summary.rows));
        }
        let task = summary.task.unwrap_or(Task::Classification);
        let label = summary.label.clone().expect("filtered above");
        let skipped_null_labels = summary.skipped_null_labels as usize;
        let features = fitted_features(summary.features, summary.categories, summary.samples, &quantize)?;

        // Second pass: each batch binned as it arrives.
        let mut bins = Bins::new(&features, &label, task, rows, PerRow::of(roles))?;
        for batch in source.batches()? {
            if let Piece::Rows(data) = pieces.read(&batch?)? {
                bins.add(&features, &label, *data)?;
            }
        }
        if bins.rows() != rows {
            return Err(ArborError::Data(format!(
                "the input gave {} rows on its second reading and {rows} on its first; \
                 binned training reads its input twice and needs the same rows both times",
                bins.rows()
            )));
        }
        Ok(bins.finish(task, label, features, skipped_null_labels, quantize, None))
    }

    /// Reads training rows a column at a time, as a columnar file is read:
    /// `read` gives a column's arrays (one per batch, the same batches for
    /// every column) each time it is asked. Every feature is read twice:
    /// once for the rows' hashes, once to fit its bins on its sample and
    /// bin it, so no more than a column per thread is held as values,
    /// besides the first 64 MiB of columns, which are kept between the
    /// passes instead of read again. The same bins and model as
    /// [`BinnedData::read`] on the same rows.
    pub fn read_columns(
        schema: &Schema,
        roles: &ColumnRoles,
        task: Option<Task>,
        quantize: QuantizeParams,
        read: impl Fn(&str) -> Result<Vec<ArrayRef>> + Sync,
    ) -> Result<BinnedData> {
        let field = |name: &str| -> Result<DataType> { Ok(schema.field(index_of(schema, name)?).data_type().clone()) };
        let label_type = field(&roles.label)?;
        let specs = feature_names(schema, roles)
            .into_iter()
            .map(|name| Ok(FeatureSpec { data_type: field(&name)?, name }))
            .collect::<Result<Vec<_>>>()?;
        check_features(&roles.label, &specs)?;
        let per_row = RowColumns::read(schema, roles, &read)?;
        let label = NamedColumn { name: roles.label.clone(), arrays: read(&roles.label)? };
        let rows = LabelRows::read(label, label_type, per_row, task)?;
        let n = target_len(&rows.target);
        if u32::try_from(n).is_err() {
            return Err(too_many_rows(n as u64));
        }

        check_bins(n, specs.len())?;
        // First pass: each row's hash, a feature at a time.
        let sums = std::sync::Mutex::new(crate::memory::vec_with_capacity::<u64>(n, "the rows' hashes")?);
        lock(&sums).resize(n, 0);
        // Columns read while their values fit `KEEP_READ_BYTES` are kept for
        // the second pass instead of read again (a small table is read once).
        let kept: Vec<std::sync::Mutex<Option<FeatureColumn>>> = specs.iter().map(|_| Default::default()).collect();
        let kept_bytes = std::sync::atomic::AtomicUsize::new(0);
        specs.par_iter().enumerate().try_for_each(|(f, spec)| -> Result<()> {
            let column = rows.feature(&spec.name, read(&spec.name)?)?;
            let mut share = vec![0u64; n];
            add_column_hashes(&mut share, f, &column);
            let size = column.size_bytes();
            if kept_bytes.fetch_add(size, std::sync::atomic::Ordering::Relaxed) + size <= KEEP_READ_BYTES {
                *lock(&kept[f]) = Some(column);
            } else {
                kept_bytes.fetch_sub(size, std::sync::atomic::Ordering::Relaxed);
            }
            lock(&sums).iter_mut().zip(share).for_each(|(h, s)| *h = h.wrapping_add(s));
            Ok(())
        })?;
        let mut hashes = sums.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        finish_row_hashes(&mut hashes, &rows.label, &rows.target);
        // The rows of the smallest hashes: where every feature's sample is
        // found, unless the feature misses values in too many of them.
        let candidates: Option<Vec<u32>> = (n > 2 * BIN_SAMPLE_ROWS).then(|| {
            let mut sorted = hashes.clone();
            let (_, &mut bound, _) = sorted.select_nth_unstable(2 * BIN_SAMPLE_ROWS - 1);
            drop(sorted);
            (0..n as u32).filter(|&r| hashes[r as usize] <= bound).collect()
        });

        // Second pass: each feature's bins fitted on its sample, then its codes.
        let binned = specs
            .par_iter()
            .zip(&kept)
            .map(|(spec, kept)| -> Result<(Feature, BinColumn)> {
                let column = match lock(kept).take() {
                    Some(column) => column,
                    None => rows.feature(&spec.name, read(&spec.name)?)?,
                };
                let mapper = match &column {
                    FeatureColumn::Categorical { categories, .. } => BinMapper::categorical(categories.clone()),
                    FeatureColumn::Numeric(_) => {
                        let sample = column_sample(&column, &hashes, candidates.as_deref());
                        let values: Vec<f64> = sample.into_iter().map(|(_, x)| x).collect();
                        BinMapper::fit(&FeatureColumn::Numeric(values.into()), &quantize)
                    }
                };
                let mut codes = BinColumn::with_capacity(mapper.n_bins(), n);
                codes.extend(&mapper.bin_column(&column));
                let kind = arbor_quantize::FeatureType::of(&spec.data_type).expect("checked above");
                let feature = Feature { name: spec.name.clone(), data_type: spec.data_type.to_string(), kind, mapper };
                Ok((feature, codes))
            })
            .collect::<Result<Vec<_>>>()?;
        drop((hashes, candidates));
        let (features, columns): (Vec<Feature>, Vec<BinColumn>) = binned.into_iter().unzip();
        let mappers = features.iter().map(|f| f.mapper.clone()).collect();
        let LabelRows { task, label, target, weights, groups, skipped, .. } = rows;
        let binned = BinnedData {
            task,
            label,
            features,
            matrix: BinnedMatrix::from_columns(columns, mappers, n),
            target,
            weights,
            groups,
            skipped_null_labels: skipped,
            input_row: (0..n as u32).collect(),
            quantize,
            raw: None,
        };
        Ok(binned.sorted())
    }

    /// Bins training data already read. With `exact`, every distinct value
    /// gets a bin (`quantize` should be [`QuantizeParams::exact`]) and the
    /// raw columns are kept; otherwise the bins are fitted on the
    /// content-chosen sample, as [`BinnedData::read`] fits them, so either
    /// way in gives the same model.
    pub(crate) fn from_training(data: Cow<'_, TrainingData>, quantize: QuantizeParams, exact: bool) -> Result<Self> {
        let mappers: Vec<BinMapper> = if exact {
            data.columns.par_iter().map(|c| BinMapper::fit(c, &quantize)).collect()
        } else {
            let summary = LevelSummary::of(&data);
            fitted_features(summary.features, summary.categories, summary.samples, &quantize)?
                .into_iter()
                .map(|f| f.mapper)
                .collect()
        };
        let features = data
            .features
            .iter()
            .zip(&mappers)
            .map(|(spec, mapper)| Feature {
                name: spec.name.clone(),
                data_type: spec.data_type.to_string(),
                kind: arbor_quantize::FeatureType::of(&spec.data_type).expect("checked when the data was read"),
                mapper: mapper.clone(),
            })
            .collect();
        let matrix = BinnedMatrix::with_mappers(&data.columns, mappers);
        let TrainingData { task, label, target, columns, weights, groups, skipped_null_labels, input_row, .. } =
            data.into_owned();
        let raw = exact.then_some(columns);
        let binned = BinnedData {
            task,
            label,
            features,
            matrix,
            target,
            weights,
            groups,
            skipped_null_labels,
            input_row,
            quantize,
            raw,
        };
        Ok(binned.sorted())
    }

    /// The rows put in canonical order (the input rows they came from kept).
    fn sorted(mut self) -> BinnedData {
        let order = binned_order(&self.matrix, &self.target, self.weights.as_deref(), self.groups.as_deref());
        self.matrix.gather_rows(&order);
        self.target = match self.target {
            Target::Classes(c) => Target::Classes(gather(&c, &order)),
            Target::Values(v) => Target::Values(gather(&v, &order)),
        };
        self.weights = self.weights.map(|w| gather(&w, &order));
        self.groups = self.groups.map(|g| gather(&g, &order));
        self.input_row = order.iter().map(|&r| self.input_row[r as usize]).collect();
        self.raw = self.raw.map(|columns| columns.into_iter().map(|c| c.gather(&order)).collect());
        self
    }

    /// Per-row values in training order, put back into input order.
    pub(crate) fn in_input_order<T: Clone>(&self, values: &[T]) -> Vec<T> {
        let mut out = values.to_vec();
        for (value, &row) in values.iter().zip(&self.input_row) {
            out[row as usize] = value.clone();
        }
        out
    }

    /// The rows at `rows` (ascending positions in this data's order), as
    /// binned data of their own with the same bins: a fold of
    /// cross-validation. Still in canonical order, so a model trained on it
    /// is the one its rows alone would train with these bins.
    pub fn subset(&self, rows: &[u32]) -> Result<BinnedData> {
        self.gathered(rows, ranks(rows.iter().map(|&r| self.input_row[r as usize])))
    }

    /// The rows at `rows` (ascending) with `input_row` as their reading places.
    fn gathered(&self, rows: &[u32], input_row: Vec<u32>) -> Result<BinnedData> {
        let n = self.n_rows();
        if let Some(w) = rows.windows(2).find(|w| w[0] >= w[1]) {
            return Err(ArborError::Data(format!("a subset's rows must ascend; {} comes before {}", w[0], w[1])));
        }
        if let Some(&last) = rows.last().filter(|&&r| r as usize >= n) {
            return Err(ArborError::Data(format!("row {last} of a subset is past the data's {n} rows")));
        }
        let mut matrix = self.matrix.clone_empty();
        for f in 0..self.matrix.n_features() {
            matrix.push_column(self.matrix.column(f).gather(rows));
        }
        Ok(BinnedData {
            task: self.task,
            label: self.label.clone(),
            features: self.features.clone(),
            matrix,
            target: match &self.target {
                Target::Classes(c) => Target::Classes(gather(c, rows)),
                Target::Values(v) => Target::Values(gather(v, rows)),
            },
            weights: self.weights.as_ref().map(|w| gather(w, rows)),
            groups: self.groups.as_ref().map(|g| gather(g, rows)),
            skipped_null_labels: 0,
            input_row,
            quantize: self.quantize,
            raw: self.raw.as_ref().map(|columns| columns.iter().map(|c| c.gather(rows)).collect()),
        })
    }

    /// The rows at `positions` (places in reading order, the order the rows
    /// were read in, null labels left out), as binned data of their own whose
    /// reading order is the order of `positions`: what indexing a table by
    /// row numbers gives (scikit-learn's cross-validation splits so). An
    /// error for a position past the rows or given twice.
    pub fn take(&self, positions: &[u32]) -> Result<BinnedData> {
        let order = self.reading_order();
        let mut rows = Vec::with_capacity(positions.len());
        for (k, &p) in positions.iter().enumerate() {
            let Some(&row) = order.get(p as usize) else {
                return Err(ArborError::Data(format!("row {p} is past the data's {} rows", order.len())));
            };
            rows.push((row, k as u32));
        }
        rows.sort_unstable();
        if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(ArborError::Data(format!("row {} is taken twice", positions[w[0].1 as usize])));
        }
        self.gathered(&rows.iter().map(|r| r.0).collect::<Vec<_>>(), rows.iter().map(|r| r.1).collect())
    }

    /// Each place in reading order's row in this data's (canonical) order.
    pub fn reading_order(&self) -> Vec<u32> {
        let mut order = vec![0; self.input_row.len()];
        for (row, &place) in self.input_row.iter().enumerate() {
            order[place as usize] = row as u32;
        }
        order
    }

    /// The values trees test for the rows at `rows`, a column per feature
    /// (for [`crate::Model::score_columns`]): raw values where they are
    /// kept, else each bin's stand-in, which every split of a model trained
    /// on these bins sends the way it sends the bin's values.
    pub fn tested_values(&self, rows: &[u32]) -> Vec<Vec<f64>> {
        let walk = crate::train::walk_values::WalkValues::new(self.raw.as_deref(), &self.matrix, None);
        (0..self.matrix.n_features()).map(|f| rows.iter().map(|&r| walk.value(f, r as usize)).collect()).collect()
    }

    /// The target of each row, in this data's order.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The task: the caller's, or the one the label's type implies.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The label's name, type and classes.
    pub fn label(&self) -> &LabelInfo {
        &self.label
    }

    /// The features as a model trained on these bins knows them.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// Number of rows (null labels excluded).
    pub fn n_rows(&self) -> usize {
        target_len(&self.target)
    }

    /// Rows dropped because their label was null.
    pub fn skipped_null_labels(&self) -> usize {
        self.skipped_null_labels
    }

    /// How finely the features were binned, and whether exactly.
    pub fn quantize(&self) -> (QuantizeParams, bool) {
        (self.quantize, self.raw.is_some())
    }

    /// Bytes held by the bins, targets, weights and (exact) raw columns.
    pub fn size_bytes(&self) -> usize {
        let target = match &self.target {
            Target::Classes(c) => c.len() * 4,
            Target::Values(v) => v.len() * 8,
        };
        let raw: usize = self.raw.iter().flatten().map(|c| c.len() * 8).sum();
        self.matrix.size_bytes()
            + target
            + self.weights.as_ref().map_or(0, |w| w.len() * 8)
            + self.groups.as_ref().map_or(0, |g| g.len() * 8)
            + self.input_row.len() * 4
            + raw
    }
}

/// The columns of `roles` read from one batch at a time.
pub(crate) struct Pieces<'a> {
    pub(crate) schema: &'a Schema,
    pub(crate) roles: &'a ColumnRoles,
    pub(crate) task: Option<Task>,
}

/// One batch, read.
pub(crate) enum Piece {
    /// Its rows with a non-null label.
    Rows(Box<TrainingData>),
    /// This many rows, every label null.
    NullLabels(usize),
    /// No rows.
    Empty,
    /// Rows, every one of weight zero (or a null label).
    ZeroWeights,
}

impl Pieces<'_> {
    pub(crate) fn read(&self, batch: &RecordBatch) -> Result<Piece> {
        if batch.schema().fields() != self.schema.fields() {
            return Err(ArborError::Data(format!(
                "record batches of different schemas: ({}) and ({})",
                field_list(self.schema),
                field_list(&batch.schema())
            )));
        }
        let column = |name: &str| -> Result<NamedColumn> {
            Ok(NamedColumn { name: name.to_owned(), arrays: vec![batch.column(index_of(self.schema, name)?).clone()] })
        };
        let label = column(&self.roles.label)?;
        let per_row = RowColumns::of(self.roles, column)?;
        let features = feature_names(self.schema, self.roles).iter().map(|n| column(n)).collect::<Result<Vec<_>>>()?;
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(Piece::Empty);
        }
        if label.arrays[0].null_count() == rows {
            return Ok(Piece::NullLabels(rows));
        }
        let declared = |name: &str| self.schema.field_with_name(name).map(|f| f.data_type().clone()).ok();
        match TrainingData::from_columns_unsorted(label, features, per_row, self.task, declared) {
            Ok(data) => Ok(Piece::Rows(Box::new(data))),
            // A batch of zero weights is no error while another has weight.
            Err(ArborError::NothingToTrain(_)) if self.roles.weight.is_some() => Ok(Piece::ZeroWeights),
            Err(e) => Err(e),
        }
    }

    /// The error of an input that gave no row to train on: its weights
    /// sum to zero (`zero_weights`: a batch was all zero weights), or it is
    /// empty, or every label is null.
    pub(crate) fn no_rows(&self, source: &(impl BatchSource + ?Sized), zero_weights: bool) -> ArborError {
        match (&self.roles.weight, zero_weights) {
            (Some(weight), true) => {
                ArborError::NothingToTrain(format!("weight column '{weight}' sums to zero; nothing to train on"))
            }
            _ => self.nothing_to_train(source),
        }
    }

    /// The error of an input without a row to train on: empty, or every label null.
    fn nothing_to_train(&self, source: &(impl BatchSource + ?Sized)) -> ArborError {
        let rows: usize = source.batches().map_or(0, |b| b.flatten().map(|b| b.num_rows()).sum());
        if let Err(missing) = index_of(self.schema, &self.roles.label) {
            return missing;
        }
        if rows == 0 {
            ArborError::NothingToTrain("training data is empty (0 rows)".into())
        } else {
            ArborError::NothingToTrain(format!(
                "label column '{}' is null in every row ({rows} rows); nothing to train on",
                self.roles.label
            ))
        }
    }
}

/// Each value's rank among `values` (distinct): reading places renumbered from 0.
fn ranks(values: impl Iterator<Item = u32>) -> Vec<u32> {
    let values: Vec<u32> = values.collect();
    let mut by_value: Vec<u32> = (0..values.len() as u32).collect();
    by_value.sort_unstable_by_key(|&i| values[i as usize]);
    let mut out = vec![0; values.len()];
    for (rank, &i) in by_value.iter().enumerate() {
        out[i as usize] = rank as u32;
    }
    out
}

/// Which per-row columns besides the label a binned read keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PerRow {
    pub(crate) weighted: bool,
    pub(crate) grouped: bool,
}

impl PerRow {
    /// The per-row columns `roles` names.
    pub(crate) fn of(roles: &ColumnRoles) -> PerRow {
        PerRow { weighted: roles.weight.is_some(), grouped: roles.group.is_some() }
    }
}

/// The second pass's growing columns of codes, targets, weights and query ids.
pub(crate) struct Bins {
    columns: Vec<BinColumn>,
    target: Target,
    weights: Option<Vec<f64>>,
    groups: Option<Vec<i64>>,
}

impl Bins {
    /// Room for `rows` rows of `features`, allocated up front (an error
    /// naming the bytes if they cannot be had).
    pub(crate) fn new(
        features: &[Feature],
        label: &LabelInfo,
        task: Task,
        rows: usize,
        per_row: PerRow,
    ) -> Result<Bins> {
        let width: usize = features.iter().map(|f| if f.mapper.n_bins() <= 256 { 1 } else { 2 }).sum();
        check_bins(rows, width)?;
        let columns = features.iter().map(|f| BinColumn::with_capacity(f.mapper.n_bins(), rows)).collect();
        let target = match (task, &label.classes) {
            (Task::Classification, Some(_)) => Target::Classes(crate::memory::vec_with_capacity(rows, "the labels")?),
            _ => Target::Values(crate::memory::vec_with_capacity(rows, "the labels")?),
        };
        let weights = per_row.weighted.then(|| crate::memory::vec_with_capacity(rows, "the weights")).transpose()?;
        let groups = per_row.grouped.then(|| crate::memory::vec_with_capacity(rows, "the query ids")).transpose()?;
        Ok(Bins { columns, target, weights, groups })
    }

    pub(crate) fn rows(&self) -> usize {
        target_len(&self.target)
    }

    /// Bins one batch's rows with the training's bins and appends them.
    pub(crate) fn add(&mut self, features: &[Feature], label: &LabelInfo, data: TrainingData) -> Result<()> {
        let codes: Vec<Vec<u16>> = data
            .columns
            .par_iter()
            .zip(features)
            .map(|(column, feature)| match (column, feature.mapper.categories()) {
                (FeatureColumn::Categorical { bins, categories }, Some(known)) => {
                    let global: Vec<u16> = std::iter::once(0)
                        .chain(categories.iter().map(|c| known.binary_search(c).map_or(0, |i| (i + 1) as u16)))
                        .collect();
                    bins.iter().map(|&b| global[usize::from(b)]).collect()
                }
                _ => feature.mapper.bin_column(column),
            })
            .collect();
        for (column, codes) in self.columns.iter_mut().zip(&codes) {
            column.extend(codes);
        }
        match (&mut self.target, global_labels(label, &data)?, &data.target) {
            (Target::Classes(all), Some(classes), _) => all.extend(classes),
            (Target::Values(all), None, Target::Values(values)) => all.extend_from_slice(values),
            _ => return Err(ArborError::Data("a batch's label is not of the training's kind".into())),
        }
        match (&mut self.weights, &data.weights) {
            (Some(all), Some(w)) => all.extend_from_slice(w),
            (None, None) => {}
            _ => return Err(ArborError::Data("some batches have weights and others not".into())),
        }
        match (&mut self.groups, &data.groups) {
            (Some(all), Some(g)) => all.extend_from_slice(g),
            (None, None) => {}
            _ => return Err(ArborError::Data("some batches have query ids and others not".into())),
        }
        Ok(())
    }

    /// The binned rows in canonical order; `input_row` gives each row's
    /// place among the input rows (default: the order they were added in).
    pub(crate) fn finish(
        self,
        task: Task,
        label: LabelInfo,
        features: Vec<Feature>,
        skipped_null_labels: usize,
        quantize: QuantizeParams,
        input_row: Option<Vec<u32>>,
    ) -> BinnedData {
        let rows = self.rows();
        let mappers = features.iter().map(|f| f.mapper.clone()).collect();
        let matrix = BinnedMatrix::from_columns(self.columns, mappers, rows);
        BinnedData {
            task,
            label,
            features,
            matrix,
            target: self.target,
            weights: self.weights,
            groups: self.groups,
            skipped_null_labels,
            input_row: input_row.unwrap_or_else(|| (0..rows as u32).collect()),
            quantize,
            raw: None,
        }
        .sorted()
    }
}

/// The raw values [`BinnedData::read_columns`] keeps between its passes
/// rather than read again: a small table is read once, a large one holds
/// no more than this beside its bins.
const KEEP_READ_BYTES: usize = 64 << 20;

/// The value behind `mutex`, also after a panic elsewhere (which fails the read anyway).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An error unless the codes of `rows` rows, `width` bytes each, fit the memory limit.
fn check_bins(rows: usize, width: usize) -> Result<()> {
    crate::memory::reserve_check(rows, width, &format!("binning {rows} rows ({width} bytes of codes a row)"))
}

fn too_many_rows(rows: u64) -> ArborError {
    ArborError::Data(format!("{rows} training rows; training takes at most {} (4,294,967,295)", u32::MAX))
}
