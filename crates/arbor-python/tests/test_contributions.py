"""Explanations in Python: TreeSHAP contributions on models and estimators,
equal to XGBoost's and LightGBM's own, adding up to the raw scores, and the
same through datafusion-python's SQL."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext

import arbor

from conftest import INTEROP, split


def rows_of(model_file: str) -> pa.Table:
    case = {"xgb_binary": "flights", "xgb_softprob": "digits", "lgb_multiclass": "digits", "lgb_reg": "diamonds"}
    return pq.read_table(INTEROP / f"{case[model_file]}_rows.parquet")


@pytest.mark.parametrize("stem", ["xgb_binary", "xgb_softprob", "lgb_multiclass", "lgb_reg"])
def test_imported_models_explain_as_their_library(stem):
    importer = arbor.Model.import_xgboost if stem.startswith("xgb") else arbor.Model.import_lightgbm
    model = importer(INTEROP / (stem + (".json" if stem.startswith("xgb") else ".txt")))
    got = model.predict_contributions(rows_of(stem))
    width = len(model.contribution_names)
    got = got.flatten().to_numpy().reshape(len(got), width)
    want = pq.read_table(INTEROP / f"{stem}_contribs.parquet").column("contribs").combine_chunks()
    want = want.flatten().to_numpy().reshape(len(want), width)
    # XGBoost computes in 32-bit floats; LightGBM in 64.
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 if stem.startswith("xgb") else 1e-9)


def test_estimator_contributions_add_up_to_the_predictions(digits, diamonds):
    train, test = digits
    X, y = split(train)
    X_test, _ = split(test)
    clf = arbor.GradientBoostingClassifier(n_rounds=10).fit(X, y)
    contributions = clf.predict_contributions(X_test)
    n_features = X.num_columns
    assert contributions.shape == (test.num_rows, 10 * (n_features + 1))
    assert clf.model_.contribution_names[n_features + 1] == f"contrib_{clf.classes_[1]}_{X.column_names[0]}"
    margins = contributions.reshape(test.num_rows, 10, n_features + 1).sum(axis=2)
    proba = np.exp(margins - margins.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, clf.predict_proba(X_test), rtol=1e-9, atol=1e-12)

    train, test = diamonds
    X, y = split(train)
    X_test, _ = split(test)
    reg = arbor.RandomForestRegressor(n_trees=5, max_depth=8).fit(X.to_pandas(), y.to_numpy())
    contributions = reg.predict_contributions(X_test.to_pandas())
    assert contributions.shape == (test.num_rows, X.num_columns + 1)
    np.testing.assert_allclose(contributions.sum(axis=1), reg.predict(X_test.to_pandas()), rtol=1e-9)


def test_sql_contributions_in_datafusion_python_equal_the_models(flights):
    train, test = flights
    features = ["dep_delay", "carrier", "distance", "hour"]
    clf = arbor.GradientBoostingClassifier(n_rounds=8).fit(train.select(features), train.column("label"))
    ctx = SessionContext()
    arbor.register(ctx)
    ctx.from_arrow(test.select(features).slice(0, 2000), "t")
    ctx.from_arrow(pa.table({"m": pa.array([bytes(clf.model_)], pa.binary())}), "models")
    cols = ", ".join(features)
    got = ctx.sql(f"SELECT predict_forest_contributions(m, {cols}) AS c FROM t, models").to_arrow_table()
    got = got.column("c").combine_chunks()
    want = clf.model_.predict_contributions(test.select(features).slice(0, 2000))
    np.testing.assert_array_equal(got.flatten().to_numpy(), want.flatten().to_numpy())


def test_a_model_without_node_covers_says_so():
    model = arbor.Model.load(INTEROP / "cancer_gbt_v3.arbor")
    with pytest.raises(ValueError, match="no node cover"):
        model.predict_contributions(pq.read_table(INTEROP.parents[3] / "data" / "cancer_cls_test.parquet"))
