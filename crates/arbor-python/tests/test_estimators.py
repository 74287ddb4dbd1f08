"""The scikit-learn estimators on the bundled data: accuracy, the same model
as the command line, the same model from every kind of input, pickling."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from sklearn.base import clone

import arbor
from arbor import _arbor

from conftest import DATA, read, split


def accuracy(predicted, table: pa.Table) -> float:
    return float(np.mean(predicted == table.column("label").to_numpy()))


def rmse(predicted, table: pa.Table) -> float:
    return float(np.sqrt(np.mean((predicted - table.column("label").to_numpy()) ** 2)))


def test_random_forest_accuracy_on_cancer_and_digits(cancer, digits):
    # References (data/README.md): scikit-learn 0.947 on cancer, oneDAL 0.986 on digits.
    for (train, test), floor in [(cancer, 0.94), (digits, 0.965)]:
        X, y = split(train)
        clf = arbor.RandomForestClassifier().fit(X, y)
        assert accuracy(clf.predict(split(test)[0]), test) >= floor


def test_gradient_boosting_on_diamonds_categorical_strings(diamonds):
    # XGBoost's hist gbtree: RMSE 0.0932 (data/README.md); cut/color/clarity are strings.
    train, test = diamonds
    X, y = split(train)
    reg = arbor.GradientBoostingRegressor().fit(X.to_pandas(), y.to_pandas())
    assert rmse(reg.predict(split(test)[0].to_pandas()), test) < 0.097
    forest = arbor.RandomForestRegressor(n_trees=20).fit(X, y)
    assert rmse(forest.predict(split(test)[0]), test) < 0.11


def test_gradient_boosting_classifier_on_flights(flights):
    # LightGBM's gbdt: accuracy 0.9073 on the whole set (data/README.md).
    train, test = flights
    X, y = split(train)
    clf = arbor.GradientBoostingClassifier(n_rounds=30).fit(X, y)
    assert accuracy(clf.predict(split(test)[0]), test) > 0.90
    proba = clf.predict_proba(split(test)[0])
    assert proba.shape == (test.num_rows, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert list(clf.classes_) == [0, 1]
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(split(test)[0]))


@pytest.mark.parametrize(
    ("estimator", "data", "options"),
    [
        (arbor.RandomForestClassifier(n_trees=10, max_depth=12), "flights_cls_train", "n_trees=10 max_depth=12"),
        (arbor.RandomForestRegressor(n_trees=8), "diamonds_reg_train", "n_trees=8"),
        (arbor.GradientBoostingClassifier(n_rounds=10, lambda_=2.0), "flights_cls_train", "n_rounds=10 lambda=2.0"),
        (arbor.GradientBoostingRegressor(n_rounds=10), "diamonds_reg_train", "n_rounds=10"),
        (
            arbor.GradientBoostingRegressor(n_rounds=10, loss="tweedie", tweedie_power=1.3),
            "claims_reg_train",
            "n_rounds=10 loss=tweedie tweedie_power=1.3",
        ),
        (
            arbor.GradientBoostingRegressor(n_rounds=5, loss="quantile", alpha=0.8),
            "diamonds_reg_train",
            "n_rounds=5 loss=quantile alpha=0.8",
        ),
        (
            arbor.GradientBoostingRegressor(n_rounds=10, monotone={"carat": 1, "table": -1}),
            "diamonds_reg_train",
            "n_rounds=10 monotone=carat:+1,table:-1",
        ),
        (
            arbor.RandomForestRegressor(n_trees=4, monotone=[1, 0, 0, 0, 0, 0, 0, 0, 0]),
            "diamonds_reg_train",
            "n_trees=4 monotone=carat:+1",
        ),
        (arbor.RandomForestRegressor(n_trees=4, criterion="poisson"), "counts_reg_train", "n_trees=4 criterion=poisson"),
        (
            arbor.RandomForestRegressor(n_trees=3, criterion="absolute_error"),
            "severity_reg_train",
            "n_trees=3 criterion=absolute_error",
        ),
        (
            arbor.GradientBoostingClassifier(
                n_rounds=5, use_quantized_grad=True, num_grad_quant_bins=8, quant_train_renew_leaf=True
            ),
            "flights_cls_train",
            "n_rounds=5 use_quantized_grad=true num_grad_quant_bins=8 quant_train_renew_leaf=true",
        ),
        (
            arbor.GradientBoostingRegressor(n_rounds=5, interaction_constraints=[["carat", "x"], ["cut", "color"]]),
            "diamonds_reg_train",
            "n_rounds=5 interaction_constraints=[carat,x],[cut,color]",
        ),
    ],
)
def test_the_same_model_bytes_as_the_command_line(estimator, data, options, arbor_cli, tmp_path):
    algorithm = "gradient-boosting" if "n_rounds" in options else "random-forest"
    path = tmp_path / "cli.arbor"
    args = ["train", "--input", str(DATA / f"{data}.parquet"), "--label", "label", "--output", str(path)]
    args += ["--set", f"algorithm={algorithm}"]
    for option in options.split():
        args += ["--set", option]
    arbor_cli(*args)
    X, y = split(read(data))
    fitted = clone(estimator).fit(X, y)
    assert bytes(fitted.model_) == path.read_bytes()
    assert arbor.Model.load(path) == fitted.model_


def test_monotone_constraints_hold_on_a_grid_and_bad_ones_are_named():
    train, test = read("diamonds_reg_train"), read("diamonds_reg_test")
    X, y = split(train)
    model = arbor.GradientBoostingRegressor(n_rounds=30, monotone="carat:+1").fit(X, y)
    rows = split(test)[0].to_pandas().head(50)
    grid = np.linspace(0.2, 5.0, 40)
    for _, row in rows.iterrows():
        repeated = rows.loc[[row.name] * len(grid)].copy()
        repeated["carat"] = grid
        assert np.all(np.diff(model.predict(repeated)) >= 0)
    with pytest.raises(ValueError, match="option 'monotone': feature 'cut' is categorical"):
        arbor.GradientBoostingRegressor(n_rounds=2, monotone={"cut": 1}).fit(X, y)
    with pytest.raises(ValueError, match="monotone has 2 directions; X has 9 features"):
        arbor.GradientBoostingRegressor(n_rounds=2, monotone=[1, 0]).fit(X, y)


def test_class_weight_is_a_sample_weight_on_each_row_of_its_class(flights):
    (X, y), (X_test, _) = (split(t) for t in flights)
    X, y = X.slice(0, 20_000), y.slice(0, 20_000)
    late = np.asarray(y) == 1
    for estimator in (arbor.RandomForestClassifier(n_trees=5), arbor.GradientBoostingClassifier(n_rounds=10)):
        by_class = clone(estimator).set_params(class_weight={1: 4.0}).fit(X, y)
        by_row = clone(estimator).fit(X, y, sample_weight=np.where(late, 4.0, 1.0))
        np.testing.assert_array_equal(by_class.predict_proba(X_test), by_row.predict_proba(X_test))
    scaled = arbor.GradientBoostingClassifier(n_rounds=10, scale_pos_weight=4.0).fit(X, y)
    by_row = arbor.GradientBoostingClassifier(n_rounds=10).fit(X, y, sample_weight=np.where(late, 4.0, 1.0))
    np.testing.assert_array_equal(scaled.predict_proba(X_test), by_row.predict_proba(X_test))
    with pytest.raises(ValueError, match="'7' is not a class of the label; the classes are 0, 1"):
        arbor.RandomForestClassifier(n_trees=2, class_weight={7: 2.0}).fit(X, y)


def test_poisson_regressor_predicts_means_and_bad_options_are_named():
    train, test = read("counts_reg_train"), read("counts_reg_test")
    X, y = split(train)
    reg = arbor.GradientBoostingRegressor(n_rounds=30, learning_rate=0.1, loss="poisson").fit(X, y)
    predicted = reg.predict(split(test)[0])
    assert predicted.min() > 0
    # Poisson's log link balances: the mean prediction is the mean count (0.062 on test).
    assert abs(predicted.mean() - test.column("label").to_numpy().mean()) < 0.005
    # The contributions explain the raw score, whose exp is the prediction.
    contributions = reg.predict_contributions(split(test)[0].slice(0, 50))
    np.testing.assert_allclose(np.exp(contributions.sum(axis=1)), predicted[:50], rtol=1e-9)
    with pytest.raises(ValueError, match="option 'alpha': expected a number in \\(0, 1\\), got '1.5'"):
        arbor.GradientBoostingRegressor(loss="quantile", alpha=1.5).fit(X, y)
    with pytest.raises(ValueError, match="option 'huber_delta': applies to loss=huber only"):
        arbor.GradientBoostingRegressor(huber_delta=2.0).fit(X, y)
    negative = pa.chunked_array([y.to_numpy() - 1.0])
    with pytest.raises(ValueError, match="loss=gamma needs labels > 0"):
        arbor.GradientBoostingRegressor(loss="gamma", n_rounds=2).fit(X, negative)


def test_pandas_polars_pyarrow_and_numpy_give_the_same_model(cancer):
    train, test = cancer
    X, y = split(train)
    models = [
        arbor.RandomForestClassifier(n_trees=15).fit(X, y),
        arbor.RandomForestClassifier(n_trees=15).fit(X.combine_chunks().to_batches()[0], y),
        arbor.RandomForestClassifier(n_trees=15).fit(X.to_pandas(), y.to_pandas()),
        arbor.RandomForestClassifier(n_trees=15).fit(pl.from_arrow(X), pl.from_arrow(y)),
    ]
    first = bytes(models[0].model_)
    for m in models[1:]:
        assert bytes(m.model_) == first
    # NumPy has no column names (features become x0, x1, ...), so compare what it predicts.
    as_numpy = arbor.RandomForestClassifier(n_trees=15).fit(np.column_stack([c.to_numpy() for c in X.columns]), y)
    Xt = split(test)[0]
    np.testing.assert_array_equal(
        as_numpy.predict(np.column_stack([c.to_numpy() for c in Xt.columns])), models[0].predict(Xt)
    )
    assert as_numpy.model_.feature_names == [f"x{j}" for j in range(X.num_columns)]
    assert not hasattr(as_numpy, "feature_names_in_")
    assert list(models[2].feature_names_in_) == X.schema.names


def test_string_labels_and_predictions(diamonds):
    train, test = diamonds
    X, _ = split(train)
    cut = X.column("cut").to_numpy(zero_copy_only=False)
    features = X.drop_columns(["cut"])
    clf = arbor.RandomForestClassifier(n_trees=10).fit(features, cut)
    assert sorted(clf.classes_) == list(clf.classes_)
    assert set(clf.classes_) == {"Fair", "Good", "Ideal", "Premium", "Very Good"}
    predicted = clf.predict(split(test)[0].drop_columns(["cut"]))
    assert predicted.dtype == object and set(predicted) <= set(clf.classes_)
    arrow_predicted = clf.model_.predict(split(test)[0])
    assert pa.types.is_string(arrow_predicted.type) or pa.types.is_large_string(arrow_predicted.type)


def test_pickle_and_clone_keep_the_model(cancer):
    train, test = cancer
    X, y = split(train)
    clf = arbor.GradientBoostingClassifier(n_rounds=8, max_depth=3).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    assert bytes(again.model_) == bytes(clf.model_)
    np.testing.assert_array_equal(again.predict_proba(split(test)[0]), clf.predict_proba(split(test)[0]))
    model = pickle.loads(pickle.dumps(clf.model_))
    assert model == clf.model_
    fresh = clone(clf)
    assert fresh.get_params() == clf.get_params() and not hasattr(fresh, "model_")
    fresh.set_params(n_rounds=3)
    assert fresh.fit(X, y).model_.n_trees == 3


def test_sample_weight_changes_the_model(cancer):
    """Weights change the model (zero weights: tests/test_references.py)."""
    train, _ = cancer
    X, y = split(train)
    n = X.num_rows
    plain = arbor.RandomForestClassifier(n_trees=5, bootstrap=False, max_features="all", split_method="exact")
    ones = clone(plain).fit(X, y, sample_weight=np.ones(n))
    heavy = clone(plain).fit(X, y, sample_weight=np.linspace(0.5, 3.0, n))
    assert bytes(ones.model_) != bytes(heavy.model_)
    with pytest.raises(ValueError, match="sample_weight"):
        clone(plain).fit(X, y, sample_weight=np.ones(n - 1))


def test_random_forest_out_of_bag_score(cancer):
    train, _ = cancer
    X, y = split(train)
    clf = arbor.RandomForestClassifier(n_trees=30, oob=True).fit(X, y)
    assert 0.9 < clf.oob_score_ <= 1.0
    assert clf.oob_score_ == pytest.approx(1.0 - clf.model_.oob_error)
    assert clf.feature_importances_.shape == (X.num_columns,)


def test_training_and_prediction_release_the_gil(flights):
    X, y = split(flights[0])
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = ticks[0]
        model = _arbor.train(X, y.combine_chunks(), options=[("n_trees", "4"), ("max_depth", "10")])
        during_training = ticks[0] - before
        before = ticks[0]
        model.predict(flights[1])
        during_prediction = ticks[0] - before
    finally:
        stop.set()
        counter.join()
    # Held GIL: the counter runs only at the interpreter's switch points before the call (a handful).
    assert during_training > 10_000, during_training
    assert during_prediction > 1_000, during_prediction


def test_model_predict_returns_arrow_typed_like_the_label(flights):
    train, test = flights
    X, y = split(train)
    model = arbor.RandomForestClassifier(n_trees=5, max_depth=8).fit(X, y).model_
    predicted = model.predict(test)
    assert isinstance(predicted, pa.Array) and predicted.type == pa.int32()
    assert model.predict(pl.from_arrow(test)).equals(predicted)
    proba = model.predict_proba(test)
    assert pa.types.is_fixed_size_list(proba.type) and proba.type.list_size == 2
    assert model.classes.equals(pa.array([0, 1], pa.int32()))
    empty = model.predict(test.slice(0, 0))
    assert len(empty) == 0 and empty.type == pa.int32()


def test_columns_are_found_by_name_in_any_order(diamonds):
    train, test = diamonds
    X, y = split(train)
    reg = arbor.RandomForestRegressor(n_trees=5).fit(X.to_pandas(), y)
    Xt = split(test)[0].to_pandas()
    shuffled = Xt[list(reversed(Xt.columns))].assign(extra=1.0)
    np.testing.assert_array_equal(reg.predict(shuffled), reg.predict(Xt))
    with pytest.raises(ValueError, match="missing: carat"):
        reg.predict(Xt.drop(columns="carat"))
