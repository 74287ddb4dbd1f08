//! Parameters that passed [`TrainParams::check`]: the only kind training
//! takes, as linfa's `ParamGuard` separates a checked hyperparameter set
//! from the builder it came from.

use std::ops::Deref;

use crate::params::types::{Task, TrainParams};
use crate::Result;

/// Training parameters that passed [`TrainParams::check`], and cannot change
/// since: the trainers, the level-wise training state and the distributed
/// steps take this type, so none of them checks again.
///
/// Only [`TrainParams::check`] makes one. Its fields are read through
/// [`Deref`] to [`TrainParams`] (`checked.forest.n_trees`), which lends them
/// read-only: there is no `DerefMut`, so a checked value is the value that
/// was checked. To change a setting, clone the [`TrainParams`]
/// (`(*checked).clone()`), change it and check that.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedParams {
    params: TrainParams,
}

impl CheckedParams {
    /// Wraps parameters [`TrainParams::check`] has just checked.
    pub(crate) fn new(params: TrainParams) -> CheckedParams {
        CheckedParams { params }
    }

    /// The parameters for data of `task`: the same, with the task's rules
    /// (`criterion`, `voting`) checked if `check` could not (no `task` set),
    /// and the task set. Training calls it once, where the data's task
    /// becomes known ([`Trainer`](crate::Trainer)'s `fit`, [`Message::start`](crate::Message::start)).
    pub fn for_task(&self, task: Task) -> Result<CheckedParams> {
        if self.params.task != Some(task) {
            self.params.check_task(task)?;
        }
        Ok(CheckedParams { params: TrainParams { task: Some(task), ..self.params.clone() } })
    }

    /// The parameters as checked, unwrapped (to change and check again).
    pub fn into_inner(self) -> TrainParams {
        self.params
    }
}

impl Deref for CheckedParams {
    type Target = TrainParams;

    fn deref(&self) -> &TrainParams {
        &self.params
    }
}
