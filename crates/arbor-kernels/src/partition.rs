//! Stable in-place partition of a node's rows into its two children.

use arbor_quantize::BinColumn;
use pulp::{Simd, WithSimd};

/// Reorders `rows` so rows whose bin has `goes_left[bin]` come first, both
/// sides keeping their order; returns how many went left. `scratch` is reused
/// between calls to avoid allocation.
pub fn partition_rows(rows: &mut [u32], column: &BinColumn, goes_left: &[bool], scratch: &mut Vec<u32>) -> usize {
    crate::dispatch::run(PartitionKernel { rows, column, goes_left, scratch })
}

struct PartitionKernel<'a> {
    rows: &'a mut [u32],
    column: &'a BinColumn,
    goes_left: &'a [bool],
    scratch: &'a mut Vec<u32>,
}

impl WithSimd for PartitionKernel<'_> {
    type Output = usize;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> usize {
        let PartitionKernel { rows, column, goes_left, scratch } = self;
        match column {
            BinColumn::U8(bins) => partition(rows, bins, goes_left, scratch),
            BinColumn::U16(bins) => partition(rows, bins, goes_left, scratch),
        }
    }
}

/// Branch-free: every row is written to both sides and only the side it
/// belongs to advances, since a split's direction is as good as random to
/// the branch predictor. A row lands at `rows[n_left]` only after `rows[i]`,
/// `i >= n_left`, has been read.
#[inline(always)]
fn partition<B: Copy + Into<usize>>(rows: &mut [u32], bins: &[B], goes_left: &[bool], scratch: &mut Vec<u32>) -> usize {
    // Grown, never cleared: every slot read back below was written first.
    if scratch.len() < rows.len() {
        scratch.resize(rows.len(), 0);
    }
    let (mut n_left, mut n_right) = (0, 0);
    for i in 0..rows.len() {
        let r = rows[i];
        let left = usize::from(goes_left[bins[r as usize].into()]);
        rows[n_left] = r;
        scratch[n_right] = r;
        n_left += left;
        n_right += 1 - left;
    }
    rows[n_left..].copy_from_slice(&scratch[..n_right]);
    n_left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_is_stable() {
        let column = BinColumn::U8(vec![0, 1, 2, 1, 0, 2]);
        let mut rows = vec![5, 4, 3, 2, 1, 0];
        let n = partition_rows(&mut rows, &column, &[true, false, true], &mut Vec::new());
        assert_eq!(n, 4);
        assert_eq!(rows, vec![5, 4, 2, 0, 3, 1]);
    }
}
