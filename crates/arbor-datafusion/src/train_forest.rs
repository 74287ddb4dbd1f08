//! `train_forest(label, feature, ... [, 'options'])`: an aggregate that trains a model.
//!
//! Sample weights come from one of the arguments, named by the `weight`
//! option: `train_forest(label, f1, f2, w, 'weight=w n_trees=50')`.

use std::sync::{Arc, LazyLock};

use arbor_ensemble::{default_task, Algorithm, ArborError, CheckedParams, Model, Task, TrainParams, Trainer};
use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{cast, concat};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::hash_utils::{create_hashes, RandomState};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Documentation, Signature, Volatility};

use crate::column_chunks::ColumnChunks;
use crate::error::FunctionError;
use crate::init_model::InitModel;
use crate::model_column::{model_scalar, model_type, null_model_scalar};
use crate::sql_options::{is_option_key, OnGroupError};
use crate::sql_reference::DOC_SECTION;
use crate::train_arguments::{constant, training_data, PerRowArgs, TrainArguments};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Trains a decision forest on the rows of each group and returns the model: a struct of its bytes \
         (`model`, BinaryView) and a NULL `prediction` slot whose type is the type `predict_forest` returns. The model is \
         a random forest by default, extra trees with `splitter=random`, gradient boosted trees with \
         `algorithm=gradient-boosting`. The task follows the label's type (integer, boolean or string: \
         classification; floating point: regression) unless the `task` option says otherwise. Nulls and NaN in \
         features are missing values, which the trees learn a direction for; rows with a null label are skipped. \
         A label that holds a single class (a small group, often) trains a model that predicts that class with \
         probability 1, as scikit-learn's forests do; `forest_info` says so in its `warnings`. A group with no \
         row to train on (no rows, a label null in every row) gets a NULL model, or fails the query with \
         `on_group_error=fail`. Without GROUP BY the input is binned as it is read: read twice when it gives the same \
         rows each time (scans, filters, joins; no LIMIT, no volatile function), else read once and its arguments \
         held, so its raw values are never held whole (`EXPLAIN` shows `BinnedTrainingExec`). Under GROUP BY a group's \
         rows stay in memory until its model trains. Either way memory is counted against the session's memory pool \
         (`SET datafusion.runtime.memory_limit`): a request past it is an error naming the figure. The same rows and \
         options give the same model bytes as `arbor train`, whatever the partitioning. A model argument after the \
         features continues boosting from that model (see `model`).",
        "train_forest(label, feature_1[, ..., feature_n][, model][, 'options'])",
    )
    .with_argument(
        "label",
        "What to predict: an integer, boolean or string column for classification, a floating-point one for regression.",
    )
    .with_argument(
        "feature_i",
        "A feature column; its name is the feature's name in the model. Numeric and boolean columns are numeric \
         features, string and dictionary columns categorical ones.",
    )
    .with_argument(
        "model",
        "Optional: a boosted model to continue (`init_model`), as `train_forest` returns it or its bytes as Binary: a \
         scalar subquery, or a joined model table's column with GROUP BY (one model per group; different models in \
         one group are an error, a NULL model trains from scratch). Its rounds come first, then `n_rounds` more, on \
         its bins, features (the feature arguments, by name, in any order), classes and loss; boosting is the \
         default then. The group's rows are held until it trains.",
    )
    .with_argument(
        "options",
        "A string literal of `key=value` pairs separated by spaces or commas, with the keys of `arbor train --set` \
         (see [Training options](#training-options)), e.g. `'n_trees=200 max_depth=12'`, and SQL's own keys \
         (see [SQL options](#sql-options)): `weight=ARG` names the argument that holds sample weights, \
         `on_group_error=null|fail` says what a group with no row to train on gives.",
    )
    .with_sql_example(
        r#"> CREATE TABLE points AS SELECT CAST(v AS DOUBLE) AS x, v % 3 AS shop, v > 50 AS label, 1.0 + v % 2 AS w FROM generate_series(1, 300) AS s(v);
> CREATE TABLE models AS SELECT shop, train_forest(label, x, w, 'n_trees=5 weight=w') AS forest FROM points GROUP BY shop;
> SELECT m.shop, arrow_typeof(m.forest['prediction']) AS predicts, avg(CASE WHEN predict_forest(m.forest, p.x) = p.label THEN 1.0 ELSE 0.0 END) AS accuracy FROM points p JOIN models m ON p.shop = m.shop GROUP BY 1, 2 ORDER BY 1;
+------+----------+----------+
| shop | predicts | accuracy |
+------+----------+----------+
| 0    | Boolean  | 0.99     |
| 1    | Boolean  | 0.98     |
| 2    | Boolean  | 0.98     |
+------+----------+----------+"#,
    )
    .with_related_udf("predict_forest")
    .with_related_udf("forest_info")
    .build()
});

