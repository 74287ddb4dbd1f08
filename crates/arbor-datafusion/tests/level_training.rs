//! Gradient boosting and random forests trained level by level over a
//! table's partitions (the planner a cluster session uses), in one process:
//! the model does not depend on the partitions, fits as the single-node
//! model does, and the planner leaves alone what it does not train.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arbor_datafusion::{LevelProgress, LevelStep, LevelTraining};
use arbor_ensemble::distributed::{InMemory, Outcome};
use arbor_ensemble::{Model, TrainParams, Trainer};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name)
}

/// The physical plans made through a planner: one per query, one per training step.
#[derive(Debug, Default)]
struct Plans {
    count: AtomicUsize,
    shown: Mutex<Vec<String>>,
}

impl Plans {
    fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

/// Counts and keeps (as text) the plans made through it.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
    plans: Arc<Plans>,
}

#[async_trait]
impl QueryPlanner for Counting {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        self.plans.count.fetch_add(1, Ordering::Relaxed);
        let physical = self.inner.create_physical_plan(plan, session).await?;
        let shown = datafusion::physical_plan::displayable(physical.as_ref()).indent(false).to_string();
        self.plans.shown.lock().unwrap().push(shown);
        Ok(physical)
    }
}

/// A session of `partitions` partitions whose planner trains level by
/// level, and the plans it makes.
fn level_session(partitions: usize) -> (SessionContext, Arc<Plans>) {
    let config = SessionConfig::new().with_target_partitions(partitions);
    let state = SessionStateBuilder::new().with_default_features().with_config(config).build();
    let plans = Arc::new(Plans::default());
    let counting = Counting { inner: state.query_planner().clone(), plans: plans.clone() };
    let state = SessionStateBuilder::new_from_existing(state)
        .with_query_planner(Arc::new(LevelTraining::new(Arc::new(counting))))
        .build();
    let ctx = SessionContext::new_with_state(state);
    arbor_datafusion::register(&ctx);
    (ctx, plans)
}

fn single_session() -> SessionContext {
    let ctx = SessionContext::new();
    arbor_datafusion::register(&ctx);
    ctx
}

async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")).collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The `train` table: the first `rows` of `set`'s training rows, spread
/// round-robin over the session's partitions, and its `test` table.
async fn register(ctx: &SessionContext, set: &str, rows: usize) {
    let path = data(&format!("{set}_train.parquet"));
    query(ctx, &format!("CREATE EXTERNAL TABLE raw STORED AS PARQUET LOCATION '{}'", path.display())).await;
    let partitions = ctx.state().config().target_partitions();
    let train = ctx
        .table("raw")
        .await
        .unwrap()
        .limit(0, Some(rows))
        .unwrap()
        .repartition(datafusion::logical_expr::Partitioning::RoundRobinBatch(partitions))
        .unwrap();
    ctx.register_table("train", train.into_view()).unwrap();
    let test = data(&format!("{set}_test.parquet"));
    query(ctx, &format!("CREATE EXTERNAL TABLE test STORED AS PARQUET LOCATION '{}'", test.display())).await;
}

async fn model(ctx: &SessionContext, sql: &str) -> Model {
    let batches = query(ctx, sql).await;
    Model::from_bytes(arbor_datafusion::model_bytes(batches[0].column(0).as_ref(), 0).expect("a model")).unwrap()
}

/// `sql`'s first column as floats.
async fn floats(ctx: &SessionContext, sql: &str) -> Vec<f64> {
    let batches = query(ctx, sql).await;
    batches
        .iter()
        .flat_map(|b| {
            let column = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Float64).unwrap();
            column.as_primitive::<Float64Type>().values().to_vec()
        })
        .collect()
}

/// The progress reports of `ctx`'s level-wise training, as they come.
fn watch(ctx: &SessionContext) -> Arc<Mutex<Vec<LevelStep>>> {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let progress = LevelProgress::new(move |step: &LevelStep| seen.lock().unwrap().push(*step));
    ctx.state_ref().write().config_mut().set_extension(Arc::new(progress));
    reports
}

