"""Values checked against an independent reference: imported models against
their libraries' own predictions, zero weights against dropped rows, the
regressor's out-of-bag R² against the command line's per-row out-of-bag
output, importances against ``arbor inspect``, early stopping through the
estimators."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arbor
from conftest import DATA, INTEROP, split

ARBOR_BIN = os.environ.get("ARBOR_BIN")


def test_imported_models_predict_as_their_libraries_do():
    """``flights_rows.parquet`` holds XGBoost's and LightGBM's own
    probabilities for its rows (``make_fixtures.py``, the library versions
    named there); the imported models give them within 1e-5."""
    rows = pq.read_table(INTEROP / "flights_rows.parquet")
    cases = [
        (arbor.Model.import_xgboost(INTEROP / "xgb_binary.json"), "xgb_binary"),
        (arbor.Model.import_lightgbm(INTEROP / "lgb_binary.txt"), "lgb_binary"),
        (arbor.Model.import_lightgbm(INTEROP / "lgb_pandas.txt"), "lgb_pandas"),
    ]
    for model, column in cases:
        proba = model.predict_proba(rows)
        late = proba.flatten().to_numpy().reshape(len(proba), -1)[:, 1]
        expected = rows.column(column).to_numpy()
        np.testing.assert_allclose(late, expected, rtol=1e-5, atol=1e-8, err_msg=column)
        classes = model.predict(rows).to_numpy(zero_copy_only=False)
        assert (classes == (expected > 0.5)).all(), column


def test_zero_weights_train_the_model_the_dropped_rows_train(cancer):
    """Rows of weight zero count for nothing: exact splits without a
    bootstrap give the forest of the other rows alone, prediction for
    prediction."""
    train, test = cancer
    X, y = split(train)
    X_test, _ = split(test)
    n = X.num_rows
    weight = np.ones(n)
    weight[::4] = 0.0
    kept = np.flatnonzero(weight)
    options = {"n_trees": 5, "bootstrap": False, "max_features": "all", "split_method": "exact"}
    weighted = arbor.RandomForestClassifier(**options).fit(X, y, sample_weight=weight)
    dropped = arbor.RandomForestClassifier(**options).fit(X.take(kept), y.take(kept))
    np.testing.assert_array_equal(weighted.predict_proba(X_test), dropped.predict_proba(X_test))
    np.testing.assert_array_equal(weighted.predict_proba(X), dropped.predict_proba(X))
    everything = arbor.RandomForestClassifier(**options).fit(X, y)
    assert not np.array_equal(everything.predict_proba(X), dropped.predict_proba(X)), "the rows mattered"


@pytest.mark.skipif(ARBOR_BIN is None, reason="needs the arbor command line (ARBOR_BIN)")
def test_regressor_oob_score_is_the_r2_of_the_out_of_bag_predictions(tmp_path):
    """The regressor's ``oob_score_`` is R² of the per-row out-of-bag
    predictions ``arbor train --oob-output`` writes for the same rows and
    options, computed here from them."""
    path = DATA / "diamonds_reg_train.parquet"
    table = pq.read_table(path)
    X, y = split(table)
    forest = arbor.RandomForestRegressor(n_trees=20, oob=True, seed=5).fit(X, y)
    oob = tmp_path / "oob.parquet"
    subprocess.run(
        [ARBOR_BIN, "train", "--input", str(path), "--label", "label", "--output", str(tmp_path / "m.arbor"),
         "--set", "n_trees=20", "--set", "oob=true", "--set", "seed=5", "--oob-output", str(oob)],
        check=True, capture_output=True,
    )
    rows = pq.read_table(oob)
    predicted = rows.column("oob_prediction").to_numpy(zero_copy_only=False).astype(np.float64)
    labels = rows.column("label").to_numpy().astype(np.float64)
    np.testing.assert_array_equal(labels, y.to_numpy().astype(np.float64))
    seen = ~np.isnan(predicted)
    r2 = 1.0 - float(np.mean((labels[seen] - predicted[seen]) ** 2)) / float(np.var(labels))
    assert seen.mean() > 0.95
    assert forest.oob_score_ == pytest.approx(r2, rel=1e-9)
    assert 0.9 < forest.oob_score_ < 1.0


@pytest.mark.skipif(ARBOR_BIN is None, reason="needs the arbor command line (ARBOR_BIN)")
def test_feature_importances_are_what_inspect_reports(tmp_path, cancer):
    X, y = split(cancer[0])
    for estimator in [arbor.RandomForestClassifier(n_trees=10), arbor.GradientBoostingClassifier(n_rounds=10)]:
        fitted = estimator.fit(X, y)
        path = tmp_path / "m.arbor"
        fitted.model_.save(path)
        report = subprocess.run([ARBOR_BIN, "inspect", "--model", str(path), "--json"], check=True, capture_output=True)
        features = json.loads(report.stdout)["features"]
        assert [f["name"] for f in features] == list(fitted.feature_names_in_)
        np.testing.assert_allclose(fitted.feature_importances_, [f["importance"] for f in features], rtol=1e-12)


def test_early_stopping_through_the_estimators(flights):
    """``early_stopping_rounds`` stops boosting once the held-out loss stops
    improving: far fewer rounds than asked, no worse on the test file than
    the rounds it kept, and none without it."""
    (train, test) = flights
    X, y = split(train.slice(0, 60_000))
    X_test, y_test = split(test)
    stopped = arbor.GradientBoostingClassifier(n_rounds=400, learning_rate=0.5, early_stopping_rounds=5).fit(X, y)
    assert stopped.model_.n_trees < 400
    full = arbor.GradientBoostingClassifier(n_rounds=400, learning_rate=0.5).fit(X, y)
    assert full.model_.n_trees == 400
    # The recorded curve: a loss per round run, the kept round its lowest validation loss.
    curve = stopped.evals_result_
    validation = curve["validation"]["log_loss"]
    assert len(validation) == len(curve["training"]["log_loss"]) == stopped.best_iteration_ + 5
    assert stopped.best_iteration_ == stopped.model_.n_trees == int(np.argmin(validation)) + 1
    assert stopped.model_.info()["boosting"]["early_stopping"]["best_loss"] == min(validation)
    with pytest.raises(AttributeError, match="without early stopping"):
        full.evals_result_
    assert stopped.score(X_test, y_test.to_numpy()) >= full.score(X_test, y_test.to_numpy()) - 0.005
