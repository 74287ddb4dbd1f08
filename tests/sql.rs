//! SQL in an embedded DataFusion session: train_forest, predict_forest,
//! predict_forest_proba and forest_info on bundled data.

use std::path::PathBuf;
use std::process::Command;

use arbor_datafusion::model_bytes;
use arbor_ensemble::Model;
use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int32Type, Int64Type};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data").join(name).to_str().unwrap().to_owned()
}

async fn session(partitions: usize, batch_size: usize) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions).with_batch_size(batch_size);
    let ctx = SessionContext::new_with_config(config);
    arbor_datafusion::register(&ctx);
    with_tables(ctx).await
}

/// A session with arbor's functions but not the rule that bins as it reads:
/// every `train_forest` collects its rows, as under GROUP BY.
async fn aggregate_session(partitions: usize, batch_size: usize) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions).with_batch_size(batch_size);
    let mut state = SessionStateBuilder::new().with_config(config).with_default_features().build();
    arbor_datafusion::register_all(&mut state).unwrap();
    with_tables(SessionContext::new_with_state(state)).await
}

async fn with_tables(ctx: SessionContext) -> SessionContext {
    for (name, file) in [
        ("flights_train", "flights_cls_train.parquet"),
        ("flights_test", "flights_cls_test.parquet"),
        ("diamonds_train", "diamonds_reg_train.parquet"),
        ("diamonds_test", "diamonds_reg_test.parquet"),
    ] {
        ctx.sql(&format!("CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION '{}'", data(file))).await.unwrap();
    }
    ctx
}

async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")).collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn query_err(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Err(e) => e.to_string(),
        Ok(df) => df.collect().await.expect_err(sql).to_string(),
    }
}

const FLIGHT_FEATURES: &str =
    "month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time, carrier, origin, dest, distance, hour, minute";

#[tokio::test]
async fn sql_model_equals_cli_model() {
    let ctx = session(1, 8192).await;
    let sql = format!(
        "SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=4') AS m FROM (SELECT * FROM flights_train LIMIT 20000)"
    );
    let batches = query(&ctx, &sql).await;
    let sql_bytes = model_bytes(batches[0].column(0), 0).unwrap().to_vec();

    let dir = tempfile::tempdir().unwrap();
    let subset = dir.path().join("subset.parquet");
    let model = dir.path().join("cli.arbor");
    query(&ctx, &format!("COPY (SELECT * FROM flights_train LIMIT 20000) TO '{}' STORED AS PARQUET", subset.display()))
        .await;
    let status = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["train", "--input", subset.to_str().unwrap(), "--label", "label", "--output", model.to_str().unwrap()])
        .args(["--set", "n_trees=4"])
        .status()
        .unwrap();
    assert!(status.success());
    let cli_bytes = std::fs::read(&model).unwrap();
    let (a, b) = (Model::from_bytes(&sql_bytes).unwrap(), Model::from_bytes(&cli_bytes).unwrap());
    assert_eq!(a.features(), b.features());
    assert_eq!(a.trees(), b.trees());
    assert_eq!(sql_bytes, cli_bytes, "same data, same options: the same model bytes");
}

