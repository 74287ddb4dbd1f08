"""scikit-learn's own estimator checks, on small models (the checks use tiny data)."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

import arbor

# The one check arbor fails, and why: a weight of 2 is not the row twice.
# Bin edges are quantiles of the rows and min_samples_leaf counts rows (both
# as in LightGBM), and a forest's bootstrap draws rows (as scikit-learn's own
# forests, which fail this check too).
WEIGHTS = "bin edges and min_samples_leaf count rows, and bootstrap draws rows: weights are not repetitions"


# check_regressors_train sets `alpha=0.01` on any regressor that has an
# `alpha`, as a linear model's regularization. arbor's `alpha` is the level of
# loss=quantile, and a loss parameter without its loss is an error, never
# ignored. test_regressor_trains_as_check_regressors_train_asks below makes
# the check's own assertions without that step.
ALPHA = "sets alpha=0.01 (a linear model's regularization); arbor's alpha is loss=quantile's level, refused without it"


def expected_failed_checks(estimator):
    failed = {"check_sample_weight_equivalence_on_dense_data": WEIGHTS}
    if isinstance(estimator, arbor.GradientBoostingRegressor):
        failed["check_regressors_train"] = ALPHA
    return failed


@parametrize_with_checks(
    [
        arbor.RandomForestClassifier(n_trees=5),
        arbor.RandomForestRegressor(n_trees=5),
        arbor.GradientBoostingClassifier(n_rounds=5),
        arbor.GradientBoostingRegressor(n_rounds=5),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def test_regressor_trains_as_check_regressors_train_asks():
    """check_regressors_train's assertions, on its data, without its alpha."""
    import numpy as np
    import pytest
    from sklearn.datasets import make_regression
    from sklearn.preprocessing import scale

    X, y = make_regression(n_samples=200, n_features=10, n_informative=1, bias=5.0, noise=20, random_state=42)
    X, y = scale(X), scale(y)
    for X_, y_ in [(X, y), (X.astype(np.float32), y)]:
        regressor = arbor.GradientBoostingRegressor(n_rounds=5)
        with pytest.raises(ValueError):
            regressor.fit(X_, y_[:-1])
        regressor.fit(X_, y_)
        regressor.fit(X_.tolist(), y_.tolist())
        predicted = regressor.predict(X_)
        assert predicted.shape == y_.shape
        assert regressor.score(X_, y_) > 0.5
