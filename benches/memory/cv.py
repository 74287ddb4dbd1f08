"""Cross-validation on one binned table against five separate fits.

    python benches/memory/cv.py TRAIN_PARQUET [FOLDS] [OPTIONS...]

Times ``arbor.cv`` on an ``arbor.Dataset`` of the file (binned once, when the
dataset is made, included in its time) against ``FOLDS`` separate estimator
fits on the same training rows of each fold, each of which bins its rows
again, and prints both times and their ratio. OPTIONS are arbor's
``key=value`` options (default: ``algorithm=gradient-boosting n_rounds=20``).
Needs the arbor package (``maturin develop --release``) and pyarrow.
"""

import sys
import time

import numpy as np
import pyarrow.parquet as pq

import arbor

path = sys.argv[1]
folds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
pairs = sys.argv[3:] or ["algorithm=gradient-boosting", "n_rounds=20"]
params = dict(p.split("=", 1) for p in pairs)

start = time.perf_counter()
dataset = arbor.Dataset(path, label="label")
results = arbor.cv(params, dataset, folds=folds)
once = time.perf_counter() - start

table = pq.read_table(path)
rows = table.num_rows
estimator = arbor.GradientBoostingClassifier if params.get("algorithm") == "gradient-boosting" else arbor.RandomForestClassifier
keys = {k: int(v) if v.isdigit() else v for k, v in params.items() if k != "algorithm"}
rng = np.random.default_rng(0)
fold_of = rng.permutation(rows) % folds
start = time.perf_counter()
for k in range(folds):
    kept = table.filter(fold_of != k)
    estimator(**keys).fit(kept.drop_columns(["label"]), kept.column("label"))
separate = time.perf_counter() - start

print(f"{path}: {rows} rows, {folds} folds, {' '.join(pairs)}")
print(f"cv on one Dataset {once:.1f} s; {folds} separate fits {separate:.1f} s; ratio {once / separate:.2f}")
print("fold scores", " ".join(f"{r['score']:.4f}" for r in results))
