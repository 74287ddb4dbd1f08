//! A model given as a function argument: a Binary, LargeBinary or BinaryView
//! column or scalar, as `train_forest` returns it or as read from a file.

use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, Signature, Volatility};

use crate::model_cache::decoded;

/// One argument, a model column of any binary type.
pub(crate) fn model_signature() -> Signature {
    Signature::uniform(1, vec![DataType::Binary, DataType::LargeBinary, DataType::BinaryView], Volatility::Immutable)
}

/// Row `row`'s bytes in a Binary, LargeBinary or BinaryView array (a model
/// column); `None` for a null or a non-binary array.
pub fn binary_value(array: &dyn Array, row: usize) -> Option<&[u8]> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Binary => Some(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => Some(array.as_binary::<i64>().value(row)),
        DataType::BinaryView => Some(array.as_binary_view().value(row)),
        _ => None,
    }
}

/// Applies `per_model` to a model argument's rows, decoded (`None` for a
/// null model); it returns one output row per model row, and a scalar
/// argument gives a scalar back.
pub(crate) fn map_models(
    function: &str,
    arg: &ColumnarValue,
    per_model: impl FnOnce(&[Option<Arc<Model>>]) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let decode = |array: &dyn Array| -> Result<Vec<Option<Arc<Model>>>> {
        (0..array.len())
            .map(|row| {
                binary_value(array, row)
                    .map(|bytes| decoded(bytes).map_err(|e| DataFusionError::Execution(format!("{function}: {e}"))))
                    .transpose()
            })
            .collect()
    };
    match arg {
        ColumnarValue::Array(models) => Ok(ColumnarValue::Array(per_model(&decode(models.as_ref())?)?)),
        ColumnarValue::Scalar(
            s @ (ScalarValue::Binary(_) | ScalarValue::LargeBinary(_) | ScalarValue::BinaryView(_)),
        ) => {
            let out = per_model(&decode(s.to_array()?.as_ref())?)?;
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        }
        ColumnarValue::Scalar(other) => exec_err!("{function}: expected a Binary model, got {}", other.data_type()),
    }
}
