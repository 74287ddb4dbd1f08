"""arbor.Model: files and bytes shared with the command line and SQL, imports, reports."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arbor

from conftest import DATA, INTEROP, split


def test_a_command_line_model_scores_in_python_and_a_python_model_on_the_command_line(
    flights, arbor_cli, tmp_path
):
    train, test = flights
    cli_model = tmp_path / "cli.arbor"
    arbor_cli("train", "--input", str(DATA / "flights_cls_train.parquet"), "--label", "label",
              "--output", str(cli_model), "--set", "n_trees=6", "--set", "max_depth=10")
    scored = tmp_path / "scored.parquet"
    arbor_cli("predict", "--model", str(cli_model), "--input", str(DATA / "flights_cls_test.parquet"),
              "--output", str(scored))
    model = arbor.Model.load(cli_model)
    assert model.predict(test).equals(pq.read_table(scored).column("prediction").combine_chunks())

    python_model = tmp_path / "python.arbor"
    X, y = split(train)
    arbor.GradientBoostingClassifier(n_rounds=5).fit(X, y).model_.save(python_model)
    assert oct(os.stat(python_model).st_mode & 0o777) == oct(0o666 & ~current_umask())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    report = json.loads(arbor_cli("inspect", "--model", str(python_model), "--json"))
    assert report == arbor.Model.load(python_model).info()
    assert report["task"] == "classification"


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_imported_xgboost_and_lightgbm_models_predict():
    rows = pq.read_table(INTEROP / "flights_rows.parquet")
    xgb = arbor.Model.import_xgboost(INTEROP / "xgb_binary.json")
    lgb = arbor.Model.import_lightgbm(INTEROP / "lgb_binary.txt")
    for model in (xgb, lgb):
        proba = model.predict_proba(rows)
        values = proba.flatten().to_numpy().reshape(len(proba), -1)
        np.testing.assert_allclose(values.sum(axis=1), 1.0, rtol=1e-9)
        assert len(model.info()["trees"]) == model.n_trees
    with pytest.raises(ValueError, match="xgboost"):
        arbor.Model.import_xgboost(INTEROP / "lgb_binary.txt")


def test_model_bytes_round_trip_and_corrupt_bytes_raise(cancer):
    X, y = split(cancer[0])
    model = arbor.RandomForestClassifier(n_trees=3).fit(X, y).model_
    data = bytes(model)
    assert arbor.Model.from_bytes(data) == model
    broken = bytearray(data)
    broken[len(broken) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="checksum|invalid model"):
        arbor.Model.from_bytes(bytes(broken))
    with pytest.raises(ValueError):
        arbor.Model.from_bytes(b"not a model")
    with pytest.raises(FileNotFoundError, match="missing.arbor"):
        arbor.Model.load("missing.arbor")
    assert "random-forest classification, 3 trees" in repr(model)
    assert model.tree_dot(0).startswith("digraph")
