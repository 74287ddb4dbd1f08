//! Feature quantization for arbor.
//!
//! Tree training in arbor works on *bins*, not raw values: every feature is
//! mapped once to small integer codes, and histograms are then built over those
//! codes. This crate owns that mapping:
//!
//! - [`FeatureColumn`] reads one Arrow column of any integer or float width,
//!   booleans, or strings/dictionaries (categorical) into a uniform form
//!   ([`NumericValues`] at `f32` whenever that is exact, category bins at two bytes);
//! - [`BinMapper`] holds a feature's bin edges (quantiles, per `docs/algorithms.md`, "Histogram binning":
//!   `max_bins`, `min_bin_size`) or its category list;
//! - [`BinnedMatrix`] is the compact column-major matrix of codes (one byte
//!   per cell when a feature has at most 256 bins).
//!
//! Bin `0` of every feature is the missing-value bin (null, NaN, or a category
//! never seen in training), so trees can learn where missing values go.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Float64Array};
//! use arbor_quantize::{BinMapper, FeatureColumn, QuantizeParams};
//!
//! let col: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None, Some(3.0), Some(2.0)]));
//! let feature = FeatureColumn::from_arrays("x", &[col]).unwrap();
//! let mapper = BinMapper::fit(&feature, &QuantizeParams { max_bins: 256, min_bin_size: 1, ..Default::default() });
//! // three distinct values -> three value bins, plus the missing bin 0
//! assert_eq!(mapper.n_bins(), 4);
//! assert_eq!(mapper.bin_value(f64::NAN), 0);
//! assert_eq!(mapper.bin_value(1.0), 1);
//! // edges lie midway between values (1.5, 2.5); a value on an edge stays below it
//! assert_eq!(mapper.bin_value(2.5), 2);
//! assert_eq!(mapper.bin_value(2.6), 3);
//! ```

mod bin_mapper;
mod binned_matrix;
mod error;
mod feature_column;
mod greedy_edges;
mod integer_span;
mod numeric_values;

pub use bin_mapper::{BinBoundaries, BinMapper, QuantizeParams, MISSING_BIN};
pub use binned_matrix::{BinColumn, BinnedMatrix};
pub use error::QuantizeError;
pub use feature_column::{FeatureColumn, FeatureType};
pub use integer_span::{integer_span, offset};
pub use numeric_values::{Number, NumericValues};
