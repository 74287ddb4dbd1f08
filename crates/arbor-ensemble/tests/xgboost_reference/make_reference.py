"""Reference trees for arbor's boosting formulas (tests/xgboost_reference.rs).

One round of XGBoost's exact greedy trees (`tree_method="exact"`, depth 1
and 2, `eta=1`, `lambda=1`, `min_child_weight=0`, the base score set to
arbor's: the mean, or the mean's log-odds) on 400 rows of diamonds_reg
(carat, depth, table; 118 or fewer distinct values each, so arbor's bins
are the values themselves) for squared error and for a two-class label
(price above its median). Written next to this script:

- diamonds_400.parquet: the rows, the labels, and XGBoost's predictions of
  each model (`xgb_<name>`, float32 as XGBoost computes them);
- xgboost_trees.json: per model, each feature's total gain (the sum over its
  splits of G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)) and the root's gain;
  and, for the depth-1 squared-error stump, the predictions with `gamma`
  just below and just above the root's gain (kept, then refused).

Run from the repository root (xgboost 3.2.0, numpy, pyarrow):
    .venv-peers/bin/python crates/arbor-ensemble/tests/xgboost_reference/make_reference.py
The test itself needs no Python.
"""

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xgboost as xgb

HERE = Path(__file__).parent
FEATURES = ["carat", "depth", "table"]

table = pq.read_table("data/diamonds_reg_train.parquet").slice(0, 400)
x = np.column_stack([table[c].to_numpy().astype(np.float64) for c in FEATURES])
price = table["label"].to_numpy().astype(np.float64)
# A regression label of modest range (log price), and a two-class one.
y_reg = np.log(price)
y_cls = (price > np.median(price)).astype(np.int64)
for i, name in enumerate(FEATURES):
    assert len(np.unique(x[:, i])) < 256, f"{name}: arbor's bins must be the values"



def booster(label, objective, depth, base_score, gamma=0.0):
    params = {
        "objective": objective,
        "tree_method": "exact",
        "max_depth": depth,
        "eta": 1.0,
        "lambda": 1.0,
        "gamma": gamma,
        "min_child_weight": 0.0,
        "base_score": base_score,
        "nthread": 1,
    }
    return xgb.train(params, xgb.DMatrix(x, label=label, feature_names=FEATURES), num_boost_round=1)


def root_gain(model):
    return float(re.search(r"gain=([0-9.eE+-]+)", model.get_dump(with_stats=True)[0]).group(1))


mean = float(y_reg.mean())
share = float(y_cls.mean())
models = {
    "reg_depth1": booster(y_reg, "reg:squarederror", 1, mean),
    "reg_depth2": booster(y_reg, "reg:squarederror", 2, mean),
    "cls_depth2": booster(y_cls, "binary:logistic", 2, share),
}
columns = {name: table[name] for name in FEATURES}
columns["log_price"] = pa.array(y_reg)
columns["expensive"] = pa.array(y_cls)
out = {"base_score": {"reg": mean, "cls": share}, "models": {}}
dx = xgb.DMatrix(x, feature_names=FEATURES)
for name, model in models.items():
    columns[f"xgb_{name}"] = pa.array(model.predict(dx).astype(np.float64))
    gains = model.get_score(importance_type="total_gain")
    out["models"][name] = {
        "total_gain": {f: float(gains.get(f, 0.0)) for f in FEATURES},
        "root_gain": root_gain(model),
        "dump": model.get_dump(with_stats=True)[0],
    }
stump_gain = out["models"]["reg_depth1"]["root_gain"]
for label, gamma in [("kept", stump_gain * 0.999), ("refused", stump_gain * 1.001)]:
    model = booster(y_reg, "reg:squarederror", 1, mean, gamma)
    out["models"]["reg_depth1"][f"gamma_{label}"] = gamma
    columns[f"xgb_reg_depth1_gamma_{label}"] = pa.array(model.predict(dx).astype(np.float64))
pq.write_table(pa.table(columns), HERE / "diamonds_400.parquet")
(HERE / "xgboost_trees.json").write_text(json.dumps(out, indent=1))
print(json.dumps({k: (v["root_gain"], v["total_gain"]) for k, v in out["models"].items()}, indent=1))
