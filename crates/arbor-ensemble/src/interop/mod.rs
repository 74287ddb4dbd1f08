//! Other tools' models and views: XGBoost JSON and LightGBM text imported
//! through the model builder ([`xgboost_json`], [`lightgbm_text`]), and
//! Graphviz export of a tree ([`dot`]).

pub(crate) mod dot;
pub(crate) mod lightgbm_text;
pub(crate) mod xgboost_json;
