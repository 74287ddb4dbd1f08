"""Objectives against the peers: arbor's boosting losses beside LightGBM's and
XGBoost's on the same Parquet train/test files, same rounds, depth, learning
rate, lambda and bins, 2 threads; prints each library's held-out metric, its
training seconds and arbor's ratio to each peer.

Run from the repository root (build arbor first with `cargo build --release`):

    .venv-peers/bin/python benches/peers/objectives.py [--loss poisson,...] [--json FILE]

| loss | data (data/README.md) | arbor | LightGBM | XGBoost | metric |
|---|---|---|---|---|---|
| poisson | counts_reg | loss=poisson | poisson | count:poisson | mean Poisson deviance |
| tweedie | claims_reg | loss=tweedie (1.5) | tweedie (1.5) | reg:tweedie (1.5) | mean Tweedie deviance (1.5) |
| gamma | severity_reg | loss=gamma | gamma | reg:gamma | mean Gamma deviance |
| quantile | flights_reg | loss=quantile alpha=0.9 | quantile 0.9 | reg:quantileerror 0.9 | pinball loss, coverage |
| absolute | flights_reg | loss=absolute | regression_l1 | reg:absoluteerror | mean absolute error |
| huber | flights_reg | loss=huber huber_delta=10 | huber alpha=10 | reg:pseudohubererror slope 10 | Huber loss (10) |
| monotone | diamonds_reg | monotone=carat:+1,table:-1 | monotone_constraints | monotone_constraints | RMSE |
| lambdarank | rank | --group query (loss=lambdarank) | LGBMRanker lambdarank | XGBRanker rank:ndcg | 1 - NDCG@10 |

The `monotone` case trains the squared loss under monotone constraints
(LightGBM's default `basic` method, XGBoost's default), which every library
enforces its own way.

Ranking is measured as 1 - NDCG@10 (gain 2^grade - 1, a query with nothing
relevant counts 1), so that lower is better there too; each library ranks
the rows of a query (`query` column) by its score.

XGBoost has no Huber loss: its pseudo-Huber is the nearest. arbor is timed as
a whole `arbor train` process (Parquet read included), the peers around
`fit` on data already in memory: the ratios are conservative for arbor.
Settings: 100 rounds, depth 6, learning rate 0.1, lambda 1, 256 bins, min 5
rows per leaf (LightGBM `min_child_samples=5`, `num_leaves=64`; XGBoost has no
row count per leaf: `min_child_weight=0.001`, LightGBM's hessian floor).
"""
import argparse
import json
import os
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
THREADS = 2
ROUNDS, DEPTH, RATE = 100, 6, 0.1
ALPHA, DELTA, POWER = 0.9, 10.0, 1.5
MONOTONE = {"carat": 1, "table": -1}

# loss -> data set, arbor options, LightGBM params, XGBoost params
CASES = {
    "poisson": ("counts_reg", ["loss=poisson"], {"objective": "poisson"}, {"objective": "count:poisson"}),
    "tweedie": ("claims_reg", ["loss=tweedie", f"tweedie_power={POWER}"],
                {"objective": "tweedie", "tweedie_variance_power": POWER},
                {"objective": "reg:tweedie", "tweedie_variance_power": POWER}),
    "gamma": ("severity_reg", ["loss=gamma"], {"objective": "gamma"}, {"objective": "reg:gamma"}),
    "quantile": ("flights_reg", ["loss=quantile", f"alpha={ALPHA}"], {"objective": "quantile", "alpha": ALPHA},
                 {"objective": "reg:quantileerror", "quantile_alpha": ALPHA}),
    "absolute": ("flights_reg", ["loss=absolute"], {"objective": "regression_l1"}, {"objective": "reg:absoluteerror"}),
    "monotone": ("diamonds_reg", [f"monotone={','.join(f'{k}:{v:+d}' for k, v in MONOTONE.items())}"],
                 {"monotone": MONOTONE}, {"monotone": MONOTONE}),
    "huber": ("flights_reg", ["loss=huber", f"huber_delta={DELTA}"], {"objective": "huber", "alpha": DELTA},
              {"objective": "reg:pseudohubererror", "huber_slope": DELTA}),
    "lambdarank": ("rank", ["loss=lambdarank"], {"objective": "lambdarank"}, {"objective": "rank:ndcg"}),
}
NDCG_AT = 10


def ndcg_per_query(y, score, query, k=NDCG_AT):
    """NDCG@k of each query, in query order: gain 2^y - 1, ties in score keep
    row order, a query with nothing relevant counts 1 (as LightGBM's and XGBoost's)."""
    out = []
    for q in np.unique(query):
        rows = np.flatnonzero(query == q)
        gains = np.exp2(y[rows]) - 1.0
        order = np.argsort(-score[rows], kind="stable")
        discount = 1.0 / np.log2(np.arange(2, min(k, len(rows)) + 2))
        ideal = np.sum(np.sort(gains)[::-1][: len(discount)] * discount)
        out.append(1.0 if ideal == 0 else np.sum(gains[order][: len(discount)] * discount) / ideal)
    return np.asarray(out)


def ndcg_loss(y, score, query, k=NDCG_AT):
    """1 - mean NDCG@k over the queries."""
    return 1.0 - float(np.mean(ndcg_per_query(y, score, query, k)))