/// A label of a single class: SQL and `arbor train` give the same bytes on
/// the same rows, for a forest and a boosted model, and the model predicts
/// its class with probability 1, a list of one.
#[tokio::test]
async fn one_class_sql_model_equals_cli_model() {
    let ctx = session(2, 1000).await;
    let rows = "SELECT * FROM flights_train WHERE label = 0 AND month = 1 AND day < 8";
    let dir = tempfile::tempdir().unwrap();
    let subset = dir.path().join("one_class.parquet");
    query(&ctx, &format!("COPY ({rows}) TO '{}' STORED AS PARQUET", subset.display())).await;
    for (options, cli_args) in [
        ("n_trees=4", vec!["--set", "n_trees=4"]),
        ("algorithm=gradient-boosting n_rounds=4", vec!["--algorithm", "gradient-boosting", "--set", "n_rounds=4"]),
    ] {
        let sql = format!("SELECT train_forest(label, {FLIGHT_FEATURES}, '{options}') AS m FROM ({rows})");
        let sql_bytes = model_bytes(query(&ctx, &sql).await[0].column(0), 0).unwrap().to_vec();
        let model = dir.path().join("cli.arbor");
        let status = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args([
                "train",
                "--input",
                subset.to_str().unwrap(),
                "--label",
                "label",
                "--output",
                model.to_str().unwrap(),
            ])
            .args(&cli_args)
            .output()
            .unwrap();
        assert!(status.status.success(), "{options}: {}", String::from_utf8_lossy(&status.stderr));
        assert_eq!(sql_bytes, std::fs::read(&model).unwrap(), "{options}: same one-class rows, the same model bytes");
        assert_eq!(Model::from_bytes(&sql_bytes).unwrap().class_names(), ["0"]);

        let scored = query(
            &ctx,
            &format!(
                "WITH m AS ({sql}) SELECT count(*), bool_and(predict_forest(m.m, {features}) = 0), \
                 bool_and(predict_forest_proba(m.m, {features}) = [1.0]) FROM flights_test, m",
                features =
                    FLIGHT_FEATURES.split(", ").map(|f| format!("flights_test.{f}")).collect::<Vec<_>>().join(", ")
            ),
        )
        .await;
        assert_eq!(scored[0].column(0).as_primitive::<Int64Type>().value(0), 65_470);
        assert!(scored[0].column(1).as_boolean().value(0), "{options}: every row is the one class");
        assert!(scored[0].column(2).as_boolean().value(0), "{options}: its probability is 1, a list of one");
    }
}

/// Sample weights in SQL: the `weight` option names the argument that holds
/// them, and the model equals the CLI's `--weight` model on the same rows.
#[tokio::test]
async fn weighted_sql_model_equals_weighted_cli_model() {
    let ctx = session(1, 8192).await;
    let rows = "SELECT *, CAST(1 + month % 3 AS DOUBLE) AS w FROM flights_train LIMIT 10000";
    let sql = format!("SELECT train_forest(label, {FLIGHT_FEATURES}, w, 'n_trees=3, weight=w') AS m FROM ({rows})");
    let sql_bytes = model_bytes(query(&ctx, &sql).await[0].column(0), 0).unwrap().to_vec();
    let unweighted = format!("SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=3') AS m FROM ({rows})");
    let unweighted_bytes = model_bytes(query(&ctx, &unweighted).await[0].column(0), 0).unwrap().to_vec();
    assert_ne!(sql_bytes, unweighted_bytes, "the weights must matter");

    let dir = tempfile::tempdir().unwrap();
    let subset = dir.path().join("weighted.parquet");
    let model = dir.path().join("cli.arbor");
    query(&ctx, &format!("COPY ({rows}) TO '{}' STORED AS PARQUET", subset.display())).await;
    let status = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["train", "--input", subset.to_str().unwrap(), "--label", "label", "--output", model.to_str().unwrap()])
        .args(["--weight", "w", "--set", "n_trees=3"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(sql_bytes, std::fs::read(&model).unwrap(), "same weighted rows: the same model bytes");

    let e = query_err(&ctx, &format!("SELECT train_forest(label, {FLIGHT_FEATURES}, 'weight=wt') FROM ({rows})")).await;
    assert!(e.contains("'weight'") && e.contains("'wt'") && e.contains("dep_delay"), "{e}");
}

/// `forest_importance` lists every feature with the importance `inspect` shows,
/// ready for `unnest`; MDA importance is an option like any other.
#[tokio::test]
async fn forest_importance_unnests_to_one_row_per_feature() {
    let ctx = session(1, 8192).await;
    let sql = format!(
        "WITH m AS (SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=5 importance=mda_raw') AS forest
                    FROM (SELECT * FROM flights_train LIMIT 5000)),
              e AS (SELECT unnest(forest_importance(forest)) AS entry FROM m)
         SELECT entry['feature'] AS feature, entry['importance'] AS importance FROM e ORDER BY importance DESC"
    );
    let batches = query(&ctx, &sql).await;
    let features = batches[0].column(0).as_string_view_opt().map(|a| a.value(0).to_owned());
    let features = features.unwrap_or_else(|| batches[0].column(0).as_string::<i32>().value(0).to_owned());
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), FLIGHT_FEATURES.split(", ").count());
    assert_eq!(features, "dep_delay", "permuting the departure delay costs the most accuracy");
}

