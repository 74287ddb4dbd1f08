//! `arbor_finish_nodes(state, key, record, 'options')`: grows the subtree
//! of one small forest node from every record of it, for level-wise
//! training (see [`crate::level_training`]). The job groups the records of
//! [`crate::small_node_records`] by their node's key, so the nodes of a
//! batch grow in as many tasks as the grouping has partitions, and a task
//! holds only its own nodes' rows.
//!
//! A partial aggregate only gathers its group's records (on a cluster the
//! level step gives them as its states, [`crate::resident_shards`]); the
//! final one keeps them where they arrived, grows the node from them and
//! returns the subtree's bytes, which the driver grafts
//! in place of the node. The state and options are constants, passed as
//! dictionary literals as [`crate::TrainStep`]'s are.

use std::sync::Arc;

use arbor_ensemble::{CheckedParams, LevelState, NodeKey};
use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray, LargeBinaryBuilder, UInt64Array};
use arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility};
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
        Ok(Box::new(FinishNodesAccumulator { grower: self.grower(&args)?, group: NodeGroup::default() }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    /// The groups accumulator keeps each group's records where they
    /// arrived (the input's arrays): DataFusion's adapter of the
    /// single-group accumulator would copy every group's records out of
    /// each batch first.
    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(FinishNodesGroups { grower: self.grower(&args)?, groups: Vec::new() }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format!("{}[key]", args.name), DataType::UInt64, true)),
            // Large: a partition's records of one node can pass 2 GiB.
            Arc::new(Field::new(format!("{}[records]", args.name), DataType::LargeBinary, true)),
        ])
    }
}

impl FinishNodes {
    /// What grows a group's node: the state and options of the call `args` describe.
    fn grower(&self, args: &AccumulatorArgs) -> Result<NodeGrower> {
        let (Some(ScalarValue::Binary(Some(state))), Some(ScalarValue::Utf8(Some(options)))) =
            (literal(args, 0), literal(args, 3))
        else {
            return plan_err!("{FINISH_NODES} takes the training state and the options as literals");
        };
        let state = self.states.decode(state).exec(NAME)?;
        let params = TrainOptions::parse(options).exec(NAME)?.params.check().exec(NAME)?;
        Ok(NodeGrower { state, params })
    }
}

/// The training state and checked options a job's nodes grow from.
#[derive(Clone, Debug)]
struct NodeGrower {
    state: Arc<LevelState>,
    params: CheckedParams,
}

impl NodeGrower {
    /// The subtree's bytes of `group`'s node (`None` for a group of no node).
    fn grow(&self, group: &NodeGroup) -> Result<Option<Vec<u8>>> {
        let Some(key) = group.key else { return Ok(None) };
        let LevelState::Forest(forest) = self.state.as_ref() else {
            return exec_err!("{NAME}: only a forest finishes small nodes");
        };
        forest.grow_node(&self.params, key, &group.pieces()).exec(NAME).map(Some)
    }
}

/// One node's records, as they arrive: each a value of an input array,
/// read in place when the node grows, never concatenated.
#[derive(Debug, Default)]
struct NodeGroup {
    key: Option<NodeKey>,
    /// Arrays of records (binary or large binary) and the row of each that is this node's.
    records: Vec<(ArrayRef, usize)>,
    /// Bytes of the records.
    bytes: usize,
}

impl NodeGroup {
    /// Adds row `row` of `records` (binary or large binary), node `key`'s.
    fn add(&mut self, key: NodeKey, records: &ArrayRef, row: usize) -> Result<()> {
        match self.key {
            Some(mine) if mine != key => return exec_err!("{NAME}: records of {mine} and {key} were grouped together"),
            _ => self.key = Some(key),
        }
        if records.is_valid(row) {
            self.bytes += value(records, row).len();
            self.records.push((records.clone(), row));
        }
        Ok(())
    }

    /// Every record value held, in the order they came.
    fn pieces(&self) -> Vec<&[u8]> {
        self.records.iter().map(|(array, row)| value(array, *row)).collect()
    }
}

/// Value `row` of a binary or large binary array (checked by [`records_of`]).
fn value(array: &ArrayRef, row: usize) -> &[u8] {
    match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().value(row),
        _ => array.as_binary::<i64>().value(row),
    }
}

/// The keys and records columns of a batch, checked.
fn records_of<'a>(keys: &'a ArrayRef, records: &ArrayRef) -> Result<&'a arrow::array::UInt64Array> {
    if !matches!(records.data_type(), DataType::Binary | DataType::LargeBinary) {
        return exec_err!("{FINISH_NODES}: records of type {}", records.data_type());
    }
    match keys.as_primitive_opt::<UInt64Type>() {
        Some(keys) => Ok(keys),
        None => exec_err!("{FINISH_NODES}: keys of type {}", keys.data_type()),
    }
}

/// One node's records, as the single-group accumulator gathers them.
#[derive(Debug)]
struct FinishNodesAccumulator {
    grower: NodeGrower,
    group: NodeGroup,
}