def metric(loss, y, pred, query=None):
    """The held-out metric of `loss` (lower is better), and extras."""
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    if loss == "lambdarank":
        return {"ndcg_loss": ndcg_loss(y, pred, np.asarray(query))}
    if loss == "poisson":
        mu = np.maximum(pred, 1e-12)
        return {"poisson_deviance": float(np.mean(2 * (np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / mu), 0)
                                                       - y + mu)))}
    if loss == "gamma":
        mu = np.maximum(pred, 1e-12)
        return {"gamma_deviance": float(np.mean(2 * (np.log(mu / y) + y / mu - 1)))}
    if loss == "tweedie":
        mu, p = np.maximum(pred, 1e-12), POWER
        dev = 2 * (np.power(np.maximum(y, 0), 2 - p) / ((1 - p) * (2 - p)) - y * np.power(mu, 1 - p) / (1 - p)
                   + np.power(mu, 2 - p) / (2 - p))
        return {"tweedie_deviance": float(np.mean(dev))}
    d = y - pred
    if loss == "monotone":
        return {"rmse": float(np.sqrt(np.mean(d * d)))}
    if loss == "quantile":
        return {"pinball_loss": float(np.mean(np.where(d >= 0, ALPHA * d, (ALPHA - 1) * d))),
                "coverage": float(np.mean(y <= pred))}
    if loss == "absolute":
        return {"mae": float(np.mean(np.abs(d)))}
    a = np.abs(d)
    return {"huber_loss": float(np.mean(np.where(a <= DELTA, 0.5 * d * d, DELTA * (a - 0.5 * DELTA))))}


def run_arbor(binary, loss):
    name, options, _, _ = CASES[loss]
    train, test = ROOT / "data" / f"{name}_train.parquet", ROOT / "data" / f"{name}_test.parquet"
    env = dict(os.environ, RAYON_NUM_THREADS=str(THREADS))
    settings = [f"n_rounds={ROUNDS}", f"max_depth={DEPTH}", f"learning_rate={RATE}", "lambda=1",
                "min_samples_leaf=5", "max_bins=256", *options]
    with tempfile.TemporaryDirectory(prefix="arbor-objectives-") as tmp:
        model, out = Path(tmp) / "model.arbor", Path(tmp) / "pred.parquet"
        cmd = [binary, "train", "--input", train, "--label", "label", "--output", model,
               "--algorithm", "gradient-boosting"]
        if loss == "lambdarank":
            cmd += ["--group", "query"]
        for kv in settings:
            cmd += ["--set", kv]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        seconds = time.perf_counter() - t0
        subprocess.run([binary, "predict", "--model", model, "--input", test, "--output", out], env=env, check=True,
                       capture_output=True)
        scored = pq.read_table(out)
        query = scored.column("query").to_numpy() if loss == "lambdarank" else None
        return seconds, metric(loss, scored.column("label").to_numpy(), scored.column("prediction").to_numpy(),
                               query)


def run_peer(lib, loss):
    name, _, lgb_params, xgb_params = CASES[loss]
    train, test, cats = load(name)
    ytr, yte = train.pop("label").to_numpy(), test.pop("label").to_numpy()
    qtr = train.pop("query").to_numpy() if loss == "lambdarank" else None
    qte = test.pop("query").to_numpy() if loss == "lambdarank" else None
    # Constraints by feature name become one direction per column, in order.
    lgb_params, xgb_params = (
        {k: v for k, v in p.items() if k != "monotone"}
        | ({"monotone_constraints": [p["monotone"].get(c, 0) for c in train.columns]} if "monotone" in p else {})
        for p in (lgb_params, xgb_params)
    )
    if "monotone_constraints" in xgb_params:
        xgb_params["monotone_constraints"] = "(" + ",".join(map(str, xgb_params["monotone_constraints"])) + ")"
    ranking = {}
    if lib == "lightgbm":
        import lightgbm as lgb
        xtr, xte = encode(train, test, cats, as_category=True)
        estimator = lgb.LGBMRegressor
        if loss == "lambdarank":
            # Rows of a query are contiguous in the file: the sizes of its runs.
            estimator, ranking = lgb.LGBMRanker, {"group": np.unique(qtr, return_counts=True)[1]}
        model = estimator(n_estimators=ROUNDS, max_depth=DEPTH, num_leaves=2 ** DEPTH, learning_rate=RATE,
                                  reg_lambda=1.0, min_child_samples=5, max_bin=256, n_jobs=THREADS, verbose=-1,
                                  random_state=0, **lgb_params)
    else:
        import xgboost as xgb
        xtr, xte = encode(train, test, cats, as_category=False)
        estimator = xgb.XGBRegressor
        if loss == "lambdarank":
            estimator, ranking = xgb.XGBRanker, {"qid": qtr}
        model = estimator(n_estimators=ROUNDS, max_depth=DEPTH, learning_rate=RATE, reg_lambda=1.0,
                                 min_child_weight=1e-3, max_bin=256, tree_method="hist", n_jobs=THREADS,
                                 random_state=0, **xgb_params)
    t0 = time.perf_counter()
    model.fit(xtr, ytr, **ranking)
    seconds = time.perf_counter() - t0
    return seconds, metric(loss, yte, model.predict(xte), qte)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loss", default=",".join(CASES))
    ap.add_argument("--arbor", default=str(ROOT / "target" / "release" / "arbor"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    for loss in args.loss.split(","):
        results = {"arbor": run_arbor(args.arbor, loss)}
        for lib in ("lightgbm", "xgboost"):
            results[lib] = run_peer(lib, loss)
        key = next(iter(results["arbor"][1]))
        best_peer = min(results["lightgbm"][1][key], results["xgboost"][1][key])
        fastest = min(results["lightgbm"][0], results["xgboost"][0])
        for lib, (seconds, scores) in results.items():
            row = {"loss": loss, "data": CASES[loss][0], "library": lib, "train_s": round(seconds, 3),
                   **{k: round(v, 5) for k, v in scores.items()}}
            if lib == "arbor":
                row["vs_best_peer_metric"] = round(scores[key] / best_peer, 4)
                row["vs_fastest_peer_time"] = round(seconds / fastest, 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
