//! `predict_forest(model, feature, ...)` and `predict_forest_proba(model, feature, ...)`.

use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use arbor_ensemble::Model;
use arrow::array::{new_null_array, Array, ArrayRef, Float64Array, ListArray, UInt32Array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{cast, interleave, take};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::model_argument::binary_value;
use crate::model_cache::decoded;
use crate::sql_reference::DOC_SECTION;
use crate::PREDICTION_TYPE_KEY;

/// The table and model both examples start from.
const EXAMPLE_SETUP: &str =
    "> CREATE TABLE points AS SELECT CAST(v AS DOUBLE) AS x, v > 50 AS label FROM generate_series(1, 100) AS s(v);
> CREATE TABLE models AS SELECT train_forest(label, x, 'n_trees=5') AS forest FROM points;
";

const MODEL_ARGUMENT: &str = "A model from `train_forest` or `arbor train`: a literal, a column of a joined table \
    (one model per row), or a binary column read back from Parquet. Each distinct model is decoded once per query. \
    A NULL model gives NULL. `predict_forest_proba` also takes a scalar subquery; `predict_forest` does not, \
    because DataFusion's physical plan drops the model column's prediction type there: join the model instead.";

const FEATURE_ARGUMENT: &str = "The model's features, in the order it was trained with. Their count and kinds \
    (numeric or categorical) must match the model's; names need not. NULL and NaN are missing values.";

static PREDICT_DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Predicts each row with a decision forest. For a classification model the result is the predicted class, \
         typed like the label it was trained on (a string label gives strings back); for regression it is a \
         Float64 value. A feature count or kind that does not match the model is a planning error naming the \
         feature when the model is a literal or scalar subquery, an execution error otherwise.",
        "predict_forest(model, feature_1[, ..., feature_n])",
    )
    .with_argument("model", MODEL_ARGUMENT)
    .with_argument("feature_i", FEATURE_ARGUMENT)
    .with_sql_example(format!(
        "{EXAMPLE_SETUP}> SELECT x, predict_forest(m.forest, x) AS predicted FROM points, models m WHERE x IN (10, 90) ORDER BY x;
+------+-----------+
| x    | predicted |
+------+-----------+
| 10.0 | false     |
| 90.0 | true      |
+------+-----------+"
    ))
    .with_related_udf("predict_forest_proba")
    .with_related_udf("train_forest")
    .build()
});

static PROBA_DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Class probabilities of each row under a classification model, as a `List<Float64>` in the order of the \
         model's classes (`forest_info(model)` lists them). A random forest gives its trees' weighted (or, with \
         `voting=unweighted`, plain) vote shares; a boosted model its softmax or logistic probabilities.",
        "predict_forest_proba(model, feature_1[, ..., feature_n])",
    )
    .with_argument("model", MODEL_ARGUMENT)
    .with_argument("feature_i", FEATURE_ARGUMENT)
    .with_sql_example(format!(
        "{EXAMPLE_SETUP}> SELECT x, predict_forest_proba(m.forest, x) AS p FROM points, models m WHERE x IN (10, 90) ORDER BY x;
+------+------------+
| x    | p          |
+------+------------+
| 10.0 | [1.0, 0.0] |
| 90.0 | [0.0, 1.0] |
+------+------------+"
    ))
    .with_related_udf("predict_forest")
    .with_related_udf("forest_info")
    .build()
});

/// What a prediction function returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PredictOutput {
    /// `predict_forest`: the class (label type) or the value (Float64).
    Prediction,
    /// `predict_forest_proba`: class probabilities, `List<Float64>` in class order.
    Probabilities,
}

/// `predict_forest` / `predict_forest_proba`: score rows with a model given as
/// Binary (a literal, a scalar subquery, or a column holding one model per row).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PredictForest {
    signature: Signature,
    output: PredictOutput,
}

impl PredictForest {
    /// A new prediction function.
    pub fn new(output: PredictOutput) -> Self {
        PredictForest { signature: Signature::variadic_any(Volatility::Immutable), output }
    }

    fn exec_error(&self, e: impl std::fmt::Display) -> DataFusionError {
        DataFusionError::Execution(format!("{}: {e}", self.name()))
    }

    /// Predicts `rows` of `features` with one model; returns an array of the planned type.
    fn predict(&self, model: &Model, features: &[ArrayRef], planned: &DataType) -> Result<ArrayRef> {
        let predictions = model.predict_arrays(features).map_err(|e| self.exec_error(e))?;
        match self.output {
            PredictOutput::Prediction => {
                let array = model.prediction_array(&predictions).map_err(|e| self.exec_error(e))?;
                if array.data_type() == planned {
                    Ok(array)
                } else {
                    cast(&array, planned).map_err(|e| {
                        self.exec_error(format!(
                            "the model predicts {}, which cannot be given as the planned {planned}: {e}",
                            array.data_type()
                        ))
                    })
                }
            }
            PredictOutput::Probabilities => {
                if model.task != arbor_ensemble::Task::Classification {
                    return Err(self.exec_error("the model is a regression model; it has no class probabilities"));
                }
                let width = predictions.width;
                let values = Arc::new(Float64Array::from(predictions.values));
                let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(width, features[0].len()));
                Ok(Arc::new(ListArray::new(
                    Arc::new(Field::new_list_field(DataType::Float64, true)),
                    offsets,
                    values,
                    None,
                )))
            }
        }
    }
}

