//! Training data read from Arrow: label, features and weights, checked once.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::compute::kernels::boolean::and;
use arrow::compute::{cast, filter, is_not_null};
use arrow::datatypes::{DataType, Float64Type, Schema};
use rayon::prelude::*;

use arbor_quantize::{FeatureColumn, FeatureType, NumericValues, QuantizeError};

use crate::data::canonical_order::{canonical_order, SortKey};
use crate::data::label::{default_task, read_label, LabelInfo, Target};
use crate::{ArborError, Result, Task};

/// The order training data keeps its rows in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowOrder {
    /// Sorted by content, so that nothing depends on the order rows arrive in.
    Canonical,
    /// As given.
    AsGiven,
}

/// Rows of a target.
pub(crate) fn target_len(target: &Target) -> usize {
    match target {
        Target::Classes(c) => c.len(),
        Target::Values(v) => v.len(),
    }
}

/// Which column is the label, which are features, which holds sample
/// weights, and which the query (group) of a ranking loss.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnRoles {
    /// The label column.
    pub label: String,
    /// The feature columns; `None` means every column but the label, the
    /// weight and the group.
    pub features: Option<Vec<String>>,
    /// The column of sample weights, if any.
    pub weight: Option<String>,
    /// The column of query ids (integers) that `loss=lambdarank` ranks
    /// within, if any; a query's rows need not be contiguous.
    pub group: Option<String>,
}

/// A column by name, as one array per record batch.
#[derive(Clone, Debug)]
pub struct NamedColumn {
    /// The column's name.
    pub name: String,
    /// Its arrays, one per batch.
    pub arrays: Vec<ArrayRef>,
}

/// A feature's name and Arrow type.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureSpec {
    /// The column's name.
    pub name: String,
    /// Its Arrow type.
    pub data_type: DataType,
}

/// Everything training reads, checked: non-null labels, readable features,
/// valid weights.
#[derive(Clone, Debug)]
pub struct TrainingData {
    /// The task, from the caller or the label's type.
    pub(crate) task: Task,
    /// The label's name, type and classes.
    pub(crate) label: LabelInfo,
    /// The target per row.
    pub(crate) target: Target,
    /// The features' names and types.
    pub(crate) features: Vec<FeatureSpec>,
    /// The features' values.
    pub(crate) columns: Vec<FeatureColumn>,
    /// Sample weights, when given.
    pub(crate) weights: Option<Vec<f64>>,
    /// Each row's query id, when a group column is given (ranking).
    pub(crate) groups: Option<Vec<i64>>,
    /// Rows dropped because their label was null.
    pub(crate) skipped_null_labels: usize,
    /// Each training row's position among the input rows with a non-null
    /// label. Training sorts rows into one canonical order, so that a model
    /// depends on the rows it is given, never on the order they arrive in
    /// (file layout, batch sizes, SQL partitions).
    pub(crate) input_row: Vec<u32>,
}

impl TrainingData {
    /// Reads training data from record batches of `schema`: the label,
    /// features and weight of `roles`. Each feature's arrays are freed as
    /// soon as the feature is read, so the table and its features are never
    /// held in full at once. `Trainer::training_data` is the public way in.
    pub(crate) fn from_owned_batches(
        schema: &Schema,
        batches: Vec<RecordBatch>,
        roles: &ColumnRoles,
        task: Option<Task>,
    ) -> Result<TrainingData> {
        let column = |name: &str| -> Result<NamedColumn> {
            let index = index_of(schema, name)?;
            Ok(NamedColumn { name: name.to_owned(), arrays: batches.iter().map(|b| b.column(index).clone()).collect() })
        };
        let label_column = column(&roles.label)?;
        let per_row = RowColumns::of(roles, column)?;
        let feature_columns = feature_names(schema, roles).iter().map(|n| column(n)).collect::<Result<Vec<_>>>()?;
        drop(batches); // the columns now hold the only references to their arrays
        let data_type = |name: &str| schema.field_with_name(name).map(|f| f.data_type().clone()).ok();
        Self::from_columns(label_column, feature_columns, per_row, task, data_type)
    }

