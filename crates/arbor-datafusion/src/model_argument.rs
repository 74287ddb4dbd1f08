//! A model given as a function argument: a model column or scalar (see
//! [`crate::model_column`]), decoded through the session's [`ModelCache`].

use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::{Array, ArrayRef};
use arrow::buffer::Buffer;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Signature, Volatility};

use crate::error::FunctionError;
use crate::model_cache::ModelCache;
use crate::model_column::ModelBytes;

/// One argument, a model column; its type is checked by [`crate::model_column::ModelKind::expect`].
pub(crate) fn model_signature() -> Signature {
    Signature::any(1, Volatility::Immutable)
}

/// A scalar model argument's bytes without copying them: an owned binary
/// value becomes a buffer, a typed struct value shares its array's buffer.
pub(crate) fn scalar_buffer(function: &str, scalar: ScalarValue) -> Result<Option<Buffer>> {
    match scalar {
        ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b) => {
            Ok(b.map(Buffer::from_vec))
        }
        ScalarValue::Null => Ok(None),
        other => {
            let array = other.to_array()?;
            Ok(ModelBytes::new(function, array.as_ref())?.buffer(0))
        }
    }
}

/// Applies `per_model` to a model argument's rows, decoded (`None` for a
/// null model); it returns one output row per model row, and a scalar
/// argument gives a scalar back.
pub(crate) fn map_models(
    function: &str,
    cache: &ModelCache,
    arg: &ColumnarValue,
    per_model: impl FnOnce(&[Option<Arc<Model>>]) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let decode = |array: &dyn Array| -> Result<Vec<Option<Arc<Model>>>> {
        let models = ModelBytes::new(function, array)?;
        (0..models.len()).map(|row| models.buffer(row).map(|b| cache.decode(b).exec(function)).transpose()).collect()
    };
    match arg {
        ColumnarValue::Array(models) => Ok(ColumnarValue::Array(per_model(&decode(models.as_ref())?)?)),
        ColumnarValue::Scalar(s) => {
            let out = per_model(&decode(s.to_array()?.as_ref())?)?;
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        }
    }
}
