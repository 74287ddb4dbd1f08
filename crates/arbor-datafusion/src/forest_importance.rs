//! `forest_importance(model)`: each feature's importance as a list of
//! `{feature, importance}` structs, ready for `unnest`.

use std::sync::{Arc, LazyLock};

use arrow::array::{ArrayRef, Float64Array, ListArray, StringArray, StructArray};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature};

use crate::model_argument::{map_models, model_signature};
use crate::model_cache::ModelCache;
use crate::model_column::ModelKind;
use crate::sql_reference::DOC_SECTION;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION,
        "Each feature's importance in a model, as a list of `{feature, importance}` structs in the model's \
         feature order; `unnest` turns it into one row per feature. The measure is the one the model was \
         trained with (`importance=mdi`, the default: mean decrease of impurity; `mda_raw` or `mda_scaled`: \
         mean decrease of accuracy on out-of-bag rows); it is NULL with `importance=none`.",
        "forest_importance(model)",
    )
    .with_argument("model", "A model from `train_forest` or `arbor train`. A NULL model gives NULL.")
    .with_sql_example(
        r#"> CREATE TABLE points AS SELECT CAST(v AS DOUBLE) AS x, CAST(v % 7 AS DOUBLE) AS noise, v > 50 AS label FROM generate_series(1, 100) AS s(v);
> CREATE TABLE models AS SELECT train_forest(label, x, noise, 'n_trees=5') AS forest FROM points;
> SELECT f['feature'] AS feature, round(f['importance'], 3) AS importance FROM (SELECT unnest(forest_importance(forest)) AS f FROM models);
+---------+------------+
| feature | importance |
+---------+------------+
| x       | 0.482      |
| noise   | 0.013      |
+---------+------------+"#,
    )
    .with_related_udf("forest_info")
    .with_related_udf("train_forest")
    .build()
});

/// The `forest_importance` function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ForestImportance {
    signature: Signature,
    cache: Arc<ModelCache>,
}

impl ForestImportance {
    /// A new `forest_importance`.
    pub fn new(cache: Arc<ModelCache>) -> Self {
        ForestImportance { signature: model_signature(), cache }
    }
}

/// The struct of one list entry: the feature's name and its importance
/// (null when the model was trained with `importance=none`).
fn entry_fields() -> Fields {
    Fields::from(vec![Field::new("feature", DataType::Utf8, false), Field::new("importance", DataType::Float64, true)])
}

fn list_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Struct(entry_fields()), false)))
}

impl ScalarUDFImpl for ForestImportance {
    fn name(&self) -> &str {
        "forest_importance"
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
        Ok(list_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_models(self.name(), &self.cache, &args.args[0], |models| {
            let (mut names, mut values, mut lengths) = (Vec::new(), Vec::new(), Vec::with_capacity(models.len()));
            for model in models {
                let Some(model) = model else {
                    lengths.push(0);
                    continue;
                };
                for (f, feature) in model.features().iter().enumerate() {
                    names.push(feature.name.clone());
                    values.push(model.importance().map(|imp| imp[f]));
                }
                lengths.push(model.features().len());
            }
            let entries = StructArray::new(
                entry_fields(),
                vec![Arc::new(StringArray::from(names)) as ArrayRef, Arc::new(Float64Array::from(values))],
                None,
            );
            let nulls = NullBuffer::from_iter(models.iter().map(Option::is_some));
            let DataType::List(item) = list_type() else { unreachable!("a list type") };
            let list = ListArray::new(item, OffsetBuffer::from_lengths(lengths), Arc::new(entries), Some(nulls));
            Ok(Arc::new(list) as ArrayRef)
        })
    }
}
