//! `forest_info(model)`: the model's summary as JSON text (as `arbor inspect --json`).

use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::StringArray;
use arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};

use crate::model_argument::{binary_value, map_models, model_signature};

/// The `forest_info` function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ForestInfo {
    signature: Signature,
}

impl ForestInfo {
    /// A new `forest_info`.
    pub fn new() -> Self {
        ForestInfo { signature: model_signature() }
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
        map_models(self.name(), &args.args[0], |models| {
            let values: Vec<Option<String>> =
                (0..models.len()).map(|i| binary_value(models, i).map(info).transpose()).collect::<Result<_>>()?;
            Ok(Arc::new(StringArray::from(values)))
        })
    }
}
