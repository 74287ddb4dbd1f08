//! A feature as the model records it: name, type and bins.

use arbor_quantize::{BinMapper, FeatureType};
use serde::{Deserialize, Serialize};

/// A feature as the model knows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    /// The column's name.
    pub name: String,
    /// Its Arrow type in training, as text.
    pub data_type: String,
    /// How it is split.
    pub kind: FeatureType,
    /// Its bins (numeric edges or categories).
    pub mapper: BinMapper,
}
