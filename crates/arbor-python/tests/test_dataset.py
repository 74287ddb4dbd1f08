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
    with pytest.raises(ValueError, match="not the dataset's label"):
        arbor.RandomForestRegressor(n_trees=2).fit(dataset, [1.0])
    with pytest.raises(TypeError, match="read once"):
        arbor.Dataset(read("diamonds_reg_train").to_reader(), label="label")
    with pytest.raises(ValueError, match="'nope' not found"):
        arbor.Dataset(read("diamonds_reg_train"), label="nope")
    assert arbor.RandomForestRegressor(n_trees=2).fit(dataset).n_features_in_ == len(dataset.feature_names)
    with pytest.raises(ValueError, match="bin_boundaries"):
        arbor.RandomForestRegressor(n_trees=2, bin_boundaries="greedy").fit(dataset)


def test_greedy_bins_travel_with_the_dataset():
    table = read("diamonds_reg_train").slice(0, 5_000)
    dataset = arbor.Dataset(table, label="label", bin_boundaries="greedy")
    model = arbor.GradientBoostingRegressor(n_rounds=5, bin_boundaries="greedy").fit(dataset)
    direct = arbor.GradientBoostingRegressor(n_rounds=5, bin_boundaries="greedy").fit(
        table.drop_columns(["label"]), table.column("label")
    )
    features = table.drop_columns(["label"])
    assert (model.predict(features) == direct.predict(features)).all(), "binned once or at fit: one model"
    assert model.model_.info()["params"]["bin_boundaries"] == "greedy"
    quantile = arbor.GradientBoostingRegressor(n_rounds=5).fit(features, table.column("label"))
    assert "bin_boundaries" not in quantile.model_.info()["params"]
    assert (quantile.predict(features) != direct.predict(features)).any()


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


def test_grid_search_searches_over_one_binning():
    """scikit-learn's GridSearchCV takes a dataset and its labels: every
    fold fits on rows taken from the one binning (no binning beyond the
    dataset's own) and is scored on its own rows; the scores are those of
    fitting the fold's rows and predicting the held-out rows by hand, and
    about those of a search over the raw table."""
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    table = read("flights_cls_train").slice(0, 20_000)
    X, y = split(table)
    dataset = arbor.Dataset(table, label="label")
    assert dataset.shape == (20_000, len(X.schema.names)) and len(dataset) == 20_000
    assert (dataset.y == y.to_numpy()).all(), "labels in row order"
    binnings = arbor.Dataset.binnings
    grid = {"max_depth": [4, 10]}
    folds = KFold(4, shuffle=True, random_state=0)
    search = GridSearchCV(arbor.RandomForestClassifier(n_trees=10), grid, cv=folds).fit(dataset, dataset.y)
    assert arbor.Dataset.binnings == binnings, "the search bins nothing again"
    scores = search.cv_results_["mean_test_score"]
    assert not any(s != s for s in scores), "every fold scored"
    assert search.best_estimator_.predict(dataset).shape == (20_000,), "refit on the whole dataset"

    by_hand = []
    for train, test in folds.split(range(20_000)):
        model = arbor.RandomForestClassifier(n_trees=10, max_depth=10).fit(dataset[train], dataset.y[train])
        predicted = model.predict(dataset[test])
        by_hand.append((predicted == y.to_numpy()[test]).mean())
        # A bin's stand-in goes where the bin's raw values go: the same predictions as on the raw rows.
        assert (predicted == model.predict(X.take(test))).all()
        assert model.predict_proba(dataset[test]) == pytest.approx(model.predict_proba(X.take(test)))
    assert scores[1] == pytest.approx(sum(by_hand) / len(by_hand))

    raw = GridSearchCV(arbor.RandomForestClassifier(n_trees=10), grid, cv=folds).fit(X, y.to_numpy())
    assert abs(raw.cv_results_["mean_test_score"][1] - scores[1]) < 0.01
    regression = read("diamonds_reg_train")
    diamonds = arbor.Dataset(regression, label="label")
    r2 = cross_val_score(arbor.GradientBoostingRegressor(n_rounds=30), diamonds, diamonds.y, cv=3)
    assert (r2 > 0.9).all(), r2


def test_dataset_rows_are_taken_as_asked_and_guarded():
    table = read("cancer_cls_train")
    dataset = arbor.Dataset(table, label="label")
    n = dataset.n_rows
    y = dataset.y
    assert (dataset[[5, 1, 3]].y == y[[5, 1, 3]]).all(), "the order asked"
    assert (dataset[-3:].y == y[-3:]).all() and (dataset[y == 1].y == 1).all()
    with pytest.raises(IndexError, match="row numbers run"):
        dataset[[n]]
    with pytest.raises(ValueError, match="taken twice"):
        dataset[[1, 1]]
    model = arbor.RandomForestClassifier(n_trees=3).fit(dataset)
    with pytest.raises(ValueError, match="not the dataset's label"):
        arbor.RandomForestClassifier(n_trees=3).fit(dataset, 1 - y)
    other = arbor.Dataset(table, label="label")
    with pytest.raises(ValueError, match="fitted on its bins"):
        model.predict(other)
    X, labels = split(table)
    with pytest.raises(ValueError, match="fitted on its bins"):
        arbor.RandomForestClassifier(n_trees=3).fit(X, labels).predict(dataset)
    assert model.score(dataset) == pytest.approx((model.predict(X) == labels.to_numpy()).mean())


def test_a_regressor_fitted_on_a_dataset_scores_out_of_bag():
    """``oob_score_`` from a dataset is the one ``fit(X, y)`` gives on the same rows."""
    table = read("diamonds_reg_train")
    X, y = split(table)
    direct = arbor.RandomForestRegressor(n_trees=10, oob=True).fit(X, y)
    binned = arbor.RandomForestRegressor(n_trees=10, oob=True).fit(arbor.Dataset(table, label="label"))
    assert binned.oob_score_ == pytest.approx(direct.oob_score_, rel=1e-12)
    assert 0.9 < binned.oob_score_ < 1.0
