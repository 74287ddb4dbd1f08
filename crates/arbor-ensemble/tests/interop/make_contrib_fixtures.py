"""Writes the SHAP-contribution fixtures: for each XGBoost and LightGBM model
written by make_fixtures.py, the original library's own TreeSHAP
contributions and raw margins on the rows that model is scored on.

Run from the repository root with the peer libraries of
benches/peers/requirements.txt installed, after make_fixtures.py:

    python crates/arbor-ensemble/tests/interop/make_contrib_fixtures.py

This script only READS the existing fixtures (the model files and
<case>_rows.parquet); it never rewrites them. It writes, next to the models,
one file per model, `<model stem>_contribs.parquet` (zstd), with one row per
row of the rows file, in the same order, and two columns:

    contribs  list<float64>  the contributions, class-major: for each class k
                             (a single class for regression and binary), the
                             n_features contributions in the model's feature
                             order, then that class's bias (expected value).
                             Length (n_features + 1) * n_class.
    raw       list<float64>  the library's raw margin(s): output_margin=True
                             (XGBoost) or raw_score=True (LightGBM); one per
                             class. Length n_class.

The contributions of each class sum to its raw margin (asserted: within 1e-4
for XGBoost, which computes in float32, and 1e-6 for LightGBM). XGBoost's bias
includes the base_score intercept (in margin space, e.g. logit(base_score) for
binary:logistic; a per-class vector for multiclass). The plain prediction on
the inputs built here is also asserted to equal the expected column already in
the rows file, so the contributions are known to be scored on the right rows.

Generated with xgboost 3.2.0 and lightgbm 4.7.0 (printed when run); the
contributions are deterministic for a given library version.
"""

import json
import pathlib

import lightgbm as lgb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import xgboost as xgb

HERE = pathlib.Path(__file__).resolve().parent
XGB_SUM_TOLERANCE = 1e-4
LGB_SUM_TOLERANCE = 1e-6
PREDICT_TOLERANCE = 1e-9

# model file -> (rows file case, expected column(s) in that rows file)
XGB_MODELS = {
    "xgb_reg.json": ("diamonds", "xgb_reg"),
    "xgb_binary.json": ("flights", "xgb_binary"),
    "xgb_softprob.json": ("digits", [f"xgb_softprob_{k}" for k in range(10)]),
    "xgb_softmax.json": ("digits", "xgb_softmax"),
}
LGB_MODELS = {
    "lgb_reg.txt": ("diamonds", "lgb_reg"),
    "lgb_reg_zero.txt": ("diamonds", "lgb_reg_zero"),
    "lgb_binary.txt": ("flights", "lgb_binary"),
    "lgb_multiclass.txt": ("digits", [f"lgb_multiclass_{k}" for k in range(10)]),
    "lgb_pandas.txt": ("flights", "lgb_pandas"),
}


def rows(case):
    return pq.read_table(HERE / f"{case}_rows.parquet").to_pandas()


def expected(frame, columns):
    """The expected prediction(s): one column, or one column per class."""
    return frame[columns].to_numpy(np.float64)


def list_column(matrix):
    """A list<float64> column with one list per row of a 2-D array."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float64)
    n, width = matrix.shape
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * width, pa.int32())
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1), pa.float64()))


def write(stem, contribs, raw):
    table = pa.table({"contribs": list_column(contribs), "raw": list_column(raw)})
    path = HERE / f"{stem}_contribs.parquet"
    pq.write_table(table, path, compression="zstd")
    return path


def check_sums(contribs, raw, n_class, tolerance, name):
    """Each class block of `contribs` sums to that class's raw margin; returns the worst gap."""
    n = contribs.shape[0]
    sums = contribs.reshape(n, n_class, -1).sum(axis=2)
    gap = float(np.abs(sums - raw).max())
    assert gap <= tolerance, f"{name}: contributions miss the raw margin by {gap}"
    return gap


def check_prediction(prediction, want, name):
    prediction = np.asarray(prediction, dtype=np.float64).reshape(want.shape)
    gap = float(np.abs(prediction - want).max())
    assert gap <= PREDICT_TOLERANCE, f"{name}: prediction differs from the rows file by {gap}"
    return gap


def xgb_case(file, case, columns):
    booster = xgb.Booster(model_file=HERE / file)
    booster.set_param({"nthread": 1})
    features = booster.feature_names
    frame = rows(case)
    x = frame[features].to_numpy(np.float64)
    data = xgb.DMatrix(x, feature_names=features, nthread=1)
    n = x.shape[0]

    predict_gap = check_prediction(booster.predict(data), expected(frame, columns), file)
    raw = np.asarray(booster.predict(data, output_margin=True), dtype=np.float64).reshape(n, -1)
    contribs = np.asarray(booster.predict(data, pred_contribs=True), dtype=np.float64)
    # (n, F + 1) for one output, (n, n_class, F + 1) for multiclass: flatten class-major
    n_class = raw.shape[1]
    assert contribs.shape == ((n, len(features) + 1) if n_class == 1 else (n, n_class, len(features) + 1))
    contribs = contribs.reshape(n, -1)
    sum_gap = check_sums(contribs, raw, n_class, XGB_SUM_TOLERANCE, file)
    return booster, features, contribs, raw, n_class, sum_gap, predict_gap


