"""scikit-learn's own estimator checks, on small models (the checks use tiny data)."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

import arbor

# The one check arbor fails, and why: a weight of 2 is not the row twice.
# Bin edges are quantiles of the rows and min_samples_leaf counts rows (both
# as in LightGBM), and a forest's bootstrap draws rows (as scikit-learn's own
# forests, which fail this check too).
WEIGHTS = "bin edges and min_samples_leaf count rows, and bootstrap draws rows: weights are not repetitions"


def expected_failed_checks(estimator):
    return {"check_sample_weight_equivalence_on_dense_data": WEIGHTS}


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
