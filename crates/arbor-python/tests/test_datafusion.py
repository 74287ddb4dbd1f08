"""arbor's SQL functions inside datafusion-python, through the DataFusion FFI."""

from __future__ import annotations

import json

import datafusion
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import SessionContext

import arbor

from conftest import DATA, read

FEATURES = "month, dep_time, dep_delay, dest, distance"


def session() -> SessionContext:
    ctx = SessionContext()
    arbor.register(ctx)
    ctx.register_parquet("f", str(DATA / "flights_cls_train.parquet"))
    ctx.register_parquet("t", str(DATA / "flights_cls_test.parquet"))
    return ctx


def test_group_by_training_then_prediction_through_a_join():
    ctx = session()
    models = ctx.sql(
        f"SELECT origin, train_forest(label, {FEATURES}, 'n_trees=6 max_depth=10') AS m FROM f GROUP BY origin"
    ).to_arrow_table()
    assert sorted(models.column("origin").to_pylist()) == ["EWR", "JFK", "LGA"]
    ctx.from_arrow(models, "models")
    scored = ctx.sql(
        f"SELECT t.label, predict_forest(m.m, {FEATURES}) AS p, predict_forest_proba(m.m, {FEATURES}) AS pr "
        "FROM t JOIN models m ON t.origin = m.origin"
    ).to_arrow_table()
    assert scored.num_rows == read("flights_cls_test").num_rows
    assert scored.schema.field("p").type == scored.schema.field("label").type
    accuracy = pc.mean(pc.equal(scored.column("p"), scored.column("label")).cast("int8")).as_py()
    assert accuracy > 0.88

    # Each group's model is the model Python trains on the group's rows with the same options.
    bytes_of = dict(zip(models.column("origin").to_pylist(), models.column("m").combine_chunks().field("model").to_pylist()))
    train = read("flights_cls_train")
    jfk = train.filter(pc.equal(train.column("origin"), "JFK"))
    # DataFusion reads Parquet strings as views, and a model records its features' types.
    X = jfk.select(FEATURES.split(", "))
    X = X.set_column(3, "dest", X.column("dest").cast(pa.string_view()))
    python = arbor.RandomForestClassifier(n_trees=6, max_depth=10).fit(X, jfk.column("label"))
    assert bytes(python.model_) == bytes_of["JFK"]
    assert arbor.Model.from_bytes(bytes_of["JFK"]).n_trees == 6


def test_gradient_boosting_and_model_reports_in_sql():
    ctx = session()
    row = ctx.sql(
        f"SELECT forest_info(m) AS info FROM (SELECT train_forest(label, {FEATURES}, "
        "'algorithm=gradient-boosting n_rounds=4') AS m FROM f)"
    ).to_arrow_table()
    info = json.loads(row.column("info")[0].as_py())
    assert info["algorithm"] == "gradient-boosting" and len(info["trees"]) == 4


def test_sql_errors_are_python_exceptions():
    ctx = session()
    with pytest.raises(Exception, match="n_trees"):
        ctx.sql(f"SELECT train_forest(label, {FEATURES}, 'n_trees=0') FROM f").collect()
    with pytest.raises(Exception, match="unknown option 'depth'"):
        ctx.sql(f"SELECT train_forest(label, {FEATURES}, 'depth=3') FROM f").collect()


def test_register_refuses_another_datafusion_major(monkeypatch):
    monkeypatch.setattr(datafusion, "__version__", "54.1.0")
    with pytest.raises(ImportError, match="datafusion>=55,<56"):
        arbor.register(SessionContext())


def test_each_registration_has_its_own_functions():
    first, second = session(), session()
    query = f"SELECT predict_forest(m, {FEATURES}) AS p FROM t, (SELECT train_forest(label, {FEATURES}, 'n_trees=2 max_depth=4') AS m FROM f) LIMIT 5"
    a = first.sql(query).to_arrow_table().column("p").to_numpy()
    b = second.sql(query).to_arrow_table().column("p").to_numpy()
    np.testing.assert_array_equal(a, b)


def test_a_python_model_scores_in_sql_as_in_python():
    ctx = session()
    train = read("flights_cls_train")
    X = train.select(FEATURES.split(", "))
    clf = arbor.GradientBoostingClassifier(n_rounds=5).fit(X, train.column("label"))
    models = pa.table({"m": pa.array([bytes(clf.model_)], pa.binary())})
    ctx.from_arrow(models, "python_models")
    # A bare binary column carries no prediction type, so classes come back as text.
    scored = ctx.sql(f"SELECT {FEATURES}, predict_forest(m, {FEATURES}) AS p FROM t, python_models").to_arrow_table()
    assert scored.num_rows == read("flights_cls_test").num_rows
    expected = clf.model_.predict(scored)
    assert scored.column("p").combine_chunks().cast(expected.type).equals(expected)
