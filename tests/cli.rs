//! The `arbor` command line end to end on bundled Parquet data: train,
//! predict, inspect, sql, and a clear error (with no output file) for bad input.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Int64Type, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data(name: &str) -> PathBuf {
    root().join("data").join(name)
}

fn arbor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor")).args(args).current_dir(root()).output().expect("arbor runs")
}

fn ok(args: &[&str]) -> String {
    let out = arbor(args);
    assert!(out.status.success(), "arbor {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail; returns its error message.
fn fails(args: &[&str]) -> String {
    let out = arbor(args);
    assert!(!out.status.success(), "arbor {args:?} should fail");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("error: "), "one clear message: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn read(path: &Path) -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

fn write(path: &Path, batch: &RecordBatch) {
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Replaces (or adds) a column.
fn with_column(batch: &RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns = batch.columns().to_vec();
    let field = Field::new(name, array.data_type().clone(), true);
    match fields.iter().position(|f| f.name() == name) {
        Some(i) => {
            fields[i] = field;
            columns[i] = array;
        }
        None => {
            fields.push(field);
            columns.push(array);
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

#[test]
fn train_predict_inspect_flights_subset() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.parquet");
    let test = dir.path().join("test.parquet");
    write(&train, &read(&data("flights_cls_train.parquet")).slice(0, 40_000));
    write(&test, &read(&data("flights_cls_test.parquet")).slice(0, 10_000));
    let model = dir.path().join("flights.arbor");
    let out = dir.path().join("scored.parquet");
    ok(&["train", "--input", s(&train), "--label", "label", "--output", s(&model), "--set", "n_trees=16"]);
    let report = arbor(&["predict", "--model", s(&model), "--input", s(&test), "--output", s(&out), "--proba"]);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    // the report gives the rows and the time spent scoring them (peers.py reads it)
    let report = String::from_utf8(report.stderr).unwrap();
    let seconds = report
        .strip_prefix(&format!("wrote 10000 rows to {}; scoring them took ", out.display()))
        .and_then(|rest| rest.trim().strip_suffix(" s"))
        .and_then(|t| t.parse::<f64>().ok());
    assert!(seconds.is_some_and(|t| t >= 0.0), "{report}");

    let scored = read(&out);
    assert_eq!(scored.num_rows(), 10_000);
    let label = scored.column_by_name("label").unwrap();
    let prediction = scored.column_by_name("prediction").unwrap();
    assert_eq!(prediction.data_type(), label.data_type(), "predictions have the label's type");
    let (l, p) = (label.as_primitive::<Int32Type>(), prediction.as_primitive::<Int32Type>());
    let acc = (0..l.len()).filter(|&i| l.value(i) == p.value(i)).count() as f64 / l.len() as f64;
    assert!(acc > 0.87, "accuracy {acc}");
    let p0 = scored.column_by_name("proba_0").unwrap().as_primitive::<Float64Type>();
    let p1 = scored.column_by_name("proba_1").unwrap().as_primitive::<Float64Type>();
    for i in 0..p0.len() {
        assert!((p0.value(i) + p1.value(i) - 1.0).abs() < 1e-9);
        assert_eq!(p.value(i), (p1.value(i) > p0.value(i)) as i32);
    }
    // the input's columns come through unchanged
    let input = read(&test);
    for name in ["carrier", "dep_delay", "dest"] {
        assert_eq!(scored.column_by_name(name).unwrap(), input.column_by_name(name).unwrap());
    }

    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    assert_eq!(json["task"], "classification");
    assert_eq!(json["algorithm"], "random-forest");
    assert_eq!(json["classes"], serde_json::json!([0, 1]));
    assert_eq!(json["trees"].as_array().unwrap().len(), 16);
    assert!(json["trees"][0]["nodes"].as_u64().unwrap() > 100);
    assert!(json["trees"][0]["depth"].as_u64().unwrap() > 5);
    assert_eq!(json["features"].as_array().unwrap().len(), 12);
    assert!(json["oob_error"].is_null());
    assert_eq!(json["params"]["n_trees"], "16");
    let importance: f64 = json["features"].as_array().unwrap().iter().map(|f| f["importance"].as_f64().unwrap()).sum();
    assert!(
        importance > 0.0 && importance <= 0.5,
        "MDI: mean impurity decrease, at most the root's Gini: {importance}"
    );
    let text = ok(&["inspect", "--model", s(&model)]);
    assert!(text.contains("classification") && text.contains("dep_delay"), "{text}");
}

#[test]
fn diamonds_regression_with_categorical_strings() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.parquet");
    write(&train, &read(&data("diamonds_reg_train.parquet")).slice(0, 8_000));
    let model = dir.path().join("d.arbor");
    let out = dir.path().join("scored.parquet");
    ok(&[
        "train",
        "--input",
        s(&train),
        "--label",
        "label",
        "--output",
        s(&model),
        "--set",
        "n_trees=10",
        "--set",
        "max_features=3",
    ]);
    ok(&["predict", "--model", s(&model), "--input", s(&data("diamonds_reg_test.parquet")), "--output", s(&out)]);
    let scored = read(&out);
    let y = scored.column_by_name("label").unwrap().as_primitive::<Float64Type>();
    let p = scored.column_by_name("prediction").unwrap().as_primitive::<Float64Type>();
    let rmse = (y.values().iter().zip(p.values()).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / y.len() as f64).sqrt();
    assert!(rmse < 0.14, "rmse {rmse}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    assert_eq!(json["task"], "regression");
    assert_eq!(json["features"][1]["name"], "cut");
    assert_eq!(json["features"][1]["kind"], "categorical");
}

/// String labels, nulls in a string feature, NaN in a float feature, a null label:
/// all train and predict without preprocessing.
#[test]
fn string_labels_and_missing_values() {
    let dir = tempfile::tempdir().unwrap();
    let batch = read(&data("flights_cls_train.parquet")).slice(0, 20_000);
    let labels: StringArray = batch
        .column_by_name("label")
        .unwrap()
        .as_primitive::<Int32Type>()
        .iter()
        .enumerate()
        .map(|(i, v)| if i == 7 { None } else { v.map(|v| if v == 1 { "late" } else { "on time" }) })
        .collect();
    let carrier: StringArray = batch
        .column_by_name("carrier")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 10 == 0 { None } else { v })
        .collect();
    let delay = arrow::compute::cast(batch.column_by_name("dep_delay").unwrap(), &DataType::Float64).unwrap();
    let delay: Float64Array = delay
        .as_primitive::<Float64Type>()
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 13 == 0 { Some(f64::NAN) } else { v })
        .collect();
    let batch = with_column(&batch, "label", Arc::new(labels));
    let batch = with_column(&batch, "carrier", Arc::new(carrier));
    let batch = with_column(&batch, "dep_delay", Arc::new(delay));
    let train = dir.path().join("train.parquet");
    write(&train, &batch);
    let model = dir.path().join("m.arbor");
    let out = dir.path().join("scored.parquet");
    ok(&["train", "--input", s(&train), "--label", "label", "--output", s(&model), "--set", "n_trees=8"]);
    ok(&["predict", "--model", s(&model), "--input", s(&train), "--output", s(&out), "--proba"]);
    let scored = read(&out);
    let p = scored.column_by_name("prediction").unwrap();
    assert_eq!(p.data_type(), &DataType::Utf8);
    let p = p.as_string::<i32>();
    let l = scored.column_by_name("label").unwrap().as_string::<i32>();
    let agree = (0..l.len()).filter(|&i| l.is_valid(i) && l.value(i) == p.value(i)).count();
    assert!(agree as f64 / l.len() as f64 > 0.9);
    assert!(scored.column_by_name("proba_late").is_some() && scored.column_by_name("proba_on time").is_some());
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    assert_eq!(json["classes"], serde_json::json!(["late", "on time"]));
    assert_eq!(json["skipped_null_labels"], 1);
}

/// A label of a single class trains a working model, forest or boosted, that
/// predicts that class with probability 1; `train` warns in one line, and
/// `inspect` says so too.
#[test]
fn a_single_class_file_trains_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let flights = read(&data("flights_cls_train.parquet")).slice(0, 2_000);
    let one = with_column(&flights, "label", Arc::new(Int64Array::from(vec![0; flights.num_rows()])));
    let train = dir.path().join("one.parquet");
    write(&train, &one);
    let test = data("flights_cls_test.parquet");
    let warning =
        "warning: label 'label' held a single class ('0') in training: the model predicts '0' for every row, \
                   with probability 1";
    for algorithm in ["random-forest", "gradient-boosting"] {
        let model = dir.path().join(format!("{algorithm}.arbor"));
        let out = arbor(
            &["train", "--input", s(&train), "--label", "label", "--output", s(&model)]
                .into_iter()
                .chain([
                    "--algorithm",
                    algorithm,
                    "--set",
                    if algorithm == "random-forest" { "n_trees=3" } else { "n_rounds=3" },
                ])
                .collect::<Vec<_>>(),
        );
        assert!(out.status.success(), "{algorithm}: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{algorithm}: one warning line, then the report: {stderr}");
        assert_eq!(lines[0], warning, "{algorithm}");
        assert!(lines[1].starts_with("trained 3 classification"), "{algorithm}: {stderr}");

        let scored = dir.path().join(format!("{algorithm}.parquet"));
        ok(&["predict", "--model", s(&model), "--input", s(&test), "--output", s(&scored), "--proba"]);
        let scored = read(&scored);
        let prediction = scored.column_by_name("prediction").unwrap().as_primitive::<Int64Type>();
        assert_eq!(prediction.len(), 65_470);
        assert!(prediction.iter().all(|p| p == Some(0)), "{algorithm}: every row is the one class");
        let proba = scored.column_by_name("proba_0").unwrap().as_primitive::<Float64Type>();
        assert!(proba.iter().all(|p| p == Some(1.0)), "{algorithm}: probability 1");
        assert!(scored.column_by_name("proba_1").is_none(), "{algorithm}: one class, one probability column");

        let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
        assert_eq!(json["classes"], serde_json::json!([0]));
        assert_eq!(json["warnings"], serde_json::json!([warning.trim_start_matches("warning: ")]));
        let text = ok(&["inspect", "--model", s(&model)]);
        assert!(text.contains("warning      label 'label' held a single class ('0')"), "{text}");
    }
}

#[test]
fn bad_input_gives_one_clear_error_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.arbor");
    let flights = read(&data("flights_cls_train.parquet")).slice(0, 2_000);
    let train_with = |name: &str, batch: &RecordBatch, extra: &[&str]| -> String {
        let path = dir.path().join(name);
        write(&path, batch);
        let mut args = vec!["train", "--input", s(&path), "--label", "label", "--output", s(&model)];
        args.extend_from_slice(extra);
        let e = fails(&args);
        assert!(!model.exists(), "no model is left behind");
        e
    };

    let e = train_with("empty.parquet", &flights.slice(0, 0), &[]);
    assert!(e.contains("empty"), "{e}");

    let e = fails(&[
        "train",
        "--input",
        s(&data("flights_cls_train.parquet")),
        "--label",
        "arrival",
        "--output",
        s(&model),
    ]);
    assert!(e.contains("'arrival' not found") && e.contains("dep_delay"), "{e}");

    let nulls = with_column(&flights, "label", Arc::new(Int64Array::from(vec![None::<i64>; flights.num_rows()])));
    let e = train_with("nulls.parquet", &nulls, &[]);
    assert!(e.contains("label") && e.contains("null in every row"), "{e}");

    let lists =
        ListArray::from_iter_primitive::<Int32Type, _, _>((0..flights.num_rows()).map(|i| Some(vec![Some(i as i32)])));
    let e = train_with("list.parquet", &with_column(&flights, "tags", Arc::new(lists)), &[]);
    assert!(e.contains("'tags'") && e.contains("unsupported type"), "{e}");

    let e = train_with("ok.parquet", &flights, &["--set", "n_tres=5"]);
    assert!(e.contains("unknown option 'n_tres'") && e.contains("n_trees"), "{e}");
    let e = train_with("ok.parquet", &flights, &["--set", "max_depth=-1"]);
    assert!(e.contains("max_depth"), "{e}");

    // an output that cannot be written is named before any training
    let ok_input = dir.path().join("ok.parquet");
    let nowhere = dir.path().join("no-such-dir").join("m.arbor");
    let e = fails(&["train", "--input", s(&ok_input), "--label", "label", "--output", s(&nowhere)]);
    assert!(e.contains("no-such-dir") && !e.contains("trained"), "{e}");

    // a model, then inputs that do not fit it
    let train = dir.path().join("ok.parquet");
    ok(&["train", "--input", s(&train), "--label", "label", "--output", s(&model), "--set", "n_trees=2"]);
    let out = dir.path().join("out.parquet");
    let missing = dir.path().join("missing.parquet");
    let idx = flights.schema().index_of("dep_delay").unwrap();
    write(&missing, &flights.project(&(0..flights.num_columns()).filter(|&i| i != idx).collect::<Vec<_>>()).unwrap());
    let e = fails(&["predict", "--model", s(&model), "--input", s(&missing), "--output", s(&out)]);
    assert!(e.contains("'dep_delay'"), "{e}");
    assert!(!out.exists());

    let retyped = dir.path().join("retyped.parquet");
    let carrier_codes = Int64Array::from_iter_values(0..flights.num_rows() as i64);
    write(&retyped, &with_column(&flights, "carrier", Arc::new(carrier_codes)));
    let e = fails(&["predict", "--model", s(&model), "--input", s(&retyped), "--output", s(&out)]);
    assert!(e.contains("'carrier'") && e.contains("categorical"), "{e}");

    let bytes = std::fs::read(&model).unwrap();
    let truncated = dir.path().join("truncated.arbor");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = fails(&["predict", "--model", s(&truncated), "--input", s(&train), "--output", s(&out)]);
    assert!(e.contains("truncated"), "{e}");
    let corrupt = dir.path().join("corrupt.arbor");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    std::fs::write(&corrupt, &flipped).unwrap();
    let e = fails(&["inspect", "--model", s(&corrupt)]);
    assert!(e.contains("checksum"), "{e}");
    assert!(!out.exists(), "no half-written prediction file");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn sql_command_formats() {
    let csv = ok(&["sql", "--command", "SELECT 1 AS a, 'x' AS b", "--format", "csv"]);
    assert_eq!(csv, "a,b\n1,x\n");
    let json = ok(&["sql", "--command", "SELECT 1 AS a, 'x' AS b", "--format", "json"]);
    assert_eq!(json.trim(), r#"{"a":1,"b":"x"}"#);
    let table = ok(&["sql", "--command", "SELECT 1 AS a"]);
    assert!(table.contains("| a |"), "{table}");
    let e = fails(&["sql", "--command", "SELECT train_forest(1)"]);
    assert!(e.contains("train_forest"), "{e}");
}

/// `--oob-output` writes every training row's out-of-bag prediction and
/// error; `inspect --json` carries the forest's OOB error, MDA importance and tree shapes.
#[test]
fn out_of_bag_results_per_row_and_in_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let (subset, model, oob) =
        (dir.path().join("train.parquet"), dir.path().join("m.arbor"), dir.path().join("oob.parquet"));
    write(&subset, &read(&data("flights_cls_train.parquet")).slice(0, 4000));
    let common = ["train", "--input", s(&subset), "--label", "label", "--output", s(&model)];
    let e = fails(&[&common[..], &["--set", "oob_per_observation=true"]].concat());
    assert!(e.contains("--oob-output"), "{e}");
    ok(&[&common[..], &["--set", "n_trees=20", "--set", "importance=mda_raw", "--oob-output", s(&oob)]].concat());

    let rows = read(&oob);
    assert_eq!(rows.num_rows(), 4000);
    assert_eq!(rows.column(0), read(&subset).column_by_name("label").unwrap(), "the labels, in input order");
    assert_eq!(rows.schema().field(1).name(), "oob_prediction");
    assert_eq!(rows.column(1).data_type(), &DataType::Int32, "predictions in the label's type");
    let errors = rows.column_by_name("oob_error").unwrap().as_primitive::<Float64Type>();
    let mean = errors.iter().flatten().sum::<f64>() / (errors.len() - errors.null_count()) as f64;

    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    let reported = json["oob_error"].as_f64().expect("oob_error is a number");
    assert!((reported - mean).abs() < 1e-12, "{reported} vs {mean}");
    assert_eq!(json["params"]["importance"], "mda_raw");
    assert!(json["features"].as_array().unwrap().iter().all(|f| f["importance"].is_number()));
    let trees = json["trees"].as_array().unwrap();
    assert_eq!(trees.len(), 20);
    assert!(trees.iter().all(|t| t["nodes"].as_u64().unwrap() == 2 * t["leaves"].as_u64().unwrap() - 1));
    let text = ok(&["inspect", "--model", s(&model)]);
    assert!(text.contains("mean decrease of accuracy, raw"), "{text}");
}

fn interop(name: &str) -> PathBuf {
    root().join("crates/arbor-ensemble/tests/interop").join(name)
}

/// `arbor import` of an XGBoost and a LightGBM model, then `predict` equal to
/// the libraries' own predictions, and `inspect --dot` drawing a tree.
#[test]
fn import_predict_and_draw_foreign_models() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("xgboost-json", "xgb_binary.json", "flights_rows.parquet", "xgb_binary"),
        ("lightgbm-text", "lgb_binary.txt", "flights_rows.parquet", "lgb_binary"),
    ];
    for (format, file, rows, expected) in cases {
        let model = dir.path().join(format!("{expected}.arbor"));
        let out = dir.path().join(format!("{expected}.parquet"));
        let report = arbor(&["import", "--format", format, "--input", s(&interop(file)), "--output", s(&model)]);
        assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
        let report = String::from_utf8(report.stderr).unwrap();
        assert!(report.contains("classification over 2 classes, 20 trees, 8 features"), "{report}");
        ok(&["predict", "--model", s(&model), "--input", s(&interop(rows)), "--output", s(&out), "--proba"]);
        let batch = read(&out);
        let got = batch.column_by_name("proba_1").unwrap().as_primitive::<Float64Type>();
        let want = batch.column_by_name(expected).unwrap().as_primitive::<Float64Type>();
        for (g, w) in got.values().iter().zip(want.values()) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-3), "{expected}: {g} vs {w}");
        }
        let predicted = batch.column_by_name("prediction").unwrap().as_primitive::<Int64Type>();
        assert!(predicted.values().iter().zip(want.values()).all(|(&c, &p)| c == i64::from(p > 0.5)));
    }

    let model = dir.path().join("xgb_binary.arbor");
    let dot = ok(&["inspect", "--model", s(&model), "--dot", "3"]);
    assert!(dot.starts_with("digraph tree_3 {") && dot.trim_end().ends_with('}'), "{dot}");
    assert!(dot.contains("dep_delay <= ") && dot.contains("(raw score)"), "{dot}");
    let err = fails(&["inspect", "--model", s(&model), "--dot", "20"]);
    assert!(err.contains("tree 20 does not exist") && err.contains("20 trees"), "{err}");
    let inspect = ok(&["inspect", "--model", s(&model), "--json"]);
    let json: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(json["params"]["imported_from"], "xgboost 3.2.0");
    assert_eq!(json["params"]["objective"], "binary:logistic");

    let unwritten = dir.path().join("never.arbor");
    let refused = [
        ("xgboost-json", "xgb_dart.json", "xgb_dart.json: xgboost-json model: booster 'dart' is not supported"),
        ("xgboost-json", "lgb_reg.txt", "not an XGBoost JSON model"),
        ("lightgbm-text", "lgb_linear.txt", "linear trees (linear_tree=true) are not supported"),
    ];
    for (format, file, message) in refused {
        let err = fails(&["import", "--format", format, "--input", s(&interop(file)), "--output", s(&unwritten)]);
        assert!(err.contains(message), "{err}");
    }
    assert!(!unwritten.exists(), "nothing is written on failure");
}

