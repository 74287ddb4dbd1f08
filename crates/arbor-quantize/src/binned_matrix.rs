//! The compact, column-major matrix of bin codes that training reads.

use crate::{BinMapper, FeatureColumn, QuantizeParams};
use rayon::prelude::*;

/// One feature's bin codes: one byte per row when the feature has at most 256 bins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinColumn {
    /// Codes of a feature with at most 256 bins.
    U8(Vec<u8>),
    /// Codes of a feature with more bins (large categorical features).
    U16(Vec<u16>),
}

impl BinColumn {
    /// The bin of row `row`.
    #[inline]
    pub fn get(&self, row: usize) -> u16 {
        match self {
            BinColumn::U8(v) => u16::from(v[row]),
            BinColumn::U16(v) => v[row],
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            BinColumn::U8(v) => v.len(),
            BinColumn::U16(v) => v.len(),
        }
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the codes.
    pub fn size_bytes(&self) -> usize {
        match self {
            BinColumn::U8(v) => v.len(),
            BinColumn::U16(v) => v.len() * 2,
        }
    }

    /// The codes of `rows`, in that order (positions into this column).
    pub fn gather(&self, rows: &[u32]) -> BinColumn {
        match self {
            BinColumn::U8(v) => BinColumn::U8(rows.iter().map(|&r| v[r as usize]).collect()),
            BinColumn::U16(v) => BinColumn::U16(rows.iter().map(|&r| v[r as usize]).collect()),
        }
    }

    /// An empty column for codes of a feature of `n_bins` bins, with room for `rows`.
    pub fn with_capacity(n_bins: usize, rows: usize) -> BinColumn {
        if n_bins <= 256 {
            BinColumn::U8(Vec::with_capacity(rows))
        } else {
            BinColumn::U16(Vec::with_capacity(rows))
        }
    }

    /// Appends codes (each below the feature's bin count, so they fit the width).
    pub fn extend(&mut self, codes: &[u16]) {
        match self {
            BinColumn::U8(v) => v.extend(codes.iter().map(|&b| b as u8)),
            BinColumn::U16(v) => v.extend_from_slice(codes),
        }
    }
}

/// Every feature's bins, with the mappers that produced them.
#[derive(Clone, Debug)]
pub struct BinnedMatrix {
    columns: Vec<BinColumn>,
    mappers: Vec<BinMapper>,
    n_rows: usize,
}

impl BinnedMatrix {
    /// Fits a mapper per feature and bins every value.
    pub fn fit(columns: &[FeatureColumn], params: &QuantizeParams) -> BinnedMatrix {
        let mappers: Vec<BinMapper> = columns.par_iter().map(|c| BinMapper::fit(c, params)).collect();
        Self::with_mappers(columns, mappers)
    }

    /// Bins columns with given mappers (one per column).
    pub fn with_mappers(columns: &[FeatureColumn], mappers: Vec<BinMapper>) -> BinnedMatrix {
        assert_eq!(columns.len(), mappers.len(), "one mapper per column");
        let n_rows = columns.first().map_or(0, FeatureColumn::len);
        let columns = columns
            .par_iter()
            .zip(&mappers)
            .map(|(column, mapper)| {
                let bins = mapper.bin_column(column);
                if mapper.n_bins() <= 256 {
                    BinColumn::U8(bins.into_iter().map(|b| b as u8).collect())
                } else {
                    BinColumn::U16(bins)
                }
            })
            .collect();
        BinnedMatrix { columns, mappers, n_rows }
    }

    /// A matrix of columns already binned by `mappers` (one per column, each
    /// of `n_rows` codes), such as the bins a batch stream was read into.
    pub fn from_columns(columns: Vec<BinColumn>, mappers: Vec<BinMapper>, n_rows: usize) -> BinnedMatrix {
        assert_eq!(columns.len(), mappers.len(), "one mapper per column");
        assert!(columns.iter().all(|c| c.len() == n_rows), "every column holds every row");
        BinnedMatrix { columns, mappers, n_rows }
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.mappers.len()
    }

    /// The codes of feature `f` (empty once [`BinnedMatrix::release_columns`] ran).
    pub fn column(&self, f: usize) -> &BinColumn {
        &self.columns[f]
    }

    /// Frees every column's codes, keeping the mappers and the shape: for
    /// training that reads the bins from a copy in another layout (boosting's
    /// row-major bins), so they are not held twice. Any later read of a
    /// column's codes panics (out of bounds) rather than reading wrong bins.
    pub fn release_columns(&mut self) {
        for column in &mut self.columns {
            *column = BinColumn::U8(Vec::new());
        }
    }

    /// A matrix with these mappers and no columns yet, for
    /// [`BinnedMatrix::push_column`] to fill.
    pub fn clone_empty(&self) -> BinnedMatrix {
        BinnedMatrix { columns: Vec::with_capacity(self.mappers.len()), mappers: self.mappers.clone(), n_rows: 0 }
    }

    /// Adds the next feature's codes (all columns of one length, at most
    /// one per mapper).
    pub fn push_column(&mut self, column: BinColumn) {
        assert!(self.columns.len() < self.mappers.len(), "one column per mapper");
        assert!(self.columns.is_empty() || column.len() == self.n_rows, "every column holds every row");
        self.n_rows = column.len();
        self.columns.push(column);
    }

    /// Takes feature `f`'s codes out of the matrix (leaving it empty), for
    /// a copy in another layout built a column at a time, so the codes are
    /// never held twice in full.
    pub fn take_column(&mut self, f: usize) -> BinColumn {
        std::mem::replace(&mut self.columns[f], BinColumn::U8(Vec::new()))
    }

    /// Reorders the rows: row `i` becomes the row at `rows[i]` (a
    /// permutation), one column at a time.
    pub fn gather_rows(&mut self, rows: &[u32]) {
        for column in &mut self.columns {
            *column = column.gather(rows);
        }
        self.n_rows = rows.len();
    }

    /// The mapper of feature `f`.
    pub fn mapper(&self, f: usize) -> &BinMapper {
        &self.mappers[f]
    }

    /// All mappers, in feature order.
    pub fn mappers(&self) -> &[BinMapper] {
        &self.mappers
    }

    /// Bytes held by all codes.
    pub fn size_bytes(&self) -> usize {
        self.columns.iter().map(BinColumn::size_bytes).sum()
    }
}