/// The function's name, in its errors.
const NAME: &str = "train_forest";

/// The `train_forest` aggregate: collects its group's rows, then trains.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TrainForest {
    signature: Signature,
    /// Whether partial aggregates grow random forests on their own rows (see
    /// [`TrainForest::distributed`]) instead of passing the rows on.
    distributed: bool,
}

impl TrainForest {
    /// A new `train_forest`: every group's rows reach one accumulator, which
    /// trains exactly the model `arbor train` would.
    pub fn new() -> Self {
        TrainForest { signature: Signature::variadic_any(Volatility::Immutable), distributed: false }
    }

    /// `train_forest` for a cluster: a partial aggregate holding at least
    /// 4,096 rows of a group grows a random forest on them (of
    /// `ceil(n_trees / parts)` trees, `parts` being the option the cluster
    /// planner sets), and the final aggregate merges those forests into one
    /// of `n_trees` trees, allotted by rows. Smaller pieces, and gradient
    /// boosting, still send their rows on to the final aggregate.
    pub fn distributed() -> Self {
        TrainForest { distributed: true, ..Self::new() }
    }

    /// Whether partial aggregates train (see [`TrainForest::distributed`]).
    pub fn is_distributed(&self) -> bool {
        self.distributed
    }
}

/// The fewest rows of a group a partial aggregate grows a forest on in
/// distributed mode; smaller pieces send their rows on.
pub const PART_MIN_ROWS: usize = 4096;

impl Default for TrainForest {
    fn default() -> Self {
        Self::new()
    }
}

/// The prediction type a label implies when no option overrides the task.
pub(crate) fn prediction_type(label: &DataType) -> DataType {
    match default_task(label) {
        Task::Classification => label.clone(),
        Task::Regression => DataType::Float64,
    }
}

