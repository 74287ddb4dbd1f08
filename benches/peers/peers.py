"""Peer comparison: arbor vs scikit-learn, scikit-learn-intelex (oneDAL), LightGBM, XGBoost.

Every library trains and predicts on the same Parquet train/test files in data/,
with the reference settings of data/README.md and 2 threads, and the script
prints train and predict wall-clock seconds, the test metric (accuracy and AUC
for classification, RMSE for regression) and arbor's time divided by each peer's.

Run from the repository root (build arbor first with `cargo build --release`):

    python3 -m venv .venv-peers && .venv-peers/bin/pip install -r benches/peers/requirements.txt && .venv-peers/bin/python benches/peers/peers.py --dataset flights_cls

Options: --dataset flights_cls|flights_reg|diamonds_reg|digits_cls|cancer_cls|synth_cls_<N>k|synth_reg_<N>k|all
(the synthetic sets are written to target/synth/ by make_synth.py on first use; `all` takes
synth_cls_250k and synth_reg_250k),
--algorithm random-forest|gradient-boosting|both, --peers sklearn,sklearnex,lightgbm,xgboost,
--repeat N (median of N runs), --json FILE, --arbor PATH (default target/release/arbor; '' skips
the whole-process runs), --python-package auto|yes|no.

arbor is timed twice. As two whole processes (`arbor train`, `arbor predict`:
Parquet read and write included), against peers timed in-process around fit()
and predict_proba()/predict() on data already in memory: those ratios are
conservative for arbor. `arbor predict` also reports the time it spent scoring
(its batches in memory to predictions, the model already loaded): the
"in-process" columns hold that figure and its ratio. And in process through
the Python package (library "arbor-py", `--python-package`, on by default when
`import arbor` works): its estimators' fit() and predict_proba()/predict() on
the same data in memory (pyarrow tables), like for like with the peers; the
"arbor-py/peer" columns hold those ratios.
"""
import re
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
# arbor's Python package trains on rayon's pool: the same two threads as everyone.
os.environ.setdefault("RAYON_NUM_THREADS", "2")
DATASETS = ["flights_cls", "flights_reg", "diamonds_reg", "digits_cls", "cancer_cls", "synth_cls_250k", "synth_reg_250k"]
SYNTH = re.compile(r"synth_(cls|reg)_([0-9]+)k")
THREADS = 2
RF, GB = "random-forest", "gradient-boosting"
PEERS_FOR = {RF: ["sklearn", "sklearnex"], GB: ["lightgbm", "xgboost"]}
SEED = 0


# ---------------------------------------------------------------- data and metrics
def files(name):
    """The train and test Parquet files of a set: data/ for the public ones; the synthetic
    ones are written to target/synth/ by make_synth.py (the same rows as data/README.md's)."""
    found = SYNTH.fullmatch(name)
    if not found:
        return ROOT / "data" / f"{name}_train.parquet", ROOT / "data" / f"{name}_test.parquet"
    out = ROOT / "target" / "synth"
    train, test = out / f"{name}_train.parquet", out / f"{name}_test.parquet"
    if not (train.is_file() and test.is_file()):
        out.mkdir(parents=True, exist_ok=True)
        rows = int(found.group(2)) * 1000
        print(f"writing synth_cls_{rows // 1000}k and synth_reg_{rows // 1000}k to {out}", flush=True)
        subprocess.run([sys.executable, str(Path(__file__).with_name("make_synth.py")), str(out), str(rows)],
                       check=True)
    return train, test


def dataset(name):
    """`name` if it is a set this script knows, for argparse."""
    if name in DATASETS or name == "all" or SYNTH.fullmatch(name):
        return name
    raise argparse.ArgumentTypeError(f"unknown data set {name!r}: one of {', '.join(DATASETS)}, synth_cls_<N>k, "
                                     "synth_reg_<N>k or all")


