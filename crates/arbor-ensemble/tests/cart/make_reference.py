"""Reference trees for arbor's CART-equality test (tests/cart_equality.rs).

Fits scikit-learn's DecisionTreeClassifier on cancer_cls and on a synthetic
three-class table of continuous features (with the Gini criterion, and again
with `criterion="entropy"`, with values missing at random, and with sample
weights), and DecisionTreeRegressor on a slice
of diamonds_reg (numeric columns), on float32 features as scikit-learn sees
them, and writes next to this script:

- <name>_train.parquet / <name>_test.parquet: the data arbor trains and predicts on;
- <name>_tree.json: the fitted tree (children, feature, threshold, leaf value);
- the test file's `sklearn_prediction` column (and `sklearn_proba_<k>` for classes).

Every setting is one where the CART tree is unique: scikit-learn grows the same
tree under 12 random states (its feature order is random, so gains that tie
exactly would make its choice arbitrary). Classification gains depend only on
children's class counts and tie often in small nodes, hence the depth and leaf
limits of the classification cases.

Also DecisionTreeRegressor(criterion="absolute_error") on a synthetic table
of continuous features and heavy-tailed noise, and with sample weights on the
diamonds slice (its integer prices tie in absolute error without them).

Run from the repository root (names, if given, make only those references):
    .venv-peers/bin/python crates/arbor-ensemble/tests/cart/make_reference.py [cart_mae ...]
The test itself needs no Python.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

HERE = Path(__file__).parent
DATA = Path("data")
ONLY = set(sys.argv[1:])


def load(name, columns, rows=None):
    table = pq.read_table(DATA / name)
    if rows is not None:
        table = table.slice(0, rows)
    x = np.column_stack([table[c].to_numpy().astype(np.float32) for c in columns])
    y = table["label"].to_numpy()
    return x, y


def save(name, columns, x, y, label_type, weight=None):
    arrays = [pa.array(x[:, i], pa.float32(), from_pandas=True) for i in range(x.shape[1])] + [pa.array(y, label_type)]
    names = columns + ["label"]
    if weight is not None:
        arrays.append(pa.array(weight, pa.float64()))
        names.append("weight")
    return pa.table(arrays, names=names)


def tree_json(model, x):
    t = model.tree_
    # Whether training rows with the node's feature missing reached each split:
    # where none did, scikit-learn sends missing values to the child of more rows.
    reached = model.decision_path(x).toarray().astype(bool)
    saw_missing = [
        bool(t.children_left[n] != -1 and np.isnan(x[reached[:, n], t.feature[n]]).any()) for n in range(t.node_count)
    ]
    value = t.value[:, 0, :]
    if value.shape[1] > 1:  # classifier: class fractions (scikit-learn >= 1.4 stores them normalized)
        value = value / value.sum(axis=1, keepdims=True)
    return {
        "children_left": t.children_left.tolist(),
        "children_right": t.children_right.tolist(),
        "feature": t.feature.tolist(),
        "threshold": t.threshold.tolist(),
        "missing_go_to_left": t.missing_go_to_left.astype(bool).tolist(),
        "saw_missing": saw_missing,
        "weighted_n_node_samples": t.weighted_n_node_samples.tolist(),
        "value": value.tolist(),
    }


def signature(model):
    return (tuple(model.tree_.feature), tuple(model.tree_.threshold))


def reference(name, model, train, test, columns, label_type, classes, weight=None):
    if ONLY and name not in ONLY:
        return
    (xtr, ytr), (xte, yte) = train, test
    signatures = {signature(model.set_params(random_state=r).fit(xtr, ytr, sample_weight=weight)) for r in range(12)}
    assert len(signatures) == 1, f"{name}: ties in gain make the CART tree depend on the random state"
    model.fit(xtr, ytr, sample_weight=weight)
    pq.write_table(save(name, columns, xtr, ytr, label_type, weight), HERE / f"{name}_train.parquet")
    test_table = save(name, columns, xte, yte, label_type)
    test_table = test_table.append_column("sklearn_prediction", pa.array(model.predict(xte), label_type))
    if classes:
        for k, column in enumerate(model.predict_proba(xte).T):
            test_table = test_table.append_column(f"sklearn_proba_{k}", pa.array(column, pa.float64()))
    pq.write_table(test_table, HERE / f"{name}_test.parquet")
    (HERE / f"{name}_tree.json").write_text(json.dumps(tree_json(model, xtr)))
    print(name, "nodes", model.tree_.node_count, "depth", model.get_depth())


def synthetic(n, seed):
    """Continuous features (no ties) and three classes from a noisy nonlinear score."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    score = x[:, 0] * x[:, 1] + np.sin(2 * x[:, 2]) + 0.5 * x[:, 3] + rng.normal(scale=0.5, size=n)
    return x, np.digitize(score, [-0.5, 0.5]).astype(np.int32)