const DIAMONDS: &str = "carat, cut, color, clarity, depth, \"table\", x, y, z";

/// `metric` over the test rows, `PREDICTION` standing for the prediction of the model in table `m`.
fn scored(features: &str, metric: &str) -> String {
    let columns: Vec<String> = features.split(", ").map(|f| format!("t.{f}")).collect();
    let prediction = format!("predict_forest(m.model, {})", columns.join(", "));
    format!("SELECT {} FROM test t CROSS JOIN m", metric.replace("PREDICTION", &prediction))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boosting_trains_level_by_level_the_same_model_on_any_partitions() {
    let train = format!(
        "SELECT train_forest(label, {DIAMONDS}, 'algorithm=gradient-boosting n_rounds=10 max_depth=4') AS model FROM train"
    );
    let (four, plans) = level_session(4);
    register(&four, "diamonds_reg", 50_000).await;
    let reports = watch(&four);
    let before = plans.count();
    query(&four, &format!("CREATE TABLE m AS {train}")).await;
    // A summary, then one step per level (at most 4 per round), and the statement's own plans.
    let steps = plans.count() - before;
    assert!((12..=44).contains(&steps), "{steps} plans");
    // Every job is reported, in order, the last with every round done.
    let jobs = std::mem::take(&mut *reports.lock().unwrap());
    assert!(jobs.len() < steps && jobs.len() >= 11, "{} reports for {steps} plans", jobs.len());
    assert!(jobs.iter().enumerate().all(|(i, r)| r.jobs == i + 1 && r.n_rounds == 10 && r.unit == "rounds"));
    assert!(jobs.windows(2).all(|w| w[0].rounds_done <= w[1].rounds_done));
    let last = jobs.last().unwrap();
    assert_eq!((last.rounds_done, last.open_nodes), (10, 0));
    let on_four = model(&four, "SELECT model FROM m").await;
    assert_eq!(on_four.trees().len(), 10);
    assert_eq!(on_four.training_rows(), 43_152);
    // An aggregate read twice in one statement (a CTE) trains once.
    let pairs = floats(&four, &format!(
        "WITH t AS ({train}) SELECT CASE WHEN a.model IS NULL OR b.model IS NULL THEN 0 ELSE 1 END FROM t a CROSS JOIN t b"
    ))
    .await;
    assert_eq!(pairs, [1.0]);
    assert_eq!(reports.lock().unwrap().len(), jobs.len(), "the twice-read aggregate trained twice");

    let (three, _) = level_session(3);
    register(&three, "diamonds_reg", 50_000).await;
    let on_three = model(&three, &train).await;
    assert_eq!(on_three.to_bytes(), on_four.to_bytes(), "the model depends on the rows, not the partitions");

    // As accurate as the single-node model, which sums in canonical order.
    let single = single_session();
    register(&single, "diamonds_reg", 50_000).await;
    let rmse = "sqrt(avg(power(PREDICTION - t.label, 2)))";
    query(&single, &format!("CREATE TABLE m AS {train}")).await;
    let level_rmse = floats(&four, &scored(DIAMONDS, rmse)).await[0];
    let single_rmse = floats(&single, &scored(DIAMONDS, rmse)).await[0];
    eprintln!("diamonds boosting RMSE: level-wise {level_rmse:.5}, single node {single_rmse:.5}");
    assert!((level_rmse - single_rmse).abs() <= 0.01 * single_rmse, "{level_rmse} against {single_rmse}");
}

/// A random forest grows every tree a level per job, small nodes finished
/// from their rows: the same model on any partitions, as accurate as the
/// single-node forest (another draw of it: 24 trees whose bootstrap comes
/// from row hashes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forests_train_level_by_level_as_accurately_as_on_one_node() {
    let train = format!("SELECT train_forest(label, {DIAMONDS}, 'n_trees=24 seed=9') AS model FROM train");
    let (four, plans) = level_session(4);
    let single = single_session();
    register(&four, "diamonds_reg", 50_000).await;
    register(&single, "diamonds_reg", 50_000).await;
    let reports = watch(&four);
    let before = plans.count();
    query(&four, &format!("CREATE TABLE m AS {train}")).await;
    let jobs = std::mem::take(&mut *reports.lock().unwrap());
    assert!(jobs.iter().all(|r| r.unit == "trees" && r.n_rounds == 24), "{jobs:?}");
    assert_eq!(jobs.last().map(|r| (r.rounds_done, r.open_nodes)), Some((24, 0)));
    // A summary, levels of large nodes (43,152 rows: 5,394 and fewer finish
    // in memory), the finishing jobs (each of about 86,000 rows, 3 trees'
    // bootstraps), and the statement's own plans.
    let steps = plans.count() - before;
    assert!((12..=22).contains(&steps), "{steps} plans");
    // Small nodes finish grouped by node over the partitions, not in one task.
    let finishing: Vec<String> =
        plans.shown.lock().unwrap().iter().filter(|p| p.contains("arbor_finish_nodes")).cloned().collect();
    assert!(finishing.len() >= 7, "{} finishing jobs", finishing.len());
    for plan in finishing {
        assert!(plan.contains("mode=FinalPartitioned"), "{plan}");
        assert!(plan.contains("partitioning=Hash([key@0], 4)"), "{plan}");
    }
    let on_four = model(&four, "SELECT model FROM m").await;
    assert_eq!((on_four.trees().len(), on_four.training_rows()), (24, 43_152));
    let (three, _) = level_session(3);
    register(&three, "diamonds_reg", 50_000).await;
    assert_eq!(model(&three, &train).await.to_bytes(), on_four.to_bytes(), "the rows decide the model");

    query(&single, &format!("CREATE TABLE m AS {train}")).await;
    let rmse = "sqrt(avg(power(PREDICTION - t.label, 2)))";
    let level_rmse = floats(&four, &scored(DIAMONDS, rmse)).await[0];
    let single_rmse = floats(&single, &scored(DIAMONDS, rmse)).await[0];
    eprintln!("diamonds forest RMSE: level-wise {level_rmse:.5}, single node {single_rmse:.5}");
    assert!(level_rmse <= 1.01 * single_rmse, "{level_rmse} against {single_rmse}");
}

