"""Explaining predictions in process: arbor's TreeSHAP against XGBoost's
`pred_contribs` and LightGBM's `pred_contrib`, on the same model and rows.

Trains an XGBoost and a LightGBM binary model on flights_cls (numeric
features, string columns as ordinal codes; the reference boosting settings of
docs/explain.md: 50 rounds, depth 6, 2 threads), imports each into arbor through
the Python package (`arbor.Model.import_xgboost` / `import_lightgbm`), then
explains the same test rows (tiled to --rows) with the library and with
arbor, both in process on data already in memory: a NumPy matrix for the
library, a pyarrow Table for arbor. Prints the median seconds of --repeat
runs, arbor's time over the library's, and the largest difference between
the two sets of contributions (XGBoost computes in 32-bit floats).

Run from the repository root with the peer venv and arbor's package built
in release mode into it:

    VIRTUAL_ENV=$PWD/.venv-peers maturin develop --release -m crates/arbor-python/Cargo.toml
    .venv-peers/bin/python benches/peers/contributions.py
"""
import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

THREADS = 2
os.environ.setdefault("RAYON_NUM_THREADS", str(THREADS))

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import xgboost as xgb  # noqa: E402

import arbor  # noqa: E402

from import_throughput import frames  # noqa: E402


def median_seconds(run, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--depth", type=int, default=6)
    args = parser.parse_args()

    features, x_train, y_train, x_test = frames(args.rows)
    table = pa.table({f: x_test[:, i] for i, f in enumerate(features)})
    out = tempfile.mkdtemp()

    booster = xgb.train(
        {"objective": "binary:logistic", "max_depth": args.depth, "eta": 0.3, "tree_method": "hist",
         "nthread": THREADS, "seed": 1},
        xgb.DMatrix(x_train, label=y_train, feature_names=features),
        args.rounds,
    )
    booster.save_model(f"{out}/xgb.json")
    dtest = xgb.DMatrix(x_test, feature_names=features, nthread=THREADS)

    lgb_model = lgb.train(
        {"objective": "binary", "num_leaves": 2**args.depth, "max_depth": args.depth, "learning_rate": 0.3,
         "num_threads": THREADS, "verbose": -1, "seed": 1},
        lgb.Dataset(x_train, label=y_train, feature_name=features),
        args.rounds,
    )
    lgb_model.save_model(f"{out}/lgb.txt")

    cases = [
        ("xgboost", arbor.Model.import_xgboost(f"{out}/xgb.json"),
         lambda: booster.predict(dtest, pred_contribs=True)),
        ("lightgbm", arbor.Model.import_lightgbm(f"{out}/lgb.txt"),
         lambda: lgb_model.predict(x_test, pred_contrib=True, num_threads=THREADS)),
    ]
    print(f"{args.rows} rows, {len(features)} features, {args.rounds} rounds of depth {args.depth}, "
          f"{THREADS} threads; median of {args.repeat}")
    print(f"{'library':10} {'library s':>10} {'arbor s':>10} {'arbor/library':>14} {'max |diff|':>11}")
    for name, model, library in cases:
        width = len(model.contribution_names)

        def ours(model=model, width=width):
            c = model.predict_contributions(table)
            return c.flatten().to_numpy().reshape(len(c), width)

        peer_s, theirs = median_seconds(library, args.repeat)
        arbor_s, mine = median_seconds(ours, args.repeat)
        diff = float(np.max(np.abs(np.asarray(theirs, dtype=np.float64) - mine)))
        print(f"{name:10} {peer_s:10.3f} {arbor_s:10.3f} {arbor_s / peer_s:14.2f} {diff:11.1e}")


if __name__ == "__main__":
    main()
