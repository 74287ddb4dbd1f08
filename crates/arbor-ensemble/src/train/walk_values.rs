//! The values training rows walk finished trees on (out-of-bag rows, rows
//! a boosting round did not sample, held-out rows): the raw values where
//! they are kept (`split_method=exact`, whose thresholds lie between raw
//! values), else a stand-in per bin that every split sends the way it
//! sends the bin's values. A histogram split's threshold is a bin's upper
//! edge, so the edge itself is that stand-in: `edge_b <= edge_k` exactly
//! when bin `b` is at or below bin `k`. So walking needs the bins alone.

use arbor_kernels::RowBins;
use arbor_quantize::{BinMapper, BinnedMatrix, FeatureColumn, MISSING_BIN};
use rayon::prelude::*;

use crate::model::tree::Tree;
use crate::train::grower::bin_of;

/// How rows are read as the trees test them.
pub(crate) enum WalkValues<'a> {
    /// The raw columns.
    Raw(&'a [FeatureColumn]),
    /// Per feature, a value for each bin; the rows' bins.
    StandIns { values: Vec<Vec<f64>>, matrix: &'a BinnedMatrix, row_bins: Option<&'a RowBins> },
}

impl<'a> WalkValues<'a> {
    /// Raw values when there are any, else the bins' stand-ins (read from
    /// `row_bins` when the matrix's columns were released for them).
    pub(crate) fn new(
        raw: Option<&'a [FeatureColumn]>,
        matrix: &'a BinnedMatrix,
        row_bins: Option<&'a RowBins>,
    ) -> WalkValues<'a> {
        match raw {
            Some(columns) => WalkValues::Raw(columns),
            None => WalkValues::StandIns { values: matrix.mappers().iter().map(stand_ins).collect(), matrix, row_bins },
        }
    }

    /// Feature `f` of row `r`, as the trees test it.
    #[inline]
    pub(crate) fn value(&self, f: usize, r: usize) -> f64 {
        match self {
            WalkValues::Raw(columns) => columns[f].raw_value(r),
            WalkValues::StandIns { values, matrix, row_bins } => {
                values[f][usize::from(bin_of(matrix, *row_bins, f, r))]
            }
        }
    }

    /// Number of features.
    pub(crate) fn n_features(&self) -> usize {
        match self {
            WalkValues::Raw(columns) => columns.len(),
            WalkValues::StandIns { values, .. } => values.len(),
        }
    }
}

/// A value for each bin of `mapper` that every histogram split sends the
/// bin's way: NaN for the missing bin, the bin's upper edge (numeric; the
/// last bin, unbounded, infinity) or the bin itself (categorical).
pub(crate) fn stand_ins(mapper: &BinMapper) -> Vec<f64> {
    let mut values: Vec<f64> = match mapper {
        BinMapper::Numeric { edges } => {
            std::iter::once(f64::NAN).chain(edges.iter().copied()).chain(std::iter::once(f64::INFINITY)).collect()
        }
        BinMapper::Categorical { .. } => (0..mapper.n_bins()).map(|b| b as f64).collect(),
    };
    values[usize::from(MISSING_BIN)] = f64::NAN;
    values
}

/// Rows whose scores one task updates in [`add_tree_scores`].
const SCORE_CHUNK_ROWS: usize = 16_384;

/// Adds each of `trees` to every row's raw scores (`outputs` a row, tree
/// `first + t` to output `(first + t) % outputs`), in tree order, reading
/// row `r`'s feature `f` as `value(f, r)`: the order training added them,
/// so the same bits. Chunks of rows are updated in parallel.
pub(crate) fn add_tree_scores(
    raw: &mut [f64],
    outputs: usize,
    first: usize,
    trees: &[Tree],
    value: impl Fn(usize, usize) -> f64 + Sync,
) {
    raw.par_chunks_mut(SCORE_CHUNK_ROWS * outputs).enumerate().for_each(|(k, chunk)| {
        for (i, scores) in chunk.chunks_exact_mut(outputs).enumerate() {
            let r = k * SCORE_CHUNK_ROWS + i;
            for (t, tree) in trees.iter().enumerate() {
                scores[(first + t) % outputs] += tree.values[tree.leaf(|f| value(f, r))];
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_quantize::QuantizeParams;

    /// Every histogram threshold sends a bin's stand-in the way it sends the bin's raw values.
    #[test]
    fn stand_ins_take_their_values_side_of_every_threshold() {
        let raw: Vec<f64> =
            (0..2000).map(|i| if i % 41 == 0 { f64::NAN } else { ((i * 7919) % 613) as f64 / 3.0 }).collect();
        let columns = [
            FeatureColumn::Numeric(raw.clone().into()),
            FeatureColumn::Categorical {
                bins: (0..2000).map(|r| (r % 5) as u16).collect(),
                categories: ["a", "b", "c", "d"].map(String::from).to_vec(),
            },
        ];
        let matrix =
            BinnedMatrix::fit(&columns, &QuantizeParams { max_bins: 17, min_bin_size: 3, ..Default::default() });
        let walk = WalkValues::new(None, &matrix, None);
        let mapper = matrix.mapper(0);
        for bin in 1..mapper.n_bins() as u16 {
            let t = mapper.threshold(bin);
            for (r, &x) in raw.iter().enumerate() {
                let stand_in = walk.value(0, r);
                assert_eq!(x.is_nan(), stand_in.is_nan(), "row {r}");
                if !x.is_nan() {
                    assert_eq!(x <= t, stand_in <= t, "row {r}: value {x}, stand-in {stand_in}, threshold {t}");
                }
            }
        }
        // Categories walk as their bins, as raw categorical values do.
        for r in 0..2000 {
            assert_eq!(walk.value(1, r).to_bits(), columns[1].raw_value(r).to_bits(), "row {r}");
        }
    }
}
