//! One feature column read from Arrow into arbor's uniform representation.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use serde::{Deserialize, Serialize};

use crate::{NumericValues, QuantizeError, MISSING_BIN};

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
    /// Numeric or boolean values (at the narrowest exact width); null becomes NaN (missing).
    Numeric(NumericValues),
    /// Categorical values as bins: 1 + the category's index in `categories`
    /// (sorted), [`MISSING_BIN`] for null; two bytes a row.
    Categorical {
        /// Per row: 1 + index into `categories`, or 0 for null.
        bins: Vec<u16>,
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
                let mut values = NumericValues::default();
                for array in arrays {
                    values.append(name, array)?;
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
                let mut first_seen: HashMap<&str, u16, FixedState> = HashMap::with_hasher(FixedState::default());
                // Each row's 1 + code (0 for missing), renumbered in place below:
                // two bytes a row, the column's final width.
                let mut bins: Vec<u16> = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
                let max = u16::MAX as usize - 1;
                let mut more = std::collections::HashSet::<&str, FixedState>::with_hasher(FixedState::default());
                for s in &strings {
                    for v in s.as_string::<i32>().iter() {
                        bins.push(v.map_or(0, |v| {
                            let next = first_seen.len();
                            if next < max {
                                *first_seen.entry(v).or_insert(next as u16 + 1)
                            } else {
                                // Past the limit: only counted, for the error.
                                if !first_seen.contains_key(v) {
                                    more.insert(v);
                                }
                                first_seen.get(v).copied().unwrap_or(0)
                            }
                        }));
                    }
                }
                if !more.is_empty() {
                    return Err(QuantizeError::TooManyCategories {
                        column: name.to_owned(),
                        count: first_seen.len() + more.len(),
                        max,
                    });
                }
                let mut by_name: Vec<(&str, u16)> = first_seen.into_iter().collect();
                by_name.sort_unstable();
                // Index 0 (missing) stays the missing bin.
                let mut sorted_bin = vec![MISSING_BIN; by_name.len() + 1];
                for (rank, &(_, code)) in by_name.iter().enumerate() {
                    sorted_bin[usize::from(code)] = rank as u16 + 1;
                }
                let categories: Vec<String> = by_name.iter().map(|(c, _)| (*c).to_owned()).collect();
                bins.iter_mut().for_each(|b| *b = sorted_bin[usize::from(*b)]);
                Ok(FeatureColumn::Categorical { bins, categories })
            }
            None => Err(QuantizeError::UnsupportedType { column: name.to_owned(), data_type }),
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            FeatureColumn::Numeric(v) => v.len(),
            FeatureColumn::Categorical { bins, .. } => bins.len(),
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
            FeatureColumn::Numeric(values) => values.get(row),
            FeatureColumn::Categorical { bins, .. } => match bins[row] {
                MISSING_BIN => f64::NAN,
                bin => f64::from(bin),
            },
        }
    }

    /// The rows at `rows` (positions), in that order.
    pub fn gather(&self, rows: &[u32]) -> FeatureColumn {
        match self {
            FeatureColumn::Numeric(values) => FeatureColumn::Numeric(values.gather(rows)),
            FeatureColumn::Categorical { bins, categories } => FeatureColumn::Categorical {
                bins: rows.iter().map(|&r| bins[r as usize]).collect(),
                categories: categories.clone(),
            },
        }
    }

    /// Bytes held by the values (not the category names).
    pub fn size_bytes(&self) -> usize {
        match self {
            FeatureColumn::Numeric(values) => values.size_bytes(),
            FeatureColumn::Categorical { bins, .. } => bins.len() * 2,
        }
    }
}

/// Appends a numeric or boolean array to `out` as `f64`, nulls as NaN.
/// `Float64` and `Float32` arrays are read in place, in one pass (a cast
/// first wrote a new `Float64` array: a tenth of scoring a boosted model on
/// 50 `Float32` columns); other types are cast.
pub(crate) fn append_f64(name: &str, array: &ArrayRef, out: &mut Vec<f64>) -> Result<(), QuantizeError> {
    match array.data_type() {
        DataType::Float64 => extend_f64(array.as_primitive::<Float64Type>(), out),
        DataType::Float32 => {
            let floats = array.as_primitive::<Float32Type>();
            if floats.null_count() == 0 {
                out.extend(floats.values().iter().map(|&v| f64::from(v)));
            } else {
                out.extend(floats.iter().map(|v| v.map_or(f64::NAN, f64::from)));
            }
        }
        _ => extend_f64(to_f64(name, array)?.as_primitive::<Float64Type>(), out),
    }
    Ok(())
}

/// Casts a numeric or boolean array to `Float64`.
pub(crate) fn to_f64(name: &str, array: &ArrayRef) -> Result<ArrayRef, QuantizeError> {
    cast(array, &DataType::Float64).map_err(|source| QuantizeError::Arrow { column: name.to_owned(), source })
}