def load(name):
    """Train and test as pandas frames, plus the names of the string (categorical) columns."""
    train_file, test_file = files(name)
    train, test = pq.read_table(train_file), pq.read_table(test_file)
    cats = [f.name for f in train.schema if f.name != "label" and
            (pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_dictionary(f.type))]
    return train.to_pandas(), test.to_pandas(), cats


def encode(train_x, test_x, cats, as_category):
    """Categorical columns: pandas category dtype (LightGBM) or ordinal codes fitted on train, unseen -> -1."""
    import pandas as pd
    train_x, test_x = train_x.copy(), test_x.copy()
    for c in cats:
        levels = pd.Index(sorted(train_x[c].dropna().unique()))
        for df in (train_x, test_x):
            codes = pd.Categorical(df[c], categories=levels)
            df[c] = codes if as_category else codes.codes.astype(np.float32)  # -1 = missing or unseen
    if as_category:
        return train_x, test_x
    return train_x.to_numpy(np.float32), test_x.to_numpy(np.float32)


def auc(y, proba, classes):
    """Binary AUC (Mann-Whitney, ties averaged) of the last class; macro one-vs-rest for more classes."""
    def binary(pos, score):
        order = np.argsort(score, kind="mergesort")
        ranks = np.empty(len(score))
        _, first, counts = np.unique(score[order], return_index=True, return_counts=True)
        ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
        n_pos = pos.sum()
        n_neg = len(pos) - n_pos
        return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    if len(classes) == 2:
        return binary(y == classes[1], proba[:, 1])
    return float(np.mean([binary(y == c, proba[:, i]) for i, c in enumerate(classes)]))


def metrics(task, y, pred=None, proba=None, classes=None):
    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((np.asarray(pred, float) - y) ** 2)))}
    if pred is None:
        pred = np.asarray(classes)[np.argmax(proba, axis=1)]
    return {"accuracy": float(np.mean(np.asarray(pred) == y)), "auc": float(auc(y, proba, classes))}