    /// Reads training data a column at a time: `read` gives a column's arrays
    /// (one per batch, the same batches for every column) when its turn comes,
    /// and each feature's arrays are freed once the feature is read. A columnar
    /// file read so never holds its whole table: `arbor train` reads Parquet
    /// this way.
    pub fn from_column_reader(
        schema: &Schema,
        roles: &ColumnRoles,
        task: Option<Task>,
        read: impl Fn(&str) -> Result<Vec<ArrayRef>> + Sync,
    ) -> Result<TrainingData> {
        let label = roles.label.as_str();
        let label_type = schema.field(index_of(schema, label)?).data_type().clone();
        let names = feature_names(schema, roles);
        let mut pending = Vec::with_capacity(names.len());
        for name in names {
            let data_type = schema.field(index_of(schema, &name)?).data_type().clone();
            let read = &read;
            pending.push(PendingColumn { name: name.clone(), data_type, arrays: Box::new(move || read(&name)) });
        }
        let label = NamedColumn { name: label.to_owned(), arrays: read(label)? };
        let per_row = RowColumns::read(schema, roles, &read)?;
        Self::from_pending(label, label_type, pending, per_row, task, RowOrder::Canonical)
    }

    /// Reads training data from named columns. `declared_type` gives a column's
    /// type when it has no arrays (an empty input), so errors can still name it.
    pub fn from_columns(
        label: NamedColumn,
        features: Vec<NamedColumn>,
        per_row: RowColumns,
        task: Option<Task>,
        declared_type: impl Fn(&str) -> Option<DataType>,
    ) -> Result<TrainingData> {
        Self::from_named(label, features, per_row, task, declared_type, RowOrder::Canonical)
    }

    /// [`TrainingData::from_columns`] with the rows left in the order given:
    /// for passes whose results do not depend on the order of the rows
    /// (exact sums, a sample chosen by content), which need not pay for
    /// the sort into canonical order. Not for training on.
    pub fn from_columns_unsorted(
        label: NamedColumn,
        features: Vec<NamedColumn>,
        per_row: RowColumns,
        task: Option<Task>,
        declared_type: impl Fn(&str) -> Option<DataType>,
    ) -> Result<TrainingData> {
        Self::from_named(label, features, per_row, task, declared_type, RowOrder::AsGiven)
    }

    fn from_named(
        label: NamedColumn,
        features: Vec<NamedColumn>,
        per_row: RowColumns,
        task: Option<Task>,
        declared_type: impl Fn(&str) -> Option<DataType>,
        order: RowOrder,
    ) -> Result<TrainingData> {
        let type_of = |c: &NamedColumn| {
            c.arrays.first().map(|a| a.data_type().clone()).or_else(|| declared_type(&c.name)).unwrap_or(DataType::Null)
        };
        let pending = features
            .into_iter()
            .map(|f| PendingColumn {
                name: f.name.clone(),
                data_type: type_of(&f),
                arrays: Box::new(move || Ok(f.arrays)),
            })
            .collect();
        let label_type = type_of(&label);
        Self::from_pending(label, label_type, pending, per_row, task, order)
    }

    /// The common reader: features are read, checked and converted on their
    /// own threads, each freed once it is a [`FeatureColumn`].
    fn from_pending(
        label: NamedColumn,
        label_type: DataType,
        features: Vec<PendingColumn<'_>>,
        per_row: RowColumns,
        task: Option<Task>,
        order: RowOrder,
    ) -> Result<TrainingData> {
        let specs: Vec<FeatureSpec> =
            features.iter().map(|f| FeatureSpec { name: f.name.clone(), data_type: f.data_type.clone() }).collect();
        check_features(&label.name, &specs)?;
        let rows = LabelRows::read(label, label_type, per_row, task)?;
        // Each feature is read on its own thread, in input order, and its
        // arrays are dropped once converted.
        let columns =
            features.into_par_iter().map(|f| rows.feature(&f.name, (f.arrays)()?)).collect::<Result<Vec<_>>>()?;
        let LabelRows { task, label, target, weights, groups, skipped, .. } = rows;
        let input_row = (0..target_len(&target) as u32).collect();
        let data = TrainingData {
            task,
            label,
            target,
            features: specs,
            columns,
            weights,
            groups,
            skipped_null_labels: skipped,
            input_row,
        };
        Ok(match order {
            RowOrder::Canonical => data.sorted(),
            RowOrder::AsGiven => data,
        })
    }

