//! `arbor_finish_nodes(state, key, record, 'options')`: grows the subtree
//! of one small forest node from every record of it, for level-wise
//! training (see [`crate::level_training`]). The job groups the records of
//! [`crate::small_node_records`] by their node's key, so the nodes of a
//! batch grow in as many tasks as the grouping has partitions, and a task
//! holds only its own nodes' rows.
//!
//! A partial aggregate only gathers its group's records; the final one
//! grows the node and returns the subtree's bytes, which the driver grafts
//! in place of the node. The state and options are constants, passed as
//! dictionary literals as [`crate::TrainStep`]'s are.

use std::sync::Arc;

use arbor_ensemble::{CheckedParams, LevelState, NodeKey};
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;

use crate::error::FunctionError;
use crate::sql_options::TrainOptions;
use crate::state_cache::StateCache;

/// The function's name. It is internal: the level-wise driver calls it.
pub const FINISH_NODES: &str = "arbor_finish_nodes";

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The `arbor_finish_nodes` aggregate.
#[derive(Debug)]
pub struct FinishNodes {
    signature: Signature,
    /// Shared by every group's accumulator: a job's groups grow from one state.
    states: Arc<StateCache>,
}

impl FinishNodes {
    /// The aggregate, with a cache of the state it was last given.
    pub fn new() -> Self {
        FinishNodes { signature: Signature::variadic_any(Volatility::Immutable), states: Arc::default() }
    }
}

impl Default for FinishNodes {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for FinishNodes {
    fn eq(&self, other: &Self) -> bool {
        self.signature == other.signature
    }
}

impl Eq for FinishNodes {}

impl std::hash::Hash for FinishNodes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.signature.hash(state);
    }
}

/// A literal argument's value, read in place (a dictionary literal's
/// value): the state is large, and every group's accumulator reads it.
fn literal<'a>(args: &'a AccumulatorArgs<'a>, i: usize) -> Option<&'a ScalarValue> {
    let value = args.exprs.get(i)?.downcast_ref::<Literal>()?.value();
    Some(match value {
        ScalarValue::Dictionary(_, value) => value,
        value => value,
    })
}

impl AggregateUDFImpl for FinishNodes {
    fn name(&self) -> &str {
        FINISH_NODES
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let (Some(ScalarValue::Binary(Some(state))), Some(ScalarValue::Utf8(Some(options)))) =
            (literal(&args, 0), literal(&args, 3))
        else {
            return plan_err!("{FINISH_NODES} takes the training state and the options as literals");
        };
        let state = self.states.decode(state).exec(NAME)?;
        let params = TrainOptions::parse(options).exec(NAME)?.params.check().exec(NAME)?;
        Ok(Box::new(FinishNodesAccumulator { state, params, key: None, records: Vec::new() }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format!("{}[key]", args.name), DataType::UInt64, true)),
            // Large: a partition's records of one node can pass 2 GiB.
            Arc::new(Field::new(format!("{}[records]", args.name), DataType::LargeBinary, true)),
        ])
    }
}

/// One node's records, as they arrive.
#[derive(Debug)]
struct FinishNodesAccumulator {
    state: Arc<LevelState>,
    /// The options, checked when the accumulator is made.
    params: CheckedParams,
    key: Option<NodeKey>,
    records: Vec<u8>,
}

impl FinishNodesAccumulator {
    /// Takes `keys` and their `records` (one per key, binary or large
    /// binary), which must all be of one node.
    fn add(&mut self, keys: &ArrayRef, records: &ArrayRef) -> Result<()> {
        let keys = keys.as_primitive::<UInt64Type>();
        for key in keys.iter().flatten().map(NodeKey::from_bits) {
            match self.key {
                Some(mine) if mine != key => {
                    return exec_err!("{NAME}: records of {mine} and {key} were grouped together")
                }
                _ => self.key = Some(key),
            }
        }
        let mut take = |record: &[u8]| self.records.extend_from_slice(record);
        match records.data_type() {
            DataType::Binary => records.as_binary::<i32>().iter().flatten().for_each(&mut take),
            DataType::LargeBinary => records.as_binary::<i64>().iter().flatten().for_each(&mut take),
            other => return exec_err!("{FINISH_NODES}: records of type {other}"),
        }
        Ok(())
    }
}

impl Accumulator for FinishNodesAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[1], &values[2])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let Some(key) = self.key else { return Ok(ScalarValue::Binary(None)) };
        let LevelState::Forest(forest) = self.state.as_ref() else {
            return exec_err!("{NAME}: only a forest finishes small nodes");
        };
        let records = std::mem::take(&mut self.records);
        Ok(ScalarValue::Binary(Some(forest.grow_node(&self.params, key, &records).exec(NAME)?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.records.capacity()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::UInt64(self.key.map(NodeKey::bits)),
            ScalarValue::LargeBinary(Some(std::mem::take(&mut self.records))),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [keys, records] = states else { return exec_err!("{FINISH_NODES}: a partial state of two columns") };
        self.add(keys, records)
    }
}
