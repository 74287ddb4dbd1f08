//! The model decoders never panic: property tests over mutated arbor model
//! bytes, XGBoost JSON and LightGBM text. Every input either fails with an
//! error or gives a model that predicts (and re-encodes) without panicking.
//!
//! Each property runs `ARBOR_FUZZ_CASES` cases (default 2000); the counts of
//! accepted and rejected inputs are printed with `--nocapture`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_ensemble::Model;
use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

fn cases() -> u32 {
    std::env::var("ARBOR_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(common::interop_path(name)).unwrap()
}

/// Runs `property` over `strategy`, counting models accepted and inputs rejected.
fn fuzz<S: Strategy>(what: &str, strategy: S, decode: impl Fn(S::Value) -> Option<Model>) {
    let (accepted, rejected) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    runner
        .run(&strategy, |input| {
            match decode(input) {
                Some(model) => {
                    exercise(&model);
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    rejected.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (accepted, rejected) = (accepted.into_inner(), rejected.into_inner());
    eprintln!(
        "{what}: {} cases, {accepted} decoded to a model, {rejected} rejected with an error",
        accepted + rejected
    );
    assert!(accepted > 0 && rejected > 0, "{what}: the mutations reach both outcomes");
}

/// A decoded model must predict odd values, re-encode and decode again.
fn exercise(model: &Model) {
    let values = [0.0, 1.0, -1.0, f64::NAN, 1e300, -0.5, 64.0, 2.5];
    let columns: Vec<Vec<f64>> = (0..model.features().len()).map(|_| values.to_vec()).collect();
    let p = model.score_columns(&columns, values.len()).unwrap();
    assert_eq!(p.values().len(), values.len() * model.value_len());
    let again = Model::from_bytes(&model.to_bytes()).expect("a decoded model re-encodes");
    assert_eq!(again.trees().len(), model.trees().len());
}

/// One byte-level edit.
#[derive(Clone, Debug)]
enum Edit {
    Set(Index, u8),
    Insert(Index, u8),
    Remove(Index),
    Truncate(Index),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        1 => any::<Index>().prop_map(Edit::Remove),
        1 => any::<Index>().prop_map(Edit::Truncate),
    ];
    proptest::collection::vec(edit, 1..6)
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        if bytes.is_empty() {
            break;
        }
        match e {
            Edit::Set(i, b) => {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            Edit::Insert(i, b) => bytes.insert(i.index(bytes.len() + 1), *b),
            Edit::Remove(i) => {
                bytes.remove(i.index(bytes.len()));
            }
            Edit::Truncate(i) => bytes.truncate(i.index(bytes.len())),
        }
    }
    bytes
}

/// A small trained model with a categorical feature and both task kinds' parts.
fn arbor_model(boosted: bool) -> Model {
    let n = 300;
    let x: Vec<f64> = (0..n).map(|i| (i % 17) as f64 + if i % 11 == 0 { f64::NAN } else { 0.0 }).collect();
    let c: Vec<&str> = (0..n).map(|i| ["a", "b", "c"][i % 3]).collect();
    let y: Vec<i64> = (0..n).map(|i| ((i % 17) > 8) as i64 + (i % 3 == 0) as i64).collect();
    let batch = RecordBatch::try_from_iter([
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ("c", Arc::new(arrow::array::StringArray::from(c)) as ArrayRef),
        ("label", Arc::new(Int64Array::from(y)) as ArrayRef),
    ])
    .unwrap();
    let options = if boosted {
        "algorithm=gradient-boosting, n_rounds=4, max_depth=3, early_stopping_rounds=9"
    } else {
        "n_trees=3, max_depth=4"
    };
    common::fit(&batch, options)
}

#[test]
fn mutated_arbor_model_bytes_never_panic() {
    // The current format, for a forest and for boosting, and format 2 (still read).
    let models = [arbor_model(false).to_bytes(), arbor_model(true).to_bytes(), fixture("digits_forest_v2.arbor")];
    let strategy = (0..models.len(), edits(), prop::bool::weighted(0.9));
    fuzz("arbor model bytes", strategy, |(which, edits, sealed)| {
        let original = &models[which];
        // Edits land in the payload (past the header) unless the header is left unsealed.
        let mutated = if sealed {
            let mut bytes = original[..28].to_vec();
            bytes.extend(apply(original[28..].to_vec(), &edits));
            common::reseal(bytes)
        } else {
            apply(original.clone(), &edits)
        };
        Model::from_bytes(&mutated).ok()
    });
}

/// Paths to every value of a JSON document, parents before children.
fn paths(value: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                paths(v, path, out);
                path.pop();
            }
        }
        // Long arrays: a few elements are enough targets.
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate().take(3) {
                path.push(Step::At(i));
                paths(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    At(usize),
}

/// The value at `path`, if earlier edits left it there.
fn at<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::At(i) => v.get_mut(*i),
    })
}

/// Values a mutation may put anywhere in a document.
fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![-2i64, -1, 0, 1, 2, 7, 63, 64, 1000, 2147483647, i64::MAX]).prop_map(Value::from),
        prop::sample::select(vec![-0.5f64, 0.5, 3.5, 1e38, 3.5e38, -1e308, 1e-45]).prop_map(Value::from),
        prop::sample::select(vec!["", "0", "1", "10", "-1", "[1,2]", "[]", "nan", "1e400", "dart", "gblinear"])
            .prop_map(Value::from),
        Just(Value::Null),
        Just(Value::Bool(true)),
        Just(Value::Array(Vec::new())),
        Just(Value::Object(Default::default())),
    ]
}

