//! Which rows a split sends to the left child.

/// Which rows a split sends to the left child.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitRule {
    /// Value bins `1..=bin` go left; the missing bin goes left when `missing_left`.
    Threshold {
        /// Last value bin of the left child.
        bin: u16,
        /// Where missing values go.
        missing_left: bool,
    },
    /// Bins `b` with `goes_left[b]` go left (bin 0, missing, included).
    Categories {
        /// One flag per bin of the feature.
        goes_left: Vec<bool>,
    },
}

impl SplitRule {
    /// Maps a rule found on a [`crate::CompactHistogram`] (whose compact bin
    /// `i` is real bin `bins[i]`) to the feature's `n_bins` real bins. Bins
    /// absent from the node split as the dense scan splits them: halfway
    /// between the children for thresholds, with the larger child
    /// (`unseen_left`) for categories.
    pub fn expand(&self, bins: &[u16], n_bins: usize, unseen_left: bool) -> SplitRule {
        match self {
            SplitRule::Threshold { bin, missing_left } => {
                let i = *bin as usize;
                // In u32: two bins near 65,535 (exact splits) would overflow u16.
                let real = match bins.get(i + 1) {
                    Some(&next) => ((u32::from(bins[i]) + u32::from(next)) / 2) as u16,
                    None => bins[i],
                };
                SplitRule::Threshold { bin: real, missing_left: *missing_left }
            }
            SplitRule::Categories { goes_left } => {
                let mut real = vec![unseen_left; n_bins];
                for (i, &b) in bins.iter().enumerate() {
                    real[b as usize] = goes_left[i];
                }
                SplitRule::Categories { goes_left: real }
            }
        }
    }

    /// One flag per bin: does a row in that bin go left?
    pub fn goes_left(&self, n_bins: usize) -> Vec<bool> {
        match self {
            SplitRule::Threshold { bin, missing_left } => {
                (0..n_bins).map(|b| if b == 0 { *missing_left } else { b <= *bin as usize }).collect()
            }
            SplitRule::Categories { goes_left } => goes_left.clone(),
        }
    }
}

/// Whether bin `b` goes left of a threshold after bin `last`: the missing
/// bin 0 where missing values go, value bins `1..=last` left. Without a
/// branch: `b - 1` wraps for bin 0, past every `last`.
#[inline(always)]
pub(crate) fn threshold_test(last: u16, missing_left: bool) -> impl Fn(usize) -> bool {
    let last = usize::from(last);
    move |b| (b.wrapping_sub(1) < last) | ((b == 0) & missing_left)
}
