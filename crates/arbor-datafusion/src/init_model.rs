//! The model `train_forest` continues boosting from (`init_model`): the
//! value of its model argument, `train_forest(label, feature, ..., model[,
//! 'options'])`, one model per group.
//!
//! A literal or scalar subquery is read once, when the aggregate is made;
//! a column (a joined model table) is read as its rows arrive, and rows
//! that repeat the same bytes (a join repeats a view of one buffer) cost a
//! pointer comparison. Two different models in one group are an error
//! naming the argument; a group whose model is NULL trains from scratch.

use arbor_ensemble::{ArborError, Model};
use arrow::array::{Array, ArrayRef};
use arrow::buffer::Buffer;
use arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;

use crate::model_column::ModelBytes;

/// The function's name, in its errors.
const NAME: &str = "train_forest";

/// A group's model to continue, as its argument gives it.
#[derive(Debug)]
pub(crate) struct InitModel {
    /// The argument's name, for errors.
    name: String,
    /// The argument's type: the type of the state that carries the model.
    data_type: DataType,
    /// The argument's position among the aggregate's arguments.
    pub index: usize,
    /// Whether the argument is a constant, read when the aggregate was made.
    pub constant: bool,
    /// The first model seen: a one-row slice of its column (the state
    /// passes it on in the argument's own type) and its bytes.
    kept: Option<(ArrayRef, Buffer)>,
}

impl InitModel {
    /// No model seen yet of argument `name` (of `data_type`), the `index`-th.
    pub(crate) fn new(name: String, data_type: DataType, index: usize) -> InitModel {
        InitModel { name, data_type, index, constant: false, kept: None }
    }

    /// Takes note of a batch of the argument: the first model is kept, a
    /// different one is an error naming the argument.
    pub(crate) fn see(&mut self, array: &ArrayRef) -> Result<()> {
        let models = ModelBytes::new(NAME, array.as_ref())?;
        let mut previous: Option<(*const u8, usize)> = None;
        for row in 0..models.len() {
            let Some(bytes) = models.get(row) else { continue };
            let at = (bytes.as_ptr(), bytes.len());
            if previous == Some(at) {
                continue;
            }
            previous = Some(at);
            match &self.kept {
                None => self.kept = Some((array.slice(row, 1), models.buffer(row).expect("a model, not null"))),
                Some((_, kept)) if (kept.as_ptr(), kept.len()) == at || kept.as_slice() == bytes => {}
                Some(_) => {
                    return exec_err!(
                        "{NAME}: the model argument '{}' holds different models in one group; boosting continues \
                         one model per group (GROUP BY the model's key, or give one model)",
                        self.name
                    )
                }
            }
        }
        Ok(())
    }

    /// The model seen, as a column of the argument's type (empty if none),
    /// for a partial aggregate's state.
    pub(crate) fn state(&self) -> ArrayRef {
        match &self.kept {
            Some((array, _)) => array.clone(),
            None => arrow::array::new_empty_array(&self.data_type),
        }
    }

    /// The model seen, decoded; `None` if every row's model was NULL.
    pub(crate) fn decoded(&self) -> std::result::Result<Option<Model>, ArborError> {
        let Some((_, bytes)) = &self.kept else { return Ok(None) };
        Model::from_bytes(bytes.as_slice()).map(Some).map_err(|e| {
            ArborError::Data(format!("the model argument '{}' is not a model to continue: {e}", self.name))
        })
    }
}
