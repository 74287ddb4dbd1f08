//! A model trained before its statement runs, as a table of one row.
//!
//! Level-wise training ([`crate::LevelTraining`]) finishes a model before
//! the statement that asked for it is planned, and puts it where the
//! aggregate was. As a literal, the model's bytes would be part of an
//! expression, and DataFusion names an expression by its text: every
//! optimizer pass would format the model in hex (0.4 s a megabyte on the
//! scheduler). As a table, the bytes are data: a plan carries them as one
//! Arrow IPC message and no pass reads them.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

/// What an encoded [`ModelTable`] starts with, so a codec tells it from other tables.
const MAGIC: &[u8] = b"arbor-model-table\0";

/// One row holding a trained model (and whatever else its statement's
/// aggregate gave), scanned as an in-memory batch.
#[derive(Debug)]
pub struct ModelTable {
    row: RecordBatch,
}

impl ModelTable {
    /// The table of `row` (one row).
    pub fn new(row: RecordBatch) -> ModelTable {
        ModelTable { row }
    }

    /// The table as bytes, for a plan that crosses processes.
    pub fn encode(&self, buf: &mut Vec<u8>) -> Result<()> {
        buf.extend_from_slice(MAGIC);
        let mut writer = StreamWriter::try_new(buf, &self.row.schema())?;
        writer.write(&self.row)?;
        writer.finish()?;
        Ok(())
    }

    /// The table `buf` encodes ([`ModelTable::encode`]), `None` when `buf`
    /// is not one, and an error when it is one but corrupt.
    pub fn decode(buf: &[u8]) -> Result<Option<ModelTable>> {
        let Some(ipc) = buf.strip_prefix(MAGIC) else { return Ok(None) };
        let corrupt = |e: &dyn std::fmt::Display| DataFusionError::Execution(format!("a model table is corrupt: {e}"));
        let reader = StreamReader::try_new(ipc, None).map_err(|e| corrupt(&e))?;
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| corrupt(&e))?;
        match <[RecordBatch; 1]>::try_from(batches) {
            Ok([row]) if row.num_rows() == 1 => Ok(Some(ModelTable { row })),
            _ => Err(corrupt(&"it does not hold one row")),
        }
    }
}

#[async_trait]
impl TableProvider for ModelTable {
    fn schema(&self) -> SchemaRef {
        self.row.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(MemorySourceConfig::try_new_exec(&[vec![self.row.clone()]], self.schema(), projection.cloned())?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{BinaryArray, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::ModelTable;

    #[test]
    fn a_table_reads_back_from_its_bytes_and_others_are_not_taken_for_one() {
        let schema = Arc::new(Schema::new(vec![Field::new("model", DataType::Binary, true)]));
        let model: Vec<u8> = (0..100_000u32).map(|i| (i * 31) as u8).collect();
        let row = RecordBatch::try_new(schema, vec![Arc::new(BinaryArray::from(vec![model.as_slice()]))]).unwrap();
        let mut buf = Vec::new();
        ModelTable::new(row.clone()).encode(&mut buf).unwrap();
        assert_eq!(ModelTable::decode(&buf).unwrap().unwrap().row, row);
        assert!(ModelTable::decode(b"a listing table").unwrap().is_none());
        let error = ModelTable::decode(&buf[..buf.len() / 2]).unwrap_err().to_string();
        assert!(error.contains("model table is corrupt"), "{error}");
    }
}
