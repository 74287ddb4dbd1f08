-- arbor quickstart: train a random forest on NYC flights and score held-out
-- flights, all in SQL. Run from the repository root:
--   cargo run --release -- sql sql/quickstart.sql

CREATE EXTERNAL TABLE flights_train STORED AS PARQUET LOCATION 'data/flights_cls_train.parquet';
CREATE EXTERNAL TABLE flights_test STORED AS PARQUET LOCATION 'data/flights_cls_test.parquet';

-- One statement trains the model: label first, then the features, then options.
CREATE TABLE model AS
SELECT train_forest(label, month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time,
                    carrier, origin, dest, distance, hour, minute, 'n_trees=50') AS forest
FROM flights_train;

-- Accuracy on the 65,470 held-out flights (label = 1: arrived over 15 minutes late).
SELECT count(*) AS flights,
       round(avg(CASE WHEN predict_forest(m.forest, month, day, dep_time, sched_dep_time, dep_delay,
                                          sched_arr_time, carrier, origin, dest, distance, hour, minute) = t.label
                      THEN 1.0 ELSE 0.0 END), 4) AS accuracy
FROM flights_test t CROSS JOIN model m;

-- The same in one more statement with gradient boosted trees (the defaults:
-- 50 rounds, depth 6, learning rate 0.3).
CREATE TABLE boosted AS
SELECT train_forest(label, month, day, dep_time, sched_dep_time, dep_delay, sched_arr_time,
                    carrier, origin, dest, distance, hour, minute, 'algorithm=gradient-boosting') AS model
FROM flights_train;

SELECT count(*) AS flights,
       round(avg(CASE WHEN predict_forest(b.model, month, day, dep_time, sched_dep_time, dep_delay,
                                          sched_arr_time, carrier, origin, dest, distance, hour, minute) = t.label
                      THEN 1.0 ELSE 0.0 END), 4) AS boosted_accuracy
FROM flights_test t CROSS JOIN boosted b;

-- A few scored flights with the probability of a late arrival.
SELECT t.carrier, t.origin, t.dest, t.dep_delay, t.label,
       predict_forest(m.forest, month, day, dep_time, sched_dep_time, dep_delay,
                      sched_arr_time, carrier, origin, dest, distance, hour, minute) AS predicted,
       round(predict_forest_proba(m.forest, month, day, dep_time, sched_dep_time, dep_delay,
                                  sched_arr_time, carrier, origin, dest, distance, hour, minute)[2], 3) AS p_late
FROM flights_test t CROSS JOIN model m
ORDER BY t.dep_delay DESC, t.carrier, t.dest
LIMIT 5;
