"""arbor.Dataset and arbor.cv: rows binned once from a Parquet path, a pyarrow
dataset, a table or a data frame; estimators fitted on them; cross-validation
on row subsets of the one binned table."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import arbor
from conftest import DATA, read, split


def test_every_source_bins_the_rows_the_estimators_fit_on():
    """A Parquet path, a pyarrow dataset or table give the model ``fit(X, y)``
    trains on the same rows, byte for byte; pandas and polars frames (whose
    string columns come back as other Arrow types, which the model records)
    the same predictions."""
    table = read("diamonds_reg_train")
    X_test, _ = split(read("diamonds_reg_test"))
    path = DATA / "diamonds_reg_train.parquet"
    X, y = split(table)
    direct = arbor.RandomForestRegressor(n_trees=5).fit(X, y)
    expected = bytes(direct.model_)
    for source in [path, str(path), pads.dataset(path), table, table.to_pandas(), pl.from_arrow(table)]:
        dataset = arbor.Dataset(source, label="label")
        assert dataset.n_rows == table.num_rows and dataset.task == "regression"
        assert dataset.feature_names == X.schema.names
        assert dataset.size_bytes < table.nbytes / 4, "a byte a value, not the floats"
        fitted = arbor.RandomForestRegressor(n_trees=5).fit(dataset)
        if type(source).__name__ == "DataFrame":
            assert (fitted.predict(X_test) == direct.predict(X_test)).all(), type(source).__module__
        else:
            assert bytes(fitted.model_) == expected, type(source).__name__


def test_a_dataset_trains_many_models_and_predicts_as_fit_does():
    train, test = read("cancer_cls_train"), read("cancer_cls_test")
    dataset = arbor.Dataset(train, label="label")
    X_test, y_test = split(test)
    for estimator in [arbor.RandomForestClassifier(n_trees=20), arbor.GradientBoostingClassifier(n_rounds=20)]:
        fitted = estimator.fit(dataset)
        assert list(fitted.feature_names_in_) == dataset.feature_names
        assert fitted.score(X_test, y_test.to_numpy()) > 0.93
        assert list(fitted.classes_) == [0, 1]


def test_cross_validation_bins_once_and_scores_every_fold():
    """Five folds on one binned table: no binning beyond the dataset's own,
    every row held out once, fold accuracy about the test file's."""
    dataset = arbor.Dataset(DATA / "flights_cls_train.parquet", label="label")
    binnings = arbor.Dataset.binnings
    folds = arbor.cv({"n_trees": 10, "seed": 3}, dataset, folds=5)
    assert arbor.Dataset.binnings == binnings, "cross-validation bins nothing again"
    assert len(folds) == 5
    assert sum(f["held_out_rows"] for f in folds) == dataset.n_rows
    assert all(f["training_rows"] + f["held_out_rows"] == dataset.n_rows for f in folds)
    for fold in folds:
        assert 0.88 < fold["score"] < 0.92, fold["score"]
        assert isinstance(fold["model"], arbor.Model)
    regression = arbor.cv({"algorithm": "gradient-boosting", "n_rounds": 20}, arbor.Dataset(read("diamonds_reg_train"), label="label"), folds=3)
    assert all(0.05 < f["score"] < 0.2 for f in regression), [f["score"] for f in regression]


def test_options_that_bin_otherwise_and_one_shot_streams_are_refused():
    dataset = arbor.Dataset(read("diamonds_reg_train"), label="label", max_bins=64)
    with pytest.raises(ValueError, match="max_bins"):
        arbor.RandomForestRegressor(n_trees=2, max_bins=128).fit(dataset)
    with pytest.raises(ValueError, match="task"):
        arbor.RandomForestClassifier(n_trees=2).fit(dataset)
    with pytest.raises(ValueError, match="takes no y"):
        arbor.RandomForestRegressor(n_trees=2).fit(dataset, [1.0])
    with pytest.raises(TypeError, match="read once"):
        arbor.Dataset(read("diamonds_reg_train").to_reader(), label="label")
    with pytest.raises(ValueError, match="'nope' not found"):
        arbor.Dataset(read("diamonds_reg_train"), label="nope")
    assert arbor.RandomForestRegressor(n_trees=2).fit(dataset).n_features_in_ == len(dataset.feature_names)


def test_weights_and_chosen_features_travel_with_the_dataset():
    table = read("diamonds_reg_train").slice(0, 5_000)
    weight = pa.array([1.0 + (i % 3) for i in range(table.num_rows)])
    weighted = table.append_column("w", weight)
    features = ["carat", "cut", "depth"]
    dataset = arbor.Dataset(weighted, label="label", weight="w", features=features)
    assert dataset.feature_names == features
    X = table.select(features)
    direct = arbor.RandomForestRegressor(n_trees=3).fit(X, table.column("label"), sample_weight=weight.to_numpy())
    assert bytes(arbor.RandomForestRegressor(n_trees=3).fit(dataset).model_) == bytes(direct.model_)
