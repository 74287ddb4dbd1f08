//! One feature column read from Arrow into arbor's uniform representation.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use serde::{Deserialize, Serialize};

use crate::QuantizeError;

/// How a feature's values are compared in splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeatureType {
    /// Ordered values (any integer or float width); splits are `x <= threshold`.
    Numeric,
    /// Booleans, read as 0 / 1 and split like numbers.
    Boolean,
    /// Strings or dictionaries; splits send a subset of categories left.
    Categorical,
}

impl FeatureType {
    /// The type an Arrow column is read as, or `None` when arbor cannot use it.
    pub fn of(data_type: &DataType) -> Option<FeatureType> {
        use DataType::*;
        match data_type {
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32 | Float64
            | Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => Some(FeatureType::Numeric),
            Boolean => Some(FeatureType::Boolean),
            Utf8 | LargeUtf8 | Utf8View => Some(FeatureType::Categorical),
            Dictionary(_, value) if matches!(value.as_ref(), Utf8 | LargeUtf8 | Utf8View) => {
                Some(FeatureType::Categorical)
            }
            _ => None,
        }
    }

    /// A lower-case name for reports (`numeric`, `boolean`, `categorical`).
    pub fn name(self) -> &'static str {
        match self {
            FeatureType::Numeric => "numeric",
            FeatureType::Boolean => "boolean",
            FeatureType::Categorical => "categorical",
        }
    }
}

/// A feature's values, read from one or more Arrow arrays (one per batch).
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureColumn {
    /// Numeric or boolean values as `f64`; null becomes NaN (missing).
    Numeric(Vec<f64>),
    /// Categorical values as codes into `categories` (sorted); `None` is missing.
    Categorical {
        /// Per row: index into `categories`, or `None` for null.
        codes: Vec<Option<u32>>,
        /// Distinct category strings, sorted, so the coding is deterministic.
        categories: Vec<String>,
    },
}

impl FeatureColumn {
    /// Reads the arrays of column `name` (one per record batch) as a feature.
    pub fn from_arrays(name: &str, arrays: &[ArrayRef]) -> Result<Self, QuantizeError> {
        let data_type = arrays.first().map(|a| a.data_type().clone()).unwrap_or(DataType::Float64);
        match FeatureType::of(&data_type) {
            Some(FeatureType::Numeric | FeatureType::Boolean) => {
                let mut values = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
                for array in arrays {
                    append_f64(name, array, &mut values)?;
                }
                Ok(FeatureColumn::Numeric(values))
            }
            Some(FeatureType::Categorical) => {
                let mut strings = Vec::with_capacity(arrays.len());
                for array in arrays {
                    strings.push(to_utf8(name, array)?);
                }
                // Codes in order of first appearance, then renumbered so
                // categories are sorted and the coding is deterministic.
                // A fixed-seed fast hash: the coding does not depend on it.
                let mut first_seen: HashMap<&str, u32, FixedState> = HashMap::with_hasher(FixedState::default());
                let mut seen_codes: Vec<Option<u32>> = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
                for s in &strings {
                    for v in s.as_string::<i32>().iter() {
                        seen_codes.push(v.map(|v| {
                            let next = first_seen.len() as u32;
                            *first_seen.entry(v).or_insert(next)
                        }));
                    }
                }
                if first_seen.len() > u16::MAX as usize - 1 {
                    return Err(QuantizeError::TooManyCategories {
                        column: name.to_owned(),
                        count: first_seen.len(),
                        max: u16::MAX as usize - 1,
                    });
                }
                let mut by_name: Vec<(&str, u32)> = first_seen.into_iter().collect();
                by_name.sort_unstable();
                let mut sorted_code = vec![0u32; by_name.len()];
                for (rank, &(_, code)) in by_name.iter().enumerate() {
                    sorted_code[code as usize] = rank as u32;
                }
                let categories: Vec<String> = by_name.iter().map(|(c, _)| (*c).to_owned()).collect();
                let codes = seen_codes.into_iter().map(|c| c.map(|c| sorted_code[c as usize])).collect();
                Ok(FeatureColumn::Categorical { codes, categories })
            }
            None => Err(QuantizeError::UnsupportedType { column: name.to_owned(), data_type }),
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            FeatureColumn::Numeric(v) => v.len(),
            FeatureColumn::Categorical { codes, .. } => codes.len(),
        }
    }

    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `row`'s value as trees compare it: the number itself, or for a
    /// categorical feature its bin (code + 1, as [`crate::BinMapper::bin_column`]
    /// numbers categories); NaN when missing.
    #[inline]
    pub fn raw_value(&self, row: usize) -> f64 {
        match self {
            FeatureColumn::Numeric(values) => values[row],
            FeatureColumn::Categorical { codes, .. } => codes[row].map_or(f64::NAN, |c| f64::from(c) + 1.0),
        }
    }
}

/// Appends a numeric or boolean array to `out` as `f64`, nulls as NaN.
pub(crate) fn append_f64(name: &str, array: &ArrayRef, out: &mut Vec<f64>) -> Result<(), QuantizeError> {
    let floats =
        cast(array, &DataType::Float64).map_err(|source| QuantizeError::Arrow { column: name.to_owned(), source })?;
    let floats = floats.as_primitive::<Float64Type>();
    if floats.null_count() == 0 {
        out.extend_from_slice(floats.values());
    } else {
        out.extend(floats.iter().map(|v| v.unwrap_or(f64::NAN)));
    }
    Ok(())
}

/// Casts a string or dictionary array to plain `Utf8`.
pub(crate) fn to_utf8(name: &str, array: &ArrayRef) -> Result<ArrayRef, QuantizeError> {
    cast(array, &DataType::Utf8).map_err(|source| QuantizeError::Arrow { column: name.to_owned(), source })
}