impl ScalarUDFImpl for PredictForest {
    fn name(&self) -> &str {
        match self.output {
            PredictOutput::Prediction => "predict_forest",
            PredictOutput::Probabilities => "predict_forest_proba",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(match self.output {
            PredictOutput::Prediction => &PREDICT_DOCUMENTATION,
            PredictOutput::Probabilities => &PROBA_DOCUMENTATION,
        })
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        internal_return_type()
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let fields = args.arg_fields;
        if fields.len() < 2 {
            return plan_err!("{} takes a model and its features: {}(model, feature, ...)", self.name(), self.name());
        }
        if !matches!(
            fields[0].data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null
        ) {
            return plan_err!(
                "{}: the first argument must be a model (Binary, as train_forest returns), got {}",
                self.name(),
                fields[0].data_type()
            );
        }
        let data_type = match self.output {
            PredictOutput::Probabilities => DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            PredictOutput::Prediction => {
                let from_literal = match args.scalar_arguments.first() {
                    Some(Some(
                        ScalarValue::Binary(Some(b))
                        | ScalarValue::LargeBinary(Some(b))
                        | ScalarValue::BinaryView(Some(b)),
                    )) => {
                        let model = decoded(b).map_err(|e| DataFusionError::Plan(format!("{}: {e}", self.name())))?;
                        Some(model.prediction_type().map_err(|e| DataFusionError::Plan(e.to_string()))?)
                    }
                    _ => None,
                };
                let from_metadata =
                    fields[0].metadata().get(PREDICTION_TYPE_KEY).and_then(|t| DataType::from_str(t).ok());
                match from_literal.or(from_metadata) {
                    Some(t) => t,
                    // DataFusion 55's physical scalar subquery drops the model column's
                    // metadata, so the type planned from the logical plan cannot be kept.
                    None if fields[0].name() == "scalar_subquery" => {
                        return plan_err!(
                            "{}: the prediction type of a model from a scalar subquery is lost in DataFusion's \
                             physical plan; join the model instead: FROM t CROSS JOIN (SELECT forest FROM models) m \
                             ... {}(m.forest, ...) (predict_forest_proba works either way)",
                            self.name(),
                            self.name()
                        )
                    }
                    // A binary column that did not come from train_forest: text is the one safe type.
                    None => DataType::Utf8,
                }
            }
        };
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n_rows = args.number_rows;
        let planned = args.return_field.data_type().clone();
        let mut iter = args.args.into_iter();
        let model_arg = iter.next().expect("checked at planning");
        let features: Vec<ArrayRef> = iter.map(|a| a.into_array(n_rows)).collect::<Result<_>>()?;
        match model_arg {
            ColumnarValue::Scalar(scalar) => {
                let bytes = match &scalar {
                    ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b) => b.as_deref(),
                    ScalarValue::Null => None,
                    other => return exec_err!("{}: the model must be Binary, got {}", self.name(), other.data_type()),
                };
                match bytes {
                    None => Ok(ColumnarValue::Array(new_null_array(&planned, n_rows))),
                    Some(bytes) => {
                        let model = decoded(bytes).map_err(|e| self.exec_error(e))?;
                        Ok(ColumnarValue::Array(self.predict(&model, &features, &planned)?))
                    }
                }
            }
            ColumnarValue::Array(models) => {
                // One prediction pass per distinct model; rows keep their order.
                let mut groups: Vec<(Arc<Model>, Vec<u32>)> = Vec::new();
                let mut null_rows = Vec::new();
                let mut last: Option<(&[u8], usize)> = None;
                for row in 0..n_rows {
                    let Some(bytes) = binary_value(models.as_ref(), row) else {
                        if !models.is_null(row) {
                            return exec_err!("{}: the model must be Binary, got {}", self.name(), models.data_type());
                        }
                        null_rows.push(row as u32);
                        continue;
                    };
                    let group = match last {
                        Some((b, g)) if std::ptr::eq(b, bytes) || b == bytes => g,
                        _ => {
                            let model = decoded(bytes).map_err(|e| self.exec_error(e))?;
                            match groups.iter().position(|(m, _)| Arc::ptr_eq(m, &model)) {
                                Some(g) => g,
                                None => {
                                    groups.push((model, Vec::new()));
                                    groups.len() - 1
                                }
                            }
                        }
                    };
                    last = Some((bytes, group));
                    groups[group].1.push(row as u32);
                }
                if groups.len() == 1 && null_rows.is_empty() {
                    return Ok(ColumnarValue::Array(self.predict(&groups[0].0, &features, &planned)?));
                }
                let mut parts: Vec<ArrayRef> = Vec::with_capacity(groups.len() + 1);
                let mut position = vec![(0usize, 0usize); n_rows];
                for (g, (model, rows)) in groups.iter().enumerate() {
                    let indices = UInt32Array::from(rows.clone());
                    let taken: Vec<ArrayRef> =
                        features.iter().map(|f| take(f.as_ref(), &indices, None)).collect::<Result<_, _>>()?;
                    parts.push(self.predict(model, &taken, &planned)?);
                    for (i, &r) in rows.iter().enumerate() {
                        position[r as usize] = (g, i);
                    }
                }
                let nulls = groups.len();
                parts.push(new_null_array(&planned, 1));
                for &r in &null_rows {
                    position[r as usize] = (nulls, 0);
                }
                let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
                Ok(ColumnarValue::Array(interleave(&refs, &position)?))
            }
        }
    }
}

fn internal_return_type() -> Result<DataType> {
    datafusion::common::internal_err!("return_field_from_args gives the type of predict_forest")
}