def xgb_expected_values(booster, n_class):
    """Base margin plus each class's cover-weighted mean tree output: what XGBoost's bias term should be."""
    model = json.loads(booster.save_raw("json"))
    learner = model["learner"]
    base = np.array(json.loads(learner["learner_model_param"]["base_score"]), dtype=np.float64)
    objective = learner["objective"]["name"]
    if objective == "binary:logistic":
        base = np.log(base / (1 - base))
    values = np.broadcast_to(base, (n_class,)).copy()
    gbtree = learner["gradient_booster"]["model"]
    for tree, group in zip(gbtree["trees"], gbtree["tree_info"], strict=True):
        left = np.array(tree["left_children"])
        leaves = left == -1
        cover = np.array(tree["sum_hessian"], dtype=np.float64)
        leaf_value = np.array(tree["split_conditions"], dtype=np.float64)
        values[group] += float((leaf_value[leaves] * cover[leaves]).sum() / cover[0])
    return values


def lgb_frame(booster, frame):
    """The flights rows as the pandas frame lgb_pandas.txt was trained on.

    LightGBM pairs the frame's category columns, in column order, with the
    booster's pandas_categorical lists and re-codes each with
    cat.set_categories(list), so the codes follow the training category order
    (reversed-sorted, not sorted). Strings outside the list, and nulls, become
    NaN (missing).
    """
    features = booster.feature_name()
    df = pd.DataFrame({f: frame[f].to_numpy(np.float64) for f in features if frame[f].dtype.kind == "f"})
    categorical = [f for f in features if f not in df.columns]
    assert len(categorical) == len(booster.pandas_categorical)
    for column, levels in zip(categorical, booster.pandas_categorical, strict=True):
        values = frame[column].astype(object).where(frame[column].notna(), None)
        df[column] = pd.Categorical(values, categories=levels)
    return df[features]


def lgb_case(file, case, columns):
    booster = lgb.Booster(model_file=HERE / file)
    features = booster.feature_name()
    frame = rows(case)
    if booster.pandas_categorical:
        x = lgb_frame(booster, frame)
    else:
        x = frame[features].to_numpy(np.float64)
    n = len(frame)
    params = {"num_threads": 1}

    predict_gap = check_prediction(booster.predict(x, **params), expected(frame, columns), file)
    raw = np.asarray(booster.predict(x, raw_score=True, **params), dtype=np.float64).reshape(n, -1)
    n_class = raw.shape[1]
    contribs = np.asarray(booster.predict(x, pred_contrib=True, **params), dtype=np.float64)
    # already (n, (F + 1) * n_class) in class blocks
    assert contribs.shape == (n, (len(features) + 1) * n_class)
    sum_gap = check_sums(contribs, raw, n_class, LGB_SUM_TOLERANCE, file)
    return booster, features, contribs, raw, n_class, sum_gap, predict_gap


def main():
    print(f"xgboost {xgb.__version__}, lightgbm {lgb.__version__}, pyarrow {pa.__version__}, "
          f"pandas {pd.__version__}, numpy {np.__version__}")
    summary = []
    for file, (case, columns) in XGB_MODELS.items():
        booster, features, contribs, raw, n_class, sum_gap, predict_gap = xgb_case(file, case, columns)
        bias = contribs.reshape(len(contribs), n_class, -1)[:, :, -1]
        assert np.all(bias == bias[0]), f"{file}: bias varies by row"
        bias_gap = float(np.abs(bias[0] - xgb_expected_values(booster, n_class)).max())
        assert bias_gap <= 1e-4, f"{file}: bias is not base margin + expected tree output ({bias_gap})"
        path = write(pathlib.Path(file).stem, contribs, raw)
        summary.append((path, len(features), n_class, sum_gap, predict_gap))
    for file, (case, columns) in LGB_MODELS.items():
        booster, features, contribs, raw, n_class, sum_gap, predict_gap = lgb_case(file, case, columns)
        path = write(pathlib.Path(file).stem, contribs, raw)
        summary.append((path, len(features), n_class, sum_gap, predict_gap))

    for path, n_features, n_class, sum_gap, predict_gap in summary:
        print(f"{path.name:32} features {n_features:3} classes {n_class:2} "
              f"max|sum-raw| {sum_gap:.3e} max|predict-expected| {predict_gap:.3e} {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
