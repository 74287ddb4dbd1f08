//! Merging sub-forests (a cluster's `parts=N`): parts that saw different
//! classes and different categories merge into one forest whose trees
//! predict as their source trees did, in the union's class order.

use std::sync::Arc;

use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{Array, AsArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::Float64Type;

/// `n` rows whose label is one of `classes` and category one of `categories`,
/// the label decided by the number and the category (so trees split on both).
fn part(classes: &[&str], categories: &[&str], n: usize, offset: usize) -> RecordBatch {
    let x: Vec<f64> = (0..n).map(|i| ((i * 37 + offset) % 101) as f64).collect();
    let cat: Vec<&str> = (0..n).map(|i| categories[(i * 7 + offset) % categories.len()]).collect();
    let label: Vec<&str> = (0..n)
        .map(|i| {
            let c = cat[i].as_bytes()[0] as usize;
            classes[(x[i] as usize / 34 + c) % classes.len()]
        })
        .collect();
    RecordBatch::try_from_iter([
        ("x", Arc::new(Float64Array::from(x)) as _),
        ("shop", Arc::new(StringArray::from(cat)) as _),
        ("label", Arc::new(StringArray::from(label)) as _),
    ])
    .unwrap()
}

/// Probabilities as rows of `width`.
fn proba(model: &Model, batch: &RecordBatch) -> Vec<Vec<f64>> {
    let list = model.predict_proba(batch).unwrap();
    let values = list.values().as_primitive::<Float64Type>();
    let width = list.value_length() as usize;
    values.values().chunks(width).map(<[f64]>::to_vec).collect()
}

#[test]
fn parts_that_saw_other_classes_and_categories_merge_into_their_trees() {
    let trainer = || Trainer::new(TrainParams::parse_options("n_trees=4 max_depth=6 seed=3").unwrap());
    let a = trainer().fit(part(&["ant", "bee"], &["x", "y"], 600, 0)).unwrap();
    let b = trainer().fit(part(&["bee", "cat"], &["y", "z"], 600, 11)).unwrap();
    let classes = |m: &Model| m.label().classes.as_ref().unwrap().names();
    assert_eq!(classes(&a), ["ant", "bee"]);
    assert_eq!(classes(&b), ["bee", "cat"]);

    let merged = Model::merge_forests(vec![a.clone(), b.clone()], 8, 9).unwrap();
    assert_eq!(classes(&merged), ["ant", "bee", "cat"], "the union of the classes, in order");
    assert_eq!(merged.trees().len(), 8);
    assert_eq!(Model::from_bytes(&merged.to_bytes()).unwrap().to_bytes(), merged.to_bytes());

    // Every category either part saw, and one neither did.
    let mut rows = part(&["ant", "bee", "cat"], &["x", "y", "z", "w"], 400, 5);
    rows = rows.project(&[0, 1]).unwrap();
    let (pa, pb, pm) = (proba(&a, &rows), proba(&b, &rows), proba(&merged, &rows));
    for ((pa, pb), pm) in pa.iter().zip(&pb).zip(&pm) {
        // Four trees from each part, equal rows: the merged vote is the mean
        // of the parts' votes, each moved to the union's class positions.
        let want = [pa[0] / 2.0, (pa[1] + pb[0]) / 2.0, pb[1] / 2.0];
        for (w, m) in want.iter().zip(pm) {
            assert!((w - m).abs() < 1e-12, "merged {pm:?}, parts {pa:?} and {pb:?}");
        }
    }
    let predicted = merged.predict(&rows).unwrap();
    assert_eq!(predicted.as_string::<i32>().len(), rows.num_rows());
    assert!(predicted.null_count() == 0);
}
