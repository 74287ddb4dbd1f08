//! Writing arbor models in the formats other tools serve: XGBoost's JSON
//! ([`super::xgboost_json_export`]), LightGBM's text
//! ([`super::lightgbm_text_export`]) and ONNX ([`super::onnx_export`]), and
//! the feature matrix those formats read ([`Model::export_columns`]).

use std::fmt;
use std::str::FromStr;

use arbor_quantize::BinMapper;
use arrow::array::RecordBatch;

use crate::model::Model;
use crate::{ArborError, Result};

/// A model format another library reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// XGBoost's JSON model (`xgboost.Booster(model_file=...)`, treelite, Triton FIL).
    XgboostJson,
    /// LightGBM's text model (`lightgbm.Booster(model_file=...)`, treelite, Triton FIL).
    LightgbmText,
    /// An ONNX model of `ai.onnx.ml` tree ensembles (onnxruntime, in any language).
    Onnx,
}

impl ExportFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [ExportFormat; 3] = [ExportFormat::XgboostJson, ExportFormat::LightgbmText, ExportFormat::Onnx];

    /// The format's name on the command line and in Python.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::XgboostJson => "xgboost-json",
            ExportFormat::LightgbmText => "lightgbm-text",
            ExportFormat::Onnx => "onnx",
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExportFormat {
    type Err = ArborError;

    fn from_str(s: &str) -> Result<ExportFormat> {
        ExportFormat::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let names = ExportFormat::ALL.map(ExportFormat::name).join(", ");
            ArborError::Data(format!("unknown export format '{s}' (known: {names})"))
        })
    }
}

/// The error of an export to `format`.
pub(crate) fn export_error(format: ExportFormat, message: impl Into<String>) -> ArborError {
    ArborError::Export { format: format.name(), message: message.into() }
}

impl Model {
    /// The model in `format`, as the file to write. It predicts what arbor
    /// predicts from the features [`Model::export_columns`] gives; what the
    /// format cannot hold is an error that names it.
    pub fn export(&self, format: ExportFormat) -> Result<Vec<u8>> {
        if let Some(class) = self.single_class() {
            return Err(export_error(
                format,
                format!(
                    "the model was trained on one class ('{class}'): exported classifiers need two classes or more"
                ),
            ));
        }
        match format {
            ExportFormat::XgboostJson => super::xgboost_json_export::write(self),
            ExportFormat::LightgbmText => super::lightgbm_text_export::write(self),
            ExportFormat::Onnx => super::onnx_export::write(self),
        }
    }

    /// The features of `batch` (found by name) as exported models read them:
    /// one column per model feature, in model order; numbers as `f64`,
    /// booleans as 0 and 1, a category as its index in the feature's
    /// category list ([`Model::categories`]); NaN for a missing value or a
    /// category training never saw.
    pub fn export_columns(&self, batch: &RecordBatch) -> Result<Vec<Vec<f64>>> {
        let (mut columns, _) = self.raw_columns(&self.feature_arrays(batch)?)?;
        for (feature, column) in self.features.iter().zip(&mut columns) {
            if matches!(feature.mapper, BinMapper::Categorical { .. }) {
                // Categories are read as their 1-based bin; their code counts from 0.
                column.iter_mut().for_each(|x| *x -= 1.0);
            }
        }
        Ok(columns)
    }

    /// The categories of feature `index` in the order of their codes in
    /// exported models, or `None` for a numeric or boolean feature.
    pub fn categories(&self, index: usize) -> Option<&[String]> {
        match &self.features.get(index)?.mapper {
            BinMapper::Categorical { categories, .. } => Some(categories),
            BinMapper::Numeric { .. } => None,
        }
    }
}

/// `x` as the shortest text that reads back as the same `f64`, with an
/// exponent when it is very large or very small (`1e-35`, not 35 zeros).
pub(crate) fn shortest(x: f64) -> String {
    if x != 0.0 && !(1e-5..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}
