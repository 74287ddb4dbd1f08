//! The same SQL on an in-process Ballista cluster (a scheduler and an
//! executor with two task slots) and in a single-node session: training from
//! several Parquet files, scoring on the executors, and models crossing
//! between the two through Parquet.

mod common;

use arbor_ensemble::Model;
use common::{accuracy, column_f64, diamonds, flights, single_node, Split};
use datafusion::prelude::SessionContext;

/// Runs `sql` and returns its batches.
async fn query(ctx: &SessionContext, sql: &str) -> Vec<arrow::array::RecordBatch> {
    ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")).collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The model the query's first row holds.
async fn model(ctx: &SessionContext, sql: &str) -> Model {
    let batches = query(ctx, sql).await;
    let bytes = arbor_datafusion::model_bytes(batches[0].column(0).as_ref(), 0).expect("a model");
    Model::from_bytes(bytes).unwrap()
}

async fn register(ctx: &SessionContext, split: &Split) {
    query(ctx, &format!("CREATE EXTERNAL TABLE train STORED AS PARQUET LOCATION '{}/'", split.train.display())).await;
    query(ctx, &format!("CREATE EXTERNAL TABLE test STORED AS PARQUET LOCATION '{}'", split.test.display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_forest_trains_level_by_level_and_scores_like_one_node() {
    let split = flights(4);
    let cluster = arbor_ballista::standalone(2).await.unwrap();
    let single = single_node();
    register(&cluster, &split).await;
    register(&single, &split).await;
    let features = "month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time, carrier, origin, dest, distance, hour, minute";
    let train = format!("SELECT train_forest(label, {features}, 'n_trees=24 max_depth=14 seed=5') AS model FROM train");

    // The cluster grew every tree a level per job on the executors.
    let distributed = model(&cluster, &train).await;
    assert_eq!(distributed.trees().len(), 24);
    assert_eq!(distributed.param("n_trees"), Some("24"));
    assert_eq!(distributed.training_rows(), split.train_rows as u64);
    // The same query gives the same model again.
    assert_eq!(model(&cluster, &train).await.to_bytes(), distributed.to_bytes());
    let whole = model(&single, &train).await;

    // The cluster writes its model; the cluster and a single-node session
    // score the test set with it through a join to the models table.
    let written = split.dir.path().join("model.parquet");
    query(&cluster, &format!("COPY ({train}) TO '{}' STORED AS PARQUET", written.display())).await;
    let written_model = common::read(&written);
    let written_model =
        Model::from_bytes(arbor_datafusion::model_bytes(written_model.column(0).as_ref(), 0).unwrap()).unwrap();
    assert_eq!(written_model.to_bytes(), distributed.to_bytes(), "COPY writes the model the query returns");
    let columns: Vec<String> = features.split(", ").map(|f| format!("t.{f}")).collect();
    let scored = format!(
        "SELECT t.label AS label, predict_forest(m.model, {}) AS p FROM test t CROSS JOIN models m ORDER BY t.row_id",
        columns.join(", ")
    );
    let models = format!("CREATE EXTERNAL TABLE models STORED AS PARQUET LOCATION '{}'", written.display());
    query(&cluster, &models).await;
    query(&single, &models).await;
    let on_cluster = query(&cluster, &scored).await;
    let on_one_node = query(&single, &scored).await;
    let predictions = |batches: &[arrow::array::RecordBatch]| column_f64(batches, 1);
    assert_eq!(predictions(&on_cluster), predictions(&on_one_node), "the same model scores alike everywhere");
    let local = distributed.predict(&common::read(&split.test)).unwrap();
    let local: Vec<f64> = column_f64(&[arrow::array::RecordBatch::try_from_iter([("p", local)]).unwrap()], 0);
    assert_eq!(predictions(&on_cluster), local, "the written model is the model the query returned");

    // Accuracy against the single-node model, which saw every row at once.
    let single_scored = format!(
        "SELECT t.label AS label, predict_forest(m.model, {}) AS p FROM test t CROSS JOIN ({train}) m",
        columns.join(", ")
    );
    let (cluster_accuracy, single_accuracy) = (accuracy(&on_cluster), accuracy(&query(&single, &single_scored).await));
    eprintln!("flights RF accuracy: cluster {cluster_accuracy:.4}, single node {single_accuracy:.4}");
    assert!(
        cluster_accuracy >= single_accuracy - 0.002,
        "cluster {cluster_accuracy} against single node {single_accuracy}"
    );
    assert_eq!(whole.trees().len(), 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gradient_boosting_trains_level_by_level_on_the_executors() {
    let (four, three) = (diamonds(4), diamonds(3));
    let cluster = arbor_ballista::standalone(2).await.unwrap();
    let single = single_node();
    register(&cluster, &four).await;
    register(&single, &four).await;
    let in_three = format!("CREATE EXTERNAL TABLE train3 STORED AS PARQUET LOCATION '{}/'", three.train.display());
    query(&cluster, &in_three).await;
    let features = "carat, cut, color, clarity, depth, \"table\", x, y, z";
    let train = format!(
        "SELECT train_forest(label, {features}, 'algorithm=gradient-boosting n_rounds=12 max_depth=5 seed=3') AS model FROM train"
    );
    let on_cluster = model(&cluster, &train).await;
    assert_eq!(on_cluster.trees().len(), 12);
    assert_eq!(on_cluster.training_rows(), four.train_rows as u64);
    // The rows decide the model, not the files they come in.
    let from_three = model(&cluster, &train.replace("FROM train", "FROM train3")).await;
    assert_eq!(from_three.to_bytes(), on_cluster.to_bytes(), "four files or three, the same model");

    // The executors score with it as it scores locally, and as accurately
    // as the single-node model, which saw every row in one place.
    let columns: Vec<String> = features.split(", ").map(|f| format!("t.{f}")).collect();
    let scored = format!(
        "WITH m AS ({train}) SELECT predict_forest(m.model, {}) AS p FROM test t CROSS JOIN m ORDER BY t.row_id",
        columns.join(", ")
    );
    let on_executors = column_f64(&query(&cluster, &scored).await, 0);
    let test = common::read(&four.test);
    let predict = |m: &Model| {
        column_f64(&[arrow::array::RecordBatch::try_from_iter([("p", m.predict(&test).unwrap())]).unwrap()], 0)
    };
    assert_eq!(on_executors, predict(&on_cluster), "the model the cluster scores with is the model it returned");
    let labels = column_f64(std::slice::from_ref(&test), test.schema().index_of("label").unwrap());
    let rmse = |p: &[f64]| (p.iter().zip(&labels).map(|(p, y)| (p - y) * (p - y)).sum::<f64>() / p.len() as f64).sqrt();
    let (cluster_rmse, single_rmse) = (rmse(&on_executors), rmse(&predict(&model(&single, &train).await)));
    eprintln!("diamonds boosting RMSE: cluster {cluster_rmse:.5}, single node {single_rmse:.5}");
    assert!((cluster_rmse - single_rmse).abs() <= 0.01 * single_rmse, "cluster {cluster_rmse}, one node {single_rmse}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn regression_forest_on_the_cluster_is_within_one_percent() {
    let split = diamonds(4);
    let cluster = arbor_ballista::standalone(2).await.unwrap();
    let single = single_node();
    register(&cluster, &split).await;
    register(&single, &split).await;
    let features = "carat, cut, color, clarity, depth, \"table\", x, y, z";
    let scored = format!(
        "WITH m AS (SELECT train_forest(label, {features}, 'n_trees=24 seed=9') AS model FROM train) \
         SELECT sqrt(avg(power(predict_forest(m.model, {}) - t.label, 2))) AS rmse FROM test t CROSS JOIN m",
        features.split(", ").map(|f| format!("t.{f}")).collect::<Vec<_>>().join(", ")
    );
    let rmse_cluster = column_f64(&query(&cluster, &scored).await, 0)[0];
    let rmse_single = column_f64(&query(&single, &scored).await, 0)[0];
    eprintln!("diamonds RF RMSE: cluster {rmse_cluster:.4}, single node {rmse_single:.4}");
    // Level by level, every tree sees every row: as accurate as one node.
    assert!(rmse_cluster <= rmse_single * 1.01, "cluster {rmse_cluster} against single node {rmse_single}");
    // Sub-forests asked for (`parts`), each tree sees one partition's rows.
    let in_parts = scored.replace("'n_trees=24 seed=9'", "'n_trees=24 seed=9 parts=2'");
    let rmse_parts = column_f64(&query(&cluster, &in_parts).await, 0)[0];
    eprintln!("diamonds RF RMSE in two sub-forests: {rmse_parts:.4}");
    assert!(rmse_parts <= rmse_single * 1.15, "sub-forests {rmse_parts} against single node {rmse_single}");
}

#[tokio::test]
async fn the_planner_tells_train_forest_its_partitions() {
    let split = flights(4);
    let config = arbor_ballista::session_config().with_target_partitions(2);
    let ctx = SessionContext::new_with_state(arbor_ballista::session_state(config).unwrap());
    register(&ctx, &split).await;
    // The scheduler's session (no level-wise planner: a client's plans
    // arrive trained) grows forests as sub-forests: what a client's forests
    // that cannot grow level by level (out-of-bag, extra trees) become.
    for (sql, expected) in [
        ("SELECT train_forest(label, month, dest, 'n_trees=8 oob=true') FROM train", "n_trees=8 oob=true parts=2"),
        (
            "SELECT train_forest(label, month, dest, 'n_trees=6 splitter=random') FROM train",
            "n_trees=6 splitter=random parts=2",
        ),
    ] {
        // The partial and the final aggregate both see the planner's option
        // (EXPLAIN shows an aggregate's original name, so the plan is walked).
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
        let options = train_forest_options(&plan);
        assert_eq!(options, vec![expected.to_owned(), expected.to_owned()], "{sql}");
        // And the query runs: the final aggregate merges three parts.
        let first = model(&ctx, sql).await;
        assert_eq!(first.training_rows(), split.train_rows as u64);
        for _ in 0..3 {
            assert_eq!(model(&ctx, sql).await.to_bytes(), first.to_bytes(), "{sql} is deterministic");
        }
    }
    // Without an options literal the option comes as a new argument (a
    // GROUP BY keeps the forest from growing level by level).
    let grouped = "SELECT origin, train_forest(label, month, dest) FROM train GROUP BY origin";
    let plan = ctx.sql(grouped).await.unwrap().create_physical_plan().await.unwrap();
    assert_eq!(train_forest_options(&plan), vec!["parts=2".to_owned(), "parts=2".to_owned()]);
}

/// The options literal of every `train_forest` in a physical plan.
fn train_forest_options(plan: &std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> Vec<String> {
    use datafusion::physical_expr::expressions::Literal;
    use datafusion::physical_plan::aggregates::AggregateExec;
    let mut found = Vec::new();
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        for e in aggregate.aggr_expr().iter().filter(|e| e.fun().name() == "train_forest") {
            let args = e.expressions();
            let last = args.last().unwrap().downcast_ref::<Literal>().map(|l| l.value().to_string());
            found.push(last.unwrap_or_default());
        }
    }
    for child in plan.children() {
        found.extend(train_forest_options(child));
    }
    found
}

/// Level jobs read each partition's kept shard instead of its files: the
/// model is the same bytes with the shard store on, off, and holding about
/// one shard (so each level mixes kept shards with partitions read again),
/// and with it on, level jobs after the first find their shards. Four
/// partitions on two task slots, so a task runs two: it numbers its
/// partitions from 0, so a shard named by that number would be read for
/// another partition's rows; and its partitions must not take each other's
/// files (DataFusion's work stealing), or a shard holds other rows than
/// its files'.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kept_shards_train_the_same_bytes_as_rows_read_every_level() {
    let split = flights(4);
    let cluster = arbor_ballista::standalone_partitioned(2, 4).await.unwrap();
    register(&cluster, &split).await;
    let features = "month, day, dep_time, dep_delay, carrier, origin, distance";
    let store = arbor_datafusion::shard_store();
    for options in ["n_trees=6 max_depth=10 seed=2", "algorithm=gradient-boosting n_rounds=5 max_depth=4"] {
        let train = format!("SELECT train_forest(label, {features}, '{options}') AS model FROM train");
        let before = store.stats();
        let kept = model(&cluster, &train).await;
        let after = store.stats();
        assert!(after.hits >= before.hits + 4, "{options}: level jobs found their shards ({before:?} then {after:?})");
        let budget = store.budget();
        store.set_budget(0);
        let read = model(&cluster, &train).await;
        store.set_budget(after.largest * 3 / 2);
        let evictions = store.stats().evictions;
        let churned = model(&cluster, &train).await;
        assert!(store.stats().evictions > evictions, "{options}: a budget of about one shard evicts");
        store.set_budget(budget);
        assert!(kept.to_bytes() == read.to_bytes(), "{options}: kept shards or rows read again, one model");
        assert!(kept.to_bytes() == churned.to_bytes(), "{options}: some shards kept, some read again, one model");
    }
}