#[tokio::test]
async fn train_and_predict_in_sql_through_partial_aggregation() {
    // several partitions and tiny batches force the partial/merge path
    let ctx = session(3, 1000).await;
    query(
        &ctx,
        &format!("CREATE TABLE model AS SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=10') AS forest FROM (SELECT * FROM flights_train LIMIT 30000)"),
    )
    .await;
    let batches = query(
        &ctx,
        &format!(
            "SELECT avg(CASE WHEN predict_forest(m.forest, {FLIGHT_FEATURES}) = t.label THEN 1.0 ELSE 0.0 END) AS acc,
                    arrow_typeof(predict_forest(m.forest, {FLIGHT_FEATURES})) AS t,
                    avg(predict_forest_proba(m.forest, {FLIGHT_FEATURES})[2]) AS p_late
             FROM (SELECT * FROM flights_test LIMIT 10000) t CROSS JOIN model m
             GROUP BY 2"
        ),
    )
    .await;
    let acc = batches[0].column(0).as_primitive::<Float64Type>().value(0);
    assert!(acc > 0.87, "accuracy {acc}");
    assert_eq!(batches[0].column(1).as_string::<i32>().value(0), "Int32", "the label's own type");
    let p_late = batches[0].column(2).as_primitive::<Float64Type>().value(0);
    assert!((0.1..0.35).contains(&p_late), "mean probability of a late arrival {p_late}");
}

#[tokio::test]
async fn one_model_per_group_predicted_through_a_join() {
    let ctx = session(2, 4096).await;
    query(
        &ctx,
        &format!(
            "CREATE TABLE models AS SELECT origin, train_forest(label, {FLIGHT_FEATURES}, 'n_trees=6') AS forest
             FROM (SELECT * FROM flights_train LIMIT 30000) GROUP BY origin"
        ),
    )
    .await;
    let batches = query(&ctx, "SELECT count(*) FROM models").await;
    assert_eq!(batches[0].column(0).as_primitive::<Int64Type>().value(0), 3, "EWR, JFK, LGA");
    let batches = query(
        &ctx,
        &format!(
            "SELECT avg(CASE WHEN predict_forest(m.forest, {}) = t.label THEN 1.0 ELSE 0.0 END)
             FROM (SELECT * FROM flights_test LIMIT 10000) t JOIN models m ON t.origin = m.origin",
            FLIGHT_FEATURES.split(", ").map(|f| format!("t.{f}")).collect::<Vec<_>>().join(", ")
        ),
    )
    .await;
    let acc = batches[0].column(0).as_primitive::<Float64Type>().value(0);
    assert!(acc > 0.87, "accuracy {acc}");
}