impl AggregateUDFImpl for TrainForest {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// A model column (see [`crate::model_column`]): its bytes are a
    /// `BinaryView`, so that a join that repeats the model on every row
    /// repeats a 16-byte view, not the model's bytes.
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(label) => Ok(model_type(prediction_type(label))),
            None => plan_err!("train_forest takes a label and at least one feature"),
        }
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        if arg_fields.len() < 2 {
            return plan_err!(
                "train_forest takes a label and at least one feature: train_forest(label, feature, ... [, 'options'])"
            );
        }
        Ok(Arc::new(Field::new(self.name(), model_type(prediction_type(arg_fields[0].data_type())), true)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let TrainArguments { names, types, weight, group, options, init } =
            TrainArguments::read(args.exprs, args.expr_fields, args.schema)?;
        let n_data = names.len();
        let init = init.map(|index| -> Result<InitModel> {
            let field = &args.expr_fields[index];
            let mut model = InitModel::new(field.name().clone(), field.data_type().clone(), index);
            // A literal (or a scalar subquery's value) is read once, here.
            if let Some(value) = constant(&args.exprs[index], args.schema) {
                model.see(&value.to_array()?)?;
                model.constant = true;
            }
            Ok(model)
        });
        Ok(Box::new(TrainForestAccumulator {
            init: init.transpose()?,
            names,
            types,
            per_row: PerRowArgs { weight, group },
            n_args: args.exprs.len(),
            params: options.params.check().exec(NAME)?,
            on_group_error: options.on_group_error,
            arrays: vec![ColumnChunks::default(); n_data],
            planned: prediction_type(args.expr_fields[0].data_type()),
            distributed: self.distributed,
            parts_hint: options.parts,
            parts: Vec::new(),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let mut fields: Vec<FieldRef> = args
            .input_fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let item = Field::new_list_field(f.data_type().clone(), true);
                Arc::new(Field::new(format!("{}[{i}]", args.name), DataType::List(Arc::new(item)), true))
            })
            .collect();
        if self.distributed {
            let item = Field::new_list_field(DataType::Binary, true);
            fields.push(Arc::new(Field::new(format!("{}[parts]", args.name), DataType::List(Arc::new(item)), true)));
        }
        Ok(fields)
    }
}

/// Rows of one group, kept column by column until evaluation.
#[derive(Debug)]
struct TrainForestAccumulator {
    names: Vec<String>,
    types: Vec<DataType>,
    /// The arguments holding sample weights and query ids, if any.
    per_row: PerRowArgs,
    n_args: usize,
    /// The options, checked when the accumulator is made.
    params: CheckedParams,
    /// What a group with no row to train on gives.
    on_group_error: OnGroupError,
    arrays: Vec<ColumnChunks>,
    planned: DataType,
    /// Whether a partial state grows a forest on its rows (see [`TrainForest::distributed`]).
    distributed: bool,
    /// The number of partitions the rows arrive in, as the cluster planner set it (`parts`).
    parts_hint: Option<usize>,
    /// Forests grown by partial aggregates, as model bytes.
    parts: Vec<Vec<u8>>,
    /// The model boosting continues from, if an argument gives one.
    init: Option<InitModel>,
}

impl TrainForestAccumulator {
    /// Trains on the rows held, with `params`.
    fn fit(&mut self, params: CheckedParams) -> std::result::Result<Model, ArborError> {
        let data = training_data(&self.names, &self.types, self.per_row, &mut self.arrays, params.task, true)?;
        match self.init.as_ref().map(InitModel::decoded).transpose()?.flatten() {
            Some(model) => Ok(Trainer::checked(params).init_model(&model).fit_owned(data)?.model),
            None => Ok(Trainer::checked(params).fit_owned(data)?.model),
        }
    }

    /// Rows held.
    fn row_count(&mut self) -> Result<usize> {
        Ok(self.arrays[0].compacted()?.iter().map(|a| a.len()).sum())
    }

    /// In a partial aggregate of the distributed mode: grows a random forest
    /// on the rows held, if there are enough of them, and lets them go.
    fn grow_part(&mut self) -> Result<()> {
        let rows = self.row_count()?;
        if rows < PART_MIN_ROWS || self.params.algorithm.0 != Algorithm::RandomForest {
            return Ok(());
        }
        let parts = self.parts_hint.unwrap_or(1).max(1);
        let trees = self.params.forest.n_trees.div_ceil(parts);
        let params = self.part_params(trees, rows)?;
        match self.fit(params) {
            Ok(model) => {
                self.parts.push(model.to_bytes());
                self.arrays.iter_mut().for_each(|a| *a = ColumnChunks::default());
                Ok(())
            }
            // Rows with nothing to learn from go on to the final aggregate, which decides.
            Err(ArborError::NothingToTrain(_)) => Ok(()),
            Err(e) => Err(e).exec(NAME),
        }
    }

    /// The options of a part of `trees` trees on `rows` rows: its seed mixes
    /// the query's seed with the part's content (a sum of row hashes, so the
    /// rows' order does not matter), so that parts holding different rows draw
    /// differently, and the same part always alike. New parameters, so
    /// checked like the query's.
    fn part_params(&mut self, trees: usize, rows: usize) -> Result<CheckedParams> {
        let columns = (0..self.names.len()).map(|i| self.arrays[i].compacted()).collect::<Result<Vec<_>>>()?;
        let state = RandomState::with_seed(0x0a7b_0a7b);
        let mut content = rows as u64;
        let mut hashes = Vec::new();
        for chunk in 0..columns[0].len() {
            let arrays: Vec<ArrayRef> = columns.iter().map(|c| c[chunk].clone()).collect();
            hashes.clear();
            hashes.resize(arrays[0].len(), 0);
            create_hashes(&arrays, &state, &mut hashes)?;
            content = hashes.iter().fold(content, |sum, h| sum.wrapping_add(*h));
        }
        let mut params = self.params.clone().into_inner();
        params.forest.n_trees = trees;
        params.forest.tree.seed ^= xxhash_rust::xxh3::xxh3_64(&content.to_le_bytes());
        params.check().exec(NAME)
    }

    /// In the final aggregate of the distributed mode: the forests the
    /// partial aggregates grew, plus one on the rows that came as rows,
    /// merged into one forest of `n_trees` trees.
    fn merge_parts(&mut self) -> Result<Model> {
        let mut parts =
            self.parts.iter().map(|b| Model::from_bytes(b)).collect::<std::result::Result<Vec<_>, _>>().exec(NAME)?;
        let pooled = self.row_count()?;
        if pooled > 0 {
            let part_rows: u64 = parts.iter().map(Model::training_rows).sum();
            let n_trees = self.params.forest.n_trees;
            let trees = (n_trees as u64 * pooled as u64).div_ceil(pooled as u64 + part_rows).max(1) as usize;
            let params = self.part_params(trees, pooled)?;
            match self.fit(params) {
                Ok(model) => parts.push(model),
                Err(ArborError::NothingToTrain(_)) => {}
                Err(e) => return Err(e).exec(NAME),
            }
        }
        let total: usize = parts.iter().map(|m| m.trees().len()).sum();
        let n_trees = self.params.forest.n_trees.min(total);
        Model::merge_forests(parts, n_trees, self.params.forest.tree.seed).exec(NAME)
    }

    /// The group as an error can tell it without its key: its row count and
    /// the arguments' values in one of its rows (the first to arrive).
    fn describe_group(&mut self) -> Result<String> {
        let rows: usize = self.arrays[0].compacted()?.iter().map(|a| a.len()).sum();
        if rows == 0 {
            return Ok("a group of 0 rows".to_owned());
        }
        let mut values = Vec::with_capacity(self.names.len());
        for i in 0..self.names.len() {
            let first = self.arrays[i].compacted()?.into_iter().find(|a| !a.is_empty());
            let value = match first {
                Some(array) => ScalarValue::try_from_array(&array, 0)?.to_string(),
                None => "NULL".to_owned(),
            };
            values.push(format!("{}={}", self.names[i], shortened(&value)));
        }
        Ok(format!("a group of {rows} rows (one of them: {})", values.join(", ")))
    }
}

/// The model column of a trained `model`, or an error when it predicts
/// other than the query was planned for (`task=regression` on an integer
/// `label`, say).
pub(crate) fn trained_column(
    model: &Model,
    planned: &DataType,
    label: &str,
    label_type: &DataType,
) -> Result<ScalarValue> {
    let predicts = model.prediction_type().exec(NAME)?;
    if predicts != *planned {
        return exec_err!(
            "train_forest: task={} on a {label_type} label predicts {predicts}, but the query was planned for \
             {planned}; cast the label instead (e.g. CAST({label} AS DOUBLE) for regression)",
            model.task().name()
        );
    }
    model_scalar(model.to_bytes(), planned)
}

/// A value as an error message shows it: at most 40 characters.
fn shortened(value: &str) -> String {
    const MAX_CHARS: usize = 40;
    match value.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}...", &value[..end]),
        None => value.to_owned(),
    }
}