    /// The rows sorted into the canonical order (rows as given before).
    fn sorted(self) -> TrainingData {
        // Features first, then the label, the weight and the query: the keys of the canonical order.
        let query_ranks = self.groups.as_deref().map(dense_ids);
        let input_row = {
            let mut keys: Vec<SortKey<'_>> = self
                .columns
                .iter()
                .map(|c| match c {
                    FeatureColumn::Numeric(NumericValues::F32(values)) => SortKey::Floats(values),
                    FeatureColumn::Numeric(NumericValues::F64(values)) => SortKey::Numbers(values),
                    FeatureColumn::Categorical { bins, .. } => SortKey::Bins(bins),
                })
                .collect();
            keys.push(match &self.target {
                Target::Classes(c) => SortKey::Classes(c),
                Target::Values(v) => SortKey::Numbers(v),
            });
            if let Some(w) = &self.weights {
                keys.push(SortKey::Numbers(w));
            }
            if let Some((ranks, _)) = &query_ranks {
                keys.push(SortKey::Classes(ranks));
            }
            canonical_order(&keys)
        };
        let target = match self.target {
            Target::Classes(c) => Target::Classes(gather(&c, &input_row)),
            Target::Values(v) => Target::Values(gather(&v, &input_row)),
        };
        let weights = self.weights.map(|w| gather(&w, &input_row));
        let groups = self.groups.map(|g| gather(&g, &input_row));
        // One column at a time, each dropped once gathered.
        let columns = self.columns.into_iter().map(|c| c.gather(&input_row)).collect();
        TrainingData { target, weights, groups, columns, input_row, ..self }
    }

    /// The task: the caller's, or the one the label's type implies.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The label's name, type and classes.
    pub fn label(&self) -> &LabelInfo {
        &self.label
    }

    /// The features' names and types, in the order the model will know them.
    pub fn features(&self) -> &[FeatureSpec] {
        &self.features
    }

    /// The features' values, in training order (for tools that drive the
    /// kernels directly, such as the benches).
    pub fn columns(&self) -> &[FeatureColumn] {
        &self.columns
    }

    /// The target of each row, in training order.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The sample weights, in training order, when given.
    pub fn weights(&self) -> Option<&[f64]> {
        self.weights.as_deref()
    }

    /// Rows dropped because their label was null.
    pub fn skipped_null_labels(&self) -> usize {
        self.skipped_null_labels
    }

    /// Number of training rows (null labels excluded).
    pub fn n_rows(&self) -> usize {
        match &self.target {
            Target::Classes(c) => c.len(),
            Target::Values(v) => v.len(),
        }
    }
}

