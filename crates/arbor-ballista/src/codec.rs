//! The physical codec of arbor's clusters: Ballista's, plus arbor's own
//! plan node ([`LevelStepExec`], a level job's step over kept shards),
//! which the scheduler plans and executors run.

use std::sync::Arc;

use arbor_datafusion::LevelStepExec;
use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

/// Ballista's physical codec with arbor's plan nodes.
#[derive(Debug, Default)]
pub struct ArborCodec {
    ballista: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for ArborCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match LevelStepExec::decode(buf, inputs)? {
            Some(exec) => Ok(exec),
            None => self.ballista.try_decode(buf, inputs, ctx, converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        match node.downcast_ref::<LevelStepExec>() {
            Some(step) => step.encode(buf),
            None => self.ballista.try_encode(node, buf, converter),
        }
    }
}
