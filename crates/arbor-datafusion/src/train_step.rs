//! `arbor_train_step(state, label, feature, ... [, 'options'])`: one step
//! of a forest or gradient boosting trained level by level over a table's
//! partitions (see [`crate::level_training`], which drives the steps).
//!
//! Each partial aggregate reads its own rows only and passes on a summary
//! of them (the first step, with an empty `state`) or the level's sums:
//! exact histograms of the open nodes and, for a forest, the binned rows of
//! its small nodes. The final aggregate merges those and returns the next
//! state. Beyond a forest's small nodes, no row leaves its partition.
//!
//! `state` and the options are constants; the driver passes them as
//! dictionary literals, which a batch repeats as one key per row rather
//! than the whole state per row.

use std::sync::Arc;

use arbor_ensemble::{ArborError, CheckedParams, LevelState, LevelSummary, Message};
use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

use crate::column_chunks::ColumnChunks;
use crate::error::FunctionError;
use crate::train_arguments::{constant, training_data, PerRowArgs, TrainArguments};

/// The function's name. It is internal: the level-wise driver calls it.
pub const TRAIN_STEP: &str = "arbor_train_step";

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The `arbor_train_step` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TrainStep {
    signature: Signature,
}

impl TrainStep {
    /// The step aggregate.
    pub fn new() -> Self {
        TrainStep { signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl Default for TrainStep {
    fn default() -> Self {
        Self::new()
    }
}

impl AggregateUDFImpl for TrainStep {
    fn name(&self) -> &str {
        TRAIN_STEP
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let state = match args.exprs.first().and_then(|e| constant(e, args.schema)) {
            Some(
                ScalarValue::Binary(Some(b)) | ScalarValue::LargeBinary(Some(b)) | ScalarValue::BinaryView(Some(b)),
            ) => b,
            _ => return plan_err!("{TRAIN_STEP} takes the training state as a binary literal first"),
        };
        let TrainArguments { names, types, weight, options, .. } =
            TrainArguments::read(&args.exprs[1..], &args.expr_fields[1..], args.schema)?;
        let state_size = state.len();
        let state = match state.is_empty() {
            true => None,
            false => Some(LevelState::from_bytes(&state).exec(NAME)?),
        };
        Ok(Box::new(TrainStepAccumulator {
            arrays: vec![ColumnChunks::default(); names.len()],
            names,
            types,
            weight,
            params: options.params.check().exec(NAME)?,
            state,
            state_size,
            partial: None,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format!("{}[partial]", args.name), DataType::Binary, true))])
    }
}

/// One piece's rows until they are summarized or summed, then what they summed to.
#[derive(Debug)]
struct TrainStepAccumulator {
    names: Vec<String>,
    types: Vec<DataType>,
    weight: Option<usize>,
    /// The options, checked when the accumulator is made.
    params: CheckedParams,
    /// The state the step starts from; `None` for the first (summary) step.
    state: Option<LevelState>,
    /// The state's size as bytes: near what its trees and open nodes hold.
    state_size: usize,
    arrays: Vec<ColumnChunks>,
    /// What the rows absorbed so far summarize or sum to.
    partial: Option<Message>,
}

impl TrainStepAccumulator {
    /// Summarizes or sums the rows held into the partial result, and lets them go.
    fn absorb_rows(&mut self) -> Result<()> {
        let held: usize = self.arrays[0].compacted()?.iter().map(|a| a.len()).sum();
        if held == 0 {
            return Ok(());
        }
        let data = training_data(
            &self.names,
            &self.types,
            PerRowArgs { weight: self.weight, group: None },
            &mut self.arrays,
            self.params.task,
            false,
        );
        self.arrays.iter_mut().for_each(|a| *a = ColumnChunks::default());
        let data = match data {
            Ok(data) => data,
            // A piece whose labels are all null adds only their count.
            Err(ArborError::NothingToTrain(_)) if self.state.is_none() => {
                return self.add(Message::Summary(LevelSummary::null_labels(held as u64)))
            }
            Err(ArborError::NothingToTrain(_)) => return Ok(()),
            Err(e) => return Err(e).exec(NAME),
        };
        let piece = match &self.state {
            None => Message::Summary(LevelSummary::of(&data)),
            Some(state) => Message::Sums(state.sums(&data).exec(NAME)?),
        };
        self.add(piece)
    }

    fn add(&mut self, piece: Message) -> Result<()> {
        match self.partial.as_mut() {
            Some(partial) => partial.merge(piece).exec(NAME),
            None => {
                self.partial = Some(piece);
                Ok(())
            }
        }
    }
}

impl Accumulator for TrainStepAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (store, array) in self.arrays.iter_mut().zip(&values[1..]) {
            store.push(array.clone())?;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.absorb_rows()?;
        let merged = match (&self.state, self.partial.take()) {
            // No rows anywhere: the summary says so, and training reports it.
            (None, None) => Message::Summary(LevelSummary::default()),
            (Some(_), None) => return exec_err!("{NAME}: a level of training saw no rows"),
            (_, Some(merged)) => merged,
        };
        let outcome = merged.conclude(&self.params).exec(NAME)?;
        Ok(ScalarValue::Binary(Some(outcome.to_bytes())))
    }

    fn size(&self) -> usize {
        let partial = self.partial.as_ref().map_or(0, Message::heap_size);
        std::mem::size_of_val(self)
            + self.arrays.iter().map(ColumnChunks::size).sum::<usize>()
            + self.state_size
            + partial
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.absorb_rows()?;
        Ok(vec![ScalarValue::Binary(self.partial.take().map(|p| p.to_bytes()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(state) = states.first() else { return Ok(()) };
        let binary = state.as_binary::<i32>();
        for bytes in binary.iter().flatten() {
            self.add(Message::from_bytes(bytes).exec(NAME)?)?;
        }
        Ok(())
    }
}
