//! Training: random forests ([`forest`]) and gradient boosting
//! ([`boosting`]), both growing trees with the grower ([`grower`]) on the
//! binned data; boosting's losses ([`loss`]), a forest's out-of-bag
//! evaluation ([`out_of_bag`]), boosting's quantized gradients
//! ([`quantized_gradients`]), the values rows walk finished trees on
//! ([`walk_values`]), the feature importances both compute
//! ([`importance`]) and the progress they report ([`progress`]); and
//! both trained level by level over many machines' rows ([`distributed`]).

pub(crate) mod boosting;
pub(crate) mod continued;
pub(crate) mod cross_validation;
pub mod distributed;
pub(crate) mod exact_histograms;
pub(crate) mod forest;
pub(crate) mod grower;
pub(crate) mod importance;
pub(crate) mod loss;
pub(crate) mod node_rows;
pub(crate) mod out_of_bag;
pub(crate) mod progress;
pub(crate) mod quantized_gradients;
pub(crate) mod ranking;
pub(crate) mod walk_values;

use std::borrow::Cow;
use std::path::Path;

use crate::data::binned_data::BinnedData;
use crate::data::label::Target;
use crate::model::Model;
use crate::params::checked::CheckedParams;
use crate::params::class_weight;
use crate::params::types::Algorithm;
use crate::train::boosting::train_boosting;
use crate::train::forest::train_forest;
use crate::train::out_of_bag::OutOfBag;
use crate::train::progress::Progress;
use crate::Result;

/// A model and what training found besides it.
#[derive(Debug)]
pub struct Trained {
    /// The model.
    pub model: Model,
    /// Random forests: the out-of-bag results, when `oob`, `oob_per_observation`
    /// or an MDA importance asked for them.
    pub out_of_bag: Option<OutOfBag>,
}

/// Trains the model `params` ask for; `on_progress` hears of each tree or
/// round. Data handed over (`Cow::Owned`) is freed as training goes; the
/// model is the same either way. The parameters were checked for the data's
/// task. With `init`, boosting continues that model (`init_model`).
///
/// Training runs on a thread of rayon's pool: its many short parallel
/// steps then start on the pool directly, instead of each handing its work
/// to the pool and sleeping until woken (a boosting round on small data
/// spent more time in those hand-overs than in its histograms).
pub(crate) fn fit(
    data: Cow<'_, BinnedData>,
    params: &CheckedParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
    spill_dir: Option<&Path>,
    init: Option<&Model>,
) -> Result<Trained> {
    rayon::scope(|_| fit_here(data, params, on_progress, spill_dir, init))
}

fn fit_here(
    data: Cow<'_, BinnedData>,
    params: &CheckedParams,
    on_progress: &(dyn Fn(&Progress) + Sync),
    spill_dir: Option<&Path>,
    init: Option<&Model>,
) -> Result<Trained> {
    let data = weigh_classes(data, params)?;
    if data.groups.is_some() && params.algorithm.0 == Algorithm::RandomForest {
        return Err(crate::ArborError::InvalidOption {
            key: "group".into(),
            message: "a query column is read by gradient boosting's loss=lambdarank; a random forest does not rank"
                .into(),
        });
    }
    Ok(match params.algorithm.0 {
        Algorithm::RandomForest if init.is_some() => {
            return Err(crate::ArborError::InvalidOption {
                key: "init_model".into(),
                message: "continues gradient boosting; set algorithm=gradient-boosting".into(),
            })
        }
        Algorithm::RandomForest => {
            let (model, out_of_bag) = train_forest(data, params, on_progress, spill_dir)?;
            Trained { model, out_of_bag }
        }
        Algorithm::GradientBoosting => {
            Trained { model: train_boosting(data, params, on_progress, init)?, out_of_bag: None }
        }
    })
}

/// Multiplies each row's sample weight by its class's factor
/// (`class_weight`, `scale_pos_weight`; see [`class_weight::factors`]), as
/// if the rows had carried those weights: the same trees, bit for bit. Data
/// lent (`Cow::Borrowed`) is copied first; without class weights it is
/// passed on untouched.
fn weigh_classes<'a>(mut data: Cow<'a, BinnedData>, params: &CheckedParams) -> Result<Cow<'a, BinnedData>> {
    let names = data.label.classes.as_ref().map(|c| c.names());
    let labels = match &data.target {
        Target::Classes(labels) => labels.as_slice(),
        Target::Values(_) => &[],
    };
    let Some(factors) = class_weight::factors(params, names.as_deref(), labels)? else {
        return Ok(data);
    };
    let own = |r: usize| data.weights.as_ref().map_or(1.0, |w| w[r]);
    let weights: Vec<f64> = labels.iter().enumerate().map(|(r, &label)| own(r) * factors[label as usize]).collect();
    data.to_mut().weights = Some(weights);
    Ok(data)
}
