//! Explaining predictions: each feature's SHAP contribution to each row's
//! raw score, by exact TreeSHAP ([`tree_shap`]), or from per-leaf tables
//! built once for many rows ([`leaf_patterns`]), over every tree ([`explainer`]).
//!
//! A row's contributions come in blocks, one per output explained: a
//! regression's value, a boosted model's raw score (the margin before its
//! link: one for logistic, one per class for softmax), a forest
//! classifier's probability of each class (of the second class alone when
//! there are two). Each block holds one contribution per feature, in
//! feature order, then the bias, the output's expected value over the
//! training data; a block sums to the output's raw score. Missing values
//! take each split's default branch, as in prediction.

pub(crate) mod explainer;
pub(crate) mod leaf_patterns;
pub(crate) mod tree_shap;

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, ListArray, RecordBatch};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field};

pub use explainer::Explainer;

use crate::{ArborError, Model, Result, Task};

/// Contributions of a set of rows, row-major: per row, [`Model::contribution_outputs`]
/// blocks of one value per feature then the bias.
#[derive(Clone, Debug, PartialEq)]
pub struct Contributions {
    /// Values per row.
    width: usize,
    values: Vec<f64>,
}

impl Contributions {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.values.len() / self.width.max(1)
    }

    /// Values per row: (features + 1) times the outputs explained.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Every value, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Row `row`'s values.
    pub fn row(&self, row: usize) -> &[f64] {
        &self.values[row * self.width..(row + 1) * self.width]
    }
}

impl Model {
    /// Blocks of contributions per row: 1 for regression, binary
    /// classification and two-class forests, the number of classes otherwise.
    pub fn contribution_outputs(&self) -> usize {
        match (self.boosting(), self.task) {
            (Some(b), _) => b.outputs,
            (None, Task::Regression) => 1,
            (None, Task::Classification) => match self.value_len() {
                2 => 1,
                classes => classes,
            },
        }
    }

    /// The names of a row's contributions, in order, as `arbor predict
    /// --contributions` writes them: `contrib_<feature>` then
    /// `contrib_bias`, or with more than one output `contrib_<class>_<feature>`
    /// and `contrib_<class>_bias` per class.
    pub fn contribution_names(&self) -> Vec<String> {
        let outputs = self.contribution_outputs();
        let classes = self.class_names();
        let mut names = Vec::with_capacity((self.features.len() + 1) * outputs);
        for k in 0..outputs {
            let prefix = if outputs > 1 {
                format!("contrib_{}_", classes.get(k).cloned().unwrap_or_else(|| k.to_string()))
            } else {
                "contrib_".to_owned()
            };
            names.extend(self.features.iter().map(|f| format!("{prefix}{}", f.name)));
            names.push(format!("{prefix}bias"));
        }
        names
    }

    /// The model laid out for explaining; an error for a model without node
    /// covers (written before format 4).
    pub fn explainer(&self) -> Result<Explainer> {
        Explainer::new(self)
    }

    /// Explains every row of `batch` (features found by name).
    pub fn contributions(&self, batch: &RecordBatch) -> Result<Contributions> {
        self.contributions_arrays(&self.feature_arrays(batch)?)
    }

    /// Explains rows given one array per model feature, in model order, all of one length.
    pub fn contributions_arrays(&self, arrays: &[ArrayRef]) -> Result<Contributions> {
        let explainer = self.explainer()?;
        let (columns, n_rows) = self.raw_columns(arrays)?;
        let width = (self.features.len() + 1) * explainer.outputs();
        Ok(Contributions { width, values: explainer.explain_columns(&columns, n_rows) })
    }

    /// Explains raw feature values (column-major, NaN for missing;
    /// categories as their 1-based bin): one column per model feature, in
    /// model order, each of `n_rows` values.
    pub fn contributions_columns(&self, columns: &[Vec<f64>], n_rows: usize) -> Result<Contributions> {
        let explainer = self.explainer()?;
        if columns.len() != self.features.len() || columns.iter().any(|c| c.len() != n_rows) {
            return Err(ArborError::Data(format!(
                "the model has {} features: give one column of {n_rows} values for each",
                self.features.len()
            )));
        }
        let width = (self.features.len() + 1) * explainer.outputs();
        Ok(Contributions { width, values: explainer.explain_columns(columns, n_rows) })
    }

    /// The contributions as one list per row (`predict_forest_contributions`);
    /// the values move into the array, uncopied.
    pub fn contributions_list(&self, contributions: Contributions) -> Result<ListArray> {
        let width = contributions.width.max(1);
        let n_rows = contributions.values.len() / width;
        let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(width, n_rows));
        let values = Arc::new(Float64Array::from(contributions.values)) as ArrayRef;
        Ok(ListArray::try_new(Arc::new(Field::new_list_field(DataType::Float64, true)), offsets, values, None)?)
    }

    /// One Float64 column per contribution, named by [`Model::contribution_names`].
    pub fn contribution_columns(&self, contributions: &Contributions) -> Vec<(String, ArrayRef)> {
        let width = contributions.width;
        self.contribution_names()
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let column = Float64Array::from_iter_values(contributions.values.chunks_exact(width).map(|row| row[i]));
                (name, Arc::new(column) as ArrayRef)
            })
            .collect()
    }
}

/// The Arrow type of `predict_forest_contributions`: a list of Float64.
pub fn contributions_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

#[cfg(test)]
mod tests;
