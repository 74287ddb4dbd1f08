//! A numeric feature's training values, held at the narrowest float width
//! that keeps every one of them exact: most columns (`Float32`, small
//! integers, booleans) take half the memory of `f64`, and every reader sees
//! the same `f64` values either way, so the bins and the model do not change.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};

use crate::feature_column::{extend_f64, to_f64};
use crate::QuantizeError;

/// A float type training values are held in; every value widens to `f64` exactly.
pub trait Number: Copy + Send + Sync + Into<f64> + 'static {}

impl Number for f32 {}
impl Number for f64 {}

/// A numeric column's values (NaN for missing), as `f32` when each one is
/// exactly an `f32`, else as `f64`.
#[derive(Clone, Debug, PartialEq)]
pub enum NumericValues {
    /// Every value is exactly an `f32`.
    F32(Vec<f32>),
    /// Some value needs `f64`.
    F64(Vec<f64>),
}

/// Evaluates `$body` with `$s` bound to the values as a slice of their own
/// float type, so generic code over [`Number`] runs on either width.
#[macro_export]
macro_rules! with_numbers {
    ($values:expr, |$s:ident| $body:expr) => {
        match $values {
            $crate::NumericValues::F32(v) => {
                let $s: &[f32] = v;
                $body
            }
            $crate::NumericValues::F64(v) => {
                let $s: &[f64] = v;
                $body
            }
        }
    };
}

impl NumericValues {
    /// Number of values.
    pub fn len(&self) -> usize {
        with_numbers!(self, |s| s.len())
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`, widened to `f64`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            NumericValues::F32(v) => f64::from(v[i]),
            NumericValues::F64(v) => v[i],
        }
    }

    /// Every value, widened to `f64`.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            NumericValues::F32(v) => v.iter().map(|&v| f64::from(v)).collect(),
            NumericValues::F64(v) => v.clone(),
        }
    }

    /// The values at `rows` (positions), in that order, at the same width.
    pub fn gather(&self, rows: &[u32]) -> NumericValues {
        match self {
            NumericValues::F32(v) => NumericValues::F32(rows.iter().map(|&r| v[r as usize]).collect()),
            NumericValues::F64(v) => NumericValues::F64(rows.iter().map(|&r| v[r as usize]).collect()),
        }
    }

    /// Bytes held by the values.
    pub fn size_bytes(&self) -> usize {
        match self {
            NumericValues::F32(v) => v.len() * 4,
            NumericValues::F64(v) => v.len() * 8,
        }
    }

    /// Appends a numeric or boolean array, nulls as NaN, widening the held
    /// values to `f64` the first time one is not exactly an `f32`.
    pub(crate) fn append(&mut self, name: &str, array: &ArrayRef) -> Result<(), QuantizeError> {
        if *array.data_type() == DataType::Float32 {
            let floats = array.as_primitive::<Float32Type>();
            let read = |i: usize| if floats.is_null(i) { f32::NAN } else { floats.value(i) };
            match self {
                NumericValues::F32(out) if floats.null_count() == 0 => out.extend_from_slice(floats.values()),
                NumericValues::F32(out) => out.extend((0..floats.len()).map(read)),
                NumericValues::F64(out) => out.extend((0..floats.len()).map(|i| f64::from(read(i)))),
            }
            return Ok(());
        }
        let floats = to_f64(name, array)?;
        let floats = floats.as_primitive::<Float64Type>();
        let read = |i: usize| if floats.is_null(i) { f64::NAN } else { floats.value(i) };
        let exact = |v: f64| v.is_nan() || f64::from(v as f32) == v;
        if let NumericValues::F32(out) = self {
            if (0..floats.len()).all(|i| exact(read(i))) {
                out.extend((0..floats.len()).map(|i| read(i) as f32));
                return Ok(());
            }
            *self = NumericValues::F64(out.iter().map(|&v| f64::from(v)).collect());
        }
        let NumericValues::F64(out) = self else { unreachable!("widened above") };
        extend_f64(floats, out);
        Ok(())
    }
}

impl Default for NumericValues {
    /// No values, at the narrow width until one needs more.
    fn default() -> Self {
        NumericValues::F32(Vec::new())
    }
}

impl From<Vec<f64>> for NumericValues {
    /// `f64` values, held as they are.
    fn from(values: Vec<f64>) -> Self {
        NumericValues::F64(values)
    }
}

impl From<Vec<f32>> for NumericValues {
    fn from(values: Vec<f32>) -> Self {
        NumericValues::F32(values)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float32Array, Float64Array, Int64Array};

    use super::*;

    fn read(arrays: &[ArrayRef]) -> NumericValues {
        let mut values = NumericValues::default();
        for a in arrays {
            values.append("x", a).unwrap();
        }
        values
    }

    #[test]
    fn exact_f32_values_stay_narrow() {
        let a: ArrayRef = Arc::new(Float32Array::from(vec![Some(1.5), None, Some(-0.0)]));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![Some(16_777_216), None]));
        let values = read(&[a, b]);
        assert!(matches!(values, NumericValues::F32(_)));
        let wide = values.to_f64();
        assert_eq!(wide[0], 1.5);
        assert!(wide[1].is_nan() && wide[4].is_nan());
        assert!(wide[2] == 0.0 && wide[2].is_sign_negative());
        assert_eq!(wide[3], 16_777_216.0);
    }

    #[test]
    fn a_value_beyond_f32_widens_the_column_without_changing_any() {
        let a: ArrayRef = Arc::new(Float32Array::from(vec![Some(0.1f32), None]));
        let b: ArrayRef = Arc::new(Float64Array::from(vec![Some(0.1f64), Some(2.0)]));
        let c: ArrayRef = Arc::new(Int64Array::from(vec![16_777_217]));
        let c2: ArrayRef = Arc::new(Float32Array::from(vec![Some(0.25f32), None]));
        let values = read(&[a, b, c, c2]);
        let NumericValues::F64(v) = &values else { panic!("0.1 is not an f32: the column widens") };
        assert_eq!(v[0], f64::from(0.1f32));
        assert!(v[1].is_nan() && v[6].is_nan());
        assert_eq!(&v[2..6], &[0.1, 2.0, 16_777_217.0, 0.25]);
        assert_eq!(values.gather(&[3, 0]).to_f64(), vec![2.0, f64::from(0.1f32)]);
    }
}
