//! `forest_info(model)`: the model's summary as JSON text (as `arbor inspect --json`).

use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::{Array, AsArray, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

/// The `forest_info` function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ForestInfo {
    signature: Signature,
}

impl ForestInfo {
    /// A new `forest_info`.
    pub fn new() -> Self {
        ForestInfo {
            signature: Signature::uniform(
                1,
                vec![DataType::Binary, DataType::LargeBinary, DataType::BinaryView],
                Volatility::Immutable,
            ),
        }
    }
}

impl Default for ForestInfo {
    fn default() -> Self {
        Self::new()
    }
}

fn info(bytes: &[u8]) -> Result<String> {
    let model = Model::from_bytes(bytes).map_err(|e| DataFusionError::Execution(format!("forest_info: {e}")))?;
    Ok(model.summary_json().to_string())
}

impl ScalarUDFImpl for ForestInfo {
    fn name(&self) -> &str {
        "forest_info"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match &args.args[0] {
            ColumnarValue::Scalar(
                ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b),
            ) => Ok(ColumnarValue::Scalar(ScalarValue::Utf8(b.as_deref().map(info).transpose()?))),
            ColumnarValue::Scalar(other) => {
                exec_err!("forest_info: expected a Binary model, got {}", other.data_type())
            }
            ColumnarValue::Array(a) => {
                let values: Vec<Option<String>> = (0..a.len())
                    .map(|i| {
                        if a.is_null(i) {
                            return Ok(None);
                        }
                        info(binary_value(a.as_ref(), i)).map(Some)
                    })
                    .collect::<Result<_>>()?;
                Ok(ColumnarValue::Array(Arc::new(StringArray::from(values))))
            }
        }
    }
}

/// Row `i` of a Binary, LargeBinary or BinaryView array (the signature admits no other type).
pub(crate) fn binary_value(a: &dyn Array, i: usize) -> &[u8] {
    match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        _ => a.as_binary_view().value(i),
    }
}