impl FinishNodesAccumulator {
    /// Takes `keys` and their `records`, which must all be of one node.
    fn add(&mut self, keys: &ArrayRef, records: &ArrayRef) -> Result<()> {
        let keys = records_of(keys, records)?;
        for (row, key) in keys.iter().enumerate() {
            if let Some(key) = key {
                self.group.add(NodeKey::from_bits(key), records, row)?;
            }
        }
        Ok(())
    }
}

impl Accumulator for FinishNodesAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[1], &values[2])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let grown = self.grower.grow(&self.group)?;
        self.group = NodeGroup::default();
        Ok(ScalarValue::Binary(grown))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.group.bytes
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let group = std::mem::take(&mut self.group);
        Ok(vec![
            ScalarValue::UInt64(group.key.map(NodeKey::bits)),
            ScalarValue::LargeBinary(Some(group.pieces().concat())),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [keys, records] = states else { return exec_err!("{FINISH_NODES}: a partial state of two columns") };
        self.add(keys, records)
    }
}

/// Every group's node records, as the grouping gathers them.
#[derive(Debug)]
struct FinishNodesGroups {
    grower: NodeGrower,
    groups: Vec<NodeGroup>,
}

impl FinishNodesGroups {
    /// Takes `keys` and their `records`, row `r` of group `group_indices[r]`
    /// (unless `filter` leaves it out).
    fn add(
        &mut self,
        keys: &ArrayRef,
        records: &ArrayRef,
        group_indices: &[usize],
        filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let keys = records_of(keys, records)?;
        self.groups.resize_with(total_num_groups, NodeGroup::default);
        for (row, &group) in group_indices.iter().enumerate() {
            let kept = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if kept && keys.is_valid(row) {
                self.groups[group].add(NodeKey::from_bits(keys.value(row)), records, row)?;
            }
        }
        Ok(())
    }
}

impl GroupsAccumulator for FinishNodesGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.add(&values[1], &values[2], group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let groups = emit_to.take_needed(&mut self.groups);
        let grown = groups.iter().map(|group| self.grower.grow(group)).collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(BinaryArray::from_iter(grown)))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let groups = emit_to.take_needed(&mut self.groups);
        let keys = UInt64Array::from_iter(groups.iter().map(|group| group.key.map(NodeKey::bits)));
        let bytes: usize = groups.iter().map(|group| group.bytes).sum();
        let mut records = LargeBinaryBuilder::with_capacity(groups.len(), bytes);
        for group in &groups {
            records.append_value(group.pieces().concat());
        }
        Ok(vec![Arc::new(keys), Arc::new(records.finish())])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        let [keys, records] = values else { return exec_err!("{FINISH_NODES}: a partial state of two columns") };
        self.add(keys, records, group_indices, None, total_num_groups)
    }

    /// Rows as states of their own, for a partial aggregate that stops
    /// grouping (it gathers nothing a node's rows do not already hold).
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let keys: ArrayRef = Arc::new(records_of(&values[1], &values[2])?.clone());
        let records = arrow::compute::cast(&values[2], &DataType::LargeBinary)?;
        let Some(filter) = opt_filter else { return Ok(vec![keys, records]) };
        let dropped = arrow::compute::not(&arrow::compute::prep_null_mask_filter(filter))?;
        Ok(vec![arrow::compute::nullif(&keys, &dropped)?, arrow::compute::nullif(&records, &dropped)?])
    }

    fn size(&self) -> usize {
        let held: usize = self.groups.iter().map(|g| g.bytes + g.records.capacity() * 16).sum();
        std::mem::size_of_val(self) + self.groups.capacity() * std::mem::size_of::<NodeGroup>() + held
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{BinaryArray, LargeBinaryArray};

    use super::*;

    /// A group reads its records in place, from binary and large binary
    /// arrays alike, in the order they came; null records add nothing, and
    /// records of two nodes in one group are an error naming both.
    #[test]
    fn a_group_holds_one_nodes_records_in_place() {
        let key = NodeKey::from_bits(7);
        let small: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&b"ab"[..]), None]));
        let large: ArrayRef = Arc::new(LargeBinaryArray::from(vec![&b"cde"[..]]));
        let mut group = NodeGroup::default();
        group.add(key, &large, 0).unwrap();
        group.add(key, &small, 1).unwrap();
        group.add(key, &small, 0).unwrap();
        assert_eq!(group.pieces(), vec![&b"cde"[..], &b"ab"[..]]);
        assert_eq!(group.bytes, 5);
        let error = group.add(NodeKey::from_bits(8), &small, 0).unwrap_err().to_string();
        assert!(error.contains(&key.to_string()) && error.contains(&NodeKey::from_bits(8).to_string()), "{error}");
        let keys: ArrayRef = Arc::new(UInt64Array::from(vec![1u64]));
        let strings: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["x"]));
        assert!(records_of(&keys, &strings).unwrap_err().to_string().contains("records of type Utf8"));
    }
}
