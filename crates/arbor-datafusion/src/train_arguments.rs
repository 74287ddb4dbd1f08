//! What a training aggregate is given: label, features, sample weights and
//! options, read once when it is planned, and its rows read as training data.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_ensemble::{ArborError, NamedColumn, RowColumns, Task, TrainParams, TrainingData};
use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, FieldRef, Schema};
use datafusion::common::{plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::PhysicalExpr;

use crate::column_chunks::ColumnChunks;
use crate::error::FunctionError;
use crate::model_column::ModelKind;
use crate::sql_options::TrainOptions;

/// The function's name, in its errors.
const NAME: &str = "train_forest";

/// `train_forest`'s arguments: the data arguments' names and types (label
/// first), which of them holds sample weights, the parsed options, and the
/// argument that holds a model to continue, if any.
pub(crate) struct TrainArguments {
    pub names: Vec<String>,
    pub types: Vec<DataType>,
    pub weight: Option<usize>,
    /// Which of them holds query ids (`group`, for a ranking loss).
    pub group: Option<usize>,
    pub options: TrainOptions,
    /// A model argument (a model column or Binary) after the features:
    /// boosting continues from it (`init_model`). Its position among the
    /// arguments, which is the data arguments' count.
    pub init: Option<usize>,
}

impl TrainArguments {
    /// Reads the arguments `exprs` (of `fields`, over `schema`): a trailing
    /// string literal is the options, and a model argument before it (or
    /// last) the model to continue; the weight option must name a feature
    /// argument and leave another.
    pub(crate) fn read(
        exprs: &[Arc<dyn PhysicalExpr>],
        fields: &[FieldRef],
        schema: &Schema,
    ) -> Result<TrainArguments> {
        let mut n_data = exprs.len();
        let mut options = TrainOptions::default();
        let mut algorithm_given = false;
        if let Some(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s))) =
            exprs.last().and_then(|e| constant(e, schema))
        {
            options = TrainOptions::parse(&s).plan(NAME)?;
            algorithm_given = TrainParams::option_pairs(&s).is_ok_and(|p| p.iter().any(|(k, _)| *k == "algorithm"));
            n_data -= 1;
        }
        let is_model =
            |f: &FieldRef| matches!(ModelKind::of(f.data_type()), Some(ModelKind::Typed(_) | ModelKind::Bytes));
        if let Some(i) = fields[..n_data].iter().skip(1).position(is_model).map(|i| i + 1).filter(|&i| i + 1 < n_data) {
            return plan_err!(
                "train_forest: argument '{}' is a model; a model to continue goes after the features, \
                 before the options: train_forest(label, feature, ..., model[, 'options'])",
                fields[i].name()
            );
        }
        let init = (n_data > 2 && is_model(&fields[n_data - 1])).then(|| {
            n_data -= 1;
            n_data
        });
        if init.is_some() && !algorithm_given {
            // A model to continue is a boosted one: boosting is the default.
            options.params.set("algorithm", "gradient-boosting").plan(NAME)?;
        }
        if n_data < 2 {
            return plan_err!(
                "train_forest takes a label and at least one feature: train_forest(label, feature, ... [, 'options'])"
            );
        }
        let names: Vec<String> = fields[..n_data].iter().map(|f| f.name().clone()).collect();
        let types: Vec<DataType> = fields[..n_data].iter().map(|f| f.data_type().clone()).collect();
        let weight = per_row_argument("weight", options.weight.as_deref(), &names, &[])?;
        let group =
            per_row_argument("group", options.group.as_deref(), &names, &weight.into_iter().collect::<Vec<_>>())?;
        Ok(TrainArguments { names, types, weight, group, options, init })
    }
}

/// The argument a per-row option (`weight`, `group`) names, by its place
/// among the data arguments: one after the label, and not one of `taken`,
/// leaving a feature to train on.
fn per_row_argument(key: &str, name: Option<&str>, names: &[String], taken: &[usize]) -> Result<Option<usize>> {
    let Some(name) = name else { return Ok(None) };
    match names.iter().skip(1).position(|n| n == name).map(|i| i + 1) {
        Some(i) if taken.contains(&i) => plan_err!("train_forest: option '{key}': '{name}' is named by another option"),
        Some(i) if names.len() > 2 + taken.len() => Ok(Some(i)),
        Some(_) => plan_err!("train_forest: the {key} '{name}' leaves no feature to train on"),
        None => plan_err!(
            "train_forest: option '{key}': '{name}' is not a feature argument; arguments after the label: {}",
            names[1..].join(", ")
        ),
    }
}

/// The arguments read per row beside the label and the features: which
/// holds sample weights, which query ids.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PerRowArgs {
    pub weight: Option<usize>,
    pub group: Option<usize>,
}

impl PerRowArgs {
    /// Whether argument `i` is a feature (neither the weight nor the group).
    pub(crate) fn is_feature(self, i: usize) -> bool {
        Some(i) != self.weight && Some(i) != self.group
    }
}

/// The rows held for arguments `names` (of `types`, the label first,
/// `per_row` the sample weights and query ids) as training data: in
/// canonical order when `sorted` (to train on), as held otherwise (to sum).
pub(crate) fn training_data(
    names: &[String],
    types: &[DataType],
    per_row: PerRowArgs,
    arrays: &mut [ColumnChunks],
    task: Option<Task>,
    sorted: bool,
) -> std::result::Result<TrainingData, ArborError> {
    let mut column = |i: usize| -> Result<NamedColumn> {
        Ok(NamedColumn { name: names[i].clone(), arrays: arrays[i].compacted()? })
    };
    let columns = (|| {
        let feature_args: Vec<usize> = (1..names.len()).filter(|&i| per_row.is_feature(i)).collect();
        let features = feature_args.into_iter().map(&mut column).collect::<Result<Vec<_>>>()?;
        let weight = per_row.weight.map(&mut column).transpose()?;
        let group = per_row.group.map(&mut column).transpose()?;
        Ok::<_, datafusion::error::DataFusionError>((column(0)?, features, RowColumns { weight, group }))
    })();
    let (label, features, per_row) = columns.map_err(|e| ArborError::Data(e.to_string()))?;
    let types: HashMap<&str, &DataType> = names.iter().map(String::as_str).zip(types).collect();
    let declared = |n: &str| types.get(n).map(|t| (*t).clone());
    match sorted {
        true => TrainingData::from_columns(label, features, per_row, task, declared),
        false => TrainingData::from_columns_unsorted(label, features, per_row, task, declared),
    }
}

/// The value of a constant argument: a literal, or (where the expression
/// arrives wrapped, as through the DataFusion FFI from datafusion-python) an
/// expression that evaluates to a scalar without reading any row. A column
/// evaluates to an array, so it is never taken for options. A dictionary
/// literal gives its value: level-wise training passes its large constants
/// so, because an aggregate's arguments are repeated for every row of a
/// batch, and a dictionary repeats only a key.
pub(crate) fn constant(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<ScalarValue> {
    let value = match expr.downcast_ref::<Literal>() {
        Some(literal) => literal.value().clone(),
        None => match expr.evaluate(&RecordBatch::new_empty(Arc::new(schema.clone()))) {
            Ok(ColumnarValue::Scalar(value)) => value,
            _ => return None,
        },
    };
    match value {
        ScalarValue::Dictionary(_, value) => Some(*value),
        value => Some(value),
    }
}
