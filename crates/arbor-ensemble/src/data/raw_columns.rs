//! The raw feature columns while a model trains: the caller's, or owned and
//! freed as soon as nothing needs them past the bins (a tenth or more of
//! training's peak memory).

use arbor_quantize::FeatureColumn;

/// The raw feature columns during training.
pub(crate) enum RawColumns<'a> {
    /// The caller's: kept whatever happens.
    Borrowed(&'a [FeatureColumn]),
    /// Training's own, until [`RawColumns::free`].
    Owned(Vec<FeatureColumn>),
    /// Freed: training reads the bins only.
    Freed,
}

impl RawColumns<'_> {
    /// The columns (none once freed).
    pub fn get(&self) -> &[FeatureColumn] {
        match self {
            RawColumns::Borrowed(columns) => columns,
            RawColumns::Owned(columns) => columns,
            RawColumns::Freed => &[],
        }
    }

    /// True while training owns them.
    pub fn owned(&self) -> bool {
        matches!(self, RawColumns::Owned(_))
    }

    /// Frees owned columns; borrowed ones stay.
    pub fn free(&mut self) {
        if self.owned() {
            *self = RawColumns::Freed;
        }
    }
}