/// An error unless `features` can be trained on beside the label `label`:
/// at least one, none twice, none the label, each of a type arbor reads.
pub(crate) fn check_features(label: &str, features: &[FeatureSpec]) -> Result<()> {
    if features.is_empty() {
        return Err(ArborError::Data("no feature columns: name at least one feature besides the label".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for f in features {
        if f.name == label {
            return Err(ArborError::Data(format!("column '{}' is the label; it cannot also be a feature", f.name)));
        }
        if !seen.insert(f.name.as_str()) {
            return Err(ArborError::Data(format!("feature column '{}' is listed twice", f.name)));
        }
        if FeatureType::of(&f.data_type).is_none() {
            return Err(
                QuantizeError::UnsupportedType { column: f.name.clone(), data_type: f.data_type.clone() }.into()
            );
        }
    }
    Ok(())
}

/// The label and weight read and checked, and which rows every column
/// keeps (those whose label is not null), so features can be read one at
/// a time after them.
pub(crate) struct LabelRows {
    pub(crate) task: Task,
    pub(crate) label: LabelInfo,
    pub(crate) target: Target,
    pub(crate) weights: Option<Vec<f64>>,
    /// Each row's query id, when a group column is given.
    pub(crate) groups: Option<Vec<i64>>,
    /// Rows dropped because their label was null.
    pub(crate) skipped: usize,
    label_name: String,
    /// Per input chunk: the rows kept, when some are not.
    keep: Vec<Option<arrow::array::BooleanArray>>,
    /// Rows per input chunk.
    lengths: Vec<usize>,
}

impl LabelRows {
    /// Reads the label (of type `label_type`), the weight and the group; an
    /// error when there is no row, or every label is null.
    pub(crate) fn read(
        label: NamedColumn,
        label_type: DataType,
        per_row: RowColumns,
        task: Option<Task>,
    ) -> Result<LabelRows> {
        let RowColumns { weight, group } = per_row;
        let task = task.unwrap_or_else(|| default_task(&label_type));
        let n_rows: usize = label.arrays.iter().map(|a| a.len()).sum();
        if n_rows == 0 {
            return Err(ArborError::NothingToTrain("training data is empty (0 rows)".into()));
        }
        let mut skipped = 0;
        let mut keep = Vec::with_capacity(label.arrays.len());
        for a in &label.arrays {
            skipped += a.null_count();
            keep.push(if a.null_count() > 0 { Some(is_not_null(a)?) } else { None });
        }
        if skipped == n_rows {
            return Err(ArborError::NothingToTrain(format!(
                "label column '{}' is null in every row ({n_rows} rows); nothing to train on",
                label.name
            )));
        }
        let lengths: Vec<usize> = label.arrays.iter().map(|a| a.len()).collect();
        // A row of weight zero counts for nothing: it is dropped as a row of
        // null label is, so that it moves no threshold and no bin edge.
        // Read once: checked over every row, then the kept rows' values.
        let weights = match weight {
            Some(w) => {
                let arrays = align("weight", &w.name, w.arrays, &label.name, &lengths)?;
                let values = read_weights(&w.name, &arrays)?;
                let mut start = 0;
                for (k, &n) in keep.iter_mut().zip(&lengths) {
                    let chunk = &values[start..start + n];
                    start += n;
                    if chunk.iter().any(|&v| v <= 0.0) {
                        let positive: BooleanArray = chunk.iter().map(|&v| Some(v > 0.0)).collect();
                        *k = Some(match k.take() {
                            Some(mask) => and(&mask, &positive)?,
                            None => positive,
                        });
                    }
                }
                let mut kept = Vec::with_capacity(values.len());
                let mut start = 0;
                for (k, &n) in keep.iter().zip(&lengths) {
                    let chunk = &values[start..start + n];
                    start += n;
                    match k {
                        Some(mask) => kept.extend(chunk.iter().zip(mask.values()).filter(|(_, k)| *k).map(|(v, _)| *v)),
                        None => kept.extend_from_slice(chunk),
                    }
                }
                if kept.is_empty() {
                    return Err(ArborError::NothingToTrain(format!(
                        "weight column '{}' is zero in every row with a label; nothing to train on",
                        w.name
                    )));
                }
                Some(kept)
            }
            None => None,
        };
        let mut rows = LabelRows {
            task,
            label: LabelInfo { name: label.name.clone(), data_type: String::new(), classes: None },
            target: Target::Values(Vec::new()),
            weights: None,
            groups: None,
            skipped,
            label_name: label.name.clone(),
            keep,
            lengths,
        };
        let labels = rows.kept("label", &label.name, label.arrays)?;
        (rows.label, rows.target) = read_label(&label.name, &labels, task)?;
        drop(labels);
        rows.weights = weights;
        if let Some(group) = group {
            let arrays = rows.kept("group", &group.name, group.arrays)?;
            rows.groups = Some(read_groups(&group.name, &arrays)?);
        }
        Ok(rows)
    }

    /// A column's arrays cut like the label's, without the rows of null labels.
    fn kept(&self, what: &str, name: &str, arrays: Vec<ArrayRef>) -> Result<Vec<ArrayRef>> {
        align(what, name, arrays, &self.label_name, &self.lengths)?
            .iter()
            .zip(&self.keep)
            .map(|(a, k)| match k {
                Some(mask) => Ok(filter(a, mask)?),
                None => Ok(a.clone()),
            })
            .collect()
    }

    /// Feature `name` read from its arrays, rows of null labels dropped.
    pub(crate) fn feature(&self, name: &str, arrays: Vec<ArrayRef>) -> Result<FeatureColumn> {
        let arrays = self.kept("feature", name, arrays)?;
        Ok(FeatureColumn::from_arrays(name, &arrays)?)
    }
}

/// A feature column whose arrays are read when its turn comes.
struct PendingColumn<'a> {
    name: String,
    data_type: DataType,
    arrays: Box<dyn FnOnce() -> Result<Vec<ArrayRef>> + Send + 'a>,
}

/// The position of column `name` in `schema`, or an error listing the columns there are.
pub(crate) fn index_of(schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| ArborError::MissingColumn {
        column: name.to_owned(),
        available: schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", "),
    })
}

/// The columns read per row beside the label and the features: sample
/// weights and query ids, each when given.
#[derive(Clone, Debug, Default)]
pub struct RowColumns {
    /// The sample weights.
    pub weight: Option<NamedColumn>,
    /// The query ids of a ranking loss (integers).
    pub group: Option<NamedColumn>,
}

impl RowColumns {
    /// Just sample weights (or nothing).
    pub fn weighted(weight: Option<NamedColumn>) -> RowColumns {
        RowColumns { weight, group: None }
    }

    /// The weight and group columns `roles` names, each as `column` gives it.
    pub(crate) fn of(roles: &ColumnRoles, column: impl Fn(&str) -> Result<NamedColumn>) -> Result<RowColumns> {
        Ok(RowColumns {
            weight: roles.weight.as_deref().map(&column).transpose()?,
            group: roles.group.as_deref().map(&column).transpose()?,
        })
    }

