//! Training: random forests ([`forest`]) and gradient boosting
//! ([`boosting`]), both growing trees with the grower ([`grower`]) on the
//! binned data; boosting's losses ([`loss`]), a forest's out-of-bag
//! evaluation ([`out_of_bag`]), the feature importances both compute
//! ([`importance`]) and the progress they report ([`progress`]).

pub(crate) mod boosting;
pub(crate) mod forest;
pub(crate) mod grower;
pub(crate) mod importance;
pub(crate) mod loss;
pub(crate) mod out_of_bag;
pub(crate) mod progress;

use crate::data::dataset::TrainingData;
use crate::model::Model;
use crate::params::types::{Algorithm, TrainParams};
use crate::train::boosting::{train_boosting, train_boosting_owned};
use crate::train::forest::{train_forest, train_forest_owned};
use crate::train::progress::Progress;
use crate::Result;

/// Trains the model `params` ask for; `on_progress` hears of each tree or round.
pub fn train(data: &TrainingData, params: &TrainParams, on_progress: &(dyn Fn(&Progress) + Sync)) -> Result<Model> {
    match params.algorithm.0 {
        Algorithm::RandomForest => train_forest(data, params, on_progress),
        Algorithm::GradientBoosting => train_boosting(data, params, on_progress),
    }
}

/// [`train`] for a caller done with the data, which it may free as it goes
/// (the raw feature columns, once binned, unless out-of-bag results need
/// them). The same model.
pub fn train_owned(
    data: TrainingData,
    params: &TrainParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Model> {
    match params.algorithm.0 {
        Algorithm::RandomForest => train_forest_owned(data, params, on_progress).map(|(model, _)| model),
        Algorithm::GradientBoosting => train_boosting_owned(data, params, on_progress),
    }
}