# ---------------------------------------------------------------- peers
def make_model(lib, algo, task, p):
    """A fresh estimator with the reference settings of data/README.md."""
    cls = task == "classification"
    if algo == RF:
        rf = dict(n_estimators=100, max_features="sqrt" if cls else max(1, p // 3),
                  min_samples_leaf=1 if cls else 5, n_jobs=THREADS, random_state=SEED)
        if lib == "sklearn":
            from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
        else:
            from sklearnex.ensemble import RandomForestClassifier, RandomForestRegressor
        return (RandomForestClassifier if cls else RandomForestRegressor)(**rf)
    if lib == "lightgbm":
        import lightgbm as lgb
        # num_leaves = 2^6 lets leaf-wise growth fill a depth-6 tree.
        gb = dict(n_estimators=50, max_depth=6, num_leaves=2 ** 6, learning_rate=0.3, reg_lambda=1.0,
                  min_child_samples=5, max_bin=256, n_jobs=THREADS, random_state=SEED, verbose=-1)
        return (lgb.LGBMClassifier if cls else lgb.LGBMRegressor)(**gb)
    import xgboost as xgb
    # XGBoost has no row-count minimum per leaf: min_child_weight is a hessian sum, equal to a
    # row count for squared loss only; for logistic/softmax loss keep its default of 1.
    gb = dict(n_estimators=50, max_depth=6, learning_rate=0.3, reg_lambda=1.0, tree_method="hist",
              min_child_weight=1 if cls else 5, max_bin=256, n_jobs=THREADS, random_state=SEED)
    return (xgb.XGBClassifier if cls else xgb.XGBRegressor)(**gb)


def run_peer(lib, algo, data, repeat):
    train, test, cats, task = data
    cls = task == "classification"
    feats = [c for c in train.columns if c != "label"]
    xtr, xte = encode(train[feats], test[feats], cats, as_category=(lib == "lightgbm"))
    ytr, yte = train["label"].to_numpy(), test["label"].to_numpy()
    classes = np.unique(ytr) if cls else None
    fit_y = np.searchsorted(classes, ytr) if cls else ytr  # XGBoost wants classes 0..K-1
    fit_s, pred_s, out, _ = fit_and_predict(lambda: make_model(lib, algo, task, len(feats)), xtr, fit_y, xte, cls,
                                            repeat)
    m = metrics(task, yte, proba=out, classes=classes) if cls else metrics(task, yte, pred=out)
    return fit_s, pred_s, m


def fit_and_predict(make, xtr, ytr, xte, cls, repeat):
    """Median seconds of fit() and of predict_proba() (predict() for regression) over
    `repeat` fresh models, the last model's output, and that model."""
    fits, preds = [], []
    for _ in range(repeat):
        model = make()
        t0 = time.perf_counter()
        model.fit(xtr, ytr)
        t1 = time.perf_counter()
        out = model.predict_proba(xte) if cls else model.predict(xte)
        t2 = time.perf_counter()
        fits.append(t1 - t0)
        preds.append(t2 - t1)
    return statistics.median(fits), statistics.median(preds), out, model


# ---------------------------------------------------------------- arbor
def arbor_settings(algo, task):
    if algo == RF:
        return ["n_trees=100", "max_features=" + ("sqrt" if task == "classification" else "third"),
                "min_samples_leaf=" + ("1" if task == "classification" else "5"), "max_bins=256"]
    return ["n_rounds=50", "max_depth=6", "learning_rate=0.3", "lambda=1", "min_samples_leaf=5", "max_bins=256"]


def timed(cmd, env):
    """Whole-process seconds of `cmd`, and its report (stderr)."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(map(str, cmd))}` exited {r.returncode}: {r.stderr.strip()[-600:]}")
    return elapsed, r.stderr


def scoring_seconds(report):
    """The scoring time `arbor predict` reports ("... scoring them took 0.093 s")."""
    found = re.search(r"scoring them took ([0-9.]+) s", report)
    if not found:
        raise RuntimeError(f"`arbor predict` reported no scoring time: {report.strip()[-300:]}")
    return float(found.group(1))


def run_arbor(binary, name, algo, task, repeat):
    if not Path(binary).is_file():
        raise RuntimeError(f"arbor binary not found at {binary} (cargo build --release, or pass --arbor PATH)")
    env = dict(os.environ, RAYON_NUM_THREADS=str(THREADS))
    train, test = files(name)
    fits, preds, scorings = [], [], []
    with tempfile.TemporaryDirectory(prefix="arbor-peers-") as tmp:
        model, out = Path(tmp) / "model.arbor", Path(tmp) / "pred.parquet"
        cmd = [binary, "train", "--input", train, "--label", "label", "--output", model]
        if algo == GB:
            cmd += ["--algorithm", GB]
        for kv in arbor_settings(algo, task):
            cmd += ["--set", kv]
        predict = [binary, "predict", "--model", model, "--input", test, "--output", out]
        if task == "classification":
            predict.append("--proba")
        for _ in range(repeat):
            fits.append(timed(cmd, env)[0])
            elapsed, report = timed(predict, env)
            preds.append(elapsed)
            scorings.append(scoring_seconds(report))
        scored = pq.read_table(out)
    y = scored.column("label").to_numpy()
    times = statistics.median(fits), statistics.median(preds), statistics.median(scorings)
    if task == "regression":
        return *times, metrics(task, y, pred=scored.column("prediction").to_numpy())
    classes = np.unique(pq.read_table(train, columns=["label"]).column("label").to_numpy())
    proba = np.column_stack([scored.column(f"proba_{c}").to_numpy() for c in classes])
    pred = scored.column("prediction").to_numpy()
    return *times, metrics(task, y, pred=pred, proba=proba, classes=classes)


def run_arbor_python(name, algo, task, repeat):
    """arbor in process through its Python package, on pyarrow tables in memory."""
    import arbor

    cls = task == "classification"
    train_file, test_file = files(name)
    train, test = pq.read_table(train_file), pq.read_table(test_file)
    xtr, ytr = train.drop_columns(["label"]), train.column("label")
    xte, yte = test.drop_columns(["label"]), test.column("label").to_numpy()
    options = dict(kv.split("=") for kv in arbor_settings(algo, task))
    if algo == RF:
        make = arbor.RandomForestClassifier if cls else arbor.RandomForestRegressor
        settings = dict(n_trees=int(options["n_trees"]), max_features=options["max_features"],
                        min_samples_leaf=int(options["min_samples_leaf"]), max_bins=int(options["max_bins"]))
    else:
        make = arbor.GradientBoostingClassifier if cls else arbor.GradientBoostingRegressor
        settings = dict(n_rounds=int(options["n_rounds"]), max_depth=int(options["max_depth"]),
                        learning_rate=float(options["learning_rate"]), lambda_=float(options["lambda"]),
                        min_samples_leaf=int(options["min_samples_leaf"]), max_bins=int(options["max_bins"]))
    fit_s, pred_s, out, model = fit_and_predict(lambda: make(**settings), xtr, ytr, xte, cls, repeat)
    m = metrics(task, yte, proba=out, classes=model.classes_) if cls else metrics(task, yte, pred=out)
    return fit_s, pred_s, m


# ---------------------------------------------------------------- driver
def available(libs):
    ok = []
    for lib in libs:
        try:
            __import__({"sklearn": "sklearn.ensemble", "sklearnex": "sklearnex.ensemble"}.get(lib, lib))
            ok.append(lib)
        except Exception as e:  # noqa: BLE001 - any import failure means: skip this peer
            print(f"note: skipping {lib}: cannot import it ({type(e).__name__}: {e})")
    return ok


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(rows):
    head = ["dataset", "model", "library", "train s", "predict s", "in-process predict s", "accuracy", "AUC", "RMSE",
            "arbor/peer train", "arbor/peer predict", "in-process arbor/peer predict",
            "arbor-py/peer train", "arbor-py/peer predict"]
    lines = [head]
    for r in rows:
        m = r.get("metrics", {})
        failed = "failed" if "error" in r else None
        lines.append([r["dataset"], r["algorithm"], r["library"], failed or fmt(r.get("train_s"), ".3f"),
                      failed or fmt(r.get("predict_s"), ".3f"),
                      failed or fmt(r.get("scoring_s", r.get("predict_s")), ".3f"),
                      fmt(m.get("accuracy"), ".4f"), fmt(m.get("auc"), ".4f"), fmt(m.get("rmse"), ".4f"),
                      fmt(r.get("train_ratio"), ".2f"), fmt(r.get("predict_ratio"), ".2f"),
                      fmt(r.get("scoring_ratio"), ".2f"), fmt(r.get("py_train_ratio"), ".2f"),
                      fmt(r.get("py_predict_ratio"), ".2f")])
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(head))]
    for i, l in enumerate(lines):
        print("  ".join(str(c).ljust(w) if j < 3 else str(c).rjust(w) for j, (c, w) in enumerate(zip(l, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="flights_cls", type=dataset)
    ap.add_argument("--algorithm", default="both", choices=[RF, GB, "both"])
    ap.add_argument("--peers", default="sklearn,sklearnex,lightgbm,xgboost")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--arbor", default=str(ROOT / "target" / "release" / "arbor"),
                    help="the arbor binary timed as whole processes ('' to time only the Python package)")
    ap.add_argument("--python-package", default="auto", choices=["auto", "yes", "no"],
                    help="also time arbor in process through `import arbor` (auto: when it imports)")
    args = ap.parse_args()
    use_python = args.python_package == "yes" or (args.python_package == "auto" and available(["arbor"]))
    peers = available([p.strip() for p in args.peers.split(",") if p.strip()])
    rows = []
    for name in DATASETS if args.dataset == "all" else [args.dataset]:
        train, test, cats = load(name)
        task = "regression" if np.issubdtype(train["label"].dtype, np.floating) else "classification"
        for algo in [RF, GB] if args.algorithm == "both" else [args.algorithm]:
            print(f"== {name} ({task}, {len(train)} / {len(test)} rows), {algo}", flush=True)
            arbor = {}
            if args.arbor:
                try:
                    fit_s, pred_s, score_s, m = run_arbor(args.arbor, name, algo, task, args.repeat)
                    arbor = dict(dataset=name, algorithm=algo, library="arbor", train_s=fit_s, predict_s=pred_s,
                                 scoring_s=score_s, metrics=m)
                except Exception as e:  # noqa: BLE001 - report and go on with the peers
                    print(f"   arbor failed: {e}")
                    arbor = dict(dataset=name, algorithm=algo, library="arbor", error=str(e))
                rows.append(arbor)
            in_process = None
            if use_python:
                try:
                    fit_s, pred_s, m = run_arbor_python(name, algo, task, args.repeat)
                    in_process = dict(dataset=name, algorithm=algo, library="arbor-py", train_s=fit_s,
                                      predict_s=pred_s, metrics=m)
                    print(f"   arbor-py: train {fit_s:.3f} s, predict {pred_s:.3f} s, {m}", flush=True)
                except Exception as e:  # noqa: BLE001 - report and go on with the peers
                    print(f"   arbor-py failed: {type(e).__name__}: {e}")
                    in_process = dict(dataset=name, algorithm=algo, library="arbor-py", error=str(e))
                rows.append(in_process)
            for lib in [p for p in peers if p in PEERS_FOR[algo]]:
                try:
                    fit_s, pred_s, m = run_peer(lib, algo, (train, test, cats, task), args.repeat)
                except Exception as e:  # noqa: BLE001
                    print(f"   {lib} failed: {type(e).__name__}: {e}")
                    rows.append(dict(dataset=name, algorithm=algo, library=lib, error=str(e)))
                    continue
                row = dict(dataset=name, algorithm=algo, library=lib, train_s=fit_s, predict_s=pred_s, metrics=m)
                if "train_s" in arbor:
                    row["train_ratio"] = arbor["train_s"] / fit_s
                    row["predict_ratio"] = arbor["predict_s"] / pred_s
                    row["scoring_ratio"] = arbor["scoring_s"] / pred_s
                if in_process and "train_s" in in_process:
                    row["py_train_ratio"] = in_process["train_s"] / fit_s
                    row["py_predict_ratio"] = in_process["predict_s"] / pred_s
                rows.append(row)
                print(f"   {lib}: train {fit_s:.3f} s, predict {pred_s:.3f} s, {m}", flush=True)
    print()
    print_table(rows)
    if any("error" in r for r in rows):
        print("\n'failed': see the error printed above the table.")
    print(f"\n{THREADS} threads everywhere; times are the median of {args.repeat} run(s).")
    print("arbor's times are whole processes (`arbor train` / `arbor predict`, Parquet read and write included);")
    print("peers' are in-process fit() / predict_proba() (predict() for regression) on data already in memory,")
    print("so the ratios (arbor time / peer time; below 1 = arbor faster) are conservative for arbor.")
    print("'in-process predict s' is, for arbor, the scoring time `arbor predict` reports (batches in memory to")
    print("predictions, model loaded), and for the peers their predict time again: that ratio is like for like.")
    print("'arbor-py' is arbor in process through its Python package (fit / predict_proba on pyarrow tables in")
    print("memory); the 'arbor-py/peer' ratios are like for like with the peers, training included.")
    if args.json:
        args.json.write_text(json.dumps({"threads": THREADS, "repeat": args.repeat, "python": sys.version.split()[0],
                                         "rows": rows}, indent=2))
        print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
