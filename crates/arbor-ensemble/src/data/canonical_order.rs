//! The canonical row order: training sorts its rows by their values, so that
//! a model depends on the rows it is given, never on the order they arrive in
//! (file layout, batch sizes, SQL partitions).
//!
//! Each key column is turned into order-preserving integer ranks, the ranks of
//! a row are packed into one wide integer (first column most significant), and
//! the rows are sorted by that integer: the order of comparing the columns one
//! after another, at the cost of sorting plain integers.

use std::cmp::Ordering;

use arbor_quantize::{integer_span, offset, BinColumn, BinnedMatrix, Number};
use rayon::prelude::*;

use crate::data::label::Target;

/// One key column of the order, as training reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SortKey<'a> {
    /// Numbers; NaN (missing) sorts first.
    Numbers(&'a [f64]),
    /// Numbers held as `f32`; NaN (missing) sorts first.
    Floats(&'a [f32]),
    /// Category bins (1 + the index in the categories' sorted order); bin 0 (missing) sorts first.
    Bins(&'a [u16]),
    /// Class indexes, in the classes' sorted order.
    Classes(&'a [u32]),
}

/// Integer-valued columns spanning at most this many values (or four per row,
/// if more) are ranked by offset from their minimum instead of by sorting.
const DIRECT_SPAN: usize = 1 << 16;

/// The rows `0..n` sorted by every key column in turn (missing values first,
/// then ascending), given as each sorted row's input position. The keys are
/// the values as training reads them, so rows that tie look the same to
/// training; they keep their input order, and the result is one total order
/// whatever the thread count.
///
/// A column's place in the packed keys depends only on the columns before
/// it, so the columns are ranked a thread's worth at a time and packed as
/// they come: the ranks of every column are never held at once. Columns past
/// the first two words (128 bits) only break ties between rows whose first
/// two words are equal, so they are ranked only if some rows tie there, and
/// packed for those rows alone: wide tables of continuous values never rank
/// them (each ranking is a sort of the column).
pub(crate) fn canonical_order(keys: &[SortKey<'_>]) -> Vec<u32> {
    let n = keys.first().map_or(0, |k| k.len());
    let mut head = vec![0u128; n];
    let mut layout = KeyLayout::default();
    // Columns ranked and placed past the first two words: (column, word, shift).
    let mut tail_columns = Vec::new();
    // The first column not ranked: the head was full before its turn.
    let mut unranked = keys.len();
    let threads = rayon::current_num_threads().max(1);
    for (chunk, columns) in keys.chunks(threads).enumerate() {
        if layout.words > 2 {
            unranked = chunk * threads;
            break;
        }
        let ranked: Vec<(Ranks, u32)> = columns.par_iter().map(|k| ranks(*k)).collect();
        for (i, (ranks, top)) in ranked.iter().enumerate() {
            match layout.place(*top) {
                None => {}
                Some((word @ 0..=1, shift)) => {
                    let shift = shift + if word == 0 { 64 } else { 0 };
                    head.par_iter_mut().enumerate().for_each(|(r, k)| *k |= u128::from(ranks.get(r)) << shift);
                }
                Some((word, shift)) => tail_columns.push((chunk * threads + i, word, shift)),
            }
        }
    }

    // When the keys take at most two words and leave room below them for a
    // row's position, one 16-byte integer per row carries both: sorting
    // them is sorting by keys, then position.
    let row_bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    if layout.words <= 2 && row_bits <= layout.free_bits() {
        head.par_iter_mut().enumerate().for_each(|(r, k)| *k |= r as u128);
        head.par_sort_unstable();
        let row_mask = (1u128 << row_bits) - 1;
        return head.iter().map(|&k| (k & row_mask) as u32).collect();
    }

    // Sort by the first two words and the input position; then rows whose
    // first two words tie are sorted again by the rest (rare: over 128 bits of keys).
    let mut keyed: Vec<(u128, u32)> = head.iter().enumerate().map(|(r, &k)| (k, r as u32)).collect();
    drop(head);
    keyed.par_sort_unstable();
    let mut order: Vec<u32> = keyed.iter().map(|&(_, r)| r).collect();
    if layout.words <= 2 {
        return order;
    }
    let ties: Vec<std::ops::Range<usize>> = keyed
        .chunk_by(|a, b| a.0 == b.0)
        .scan(0, |start, run| {
            *start += run.len();
            Some(*start - run.len()..*start)
        })
        .filter(|run| run.len() > 1)
        .collect();
    drop(keyed);
    if ties.is_empty() {
        return order;
    }
    // The tied rows, run after run, and their words past the first two,
    // one vector per word.
    let tied: Vec<u32> = ties.iter().flat_map(|run| order[run.clone()].iter().copied()).collect();
    let mut words: Vec<Vec<u64>> = Vec::new();
    let mut pack = |ranks: &Ranks, word: usize, shift: u32| {
        while words.len() <= word - 2 {
            words.push(vec![0; tied.len()]);
        }
        for (w, &r) in words[word - 2].iter_mut().zip(&tied) {
            *w |= ranks.get(r as usize) << shift;
        }
    };
    for &(column, word, shift) in &tail_columns {
        pack(&ranks(keys[column]).0, word, shift);
    }
    for key in &keys[unranked..] {
        let (ranks, top) = ranks(*key);
        if let Some((word, shift)) = layout.place(top) {
            pack(&ranks, word, shift);
        }
    }
    let mut at = 0;
    for run in ties {
        let rows: Vec<u32> = order[run.clone()].to_vec();
        let tail = |i: usize| words.iter().map(move |w| w[at + i]);
        let mut slots: Vec<usize> = (0..rows.len()).collect();
        slots.sort_unstable_by(|&a, &b| tail(a).cmp(tail(b)).then(rows[a].cmp(&rows[b])));
        for (row, &slot) in order[run].iter_mut().zip(&slots) {
            *row = rows[slot];
        }
        at += rows.len();
    }
    order
}

/// Where the packed keys put each column: the bits of its highest rank, in
/// the first 64-bit word it fits in whole, highest bits first; columns of one
/// value (all ranks 0) take none.
#[derive(Debug)]
struct KeyLayout {
    /// Words begun.
    words: usize,
    /// Bits taken in the last one.
    used: u32,
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout { words: 1, used: 0 }
    }
}

impl KeyLayout {
    /// The next column's word and shift, given its highest rank.
    fn place(&mut self, top: u32) -> Option<(usize, u32)> {
        let bits = u32::BITS - top.leading_zeros();
        if bits == 0 {
            return None;
        }
        if self.used + bits > u64::BITS {
            self.words += 1;
            self.used = 0;
        }
        self.used += bits;
        Some((self.words - 1, u64::BITS - self.used))
    }

    /// Bits below the keys in the first two words.
    fn free_bits(&self) -> u32 {
        if self.words == 1 {
            2 * u64::BITS - self.used
        } else {
            u64::BITS - self.used
        }
    }
}

impl SortKey<'_> {
    fn len(&self) -> usize {
        match self {
            SortKey::Numbers(v) => v.len(),
            SortKey::Floats(v) => v.len(),
            SortKey::Bins(v) => v.len(),
            SortKey::Classes(v) => v.len(),
        }
    }
}

/// A column's ranks, two bytes each when the highest fits.
enum Ranks {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Ranks {
    #[inline]
    fn get(&self, r: usize) -> u64 {
        match self {
            Ranks::Narrow(ranks) => u64::from(ranks[r]),
            Ranks::Wide(ranks) => u64::from(ranks[r]),
        }
    }
}

/// Per row, a rank that orders rows as the column's values do (equal values,
/// equal ranks; missing lowest); and the highest rank given.
fn ranks(key: SortKey<'_>) -> (Ranks, u32) {
    match key {
        SortKey::Classes(classes) => {
            let top = classes.iter().copied().max().unwrap_or(0);
            (Ranks::map(top, classes, |&c| c), top)
        }
        SortKey::Bins(bins) => (Ranks::Narrow(bins.to_vec()), bins.iter().copied().max().map_or(0, u32::from)),
        SortKey::Numbers(values) => number_ranks(values),
        SortKey::Floats(values) => number_ranks(values),
    }
}

impl Ranks {
    /// `n` zero ranks, two bytes each when `top` fits in them.
    fn zeros(top: u32, n: usize) -> Ranks {
        match u16::try_from(top) {
            Ok(_) => Ranks::Narrow(vec![0; n]),
            Err(_) => Ranks::Wide(vec![0; n]),
        }
    }

    /// Each of `items`' rank (at most `top`), two bytes each when it fits.
    fn map<X: Sync>(top: u32, items: &[X], rank: impl Fn(&X) -> u32 + Sync) -> Ranks {
        match u16::try_from(top) {
            Ok(_) => Ranks::Narrow(items.iter().map(|x| rank(x) as u16).collect()),
            Err(_) => Ranks::Wide(items.iter().map(rank).collect()),
        }
    }

    #[inline]
    fn set(&mut self, r: usize, rank: u32) {
        match self {
            Ranks::Narrow(ranks) => ranks[r] = rank as u16,
            Ranks::Wide(ranks) => ranks[r] = rank,
        }
    }
}

/// Ranks of numbers: 1 + the offset from the minimum when every value is an
/// integer in a narrow span, else 1 + the position among the distinct values;
/// 0 for NaN. With the highest rank they may take.
fn number_ranks<T: Number>(values: &[T]) -> (Ranks, u32) {
    let wide = |v: T| -> f64 { v.into() };
    if let Some((min, span)) = integer_span(values, DIRECT_SPAN.max(4 * values.len())) {
        let top = span as u32 + 1;
        let rank = |&v: &T| {
            let v = wide(v);
            if v.is_nan() {
                0
            } else {
                offset(v, min) as u32 + 1
            }
        };
        return (Ranks::map(top, values, rank), top);
    }
    // Otherwise sort: bit patterns flipped so unsigned order is the numbers'
    // order (-0 made +0 first, as the two are equal).
    let ordered = |v: f64| {
        let bits = (v + 0.0).to_bits();
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    };
    let mut sorted: Vec<(u64, u32)> = values
        .iter()
        .map(|&v| wide(v))
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .map(|(r, v)| (ordered(v), r as u32))
        .collect();
    sorted.par_sort_unstable();
    let top = sorted.chunk_by(|a, b| a.0 == b.0).count() as u32;
    let mut ranks = Ranks::zeros(top, values.len());
    let mut rank = 0;
    for (i, &(key, r)) in sorted.iter().enumerate() {
        if i == 0 || key != sorted[i - 1].0 {
            rank += 1;
        }
        ranks.set(r as usize, rank);
    }
    (ranks, top)
}

/// Rows per parallel work unit when binned rows are hashed.
const HASH_CHUNK: usize = 1 << 14;

/// The canonical order of binned rows, given as each sorted row's position:
/// by a hash of the row's bins and label, rows of equal hashes by their
/// bins, label and weight, then by position. Rows equal in all three are
/// interchangeable to binned training, so the model depends on the rows
/// given, never on their order; the hash sorts as plain integers (16 bytes
/// a row) where comparing rows column by column would not. The weight is
/// left out of the hash so that a row of weight 2 sorts where the same row
/// given twice does, and sums over them are added in the same order.
pub(crate) fn binned_order(
    matrix: &BinnedMatrix,
    target: &Target,
    weights: Option<&[f64]>,
    groups: Option<&[i64]>,
) -> Vec<u32> {
    let n = matrix.n_rows();
    let number = |x: f64| if x == 0.0 { 0 } else { x.to_bits() };
    let mut keys = vec![0u128; n];
    keys.par_chunks_mut(HASH_CHUNK).enumerate().for_each(|(c, chunk)| {
        let rows = c * HASH_CHUNK..c * HASH_CHUNK + chunk.len();
        let mut hashes = vec![0x243f_6a88_85a3_08d3u64; chunk.len()];
        for f in 0..matrix.n_features() {
            match matrix.column(f) {
                BinColumn::U8(v) => {
                    hashes.iter_mut().zip(&v[rows.clone()]).for_each(|(h, &b)| *h = mix(*h ^ u64::from(b)))
                }
                BinColumn::U16(v) => {
                    hashes.iter_mut().zip(&v[rows.clone()]).for_each(|(h, &b)| *h = mix(*h ^ u64::from(b)))
                }
            }
        }
        match target {
            Target::Classes(c) => {
                hashes.iter_mut().zip(&c[rows.clone()]).for_each(|(h, &c)| *h = mix(*h ^ u64::from(c)))
            }
            Target::Values(y) => hashes.iter_mut().zip(&y[rows.clone()]).for_each(|(h, &y)| *h = mix(*h ^ number(y))),
        }
        if let Some(g) = groups {
            hashes.iter_mut().zip(&g[rows.clone()]).for_each(|(h, &q)| *h = mix(*h ^ q as u64));
        }
        for ((key, h), r) in chunk.iter_mut().zip(hashes).zip(rows) {
            *key = u128::from(h) << 64 | r as u128;
        }
    });
    keys.par_sort_unstable();
    let mut order: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
    // Rows of one hash: almost always equal rows, already in position order.
    let mut start = 0;
    while start < n {
        let hash = keys[start] >> 64;
        let end = start + keys[start..].iter().take_while(|&&k| k >> 64 == hash).count();
        if end - start > 1 {
            order[start..end].sort_by(|&a, &b| compare_rows(matrix, target, weights, groups, a, b).then(a.cmp(&b)));
        }
        start = end;
    }
    order
}

/// Binned rows `a` and `b` compared by their bins, then label, weight and query.
fn compare_rows(
    matrix: &BinnedMatrix,
    target: &Target,
    weights: Option<&[f64]>,
    groups: Option<&[i64]>,
    a: u32,
    b: u32,
) -> Ordering {
    let (a, b) = (a as usize, b as usize);
    (0..matrix.n_features())
        .map(|f| matrix.column(f).get(a).cmp(&matrix.column(f).get(b)))
        .chain(std::iter::once(match target {
            Target::Classes(c) => c[a].cmp(&c[b]),
            Target::Values(y) => y[a].total_cmp(&y[b]),
        }))
        .chain(weights.map(|w| w[a].total_cmp(&w[b])))
        .chain(groups.map(|g| g[a].cmp(&g[b])))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// SplitMix64's finalizer: every input bit moves every output bit.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The order by comparing the columns one after another, as a reference.
    fn compared_order(keys: &[SortKey<'_>]) -> Vec<u32> {
        let n = keys[0].len();
        let numbers = |x: f64, y: f64| match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            (false, false) => x.partial_cmp(&y).expect("not NaN"),
        };
        let compare_at = |k: &SortKey<'_>, a: usize, b: usize| match k {
            SortKey::Numbers(v) => numbers(v[a], v[b]),
            SortKey::Floats(v) => numbers(f64::from(v[a]), f64::from(v[b])),
            SortKey::Bins(v) => v[a].cmp(&v[b]),
            SortKey::Classes(v) => v[a].cmp(&v[b]),
        };
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| {
            keys.iter()
                .map(|k| compare_at(k, a as usize, b as usize))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        order
    }

    fn number() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-5i32..5).prop_map(f64::from),
            (-1e6f64..1e6),
            Just(f64::NAN),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            (0u32..2_000_000).prop_map(f64::from),
        ]
    }

    proptest! {
        /// Packed ranks sort rows exactly as comparing column by column, over
        /// narrow and wide integers, fractions (`f64` and `f32`), infinities,
        /// NaN and missing bins, with one word of keys (room for the row's
        /// position beside them), two, and more.
        #[test]
        fn packed_ranks_match_column_by_column(
            rows in 1usize..300,
            seed_columns in proptest::collection::vec((0u8..6, proptest::collection::vec(number(), 300)), 1..12),
        ) {
            // Kinds 3 and 4: integers in a narrow and a 16-bit span (ranked without sorting).
            let numbers: Vec<Vec<f64>> = seed_columns
                .iter()
                .map(|(kind, v)| {
                    v[..rows]
                        .iter()
                        .map(|&x| match kind {
                            _ if x.is_nan() => x,
                            3 => ((x.abs() as i64) % 10 - 5) as f64,
                            4 => ((x.abs() as i64) % 60000) as f64,
                            _ => x,
                        })
                        .collect()
                })
                .collect();
            let bins: Vec<Vec<u16>> = numbers
                .iter()
                .map(|v| v.iter().map(|x| if x.is_nan() { 0 } else { 1 + (x.abs() as u16) % 7 }).collect())
                .collect();
            let floats: Vec<Vec<f32>> = numbers.iter().map(|v| v.iter().map(|&x| x as f32).collect()).collect();
            let classes: Vec<Vec<u32>> = numbers.iter().map(|v| v.iter().map(|x| (x.abs() as u32) % 3).collect()).collect();
            let keys: Vec<SortKey<'_>> = seed_columns
                .iter()
                .enumerate()
                .map(|(c, (kind, _))| match kind {
                    0 | 3 | 4 => SortKey::Numbers(&numbers[c]),
                    1 => SortKey::Bins(&bins[c]),
                    2 => SortKey::Classes(&classes[c]),
                    _ => SortKey::Floats(&floats[c]),
                })
                .collect();
            prop_assert_eq!(canonical_order(&keys), compared_order(&keys));
        }
    }

    #[test]
    fn integers_rank_by_offset_and_others_by_position() {
        let ranks = |values: &[f64]| {
            let (ranks, top) = number_ranks(values);
            let ranks: Vec<u64> = (0..values.len()).map(|r| ranks.get(r)).collect();
            assert!(ranks.iter().all(|&r| r <= u64::from(top)), "{ranks:?} at most {top}");
            ranks
        };
        assert_eq!(ranks(&[3.0, f64::NAN, -2.0, 3.0]), vec![6, 0, 1, 6]);
        assert_eq!(ranks(&[0.5, f64::NAN, -2.0, 0.5, 1e300]), vec![2, 0, 1, 2, 3]);
        assert_eq!(ranks(&[-0.0, 0.0, 0.5, -0.0]), vec![1, 1, 2, 1]);
        assert_eq!(ranks(&[-0.0, 0.0, 1.0]), vec![1, 1, 2]);
        // Ranks past two bytes are held four bytes wide.
        let many: Vec<f64> = (0..70_000).map(|i| f64::from(i) + 0.5).collect();
        assert!(matches!(number_ranks(&many), (Ranks::Wide(_), 70_000)));
    }

    /// Over 128 bits of keys whose first 128 tie: the rest decides.
    #[test]
    fn keys_past_two_words_break_ties() {
        let wide: Vec<f64> = (0..40).map(|r| if r % 2 == 0 { 0.0 } else { 60000.0 }).collect();
        let last: Vec<f64> = (0..40).map(|r| f64::from((r * 7) % 40)).collect();
        let mut keys = vec![SortKey::Numbers(&wide); 8];
        keys.push(SortKey::Numbers(&last));
        let order = canonical_order(&keys);
        assert_eq!(order, compared_order(&keys));
        // Even rows first (the wide columns' 0), each half ordered by `last`.
        assert!(order[..20].iter().all(|r| r % 2 == 0));
        assert!(order[..20].windows(2).all(|w| last[w[0] as usize] < last[w[1] as usize]));

        // Columns past the head that are ranked only because rows tie: a
        // coarse one, then two that settle what it leaves tied.
        let coarse: Vec<f64> = (0..40).map(|r| f64::from(((r * 7) % 40) / 8)).collect();
        let third: Vec<f64> = (0..40).map(|r| f64::from(r % 3)).collect();
        let fine: Vec<f64> = (0..40).map(|r| f64::from((r * 13) % 40) + 0.5).collect();
        let mut keys = vec![SortKey::Numbers(&wide); 8];
        keys.extend([SortKey::Numbers(&coarse), SortKey::Numbers(&third), SortKey::Numbers(&fine)]);
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(pool.install(|| canonical_order(&keys)), compared_order(&keys), "{threads} threads");
        }
    }
}
