-- Parquet in, Parquet out, in SQL: train a model per origin airport, score
-- every held-out flight with it, and write the scored rows to Parquet.
-- Run from the repository root:
--   cargo run --release -- sql sql/predict_to_parquet.sql

CREATE EXTERNAL TABLE flights_train STORED AS PARQUET LOCATION 'data/flights_cls_train.parquet';
CREATE EXTERNAL TABLE flights_test STORED AS PARQUET LOCATION 'data/flights_cls_test.parquet';

-- One model per origin: GROUP BY gives each group its own forest.
CREATE TABLE models AS
SELECT origin, train_forest(label, month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time,
                            carrier, dest, distance, hour, minute, 'n_trees=100') AS forest
FROM flights_train GROUP BY origin;

-- Each flight meets its origin's model through the join. COPY writes the
-- input columns plus the prediction and the class probabilities.
COPY (
  SELECT t.*,
         predict_forest(m.forest, t.month, t.day, t.dep_time, t.sched_dep_time, t.dep_delay, t.sched_arr_time,
                        t.carrier, t.dest, t.distance, t.hour, t.minute) AS prediction,
         predict_forest_proba(m.forest, t.month, t.day, t.dep_time, t.sched_dep_time, t.dep_delay, t.sched_arr_time,
                              t.carrier, t.dest, t.distance, t.hour, t.minute)[2] AS p_late
  FROM flights_test t JOIN models m ON t.origin = m.origin
) TO 'scored_by_origin.parquet' STORED AS PARQUET;

-- The models can be saved too, and read back by later queries or `arbor predict`.
COPY (SELECT origin, forest FROM models) TO 'models_by_origin.parquet' STORED AS PARQUET;

-- Read the scored file back: accuracy per origin and overall.
CREATE EXTERNAL TABLE scored STORED AS PARQUET LOCATION 'scored_by_origin.parquet';

SELECT origin, count(*) AS flights, round(avg(CASE WHEN prediction = label THEN 1.0 ELSE 0.0 END), 4) AS accuracy
FROM scored GROUP BY origin
UNION ALL
SELECT 'all', count(*), round(avg(CASE WHEN prediction = label THEN 1.0 ELSE 0.0 END), 4) FROM scored
ORDER BY origin;
