//! One argument's rows as an aggregate holds them until it trains.

use arrow::array::{Array, ArrayRef};
use arrow::compute::concat;
use datafusion::error::Result;

/// One argument's rows: compact chunks, plus the arrays received since the last compaction.
///
/// Arrays handed to an accumulator are often slices of a larger batch (one
/// slice per group under GROUP BY, one row each with `batch_size = 1`).
/// Keeping them as they arrive would hold whole batches alive and cost an
/// array header per row; copying them into chunks keeps memory proportional
/// to the group's rows, which is what [`Accumulator::size`] reports to the pool.
#[derive(Debug, Default, Clone)]
pub(crate) struct ColumnChunks {
    chunks: Vec<ArrayRef>,
    pending: Vec<ArrayRef>,
    pending_rows: usize,
}

impl ColumnChunks {
    /// Arrays or rows received before they are copied into one chunk.
    const MAX_PENDING_ARRAYS: usize = 64;
    const MAX_PENDING_ROWS: usize = 1 << 16;

    pub(crate) fn push(&mut self, array: ArrayRef) -> Result<()> {
        if array.is_empty() {
            return Ok(());
        }
        self.pending_rows += array.len();
        self.pending.push(array);
        if self.pending.len() >= Self::MAX_PENDING_ARRAYS || self.pending_rows >= Self::MAX_PENDING_ROWS {
            self.compact()?;
        }
        Ok(())
    }

    /// Copies the pending arrays into one chunk.
    pub(crate) fn compact(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let refs: Vec<&dyn Array> = self.pending.iter().map(|a| a.as_ref()).collect();
            self.chunks.push(concat(&refs)?);
            self.pending.clear();
            self.pending_rows = 0;
        }
        Ok(())
    }

    /// Every row, as compact chunks.
    pub(crate) fn compacted(&mut self) -> Result<Vec<ArrayRef>> {
        self.compact()?;
        Ok(self.chunks.clone())
    }

    /// Bytes held: whole chunks, and the pending arrays' own rows (their
    /// batches belong to whoever sliced them).
    pub(crate) fn size(&self) -> usize {
        let chunks: usize = self.chunks.iter().map(|a| a.get_array_memory_size()).sum();
        let pending: usize = self
            .pending
            .iter()
            .map(|a| a.to_data().get_slice_memory_size().unwrap_or_else(|_| a.get_array_memory_size()))
            .sum();
        chunks + pending + (self.chunks.capacity() + self.pending.capacity()) * std::mem::size_of::<ArrayRef>()
    }
}
