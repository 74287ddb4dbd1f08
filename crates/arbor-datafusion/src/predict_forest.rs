//! `predict_forest(model, feature, ...)`, `predict_forest_proba(model, feature, ...)` and
//! `predict_forest_contributions(model, feature, ...)`.

use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use arbor_ensemble::Model;
use arrow::array::{new_null_array, Array, ArrayRef, ListArray, UInt32Array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{cast, interleave, take};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{internal_datafusion_err, internal_err, plan_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{exec_error, FunctionError};
use crate::model_argument::scalar_buffer;
use crate::model_cache::ModelCache;
use crate::model_column::{ModelBytes, ModelKind, PREDICTION_TYPE_KEY};
use crate::sql_reference::DOC_SECTION;

/// The table and model both examples start from.
const EXAMPLE_SETUP: &str =
    "> CREATE TABLE points AS SELECT CAST(v AS DOUBLE) AS x, v > 50 AS label FROM generate_series(1, 100) AS s(v);
> CREATE TABLE models AS SELECT train_forest(label, x, 'n_trees=5') AS forest FROM points;
";

const MODEL_ARGUMENT: &str = "A model from `train_forest`: a column of a joined table (one model per row), a scalar \
    subquery, or a model column read back from Parquet. Its type carries the type of the predictions. The bytes of \
    a model written by `arbor train` are taken too, as a Binary literal (typed from the bytes) or column (then \
    `predict_forest` returns the class as text). Each distinct model is decoded once per session. A NULL model \
    gives NULL.";

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
         `voting=unweighted`, plain) vote shares; a boosted model its softmax or logistic probabilities. The list \
         has one entry per class of the model, so a model trained on a label that held a single class (a small \
         group, often) gives `[1.0]` for every row, the probability of its one class: under GROUP BY, models \
         may differ in their classes and so in the length of their lists (`forest_info` names the classes). A \
         regression model is an error; a NULL model gives NULL.",
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

static CONTRIBUTIONS_DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Explains each row's prediction: every feature's SHAP contribution to the raw score (exact TreeSHAP, \
         missing values following each split's default branch), in feature order, then the bias, the raw score \
         expected over the training data; the list sums to the row's raw score. The raw score is a regression's \
         value, a boosted model's margin before its link (one for two classes, one per class for more), a forest \
         classifier's probability of each class (of the second class alone for two). For k > 1 such scores the \
         list holds k blocks of features-then-bias, in class order (`forest_info` names the classes). A model \
         written before arbor recorded node covers (model format 4) is an error; a NULL model gives NULL.",
        "predict_forest_contributions(model, feature_1[, ..., feature_n])",
    )
    .with_argument("model", MODEL_ARGUMENT)
    .with_argument("feature_i", FEATURE_ARGUMENT)
    .with_sql_example(format!(
        "{EXAMPLE_SETUP}> SELECT x, round(c[1], 3) AS contrib_x, round(c[2], 3) AS bias FROM (SELECT x, predict_forest_contributions(m.forest, x) AS c FROM points, models m WHERE x IN (10, 90)) ORDER BY x;
+------+-----------+-------+
| x    | contrib_x | bias  |
+------+-----------+-------+
| 10.0 | -0.518    | 0.518 |
| 90.0 | 0.482     | 0.518 |
+------+-----------+-------+"
    ))
    .with_related_udf("predict_forest_proba")
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
    /// `predict_forest_contributions`: each feature's SHAP contribution then
    /// the bias, `List<Float64>`, per output explained.
    Contributions,
}

/// `predict_forest` / `predict_forest_proba`: score rows with a model (a
/// scalar, or a column holding one model per row).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PredictForest {
    signature: Signature,
    output: PredictOutput,
    cache: Arc<ModelCache>,
}

impl PredictForest {
    /// A new prediction function decoding its models through `cache`.
    pub fn new(output: PredictOutput, cache: Arc<ModelCache>) -> Self {
        PredictForest { signature: Signature::variadic_any(Volatility::Immutable), output, cache }
    }

    fn exec_error(&self, e: impl std::fmt::Display) -> DataFusionError {
        exec_error(self.name(), e)
    }

