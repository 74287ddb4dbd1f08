//! `forest_info(model)`: the model's summary as JSON text (as `arbor inspect --json`).

use std::sync::{Arc, LazyLock};

use arrow::array::StringArray;
use arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature};

use crate::model_argument::{map_models, model_signature};
use crate::model_cache::ModelCache;
use crate::model_column::ModelKind;
use crate::sql_reference::DOC_SECTION;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "A model's summary as JSON text, the object `arbor inspect --json` prints: `task`, `algorithm`, \
         `classes` (classification), `features` (each with `name`, `type` and `importance`), `trees` (each \
         with `nodes`, `leaves` and `depth`), `params` (every option with the value used) and `oob_error` \
         (a number, or null when not computed).",
        "forest_info(model)",
    )
    .with_argument("model", "A model from `train_forest` or `arbor train`. A NULL model gives NULL.")
    .with_sql_example(
        r#"> CREATE TABLE points AS SELECT CAST(v AS DOUBLE) AS x, v > 50 AS label FROM generate_series(1, 100) AS s(v);
> CREATE TABLE models AS SELECT train_forest(label, x, 'n_trees=5') AS forest FROM points;
> SELECT regexp_match(info, '"task":"(\w+)"')[1] AS task, regexp_match(info, '"classes":(\[[^\]]*\])')[1] AS classes FROM (SELECT forest_info(forest) AS info FROM models);
+----------------+--------------+
| task           | classes      |
+----------------+--------------+
| classification | [false,true] |
+----------------+--------------+"#,
    )
    .with_related_udf("forest_importance")
    .with_related_udf("train_forest")
    .build()
});

/// The `forest_info` function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ForestInfo {
    signature: Signature,
    cache: Arc<ModelCache>,
}

impl ForestInfo {
    /// A new `forest_info`.
    pub fn new(cache: Arc<ModelCache>) -> Self {
        ForestInfo { signature: model_signature(), cache }
    }
}

impl ScalarUDFImpl for ForestInfo {
    fn name(&self) -> &str {
        "forest_info"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if let Some(model) = arg_types.first() {
            ModelKind::expect(self.name(), model)?;
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_models(self.name(), &self.cache, &args.args[0], |models| {
            let infos: StringArray = models.iter().map(|m| m.as_ref().map(|m| m.summary_json().to_string())).collect();
            Ok(Arc::new(infos))
        })
    }
}
