//! Every kernel gives the scalar kernel's answer, bit for bit, at every SIMD
//! level this CPU runs: histograms (column- and row-wise), split scans,
//! partitions and tree traversal, on random inputs with odd lengths and tails.

use arbor_kernels::dispatch::{with_simd_level, SimdLevel};
use arbor_kernels::{
    best_split, build_histogram, build_histogram_packed, build_row_histograms, count_keys, leaves_block,
    partition_records, partition_rows, CompactHistogram, Criterion, FlatNode, HistogramTarget, RecordSums, RowBins,
    RowStats, SplitConstraints, SplitRule, TreeNodes, LEVEL_BY_LEVEL_MAX_DEPTH,
};
use arbor_quantize::{BinColumn, BinnedMatrix, FeatureColumn, QuantizeParams};
use proptest::prelude::*;

/// `f` at every available SIMD level besides scalar, each equal to its scalar
/// run; returns the scalar run's result.
fn same_at_every_level<R: PartialEq + std::fmt::Debug>(f: impl Fn() -> R) -> Result<R, TestCaseError> {
    let scalar = with_simd_level(SimdLevel::Scalar, &f).expect("scalar always runs");
    for simd_level in SimdLevel::available().into_iter().filter(|&l| l != SimdLevel::Scalar) {
        let simd = with_simd_level(simd_level, &f).expect("listed as available");
        prop_assert_eq!(&simd, &scalar, "SIMD level {}", simd_level);
    }
    Ok(scalar)
}

/// Bit patterns, so that -0.0 and 0.0 (or two NaNs) are not confused.
fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn criterion() -> impl Strategy<Value = Criterion> {
    prop_oneof![
        Just(Criterion::Gini),
        Just(Criterion::Entropy),
        Just(Criterion::Mse),
        Just(Criterion::Poisson),
        (0.0..2.0f64).prop_map(|lambda| Criterion::Newton { lambda }),
    ]
}

/// Rows of a node: a strictly increasing subset of `0..n` (odd lengths included).
fn node_rows(n: usize, keep: &[bool]) -> Vec<u32> {
    (0..n as u32).filter(|&r| keep[r as usize % keep.len()]).collect()
}

/// One node's worth of histogram input drawn by the proptests below: `cells`
/// are (bin, class, value, weight) per row.
struct HistogramInput {
    column: BinColumn,
    labels: Vec<u32>,
    y: Vec<f64>,
    w: Vec<f64>,
    n_classes: usize,
}

impl HistogramInput {
    /// Bins taken modulo `n_bins` (wide columns when asked or needed), classes modulo `n_classes`.
    fn new(cells: &[(u16, u32, f64, f64)], n_bins: usize, n_classes: usize, wide: bool) -> HistogramInput {
        let bins: Vec<u16> = cells.iter().map(|c| c.0 % n_bins as u16).collect();
        let column = if wide || n_bins > 256 {
            BinColumn::U16(bins)
        } else {
            BinColumn::U8(bins.iter().map(|&b| b as u8).collect())
        };
        HistogramInput {
            column,
            labels: cells.iter().map(|c| c.1 % n_classes as u32).collect(),
            y: cells.iter().map(|c| c.2).collect(),
            w: cells.iter().map(|c| c.3).collect(),
            n_classes,
        }
    }

    /// The target a criterion trains on: classes, values, or gradients (values) and hessians (weights).
    fn target(&self, criterion: Criterion) -> HistogramTarget<'_> {
        match criterion {
            Criterion::Gini | Criterion::Entropy => {
                HistogramTarget::Classes { labels: &self.labels, n_classes: self.n_classes }
            }
            Criterion::Mse | Criterion::Poisson => HistogramTarget::Values { y: &self.y },
            Criterion::Newton { .. } => HistogramTarget::Gradients { grad: &self.y, hess: &self.w },
        }
    }
}

