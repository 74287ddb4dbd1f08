//! A model given as a function argument: a Binary, LargeBinary or BinaryView
//! column or scalar, as `train_forest` returns it or as read from a file.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Signature, Volatility};

/// One argument, a model column of any binary type.
pub(crate) fn model_signature() -> Signature {
    Signature::uniform(1, vec![DataType::Binary, DataType::LargeBinary, DataType::BinaryView], Volatility::Immutable)
}

/// Row `row`'s model bytes; `None` for a null or a non-binary array.
pub(crate) fn binary_value(array: &dyn Array, row: usize) -> Option<&[u8]> {
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

/// Applies `per_model` (one output row per model row) to a model argument,
/// a scalar giving a scalar back.
pub(crate) fn map_models(
    function: &str,
    arg: &ColumnarValue,
    per_model: impl FnOnce(&dyn Array) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    match arg {
        ColumnarValue::Array(models) => Ok(ColumnarValue::Array(per_model(models.as_ref())?)),
        ColumnarValue::Scalar(
            s @ (ScalarValue::Binary(_) | ScalarValue::LargeBinary(_) | ScalarValue::BinaryView(_)),
        ) => {
            let out = per_model(s.to_array()?.as_ref())?;
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        }
        ColumnarValue::Scalar(other) => exec_err!("{function}: expected a Binary model, got {}", other.data_type()),
    }
}