/// `arbor export` writes a model another library loads (here read back by
/// `arbor import`: the Python tests load the files in XGBoost and LightGBM);
/// what the format cannot hold fails with nothing written.
#[test]
fn export_writes_a_model_others_serve() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.arbor");
    let rows = interop("flights_rows.parquet");
    ok(&["import", "--format", "xgboost-json", "--input", s(&interop("xgb_binary.json")), "--output", s(&model)]);
    let before = dir.path().join("before.parquet");
    ok(&["predict", "--model", s(&model), "--input", s(&rows), "--output", s(&before), "--proba"]);
    for format in ["lightgbm-text", "xgboost-json"] {
        let exported = dir.path().join(format!("model.{format}"));
        let report = arbor(&["export", "--format", format, "--model", s(&model), "--output", s(&exported)]);
        assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
        let report = String::from_utf8(report.stderr).unwrap();
        assert!(report.contains(&format!("as {format}: 20 trees")), "{report}");
        let back = dir.path().join(format!("back.{format}.arbor"));
        ok(&["import", "--format", format, "--input", s(&exported), "--output", s(&back)]);
        let after = dir.path().join(format!("after.{format}.parquet"));
        ok(&["predict", "--model", s(&back), "--input", s(&rows), "--output", s(&after), "--proba"]);
        let column = |path: &Path| read(path).column_by_name("proba_1").unwrap().as_primitive::<Float64Type>().clone();
        for (a, b) in column(&after).values().iter().zip(column(&before).values()) {
            assert!((a - b).abs() <= 1e-6, "{format}: {a} vs {b}");
        }
    }

    let zero = dir.path().join("zero.arbor");
    ok(&["import", "--format", "lightgbm-text", "--input", s(&interop("lgb_reg_zero.txt")), "--output", s(&zero)]);
    let unwritten = dir.path().join("never.json");
    let err = fails(&["export", "--format", "xgboost-json", "--model", s(&zero), "--output", s(&unwritten)]);
    assert!(err.contains("xgboost-json export: tree ") && err.contains("zero-as-missing"), "{err}");
    assert!(!unwritten.exists(), "nothing is written on failure");
}