#[tokio::test]
async fn regression_in_sql() {
    let ctx = session(2, 8192).await;
    let batches = query(
        &ctx,
        "WITH m AS (SELECT train_forest(label, carat, cut, color, clarity, depth, \"table\", x, y, z, 'n_trees=10 max_features=3') AS f
                    FROM (SELECT * FROM diamonds_train LIMIT 8000))
         SELECT sqrt(avg(power(predict_forest(m.f, carat, cut, color, clarity, depth, \"table\", x, y, z) - label, 2))),
                arrow_typeof(predict_forest(m.f, carat, cut, color, clarity, depth, \"table\", x, y, z))
         FROM diamonds_test, m GROUP BY 2",
    )
    .await;
    let rmse = batches[0].column(0).as_primitive::<Float64Type>().value(0);
    assert!(rmse < 0.14, "rmse {rmse}");
    assert_eq!(batches[0].column(1).as_string::<i32>().value(0), "Float64");
}

#[tokio::test]
async fn forest_info_is_the_inspect_json() {
    let ctx = session(1, 8192).await;
    let batches = query(
        &ctx,
        "SELECT forest_info(train_forest(label, dep_delay, carrier, 'n_trees=3')) FROM (SELECT * FROM flights_train LIMIT 3000)",
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(batches[0].column(0).as_string::<i32>().value(0)).unwrap();
    assert_eq!(json["task"], "classification");
    assert_eq!(json["features"][1]["name"], "carrier");
    assert_eq!(json["trees"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn sql_errors_are_clear() {
    let ctx = session(1, 8192).await;
    let e = query_err(&ctx, "SELECT train_forest(label, dep_delay, 'n_tres=3') FROM flights_train").await;
    assert!(e.contains("unknown option 'n_tres'"), "{e}");
    // No row to train on: a NULL model, or with on_group_error=fail an error that says why.
    let batches =
        query(&ctx, "SELECT train_forest(label, dep_delay) IS NULL FROM flights_train WHERE month > 12").await;
    assert!(batches[0].column(0).as_boolean().value(0));
    let e = query_err(
        &ctx,
        "SELECT train_forest(label, dep_delay, 'on_group_error=fail') FROM flights_train WHERE month > 12",
    )
    .await;
    assert!(e.contains("on_group_error=fail") && e.contains("its input") && e.contains("empty"), "{e}");
    let e = query_err(&ctx, "SELECT train_forest(label) FROM flights_train").await;
    assert!(e.contains("at least one feature"), "{e}");
    let e = query_err(
        &ctx,
        "SELECT train_forest(label, dep_delay, 'task=regression n_trees=2') FROM flights_train LIMIT 10",
    )
    .await;
    assert!(e.contains("CAST(label AS DOUBLE)"), "{e}");
    let e = query_err(
        &ctx,
        "WITH m AS (SELECT train_forest(label, dep_delay, carrier, 'n_trees=2') AS f FROM (SELECT * FROM flights_train LIMIT 500))
         SELECT predict_forest(m.f, dep_delay) FROM flights_test, m",
    )
    .await;
    assert!(e.contains("2 features") && e.contains("carrier"), "{e}");
    let e = query_err(
        &ctx,
        "WITH m AS (SELECT train_forest(label, dep_delay, carrier, 'n_trees=2') AS f FROM (SELECT * FROM flights_train LIMIT 500))
         SELECT predict_forest(m.f, dep_delay, month) FROM flights_test, m",
    )
    .await;
    assert!(e.contains("'carrier'") && e.contains("categorical"), "{e}");
    let e = query_err(&ctx, "SELECT predict_forest(X'00010203', dep_delay) FROM flights_test").await;
    assert!(e.contains("invalid model"), "{e}");
    let batches =
        query(&ctx, "SELECT predict_forest(CAST(NULL AS BYTEA), dep_delay) IS NULL FROM flights_test LIMIT 1").await;
    assert!(batches[0].column(0).as_boolean().value(0));
}

/// An imported XGBoost model is an ordinary model in SQL: `predict_forest_proba`
/// gives XGBoost's probabilities.
#[tokio::test]
async fn an_imported_xgboost_model_predicts_in_sql() {
    let interop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/arbor-ensemble/tests/interop");
    let model = Model::from_xgboost_json(&std::fs::read(interop.join("xgb_binary.json")).unwrap()).unwrap();
    let ctx = session(2, 100).await;
    let models = RecordBatch::try_from_iter([(
        "model",
        std::sync::Arc::new(arrow::array::BinaryArray::from_vec(vec![&model.to_bytes()])) as arrow::array::ArrayRef,
    )])
    .unwrap();
    ctx.register_batch("models", models).unwrap();
    let rows = interop.join("flights_rows.parquet");
    ctx.sql(&format!("CREATE EXTERNAL TABLE rows STORED AS PARQUET LOCATION '{}'", rows.display())).await.unwrap();
    let sql = "SELECT predict_forest_proba(m.model, month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time, \
               distance, hour)[2] AS p, xgb_binary FROM rows CROSS JOIN models m";
    let batches = query(&ctx, sql).await;
    let mut n = 0;
    for b in &batches {
        let (got, want) = (b.column(0).as_primitive::<Float64Type>(), b.column(1).as_primitive::<Float64Type>());
        for (g, w) in got.values().iter().zip(want.values()) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-3), "{g} vs {w}");
            n += 1;
        }
    }
    assert_eq!(n, 300);
}

/// Lowercase hex, for a binary SQL literal `X'...'`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_cached_model_never_answers_for_other_bytes() {
    // Two copies of a model that differ in one payload byte share their header
    // (length and checksum); the corrupt one must fail its checksum even after
    // the good one was decoded and cached in the same session.
    let ctx = session(1, 8192).await;
    let train = "SELECT train_forest(label, dep_delay, carrier, 'n_trees=3') AS m FROM (SELECT * FROM flights_train LIMIT 3000)";
    let good = model_bytes(query(&ctx, train).await[0].column(0), 0).unwrap().to_vec();
    let mut bad = good.clone();
    let middle = 28 + (bad.len() - 28) / 2;
    bad[middle] ^= 0x40;
    assert_eq!(good[..28], bad[..28], "the same header");

    let score = |bytes: &[u8]| format!("SELECT predict_forest(X'{}', 12.0, 'UA') AS p", hex(bytes));
    let first = query(&ctx, &score(&good)).await;
    assert_eq!(first[0].num_rows(), 1);
    let on_its_own = query_err(&session(1, 8192).await, &score(&bad)).await;
    assert!(on_its_own.contains("checksum"), "{on_its_own}");
    assert_eq!(query_err(&ctx, &score(&bad)).await, on_its_own);

    // The same through model columns: the good model scored first, then the bad.
    query(&ctx, &format!("CREATE TABLE good AS SELECT X'{}' AS m", hex(&good))).await;
    query(&ctx, &format!("CREATE TABLE bad AS SELECT X'{}' AS m", hex(&bad))).await;
    query(&ctx, "SELECT predict_forest_proba(m, 12.0, 'UA') FROM good").await;
    let err = query_err(&ctx, "SELECT predict_forest_proba(m, 12.0, 'UA') FROM bad").await;
    assert!(err.contains("checksum"), "{err}");
    let err = query_err(&ctx, "SELECT forest_info(m) FROM bad").await;
    assert!(err.contains("checksum"), "{err}");
}

/// Model columns written before the typed struct (bare `BinaryView` with the
/// prediction type in field metadata) still predict: typed from the metadata
/// where the session reads it (`arbor sql` does), as text where it does not.
#[tokio::test]
async fn model_columns_written_before_the_struct_still_predict() {
    use arrow::array::{ArrayRef, BinaryViewArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    let ctx = session(1, 8192).await;
    let sample = "(SELECT * FROM flights_train LIMIT 3000)";
    let train = format!("SELECT train_forest(label, dep_delay, carrier, 'n_trees=3') AS m FROM {sample}");
    let bytes = model_bytes(query(&ctx, &train).await[0].column(0), 0).unwrap().to_vec();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old_models.parquet");
    let metadata = [("arbor.prediction_type".to_owned(), "Int32".to_owned())].into();
    let schema = Arc::new(Schema::new(vec![Field::new("forest", DataType::BinaryView, true).with_metadata(metadata)]));
    let column = Arc::new(BinaryViewArray::from(vec![bytes.as_slice()])) as ArrayRef;
    let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&old).unwrap(), schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();

    let score = "SELECT arrow_typeof(predict_forest(o.forest, t.dep_delay, t.carrier)) AS t, \
                 CAST(predict_forest(o.forest, t.dep_delay, t.carrier) AS INT) AS p FROM old o, \
                 (SELECT * FROM flights_test LIMIT 500) t";
    let reference = format!(
        "SELECT predict_forest(X'{}', t.dep_delay, t.carrier) AS p FROM (SELECT * FROM flights_test LIMIT 500) t",
        hex(&bytes)
    );
    let expected = query(&ctx, &reference).await;
    for (skip_metadata, typed) in [(false, "Int32"), (true, "Utf8")] {
        let config = SessionConfig::new().set_bool("datafusion.execution.parquet.skip_metadata", skip_metadata);
        let reader = SessionContext::new_with_config(config);
        arbor_datafusion::register(&reader);
        reader.register_parquet("old", old.to_str().unwrap(), Default::default()).await.unwrap();
        reader.register_parquet("flights_test", &data("flights_cls_test.parquet"), Default::default()).await.unwrap();
        let got = query(&reader, score).await;
        assert_eq!(got[0].column(0).as_string::<i32>().value(0), typed, "skip_metadata={skip_metadata}");
        let got: Vec<i32> =
            got.iter().flat_map(|b| b.column(1).as_primitive::<Int32Type>().values().to_vec()).collect();
        let want: Vec<i32> =
            expected.iter().flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec()).collect();
        assert_eq!(got, want, "skip_metadata={skip_metadata}");
    }
}

/// The model bytes of the one-row result of `sql`.
async fn model_of(ctx: &SessionContext, sql: &str) -> Vec<u8> {
    let batches = query(ctx, sql).await;
    model_bytes(batches[0].column(0), 0).unwrap_or_else(|| panic!("{sql}: no model")).to_vec()
}

/// The physical plan of `sql`, as EXPLAIN prints it.
async fn physical_plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = query(ctx, &format!("EXPLAIN {sql}")).await;
    let plans = batches[0].column(1).as_string::<i32>();
    plans.iter().flatten().collect::<Vec<_>>().join("\n")
}

/// Without GROUP BY, `train_forest` bins as it reads (its input read twice
/// when it gives the same rows each time, else held once read) and trains
/// the very model the collecting aggregate trains, over several partitions
/// and small batches: classification with categorical features,
/// regression, sample weights, gradient boosting, exact splits.
#[tokio::test]
async fn binned_training_trains_the_aggregates_model() {
    let binned = session(3, 5000).await;
    let collected = aggregate_session(3, 5000).await;
    let cases = [
        (format!("SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=4') FROM flights_train"), true),
        (
            format!(
                "SELECT train_forest(label, {FLIGHT_FEATURES}, w, 'weight=w n_trees=3 max_depth=6')
                 FROM (SELECT *, 1.0 + month % 3 AS w FROM flights_train WHERE distance > 300)"
            ),
            true,
        ),
        (
            "SELECT train_forest(label, carat, cut, color, clarity, depth, \"table\", x, y, z, \
             'algorithm=gradient-boosting n_rounds=8') FROM diamonds_train"
                .to_owned(),
            true,
        ),
        (
            "SELECT train_forest(label, carat, depth, 'n_trees=2 split_method=exact') FROM diamonds_train".to_owned(),
            true,
        ),
        // A limit and a volatile function may give other rows when read again: read once.
        (format!("SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=3') FROM (SELECT * FROM flights_train LIMIT 30000)"), false),
        (
            "SELECT train_forest(label, dep_delay, r, 'n_trees=2') FROM (SELECT *, random() AS r FROM flights_train)"
                .to_owned(),
            false,
        ),
    ];
    for (sql, twice) in &cases {
        let plan = physical_plan(&binned, sql).await;
        let reads = if *twice { "reads its input twice" } else { "holds its input read once" };
        assert!(plan.contains("BinnedTrainingExec") && plan.contains(reads), "{sql}\n{plan}");
        assert!(!physical_plan(&collected, sql).await.contains("BinnedTrainingExec"));
        if sql.contains("random()") {
            continue; // other rows each run
        }
        assert!(model_of(&binned, sql).await == model_of(&collected, sql).await, "{sql}: the models differ");
    }
    let trained = query(&binned, &cases[5].0).await;
    assert!(model_bytes(trained[0].column(0), 0).is_some(), "a volatile input trains too");
}

/// GROUP BY keeps the collecting aggregate: each group's rows are held until it trains.
#[tokio::test]
async fn grouped_training_keeps_the_aggregate() {
    let ctx = session(2, 8192).await;
    let plan =
        physical_plan(&ctx, "SELECT carrier, train_forest(label, dep_delay) FROM flights_train GROUP BY carrier").await;
    assert!(!plan.contains("BinnedTrainingExec"), "{plan}");
}

/// The session's memory limit bounds training: a request past it is an
/// error naming the figure, not an abort; within it the model trains.
#[tokio::test]
async fn the_sessions_memory_limit_bounds_training() {
    let ctx = session(2, 8192).await;
    let sql = format!("SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=2') FROM flights_train");
    query(&ctx, "SET datafusion.runtime.memory_limit = '1M'").await;
    let e = query_err(&ctx, &sql).await;
    assert!(e.contains("needs") && e.contains("the session's memory pool") && e.contains("MB"), "{e}");
    // Held input is counted against the pool as it arrives.
    let limited = format!(
        "SELECT train_forest(label, {FLIGHT_FEATURES}, 'n_trees=2') FROM (SELECT * FROM flights_train LIMIT 200000)"
    );
    let e = query_err(&ctx, &limited).await;
    assert!(e.contains("Resources exhausted") || e.contains("the session's memory pool"), "{e}");
    query(&ctx, "SET datafusion.runtime.memory_limit = '512M'").await;
    assert!(!model_of(&ctx, &sql).await.is_empty());
}

const DIAMOND_FEATURES: &str = "carat, cut, color, clarity, depth, \"table\", x, y, z";

/// Every tree of two models, equal.
fn same_trees(a: &Model, b: &Model) {
    assert_eq!(a.trees().len(), b.trees().len());
    for t in 0..a.trees().len() {
        assert_eq!(a.trees().get(t), b.trees().get(t), "tree {t}");
    }
}

/// A model argument after the features continues boosting from it: a
/// scalar subquery's, a joined table's per group; 30 rounds then 20 are
/// the trees of 50 at once. Misplaced or mixed models are clear errors.
#[tokio::test]
async fn train_forest_continues_boosting_from_a_model_argument() {
    let ctx = session(3, 2048).await;
    query(&ctx, "CREATE TABLE d AS SELECT * FROM diamonds_train WHERE carat < 0.6").await;
    let boost = |rounds: usize, model: &str, group: bool| {
        let key = if group { "cut AS key, " } else { "" };
        let by = if group { " GROUP BY cut" } else { "" };
        format!(
            "SELECT {key}train_forest(label, {DIAMOND_FEATURES}{model}, 'algorithm=gradient-boosting n_rounds={rounds} \
             max_depth=3 sample_fraction=0.8') AS m FROM d{by}"
        )
    };
    let whole = Model::from_bytes(&model_of(&ctx, &boost(50, "", false)).await).unwrap();
    query(&ctx, &format!("CREATE TABLE first AS {}", boost(30, "", false))).await;
    // The model from a scalar subquery; `algorithm` may be left out.
    let continued = model_of(
        &ctx,
        &format!(
            "SELECT train_forest(label, {DIAMOND_FEATURES}, (SELECT m FROM first), 'n_rounds=20 max_depth=3 \
             sample_fraction=0.8') FROM d"
        ),
    )
    .await;
    same_trees(&Model::from_bytes(&continued).unwrap(), &whole);

    // One model per group, continued through a join on the group's key.
    query(&ctx, &format!("CREATE TABLE firsts AS {}", boost(30, "", true))).await;
    query(&ctx, &format!("CREATE TABLE wholes AS {}", boost(50, "", true))).await;
    let joined: Vec<&str> = DIAMOND_FEATURES.split(", ").collect();
    let joined = joined.iter().map(|f| format!("d.{f}")).collect::<Vec<_>>().join(", ");
    let batches = query(
        &ctx,
        &format!(
            "WITH more AS (SELECT d.cut AS key, train_forest(d.label, {joined}, f.m, 'n_rounds=20 max_depth=3 \
             sample_fraction=0.8') AS m FROM d JOIN firsts f ON d.cut = f.key GROUP BY d.cut)
             SELECT more.m, wholes.m FROM more JOIN wholes ON more.key = wholes.key ORDER BY more.key"
        ),
    )
    .await;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 5, "one model per cut");
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let more = Model::from_bytes(model_bytes(batch.column(0), row).unwrap()).unwrap();
            let whole = Model::from_bytes(model_bytes(batch.column(1), row).unwrap()).unwrap();
            same_trees(&more, &whole);
        }
    }

    let err =
        query_err(&ctx, &format!("SELECT train_forest(label, (SELECT m FROM first), {DIAMOND_FEATURES}) FROM d")).await;
    assert!(err.contains("goes after the features"), "{err}");
    let err = query_err(&ctx, &format!("SELECT train_forest(d.label, {joined}, f.m) FROM d CROSS JOIN firsts f")).await;
    assert!(err.contains("'m' holds different models in one group"), "{err}");
    let err =
        query_err(&ctx, "SELECT train_forest(label, carat, cut, (SELECT m FROM first), 'n_rounds=2') FROM d").await;
    assert!(err.contains("'color'"), "{err}");
}

