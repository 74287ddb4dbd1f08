//! The internal functions the jobs of level-wise training call
//! ([`crate::LevelTraining`]), in one list: the driver plans its jobs with
//! them, and a cluster's executors and clients register the same list.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

use crate::finish_nodes::FinishNodes;
use crate::small_node_records::SmallNodeRecords;
use crate::train_step::TrainStep;

/// `arbor_train_step`, `arbor_small_node_records` and `arbor_finish_nodes`.
#[derive(Debug, Clone)]
pub struct LevelFunctions {
    /// A summary or level job's aggregate ([`TrainStep`]).
    pub(crate) step: Arc<AggregateUDF>,
    /// A finishing job's records of each row's small nodes ([`SmallNodeRecords`]).
    pub(crate) records: Arc<ScalarUDF>,
    /// A finishing job's grower of each small node ([`FinishNodes`]).
    pub(crate) finish: Arc<AggregateUDF>,
}

impl LevelFunctions {
    /// The three functions.
    pub fn new() -> LevelFunctions {
        LevelFunctions {
            step: Arc::new(AggregateUDF::new_from_impl(TrainStep::new())),
            records: Arc::new(ScalarUDF::new_from_impl(SmallNodeRecords::new())),
            finish: Arc::new(AggregateUDF::new_from_impl(FinishNodes::new())),
        }
    }

    /// Registers them on `registry` (an executor's session state).
    pub fn register(&self, registry: &mut dyn FunctionRegistry) -> Result<()> {
        registry.register_udaf(self.step.clone())?;
        registry.register_udf(self.records.clone())?;
        registry.register_udaf(self.finish.clone())?;
        Ok(())
    }

    /// Registers them on `ctx` (a client's session).
    pub fn register_on(&self, ctx: &SessionContext) {
        ctx.register_udaf(self.step.as_ref().clone());
        ctx.register_udf(self.records.as_ref().clone());
        ctx.register_udaf(self.finish.as_ref().clone());
    }
}

impl Default for LevelFunctions {
    fn default() -> Self {
        Self::new()
    }
}