/// `arbor` with extra environment variables.
fn arbor_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arbor"));
    cmd.args(args).current_dir(root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("arbor runs")
}

#[test]
fn models_are_byte_identical_at_every_simd_level_and_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("flights.parquet");
    write(&input, &read(&data("flights_cls_train.parquet")).slice(0, 20_000));
    let levels: Vec<&str> = arbor_kernels::dispatch::SimdLevel::available().iter().map(|l| l.name()).collect();
    for (algorithm, extra) in [
        ("random-forest", vec!["--set", "n_trees=8"]),
        ("gradient-boosting", vec!["--set", "n_rounds=8", "--set", "max_depth=5"]),
        ("random-forest", vec!["--set", "n_trees=4", "--set", "max_features=all", "--task", "regression"]),
    ] {
        let mut reference: Option<(Vec<u8>, Vec<u8>)> = None;
        for level in &levels {
            for threads in ["1", "2"] {
                let model = dir.path().join(format!("{algorithm}-{level}-{threads}.arbor"));
                let scored = dir.path().join(format!("{algorithm}-{level}-{threads}.parquet"));
                let env = [("ARBOR_SIMD", *level), ("RAYON_NUM_THREADS", threads)];
                let mut args = vec![
                    "train",
                    "--input",
                    s(&input),
                    "--label",
                    "label",
                    "--output",
                    s(&model),
                    "--algorithm",
                    algorithm,
                ];
                args.extend_from_slice(&extra);
                let out = arbor_env(&args, &env);
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                let mut predict = vec!["predict", "--model", s(&model), "--input", s(&input), "--output", s(&scored)];
                if !extra.contains(&"regression") {
                    predict.push("--proba");
                }
                let out = arbor_env(&predict, &env);
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                let got = (std::fs::read(&model).unwrap(), std::fs::read(&scored).unwrap());
                match &reference {
                    None => reference = Some(got),
                    Some(first) => assert!(
                        *first == got,
                        "{algorithm}: ARBOR_SIMD={level} with {threads} threads changed the model or its predictions"
                    ),
                }
            }
        }
    }
    println!("compared levels {levels:?}");

    let out = arbor_env(&["inspect", "--model", "nothing.arbor"], &[("ARBOR_SIMD", "sse9")]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success() && err.contains("ARBOR_SIMD=\"sse9\"") && err.contains("scalar"), "{err}");
}

