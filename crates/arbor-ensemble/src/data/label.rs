//! The label column: its type, its classes, and reading it for training.

use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, StringArray, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use serde::{Deserialize, Serialize};

use crate::{ArborError, Result, Task};

/// The classes of a classification label, sorted, in the label's own kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Classes {
    /// Signed integer labels.
    Int(Vec<i64>),
    /// Unsigned integer labels.
    UInt(Vec<u64>),
    /// Boolean labels.
    Bool(Vec<bool>),
    /// String labels.
    Str(Vec<String>),
}

impl Classes {
    /// Number of classes.
    pub fn len(&self) -> usize {
        match self {
            Classes::Int(v) => v.len(),
            Classes::UInt(v) => v.len(),
            Classes::Bool(v) => v.len(),
            Classes::Str(v) => v.len(),
        }
    }

    /// True when there are no classes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each class as text (for column names and reports).
    pub fn names(&self) -> Vec<String> {
        match self {
            Classes::Int(v) => v.iter().map(ToString::to_string).collect(),
            Classes::UInt(v) => v.iter().map(ToString::to_string).collect(),
            Classes::Bool(v) => v.iter().map(ToString::to_string).collect(),
            Classes::Str(v) => v.clone(),
        }
    }

    /// The classes as JSON values of their own kind.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Classes::Int(v) => serde_json::json!(v),
            Classes::UInt(v) => serde_json::json!(v),
            Classes::Bool(v) => serde_json::json!(v),
            Classes::Str(v) => serde_json::json!(v),
        }
    }

    /// An array of the classes at `index`, cast to `data_type` (the label's type).
    pub fn take(&self, index: &[u32], data_type: &DataType) -> Result<ArrayRef> {
        let array: ArrayRef = match self {
            Classes::Int(v) => Arc::new(Int64Array::from_iter_values(index.iter().map(|&i| v[i as usize]))),
            Classes::UInt(v) => Arc::new(UInt64Array::from_iter_values(index.iter().map(|&i| v[i as usize]))),
            Classes::Bool(v) => Arc::new(BooleanArray::from_iter(index.iter().map(|&i| Some(v[i as usize])))),
            Classes::Str(v) => Arc::new(StringArray::from_iter_values(index.iter().map(|&i| &v[i as usize]))),
        };
        if array.data_type() == data_type {
            Ok(array)
        } else {
            Ok(cast(&array, data_type)?)
        }
    }
}

/// What the model knows of its label column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelInfo {
    /// The column's name.
    pub name: String,
    /// Its Arrow type, as text (predictions are given back in this type).
    pub data_type: String,
    /// The classes, for classification.
    pub classes: Option<Classes>,
}

impl LabelInfo {
    /// The label's Arrow type.
    pub fn arrow_type(&self) -> Result<DataType> {
        DataType::from_str(&self.data_type)
            .map_err(|e| ArborError::Model(format!("label type '{}' cannot be read: {e}", self.data_type)))
    }
}

/// The training target, one entry per (non-null) row.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Class index per row.
    Classes(Vec<u32>),
    /// Value per row.
    Values(Vec<f64>),
}

/// The task a label type implies: floats are regression, the rest classification.
pub fn default_task(data_type: &DataType) -> Task {
    if matches!(
        data_type,
        DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    ) {
        Task::Regression
    } else {
        Task::Classification
    }
}

/// Reads a label (its arrays hold no nulls) for `task`.
pub fn read_label(name: &str, arrays: &[ArrayRef], task: Task) -> Result<(LabelInfo, Target)> {
    let data_type = arrays.first().map(|a| a.data_type().clone()).unwrap_or(DataType::Null);
    let bad_type = |what: &str| ArborError::Data(format!("label column '{name}' has type {data_type}; {what}"));
    let info = |classes| LabelInfo { name: name.to_owned(), data_type: data_type.to_string(), classes };
    match task {
        Task::Regression => {
            if !data_type.is_numeric() {
                return Err(bad_type("regression needs a numeric label"));
            }
            let mut values = Vec::new();
            for a in arrays {
                let f = cast(a, &DataType::Float64)?;
                values.extend_from_slice(f.as_primitive::<Float64Type>().values());
            }
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(ArborError::Data(format!(
                    "label column '{name}' holds {} at row {i}; regression labels must be finite",
                    values[i]
                )));
            }
            Ok((info(None), Target::Values(values)))
        }
        Task::Classification => {
            let (classes, index) = if data_type.is_signed_integer() {
                index_integer_classes::<Int64Type>(arrays, Classes::Int)?
            } else if data_type.is_unsigned_integer() {
                index_integer_classes::<UInt64Type>(arrays, Classes::UInt)?
            } else if data_type == DataType::Boolean {
                let values: Vec<bool> =
                    arrays.iter().flat_map(|a| a.as_boolean().values().iter().collect::<Vec<_>>()).collect();
                index_classes(values, Classes::Bool)
            } else if arbor_quantize::FeatureType::of(&data_type) == Some(arbor_quantize::FeatureType::Categorical) {
                let mut values = Vec::new();
                for a in arrays {
                    let s = cast(a, &DataType::Utf8)?;
                    values.extend(s.as_string::<i32>().iter().map(|v| v.unwrap_or_default().to_owned()));
                }
                index_classes(values, Classes::Str)
            } else {
                return Err(bad_type(
                    "classification needs an integer, boolean or string label (use task=regression for numbers)",
                ));
            };
            // A single class is a valid label: its model predicts that class
            // with probability 1 (`Model::single_class`), as scikit-learn's
            // forests do, so one small group of a GROUP BY cannot fail the rest.
            Ok((info(Some(classes)), Target::Classes(index)))
        }
    }
}

/// [`index_classes`] for integer labels, widened one array at a time: the
/// label is never held whole at 8 bytes a row, only as its class indexes.
fn index_integer_classes<T: arrow::datatypes::ArrowPrimitiveType>(
    arrays: &[ArrayRef],
    wrap: fn(Vec<T::Native>) -> Classes,
) -> Result<(Classes, Vec<u32>)>
where
    T::Native: Ord + std::hash::Hash,
{
    let widened = |a: &ArrayRef| cast(a, &T::DATA_TYPE);
    let mut distinct = BTreeSet::new();
    for a in arrays {
        distinct.extend(widened(a)?.as_primitive::<T>().values().iter().copied());
    }
    let distinct: Vec<T::Native> = distinct.into_iter().collect();
    let position: HashMap<T::Native, u32> = distinct.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
    let mut index = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for a in arrays {
        index.extend(widened(a)?.as_primitive::<T>().values().iter().map(|v| position[v]));
    }
    Ok((wrap(distinct), index))
}

fn index_classes<T: Ord + Clone + std::hash::Hash>(values: Vec<T>, wrap: fn(Vec<T>) -> Classes) -> (Classes, Vec<u32>) {
    let distinct: Vec<T> = values.iter().cloned().collect::<BTreeSet<T>>().into_iter().collect();
    let position: HashMap<&T, u32> = distinct.iter().enumerate().map(|(i, v)| (v, i as u32)).collect();
    let index = values.iter().map(|v| position[v]).collect();
    (wrap(distinct.clone()), index)
}