/// Learning to rank in SQL: `group=ARG` names the argument of query ids,
/// boosting with `loss=lambdarank` is then the default, and the model is
/// the one `arbor train --group` trains on the same rows, whether the
/// aggregate bins as it reads or collects its rows.
#[tokio::test]
async fn train_forest_ranks_within_the_queries_of_a_group_argument() {
    let features: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    let features = features.join(", ");
    // SQL plans a model's prediction type from the label's: grades ranked as numbers are cast.
    let rows = format!("SELECT query, CAST(label AS DOUBLE) AS label, {features} FROM rank_train");
    let sql = format!("SELECT train_forest(label, {features}, query, 'group=query, n_rounds=15') AS m FROM ({rows})");
    let mut bytes = Vec::new();
    for ctx in [session(1, 8192).await, aggregate_session(3, 500).await] {
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE rank_train STORED AS PARQUET LOCATION '{}'",
            data("rank_train.parquet")
        ))
        .await
        .unwrap();
        bytes.push(model_bytes(query(&ctx, &sql).await[0].column(0), 0).unwrap().to_vec());
        let e = query_err(&ctx, &format!("SELECT train_forest(label, {features}, 'group=qid') FROM ({rows})")).await;
        assert!(e.contains("'group'") && e.contains("'qid'"), "{e}");
        let squared =
            format!("SELECT train_forest(label, {features}, query, 'group=query, loss=squared') FROM ({rows})");
        let e = query_err(&ctx, &squared).await;
        assert!(e.contains("loss=lambdarank only; the loss is squared"), "{e}");
    }
    assert_eq!(bytes[0], bytes[1], "binned as read and collected: the same model");
    let model = Model::from_bytes(&bytes[0]).unwrap();
    assert_eq!(model.boosting().unwrap().loss, arbor_ensemble::Loss::LAMBDARANK);
    assert_eq!(model.features().len(), 20, "the query column is no feature");

    let dir = tempfile::tempdir().unwrap();
    let (subset, cli) = (dir.path().join("rank.parquet"), dir.path().join("rank.arbor"));
    let ctx = session(1, 8192).await;
    ctx.sql(&format!("CREATE EXTERNAL TABLE rank_train STORED AS PARQUET LOCATION '{}'", data("rank_train.parquet")))
        .await
        .unwrap();
    query(&ctx, &format!("COPY ({rows}) TO '{}' STORED AS PARQUET", subset.display())).await;
    let status = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["train", "--input", subset.to_str().unwrap(), "--label", "label", "--output", cli.to_str().unwrap()])
        .args(["--group", "query", "--set", "n_rounds=15"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(bytes[0], std::fs::read(&cli).unwrap(), "SQL and arbor train --group: the same model bytes");
}