/// Runs `arbor` through `sh` under `umask`, so the test sees the permissions
/// a user with that umask gets.
fn arbor_with_umask(umask: &str, args: &[&str]) -> Output {
    let script = format!("umask {umask}; exec \"$0\" \"$@\"");
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("sh runs")
}

#[cfg(unix)]
#[test]
fn outputs_get_an_ordinary_files_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let train = data("cancer_cls_train.parquet");
    let test = data("cancer_cls_test.parquet");
    for (umask, mode) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let model = dir.path().join(format!("cancer-{umask}.arbor"));
        let scored = dir.path().join(format!("scored-{umask}.parquet"));
        let out = arbor_with_umask(
            umask,
            &["train", "--input", s(&train), "--label", "label", "--output", s(&model), "--set", "n_trees=2"],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out =
            arbor_with_umask(umask, &["predict", "--model", s(&model), "--input", s(&test), "--output", s(&scored)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for file in [&model, &scored] {
            let actual = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            assert_eq!(actual, mode, "{} under umask {umask}: {actual:o}", file.display());
        }
    }
}

#[test]
fn sql_reads_statements_from_standard_input() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["sql", "--format", "csv"])
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let statements = "CREATE TABLE t AS SELECT 20 AS a;\nSELECT a + 1 AS b\nFROM t;\n";
    child.stdin.take().unwrap().write_all(statements.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "b\n21\n");
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    // `head` stops reading after one line, long before arbor has written its
    // megabytes of table: arbor must end without a message or a failure.
    let script = format!(
        "\"{}\" sql --command 'SELECT * FROM generate_series(1, 300000)' | head -n 1 >/dev/null; \
         \"{}\" sql --command 'SELECT * FROM generate_series(1, 300000)' --format csv | head -n 1 >/dev/null",
        env!("CARGO_BIN_EXE_arbor"),
        env!("CARGO_BIN_EXE_arbor")
    );
    let out = Command::new("bash").args(["-o", "pipefail", "-c", &script]).current_dir(root()).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no message");
    assert!(out.status.success(), "arbor's exit status: {:?}", out.status);
}