/// arbor's one driver trains the same bytes over either backend: the
/// session's jobs (each a query over the table's partitions) and the
/// in-memory backend (pieces of the same rows, cut elsewhere, in this
/// process), for both algorithms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_backend_trains_the_sessions_model() {
    let (four, _) = level_session(4);
    register(&four, "diamonds_reg", 50_000).await;
    let batches = query(&four, &format!("SELECT label, {DIAMONDS} FROM raw")).await;
    let table = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    let features: Vec<String> = DIAMONDS.split(", ").map(|f| f.trim_matches('"').to_string()).collect();
    for options in ["n_trees=5 seed=4", "algorithm=gradient-boosting n_rounds=5 max_depth=5"] {
        let on_four = model(&four, &format!("SELECT train_forest(label, {DIAMONDS}, '{options}') FROM train")).await;
        let trainer = Trainer::new(TrainParams::parse_options(options).unwrap()).label("label").features(&features);
        let cuts = [(30_000, table.num_rows() - 30_000), (0, 11_111), (11_111, 18_889)];
        let pieces = cuts.iter().map(|&(at, len)| trainer.training_data(vec![table.slice(at, len)]).unwrap());
        let mut jobs = InMemory::new(pieces.collect(), trainer.params().check().unwrap()).with_tasks(3);
        let Outcome::Model(in_memory) = jobs.train().unwrap() else { panic!("{options}: trains level by level") };
        assert_eq!(in_memory.to_bytes(), on_four.to_bytes(), "{options}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boosted_classes_are_as_accurate_as_on_one_node() {
    let features = "month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time, carrier, origin, dest, distance, hour, minute";
    let train = format!(
        "SELECT train_forest(label, {features}, 'algorithm=gradient-boosting n_rounds=10') AS model FROM train"
    );
    let (level, _) = level_session(4);
    let single = single_session();
    register(&level, "flights_cls", 60_000).await;
    register(&single, "flights_cls", 60_000).await;
    let accuracy = "avg(CASE WHEN PREDICTION = t.label THEN 1.0 ELSE 0.0 END)";
    query(&level, &format!("CREATE TABLE m AS {train}")).await;
    query(&single, &format!("CREATE TABLE m AS {train}")).await;
    let level_accuracy = floats(&level, &scored(features, accuracy)).await[0];
    let single_accuracy = floats(&single, &scored(features, accuracy)).await[0];
    eprintln!("flights boosting accuracy: level-wise {level_accuracy:.4}, single node {single_accuracy:.4}");
    assert!((level_accuracy - single_accuracy).abs() <= 0.002, "{level_accuracy} against {single_accuracy}");
}

/// Greedy bins (`bin_boundaries=greedy`) are fitted level by level as on
/// one node, from the same sample: the same edges, and not quantile's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greedy_bins_level_wise_are_the_single_node_bins() {
    let (level, _) = level_session(4);
    let single = single_session();
    register(&level, "diamonds_reg", 50_000).await;
    register(&single, "diamonds_reg", 50_000).await;
    let statement = |options: &str| {
        format!("SELECT train_forest(label, {DIAMONDS}, 'algorithm=gradient-boosting n_rounds=2 {options}') AS model FROM train")
    };
    let greedy = statement("bin_boundaries=greedy");
    let (a, b) = (model(&level, &greedy).await, model(&single, &greedy).await);
    assert_eq!(a.param("bin_boundaries"), Some("greedy"));
    let mappers = |m: &Model| m.features().iter().map(|f| f.mapper.clone()).collect::<Vec<_>>();
    assert_eq!(mappers(&a), mappers(&b), "level-wise and single-node bins");
    let quantile = model(&single, &statement("")).await;
    assert_ne!(mappers(&quantile), mappers(&b), "greedy bins are not quantile bins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_levels_cannot_train_trains_as_before() {
    let (level, plans) = level_session(4);
    let single = single_session();
    register(&level, "diamonds_reg", 50_000).await;
    register(&single, "diamonds_reg", 50_000).await;
    // Out-of-bag forests, sub-forests asked for, row sampling and GROUP BY
    // are the single-node models, planned once.
    for train in [
        format!("SELECT train_forest(label, {DIAMONDS}, 'n_trees=4 oob=true') AS model FROM train"),
        format!("SELECT train_forest(label, {DIAMONDS}, 'n_trees=4 parts=1') AS model FROM train"),
        format!("SELECT train_forest(label, {DIAMONDS}, 'algorithm=gradient-boosting n_rounds=3 sample_fraction=0.5') AS model FROM train"),
        format!("SELECT train_forest(label, {DIAMONDS}, 'algorithm=gradient-boosting n_rounds=3') AS model FROM train GROUP BY cut ORDER BY cut LIMIT 1"),
    ] {
        let before = plans.count();
        let (a, b) = (model(&level, &train).await, model(&single, &train).await);
        assert_eq!(plans.count(), before + 1, "{train}");
        assert_eq!(a.trees(), b.trees(), "{train}");
    }
    // Bad rows fail the statement with the single-node error.
    let nan = format!(
        "SELECT train_forest(CASE WHEN carat > 2 THEN CAST('NaN' AS DOUBLE) ELSE label END, {DIAMONDS}, \
         'algorithm=gradient-boosting n_rounds=3') FROM train"
    );
    let error = level.sql(&nan).await.unwrap().collect().await.unwrap_err().to_string();
    let expected = single.sql(&nan).await.unwrap().collect().await.unwrap_err().to_string();
    assert!(error.contains("NaN") && expected.contains("NaN"), "{error}\n{expected}");
    // An empty table gives the NULL model, as on one node.
    let empty = format!(
        "SELECT train_forest(label, {DIAMONDS}, 'algorithm=gradient-boosting') AS model FROM train WHERE carat < 0"
    );
    let batches = query(&level, &empty).await;
    assert!(batches[0].column(0).is_null(0));
}
