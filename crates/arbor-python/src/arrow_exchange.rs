//! Arrow data between Python and Rust. In: record batches of any producer of
//! the Arrow PyCapsule interface (pyarrow, polars, nanoarrow, arro3, ...),
//! taken over without copying while the GIL is held, so the work after it can
//! run without the GIL. Out: arrays handed to pyarrow the same way.

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{Field, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::{intern, PyResult};
use pyo3_arrow::input::{AnyArray, AnyRecordBatch};
use pyo3_arrow::PyArray;
use std::sync::Arc;

/// Every record batch of a table or stream, in order.
pub fn batches(data: AnyRecordBatch) -> PyResult<Vec<RecordBatch>> {
    let reader = data.into_reader()?;
    let batches: Result<Vec<_>, _> = reader.collect();
    batches.map_err(|e| PyValueError::new_err(format!("could not read the Arrow data: {e}")))
}

/// The chunks of one array or array stream, in order.
pub fn chunks(array: AnyArray) -> PyResult<Vec<ArrayRef>> {
    let chunked = array.into_chunked_array()?;
    Ok(chunked.into_inner().0)
}

/// `batches` with `extra` columns appended, each sliced to its batch's rows:
/// the label and weight travel beside the features without being copied.
pub fn with_columns(batches: Vec<RecordBatch>, extra: &[(&str, Vec<ArrayRef>)]) -> PyResult<Vec<RecordBatch>> {
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut whole = Vec::with_capacity(extra.len());
    for (name, chunks) in extra {
        let length: usize = chunks.iter().map(|c| c.len()).sum();
        if length != rows {
            return Err(PyValueError::new_err(format!(
                "column '{name}' has {length} values but the features have {rows} rows"
            )));
        }
        let refs: Vec<&dyn arrow::array::Array> = chunks.iter().map(|c| c.as_ref()).collect();
        let array = match refs.as_slice() {
            [one] => one.slice(0, one.len()),
            _ => arrow::compute::concat(&refs).map_err(|e| PyValueError::new_err(format!("column '{name}': {e}")))?,
        };
        whole.push((*name, array));
    }
    let mut out = Vec::with_capacity(batches.len());
    let mut offset = 0;
    for batch in batches {
        let n = batch.num_rows();
        let schema = batch.schema();
        let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
        let mut columns = batch.columns().to_vec();
        for (name, array) in &whole {
            if schema.field_with_name(name).is_ok() {
                return Err(PyValueError::new_err(format!("the features already have a column named '{name}'")));
            }
            fields.push(Arc::new(Field::new(*name, array.data_type().clone(), true)));
            columns.push(array.slice(offset, n));
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        out.push(RecordBatch::try_new(schema, columns).map_err(|e| PyValueError::new_err(e.to_string()))?);
        offset += n;
    }
    Ok(out)
}

/// `array` as a `pyarrow.Array`, through the PyCapsule interface (no copy).
pub fn to_pyarrow(py: Python<'_>, array: ArrayRef) -> PyResult<Bound<'_, PyAny>> {
    let exported = PyArray::from_array_ref(array).into_pyobject(py)?;
    py.import(intern!(py, "pyarrow"))?.getattr(intern!(py, "array"))?.call1((exported,))
}
