//! `arbor._arbor`: the Rust half of arbor's Python package.
//!
//! It trains and scores through arbor's Rust front door ([`arbor_ensemble::Trainer`],
//! [`arbor_ensemble::Model`]) on Arrow data handed over through the Arrow
//! PyCapsule interface (no copies), releases the GIL while it works, and
//! exports arbor's SQL functions as DataFusion FFI capsules for
//! datafusion-python. The Python half (`python/arbor`) holds the
//! scikit-learn estimators and the conversions of NumPy and pandas data.

mod arrow_exchange;
mod dataset;
mod model;
mod python_error;
mod sql_functions;
mod training;

use pyo3::prelude::*;

/// The extension module, imported by the `arbor` package as `arbor._arbor`.
#[pymodule]
#[pyo3(name = "_arbor")]
fn arbor_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<model::Model>()?;
    m.add_class::<sql_functions::ScalarFunction>()?;
    m.add_class::<sql_functions::AggregateFunction>()?;
    m.add_class::<dataset::BinnedRows>()?;
    m.add_function(wrap_pyfunction!(training::train, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::bin_rows, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::train_binned, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::cross_validate, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::predict_binned, m)?)?;
    m.add_function(wrap_pyfunction!(sql_functions::sql_functions, m)?)?;
    m.add("OPTION_KEYS", arbor_ensemble::OPTION_KEYS.to_vec())?;
    m.add("DATAFUSION_MAJOR", datafusion_major())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// The major version of the DataFusion arbor's functions are built against:
/// the FFI only promises compatibility within one major version.
fn datafusion_major() -> u32 {
    datafusion::DATAFUSION_VERSION.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0)
}
