//! The model column: what `train_forest` returns and every other function takes.
//!
//! A model value is a struct of two fields: `model`, the model's bytes
//! (`BinaryView`, in arbor's model format), and `prediction`, a slot that is
//! always NULL and whose *type* is what `predict_forest` returns (the label's
//! type for classification, Float64 for regression). Field metadata is dropped
//! on many of a value's paths (a scalar subquery, Parquet read with
//! DataFusion's defaults, the FFI, a plan sent to another process); a column's
//! type never is, so the type carries what prediction needs.
//!
//! Bare binary columns (models written by `arbor train` and loaded as bytes,
//! or model columns of arbor versions before the struct) are read too.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryViewArray, ByteView, StructArray};
use arrow::buffer::{Buffer, NullBuffer};
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::Result;

/// The name of the model column's bytes field.
pub const MODEL_FIELD: &str = "model";

/// The name of the model column's typed, always-NULL prediction slot.
pub const PREDICTION_FIELD: &str = "prediction";

/// Field metadata key of model columns written by arbor before the typed
/// struct: the Arrow type `predict_forest` returns, as text. Still read.
pub const PREDICTION_TYPE_KEY: &str = "arbor.prediction_type";

/// The type of a model column whose models predict `prediction`.
pub fn model_type(prediction: DataType) -> DataType {
    DataType::Struct(model_fields(prediction))
}

fn model_fields(prediction: DataType) -> Fields {
    Fields::from(vec![
        Field::new(MODEL_FIELD, DataType::BinaryView, true),
        Field::new(PREDICTION_FIELD, prediction, true),
    ])
}

/// What the type of a model argument says about its models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A typed model column: its models predict this type.
    Typed(DataType),
    /// Bare bytes (Binary, LargeBinary or BinaryView): the type is known only
    /// from a literal's bytes or legacy field metadata.
    Bytes,
    /// An untyped NULL.
    Null,
}

impl ModelKind {
    /// The kind of model a column of `data_type` holds, or `None` if it is not a model column.
    pub fn of(data_type: &DataType) -> Option<ModelKind> {
        match data_type {
            DataType::Struct(fields)
                if fields.len() == 2
                    && fields[0].name() == MODEL_FIELD
                    && is_binary(fields[0].data_type())
                    && fields[1].name() == PREDICTION_FIELD =>
            {
                Some(ModelKind::Typed(fields[1].data_type().clone()))
            }
            t if is_binary(t) => Some(ModelKind::Bytes),
            DataType::Null => Some(ModelKind::Null),
            _ => None,
        }
    }

    /// [`ModelKind::of`], or a planning error naming `function` and the type.
    pub fn expect(function: &str, data_type: &DataType) -> Result<ModelKind> {
        match ModelKind::of(data_type) {
            Some(kind) => Ok(kind),
            None => plan_err!(
                "{function}: the first argument must be a model (as train_forest returns, or its bytes as Binary), \
                 got {data_type}"
            ),
        }
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView)
}

/// One model value of a column typed for `prediction`.
pub fn model_scalar(bytes: Vec<u8>, prediction: &DataType) -> Result<ScalarValue> {
    let fields = model_fields(prediction.clone());
    let columns: Vec<ArrayRef> =
        vec![Arc::new(BinaryViewArray::from(vec![bytes.as_slice()])), arrow::array::new_null_array(prediction, 1)];
    Ok(ScalarValue::Struct(Arc::new(StructArray::try_new(fields, columns, None)?)))
}

/// A NULL model of a column typed for `prediction`: what `train_forest`
/// gives a group it has no row to train on (`on_group_error=null`).
pub fn null_model_scalar(prediction: &DataType) -> Result<ScalarValue> {
    ScalarValue::try_from(model_type(prediction.clone()))
}

/// The models of a model column (typed or bare bytes), row by row.
#[derive(Clone, Copy)]
pub struct ModelBytes<'a> {
    /// The binary array of the bytes.
    bytes: &'a dyn Array,
    /// The struct's own nulls, for a typed column.
    nulls: Option<&'a NullBuffer>,
}