def synthetic_regression(n, seed):
    """Continuous features and a response with Student-t noise (2 degrees of
    freedom: outliers, where absolute error is the criterion to use)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = 3 * x[:, 0] * x[:, 1] + 2 * np.sin(2 * x[:, 2]) + x[:, 3] + rng.standard_t(2, size=n)
    return x, y


def with_missing(data, seed):
    """The synthetic table with values missing at random: 15% of x0, 30% of x3."""
    x, y = data
    rng = np.random.default_rng(seed)
    x = x.copy()
    x[rng.random(len(x)) < 0.15, 0] = np.nan
    x[rng.random(len(x)) < 0.30, 3] = np.nan
    return x, y


def synthetic_reference(name, model, transform=lambda data, _seed: data, **weight):
    """A reference on the synthetic three-class table (3,000 training rows,
    1,000 test rows), its rows passed through `transform` with a seed of
    their own."""
    train = transform(synthetic(3000, 7), 17)
    test = transform(synthetic(1000, 8), 18)
    reference(name, model, train, test, [f"x{i}" for i in range(6)], pa.int32(), True, **weight)


cancer = [f"f{i}" for i in range(30)]
reference(
    "cart_cls",
    DecisionTreeClassifier(max_depth=4, min_samples_leaf=10),
    load("cancer_cls_train.parquet", cancer),
    load("cancer_cls_test.parquet", cancer),
    cancer,
    pa.int32(),
    True,
)
synthetic_reference("cart_multi", DecisionTreeClassifier(max_depth=6, min_samples_leaf=20))
diamonds = ["carat", "depth", "table", "x", "y", "z"]
reference(
    "cart_reg",
    DecisionTreeRegressor(min_samples_leaf=20),
    load("diamonds_reg_train.parquet", diamonds, rows=2000),
    load("diamonds_reg_test.parquet", diamonds, rows=1000),
    diamonds,
    pa.float64(),
    False,
)
synthetic_reference("cart_entropy", DecisionTreeClassifier(criterion="entropy", max_depth=6, min_samples_leaf=20))
synthetic_reference("cart_missing", DecisionTreeClassifier(max_depth=6, min_samples_leaf=30), with_missing)
synthetic_reference(
    "cart_weighted",
    DecisionTreeClassifier(max_depth=6, min_samples_leaf=20),
    weight=np.random.default_rng(27).uniform(0.5, 3.0, size=3000),
)
reference(
    "cart_mae",
    DecisionTreeRegressor(criterion="absolute_error", min_samples_leaf=20),
    synthetic_regression(3000, 7),
    synthetic_regression(1000, 8),
    [f"x{i}" for i in range(6)],
    pa.float64(),
    False,
)
reference(
    "cart_mae_weighted",
    DecisionTreeRegressor(criterion="absolute_error", min_samples_leaf=20),
    load("diamonds_reg_train.parquet", diamonds, rows=2000),
    load("diamonds_reg_test.parquet", diamonds, rows=1000),
    diamonds,
    pa.float64(),
    False,
    weight=np.random.default_rng(27).uniform(0.5, 3.0, size=2000),
)
