//! `predict_forest(model, feature, ...)` and `predict_forest_proba(model, feature, ...)`.

use std::str::FromStr;
use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::{new_null_array, Array, ArrayRef, Float64Array, ListArray, UInt32Array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{cast, interleave, take};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::model_argument::binary_value;
use crate::model_cache::ModelCache;
use crate::PREDICTION_TYPE_KEY;

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
#[derive(Debug)]
pub struct PredictForest {
    signature: Signature,
    output: PredictOutput,
    cache: ModelCache,
}

impl PartialEq for PredictForest {
    fn eq(&self, other: &Self) -> bool {
        self.output == other.output
    }
}

impl Eq for PredictForest {}

impl std::hash::Hash for PredictForest {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.output.hash(state)
    }
}

impl PredictForest {
    /// A new prediction function.
    pub fn new(output: PredictOutput) -> Self {
        PredictForest {
            signature: Signature::variadic_any(Volatility::Immutable),
            output,
            cache: ModelCache::default(),
        }
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
                        let model = self.cache.get(b).map_err(|e| DataFusionError::Plan(e.to_string()))?;
                        Some(model.prediction_type().map_err(|e| DataFusionError::Plan(e.to_string()))?)
                    }
                    _ => None,
                };
                let from_metadata =
                    fields[0].metadata().get(PREDICTION_TYPE_KEY).and_then(|t| DataType::from_str(t).ok());
                from_literal.or(from_metadata).unwrap_or(DataType::Utf8)
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
                        let model = self.cache.get(bytes)?;
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
                            let model = self.cache.get(bytes)?;
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