impl<'a> ModelBytes<'a> {
    /// The models of `array`, or an execution error naming `function`.
    pub fn new(function: &str, array: &'a dyn Array) -> Result<ModelBytes<'a>> {
        match ModelKind::of(array.data_type()) {
            Some(ModelKind::Typed(_)) => {
                let s = array.as_struct();
                Ok(ModelBytes { bytes: s.column(0).as_ref(), nulls: s.nulls() })
            }
            Some(ModelKind::Bytes | ModelKind::Null) => Ok(ModelBytes { bytes: array, nulls: None }),
            None => exec_err!("{function}: the model must be a model column or Binary, got {}", array.data_type()),
        }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Whether row `row` holds no model.
    pub fn is_null(&self, row: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(row)) || self.bytes.is_null(row)
    }

    /// Row `row`'s bytes, `None` for a null.
    pub fn get(&self, row: usize) -> Option<&'a [u8]> {
        if self.is_null(row) {
            return None;
        }
        match self.bytes.data_type() {
            DataType::Binary => Some(self.bytes.as_binary::<i32>().value(row)),
            DataType::LargeBinary => Some(self.bytes.as_binary::<i64>().value(row)),
            DataType::BinaryView => Some(self.bytes.as_binary_view().value(row)),
            _ => None,
        }
    }

    /// Row `row`'s bytes as a shared buffer (no copy, except a value short
    /// enough to sit inline in its view); `None` for a null.
    ///
    /// Holding the buffer keeps the memory alive and unchanged, which is what
    /// lets the model cache recognise the same bytes by their address.
    pub fn buffer(&self, row: usize) -> Option<Buffer> {
        if self.is_null(row) {
            return None;
        }
        match self.bytes.data_type() {
            DataType::Binary => {
                let a = self.bytes.as_binary::<i32>();
                let (start, end) = (a.value_offsets()[row] as usize, a.value_offsets()[row + 1] as usize);
                Some(a.values().slice_with_length(start, end - start))
            }
            DataType::LargeBinary => {
                let a = self.bytes.as_binary::<i64>();
                let (start, end) = (a.value_offsets()[row] as usize, a.value_offsets()[row + 1] as usize);
                Some(a.values().slice_with_length(start, end - start))
            }
            DataType::BinaryView => {
                let a = self.bytes.as_binary_view();
                let view = ByteView::from(a.views()[row]);
                if view.length as usize <= arrow::array::MAX_INLINE_VIEW_LEN as usize {
                    return Some(Buffer::from(a.value(row)));
                }
                let data = &a.data_buffers()[view.buffer_index as usize];
                Some(data.slice_with_length(view.offset as usize, view.length as usize))
            }
            _ => None,
        }
    }
}

/// Row `row`'s model bytes in a model column (typed or bare bytes); `None`
/// for a null or a column that holds no models.
pub fn model_bytes(array: &dyn Array, row: usize) -> Option<&[u8]> {
    ModelBytes::new("", array).ok()?.get(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::BinaryArray;

    #[test]
    fn a_model_scalar_has_the_model_type() {
        let value = model_scalar(b"some model bytes".to_vec(), &DataType::Utf8).unwrap();
        assert_eq!(value.data_type(), model_type(DataType::Utf8));
        assert_eq!(ModelKind::of(&value.data_type()), Some(ModelKind::Typed(DataType::Utf8)));
        let array = value.to_array().unwrap();
        assert_eq!(model_bytes(&array, 0), Some(&b"some model bytes"[..]));
        let models = ModelBytes::new("f", &array).unwrap();
        assert_eq!(models.buffer(0).unwrap().as_slice(), b"some model bytes");
    }

    #[test]
    fn a_null_model_scalar_is_a_null_of_the_model_type() {
        let value = null_model_scalar(&DataType::Int32).unwrap();
        assert_eq!(value.data_type(), model_type(DataType::Int32));
        assert!(value.is_null());
        let array = value.to_array().unwrap();
        assert!(ModelBytes::new("f", &array).unwrap().is_null(0));
        assert_eq!(model_bytes(&array, 0), None);
    }

    #[test]
    fn bytes_of_every_binary_type_share_their_buffer() {
        let long = vec![7u8; 100];
        let binary = BinaryArray::from(vec![Some(&b"short"[..]), None, Some(long.as_slice())]);
        let view = BinaryViewArray::from(vec![Some(&b"short"[..]), None, Some(long.as_slice())]);
        for array in [&binary as &dyn Array, &view] {
            let models = ModelBytes::new("f", array).unwrap();
            assert_eq!(models.buffer(0).unwrap().as_slice(), b"short");
            assert!(models.buffer(1).is_none());
            let first = models.buffer(2).unwrap();
            assert_eq!(first.as_slice(), long.as_slice());
            assert_eq!(first.as_ptr(), models.buffer(2).unwrap().as_ptr(), "no copy of a long value");
        }
    }

    #[test]
    fn other_types_are_not_models() {
        assert_eq!(ModelKind::of(&DataType::Utf8), None);
        let other = DataType::Struct(Fields::from(vec![Field::new("a", DataType::Binary, true)]));
        assert_eq!(ModelKind::of(&other), None);
        assert!(ModelKind::expect("predict_forest", &DataType::Int64).unwrap_err().to_string().contains("Int64"));
    }
}