/// The first value of a string argument when it reads as an options string
/// (`key=value` pairs with known keys): options passed as a column by mistake.
pub(crate) fn options_like(arrays: &[ArrayRef]) -> Result<Option<String>> {
    let Some(array) = arrays.iter().find(|a| a.null_count() < a.len()) else { return Ok(None) };
    let is_string = |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let string_like = match array.data_type() {
        DataType::Dictionary(_, value) => is_string(value),
        t => is_string(t),
    };
    if !string_like {
        return Ok(None);
    }
    let first = (0..array.len()).find(|&i| array.is_valid(i)).unwrap_or(0);
    let value = cast(&array.slice(first, 1), &DataType::Utf8)?;
    let value = value.as_string::<i32>().value(0);
    let reads_as_options = value.contains('=')
        && TrainParams::option_pairs(value).is_ok_and(|pairs| pairs.iter().all(|(key, _)| is_option_key(key)));
    Ok(reads_as_options.then(|| value.to_owned()))
}

impl Accumulator for TrainForestAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (store, array) in self.arrays.iter_mut().zip(values) {
            store.push(array.clone())?;
        }
        if let Some(init) = self.init.as_mut().filter(|init| !init.constant) {
            init.see(&values[init.index])?;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let last = self.names.len() - 1;
        if let Some(value) = options_like(&self.arrays[last].compacted()?)? {
            return exec_err!(
                "train_forest: the last argument '{}' holds '{value}', which reads as options, but options must be \
                 a string literal (a string column would be trained on as a categorical feature)",
                self.names[last]
            );
        }
        let model = if self.parts.is_empty() {
            // Described before the rows move into training, in case the group has none to train on.
            let group = match self.on_group_error {
                OnGroupError::Fail => Some(self.describe_group()?),
                OnGroupError::Null => None,
            };
            match (self.fit(self.params.clone()), group) {
                (Ok(model), _) => model,
                (Err(ArborError::NothingToTrain(_)), None) => return null_model_scalar(&self.planned),
                (Err(ArborError::NothingToTrain(reason)), Some(group)) => {
                    return exec_err!(
                        "{NAME}: on_group_error=fail, and {group} has nothing to train on: {reason}. DataFusion does \
                         not give an aggregate its GROUP BY key; with on_group_error=null (the default) such a group \
                         gets a NULL model, and WHERE <model> IS NULL lists the groups by their keys"
                    )
                }
                (Err(e), _) => return Err(e).exec(NAME),
            }
        } else {
            self.merge_parts()?
        };
        trained_column(&model, &self.planned, &self.names[0], &self.types[0])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.arrays.iter().map(ColumnChunks::size).sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        if self.distributed {
            self.grow_part()?;
        }
        let mut out = Vec::with_capacity(self.n_args + 1);
        for i in 0..self.n_args {
            if let Some(init) = self.init.as_ref().filter(|init| init.index == i) {
                out.push(list_scalar(init.state()));
                continue;
            }
            let data_type = self.types.get(i).cloned().unwrap_or(DataType::Utf8);
            let arrays = match self.arrays.get_mut(i) {
                Some(column) => column.compacted()?,
                None => Vec::new(),
            };
            let values = match arrays.len() {
                0 => arrow::array::new_empty_array(&data_type),
                1 => arrays[0].clone(),
                _ => concat(&arrays.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
            };
            out.push(list_scalar(values));
        }
        if self.distributed {
            let parts: ArrayRef = Arc::new(BinaryArray::from_iter_values(self.parts.iter()));
            out.push(list_scalar(parts));
        }
        Ok(out)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for (store, state) in self.arrays.iter_mut().zip(states) {
            let list = state.as_list::<i32>();
            for j in 0..list.len() {
                if list.is_valid(j) {
                    store.push(list.value(j))?;
                }
            }
        }
        if let Some(init) = &mut self.init {
            let list = states[init.index].as_list::<i32>();
            for j in (0..list.len()).filter(|&j| list.is_valid(j)) {
                init.see(&list.value(j))?;
            }
        }
        if self.distributed {
            if let Some(state) = states.get(self.n_args) {
                let list = state.as_list::<i32>();
                for j in (0..list.len()).filter(|&j| list.is_valid(j)) {
                    let parts = list.value(j);
                    let parts = parts.as_binary::<i32>();
                    self.parts.extend(parts.iter().flatten().map(<[u8]>::to_vec));
                }
            }
        }
        Ok(())
    }
}

/// One value of a list column: all of `values`.
fn list_scalar(values: ArrayRef) -> ScalarValue {
    let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    ScalarValue::List(Arc::new(ListArray::new(field, OffsetBuffer::from_lengths([values.len()]), values, None)))
}
