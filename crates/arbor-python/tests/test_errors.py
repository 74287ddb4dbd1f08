"""Bad input raises a Python exception with arbor's message, never a crash."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arbor
from arbor import _arbor

from conftest import split


def test_bad_options_name_the_key(cancer):
    X, y = split(cancer[0])
    with pytest.raises(ValueError, match="n_trees"):
        arbor.RandomForestClassifier(n_trees=0).fit(X, y)
    with pytest.raises(ValueError, match="max_features"):
        arbor.RandomForestClassifier(max_features="most").fit(X, y)
    with pytest.raises(ValueError, match="unknown option 'n_tree'"):
        _arbor.train(X, y.combine_chunks(), options=[("n_tree", "3")])
    with pytest.raises(ValueError, match="n_rounds"):
        _arbor.train(X, y.combine_chunks(), options=[("n_rounds", "3")])


def test_bad_data_is_named(cancer):
    X, y = split(cancer[0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        arbor.RandomForestClassifier(n_trees=2).fit(X, y.slice(0, 10))
    with pytest.raises(ValueError, match="Unknown label type"):
        arbor.RandomForestClassifier(n_trees=2).fit(X, np.linspace(0, 1, X.num_rows))
    with pytest.raises(ValueError, match="numeric label"):
        arbor.RandomForestRegressor(n_trees=2).fit(X, np.array(["a", "b"] * (X.num_rows // 2) + ["a"]))
    with pytest.raises(ValueError, match="infinity"):
        values = np.ones((20, 2))
        values[3, 1] = np.inf
        arbor.RandomForestRegressor(n_trees=2).fit(values, np.arange(20.0))
    timestamps = pa.table({"t": pa.array(np.arange(20), pa.timestamp("s"))})
    with pytest.raises(ValueError, match="'t'"):
        arbor.RandomForestRegressor(n_trees=2).fit(timestamps, np.arange(20.0))
    with pytest.raises(ValueError, match="no rows|no record batches|empty"):
        arbor.RandomForestRegressor(n_trees=2).fit(X.slice(0, 0), np.array([], dtype=np.float64))


def test_a_model_that_does_not_match_the_data(cancer, diamonds):
    X, y = split(cancer[0])
    clf = arbor.RandomForestClassifier(n_trees=2).fit(X, y)
    with pytest.raises(ValueError, match="f3"):
        clf.predict(X.drop_columns(["f3"]))
    with pytest.raises(ValueError, match="f3"):
        clf.model_.predict(X.drop_columns(["f3"]))
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.predict(np.ones((4, 3)))
    as_text = X.set_column(0, "f0", pa.array(["a"] * X.num_rows))
    with pytest.raises(ValueError, match="f0"):
        clf.model_.predict(as_text)
    regression = arbor.RandomForestRegressor(n_trees=2).fit(*split(diamonds[0]))
    with pytest.raises(ValueError, match="regression"):
        regression.model_.predict_proba(diamonds[1])
