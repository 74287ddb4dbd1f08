//! Other tools' models and views: XGBoost JSON and LightGBM text imported
//! through the model builder ([`xgboost_json`], [`lightgbm_text`]) and
//! written back out ([`export`], from the trees [`exported_trees`] lays
//! out, by [`xgboost_json_export`] and [`lightgbm_text_export`]); ONNX
//! tree ensembles ([`onnx_export`], encoded by [`protobuf`]); and Graphviz
//! export of a tree ([`dot`]).

pub(crate) mod dot;
pub(crate) mod export;
pub(crate) mod exported_trees;
pub(crate) mod lightgbm_text;
pub(crate) mod lightgbm_text_export;
pub(crate) mod onnx_export;
pub(crate) mod protobuf;
pub(crate) mod xgboost_json;
pub(crate) mod xgboost_json_export;
