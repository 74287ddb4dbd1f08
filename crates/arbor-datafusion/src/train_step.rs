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

use arbor_ensemble::{ArborError, CheckedParams, LevelStart, LevelState, LevelSummary, LevelSums};
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

/// What a step hands back to the driver.
#[derive(Debug)]
pub enum StepOutcome {
    /// Training goes on (or is done) from this state.
    Grow(Box<LevelState>),
    /// The rows or options need training on one node, for this reason.
    OneNode(String),
    /// A level's sums over every piece, merged: the driver grows the level
    /// (it keeps what the next level derives from them).
    Sums(LevelSums),
}

impl StepOutcome {
    /// The outcome as the step's result bytes: a tag, then the state or the reason.
    fn to_bytes(&self) -> Vec<u8> {
        match self {
            StepOutcome::Grow(state) => [vec![0], state.to_bytes()].concat(),
            StepOutcome::OneNode(reason) => [vec![1], reason.as_bytes().to_vec()].concat(),
            StepOutcome::Sums(sums) => [vec![2], sums.to_bytes()].concat(),
        }
    }

    /// An outcome read back from a step's result; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<StepOutcome, ArborError> {
        match bytes.split_first() {
            Some((0, state)) => Ok(StepOutcome::Grow(Box::new(LevelState::from_bytes(state)?))),
            Some((1, reason)) => Ok(StepOutcome::OneNode(String::from_utf8_lossy(reason).into_owned())),
            Some((2, sums)) => Ok(StepOutcome::Sums(LevelSums::from_bytes(sums)?)),
            _ => Err(ArborError::Data("a training step's result is corrupt".into())),
        }
    }
}

/// A level's sums as a partial aggregate's state: what a piece of the
/// rows passes on, from the aggregate or from a kept shard alike.
pub(crate) fn level_partial(sums: &LevelSums) -> Vec<u8> {
    [vec![1], sums.to_bytes()].concat()
}

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

/// What the pieces of one step sum to.
#[derive(Debug)]
enum Partial {
    Summary(LevelSummary),
    Level(LevelSums),
}

impl Partial {
    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Partial::Summary(s) => [vec![0], s.to_bytes()].concat(),
            Partial::Level(h) => level_partial(h),
        }
    }

    fn from_bytes(bytes: &[u8]) -> std::result::Result<Partial, ArborError> {
        match bytes.split_first() {
            Some((0, s)) => Ok(Partial::Summary(LevelSummary::from_bytes(s)?)),
            Some((1, h)) => Ok(Partial::Level(LevelSums::from_bytes(h)?)),
            _ => Err(ArborError::Data("a training step's partial state is corrupt".into())),
        }
    }

    fn merge(&mut self, other: Partial) -> std::result::Result<(), ArborError> {
        match (self, other) {
            (Partial::Summary(a), Partial::Summary(b)) => a.merge(b),
            (Partial::Level(a), Partial::Level(b)) => a.merge(b),
            _ => Err(ArborError::Data("partial states of two different training steps".into())),
        }
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
    partial: Option<Partial>,
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
                return self.add(Partial::Summary(LevelSummary::null_labels(held as u64)))
            }
            Err(ArborError::NothingToTrain(_)) => return Ok(()),
            Err(e) => return Err(e).exec(NAME),
        };
        let piece = match &self.state {
            None => Partial::Summary(LevelSummary::of(&data)),
            Some(state) => Partial::Level(state.sums(&data).exec(NAME)?),
        };
        self.add(piece)
    }

    fn add(&mut self, piece: Partial) -> Result<()> {
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
        let outcome = match (self.state.take(), self.partial.take()) {
            (None, partial) => {
                let summary = match partial {
                    Some(Partial::Summary(summary)) => summary,
                    _ => LevelSummary::default(),
                };
                match LevelState::start(&self.params, summary) {
                    Ok(LevelStart::Grow(state)) => StepOutcome::Grow(state),
                    Ok(LevelStart::OneNode(reason)) => StepOutcome::OneNode(reason),
                    Err(ArborError::NothingToTrain(reason)) => StepOutcome::OneNode(reason),
                    Err(e) => return Err(e).exec(NAME),
                }
            }
            (Some(_), Some(Partial::Level(sums))) => StepOutcome::Sums(sums),
            (Some(_), _) => return exec_err!("{NAME}: a level of training saw no rows"),
        };
        Ok(ScalarValue::Binary(Some(outcome.to_bytes())))
    }

    fn size(&self) -> usize {
        let partial = match &self.partial {
            Some(Partial::Summary(summary)) => summary.heap_size(),
            Some(Partial::Level(sums)) => sums.heap_size(),
            None => 0,
        };
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
            self.add(Partial::from_bytes(bytes).exec(NAME)?)?;
        }
        Ok(())
    }
}