/// `predict --contributions`: per-class columns for a softmax model whose
/// sums give its probabilities, a LightGBM import's columns equal to
/// LightGBM's own contributions, and a clear refusal (no output file) for a
/// model written before node covers.
#[test]
fn predict_writes_contributions() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("digits.arbor");
    let out = dir.path().join("digits.parquet");
    let train = data("digits_cls_train.parquet");
    let test = data("digits_cls_test.parquet");
    ok(&["train", "--input", s(&train), "--label", "label", "--output", s(&model), "--algorithm", "gradient-boosting"]);
    ok(&["predict", "--model", s(&model), "--input", s(&test), "--output", s(&out), "--proba", "--contributions"]);
    let scored = read(&out);
    let features: Vec<String> =
        read(&test).schema().fields().iter().map(|f| f.name().clone()).filter(|n| n != "label").collect();
    let column = |name: &str| {
        scored.column_by_name(name).unwrap_or_else(|| panic!("no column {name}")).as_primitive::<Float64Type>().clone()
    };
    let raw: Vec<Vec<f64>> = (0..10)
        .map(|class| {
            let mut sums = column(&format!("contrib_{class}_bias")).values().to_vec();
            for f in &features {
                let c = column(&format!("contrib_{class}_{f}"));
                sums.iter_mut().zip(c.values()).for_each(|(s, v)| *s += v);
            }
            sums
        })
        .collect();
    for r in 0..scored.num_rows() {
        let top = raw.iter().map(|k| k[r]).fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = raw.iter().map(|k| (k[r] - top).exp()).sum();
        for (class, k) in raw.iter().enumerate() {
            let p = column(&format!("proba_{class}")).value(r);
            assert!(((k[r] - top).exp() / total - p).abs() < 1e-9, "row {r}, class {class}");
        }
    }

    let imported = dir.path().join("lgb.arbor");
    let rows = interop("flights_rows.parquet");
    ok(&["import", "--format", "lightgbm-text", "--input", s(&interop("lgb_binary.txt")), "--output", s(&imported)]);
    ok(&["predict", "--model", s(&imported), "--input", s(&rows), "--output", s(&out), "--contributions"]);
    let scored = read(&out);
    let want = read(&interop("lgb_binary_contribs.parquet"));
    let want = want.column_by_name("contribs").unwrap().as_list::<i32>();
    let names: Vec<String> = ["month", "day", "dep_time", "sched_dep_time", "dep_delay", "sched_arr_time", "distance"]
        .iter()
        .chain(&["hour", "bias"])
        .map(|f| format!("contrib_{f}"))
        .collect();
    for r in 0..scored.num_rows() {
        let want = want.value(r);
        let want = want.as_primitive::<Float64Type>();
        for (i, name) in names.iter().enumerate() {
            let got = scored.column_by_name(name).unwrap().as_primitive::<Float64Type>().value(r);
            assert!((got - want.value(i)).abs() < 1e-9, "row {r}, {name}: {got} against LightGBM's {}", want.value(i));
        }
    }

    // inspect says which models can explain.
    let text = ok(&["inspect", "--model", s(&imported)]);
    assert!(text.contains("explains     yes"), "{text}");
    let v3 = interop("cancer_gbt_v3.arbor");
    let text = ok(&["inspect", "--model", s(&v3)]);
    assert!(text.contains("explains     no") && text.contains("format 4"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&v3), "--json"])).unwrap();
    assert_eq!(json["node_cover"], false);
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    assert_eq!(json["node_cover"], true);

    let unwritten = dir.path().join("never.parquet");
    let cancer = data("cancer_cls_test.parquet");
    let err =
        fails(&["predict", "--model", s(&v3), "--input", s(&cancer), "--output", s(&unwritten), "--contributions"]);
    assert!(err.contains("cancer_gbt_v3.arbor") && err.contains("no node cover"), "{err}");
    assert!(!unwritten.exists(), "nothing is written on failure");
}

