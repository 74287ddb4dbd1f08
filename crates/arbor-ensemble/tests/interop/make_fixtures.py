"""Writes the import-equality fixtures: small XGBoost and LightGBM models and
the rows they are scored on, with the original library's predictions.

Run from the repository root with the peer libraries of
benches/peers/requirements.txt installed:

    python crates/arbor-ensemble/tests/interop/make_fixtures.py

The Rust tests (tests/import.rs) read only the files written here; they need
no Python. Every file is deterministic for a given library version.
"""

import json
import pathlib

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xgboost as xgb

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parents[3] / "data"
TRAIN_ROWS = 4000
TEST_ROWS = 300
MISSING_SHARE = 0.15


def load(name, columns):
    table = pq.read_table(DATA / name, columns=columns + ["label"])
    frame = table.to_pandas()
    return frame


def with_missing(x, rng):
    """A copy of `x` with a share of its cells set to NaN."""
    x = x.copy()
    x[rng.random(x.shape) < MISSING_SHARE] = np.nan
    return x


def codes(series, categories):
    return np.array([categories.index(v) for v in series], dtype=np.float64)


def main():
    rng = np.random.default_rng(7)
    cases = {}

    # flights: binary classification on numeric features
    flights_features = ["month", "day", "dep_time", "sched_dep_time", "dep_delay", "sched_arr_time", "distance", "hour"]
    flights_strings = ["carrier", "origin", "dest"]
    train = load("flights_cls_train.parquet", flights_features + flights_strings).head(TRAIN_ROWS)
    test = load("flights_cls_test.parquet", flights_features + flights_strings).head(TEST_ROWS)
    flights_frames = (train.copy(), test.copy())
    cases["flights"] = (flights_features, train, test)

    # diamonds: regression on numeric features plus integer-coded categories
    diamond_numeric = ["carat", "depth", "table", "x", "y", "z"]
    diamond_categorical = ["cut", "color", "clarity"]
    train = load("diamonds_reg_train.parquet", diamond_numeric + diamond_categorical).head(TRAIN_ROWS)
    test = load("diamonds_reg_test.parquet", diamond_numeric + diamond_categorical).head(TEST_ROWS)
    for c in diamond_categorical:
        cats = sorted(set(train[c]) | set(test[c]))
        train[c] = codes(train[c], cats)
        test[c] = codes(test[c], cats)
    cases["diamonds"] = (diamond_numeric + diamond_categorical, train, test)

    # digits: 10 classes
    digits_features = [f"pixel_{i}" for i in range(64)]
    frame = pq.read_table(DATA / "digits_cls_train.parquet").to_pandas()
    digits_features = [c for c in frame.columns if c != "label"]
    train = frame.head(TRAIN_ROWS)
    test = pq.read_table(DATA / "digits_cls_test.parquet").to_pandas().head(TEST_ROWS)
    cases["digits"] = (digits_features, train, test)

    rows = {}
    for name, (features, train, test) in cases.items():
        x_train = with_missing(train[features].to_numpy(np.float64), rng)
        x_test = with_missing(test[features].to_numpy(np.float64), rng)
        # the first rows keep every value, so each case has rows with and without missing values
        x_test[: TEST_ROWS // 3] = test[features].to_numpy(np.float64)[: TEST_ROWS // 3]
        cases[name] = (features, x_train, train["label"].to_numpy(), x_test)
        rows[name] = {f: x_test[:, i] for i, f in enumerate(features)}

    def expect(name, column, values):
        rows[name][column] = np.asarray(values, dtype=np.float64)

    # ---- XGBoost
    def xgb_model(case, params, rounds, file):
        features, x, y, x_test = cases[case]
        dtrain = xgb.DMatrix(x, label=y, feature_names=features)
        booster = xgb.train({"seed": 1, "nthread": 1, **params}, dtrain, rounds)
        booster.save_model(HERE / file)
        dtest = xgb.DMatrix(x_test, feature_names=features)
        return booster, dtest

    b, d = xgb_model("diamonds", {"objective": "reg:squarederror", "max_depth": 4}, 20, "xgb_reg.json")
    expect("diamonds", "xgb_reg", b.predict(d))
    b, d = xgb_model("flights", {"objective": "binary:logistic", "max_depth": 4}, 20, "xgb_binary.json")
    expect("flights", "xgb_binary", b.predict(d))
    b, d = xgb_model(
        "digits", {"objective": "multi:softprob", "num_class": 10, "max_depth": 3}, 6, "xgb_softprob.json"
    )
    for k, column in enumerate(b.predict(d).T):
        expect("digits", f"xgb_softprob_{k}", column)
    b, d = xgb_model(
        "digits",
        {"objective": "multi:softmax", "num_class": 10, "max_depth": 3, "num_parallel_tree": 2, "subsample": 0.8},
        3,
        "xgb_softmax.json",
    )
    expect("digits", "xgb_softmax", b.predict(d))
    margins = b.predict(d, output_margin=True)
    proba = np.exp(margins - margins.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    for k, column in enumerate(proba.T):
        expect("digits", f"xgb_softmax_{k}", column)
    # unsupported: a dart booster
    xgb_model("diamonds", {"objective": "reg:squarederror", "booster": "dart", "max_depth": 2}, 2, "xgb_dart.json")

    # ---- LightGBM
    def lgb_model(case, params, rounds, file, categorical=()):
        features, x, y, x_test = cases[case]
        dataset = lgb.Dataset(x, label=y, feature_name=features, categorical_feature=list(categorical))
        booster = lgb.train(
            {"seed": 1, "num_threads": 1, "verbose": -1, "deterministic": True, **params}, dataset, rounds
        )
        booster.save_model(HERE / file)
        return booster, x_test

    b, x = lgb_model(
        "diamonds", {"objective": "regression", "num_leaves": 15}, 20, "lgb_reg.txt", categorical=diamond_categorical
    )
    expect("diamonds", "lgb_reg", b.predict(x))
    b, x = lgb_model("diamonds", {"objective": "regression", "num_leaves": 15, "zero_as_missing": True}, 10, "lgb_reg_zero.txt")
    expect("diamonds", "lgb_reg_zero", b.predict(x))
    b, x = lgb_model("flights", {"objective": "binary", "num_leaves": 15}, 20, "lgb_binary.txt")
    expect("flights", "lgb_binary", b.predict(x))
    b, x = lgb_model("digits", {"objective": "multiclass", "num_class": 10, "num_leaves": 7}, 5, "lgb_multiclass.txt")
    for k, column in enumerate(b.predict(x).T):
        expect("digits", f"lgb_multiclass_{k}", column)
    # pandas category columns: the file keeps their category lists
    import pandas as pd

    train, test = flights_frames
    _, x_train, y_train, x_test = cases["flights"]
    frames = []
    for frame, x in ((train, x_train), (test, x_test)):
        df = pd.DataFrame(x, columns=flights_features)
        for c in flights_strings:
            values = frame[c].to_numpy(object).copy()
            values[rng.random(len(values)) < MISSING_SHARE] = None
            df[c] = values
        frames.append(df)
    levels = {c: sorted(set(frames[0][c].dropna())) for c in flights_strings}
    for df in frames:
        for c in flights_strings:
            df[c] = pd.Categorical(df[c], categories=levels[c][::-1])  # not sorted: codes differ from sorted order
    booster = lgb.train(
        {"objective": "binary", "num_leaves": 15, "seed": 1, "num_threads": 1, "verbose": -1, "deterministic": True,
         "min_data_per_group": 5, "cat_smooth": 1},
        lgb.Dataset(frames[0], label=y_train),
        10,
    )
    booster.save_model(HERE / "lgb_pandas.txt")
    expect("flights", "lgb_pandas", booster.predict(frames[1]))
    for c in flights_strings:
        rows["flights"][c] = pa.array(frames[1][c].astype(object).where(frames[1][c].notna(), None), pa.string())

    # unsupported: linear trees
    lgb_model("diamonds", {"objective": "regression", "num_leaves": 4, "linear_tree": True}, 2, "lgb_linear.txt")

    for name, columns in rows.items():
        pq.write_table(pa.table(columns), HERE / f"{name}_rows.parquet", compression="zstd")
    print(json.dumps({name: len(columns) for name, columns in rows.items()}))


if __name__ == "__main__":
    main()
