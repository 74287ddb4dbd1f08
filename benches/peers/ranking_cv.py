"""Ranking against the peers by five-fold cross-validation over queries: the
bundled LETOR sample's 251 queries (data/rank_train.parquet and
data/rank_test.parquet together) dealt into five folds, each library trained
on four and scored on the fifth with NDCG@10, with the settings of
objectives.py (100 rounds, depth 6, learning rate 0.1, lambda 1, 5 rows per
leaf). The held-out test file alone has 50 queries, whose mean NDCG@10 has a
standard error near 0.03: this comparison scores every query once and pairs
the libraries query by query, so the difference has an error bar.

Run from the repository root (build arbor first with `cargo build --release`):

    .venv-peers/bin/python benches/peers/ranking_cv.py [--arbor target/release/arbor] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from objectives import DEPTH, NDCG_AT, RATE, ROUNDS, THREADS, ndcg_per_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FOLDS, SEED = 5, 0


def table():
    """Both files as one table, test queries numbered after train's."""
    train, test = (pq.read_table(ROOT / "data" / f"rank_{f}.parquet") for f in ("train", "test"))
    offset = pc.max(train["query"]).as_py() + 1
    shifted = pc.cast(pc.add(test["query"], offset), pa.int32())
    test = test.set_column(test.schema.get_field_index("query"), "query", shifted)
    return pa.concat_tables([train, test])


def arbor(binary, train, test, tmp, extra=()):
    train_file, test_file = Path(tmp) / "train.parquet", Path(tmp) / "test.parquet"
    model, out = Path(tmp) / "model.arbor", Path(tmp) / "scored.parquet"
    pq.write_table(train, train_file)
    pq.write_table(test, test_file)
    settings = [f"n_rounds={ROUNDS}", f"max_depth={DEPTH}", f"learning_rate={RATE}", "lambda=1", "min_samples_leaf=5",
                *extra]
    cmd = [binary, "train", "--input", train_file, "--label", "label", "--group", "query", "--output", model]
    for kv in settings:
        cmd += ["--set", kv]
    env = dict(os.environ, RAYON_NUM_THREADS=str(THREADS))
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    subprocess.run([binary, "predict", "--model", model, "--input", test_file, "--output", out], env=env, check=True,
                   capture_output=True)
    return pq.read_table(out)["prediction"].to_numpy()


def peer(lib, train, test, min_data_in_bin=3):
    xtr = train.drop(["label", "query"]).to_pandas()
    xte = test.drop(["label", "query"]).to_pandas()
    ytr, qtr = train["label"].to_numpy(), train["query"].to_numpy()
    if lib == "lightgbm":
        import lightgbm as lgb
        model = lgb.LGBMRanker(n_estimators=ROUNDS, max_depth=DEPTH, num_leaves=2 ** DEPTH, learning_rate=RATE,
                               reg_lambda=1.0, min_child_samples=5, max_bin=256, n_jobs=THREADS, verbose=-1,
                               min_data_in_bin=min_data_in_bin)
        model.fit(xtr, ytr, group=np.unique(qtr, return_counts=True)[1])
    else:
        import xgboost as xgb
        model = xgb.XGBRanker(n_estimators=ROUNDS, max_depth=DEPTH, learning_rate=RATE, reg_lambda=1.0,
                              min_child_weight=1e-3, max_bin=256, tree_method="hist", n_jobs=THREADS, random_state=0)
        model.fit(xtr, ytr, qid=qtr)
    return model.predict(xte)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arbor", default=str(ROOT / "target" / "release" / "arbor"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    data = table()
    queries = np.unique(data["query"].to_numpy())
    fold_of = dict(zip(np.random.default_rng(SEED).permutation(queries), np.arange(len(queries)) % FOLDS))
    fold = np.array([fold_of[q] for q in data["query"].to_numpy()])
    # Each library's default bins, then every distinct value its own bin
    # (XGBoost's hist does that by default when a feature has at most 256 values).
    runs = {
        "arbor": lambda train, test, tmp: arbor(args.arbor, train, test, tmp),
        "arbor_min_bin_size_1": lambda train, test, tmp: arbor(args.arbor, train, test, tmp, ["min_bin_size=1"]),
        "lightgbm": lambda train, test, tmp: peer("lightgbm", train, test),
        "lightgbm_min_data_in_bin_1": lambda train, test, tmp: peer("lightgbm", train, test, min_data_in_bin=1),
        "xgboost": lambda train, test, tmp: peer("xgboost", train, test),
    }
    scores = {lib: [] for lib in runs}
    for f in range(FOLDS):
        # Rows stay in file order within each side, so each query's rows are contiguous for LightGBM.
        train, test = data.filter(pa.array(fold != f)), data.filter(pa.array(fold == f))
        y, q = test["label"].to_numpy().astype(float), test["query"].to_numpy()
        with tempfile.TemporaryDirectory(prefix="arbor-rank-cv-") as tmp:
            for lib, run in runs.items():
                scores[lib].append(ndcg_per_query(y, run(train, test, tmp), q))
    per_query = {lib: np.concatenate(s) for lib, s in scores.items()}
    result = {"queries": len(queries), "folds": FOLDS, "ndcg_at": NDCG_AT}
    for lib, s in per_query.items():
        result[lib] = round(float(s.mean()), 4)
    # Paired differences, query by query, with their standard errors.
    for mine, theirs in [("arbor", "lightgbm"), ("arbor", "xgboost"), ("arbor_min_bin_size_1", "lightgbm_min_data_in_bin_1"),
                         ("arbor_min_bin_size_1", "xgboost")]:
        d = per_query[mine] - per_query[theirs]
        result[f"{mine}_minus_{theirs}"] = f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f}"
    print(json.dumps(result, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
