//! The random splitter of extra trees (docs/algorithms.md, "Random splitter"):
//! one random threshold per feature instead of the best one.

use arbor_quantize::{BinColumn, BinMapper};

use crate::histogram::target::HistogramTarget;
use crate::split::candidate::{SplitCandidate, SplitConstraints};
use crate::split::criterion::{child_size, Criterion};
use crate::split::rule::SplitRule;
use crate::split::scan::{add, Scan};

/// What the random splitter found on one feature of a node.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomSplit {
    /// The feature has one value (or only missing values) in the node: it
    /// cannot split it, and does not count as a feature tried.
    Constant,
    /// The random split, or `None` when it breaks a constraint.
    Tried(Option<SplitCandidate>),
}

/// The rows of a node and what they carry, as the random splitter reads them.
#[derive(Clone, Copy)]
pub struct NodeRows<'a> {
    /// Row ids of the node.
    pub rows: &'a [u32],
    /// Weight per row id (sample weight times multiplicity).
    pub weights: &'a [f64],
    /// Multiplicity per row id.
    pub counts: &'a [f64],
    /// What is predicted.
    pub target: &'a HistogramTarget<'a>,
}

/// Draws one random split of a feature over a node's rows and scores it.
///
/// Numeric features draw a threshold uniformly between the upper edge of the
/// lowest bin the node occupies and the lower edge of its highest (the node's
/// range, rounded down to a bin edge); missing values go to whichever side
/// scores better. Categorical features send each category the node holds
/// left or right with equal odds (never all to one side). `uniform` draws from `[0, 1)`.
pub fn random_split(
    column: &BinColumn,
    mapper: &BinMapper,
    node: NodeRows<'_>,
    criterion: Criterion,
    constraints: &SplitConstraints,
    uniform: &mut dyn FnMut() -> f64,
) -> RandomSplit {
    let n_bins = mapper.n_bins();
    let (mut low, mut high, mut has_missing) = (usize::MAX, 0usize, false);
    let mut present = if mapper.is_categorical() { vec![false; n_bins] } else { Vec::new() };
    for &r in node.rows {
        let b = column.get(r as usize) as usize;
        if b == 0 {
            has_missing = true;
            continue;
        }
        low = low.min(b);
        high = high.max(b);
        if let Some(p) = present.get_mut(b) {
            *p = true;
        }
    }
    if low == usize::MAX || low == high && !has_missing {
        return RandomSplit::Constant;
    }

    // Which value bins go left: a categorical subset, or bins up to `split`
    // (no per-bin flags for numeric features, whose bins may number 65,535).
    let mut subset = Vec::new();
    let split = if mapper.is_categorical() {
        let held: Vec<usize> = (1..n_bins).filter(|&b| present[b]).collect();
        subset = vec![false; n_bins];
        for &b in &held {
            subset[b] = uniform() < 0.5;
        }
        if held.len() >= 2 && held.iter().all(|&b| subset[b] == subset[held[0]]) {
            let flip = held[((uniform() * held.len() as f64) as usize).min(held.len() - 1)];
            subset[flip] = !subset[flip];
        }
        if held.len() == 1 {
            subset[held[0]] = true; // only "this category or missing" can split
        }
        0
    } else if low == high {
        high // the only split: values left, missing right
    } else {
        let (lo, hi) = (mapper.threshold(low as u16), mapper.threshold((high - 1) as u16));
        let u = lo + uniform() * (hi - lo);
        // The last bin in low..high whose upper edge is at most u.
        let (mut a, mut z) = (low, high - 1);
        while a < z {
            let mid = (a + z).div_ceil(2);
            if mapper.threshold(mid as u16) <= u {
                a = mid;
            } else {
                z = mid - 1;
            }
        }
        a
    };
    let goes_left = |b: usize| if subset.is_empty() { b <= split } else { subset[b] };

    let stride = node.target.stride();
    let (mut left, mut missing, mut total) = (vec![0.0; stride], vec![0.0; stride], vec![0.0; stride]);
    for &r in node.rows {
        let b = column.get(r as usize) as usize;
        let cell = if b == 0 {
            &mut missing
        } else if goes_left(b) {
            &mut left
        } else {
            &mut total
        };
        node.target.add_row(cell, r as usize, node.weights, node.counts);
    }
    add(&mut total, &left);
    add(&mut total, &missing);

    let mut scan = Scan::<Vec<f64>>::new(criterion, constraints, &total);
    scan.consider(&left, &total);
    let mut missing_left = false;
    if has_missing {
        add(&mut left, &missing);
        missing_left = scan.consider(&left, &total);
        if !missing_left {
            for (l, m) in left.iter_mut().zip(&missing) {
                *l -= m;
            }
        }
    }
    // Without missing values in the node, they (and unseen categories) follow the larger child.
    let n_left = child_size(&left, criterion);
    let larger_left = n_left >= child_size(&total, criterion) - n_left;
    if !has_missing {
        missing_left = larger_left;
    }
    let rule = if mapper.is_categorical() {
        let goes_left = (0..n_bins)
            .map(|b| match b {
                0 => missing_left,
                _ if present[b] => subset[b],
                _ => larger_left,
            })
            .collect();
        SplitRule::Categories { goes_left }
    } else {
        SplitRule::Threshold { bin: split as u16, missing_left }
    };
    RandomSplit::Tried(scan.finish(rule, &total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(values: &[f64]) -> impl FnMut() -> f64 + '_ {
        let mut i = 0;
        move || {
            i += 1;
            values[(i - 1) % values.len()]
        }
    }

    #[test]
    fn thresholds_stay_inside_the_nodes_range() {
        // edges 1.5, 2.5, ..., 8.5: bins 1..=9 hold values 1..=9
        let mapper = BinMapper::Numeric { edges: (1..9).map(|v| v as f64 + 0.5).collect() };
        let column = BinColumn::U8(vec![3, 4, 5, 6, 7]);
        let labels = [0, 0, 1, 1, 1];
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
        let ones = [1.0; 5];
        let node = NodeRows { rows: &[0, 1, 2, 3, 4], weights: &ones, counts: &ones, target: &target };
        for (u, bin) in [(0.0, 3), (0.34, 4), (0.99, 5)] {
            let split =
                random_split(&column, &mapper, node, Criterion::Gini, &SplitConstraints::default(), &mut draws(&[u]));
            let RandomSplit::Tried(Some(s)) = split else { panic!("a split was expected for u = {u}") };
            assert!(matches!(s.rule, SplitRule::Threshold { bin: b, .. } if b == bin), "u = {u}: {:?}", s.rule);
            let n_left = (bin - 2) as f64;
            assert_eq!((s.left[2], s.right[2]), (n_left, 5.0 - n_left));
        }
    }

    #[test]
    fn a_single_value_is_constant() {
        let mapper = BinMapper::Numeric { edges: vec![1.5] };
        let column = BinColumn::U8(vec![2, 2, 2]);
        let y = [1.0, 2.0, 3.0];
        let target = HistogramTarget::Values { y: &y };
        let ones = [1.0; 3];
        let node = NodeRows { rows: &[0, 1, 2], weights: &ones, counts: &ones, target: &target };
        let split = random_split(&column, &mapper, node, Criterion::Mse, &SplitConstraints::default(), &mut || 0.5);
        assert_eq!(split, RandomSplit::Constant);
    }

    #[test]
    fn missing_values_take_the_better_side() {
        let mapper = BinMapper::Numeric { edges: vec![1.5] };
        let column = BinColumn::U8(vec![0, 0, 1, 1, 2, 2]);
        let y = [10.0, 10.0, 0.0, 0.0, 10.0, 10.0];
        let target = HistogramTarget::Values { y: &y };
        let ones = [1.0; 6];
        let node = NodeRows { rows: &[0, 1, 2, 3, 4, 5], weights: &ones, counts: &ones, target: &target };
        let split = random_split(&column, &mapper, node, Criterion::Mse, &SplitConstraints::default(), &mut || 0.5);
        let RandomSplit::Tried(Some(s)) = split else { panic!("a split was expected") };
        assert_eq!(s.rule, SplitRule::Threshold { bin: 1, missing_left: false });
        assert!((s.gain - 133.333_333_333).abs() < 1e-6, "{}", s.gain);
    }

    #[test]
    fn categories_never_all_go_one_way() {
        let mapper = BinMapper::categorical(vec!["a".into(), "b".into(), "c".into(), "d".into()]);
        let column = BinColumn::U8(vec![1, 2, 3, 1, 2, 3]);
        let labels = [0, 1, 0, 0, 1, 0];
        let target = HistogramTarget::Classes { labels: &labels, n_classes: 2 };
        let ones = [1.0; 6];
        let node = NodeRows { rows: &[0, 1, 2, 3, 4, 5], weights: &ones, counts: &ones, target: &target };
        // every coin says "left": one category is flipped right
        let split = random_split(
            &column,
            &mapper,
            node,
            Criterion::Gini,
            &SplitConstraints::default(),
            &mut draws(&[0.1, 0.1, 0.1, 0.5]),
        );
        let RandomSplit::Tried(Some(s)) = split else { panic!("a split was expected") };
        let SplitRule::Categories { goes_left } = s.rule else { panic!("categorical rule expected") };
        assert_eq!(&goes_left[1..4], &[true, false, true], "the coin at 0.5 picks the middle category");
        assert!(goes_left[4], "category d is not in the node: it follows the larger child");
    }
}