/// A line of a printed table's frame (`+-----+---+`), or of several side by side.
fn is_table_border(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('+') && line.chars().all(|c| matches!(c, '+' | '-' | ' '))
}

/// A line of a printed table's cells (`| a | b |`), or of several side by side.
fn is_table_row(line: &str) -> bool {
    line.trim().starts_with('|')
}

/// A table line's cells, trimmed; the gaps between tables printed side by side are dropped.
fn table_cells(line: &str) -> Vec<String> {
    line.split('|').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

/// Every (column, value) pair of the tables `pretty_format_batches` prints in
/// `text`: a frame, a header row, a frame, then value rows up to the closing
/// frame. Tables printed one under the other or side by side give the same pairs.
fn printed_pairs(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut pairs = Vec::new();
    let mut i = 0;
    while i + 2 < lines.len() {
        if is_table_border(lines[i]) && is_table_row(lines[i + 1]) && is_table_border(lines[i + 2]) {
            let header = table_cells(lines[i + 1]);
            let mut j = i + 3;
            while j < lines.len() && is_table_row(lines[j]) {
                // A row with an empty (NULL) cell cannot be paired with its header: skipped.
                let row = table_cells(lines[j]);
                if row.len() == header.len() {
                    pairs.extend(header.iter().cloned().zip(row));
                }
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    pairs
}

/// Two printed cells say the same: equal numbers (`0.907` and `0.9070`), or equal text.
fn same_cell(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The README's first command prints what the README shows: every figure of
/// the README's printed block (the flights counted, `accuracy` and
/// `boosted_accuracy`) is in what `arbor sql sql/quickstart.sql`, run from
/// the repository root, prints, so the two cannot drift apart.
#[test]
fn the_readmes_quickstart_block_is_what_sql_quickstart_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme.split("```").skip(1).step_by(2).collect();
    let block = blocks
        .iter()
        .find(|b| {
            let body = b.split_once('\n').map_or("", |(_, body)| body);
            body.contains("accuracy")
                && body.lines().all(|l| l.trim().is_empty() || is_table_border(l) || is_table_row(l))
        })
        .expect("the README shows the quickstart's printed tables in a code block");
    let shown = printed_pairs(block);
    for column in ["flights", "accuracy", "boosted_accuracy"] {
        assert!(shown.iter().any(|(c, _)| c == column), "the README's block shows no `{column}`: {block}");
    }

    let printed = ok(&["sql", "sql/quickstart.sql"]);
    let got = printed_pairs(&printed);
    for (column, value) in &shown {
        let printed_values: Vec<&String> = got.iter().filter(|(c, _)| c == column).map(|(_, v)| v).collect();
        assert!(
            printed_values.iter().any(|v| same_cell(v, value)),
            "the README shows {column} = {value}; sql/quickstart.sql printed {column} = {printed_values:?}:\n{printed}"
        );
    }
}

/// `sql/predict_to_parquet.sql`, run where it writes (a scratch directory
/// holding the data it reads): every held-out flight is written to
/// `scored_by_origin.parquet` with its columns, `prediction` typed like the
/// label and `p_late`; the models go to `models_by_origin.parquet`, one per
/// origin; the script reads the scored file back and prints the accuracy.
#[test]
fn sql_predict_to_parquet_writes_every_held_out_flight_scored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    for name in ["flights_cls_train.parquet", "flights_cls_test.parquet"] {
        std::fs::copy(data(name), dir.path().join("data").join(name)).unwrap();
    }
    let script = root().join("sql").join("predict_to_parquet.sql");
    let out = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["sql", s(&script)])
        .current_dir(dir.path())
        .output()
        .expect("arbor runs");
    assert!(out.status.success(), "predict_to_parquet.sql failed: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();

    let test = read(&data("flights_cls_test.parquet"));
    let scored_path = dir.path().join("scored_by_origin.parquet");
    assert!(scored_path.is_file(), "COPY ... TO 'scored_by_origin.parquet' wrote no file");
    let scored = read(&scored_path);
    assert_eq!(scored.num_rows(), test.num_rows(), "every held-out flight is scored");
    let names = |b: &RecordBatch| b.schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<String>>();
    let mut want = names(&test);
    want.extend(["prediction".to_owned(), "p_late".to_owned()]);
    assert_eq!(names(&scored), want, "the input's columns, then the prediction and the probability");
    let label_type = test.column_by_name("label").unwrap().data_type().clone();
    assert_eq!(scored.column_by_name("prediction").unwrap().data_type(), &label_type);
    let p_late = scored.column_by_name("p_late").unwrap().as_primitive::<Float64Type>();
    assert_eq!(p_late.null_count(), 0);
    assert!(p_late.values().iter().all(|p| (0.0..=1.0).contains(p)), "probabilities");

    let models = read(&dir.path().join("models_by_origin.parquet"));
    assert_eq!(names(&models), ["origin", "forest"]);
    let origin = arrow::compute::cast(test.column_by_name("origin").unwrap(), &DataType::Utf8).unwrap();
    let origins: std::collections::BTreeSet<&str> = origin.as_string::<i32>().iter().flatten().collect();
    assert_eq!(models.num_rows(), origins.len(), "one model per origin");

    assert!(printed.contains("| all "), "the overall accuracy row: {printed}");
    assert!(printed.contains(&test.num_rows().to_string()), "all {} flights counted: {printed}", test.num_rows());
}

/// `--input` takes a directory of Parquet files: the rows cut into three
/// files train the model the whole file trains, byte for byte (the bins
/// and the row order depend on the rows alone), for both algorithms.
#[test]
fn a_directory_of_files_trains_the_model_the_whole_file_does() {
    let dir = tempfile::tempdir().unwrap();
    let flights = read(&data("flights_cls_train.parquet")).slice(0, 30_000);
    let whole = dir.path().join("whole.parquet");
    write(&whole, &flights);
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    for (name, at, len) in [("a.parquet", 20_000, 10_000), ("b.parquet", 0, 7_000), ("c.parquet", 7_000, 13_000)] {
        write(&parts.join(name), &flights.slice(at, len));
    }
    for extra in [&["--set", "n_trees=5"][..], &["--algorithm", "gradient-boosting", "--set", "n_rounds=5"]] {
        let train = |input: &Path, output: &str| -> Vec<u8> {
            let model = dir.path().join(output);
            let mut args = vec!["train", "--input", s(input), "--label", "label", "--output", s(&model)];
            args.extend_from_slice(extra);
            ok(&args);
            std::fs::read(&model).unwrap()
        };
        assert_eq!(train(&parts, "parts.arbor"), train(&whole, "whole.arbor"), "{extra:?}");
    }
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = fails(&["train", "--input", s(&empty), "--label", "label", "--output", s(&dir.path().join("m.arbor"))]);
    assert!(e.contains("holds no .parquet files"), "{e}");
}

/// Requests past the memory there is, or the limit given, are errors that
/// name the figure and the option, and leave no model behind.
#[test]
fn requests_past_the_memory_limit_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.arbor");
    let input = data("flights_cls_train.parquet");
    let train = |extra: &[&str]| -> String {
        let mut args = vec!["train", "--input", s(&input), "--label", "label", "--output", s(&model)];
        args.extend_from_slice(extra);
        let e = fails(&args);
        assert!(!model.exists(), "no model is left behind");
        e
    };
    let e = train(&["--set", "n_trees=1000000000"]);
    assert!(e.contains("a forest of n_trees=1000000000 needs") && e.contains("GB"), "{e}");
    let e = train(&["--memory-limit", "1MB"]);
    assert!(e.contains("binning 261876 rows") && e.contains("the memory limit set is 1.0 MB"), "{e}");
    let e = train(&["--memory-limit", "lots"]);
    assert!(e.contains("'lots' is not a size"), "{e}");
}

/// `--features a,b` trains on those columns alone, in that order; a name
/// not in the file is an error naming it, and the model file already there
/// is left as it was.
#[test]
fn train_features_picks_the_columns_trained_on() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.arbor");
    let input = data("flights_cls_train.parquet");
    let args = ["train", "--input", s(&input), "--label", "label", "--output", s(&model), "--set", "n_trees=3"];
    ok(&[&args[..], &["--features", "distance,carrier,dep_delay"]].concat());
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    let names: Vec<&str> = json["features"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["distance", "carrier", "dep_delay"]);
    assert_eq!(json["features"][1]["kind"], "categorical");

    let before = std::fs::read(&model).unwrap();
    let err = fails(&[&args[..], &["--features", "distance,nonesuch"]].concat());
    assert!(err.contains("nonesuch"), "{err}");
    assert_eq!(std::fs::read(&model).unwrap(), before, "a failed run leaves the model file as it was");
}

#[test]
fn init_model_continues_boosting_from_a_model_file() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.parquet");
    write(&train, &read(&data("diamonds_reg_train.parquet")).slice(0, 4_000));
    let path = |name: &str| dir.path().join(name);
    let boost = |rounds: &str, output: &Path, extra: &[&str]| {
        let rounds = format!("n_rounds={rounds}");
        let args = ["train", "--input", s(&train), "--label", "label", "--output", s(output), "--set", &rounds];
        [&args[..], &["--set", "max_depth=4", "--set", "sample_fraction=0.8"], extra]
            .concat()
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    run(boost("50", &path("whole.arbor"), &["--algorithm", "gradient-boosting"]));
    run(boost("30", &path("first.arbor"), &["--algorithm", "gradient-boosting"]));
    // Boosting is the default with a model to continue.
    run(boost("20", &path("continued.arbor"), &["--init-model", s(&path("first.arbor"))]));

    let test = data("diamonds_reg_test.parquet");
    let scores = |model: &Path, out: &Path| {
        ok(&["predict", "--model", s(model), "--input", s(&test), "--output", s(out)]);
        read(out).column_by_name("prediction").unwrap().as_primitive::<Float64Type>().values().to_vec()
    };
    let (whole, continued) =
        (scores(&path("whole.arbor"), &path("w.parquet")), scores(&path("continued.arbor"), &path("c.parquet")));
    assert!(whole.iter().zip(&continued).all(|(a, b)| (a - b).abs() <= 1e-9), "30 + 20 rounds predict as 50");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--model", s(&path("continued.arbor")), "--json"])).unwrap();
    assert_eq!(json["trees"].as_array().unwrap().len(), 50);

    // A forest cannot be continued; a feature the model lacks is named; nothing is written.
    let forest = path("forest.arbor");
    ok(&["train", "--input", s(&train), "--label", "label", "--output", s(&forest), "--set", "n_trees=2"]);
    let out = path("never.arbor");
    let args = ["train", "--input", s(&train), "--label", "label", "--output", s(&out), "--init-model"];
    let err = fails(&[&args[..], &[s(&forest)]].concat());
    assert!(err.contains("init_model") && err.contains("random forest"), "{err}");
    let err = fails(&[&args[..], &[s(&path("first.arbor")), "--features", "carat,cut"]].concat());
    assert!(err.contains("'color'"), "{err}");
    let err = fails(&[&args[..], &[s(&path("nonesuch.arbor"))]].concat());
    assert!(err.contains("nonesuch.arbor"), "{err}");
    assert!(!out.exists(), "a failed run writes no model");
}

/// `arbor train --group COL` ranks the rows of each query (gradient boosting
/// with `loss=lambdarank` by default), `predict` gives the scores that rank
/// them, `inspect` names the loss and its metric, and a query column that
/// is no integer is refused by name, leaving no file.
#[test]
fn group_trains_a_ranker() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("rank.arbor");
    let train = data("rank_train.parquet");
    let args = ["train", "--input", s(&train), "--label", "label", "--group", "query", "--output", s(&model)];
    ok(&[&args[..], &["--set", "n_rounds=30", "--set", "ndcg_at=5"]].concat());
    let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--model", s(&model), "--json"])).unwrap();
    assert_eq!(json["boosting"]["loss"], "lambdarank", "{json}");
    assert_eq!(json["boosting"]["metric"], "1-ndcg@5", "{json}");
    let scored = dir.path().join("scored.parquet");
    ok(&["predict", "--model", s(&model), "--input", s(&data("rank_test.parquet")), "--output", s(&scored)]);
    let out = read(&scored);
    let scores = out.column_by_name("prediction").unwrap().as_primitive::<Float64Type>().values().to_vec();
    let grades = out.column_by_name("label").unwrap().as_primitive::<Int32Type>().values().to_vec();
    // Rows of grade 2 or more score above rows of grade 0, on average.
    let mean = |keep: &dyn Fn(i32) -> bool| {
        let picked: Vec<f64> = scores.iter().zip(&grades).filter(|(_, &g)| keep(g)).map(|(s, _)| *s).collect();
        picked.iter().sum::<f64>() / picked.len() as f64
    };
    assert!(mean(&|g| g >= 2) > mean(&|g| g == 0), "relevant rows rank higher");

    let strings = dir.path().join("strings.parquet");
    let batch = read(&train).slice(0, 200);
    let names: Vec<String> = (0..200).map(|r| format!("q{}", r / 10)).collect();
    write(&strings, &with_column(&batch, "query", Arc::new(StringArray::from(names))));
    let out = dir.path().join("never.arbor");
    let err = fails(&["train", "--input", s(&strings), "--label", "label", "--group", "query", "--output", s(&out)]);
    assert!(err.contains("group column 'query'") && err.contains("integers"), "{err}");
    assert!(!out.exists());
}