/// Appends `floats` to `out`, nulls as NaN.
pub(crate) fn extend_f64(floats: &Float64Array, out: &mut Vec<f64>) {
    if floats.null_count() == 0 {
        out.extend_from_slice(floats.values());
    } else {
        out.extend(floats.iter().map(|v| v.unwrap_or(f64::NAN)));
    }
}

/// Casts a string or dictionary array to plain `Utf8`.
pub(crate) fn to_utf8(name: &str, array: &ArrayRef) -> Result<ArrayRef, QuantizeError> {
    cast(array, &DataType::Utf8).map_err(|source| QuantizeError::Arrow { column: name.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{DictionaryArray, Float32Array, StringArray};
    use arrow::datatypes::Int8Type;

    use super::*;

    /// Categories are numbered in sorted order from bin 1, across batches and
    /// array kinds; nulls take the missing bin, and rows gather with their bins.
    #[test]
    fn categories_become_sorted_bins() {
        let plain: ArrayRef = Arc::new(StringArray::from(vec![Some("UA"), None, Some("AA")]));
        let dictionary: ArrayRef = Arc::new(DictionaryArray::<Int8Type>::from_iter([Some("DL"), Some("UA"), None]));
        let column = FeatureColumn::from_arrays("carrier", &[plain, dictionary]).unwrap();
        let FeatureColumn::Categorical { bins, categories } = &column else { panic!("strings are categorical") };
        assert_eq!(categories, &["AA", "DL", "UA"]);
        assert_eq!(bins, &[3, MISSING_BIN, 1, 2, 3, MISSING_BIN]);
        assert_eq!(column.raw_value(0), 3.0);
        assert!(column.raw_value(1).is_nan());
        assert_eq!(column.size_bytes(), 12);
        let gathered = column.gather(&[4, 1, 2]);
        assert_eq!(
            (0..3).map(|r| gathered.raw_value(r)).map(|v| v.to_bits()).collect::<Vec<_>>(),
            [3.0f64.to_bits(), f64::NAN.to_bits(), 1.0f64.to_bits()]
        );
    }

    /// A column may hold 65,534 categories (each bin and the missing one fit
    /// two bytes); past that the error names the column and counts them all.
    #[test]
    fn categories_fit_two_byte_bins_or_are_refused() {
        let names =
            |n: usize| -> ArrayRef { Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("c{i:06}")))) };
        let most = u16::MAX as usize - 1;
        let column = FeatureColumn::from_arrays("city", &[names(most), names(3)]).unwrap();
        let FeatureColumn::Categorical { bins, categories } = &column else { panic!("strings are categorical") };
        assert_eq!(categories.len(), most);
        assert_eq!((bins[0], bins[most - 1], bins[most + 2]), (1, most as u16, 3));
        let err = FeatureColumn::from_arrays("city", &[names(70_000), names(10)]).unwrap_err();
        assert!(
            matches!(&err, QuantizeError::TooManyCategories { column, count: 70_000, max } if column == "city" && *max == most),
            "{err:?}"
        );
    }

    /// A `Float32` column is held at four bytes a value, as it arrived.
    #[test]
    fn float32_columns_stay_four_bytes_a_value() {
        let values: ArrayRef = Arc::new(Float32Array::from(vec![Some(0.1), None, Some(-3.5)]));
        let column = FeatureColumn::from_arrays("x", &[values]).unwrap();
        assert_eq!(column.size_bytes(), 12);
        assert_eq!(column.raw_value(0), f64::from(0.1f32));
        assert!(column.raw_value(1).is_nan());
    }

    /// Floats read in place give the values a cast to `Float64` gives, nulls
    /// as NaN, with and without nulls; other numeric types are cast.
    #[test]
    fn floats_read_in_place_are_the_cast_values() {
        use arrow::array::{Float64Array, Int32Array};
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Float32Array::from(vec![Some(0.1), None, Some(-3.5), Some(f32::INFINITY), Some(f32::NAN)])),
            Arc::new(Float32Array::from(vec![0.1, -0.0, 16_777_217.0, f32::MIN_POSITIVE])),
            Arc::new(Float64Array::from(vec![Some(0.1), None, Some(-1e300)])),
            Arc::new(Float64Array::from(vec![0.1, -0.0])),
            Arc::new(Int32Array::from(vec![Some(7), None, Some(i32::MIN)])),
        ];
        for array in arrays {
            let mut got = vec![42.0];
            append_f64("x", &array, &mut got).unwrap();
            let cast = to_f64("x", &array).unwrap();
            let expected: Vec<f64> = std::iter::once(42.0)
                .chain(cast.as_primitive::<Float64Type>().iter().map(|v| v.unwrap_or(f64::NAN)))
                .collect();
            let bits =
                |v: &[f64]| v.iter().map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() }).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&expected), "{}", array.data_type());
        }
    }
}
