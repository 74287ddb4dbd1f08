//! In-place partition of a node's row records into its two children.

use pulp::{Simd, WithSimd};

use crate::split::rule::{threshold_test, SplitRule};

/// Reorders `records` (of `width` bytes, see [`RowRecords`](crate::RowRecords)) so the rows
/// `rule` sends left by their bin of feature `f` come first; returns how
/// many went left. In place, with no scratch: the order within each side
/// is a fixed permutation, not the input's, which nothing reading records
/// depends on (their histograms sum whole counts).
pub fn partition_records(records: &mut [u8], width: usize, f: usize, rule: &SplitRule) -> usize {
    assert!(f + 4 < width && records.len() % width == 0, "feature {f} lies in records of {width} bytes");
    crate::dispatch::run(PartitionRecordsKernel { records, width, f, rule })
}

struct PartitionRecordsKernel<'a> {
    records: &'a mut [u8],
    width: usize,
    f: usize,
    rule: &'a SplitRule,
}

impl WithSimd for PartitionRecordsKernel<'_> {
    type Output = usize;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> usize {
        match self.width {
            8 => self.by_rule::<8>(),
            16 => self.by_rule::<16>(),
            32 => self.by_rule::<32>(),
            _ => self.by_rule::<64>(),
        }
    }
}

impl PartitionRecordsKernel<'_> {
    #[inline(always)]
    fn by_rule<const W: usize>(self) -> usize {
        let PartitionRecordsKernel { records, f, rule, .. } = self;
        let records = bytemuck::cast_slice_mut::<u8, [u8; W]>(records);
        match rule {
            SplitRule::Threshold { bin, missing_left } => {
                let goes_left = threshold_test(*bin, *missing_left);
                partition_in_place(records, |record| goes_left(usize::from(record[f])))
            }
            SplitRule::Categories { goes_left } => {
                partition_in_place(records, |record| goes_left[usize::from(record[f])])
            }
        }
    }
}

/// Moves the items `goes_left` picks to the front, in place; returns how
/// many there are. Branch-free: each item trades places with the first
/// item of the right side (itself while there is none) and only a left
/// one extends the left side, so `items[..n_left]` go left and
/// `items[n_left..=i]` go right after step `i`.
#[inline(always)]
fn partition_in_place<T: Copy>(items: &mut [T], goes_left: impl Fn(&T) -> bool) -> usize {
    let mut n_left = 0;
    for i in 0..items.len() {
        let item = items[i];
        let left = usize::from(goes_left(&item));
        // `n_left <= i`: the `min` says so to the compiler, which then checks no bounds.
        let first_right = n_left.min(i);
        items[i] = items[first_right];
        items[first_right] = item;
        n_left += left;
    }
    n_left
}