    /// The weight and group columns of `roles`, read whole by `read`.
    pub(crate) fn read(
        schema: &Schema,
        roles: &ColumnRoles,
        read: &impl Fn(&str) -> Result<Vec<ArrayRef>>,
    ) -> Result<RowColumns> {
        RowColumns::of(roles, |name| {
            index_of(schema, name)?;
            Ok(NamedColumn { name: name.to_owned(), arrays: read(name)? })
        })
    }
}

/// The features named, or by default every column but the label, the weight and the group.
pub(crate) fn feature_names(schema: &Schema, roles: &ColumnRoles) -> Vec<String> {
    match &roles.features {
        Some(names) => names.clone(),
        None => schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| *n != roles.label && Some(n) != roles.weight.as_ref() && Some(n) != roles.group.as_ref())
            .collect(),
    }
}

/// `arrays` cut into the chunks of the label (`lengths`), so that row `i` of
/// every column is the same row; an error naming the column if it does not
/// have the label's rows.
fn align(what: &str, name: &str, arrays: Vec<ArrayRef>, label: &str, lengths: &[usize]) -> Result<Vec<ArrayRef>> {
    if arrays.len() == lengths.len() && arrays.iter().zip(lengths).all(|(a, &n)| a.len() == n) {
        return Ok(arrays);
    }
    let rows: usize = arrays.iter().map(|a| a.len()).sum();
    let expected: usize = lengths.iter().sum();
    if rows != expected {
        return Err(ArborError::Data(format!(
            "{what} column '{name}' has {rows} rows, but the label column '{label}' has {expected}; \
             every column needs one value per row"
        )));
    }
    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    let whole = arrow::compute::concat(&refs)?;
    let mut offset = 0;
    Ok(lengths
        .iter()
        .map(|&n| {
            let chunk = whole.slice(offset, n);
            offset += n;
            chunk
        })
        .collect())
}

/// `values` in the order of `rows` (positions into `values`).
pub(crate) fn gather<T: Copy>(values: &[T], rows: &[u32]) -> Vec<T> {
    rows.iter().map(|&r| values[r as usize]).collect()
}

fn read_weights(name: &str, arrays: &[ArrayRef]) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for a in arrays {
        if !a.data_type().is_numeric() {
            return Err(ArborError::Data(format!(
                "weight column '{name}' has type {}; weights must be numeric",
                a.data_type()
            )));
        }
        if a.null_count() > 0 {
            return Err(ArborError::Data(format!("weight column '{name}' holds nulls; every row needs a weight")));
        }
        out.extend_from_slice(cast(a, &DataType::Float64)?.as_primitive::<Float64Type>().values());
    }
    if let Some(i) = out.iter().position(|w| !w.is_finite() || *w < 0.0) {
        return Err(ArborError::Data(format!(
            "weight column '{name}' holds {} at row {i}; weights must be finite and >= 0",
            out[i]
        )));
    }
    if out.iter().sum::<f64>() <= 0.0 {
        return Err(ArborError::NothingToTrain(format!("weight column '{name}' sums to zero; nothing to train on")));
    }
    Ok(out)
}

/// Query ids read from a group column: integers, no nulls (the error names
/// the column and the first bad row).
fn read_groups(name: &str, arrays: &[ArrayRef]) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for a in arrays {
        if !a.data_type().is_integer() {
            return Err(ArborError::Data(format!(
                "group column '{name}' has type {}; query ids must be integers",
                a.data_type()
            )));
        }
        if a.null_count() > 0 {
            return Err(ArborError::Data(format!("group column '{name}' holds nulls; every row needs a query id")));
        }
        // A cast that does not fit gives a null, not an error.
        let ids = cast(a, &DataType::Int64)?;
        if ids.null_count() > 0 {
            return Err(ArborError::Data(format!("group column '{name}' holds a query id past the 64-bit integers")));
        }
        out.extend_from_slice(ids.as_primitive::<arrow::datatypes::Int64Type>().values());
    }
    Ok(out)
}

/// Each value's rank among the distinct values (from 0), and how many
/// distinct values there are: query ids made dense, in ascending order.
pub(crate) fn dense_ids(values: &[i64]) -> (Vec<u32>, usize) {
    let mut distinct = values.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let ranks = values.iter().map(|v| distinct.binary_search(v).expect("a value of its own list") as u32).collect();
    (ranks, distinct.len())
}

/// A schema's fields as `name: type, ...`, for errors about schemas that differ.
pub(crate) fn field_list(schema: &Schema) -> String {
    schema.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>().join(", ")
}
