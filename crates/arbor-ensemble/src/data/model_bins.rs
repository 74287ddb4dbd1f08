//! Rows binned on a model's own bins, for continued training (`init_model`):
//! the new rounds' trees then split the bins the model's trees split, its
//! categories keep their codes and its classes their indices, so the model's
//! trees walk the new rows exactly as they walked the rows they grew on.
//!
//! A category the model has not seen is binned as missing, as prediction
//! reads it; a class it has not seen, a feature it lacks or one read as
//! another kind is an error naming the column.

use std::borrow::Cow;

use arbor_quantize::{FeatureColumn, QuantizeParams};

use crate::data::binned_data::{BatchSource, BinnedData, Bins, PerRow, Piece, Pieces};
use crate::data::dataset::{ColumnRoles, TrainingData};
use crate::model::Model;
use crate::train::continued::continuable;
use crate::{ArborError, Result};

impl BinnedData {
    /// Reads `source` once, binning each batch on `model`'s bins as it
    /// arrives: the label and weight of `roles`, and the model's features
    /// (`roles` may name them, in any order, but no others).
    pub(crate) fn read_for_model(
        source: &(impl BatchSource + ?Sized),
        roles: &ColumnRoles,
        model: &Model,
        quantize: QuantizeParams,
    ) -> Result<BinnedData> {
        continuable(model)?;
        let roles = model_roles(roles, model)?;
        let schema = source.schema();
        let pieces = Pieces { schema: &schema, roles: &roles, task: Some(model.task) };
        let mut bins = Bins::new(&model.features, &model.label, model.task, 0, PerRow::of(&roles))?;
        let (mut skipped, mut zero_weights) = (0, false);
        for batch in source.batches()? {
            match pieces.read(&batch?)? {
                Piece::Rows(data) => {
                    check_against(&data, model)?;
                    skipped += data.skipped_null_labels;
                    bins.add(&model.features, &model.label, *data)?;
                }
                Piece::NullLabels(rows) => skipped += rows,
                Piece::ZeroWeights => zero_weights = true,
                Piece::Empty => {}
            }
        }
        if bins.rows() == 0 {
            return Err(pieces.no_rows(source, zero_weights));
        }
        Ok(bins.finish(model.task, model.label.clone(), model.features.clone(), skipped, quantize, None))
    }

    /// Bins training data already read on `model`'s bins; its features
    /// must be the model's (in any order).
    pub(crate) fn from_training_for_model(
        data: Cow<'_, TrainingData>,
        model: &Model,
        quantize: QuantizeParams,
    ) -> Result<BinnedData> {
        continuable(model)?;
        let mut data = data.into_owned();
        let order = model
            .features
            .iter()
            .map(|feature| {
                data.features.iter().position(|spec| spec.name == feature.name).ok_or_else(|| {
                    ArborError::Data(format!(
                        "init_model: the model's feature '{}' is not among the training data's features ({})",
                        feature.name,
                        names(data.features.iter().map(|s| s.name.as_str()))
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        if let Some(extra) = data.features.iter().find(|s| model.features.iter().all(|f| f.name != s.name)) {
            return Err(not_a_feature(&extra.name, model));
        }
        let mut columns: Vec<Option<FeatureColumn>> = std::mem::take(&mut data.columns).into_iter().map(Some).collect();
        data.columns = order.iter().map(|&i| columns[i].take().expect("positions are distinct")).collect();
        data.features = order.iter().map(|&i| data.features[i].clone()).collect();
        check_against(&data, model)?;
        let input_row = std::mem::take(&mut data.input_row);
        let skipped = data.skipped_null_labels;
        let per_row = PerRow { weighted: data.weights.is_some(), grouped: data.groups.is_some() };
        let mut bins = Bins::new(&model.features, &model.label, model.task, input_row.len(), per_row)?;
        bins.add(&model.features, &model.label, data)?;
        Ok(bins.finish(model.task, model.label.clone(), model.features.clone(), skipped, quantize, Some(input_row)))
    }
}

/// `roles` with the model's features: every one of the model's, in its
/// order, when `roles` names none; else the ones named, which must be the
/// model's.
pub(crate) fn model_roles(roles: &ColumnRoles, model: &Model) -> Result<ColumnRoles> {
    if let Some(named) = &roles.features {
        if let Some(extra) = named.iter().find(|n| model.features.iter().all(|f| f.name != **n)) {
            return Err(not_a_feature(extra, model));
        }
        if let Some(missing) = model.features.iter().find(|f| !named.contains(&f.name)) {
            return Err(ArborError::Data(format!(
                "init_model: the model's feature '{}' is not among the features given ({})",
                missing.name,
                names(named.iter().map(String::as_str))
            )));
        }
    }
    let features = model.features.iter().map(|f| f.name.clone()).collect();
    Ok(ColumnRoles { features: Some(features), ..roles.clone() })
}

/// An error unless `data` reads each feature as the model does (numbers
/// as numbers, categories as categories) and has only the model's classes.
fn check_against(data: &TrainingData, model: &Model) -> Result<()> {
    if data.task != model.task {
        return Err(ArborError::InvalidOption {
            key: "task".into(),
            message: format!(
                "{} asked, but init_model is a {} model; continued training keeps the model's task",
                data.task.name(),
                model.task.name()
            ),
        });
    }
    for ((spec, column), feature) in data.features.iter().zip(&data.columns).zip(&model.features) {
        let here = matches!(column, FeatureColumn::Categorical { .. });
        if here != feature.mapper.is_categorical() {
            let kind = |categorical: bool| if categorical { "categorical" } else { "numeric" };
            return Err(ArborError::Data(format!(
                "init_model: column '{}' is {} ({}) here but {} ({}) in the model; \
                 continued training reads each feature as the model does",
                spec.name,
                kind(here),
                spec.data_type,
                kind(feature.mapper.is_categorical()),
                feature.data_type
            )));
        }
    }
    if let (Some(here), Some(known)) = (&data.label.classes, &model.label.classes) {
        let known = known.names();
        if let Some(class) = here.names().into_iter().find(|c| !known.contains(c)) {
            return Err(ArborError::Data(format!(
                "init_model: class '{class}' of label column '{}' is not one of the model's classes ({}); \
                 continued training keeps the model's classes",
                data.label.name,
                names(known.iter().map(String::as_str))
            )));
        }
    }
    Ok(())
}

fn not_a_feature(name: &str, model: &Model) -> ArborError {
    ArborError::Data(format!(
        "init_model: column '{name}' is not a feature of the model, whose features are {}",
        names(model.features.iter().map(|f| f.name.as_str()))
    ))
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}
