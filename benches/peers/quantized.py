"""Quantized gradients against exact ones, and against LightGBM's: boosting with
arbor's `use_quantized_grad` (and `quant_train_renew_leaf`) beside arbor's
exact gradients, LightGBM with and without its `use_quantized_grad`, and
XGBoost, on the same Parquet train/test files with the peer table's boosting
settings (50 rounds, depth 6, learning rate 0.3, lambda 1, 5 rows a leaf, 256
bins, 2 threads). Prints each run's held-out metric (AUC for classification,
RMSE for regression), training seconds and peak memory, and its time over the
faster exact peer's.

Run from the repository root (build arbor first with `cargo build --release`):

    .venv-peers/bin/python benches/peers/quantized.py [--dataset flights_cls,synth_cls_1000k,...]

arbor is timed as a whole `arbor train` process (Parquet read included), its
peak memory that process's (GNU time); each peer runs in a Python process of
its own, timed around `fit` on data in memory, its peak memory that
process's. Synthetic sets are written to target/synth/ on first use.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import GB, arbor_settings, encode, files, load, make_model, metrics  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# setting name -> arbor's extra options
ARBOR = {
    "exact": [],
    "quantized": ["use_quantized_grad=true"],
    "quantized, renewed": ["use_quantized_grad=true", "quant_train_renew_leaf=true"],
}
# (library, setting name) -> LightGBM's extra parameters
PEERS = {
    ("lightgbm", "exact"): {},
    ("lightgbm", "quantized"): {"use_quantized_grad": True},
    ("lightgbm", "quantized, renewed"): {"use_quantized_grad": True, "quant_train_renew_leaf": True},
    ("xgboost", "exact"): {},
}


def task_of(name):
    return "classification" if "_cls" in name else "regression"


def score(task, m):
    return m["auc"] if task == "classification" else m["rmse"]


def run_arbor(binary, name, setting):
    task = task_of(name)
    train, test = files(name)
    with tempfile.TemporaryDirectory() as tmp:
        model, scored, peak_file = Path(tmp) / "m.arbor", Path(tmp) / "p.parquet", Path(tmp) / "peak"
        args = [binary, "train", "--input", str(train), "--label", "label", "--output", str(model),
                "--algorithm", GB]
        for kv in arbor_settings(GB, task) + ARBOR[setting]:
            args += ["--set", kv]
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *args], check=True, capture_output=True,
                       env=dict(os.environ, RAYON_NUM_THREADS="2"))
        seconds = time.perf_counter() - start
        peak = int(peak_file.read_text().split()[-1]) / 1024
        predict = [binary, "predict", "--model", str(model), "--input", str(test), "--output", str(scored)]
        subprocess.run(predict + (["--proba"] if task == "classification" else []), check=True, capture_output=True)
        table = pq.read_table(scored)
    y = table["label"].to_numpy()
    if task == "regression":
        return score(task, metrics(task, y, pred=table["prediction"].to_numpy())), seconds, peak
    classes = np.unique(pq.read_table(train, columns=["label"]).column("label").to_numpy())
    proba = np.column_stack([table[f"proba_{c}"].to_numpy() for c in classes])
    return score(task, metrics(task, y, proba=proba, classes=classes)), seconds, peak


def run_peer(lib, name, setting):
    """One peer's fit in this process: metric, seconds, peak MB (this process's)."""
    task = task_of(name)
    train, test, cats = load(name)
    feats = [c for c in train.columns if c != "label"]
    xtr, xte = encode(train[feats], test[feats], cats, as_category=(lib == "lightgbm"))
    ytr, yte = train["label"].to_numpy(), test["label"].to_numpy()
    cls = task == "classification"
    classes = np.unique(ytr) if cls else None
    model = make_model(lib, GB, task, len(feats))
    model.set_params(**PEERS[(lib, setting)])
    start = time.perf_counter()
    model.fit(xtr, np.searchsorted(classes, ytr) if cls else ytr)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    m = metrics(task, yte, proba=model.predict_proba(xte), classes=classes) if cls else \
        metrics(task, yte, pred=model.predict(xte))
    return score(task, m), seconds, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="flights_cls,flights_reg,diamonds_reg,synth_cls_1000k,synth_reg_1000k")
    ap.add_argument("--arbor", default=str(ROOT / "target/release/arbor"))
    ap.add_argument("--peer", help=argparse.SUPPRESS)  # internal: lib,setting,dataset run in a process of its own
    args = ap.parse_args()
    if args.peer:
        lib, setting, name = args.peer.split("|")
        print(json.dumps(run_peer(lib, name, setting)))
        return
    print("| data | library | gradients | metric | train s | peak MB | train time / faster exact peer |")
    print("|---|---|---|---|---|---|---|")
    for name in args.dataset.split(","):
        files(name)  # writes a synthetic set before any timing
        rows = []
        for (lib, setting) in PEERS:
            out = subprocess.run([sys.executable, __file__, "--peer", f"{lib}|{setting}|{name}"], check=True,
                                 capture_output=True, text=True).stdout
            rows.append((lib, setting, *json.loads(out.strip().splitlines()[-1])))
        for setting in ARBOR:
            rows.append(("arbor", setting, *run_arbor(args.arbor, name, setting)))
        fastest = min(s for lib, setting, _, s, _ in rows if lib != "arbor" and setting == "exact")
        metric = "AUC" if task_of(name) == "classification" else "RMSE"
        for lib, setting, m, s, mb in rows:
            print(f"| {name} | {lib} | {setting} | {metric} {m:.5f} | {s:.2f} | {mb:.0f} | {s / fastest:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
