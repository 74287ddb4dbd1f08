"""Writes the import-equality fixtures of the regression objectives beyond
squared error: small XGBoost and LightGBM models trained on the generated
insurance portfolio (data/make_claims.py), and `claims_rows.parquet`, the rows
they are scored on with each library's predictions.

Run from the repository root with the peer libraries of
benches/peers/requirements.txt installed:

    python crates/arbor-ensemble/tests/interop/make_objective_fixtures.py

The Rust tests (tests/import.rs) read only the files written here. Every file
is deterministic for a given library version (xgboost 3.2.0, lightgbm 4.7.0).
A share of the feature values is missing (NaN) in training and in two thirds
of the scored rows, as in make_fixtures.py.
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
FEATURES = ["driver_age", "vehicle_age", "vehicle_power", "bonus_malus", "density", "exposure"]
TRAIN_ROWS = 6000
TEST_ROWS = 300
MISSING_SHARE = 0.15
QUERY_ROWS = 20


def frame(name, rows):
    table = pq.read_table(DATA / f"{name}.parquet").slice(0, rows)
    x = np.column_stack([table.column(f).to_numpy().astype(np.float64) for f in FEATURES])
    return x, table.column("label").to_numpy().astype(np.float64)


def with_missing(x, rng):
    """`x` with MISSING_SHARE of its values NaN (missing to both libraries and to arbor)."""
    x = x.copy()
    x[rng.random(x.shape) < MISSING_SHARE] = np.nan
    return x


def main():
    rng = np.random.default_rng(11)
    x_counts, counts = frame("counts_reg_train", TRAIN_ROWS)
    x_claims, amounts = frame("claims_reg_train", TRAIN_ROWS)
    x_severity, severity = frame("severity_reg_train", TRAIN_ROWS)
    x_test, _ = frame("claims_reg_test", TEST_ROWS)
    # Labels are made from the full rows; the models see missing values.
    quantile_label = np.log1p(amounts) + x_claims[:, 0] / 10
    x_counts, x_claims, x_severity = (with_missing(x, rng) for x in (x_counts, x_claims, x_severity))
    # The first third of the scored rows keeps every value: rows with and without missing values.
    full = x_test[: TEST_ROWS // 3].copy()
    x_test = with_missing(x_test, rng)
    x_test[: TEST_ROWS // 3] = full
    rows = {f: x_test[:, i] for i, f in enumerate(FEATURES)}
    cases = {
        # stem: (features, label, XGBoost params, LightGBM params)
        "poisson": (x_counts, counts, {"objective": "count:poisson"}, {"objective": "poisson"}),
        "tweedie": (x_claims, amounts, {"objective": "reg:tweedie", "tweedie_variance_power": 1.3},
                    {"objective": "tweedie", "tweedie_variance_power": 1.3}),
        "gamma": (x_severity, severity, {"objective": "reg:gamma"}, {"objective": "gamma"}),
        "quantile": (x_claims, quantile_label,
                     {"objective": "reg:quantileerror", "quantile_alpha": 0.8}, {"objective": "quantile", "alpha": 0.8}),
        "absolute": (x_claims, quantile_label, {"objective": "reg:absoluteerror"},
                     {"objective": "regression_l1"}),
        "huber": (x_claims, quantile_label,
                  {"objective": "reg:pseudohubererror", "huber_slope": 2.0}, {"objective": "huber", "alpha": 2.0}),
        # Ranking: queries of 20 consecutive policies, graded 0-3 by the quartile of the quantile label.
        "rank": (x_claims, np.searchsorted(np.quantile(quantile_label, [0.25, 0.5, 0.75]), quantile_label),
                 {"objective": "rank:ndcg"}, {"objective": "lambdarank"}),
    }
    for stem, (x, y, xgb_params, lgb_params) in cases.items():
        group = [QUERY_ROWS] * (len(y) // QUERY_ROWS) if stem == "rank" else None
        dtrain = xgb.DMatrix(x, label=y, feature_names=FEATURES)
        if group is not None:
            dtrain.set_group(group)
        booster = xgb.train({"seed": 1, "nthread": 1, "max_depth": 4, "eta": 0.3, **xgb_params}, dtrain, 10)
        booster.save_model(HERE / f"xgb_{stem}.json")
        rows[f"xgb_{stem}"] = booster.predict(xgb.DMatrix(x_test, feature_names=FEATURES)).astype(np.float64)
        model = lgb.train({"seed": 1, "num_threads": 1, "verbose": -1, "deterministic": True, "num_leaves": 15,
                           "learning_rate": 0.3, **lgb_params},
                          lgb.Dataset(x, label=y, feature_name=FEATURES, group=group), 10)
        model.save_model(HERE / f"lgb_{stem}.txt")
        rows[f"lgb_{stem}"] = model.predict(x_test).astype(np.float64)
    pq.write_table(pa.table(rows), HERE / "claims_rows.parquet", compression="zstd")
    print(json.dumps({"xgboost": xgb.__version__, "lightgbm": lgb.__version__, "columns": len(rows)}))


if __name__ == "__main__":
    main()
