//! `arbor_small_node_records(state, label, feature, ... [, 'options'])`:
//! a batch's rows as records of the small forest nodes they reach, for the
//! job that finishes those nodes (see [`crate::level_training`]).
//!
//! Each record is a row, binned, with its bootstrap multiplicity in the
//! node's tree; a batch's records of one node travel together, keyed by
//! the node. The job unnests them and groups them by key, so every node's
//! rows meet in one group wherever its task runs ([`crate::finish_nodes`]).
//! Which row of a batch carries them does not matter, only their key: a
//! batch's nodes are all in the first row's list, the others' lists are
//! empty.

use std::sync::Arc;

use arbor_ensemble::{ArborError, LevelState, NodeRecords};
use arrow::array::{new_empty_array, ArrayRef, LargeBinaryBuilder, ListArray, StructArray, UInt64Array};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::column_chunks::ColumnChunks;
use crate::error::FunctionError;
use crate::sql_options::TrainOptions;
use crate::state_cache::StateCache;
use crate::train_arguments::{training_data, PerRowArgs};

/// The function's name. It is internal: the level-wise driver calls it.
pub const SMALL_NODE_RECORDS: &str = "arbor_small_node_records";

/// The name errors give: what the user called.
const NAME: &str = "train_forest";

/// The `arbor_small_node_records` scalar function.
#[derive(Debug)]
pub struct SmallNodeRecords {
    signature: Signature,
    states: StateCache,
}

impl SmallNodeRecords {
    /// The function, with a cache of the state it was last given.
    pub fn new() -> Self {
        SmallNodeRecords { signature: Signature::variadic_any(Volatility::Immutable), states: StateCache::default() }
    }

    /// The fields of an entry: a node's key and its records' bytes (large:
    /// a partition's records of one node can pass 2 GiB).
    pub fn record_fields() -> Fields {
        Fields::from(vec![
            Field::new("key", DataType::UInt64, false),
            Field::new("record", DataType::LargeBinary, false),
        ])
    }

    /// What the function returns: a list of (key, records) entries.
    pub fn return_type_of() -> DataType {
        DataType::List(Arc::new(Field::new_list_field(DataType::Struct(Self::record_fields()), false)))
    }

    /// Each node's key (u64) and its records (large binary), a row per node.
    pub(crate) fn node_columns(records: &NodeRecords) -> (ArrayRef, ArrayRef) {
        let keys = UInt64Array::from_iter_values(records.nodes.iter().map(|(key, _)| key.bits()));
        let mut bytes = LargeBinaryBuilder::with_capacity(records.nodes.len(), records.len_bytes());
        records.nodes.iter().for_each(|(_, records)| bytes.append_value(records));
        (Arc::new(keys), Arc::new(bytes.finish()))
    }

    /// A list of `n_rows` lists, the first holding an entry per node of
    /// `records`: the grouping then meets a row per node and batch, not
    /// per record.
    pub(crate) fn to_lists(records: NodeRecords, n_rows: usize) -> Result<ArrayRef> {
        let item = Arc::new(Field::new_list_field(DataType::Struct(Self::record_fields()), false));
        if n_rows == 0 {
            return Ok(new_empty_array(&DataType::List(item)));
        }
        let n = records.nodes.len();
        let (keys, bytes) = Self::node_columns(&records);
        let entries = StructArray::try_new(Self::record_fields(), vec![keys, bytes], None)?;
        let lengths = std::iter::once(n).chain(std::iter::repeat_n(0, n_rows - 1));
        Ok(Arc::new(ListArray::try_new(item, OffsetBuffer::from_lengths(lengths), Arc::new(entries), None)?))
    }
}

impl Default for SmallNodeRecords {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for SmallNodeRecords {
    fn eq(&self, other: &Self) -> bool {
        self.signature == other.signature
    }
}

impl Eq for SmallNodeRecords {}

impl std::hash::Hash for SmallNodeRecords {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.signature.hash(state);
    }
}

impl ScalarUDFImpl for SmallNodeRecords {
    fn name(&self) -> &str {
        SMALL_NODE_RECORDS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(Self::return_type_of())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n_rows = args.number_rows;
        if args.args.len() < 4 {
            return exec_err!("{SMALL_NODE_RECORDS} takes a state, a label, features and options");
        }
        let (Some(ColumnarValue::Scalar(state)), Some(ColumnarValue::Scalar(options))) =
            (args.args.first(), args.args.last())
        else {
            return exec_err!("{SMALL_NODE_RECORDS} takes the training state first and the options last");
        };
        let (ScalarValue::Binary(Some(state)), ScalarValue::Utf8(Some(options))) = (state, options) else {
            return exec_err!("{SMALL_NODE_RECORDS} takes the state as binary and the options as text");
        };
        let state = self.states.decode(state).exec(NAME)?;
        let LevelState::Forest(forest) = state.as_ref() else {
            return exec_err!("{NAME}: only a forest finishes small nodes");
        };
        let options = TrainOptions::parse(options).exec(NAME)?;
        let data_args = &args.args[1..args.args.len() - 1];
        let names: Vec<String> = args.arg_fields[1..args.args.len() - 1].iter().map(|f| f.name().clone()).collect();
        let types: Vec<DataType> =
            args.arg_fields[1..args.args.len() - 1].iter().map(|f| f.data_type().clone()).collect();
        let weight = options.weight.as_ref().and_then(|w| names.iter().skip(1).position(|n| n == w).map(|i| i + 1));
        let mut columns = Vec::with_capacity(data_args.len());
        for arg in data_args {
            let mut chunks = ColumnChunks::default();
            chunks.push(arg.to_array(n_rows)?)?;
            columns.push(chunks);
        }
        let records = match training_data(
            &names,
            &types,
            PerRowArgs { weight, group: None },
            &mut columns,
            options.params.task,
            false,
        ) {
            Ok(data) => forest.node_records(&data).exec(NAME)?,
            // A batch whose labels are all null reaches no node.
            Err(ArborError::NothingToTrain(_)) => NodeRecords::default(),
            Err(e) => return Err(e).exec(NAME),
        };
        Ok(ColumnarValue::Array(Self::to_lists(records, n_rows)?))
    }
}
