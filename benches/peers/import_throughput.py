"""Prediction throughput of imported models: arbor vs XGBoost's and LightGBM's own predictors.

Trains an XGBoost and a LightGBM binary model on flights_cls (numeric features,
string columns as ordinal codes; 100 rounds, depth 6, 2 threads), imports each
with `arbor import`, then scores the same rows (the test set tiled to
--rows rows) with `arbor predict --proba` (a whole process: Parquet read and
write included) and in-process with the library (`inplace_predict` /
`Booster.predict` on a NumPy array already in memory). Prints rows per second,
the ratio, and the largest probability difference.

Run from the repository root after `cargo build --release`:

    .venv-peers/bin/python benches/peers/import_throughput.py
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
THREADS = 2


def frames(rows):
    train = pq.read_table(ROOT / "data" / "flights_cls_train.parquet").to_pandas()
    test = pq.read_table(ROOT / "data" / "flights_cls_test.parquet").to_pandas()
    for c in ["carrier", "origin", "dest"]:
        levels = sorted(train[c].dropna().unique())
        index = {v: i for i, v in enumerate(levels)}
        for df in (train, test):
            df[c] = df[c].map(index).astype("float64")
    features = [c for c in train.columns if c != "label"]
    x_train = train[features].to_numpy(np.float64)
    x_test = test[features].to_numpy(np.float64)
    x_test = np.tile(x_test, (rows // len(x_test) + 1, 1))[:rows]
    return features, x_train, train["label"].to_numpy(), x_test


def median_seconds(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--arbor", default=str(ROOT / "target" / "release" / "arbor"))
    args = parser.parse_args()
    import lightgbm as lgb
    import xgboost as xgb

    features, x_train, y_train, x_test = frames(args.rows)
    work = Path(tempfile.mkdtemp(prefix="arbor-import-"))
    rows = work / "rows.parquet"
    pq.write_table(pa.table({f: x_test[:, i] for i, f in enumerate(features)}), rows)
    env = dict(os.environ, RAYON_NUM_THREADS=str(THREADS))

    booster = xgb.train(
        {"objective": "binary:logistic", "max_depth": 6, "eta": 0.3, "tree_method": "hist", "nthread": THREADS, "seed": 0},
        xgb.DMatrix(x_train, label=y_train, feature_names=features),
        100,
    )
    booster.save_model(work / "xgb.json")
    gbm = lgb.train(
        {"objective": "binary", "num_leaves": 64, "max_depth": 6, "learning_rate": 0.3, "num_threads": THREADS,
         "verbose": -1, "seed": 0},
        lgb.Dataset(x_train, label=y_train, feature_name=features),
        100,
    )
    gbm.save_model(work / "lgb.txt")

    peers = {
        "xgboost": ("xgboost-json", work / "xgb.json", lambda: booster.inplace_predict(x_test)),
        "lightgbm": ("lightgbm-text", work / "lgb.txt", lambda: gbm.predict(x_test, num_threads=THREADS)),
    }
    print(f"{args.rows} rows x {len(features)} features, 100 trees of depth <= 6, {THREADS} threads, "
          f"median of {args.repeat}")
    print(f"{'model':10} {'arbor rows/s':>14} {'peer rows/s':>14} {'arbor/peer time':>16} {'max |dp|':>10}")
    for name, (format, file, peer_predict) in peers.items():
        model = work / f"{name}.arbor"
        subprocess.run([args.arbor, "import", "--format", format, "--input", str(file), "--output", str(model)],
                       check=True, capture_output=True)
        out = work / f"{name}_scored.parquet"
        command = [args.arbor, "predict", "--model", str(model), "--input", str(rows), "--output", str(out), "--proba"]
        arbor_s = median_seconds(lambda: subprocess.run(command, check=True, capture_output=True, env=env), args.repeat)
        peer_s = median_seconds(peer_predict, args.repeat)
        got = pq.read_table(out, columns=["proba_1"]).column(0).to_numpy()
        diff = np.max(np.abs(got - peer_predict()))
        print(f"{name:10} {args.rows / arbor_s:14,.0f} {args.rows / peer_s:14,.0f} {arbor_s / peer_s:16.2f} {diff:10.1e}")


if __name__ == "__main__":
    main()
