//! arbor's SQL functions for datafusion-python, through the DataFusion FFI:
//! each is an object with the `__datafusion_scalar_udf__` or
//! `__datafusion_aggregate_udf__` capsule getter that
//! `datafusion.udf(...)` / `datafusion.udaf(...)` take.

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// One arbor scalar function (`predict_forest`, `forest_info`, ...), exportable to datafusion-python.
#[pyclass(module = "arbor", frozen)]
pub struct ScalarFunction {
    udf: Arc<ScalarUDF>,
}

#[pymethods]
impl ScalarFunction {
    /// The function's SQL name.
    #[getter]
    fn name(&self) -> String {
        self.udf.name().to_owned()
    }

    /// The FFI capsule datafusion-python's `udf()` imports.
    fn __datafusion_scalar_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        PyCapsule::new_with_value(py, FFI_ScalarUDF::from(self.udf.clone()), c"datafusion_scalar_udf")
    }

    fn __repr__(&self) -> String {
        format!("arbor scalar function {}", self.udf.name())
    }
}

/// arbor's aggregate function `train_forest`, exportable to datafusion-python.
#[pyclass(module = "arbor", frozen)]
pub struct AggregateFunction {
    udaf: Arc<AggregateUDF>,
}

#[pymethods]
impl AggregateFunction {
    /// The function's SQL name.
    #[getter]
    fn name(&self) -> String {
        self.udaf.name().to_owned()
    }

    /// The FFI capsule datafusion-python's `udaf()` imports.
    fn __datafusion_aggregate_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        PyCapsule::new_with_value(py, FFI_AggregateUDF::from(self.udaf.clone()), c"datafusion_aggregate_udf")
    }

    fn __repr__(&self) -> String {
        format!("arbor aggregate function {}", self.udaf.name())
    }
}

/// Every arbor SQL function, the scalar ones sharing one model cache (one
/// call per session, so no session's models answer for another's).
#[pyfunction]
pub fn sql_functions() -> (Vec<ScalarFunction>, Vec<AggregateFunction>) {
    let scalars =
        arbor_datafusion::scalar_functions().into_iter().map(|f| ScalarFunction { udf: Arc::new(f) }).collect();
    let aggregates =
        arbor_datafusion::aggregate_functions().into_iter().map(|f| AggregateFunction { udaf: Arc::new(f) }).collect();
    (scalars, aggregates)
}