#[derive(Clone, Debug)]
enum JsonEdit {
    Replace(Index, Value),
    Remove(Index),
    Shorten(Index),
}

#[test]
fn mutated_xgboost_json_never_panics() {
    let original: Value = serde_json::from_slice(&fixture("xgb_softmax.json")).unwrap();
    let mut all = Vec::new();
    paths(&original, &mut Vec::new(), &mut all);
    let json_edit = prop_oneof![
        4 => (any::<Index>(), replacement()).prop_map(|(i, v)| JsonEdit::Replace(i, v)),
        1 => any::<Index>().prop_map(JsonEdit::Remove),
        1 => any::<Index>().prop_map(JsonEdit::Shorten),
    ];
    let strategy = (proptest::collection::vec(json_edit, 1..4), edits(), prop::bool::weighted(0.85));
    fuzz("xgboost json", strategy, |(json_edits, byte_edits, structured)| {
        let bytes = if structured {
            let mut doc = original.clone();
            for e in &json_edits {
                match e {
                    JsonEdit::Replace(i, v) => {
                        if let Some(target) = at(&mut doc, &all[i.index(all.len())]) {
                            *target = v.clone();
                        }
                    }
                    JsonEdit::Remove(i) => {
                        let path = &all[i.index(all.len())];
                        if let Some((Step::Key(k), parent)) = path.split_last() {
                            if let Some(Value::Object(map)) = at(&mut doc, parent) {
                                map.remove(k);
                            }
                        }
                    }
                    JsonEdit::Shorten(i) => {
                        if let Some(Value::Array(items)) = at(&mut doc, &all[i.index(all.len())]) {
                            items.pop();
                        }
                    }
                }
            }
            serde_json::to_vec(&doc).unwrap()
        } else {
            apply(fixture("xgb_binary.json"), &byte_edits)
        };
        Model::from_xgboost_json(&bytes).ok()
    });
}

/// Tokens a mutation may put in a LightGBM line.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "-1",
        "0",
        "1",
        "2",
        "3",
        "9",
        "12",
        "31",
        "-2147483648",
        "4294967295",
        "1000000000",
        "nan",
        "inf",
        "-inf",
        "x",
        "",
        "1e308",
        "0.5",
        "binary",
        "multiclass num_class:3",
        "poisson",
        "average_output",
    ])
}

#[derive(Clone, Debug)]
enum LineEdit {
    Token(Index, Index, &'static str),
    Delete(Index),
    Duplicate(Index),
}

#[test]
fn mutated_lightgbm_text_never_panics() {
    let originals = [fixture("lgb_reg.txt"), fixture("lgb_multiclass.txt"), fixture("lgb_pandas.txt")];
    let line_edit = prop_oneof![
        4 => (any::<Index>(), any::<Index>(), token()).prop_map(|(l, t, s)| LineEdit::Token(l, t, s)),
        1 => any::<Index>().prop_map(LineEdit::Delete),
        1 => any::<Index>().prop_map(LineEdit::Duplicate),
    ];
    let strategy = (0..3usize, proptest::collection::vec(line_edit, 1..4), edits(), prop::bool::weighted(0.85));
    fuzz("lightgbm text", strategy, |(which, line_edits, byte_edits, structured)| {
        let text = String::from_utf8(originals[which].clone()).unwrap();
        // The header, the trees and the two tail lines the importer reads.
        let end = text.find("end of trees").unwrap() + "end of trees\n".len();
        let tail = text[end..].lines().filter(|l| l.starts_with("[categorical_feature:") || l.starts_with("pandas_"));
        let mut lines: Vec<String> = text[..end].lines().chain(tail).map(str::to_owned).collect();
        let mutated = if structured {
            for e in &line_edits {
                match e {
                    LineEdit::Token(l, t, s) => {
                        let l = l.index(lines.len());
                        let (key, value) = lines[l].split_once('=').unwrap_or((&lines[l], ""));
                        let mut tokens: Vec<&str> = value.split(' ').collect();
                        let t = t.index(tokens.len());
                        tokens[t] = s;
                        lines[l] = format!("{key}={}", tokens.join(" "));
                    }
                    LineEdit::Delete(l) => {
                        lines.remove(l.index(lines.len()));
                    }
                    LineEdit::Duplicate(l) => {
                        let l = l.index(lines.len());
                        lines.insert(l, lines[l].clone());
                    }
                }
            }
            lines.join("\n").into_bytes()
        } else {
            apply(text.into_bytes(), &byte_edits)
        };
        std::str::from_utf8(&mutated).ok().and_then(|t| Model::from_lightgbm_text(t).ok())
    });
}
