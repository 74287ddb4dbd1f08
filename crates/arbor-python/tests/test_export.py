"""Exported models predict in XGBoost, LightGBM and onnxruntime what they
predict in arbor, and come back through arbor's importers as they left."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import onnxruntime as ort
import pandas as pd
import pyarrow as pa
import pytest
import xgboost as xgb
from arbor import _arbor
from conftest import read

FOREST = [("algorithm", "random-forest"), ("n_trees", "15"), ("max_depth", "10")]
BOOSTING = [("algorithm", "gradient-boosting"), ("n_rounds", "25")]
# (data, rows trained on): flights has categories and missing values,
# diamonds string categories, digits ten classes.
DATA = {"flights_cls": 30_000, "diamonds_reg": 20_000, "digits_cls": None}


def train(name: str, options, rows=None):
    table = read(f"{name}_train")
    if rows is not None:
        table = table.slice(0, rows)
    model = _arbor.train(table.drop_columns(["label"]), table.column("label").combine_chunks(), options=options)
    return model, read(f"{name}_test").drop_columns(["label"])


def arbor_outputs(model, table: pa.Table) -> np.ndarray:
    """Class probabilities (rows by classes) or regression values."""
    if model.task == "classification":
        return np.asarray(model.predict_proba(table).flatten()).reshape(table.num_rows, -1)
    return np.asarray(model.predict(table))


def arbor_margins(model, table: pa.Table) -> np.ndarray:
    """A boosted model's raw scores: each output's contributions summed."""
    names = model.contribution_names
    outputs = max(1, len(names) // (len(model.feature_names) + 1))
    contributions = np.asarray(model.predict_contributions(table).flatten()).reshape(table.num_rows, -1)
    return contributions.reshape(table.num_rows, outputs, -1).sum(axis=2).squeeze(axis=1 if outputs == 1 else ())


def exported_matrix(model, table: pa.Table) -> np.ndarray:
    return np.column_stack([c.to_numpy() for c in model.export_columns(table).columns])


def xgboost_booster(model, path):
    model.export(path, format="xgboost-json")
    return xgb.Booster(model_file=str(path))


def xgboost_matrix(model, table: pa.Table) -> xgb.DMatrix:
    types = ["c" if c is not None else "float" for c in model.feature_categories]
    return xgb.DMatrix(
        exported_matrix(model, table), feature_names=model.feature_names, feature_types=types, enable_categorical=True
    )


def with_two_columns(p: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """A binary classifier's probability of the second class as both classes' columns."""
    if reference.ndim == 2 and reference.shape[1] == 2 and p.ndim == 1:
        return np.column_stack([1.0 - p, p])
    return p.reshape(reference.shape)


def assert_same_predictions(model, p: np.ndarray, reference: np.ndarray, rtol: float) -> None:
    p = with_two_columns(p, reference)
    np.testing.assert_allclose(p, reference, rtol=rtol, atol=1e-6)
    if model.task == "classification":
        assert (p.argmax(axis=1) == reference.argmax(axis=1)).all(), "every row's class is arbor's"


@pytest.mark.parametrize("algorithm", [FOREST, BOOSTING], ids=["forest", "boosting"])
@pytest.mark.parametrize("name", list(DATA))
def test_xgboost_predicts_what_arbor_predicts(tmp_path, name, algorithm):
    model, test = train(name, algorithm, DATA[name])
    booster = xgboost_booster(model, tmp_path / "model.json")
    reference = arbor_outputs(model, test)
    # XGBoost sums 32-bit leaves: within about 1e-7 of the output's size.
    assert_same_predictions(model, booster.predict(xgboost_matrix(model, test)), reference, rtol=1e-6)
    # Imported back, the model reads the same table, categories as strings.
    back = _arbor.Model.import_xgboost(tmp_path / "model.json")
    assert back.algorithm == model.algorithm
    np.testing.assert_allclose(arbor_outputs(back, test), reference, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("algorithm", [FOREST, BOOSTING], ids=["forest", "boosting"])
@pytest.mark.parametrize("name", list(DATA))
def test_lightgbm_predicts_exactly_what_arbor_predicts(tmp_path, name, algorithm):
    model, test = train(name, algorithm, DATA[name])
    path = tmp_path / "model.txt"
    model.export(path, format="lightgbm-text")
    booster = lgb.Booster(model_file=str(path))
    reference = arbor_outputs(model, test)
    # 64-bit thresholds and leaves: LightGBM's sums are arbor's, to rounding.
    assert_same_predictions(model, booster.predict(exported_matrix(model, test)), reference, rtol=1e-12)
    # A pandas frame with category columns is recoded by the file's pandas_categorical.
    frame = test.select(model.feature_names).to_pandas()
    for feature, categories in zip(model.feature_names, model.feature_categories):
        if categories is not None:
            known = frame[feature].where(frame[feature].isin(categories))  # unseen: missing
            frame[feature] = pd.Categorical(known, categories=categories)
    assert_same_predictions(model, booster.predict(frame), reference, rtol=1e-12)
    back = _arbor.Model.import_lightgbm(path)
    np.testing.assert_allclose(arbor_outputs(back, test), reference, rtol=1e-12, atol=1e-12)


def onnx_outputs(model, table: pa.Table, path) -> dict:
    model.export(path, format="onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    features = exported_matrix(model, table).astype(np.float32)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"features": features}))) | {"_session": session}


@pytest.mark.parametrize("algorithm", [FOREST, BOOSTING], ids=["forest", "boosting"])
@pytest.mark.parametrize("name", list(DATA))
def test_onnxruntime_predicts_what_arbor_predicts(tmp_path, name, algorithm):
    model, test = train(name, algorithm, DATA[name])
    outputs = onnx_outputs(model, test, tmp_path / "model.onnx")
    reference = arbor_outputs(model, test)
    meta = outputs["_session"].get_modelmeta().custom_metadata_map
    assert json.loads(meta["features"]) == model.feature_names
    if model.task == "classification":
        # 32-bit thresholds and leaves, as onnxruntime reads them.
        np.testing.assert_allclose(outputs["probabilities"], reference, rtol=1e-6, atol=1e-6)
        assert (outputs["label"] == reference.argmax(axis=1)).all(), "every row's class is arbor's"
        assert json.loads(meta["classes"]) == model.class_names
    else:
        np.testing.assert_allclose(outputs["prediction"][:, 0], reference, rtol=1e-6, atol=1e-6)
    categorical = {n: c for n, c in zip(model.feature_names, model.feature_categories) if c is not None}
    assert json.loads(meta["categories"]) == categorical


LOSSES = [
    ("counts_reg", [("loss", "poisson")]),
    ("claims_reg", [("loss", "tweedie"), ("tweedie_power", "1.3")]),
    ("severity_reg", [("loss", "gamma")]),
    ("diamonds_reg", [("loss", "quantile"), ("alpha", "0.8")]),
    ("diamonds_reg", [("loss", "huber")]),
    ("diamonds_reg", [("loss", "absolute")]),
]


@pytest.mark.parametrize("name,loss", LOSSES, ids=[dict(loss)["loss"] for _, loss in LOSSES])
def test_every_loss_exports_with_its_link(tmp_path, name, loss):
    model, test = train(name, BOOSTING + loss, 20_000)
    reference = arbor_outputs(model, test)
    booster = xgboost_booster(model, tmp_path / "model.json")
    matrix = xgboost_matrix(model, test)
    # Raw scores agree to 32-bit precision; a log link's exp grows that to ~1e-6 relative.
    np.testing.assert_allclose(booster.predict(matrix, output_margin=True), arbor_margins(model, test), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(booster.predict(matrix), reference, rtol=1e-5)
    path = tmp_path / "model.txt"
    model.export(path, format="lightgbm-text")
    np.testing.assert_allclose(lgb.Booster(model_file=str(path)).predict(exported_matrix(model, test)), reference, rtol=1e-12)
    onnx = onnx_outputs(model, test, tmp_path / "model.onnx")["prediction"][:, 0]
    np.testing.assert_allclose(onnx, reference, rtol=1e-5)


def test_a_ranker_exports_as_rank_ndcg_and_lambdarank(tmp_path):
    table = read("rank_train")
    model = _arbor.train(
        table.drop_columns(["label", "query"]),
        table.column("label").combine_chunks(),
        options=BOOSTING,
        group=table.column("query").combine_chunks(),
    )
    test = read("rank_test").drop_columns(["label", "query"])
    reference = arbor_outputs(model, test)
    booster = xgboost_booster(model, tmp_path / "model.json")
    assert json.loads(booster.save_config())["learner"]["objective"]["name"] == "rank:ndcg"
    np.testing.assert_allclose(booster.predict(xgboost_matrix(model, test)), reference, rtol=1e-5, atol=1e-5)
    model.export(tmp_path / "model.txt", format="lightgbm-text")
    ranker = lgb.Booster(model_file=str(tmp_path / "model.txt"))
    assert ranker.params["objective"] == "lambdarank"
    np.testing.assert_allclose(ranker.predict(exported_matrix(model, test)), reference, rtol=1e-12)
    onnx = onnx_outputs(model, test, tmp_path / "model.onnx")["prediction"][:, 0]
    np.testing.assert_allclose(onnx, reference, rtol=1e-5, atol=1e-5)
    # Linear gains travel as XGBoost's own flag.
    linear = _arbor.train(
        table.drop_columns(["label", "query"]),
        table.column("label").combine_chunks(),
        options=BOOSTING + [("ndcg_exp_gain", "false")],
        group=table.column("query").combine_chunks(),
    )
    booster = xgboost_booster(linear, tmp_path / "linear.json")
    objective = json.loads(booster.save_config())["learner"]["objective"]
    assert objective["lambdarank_param"]["ndcg_exp_gain"] == "0"
    # (XGBoost's 32-bit thresholds send a few of this file's 64-bit values
    # the other way, docs/interop.md; LightGBM's text keeps them exact.)
    linear.export(tmp_path / "linear.txt", format="lightgbm-text")
    ranker = lgb.Booster(model_file=str(tmp_path / "linear.txt"))
    np.testing.assert_allclose(ranker.predict(exported_matrix(linear, test)), arbor_outputs(linear, test), rtol=1e-12)


def test_unweighted_votes_export_as_vote_shares(tmp_path):
    model, test = train("flights_cls", FOREST + [("voting", "unweighted")], 20_000)
    reference = arbor_outputs(model, test)
    assert set(np.unique(np.round(reference * 15))) <= set(range(16)), "shares of 15 votes"
    booster = xgboost_booster(model, tmp_path / "model.json")
    assert_same_predictions(model, booster.predict(xgboost_matrix(model, test)), reference, rtol=1e-6)
    model.export(tmp_path / "model.txt", format="lightgbm-text")
    p = lgb.Booster(model_file=str(tmp_path / "model.txt")).predict(exported_matrix(model, test))
    assert_same_predictions(model, p, reference, rtol=1e-12)
    onnx = onnx_outputs(model, test, tmp_path / "model.onnx")
    assert_same_predictions(model, onnx["probabilities"], reference, rtol=1e-6)
    assert (onnx["label"] == reference.argmax(axis=1)).all()


def test_export_columns_code_categories_by_the_model_list():
    model, test = train("diamonds_reg", BOOSTING, 2_000)
    columns = model.export_columns(test)
    assert columns.column_names == model.feature_names
    cut = model.feature_names.index("cut")
    categories = model.feature_categories[cut]
    assert categories == sorted(set(test.column("cut").to_pylist()))
    codes = columns.column(cut).to_numpy()
    assert [categories[int(c)] for c in codes[:50]] == test.column("cut").to_pylist()[:50]
    unseen = test.slice(0, 3).set_column(test.column_names.index("cut"), "cut", pa.array(["nope", None, categories[1]]))
    assert np.isnan(model.export_columns(unseen).column(cut).to_numpy()[:2]).all()
    assert model.export_columns(unseen).column(cut).to_numpy()[2] == 1.0


def test_what_a_format_cannot_hold_is_named(tmp_path):
    model, _ = train("diamonds_reg", BOOSTING, 2_000)
    with pytest.raises(ValueError, match="unknown export format 'onnx-text'.*xgboost-json, lightgbm-text, onnx"):
        model.export(tmp_path / "m", format="onnx-text")
    assert not (tmp_path / "m").exists()
    # LightGBM's feature list is space-separated.
    table = read("diamonds_reg_train").slice(0, 500)
    table = table.rename_columns(["carat weight" if c == "carat" else c for c in table.column_names])
    spaced = _arbor.train(table.drop_columns(["label"]), table.column("label").combine_chunks(), options=BOOSTING)
    with pytest.raises(ValueError, match="feature 'carat weight'.*whitespace"):
        spaced.export(tmp_path / "m.txt", format="lightgbm-text")
    assert not (tmp_path / "m.txt").exists()
    spaced.export(tmp_path / "m.json", format="xgboost-json")
    # A model of one class has nothing for a classifier's objective to tell apart.
    one = _arbor.train(pa.table({"x": [1.0, 2.0, 3.0]}), pa.array(["a", "a", "a"]), options=FOREST)
    for format in ["xgboost-json", "lightgbm-text", "onnx"]:
        with pytest.raises(ValueError, match="one class \\('a'\\)"):
            one.export(tmp_path / "one", format=format)
    assert not (tmp_path / "one").exists()


def test_the_command_line_exports(tmp_path, arbor_cli):
    model, test = train("digits_cls", BOOSTING)
    model.save(tmp_path / "model.arbor")
    arbor = str(tmp_path / "model.arbor")
    arbor_cli("export", "--format", "lightgbm-text", "--model", arbor, "--output", str(tmp_path / "m.txt"))
    p = lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(exported_matrix(model, test))
    np.testing.assert_allclose(p, arbor_outputs(model, test), rtol=1e-12, atol=1e-15)
    arbor_cli("export", "--format", "onnx", "--model", arbor, "--output", str(tmp_path / "m.onnx"))
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    label, _ = session.run(None, {"features": exported_matrix(model, test).astype(np.float32)})
    assert (label == arbor_outputs(model, test).argmax(axis=1)).all()