    /// The type `predict_forest` gives a model argument that is bare bytes:
    /// from a literal's bytes, else from legacy field metadata, else text.
    fn bytes_prediction_type(&self, field: &Field, literal: Option<&ScalarValue>) -> Result<DataType> {
        if let Some(
            ScalarValue::Binary(Some(b)) | ScalarValue::LargeBinary(Some(b)) | ScalarValue::BinaryView(Some(b)),
        ) = literal
        {
            let model = self.cache.decode(arrow::buffer::Buffer::from(b.as_slice())).plan(self.name())?;
            return model.prediction_type().plan(self.name());
        }
        let from_metadata = field.metadata().get(PREDICTION_TYPE_KEY).and_then(|t| DataType::from_str(t).ok());
        // Bytes of unknown origin: text is the one type every label converts to.
        Ok(from_metadata.unwrap_or(DataType::Utf8))
    }

    /// Predicts `rows` of `features` with one model; returns an array of the planned type.
    fn predict(&self, model: &Model, features: &[ArrayRef], planned: &DataType) -> Result<ArrayRef> {
        if self.output == PredictOutput::Contributions {
            let contributions = model.contributions_arrays(features).exec(self.name())?;
            return Ok(Arc::new(model.contributions_list(contributions).exec(self.name())?));
        }
        let predictions = model.score_arrays(features).exec(self.name())?;
        match self.output {
            PredictOutput::Prediction => {
                let array = model.prediction_array(&predictions).exec(self.name())?;
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
                let proba = model.proba_array(predictions).exec(self.name())?;
                let width = proba.value_length() as usize;
                let values = proba.values().clone();
                let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(width, proba.len()));
                Ok(Arc::new(ListArray::new(
                    Arc::new(Field::new_list_field(DataType::Float64, true)),
                    offsets,
                    values,
                    None,
                )))
            }
            PredictOutput::Contributions => internal_err!("contributions are explained above"),
        }
    }
}

impl ScalarUDFImpl for PredictForest {
    fn name(&self) -> &str {
        match self.output {
            PredictOutput::Prediction => "predict_forest",
            PredictOutput::Probabilities => "predict_forest_proba",
            PredictOutput::Contributions => "predict_forest_contributions",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(match self.output {
            PredictOutput::Prediction => &PREDICT_DOCUMENTATION,
            PredictOutput::Probabilities => &PROBA_DOCUMENTATION,
            PredictOutput::Contributions => &CONTRIBUTIONS_DOCUMENTATION,
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
        let kind = ModelKind::expect(self.name(), fields[0].data_type())?;
        let data_type = match self.output {
            PredictOutput::Probabilities => DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            PredictOutput::Contributions => arbor_ensemble::contributions_type(),
            PredictOutput::Prediction => match kind {
                ModelKind::Typed(t) => t,
                ModelKind::Bytes | ModelKind::Null => {
                    self.bytes_prediction_type(&fields[0], args.scalar_arguments.first().copied().flatten())?
                }
            },
        };
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n_rows = args.number_rows;
        let planned = args.return_field.data_type().clone();
        let mut iter = args.args.into_iter();
        let Some(model_arg) = iter.next() else { return internal_err!("predict_forest without arguments") };
        let features: Vec<ArrayRef> = iter.map(|a| a.into_array(n_rows)).collect::<Result<_>>()?;
        match model_arg {
            ColumnarValue::Scalar(scalar) => match scalar_buffer(self.name(), scalar)? {
                None => Ok(ColumnarValue::Array(new_null_array(&planned, n_rows))),
                Some(bytes) => {
                    let model = self.cache.decode(bytes).exec(self.name())?;
                    Ok(ColumnarValue::Array(self.predict(&model, &features, &planned)?))
                }
            },
            ColumnarValue::Array(models) => {
                let models = ModelBytes::new(self.name(), models.as_ref())?;
                // One prediction pass per distinct model; rows keep their order.
                let mut groups: Vec<(Arc<Model>, Vec<u32>)> = Vec::new();
                let mut null_rows = Vec::new();
                let mut last: Option<(&[u8], usize)> = None;
                for row in 0..n_rows {
                    let Some(bytes) = models.get(row) else {
                        null_rows.push(row as u32);
                        continue;
                    };
                    let group = match last {
                        Some((b, g)) if std::ptr::eq(b, bytes) || b == bytes => g,
                        _ => {
                            let buffer =
                                models.buffer(row).ok_or_else(|| internal_datafusion_err!("a row with bytes"))?;
                            let model = self.cache.decode(buffer).exec(self.name())?;
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
