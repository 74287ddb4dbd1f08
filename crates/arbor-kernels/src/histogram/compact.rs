//! A histogram over only the bins a node's rows occupy.

use arbor_quantize::BinColumn;

use crate::histogram::target::{HistogramTarget, RowStats};

/// A histogram over only the bins a node's rows occupy: for nodes with far
/// fewer rows than bins, where filling and scanning every bin would cost more
/// than the rows themselves, and for integer class counts at any size.
#[derive(Clone, Debug, Default)]
pub struct CompactHistogram {
    /// The occupied bins, ascending, in the first `len` entries; entry 0 is
    /// always the missing bin 0, occupied or not, so compact index 0 keeps
    /// its meaning. The buffers only grow: a build writes over them.
    bins: Vec<u16>,
    /// `len * stride` statistics, in the layout of [`build_histogram`](crate::build_histogram).
    hist: Vec<f64>,
    /// Bins listed by the last build.
    len: usize,
    /// Values per bin in the last build.
    stride: usize,
    /// A dense histogram kept at zero between builds: rows add into it, the
    /// occupied bins are copied out and zeroed again.
    dense: Vec<f64>,
    /// The same, in four-lane bins, for [`CompactHistogram::build_packed`].
    pub(crate) packed: Vec<RowStats>,
    /// The same, as integer class sums, for [`CompactHistogram::build_counts`].
    pub(crate) sums: Vec<u32>,
    /// Per bin: occupied in the current build.
    pub(crate) seen: Vec<bool>,
    pub(crate) touched: Vec<u16>,
    /// How many flags of `seen` the current build may set (its largest bin + 1).
    flags_len: usize,
}

impl CompactHistogram {
    /// The occupied bins, ascending, the missing bin 0 first (occupied or not).
    pub fn bins(&self) -> &[u16] {
        &self.bins[..self.len]
    }

    /// Each listed bin's statistics, in the layout of [`build_histogram`](crate::build_histogram).
    pub fn hist(&self) -> &[f64] {
        &self.hist[..self.len * self.stride]
    }

    /// Grows the buffers to hold `n_bins` bins of `stride` values and starts
    /// a build of that stride.
    pub(crate) fn size(&mut self, n_bins: usize, stride: usize) {
        if self.bins.len() < n_bins {
            self.bins.resize(n_bins, 0);
        }
        if self.hist.len() < n_bins * stride {
            self.hist.resize(n_bins * stride, 0.0);
        }
        self.stride = stride;
    }

    /// Where the build writes bin slot `slot`: its bin and its statistics.
    #[inline(always)]
    pub(crate) fn slot(&mut self, slot: usize) -> (&mut u16, &mut [f64]) {
        let stride = self.stride;
        (&mut self.bins[slot], &mut self.hist[slot * stride..(slot + 1) * stride])
    }

    /// Both buffers whole, for a build that writes its slots itself.
    #[inline(always)]
    pub(crate) fn buffers(&mut self) -> (&mut [u16], &mut [f64]) {
        (&mut self.bins, &mut self.hist)
    }

    /// Makes room to list `n` bins without a bound check or a push; what the
    /// list held is left as it was (the listing overwrites it).
    pub(crate) fn list_room(&mut self, n: usize) {
        if self.touched.len() < n {
            self.touched.resize(n, 0);
        }
    }

    /// Ends a build that listed `len` bins.
    pub(crate) fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Rebuilds the histogram for `rows` of `column` (buffers are reused).
    /// Each bin receives its rows in the order of `rows`, as in [`build_histogram`](crate::build_histogram).
    pub fn build(
        &mut self,
        column: &BinColumn,
        rows: &[u32],
        weights: &[f64],
        counts: &[f64],
        target: &HistogramTarget<'_>,
    ) {
        let stride = target.stride();
        let n_bins = self.reset(column, rows);
        if self.dense.len() < n_bins * stride {
            self.dense.resize(n_bins * stride, 0.0);
        }
        for &r in rows {
            let b = self.occupy(column.get(r as usize));
            target.add_row(&mut self.dense[b * stride..(b + 1) * stride], r as usize, weights, counts);
        }
        let mut dense = std::mem::take(&mut self.dense);
        self.collect(stride, self.touched.len(), |b, out| {
            let cell = &mut dense[b * stride..(b + 1) * stride];
            out.copy_from_slice(cell);
            cell.fill(0.0);
        });
        self.dense = dense;
    }

    /// [`CompactHistogram::build`] from packed row statistics (see
    /// [`HistogramTarget::row_stats`]; bins of `stride <= 4` values): one four-lane
    /// add per row where [`CompactHistogram::build`] makes two or three
    /// scalar ones. Equal to it to the bit, as [`build_histogram_packed`](crate::build_histogram_packed) is
    /// to [`build_histogram`](crate::build_histogram).
    pub fn build_packed(&mut self, column: &BinColumn, rows: &[u32], stats: &[RowStats], stride: usize) {
        assert!((1..=4).contains(&stride), "bins of at most four values");
        let n_bins = self.reset(column, rows);
        if self.packed.len() < n_bins {
            self.packed.resize(n_bins, [0.0; 4]);
        }
        for &r in rows {
            let b = self.occupy(column.get(r as usize));
            for (c, v) in self.packed[b].iter_mut().zip(stats[r as usize]) {
                *c += v;
            }
        }
        let mut packed = std::mem::take(&mut self.packed);
        self.collect(stride, self.touched.len(), |b, out| {
            for (o, &c) in out.iter_mut().zip(packed[b].iter()) {
                *o = c;
            }
            packed[b] = [0.0; 4];
        });
        self.packed = packed;
    }

