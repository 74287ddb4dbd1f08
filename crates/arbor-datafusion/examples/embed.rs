//! Embedding arbor in another Rust program: register its functions on your own
//! DataFusion `SessionContext`, then train and predict in SQL.
//!
//! Run from the repository root:
//!   cargo run --release -p arbor-datafusion --example embed

use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

#[tokio::main]
async fn main() -> Result<()> {
    // Your session, with your own configuration.
    let config = SessionConfig::new().with_target_partitions(4).with_batch_size(4096);
    let ctx = SessionContext::new_with_config(config);

    // One call adds train_forest, predict_forest, predict_forest_proba,
    // forest_info and forest_importance. (`arbor_datafusion::register_all`
    // does the same for any `FunctionRegistry`, e.g. a `SessionState`.)
    arbor_datafusion::register(&ctx);
    assert!(ctx.udaf("train_forest").is_ok());

    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data");
    ctx.register_parquet("flights", &format!("{data}/flights_cls_train.parquet"), ParquetReadOptions::default())
        .await?;
    ctx.register_parquet("held_out", &format!("{data}/flights_cls_test.parquet"), ParquetReadOptions::default())
        .await?;

    // Train one model per carrier: each group gets its own forest.
    ctx.sql(
        "CREATE TABLE models AS
         SELECT carrier, train_forest(label, dep_delay, origin, dest, distance, hour, 'n_trees=20') AS forest
         FROM flights GROUP BY carrier",
    )
    .await?
    .collect()
    .await?;

    // Score the held-out flights through a join and report accuracy per carrier.
    let accuracy = ctx
        .sql(
            "SELECT t.carrier, count(*) AS flights,
                    round(avg(CASE WHEN predict_forest(m.forest, t.dep_delay, t.origin, t.dest, t.distance, t.hour)
                                        = t.label THEN 1.0 ELSE 0.0 END), 4) AS accuracy
             FROM held_out t JOIN models m ON t.carrier = m.carrier
             GROUP BY t.carrier ORDER BY flights DESC LIMIT 5",
        )
        .await?;
    accuracy.show().await?;
    Ok(())
}
