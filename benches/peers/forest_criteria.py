"""Forest split criteria against scikit-learn: arbor's regression forests split
by half the Poisson deviance and by absolute error beside scikit-learn's
RandomForestRegressor with the same criterion, on the same Parquet
train/test files, same trees, features per node and leaf size, 2 threads;
prints each library's held-out metric, training seconds, peak memory and
arbor's time ratio.

Run from the repository root (build arbor first with `cargo build --release`):

    .venv-peers/bin/python benches/peers/forest_criteria.py [--criterion absolute_error,...] [--seeds N]

| criterion | data (data/README.md) | metric |
|---|---|---|
| poisson | counts_reg | mean Poisson deviance |
| absolute_error | severity_reg | mean absolute error |
| squared_error | severity_reg | mean absolute error (the baseline absolute error beats) |

Settings: 50 trees, a third of the features per node, 5 rows a leaf
(arbor's `min_samples_leaf` counts bootstrap draws, scikit-learn's distinct
rows), categories ordinal-encoded for scikit-learn. arbor is timed as a whole
`arbor train` process (Parquet read included) and its peak memory is that
process's (GNU time, /usr/bin/time); scikit-learn is timed around `fit` on data in memory, its peak
memory the Python process's.
"""
import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import encode, load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"n_trees": 50, "min_samples_leaf": 5}
# criterion -> data set, arbor's name, scikit-learn's name
CASES = {
    "poisson": ("counts_reg", "poisson", "poisson"),
    "absolute_error": ("severity_reg", "absolute_error", "absolute_error"),
    "squared_error": ("severity_reg", "mse", "squared_error"),
}


def metric(criterion, y, pred):
    """The held-out metric (lower is better)."""
    if criterion == "poisson":
        mu = np.maximum(pred, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(y > 0, y * np.log(y / mu), 0.0)
        return float(np.mean(2 * (term - y + mu)))
    return float(np.mean(np.abs(y - pred)))


def run_arbor(binary, criterion, seed):
    name, arbor_name, _ = CASES[criterion]
    with tempfile.TemporaryDirectory() as tmp:
        model, scored = Path(tmp) / "m.arbor", Path(tmp) / "p.parquet"
        args = [binary, "train", "--input", str(ROOT / f"data/{name}_train.parquet"), "--label", "label",
                "--output", str(model), "--set", f"n_trees={SETTINGS['n_trees']}", "--set", "max_features=third",
                "--set", f"min_samples_leaf={SETTINGS['min_samples_leaf']}", "--set", f"criterion={arbor_name}",
                "--set", f"seed={seed}"]
        # GNU time reports the process's own peak resident set, in KB.
        peak_file = Path(tmp) / "peak"
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *args], check=True, capture_output=True)
        seconds = time.perf_counter() - start
        peak = int(peak_file.read_text().split()[-1]) / 1024
        subprocess.run([binary, "predict", "--model", str(model), "--input", str(ROOT / f"data/{name}_test.parquet"),
                        "--output", str(scored)], check=True, capture_output=True)
        table = pq.read_table(scored)
        y, pred = table["label"].to_numpy(), table["prediction"].to_numpy()
    return metric(criterion, y, pred), seconds, peak


def run_sklearn(criterion, seed):
    from sklearn.ensemble import RandomForestRegressor

    name, _, sk_name = CASES[criterion]
    train, test, cats = load(name)
    xtr, xte = encode(train.drop(columns="label"), test.drop(columns="label"), cats, False)
    ytr, yte = train["label"].to_numpy(), test["label"].to_numpy()
    model = RandomForestRegressor(n_estimators=SETTINGS["n_trees"], max_features=1 / 3,
                                  min_samples_leaf=SETTINGS["min_samples_leaf"], criterion=sk_name, n_jobs=2,
                                  random_state=seed)
    start = time.perf_counter()
    model.fit(xtr, ytr)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return metric(criterion, yte, model.predict(xte)), seconds, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--criterion", default=",".join(CASES))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--arbor", default=str(ROOT / "target/release/arbor"))
    args = ap.parse_args()
    print("| criterion | data | library | seed | metric | train s | peak MB | arbor / scikit-learn |")
    print("|---|---|---|---|---|---|---|---|")
    for criterion in args.criterion.split(","):
        for seed in range(args.seeds):
            a_metric, a_s, a_mb = run_arbor(args.arbor, criterion, seed)
            s_metric, s_s, s_mb = run_sklearn(criterion, seed)
            data = CASES[criterion][0]
            print(f"| {criterion} | {data} | arbor | {seed} | {a_metric:.4f} | {a_s:.2f} | {a_mb:.0f} | {a_s / s_s:.2f} |")
            print(f"| {criterion} | {data} | scikit-learn | {seed} | {s_metric:.4f} | {s_s:.2f} | {s_mb:.0f} | |",
                  flush=True)


if __name__ == "__main__":
    main()