    /// Starts a build: sizes the per-bin flags for `rows` of `column` and
    /// forgets the last build's bins; returns how many bins the dense buffers
    /// need (every bin of a byte column; up to the node's largest of a wide one).
    pub(crate) fn reset(&mut self, column: &BinColumn, rows: &[u32]) -> usize {
        self.touched.clear();
        self.reset_flags(max_bin(column, rows))
    }

    /// Starts a build whose rows' bins are at most `max_bin` and which lists
    /// them itself (see [`CompactHistogram::collect`]); returns how many bins
    /// the dense buffers need.
    pub(crate) fn reset_flags(&mut self, max_bin: usize) -> usize {
        if self.seen.len() <= max_bin {
            self.seen.resize(max_bin + 1, false);
        }
        self.flags_len = max_bin + 1;
        max_bin + 1
    }

    /// Marks bin `b` occupied (listing it the first time); returns it as an index.
    #[inline(always)]
    pub(crate) fn occupy(&mut self, b: u16) -> usize {
        let seen = &mut self.seen[b as usize];
        if !*seen {
            *seen = true;
            self.touched.push(b);
        }
        b as usize
    }

    /// Branch-free listing: writes bin `b` at position `listed` of the list
    /// and returns the list's new length, one longer only when `b` was not
    /// seen before in this build (room for it: [`CompactHistogram::list_room`]).
    #[inline(always)]
    pub(crate) fn list(&mut self, listed: usize, b: usize) -> usize {
        let new = !std::mem::replace(&mut self.seen[b], true);
        self.touched[listed] = b as u16;
        listed + usize::from(new)
    }

    /// Lists the occupied bins in order (the missing bin 0 first, always) and
    /// fills each one's `stride` statistics with `take(bin, out)`, which also
    /// clears the bin in its dense buffer. The bins are the first `touched`
    /// of [`CompactHistogram::touched`] (which branch-free builds keep longer,
    /// so that it is not zeroed again for every build).
    #[inline(always)]
    pub(crate) fn collect(&mut self, stride: usize, touched: usize, mut take: impl FnMut(usize, &mut [f64])) {
        self.order_touched(touched);
        let occupied_missing = touched > 0 && self.touched[0] == 0;
        let listed = touched + usize::from(!occupied_missing);
        self.size(listed, stride);
        let (bin, out) = self.slot(0);
        *bin = 0;
        out.fill(0.0);
        let first = usize::from(!occupied_missing);
        for i in 0..touched {
            let b = self.touched[i];
            let (bin, out) = self.slot(first + i);
            *bin = b;
            take(b as usize, out);
            self.seen[b as usize] = false;
        }
        self.set_len(listed);
    }

    /// Puts the first `touched` listed bins in ascending order: sorted when
    /// few; when many of the build's bins are occupied, listed again from
    /// the occupied flags in bin order, a branch-free pass that costs less
    /// than sorting a long list.
    #[inline(always)]
    fn order_touched(&mut self, touched: usize) {
        let n_flags = self.flags_len;
        if touched < 32 || n_flags > 8 * touched {
            self.touched[..touched].sort_unstable();
            return;
        }
        // Each bin writes itself at the list's end; only an occupied one extends it.
        self.list_room(touched + 1);
        let mut listed = 0;
        for (b, &seen) in self.seen[..n_flags].iter().enumerate() {
            self.touched[listed] = b as u16;
            listed += usize::from(seen);
        }
        debug_assert_eq!(listed, touched, "every occupied bin was listed once");
    }
}

/// The largest bin of `rows` in `column` (the largest there can be, for 1-byte bins).
pub(crate) fn max_bin(column: &BinColumn, rows: &[u32]) -> usize {
    match column {
        BinColumn::U8(_) => usize::from(u8::MAX),
        BinColumn::U16(_) => rows.iter().map(|&r| column.get(r as usize)).max().unwrap_or(0) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_histogram;

    #[test]
    fn compact_histogram_holds_the_occupied_bins_of_the_dense_one() {
        let column = BinColumn::U8(vec![5, 2, 5, 9, 2, 0, 7]);
        let labels = [0, 1, 1, 0, 0, 1, 1];
        let w = [1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0];
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
        let rows = [0, 1, 2, 3, 4, 6];
        let mut dense = vec![0.0; 10 * 3];
        build_histogram(&column, &rows, &w, &w, &target, &mut dense);
        let mut compact = CompactHistogram::default();
        compact.build(&column, &rows, &w, &w, &target);
        assert_eq!(compact.bins(), [0, 2, 5, 7, 9]);
        for (i, &b) in compact.bins().iter().enumerate() {
            let b = b as usize;
            assert_eq!(&compact.hist()[i * 3..i * 3 + 3], &dense[b * 3..b * 3 + 3]);
        }
    }
}