proptest! {
    /// Packed row statistics (one four-lane add per row, or boosting's
    /// packed target) give the histograms of the per-array kernels to the
    /// bit, dense and compact, at every SIMD level.
    #[test]
    fn packed_histograms_equal_unpacked_ones(
        cells in proptest::collection::vec((0u16..300, 0u32..3, -5.0..5.0f64, 0.0..3.0f64), 1..400),
        n_bins in 2usize..300,
        n_classes in 2usize..4,
        keep in proptest::collection::vec(any::<bool>(), 1..9),
        criterion in criterion(),
        wide: bool,
    ) {
        let n = cells.len();
        let input = HistogramInput::new(&cells, n_bins, n_classes, wide);
        let (column, w) = (&input.column, &input.w);
        let counts: Vec<f64> = cells.iter().map(|c| c.3.floor()).collect();
        let target = input.target(criterion);
        let stride = target.stride();
        let stats: Vec<RowStats> = (0..n).map(|r| target.row_stats(r, w, &counts).expect("at most three classes")).collect();
        let rows = node_rows(n, &keep);
        let mut expected = vec![0.0; n_bins * stride];
        build_histogram(column, &rows, w, &counts, &target, &mut expected);
        let mut compact = CompactHistogram::default();
        compact.build(column, &rows, w, &counts, &target);
        let packed = same_at_every_level(|| {
            let mut hist = vec![f64::NAN; n_bins * stride];
            build_histogram_packed(column, &rows, &stats, &mut Vec::new(), &mut hist, stride);
            bits(&hist)
        })?;
        prop_assert_eq!(packed, bits(&expected));
        let mut compact_packed = CompactHistogram::default();
        for _ in 0..2 { // a second build starts from the buffers the first left
            compact_packed.build_packed(column, &rows, &stats, stride);
        }
        prop_assert_eq!(compact_packed.bins(), compact.bins());
        prop_assert_eq!(bits(compact_packed.hist()), bits(compact.hist()));
        // Boosting's packed target reads the same statistics from the packed rows.
        if matches!(criterion, Criterion::Newton { .. }) {
            let target = HistogramTarget::Packed { stats: &stats };
            let dense = same_at_every_level(|| {
                let mut hist = vec![0.0; n_bins * stride];
                build_histogram(column, &rows, w, &counts, &target, &mut hist);
                bits(&hist)
            })?;
            prop_assert_eq!(dense, bits(&expected));
            let mut compact_target = CompactHistogram::default();
            compact_target.build(column, &rows, w, &counts, &target);
            prop_assert_eq!(compact_target.bins(), compact.bins());
            prop_assert_eq!(bits(compact_target.hist()), bits(compact.hist()));
        }
    }

    /// Integer class counts give the compact histograms of the weighted
    /// kernel to the bit, from few rows or many, at every SIMD level, and leave
    /// their buffers clean for the next build.
    #[test]
    fn count_histograms_equal_weighted_ones(
        cells in proptest::collection::vec((0u16..300, 0u32..6, -5.0..5.0f64, 1.0..5.0f64), 1..400),
        n_bins in 2usize..300,
        n_classes in 1usize..7,
        keep in proptest::collection::vec(any::<bool>(), 1..9),
        wide: bool,
    ) {
        let n = cells.len();
        let input = HistogramInput::new(&cells, n_bins, n_classes, wide);
        let counts: Vec<f64> = input.w.iter().map(|w| w.floor()).collect();
        let target = input.target(Criterion::Gini);
        let all: Vec<u32> = (0..n as u32).collect();
        let keys = count_keys(&target, &all, &counts, &counts).expect("whole counts, unit sample weights");
        let rows = node_rows(n, &keep);
        let mut expected = CompactHistogram::default();
        expected.build(&input.column, &rows, &counts, &counts, &target);
        let found = same_at_every_level(|| {
            let mut compact = CompactHistogram::default();
            compact.build_counts(&input.column, &all, &keys, n_classes, n_bins);
            compact.build_counts(&input.column, &rows, &keys, n_classes, n_bins);
            (compact.bins().to_vec(), bits(compact.hist()))
        })?;
        prop_assert_eq!(found, (expected.bins().to_vec(), bits(expected.hist())));
    }

    /// A node's rows as records (bins and key read in order) give the
    /// histograms and partitions of the same rows read by row id, at every SIMD level.
    #[test]
    fn records_match_rows(
        cells in proptest::collection::vec((0u16..256, 0u32..4, -5.0..5.0f64, 1.0..4.0f64), 1..400),
        n_bins in 2usize..257,
        n_classes in 1usize..5,
        keep in proptest::collection::vec(any::<bool>(), 1..9),
        goes_left in proptest::collection::vec(any::<bool>(), 256),
        threshold in proptest::option::of((0u16..257, any::<bool>())),
        width in prop_oneof![Just(8usize), Just(16), Just(32), Just(64)],
    ) {
        let n = cells.len();
        let input = HistogramInput::new(&cells, n_bins, n_classes, false);
        let counts: Vec<f64> = input.w.iter().map(|w| w.floor()).collect();
        let target = input.target(Criterion::Gini);
        let rows = node_rows(n, &keep);
        let keys = count_keys(&target, &rows, &counts, &counts).expect("whole counts, unit sample weights");
        // The bin at byte 3, other features' bytes as noise, the key last.
        let f = 3;
        let records: Vec<u8> = rows
            .iter()
            .flat_map(|&r| {
                let mut record = vec![r as u8; width];
                record[f] = input.column.get(r as usize) as u8;
                record[width - 4..].copy_from_slice(&keys[r as usize].to_le_bytes());
                record
            })
            .collect();
        let mut expected = CompactHistogram::default();
        expected.build_counts(&input.column, &rows, &keys, n_classes, n_bins);
        let found = same_at_every_level(|| {
            let mut compact = CompactHistogram::default();
            compact.build_counts_records(&records, width, f, n_classes, n_bins);
            (compact.bins().to_vec(), bits(compact.hist()))
        })?;
        prop_assert_eq!(found, (expected.bins().to_vec(), bits(expected.hist())));

        let rule = match threshold {
            Some((bin, missing_left)) => SplitRule::Threshold { bin, missing_left },
            None => SplitRule::Categories { goes_left },
        };
        let mut by_rows = rows.clone();
        let n_left = partition_rows(&mut by_rows, &input.column, &rule, &mut vec![0; rows.len()]);
        let (moved_left, moved) = same_at_every_level(|| {
            let mut moved = records.clone();
            (partition_records(&mut moved, width, f, &rule), moved)
        })?;
        prop_assert_eq!(moved_left, n_left);
        // Each side holds the records of the rows that went there, in some order.
        let sorted = |records: &[u8]| {
            let mut side: Vec<Vec<u8>> = records.chunks_exact(width).map(<[u8]>::to_vec).collect();
            side.sort_unstable();
            side
        };
        let position: std::collections::HashMap<u32, usize> =
            rows.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let by_rows: Vec<u8> =
            by_rows.iter().flat_map(|r| &records[position[r] * width..(position[r] + 1) * width]).copied().collect();
        prop_assert_eq!(sorted(&moved[..n_left * width]), sorted(&by_rows[..n_left * width]));
        prop_assert_eq!(sorted(&moved[n_left * width..]), sorted(&by_rows[n_left * width..]));
    }

    /// Several features' sums from one pass over the records, compacted,
    /// equal each feature's own build, twice over the same buffers.
    #[test]
    fn fused_record_sums_match_feature_by_feature(
        cells in proptest::collection::vec((any::<[u8; 7]>(), 0u32..4, 1u32..4), 1..300),
        bins in proptest::collection::vec(1usize..257, 7),
        n_features in 1usize..8,
        n_classes in 1usize..5,
        width in prop_oneof![Just(8usize), Just(16), Just(32), Just(64)],
    ) {
        let k = n_features.min(width - 4);
        // Features at bytes k-1, …, 0 (reversed, so not in record order).
        let features: Vec<usize> = (0..k).rev().collect();
        let n_bins: Vec<usize> = features.iter().map(|&f| bins[f]).collect();
        let records: Vec<u8> = cells
            .iter()
            .flat_map(|(bytes, class, count)| {
                let mut record = vec![0xA5; width];
                for &f in &features {
                    record[f] = (usize::from(bytes[f]) % bins[f]) as u8;
                }
                let key = (count << 8) | (class % n_classes as u32);
                record[width - 4..].copy_from_slice(&key.to_le_bytes());
                record
            })
            .collect();
        let expected: Vec<_> = features
            .iter()
            .zip(&n_bins)
            .map(|(&f, &n)| {
                let mut compact = CompactHistogram::default();
                compact.build_counts_records(&records, width, f, n_classes, n);
                (compact.bins().to_vec(), bits(compact.hist()))
            })
            .collect();
        let found = same_at_every_level(|| {
            let (mut sums, mut compact) = (RecordSums::default(), CompactHistogram::default());
            let mut found = Vec::new();
            for _ in 0..2 {
                sums.fill(&records, width, &features, &n_bins, n_classes);
                found = (0..k)
                    .map(|i| {
                        compact.take_counts(sums.feature(i), n_classes);
                        (compact.bins().to_vec(), bits(compact.hist()))
                    })
                    .collect();
            }
            found
        })?;
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn histograms_and_split_scans_match_scalar(
        cells in proptest::collection::vec((0u16..300, 0u32..5, -5.0..5.0f64, 0.0..3.0f64), 1..400),
        n_bins in 2usize..300,
        n_classes in 2usize..5,
        keep in proptest::collection::vec(any::<bool>(), 1..9),
        criterion in criterion(),
        categorical: bool,
        wide: bool,
    ) {
        let n = cells.len();
        let input = HistogramInput::new(&cells, n_bins, n_classes, wide);
        let (column, w) = (&input.column, &input.w);
        let target = input.target(criterion);
        let stride = target.stride();
        let rows = node_rows(n, &keep);
        let constraints = SplitConstraints { min_samples_leaf: 1.0, ..SplitConstraints::default() };
        same_at_every_level(|| {
            let mut hist = vec![0.0; n_bins * stride];
            build_histogram(column, &rows, w, w, &target, &mut hist);
            let split = best_split(&hist, stride, criterion, &constraints, categorical);
            (bits(&hist), split.map(|s| (s.gain.to_bits(), s.rule, bits(&s.left), bits(&s.right))))
        })?;
    }

    #[test]
    fn row_histograms_match_scalar(
        // Up to 1,500 rows: nodes of 512 rows or more take the wide-bin path.
        values in proptest::collection::vec(proptest::collection::vec(-3.0..3.0f64, 5), 1..1500),
        features in 0usize..5,
        keep in proptest::collection::vec(any::<bool>(), 1..9),
    ) {
        let columns: Vec<FeatureColumn> =
            (0..5).map(|f| FeatureColumn::Numeric(values.iter().map(|row| row[f]).collect::<Vec<f64>>().into())).collect();
        let matrix = BinnedMatrix::fit(&columns, &QuantizeParams::default());
        let bins = RowBins::new(&matrix).expect("default quantization fits a byte");
        let stats: Vec<RowStats> = values.iter().map(|row| [1.0, row[0] * row[1], row[2].abs(), 0.0]).collect();
        let rows = node_rows(values.len(), &keep);
        let range = features..5;
        let len = (bins.offsets()[5] - bins.offsets()[features]) as usize * 3;
        let rowwise = same_at_every_level(|| {
            let mut hist = vec![0.0; len];
            build_row_histograms(&bins, &rows, &stats, range.clone(), &mut hist);
            bits(&hist)
        })?;
        // The column-wise kernel, feature by feature, gives the same bits.
        let grad: Vec<f64> = stats.iter().map(|s| s[1]).collect();
        let hess: Vec<f64> = stats.iter().map(|s| s[2]).collect();
        let ones = vec![1.0; values.len()];
        let target = HistogramTarget::Gradients { grad: &grad, hess: &hess };
        let mut columnwise = Vec::with_capacity(len);
        for f in range {
            let mut hist = vec![0.0; matrix.mapper(f).n_bins() * 3];
            build_histogram(matrix.column(f), &rows, &ones, &ones, &target, &mut hist);
            columnwise.extend(bits(&hist));
        }
        prop_assert_eq!(rowwise, columnwise);
    }

    #[test]
    fn partitions_match_scalar(
        bins in proptest::collection::vec(0u8..40, 1..500),
        goes_left in proptest::collection::vec(any::<bool>(), 40),
        threshold in proptest::option::of((0u16..41, any::<bool>())),
        keep in proptest::collection::vec(any::<bool>(), 1..9),
    ) {
        let rule = match threshold {
            Some((bin, missing_left)) => SplitRule::Threshold { bin, missing_left },
            None => SplitRule::Categories { goes_left },
        };
        let rows = node_rows(bins.len(), &keep);
        let column = BinColumn::U8(bins);
        same_at_every_level(|| {
            let mut rows = rows.clone();
            let n_left = { let mut scratch = vec![0; rows.len()]; partition_rows(&mut rows, &column, &rule, &mut scratch) };
            (n_left, rows)
        })?;
    }

    #[test]
    fn traversals_match_scalar(
        thresholds in proptest::collection::vec((0u32..3, -2.0..2.0f64, any::<bool>(), any::<bool>()), 1..60),
        set: u64,
        row_by_row: bool,
        rows in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![-3.0..3.0f64, 0.0..70.0, Just(f64::NAN)], 3), 1..150),
    ) {
        // A complete tree: node i's children are 2i+1 and 2i+2, leaves past the splits.
        let n_splits = thresholds.len();
        let mut nodes: Vec<FlatNode> = thresholds
            .iter()
            .map(|&(f, t, left, categories)| {
                if categories { FlatNode::categories(f, 0, 1, left, 0) } else { FlatNode::split(f, t, left, 0) }
            })
            .collect();
        for (i, node) in nodes.iter_mut().enumerate() {
            node.next = 2 * i as u32 + 1;
        }
        let n_nodes = 2 * n_splits + 1;
        nodes.extend((n_splits..n_nodes).map(|i| FlatNode::leaf(i as u32, i as u32 * 2)));
        let depth = (usize::BITS - n_nodes.leading_zeros()) as usize;
        // past this depth the walk goes row by row
        let depth = if row_by_row { LEVEL_BY_LEVEL_MAX_DEPTH + 1 } else { depth };
        let sets = [set];
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        let missing = flat.iter().any(|x| x.is_nan());
        let none: Option<&fn(u32, f64) -> bool> = None;
        same_at_every_level(|| {
            let mut leaves = vec![0u32; rows.len()];
            leaves_block(TreeNodes { nodes: &nodes, depth, sets: Some(&sets) }, &flat, 3, missing, none, &mut leaves);
            leaves
        })?;
    }
}

#[test]
fn the_levels_compared_are_reported() {
    let levels: Vec<&str> = SimdLevel::available().iter().map(|l| l.name()).collect();
    println!("SIMD levels compared with scalar on this CPU: {levels:?} (best: {})", SimdLevel::best());
    assert!(levels.contains(&"scalar"));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        assert!(levels.contains(&"avx2"), "an AVX2/FMA CPU runs the avx2 SIMD level");
    }
}
