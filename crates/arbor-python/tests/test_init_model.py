"""Continued training from Python: ``fit(..., init_model=)`` appends rounds to
a boosted model given as a model, an estimator, a path or bytes; 30 rounds
then 20 predict as 50; new rows lower the error; mismatches are clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import arbor
from conftest import split


def test_thirty_then_twenty_rounds_predict_as_fifty(cancer, tmp_path):
    train, test = cancer
    X, y = split(train)
    Xt = split(test)[0]
    options = dict(max_depth=3, learning_rate=0.2, sample_fraction=0.8)
    whole = arbor.GradientBoostingClassifier(n_rounds=50, **options).fit(X, y)
    first = arbor.GradientBoostingClassifier(n_rounds=30, **options).fit(X, y)
    expected = whole.predict_proba(Xt)

    path = tmp_path / "first.arbor"
    first.model_.save(str(path))
    # Every form a model to continue comes in.
    for init in (first, first.model_, path, str(path), bytes(first.model_)):
        more = arbor.GradientBoostingClassifier(n_rounds=20, **options).fit(X, y, init_model=init)
        assert more.model_.n_trees == 50
        np.testing.assert_allclose(more.predict_proba(Xt), expected, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(more.classes_, whole.classes_)


def test_new_rows_lower_the_error(diamonds):
    train, test = diamonds
    X, y = split(train.slice(0, 20_000))
    Xt, yt = split(test)
    yt = yt.to_numpy()
    first = arbor.GradientBoostingRegressor(n_rounds=30, max_depth=5, learning_rate=0.1).fit(
        X.slice(0, 10_000).to_pandas(), y.slice(0, 10_000).to_pandas()
    )
    more = arbor.GradientBoostingRegressor(n_rounds=30, max_depth=5, learning_rate=0.1).fit(
        X.slice(10_000).to_pandas(), y.slice(10_000).to_pandas(), init_model=first
    )

    def rmse(model):
        return float(np.sqrt(np.mean((model.predict(Xt.to_pandas()) - yt) ** 2)))

    assert rmse(more) < 0.9 * rmse(first)


def test_mismatches_are_clear_errors(diamonds, cancer):
    X, y = split(diamonds[0].slice(0, 3000))
    first = arbor.GradientBoostingRegressor(n_rounds=5).fit(X, y)
    with pytest.raises(ValueError, match="'carat'"):
        arbor.GradientBoostingRegressor(n_rounds=5).fit(X.drop_columns(["carat"]), y, init_model=first)
    with pytest.raises(ValueError, match="option 'loss'"):
        arbor.GradientBoostingRegressor(n_rounds=5, loss="absolute").fit(X, y, init_model=first)
    with pytest.raises(ValueError, match="random forest"):
        forest = arbor.RandomForestRegressor(n_trees=2).fit(X, y)
        arbor.GradientBoostingRegressor(n_rounds=5).fit(X, y, init_model=forest)
    with pytest.raises(ValueError, match="init_model"):
        arbor.RandomForestRegressor(n_trees=2).fit(X, y, init_model=first)
    with pytest.raises(TypeError, match="init_model takes"):
        arbor.GradientBoostingRegressor(n_rounds=5).fit(X, y, init_model=42)
    with pytest.raises(ValueError, match="arbor.Dataset"):
        dataset = arbor.Dataset(diamonds[0].slice(0, 3000), label="label")
        arbor.GradientBoostingRegressor(n_rounds=5).fit(dataset, init_model=first)
    Xc, yc = split(cancer[0])
    classifier = arbor.GradientBoostingClassifier(n_rounds=5).fit(Xc, yc)
    with pytest.raises(ValueError, match="class '7'"):
        arbor.GradientBoostingClassifier(n_rounds=5).fit(Xc, np.asarray(yc) + 7, init_model=classifier)
