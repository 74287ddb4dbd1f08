//! Explanations: imported XGBoost and LightGBM models give their library's
//! own contributions (`tests/interop/make_contrib_fixtures.py` wrote them),
//! arbor's own models' contributions add up to their raw scores, node
//! covers round-trip, and models from before covers are refused by name.

mod common;

use arbor_ensemble::{Model, Node, Voting};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;

/// Every row's list of `column` in a fixture file.
fn lists(file: &str, column: &str) -> Vec<Vec<f64>> {
    let batch = common::read_file(&common::interop_path(file));
    let lists = batch.column_by_name(column).unwrap().as_list::<i32>();
    (0..lists.len()).map(|r| lists.value(r).as_primitive::<Float64Type>().values().to_vec()).collect()
}

fn imported(file: &str) -> Model {
    let path = common::interop_path(file);
    if file.ends_with(".json") {
        Model::from_xgboost_json(&std::fs::read(path).unwrap()).unwrap()
    } else {
        Model::from_lightgbm_text(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

#[test]
fn imported_models_explain_rows_as_their_library_does() {
    let cases = [
        ("xgb_reg.json", "diamonds"),
        ("xgb_binary.json", "flights"),
        ("xgb_softprob.json", "digits"),
        ("xgb_softmax.json", "digits"),
        ("lgb_reg.txt", "diamonds"),
        ("lgb_reg_zero.txt", "diamonds"),
        ("lgb_binary.txt", "flights"),
        ("lgb_multiclass.txt", "digits"),
        ("lgb_pandas.txt", "flights"),
    ];
    for (file, case) in cases {
        let model = imported(file);
        let rows = common::read_file(&common::interop_path(&format!("{case}_rows.parquet")));
        let got = model.contributions(&rows).unwrap();
        let stem = file.split('.').next().unwrap();
        let want = lists(&format!("{stem}_contribs.parquet"), "contribs");
        assert_eq!(got.n_rows(), want.len(), "{file}");
        let mut worst = 0.0f64;
        for (r, want) in want.iter().enumerate() {
            assert_eq!(got.row(r).len(), want.len(), "{file}: values per row");
            for (i, (g, w)) in got.row(r).iter().zip(want).enumerate() {
                let d = (g - w).abs() / w.abs().max(1.0);
                assert!(d <= 1e-5, "{file}: row {r}, value {i}: {g} against the library's {w}");
                worst = worst.max(d);
            }
        }
        // XGBoost computes in 32-bit floats, LightGBM in 64.
        eprintln!("{file}: worst difference {worst:.1e}");
    }
}

/// Each output's raw score by walking the node lists: the base score plus
/// the trees (boosting), or the trees' mean (forests: the second class's
/// probability of two, every class's of more).
fn raw_scores(model: &Model, batch: &RecordBatch) -> Vec<Vec<f64>> {
    let columns: Vec<Vec<f64>> = model
        .features()
        .iter()
        .map(|f| f.mapper.raw_values(&f.name, batch.column_by_name(&f.name).unwrap()).unwrap())
        .collect();
    let outputs = model.contribution_outputs();
    let trees = model.trees();
    (0..batch.num_rows())
        .map(|r| {
            let mut raw = match model.boosting() {
                Some(b) => b.base_score.clone(),
                None => vec![0.0; outputs],
            };
            for (t, tree) in trees.iter().enumerate() {
                let leaf = tree.leaf(|f| columns[f][r]);
                match model.boosting() {
                    Some(b) => raw[t % b.outputs] += tree.values[leaf],
                    None => {
                        let classes = model.class_names().len();
                        let mut values = tree.values[leaf..leaf + classes.max(1)].to_vec();
                        if model.voting() == Voting::Unweighted && classes > 0 {
                            // A vote for the most probable class (the first on ties).
                            let best = (0..classes).fold(0, |b, c| if values[c] > values[b] { c } else { b });
                            values = (0..classes).map(|c| f64::from(u8::from(c == best))).collect();
                        }
                        let skip = usize::from(classes == 2);
                        raw.iter_mut().enumerate().for_each(|(k, v)| *v += values[skip + k]);
                    }
                }
            }
            if model.boosting().is_none() {
                raw.iter_mut().for_each(|v| *v /= trees.len() as f64);
            }
            raw
        })
        .collect()
}

#[test]
fn contributions_add_up_to_every_models_raw_score() {
    let cases = [
        ("flights_cls", "algorithm=gradient-boosting n_rounds=20"),
        // Early stopping drops the rounds after the best one, and their covers with them.
        ("flights_cls", "algorithm=gradient-boosting n_rounds=60 learning_rate=0.9 early_stopping_rounds=2"),
        ("diamonds_reg", "algorithm=gradient-boosting n_rounds=20"),
        ("digits_cls", "algorithm=gradient-boosting n_rounds=4"),
        ("cancer_cls", "n_trees=10"),
        ("digits_cls", "n_trees=5 max_depth=8"),
        ("digits_cls", "n_trees=5 max_depth=6 splitter=random voting=unweighted"),
        ("diamonds_reg", "n_trees=5 max_depth=8"),
        // Leaves of medians: the covers weigh them as any leaves.
        ("diamonds_reg", "n_trees=3 max_depth=8 criterion=absolute_error"),
        ("flights_cls", "n_trees=5 max_depth=8"),
    ];
    for (set, options) in cases {
        let train = common::read(&format!("{set}_train.parquet"), 20_000);
        let test = common::read(&format!("{set}_test.parquet"), 300);
        let model = common::fit(&train, options);
        if let Some(stopped) = model.boosting().and_then(|b| b.early_stopping.as_ref()) {
            assert!(stopped.best_round < 60, "{options}: stopped early");
            assert_eq!(model.node_cover().unwrap().len(), model.trees().len());
        }
        let got = model.contributions(&test).unwrap();
        let raw = raw_scores(&model, &test);
        // The reference walk is the model's own scoring where no link intervenes.
        if model.boosting().is_none() || model.class_names().is_empty() {
            let p = model.score(&test).unwrap();
            let k = usize::from(model.class_names().len() == 2);
            for (r, raw) in raw.iter().enumerate() {
                let want = &p.row(r)[k..k + raw.len()];
                let close = raw.iter().zip(want).all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs().max(1.0));
                assert!(close, "{set} {options}: row {r}: reference {raw:?}, scored {want:?}");
            }
        }
        let stride = model.features().len() + 1;
        for (r, raw) in raw.iter().enumerate() {
            for (k, block) in got.row(r).chunks_exact(stride).enumerate() {
                let sum: f64 = block.iter().sum();
                let d = (sum - raw[k]).abs() / raw[k].abs().max(1.0);
                assert!(d <= 1e-9, "{set} {options}: row {r}, output {k}: contributions sum to {sum}, raw {}", raw[k]);
            }
        }
        // Something is explained: the features do not all contribute nothing.
        assert!(got.values().chunks_exact(stride).any(|b| b[..stride - 1].iter().any(|v| v.abs() > 1e-6)));
    }
}

#[test]
fn contributions_do_not_depend_on_the_thread_count() {
    let train = common::read("flights_cls_train.parquet", 20_000);
    let test = common::read("flights_cls_test.parquet", 500);
    let model = common::fit(&train, "algorithm=gradient-boosting n_rounds=10");
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let a = one.install(|| Model::from_bytes(&model.to_bytes()).unwrap().contributions(&test).unwrap());
    let b = three.install(|| model.contributions(&test).unwrap());
    assert!(a.values().iter().zip(b.values()).all(|(x, y)| x.to_bits() == y.to_bits()));
}

#[test]
fn node_covers_are_the_training_weight_and_round_trip() {
    let train = common::read("diamonds_reg_train.parquet", 5_000);
    for options in ["algorithm=gradient-boosting n_rounds=3", "n_trees=3 max_depth=6"] {
        let model = common::fit(&train, options);
        let cover = model.node_cover().expect("trained models record node covers");
        for (t, tree) in model.trees().iter().enumerate() {
            let c = cover.tree(t);
            // Squared error's hessian is 1 per row; a bootstrap draws as many rows as there are.
            assert_eq!(c[0], 5_000.0, "{options}: tree {t}'s root");
            let sums_hold = tree.nodes.iter().enumerate().all(|(i, node)| match node {
                Node::Split { left, right, .. } => c[*left as usize] + c[*right as usize] == c[i],
                Node::Leaf { .. } => true,
            });
            assert!(sums_hold, "{options}: tree {t}: children's covers add up to their parent's");
            assert!(c.iter().all(|&c| c >= 1.0), "{options}: tree {t}: every node holds a row");
        }
        let loaded = Model::from_bytes(&model.to_bytes()).unwrap();
        assert_eq!(loaded.node_cover(), Some(cover));
        assert_eq!(loaded, model);
    }
}

/// Covers that are not whole numbers (a logistic loss's hessians) are
/// stored as floats, and come back as they were.
#[test]
fn fractional_node_covers_round_trip() {
    let model =
        common::fit(&common::read("cancer_cls_train.parquet", usize::MAX), "algorithm=gradient-boosting n_rounds=3");
    let cover = model.node_cover().unwrap();
    assert!(cover.tree(0).iter().any(|c| c.fract() != 0.0), "hessians of the logistic loss");
    let loaded = Model::from_bytes(&model.to_bytes()).unwrap();
    assert_eq!(loaded.node_cover(), Some(cover));
}

/// A model written in format 3 (by the build before node covers; 5
/// boosting rounds on cancer) still loads and predicts, and asking it for
/// contributions says why it cannot give them.
#[test]
fn format_3_models_load_but_cannot_explain() {
    let v3 = std::fs::read(common::interop_path("cancer_gbt_v3.arbor")).unwrap();
    assert_eq!(u32::from_le_bytes(v3[8..12].try_into().unwrap()), 3);
    let model = Model::from_bytes(&v3).unwrap();
    assert!(model.node_cover().is_none());
    let test = common::read("cancer_cls_test.parquet", usize::MAX);
    let retrained = common::fit(
        &common::read("cancer_cls_train.parquet", usize::MAX),
        "algorithm=gradient-boosting n_rounds=5 max_depth=3",
    );
    // Written again in today's format, it scores exactly as loaded.
    let rewritten = Model::from_bytes(&model.to_bytes()).unwrap();
    assert_eq!(model.score(&test).unwrap(), rewritten.score(&test).unwrap());
    // Retrained today, the rows are summed in another canonical order, so
    // exact ties between features that split the rows alike (cancer's
    // radius, perimeter and area) may break the other way: the classes
    // agree on all but a few rows.
    let (loaded, again) = (model.score(&test).unwrap().class_index(), retrained.score(&test).unwrap().class_index());
    let agree = loaded.iter().zip(&again).filter(|(a, b)| a == b).count();
    assert!(agree * 100 >= loaded.len() * 97, "{agree} of {} rows classed alike", loaded.len());
    let e = model.contributions(&test).unwrap_err().to_string();
    assert!(e.contains("no node cover") && e.contains("train it again"), "{e}");
    assert!(retrained.contributions(&test).is_ok());
}
