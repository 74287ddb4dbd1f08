//! `train_forest(label, feature, ... [, 'options'])`: an aggregate that trains a model.
//!
//! Sample weights come from one of the arguments, named by the `weight`
//! option: `train_forest(label, f1, f2, w, 'weight=w n_trees=50')`.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_ensemble::{default_task, train, NamedColumn, Task, TrainParams, TrainingData};
use arrow::array::{Array, ArrayRef, AsArray, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::compute::concat;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;

use crate::PREDICTION_TYPE_KEY;

/// The `train_forest` aggregate: collects its group's rows, then trains.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TrainForest {
    signature: Signature,
}

impl TrainForest {
    /// A new `train_forest`.
    pub fn new() -> Self {
        TrainForest { signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl Default for TrainForest {
    fn default() -> Self {
        Self::new()
    }
}

/// The prediction type a label implies when no option overrides the task.
fn prediction_type(label: &DataType) -> DataType {
    match default_task(label) {
        Task::Classification => label.clone(),
        Task::Regression => DataType::Float64,
    }
}

impl AggregateUDFImpl for TrainForest {
    fn name(&self) -> &str {
        "train_forest"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// `BinaryView`, so that a join or cross join that repeats the model on
    /// every row repeats a 16-byte view, not the model's bytes.
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::BinaryView)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        if arg_fields.len() < 2 {
            return plan_err!(
                "train_forest takes a label and at least one feature: train_forest(label, feature, ... [, 'options'])"
            );
        }
        let metadata =
            HashMap::from([(PREDICTION_TYPE_KEY.to_owned(), prediction_type(arg_fields[0].data_type()).to_string())]);
        Ok(Arc::new(Field::new(self.name(), DataType::BinaryView, true).with_metadata(metadata)))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let mut n_data = args.exprs.len();
        let mut params = TrainParams::default();
        let mut weight_name = None;
        if let Some(literal) = args.exprs.last().and_then(|e| e.downcast_ref::<Literal>()) {
            match literal.value() {
                ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
                    let plan_error =
                        |e: arbor_ensemble::ArborError| DataFusionError::Plan(format!("train_forest: {e}"));
                    // `weight` is SQL's own key: it names the argument that holds the weights.
                    for (key, value) in TrainParams::option_pairs(s).map_err(plan_error)? {
                        match key {
                            "weight" => weight_name = Some(value.to_owned()),
                            _ => params.set(key, value).map_err(plan_error)?,
                        }
                    }
                    n_data -= 1;
                }
                _ => {}
            }
        }
        if n_data < 2 {
            return plan_err!(
                "train_forest takes a label and at least one feature: train_forest(label, feature, ... [, 'options'])"
            );
        }
        let names: Vec<String> = args.expr_fields[..n_data].iter().map(|f| f.name().clone()).collect();
        let types = args.expr_fields[..n_data].iter().map(|f| f.data_type().clone()).collect();
        let weight = match weight_name {
            None => None,
            Some(w) => match names.iter().skip(1).position(|n| *n == w) {
                Some(i) if n_data > 2 => Some(i + 1),
                Some(_) => return plan_err!("train_forest: the weight '{w}' leaves no feature to train on"),
                None => {
                    return plan_err!(
                        "train_forest: option 'weight': '{w}' is not a feature argument; arguments after the label: {}",
                        names[1..].join(", ")
                    )
                }
            },
        };
        Ok(Box::new(TrainForestAccumulator {
            names,
            types,
            weight,
            n_args: args.exprs.len(),
            params,
            arrays: vec![Vec::new(); n_data],
            planned: prediction_type(args.expr_fields[0].data_type()),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(args
            .input_fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let item = Field::new_list_field(f.data_type().clone(), true);
                Arc::new(Field::new(format!("{}[{i}]", args.name), DataType::List(Arc::new(item)), true))
            })
            .collect())
    }
}

/// Rows of one group, kept as the arrays they arrived in until evaluation.
#[derive(Debug)]
struct TrainForestAccumulator {
    names: Vec<String>,
    types: Vec<DataType>,
    /// The argument holding sample weights, if any.
    weight: Option<usize>,
    n_args: usize,
    params: TrainParams,
    arrays: Vec<Vec<ArrayRef>>,
    planned: DataType,
}

impl TrainForestAccumulator {
    fn column(&self, i: usize) -> NamedColumn {
        NamedColumn { name: self.names[i].clone(), arrays: self.arrays[i].clone() }
    }
}

impl Accumulator for TrainForestAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (store, array) in self.arrays.iter_mut().zip(values) {
            if !array.is_empty() {
                store.push(array.clone());
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let features = (1..self.names.len()).filter(|&i| Some(i) != self.weight).map(|i| self.column(i)).collect();
        let weight = self.weight.map(|i| self.column(i));
        let types: HashMap<&str, &DataType> = self.names.iter().map(String::as_str).zip(&self.types).collect();
        let data = TrainingData::from_columns(self.column(0), features, weight, self.params.task, |n| {
            types.get(n).map(|t| (*t).clone())
        })
        .map_err(|e| DataFusionError::Execution(format!("train_forest: {e}")))?;
        let model = train(&data, &self.params, &|_| {})
            .map_err(|e| DataFusionError::Execution(format!("train_forest: {e}")))?;
        let predicts = model.prediction_type().map_err(|e| DataFusionError::Execution(e.to_string()))?;
        if predicts != self.planned {
            return exec_err!(
                "train_forest: task={} on a {} label predicts {predicts}, but the query was planned for {}; \
                 cast the label instead (e.g. CAST({} AS DOUBLE) for regression)",
                model.task.name(),
                self.types[0],
                self.planned,
                self.names[0]
            );
        }
        Ok(ScalarValue::BinaryView(Some(model.to_bytes())))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.arrays.iter().flatten().map(|a| a.get_array_memory_size()).sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut out = Vec::with_capacity(self.n_args);
        for i in 0..self.n_args {
            let data_type = self.types.get(i).cloned().unwrap_or(DataType::Utf8);
            let values = match self.arrays.get(i) {
                Some(arrays) if !arrays.is_empty() => {
                    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                    concat(&refs)?
                }
                _ => arrow::array::new_empty_array(&data_type),
            };
            let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
            let list = ListArray::new(field, OffsetBuffer::from_lengths([values.len()]), values, None);
            out.push(ScalarValue::List(Arc::new(list)));
        }
        Ok(out)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for (store, state) in self.arrays.iter_mut().zip(states) {
            let list = state.as_list::<i32>();
            for j in 0..list.len() {
                if list.is_valid(j) {
                    let values = list.value(j);
                    if !values.is_empty() {
                        store.push(values);
                    }
                }
            }
        }
        Ok(())
    }
}
