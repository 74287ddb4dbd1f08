//! A node's split search over features drawn at random from its stream (a
//! forest's `max_features`): one loop for the single-node grower and the
//! level grower. The loop owns the rules (the draw order, which features
//! count, the constraints and category charge of each, the tie-break); each
//! grower brings only its source of a feature's histogram: built from the
//! node's rows or records, summed in one pass, or merged from pieces.

use arbor_kernels::{SplitCandidate, SplitConstraints, UNCHARGED_DEGREES};
use arbor_quantize::BinMapper;
use rand::Rng;

use super::{draw_feature, offer, GrowSettings};

/// What a histogram source found for one drawn feature.
pub(crate) enum Searched {
    /// The feature is constant in the node: it does not count towards `max_features`.
    Constant,
    /// The feature was searched (it counts), with its best split, if it has
    /// one that could beat the floor it was given.
    Tried(Option<SplitCandidate>),
}

/// Where a search over drawn features ended.
pub(crate) enum DrawnSplit {
    /// The best split of the features searched (the highest merit; on a tie,
    /// the feature drawn first), or `None` when no feature has one.
    Found(Option<(usize, SplitCandidate)>),
    /// The source holds fewer features than the search needed before
    /// `max_features` varied: it needs this many drawn, counted from the first.
    NeedsFeatures(u32),
}

/// One node's search over drawn features: how many to search and what the
/// source already holds.
pub(crate) struct DrawnSearch<'s> {
    /// The tree's settings: the constraints each split respects.
    pub(crate) settings: &'s GrowSettings,
    /// Features to search that vary in the node (`max_features`).
    pub(crate) m: usize,
    /// Features the source drew already, in `perm[..drawn]` (in the
    /// order the stream draws them): the search does not draw them again.
    pub(crate) drawn: usize,
    /// Features the source can search, `perm[..available]`; past them the
    /// search ends with [`DrawnSplit::NeedsFeatures`].
    pub(crate) available: usize,
    /// Whether subset splits of many categories are charged for their
    /// degrees of freedom ([`GrowSettings::charges_categories`]).
    pub(crate) chargeable: bool,
}

impl DrawnSearch<'_> {
    /// Draws features from `rng` into `perm` one at a time and hands each
    /// to `search` with its constraints and the merit a split must beat,
    /// until `m` of them vary. `mapper` gives a feature's bins; `constrain`,
    /// for a node under monotone or interaction constraints, turns the
    /// node's constraints into a feature's (`None`: the feature may not
    /// split here and does not count); `noise` gives
    /// the node's gain of noise per degree of freedom, asked only when a
    /// charged split could win.
    #[inline]
    pub(crate) fn run<'m, R: Rng>(
        &self,
        perm: &mut [usize],
        rng: &mut R,
        mapper: impl Fn(usize) -> &'m BinMapper,
        constrain: Option<impl Fn(usize, &SplitConstraints) -> Option<SplitConstraints>>,
        mut search: impl FnMut(usize, usize, &SplitConstraints, f64, &mut R) -> Searched,
        mut noise: impl FnMut() -> f64,
    ) -> DrawnSplit {
        let per_degree = SplitConstraints { category_charge: 1.0, ..self.settings.constraints };
        let (mut best, mut unit, mut visited) = (None::<(usize, SplitCandidate)>, None, 0);
        for i in 0..perm.len() {
            if visited >= self.m {
                break;
            }
            if i >= self.available {
                return DrawnSplit::NeedsFeatures((i + self.m - visited) as u32);
            }
            if i >= self.drawn {
                draw_feature(perm, i, rng);
            }
            let f = perm[i];
            let mapper = mapper(f);
            let charged = self.chargeable && mapper.is_categorical() && mapper.n_bins() > UNCHARGED_DEGREES + 2;
            let c = if charged { &per_degree } else { &self.settings.constraints };
            let on_f;
            let c = match &constrain {
                None => c,
                Some(constrain) => match constrain(f, c) {
                    Some(c) => {
                        on_f = c;
                        &on_f
                    }
                    None => continue, // may not split here: does not count towards max_features
                },
            };
            // Only a gain above the best merit so far can win (a charge only lowers it).
            let floor = best.as_ref().map_or(f64::NEG_INFINITY, |(_, b)| b.merit());
            match search(i, f, c, floor, rng) {
                Searched::Constant => continue,
                Searched::Tried(candidate) => {
                    visited += 1;
                    if let Some(candidate) = candidate {
                        offer(&mut best, f, candidate, &mut unit, &mut noise);
                    }
                }
            }
        }
        DrawnSplit::Found(best)
    }
}
