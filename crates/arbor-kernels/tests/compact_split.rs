//! The compact histogram path (small nodes) finds exactly the split the dense
//! path finds, on random columns with missing values, for every criterion;
//! a search above a floor finds the same split or, below the floor, none.

use arbor_kernels::{
    best_split, best_split_above, build_histogram, count_weight, CompactHistogram, Criterion, HistogramTarget,
    SplitConstraints,
};
use arbor_quantize::BinColumn;
use proptest::prelude::*;

fn check(bins: Vec<u8>, labels: Vec<u32>, weights: Vec<f64>, n_bins: usize, categorical: bool, criterion: Criterion) {
    let n = bins.len();
    let bins: Vec<u8> = bins.into_iter().map(|b| b % n_bins as u8).collect();
    let column = BinColumn::U8(bins);
    let y: Vec<f64> = labels.iter().map(|&l| f64::from(l) * 1.5 - 2.0).collect();
    let classes: Vec<u32> = labels.iter().map(|l| l % 3).collect();
    let target = match criterion {
        Criterion::Gini | Criterion::Entropy => HistogramTarget::Classes { labels: &classes, n_classes: 3 },
        Criterion::Mse | Criterion::Poisson => HistogramTarget::Values { y: &y },
        Criterion::Newton { .. } => HistogramTarget::Gradients { grad: &y, hess: &weights },
    };
    let stride = target.stride();
    let rows: Vec<u32> = (0..n as u32).filter(|r| r % 4 != 1).collect();
    let constraints = SplitConstraints { min_samples_leaf: 2.0, ..SplitConstraints::default() };

    let mut dense = vec![0.0; n_bins * stride];
    build_histogram(&column, &rows, &weights, &weights, &target, &mut dense);
    let expected = best_split(&dense, stride, criterion, &constraints, categorical);
    // Above a floor: the same split when its gain passes the floor, none otherwise.
    let gain = expected.as_ref().map_or(0.0, |s| s.gain);
    for floor in [f64::NEG_INFINITY, gain - 1e-9 * (1.0 + gain.abs()), gain, gain + 1.0] {
        let above = best_split_above(&dense, stride, criterion, &constraints, categorical, floor);
        assert_eq!(above, expected.clone().filter(|s| s.gain > floor), "floor {floor}");
    }

    let mut compact = CompactHistogram::default();
    compact.build(&column, &rows, &weights, &weights, &target);
    let found = best_split(compact.hist(), stride, criterion, &constraints, categorical).map(|mut s| {
        let unseen_left = count_weight(&s.left, criterion).0 >= count_weight(&s.right, criterion).0;
        s.rule = s.rule.expand(compact.bins(), n_bins, unseen_left);
        s
    });
    assert_eq!(found, expected);
}

fn criterion() -> impl Strategy<Value = Criterion> {
    prop_oneof![
        Just(Criterion::Gini),
        Just(Criterion::Entropy),
        Just(Criterion::Mse),
        Just(Criterion::Poisson),
        Just(Criterion::Newton { lambda: 1.0 })
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn compact_and_dense_splits_agree(
        (bins, labels, weights) in (1usize..60).prop_flat_map(|n| (
            proptest::collection::vec(any::<u8>(), n),
            proptest::collection::vec(0u32..7, n),
            proptest::collection::vec((1u8..4).prop_map(f64::from), n),
        )),
        n_bins in 2usize..200,
        categorical in any::<bool>(),
        criterion in criterion(),
    ) {
        check(bins, labels, weights, n_bins, categorical, criterion);
    }
}
