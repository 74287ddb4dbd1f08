"""Trains a peer library on a Parquet file the way its users load one, so that
benches/memory/run.sh can compare the process's peak memory with `arbor train`.

    python benches/memory/peers.py LIBRARY ALGORITHM TRAIN_PARQUET [LABEL]

LIBRARY: onedal (scikit-learn-intelex; daal4py for boosting), lightgbm or
xgboost. ALGORITHM: forest (20 trees) or boosting (20 rounds), 2 threads.
TRAIN_PARQUET may be a file or a directory of files; LABEL defaults to
"label". The table is read with pandas.read_parquet, the features converted
to a float32 NumPy matrix and the label to a NumPy array, and the DataFrame
deleted before the fit: what a user holds in memory when calling fit. An
integer label means classification, anything else regression. Prints one
line: library, algorithm, rows, seconds of the fit (or "n/a" when oneDAL
boosting is unavailable: sklearnex has no gradient boosting, only daal4py).
"""

import sys
import time

import numpy as np
import pandas as pd

library, algorithm, path = sys.argv[1:4]
label = sys.argv[4] if len(sys.argv) > 4 else "label"
if library not in ("onedal", "lightgbm", "xgboost") or algorithm not in ("forest", "boosting"):
    sys.exit(__doc__)
if library == "onedal" and algorithm == "boosting":
    try:
        import daal4py
    except ImportError:
        print(library, algorithm, "n/a")
        sys.exit(0)

frame = pd.read_parquet(path)
X = frame.drop(columns=[label]).to_numpy(dtype=np.float32)
y = frame[label].to_numpy()
del frame
classify = y.dtype.kind in "iub"
forest = algorithm == "forest"

if library == "onedal" and forest:
    from sklearnex.ensemble import RandomForestClassifier, RandomForestRegressor

    model = (RandomForestClassifier if classify else RandomForestRegressor)(n_estimators=20, n_jobs=2)
    fit = lambda: model.fit(X, y)
elif library == "onedal":
    # fptype="float" keeps oneDAL on the float32 matrix (the default, double, would copy it)
    daal4py.daalinit(2)
    options = dict(fptype="float", maxIterations=20, splitMethod="inexact")
    if classify:
        train = daal4py.gbt_classification_training(nClasses=int(y.max()) + 1, **options)
    else:
        train = daal4py.gbt_regression_training(**options)
    target = y.astype(np.float32).reshape(-1, 1)
    fit = lambda: train.compute(X, target)
elif library == "lightgbm":
    import lightgbm as lgb

    extra = dict(boosting_type="rf", subsample=0.632, subsample_freq=1) if forest else {}
    model = (lgb.LGBMClassifier if classify else lgb.LGBMRegressor)(n_estimators=20, n_jobs=2, verbose=-1, **extra)
    fit = lambda: model.fit(X, y)
else:
    import xgboost as xgb

    if forest:
        kind = xgb.XGBRFClassifier if classify else xgb.XGBRFRegressor
    else:
        kind = xgb.XGBClassifier if classify else xgb.XGBRegressor
    model = kind(n_estimators=20, n_jobs=2, tree_method="hist")
    fit = lambda: model.fit(X, y)

start = time.perf_counter()
fit()
print(library, algorithm, len(y), f"{time.perf_counter() - start:.1f}")
