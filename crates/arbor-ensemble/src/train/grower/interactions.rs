//! Interaction constraints in the grower (docs/algorithms.md, "Interaction
//! constraints"): which features a node may split on, given the features
//! the splits above it used.

/// A set of feature indices, a bit each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FeatureSet {
    words: Vec<u64>,
}

impl FeatureSet {
    /// The set of `features`.
    pub(crate) fn of(features: impl IntoIterator<Item = usize>) -> FeatureSet {
        features.into_iter().fold(FeatureSet::default(), FeatureSet::with)
    }

    /// This set and feature `f`.
    pub(crate) fn with(mut self, f: usize) -> FeatureSet {
        if self.words.len() <= f / 64 {
            self.words.resize(f / 64 + 1, 0);
        }
        self.words[f / 64] |= 1 << (f % 64);
        self
    }

    /// Whether `f` is in the set.
    pub(crate) fn contains(&self, f: usize) -> bool {
        self.words.get(f / 64).is_some_and(|w| w & (1 << (f % 64)) != 0)
    }

    /// Whether every feature of this set is in `other`.
    fn within(&self, other: &FeatureSet) -> bool {
        self.words.iter().enumerate().all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Whether the set holds no feature but `f` (or none).
    fn at_most(&self, f: usize) -> bool {
        self.words.iter().enumerate().all(|(i, &w)| w == 0 || (i == f / 64 && w == 1 << (f % 64)))
    }
}

/// The sets of features allowed to meet on a path; none: any may.
#[derive(Clone, Debug, Default)]
pub(crate) struct Interactions {
    sets: Vec<FeatureSet>,
}

impl Interactions {
    /// The allowed sets, as feature indices.
    pub(crate) fn new(sets: &[Vec<usize>]) -> Interactions {
        Interactions { sets: sets.iter().map(|set| FeatureSet::of(set.iter().copied())).collect() }
    }

    /// Whether there are constraints at all (a path's features are then tracked).
    pub(crate) fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Whether a node whose path used the features of `path` may split on
    /// `f`: the path and `f` all lie in one allowed set, or the path used
    /// no feature but `f` (a feature in no set stands alone, as XGBoost's).
    pub(crate) fn allows(&self, path: &FeatureSet, f: usize) -> bool {
        self.sets.is_empty() || path.at_most(f) || self.sets.iter().any(|set| set.contains(f) && path.within(set))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_stays_in_one_set() {
        // [0, 1], [1, 2, 70]; feature 3 in no set.
        let rules = Interactions::new(&[vec![0, 1], vec![1, 2, 70]]);
        let root = FeatureSet::default();
        assert!((0..100).all(|f| rules.allows(&root, f)), "the root may split on any feature");
        let after_1 = root.clone().with(1);
        assert!([0, 1, 2, 70].iter().all(|&f| rules.allows(&after_1, f)) && !rules.allows(&after_1, 3));
        let after_1_2 = after_1.with(2);
        assert!(rules.allows(&after_1_2, 70) && !rules.allows(&after_1_2, 0));
        let after_3 = FeatureSet::default().with(3);
        assert!(rules.allows(&after_3, 3) && !rules.allows(&after_3, 0), "a feature in no set stands alone");
        assert!(Interactions::default().allows(&after_3, 0), "no constraints: anything goes");
    }
}
