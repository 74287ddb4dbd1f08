//! The codecs of arbor's clusters: Ballista's, plus arbor's own plan
//! nodes. Physical: [`LevelStepExec`], a level job's step over kept
//! shards, which the scheduler plans and executors run. Logical:
//! [`ModelTable`], a model trained level by level before its statement
//! runs, which the client sends the scheduler inside the statement.

use std::sync::Arc;

use arbor_datafusion::{LevelStepExec, ModelTable};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
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

/// Ballista's logical codec with arbor's tables.
#[derive(Debug, Default)]
pub struct ArborLogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for ArborLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match ModelTable::decode(buf)? {
            Some(table) => Ok(Arc::new(table)),
            None => self.ballista.try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match node.downcast_ref::<ModelTable>() {
            Some(table) => table.encode(buf),
            None => self.ballista.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(&self, buf: &[u8], ctx: &TaskContext) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(&self, buf: &mut Vec<u8>, node: Arc<dyn FileFormatFactory>) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }
}
