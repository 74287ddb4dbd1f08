"""Writes the cluster benchmark's table: N rows x 20 float features and a
binary label, in 8 Parquet files, plus a 200k-row test file.

    python benches/cluster/make_data.py OUT_DIR [ROWS]    (default 5,000,000)

Needs numpy and pyarrow. The label is a noisy function of 8 of the features
(interactions and thresholds), so trees have something to learn.
"""
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FEATURES = 20
FILES = 8


def table(rng, rows):
    x = rng.standard_normal((rows, FEATURES), dtype=np.float32)
    score = (
        1.5 * x[:, 0]
        - x[:, 1] * x[:, 2]
        + np.where(x[:, 3] > 0.5, 1.0, -0.5)
        + 0.8 * np.sin(2.0 * x[:, 4])
        + 0.5 * x[:, 5] ** 2
        - 0.7 * np.abs(x[:, 6])
        + 0.3 * x[:, 7]
        + rng.standard_normal(rows).astype(np.float32)
    )
    columns = {f"f{i:02}": x[:, i] for i in range(FEATURES)}
    columns["label"] = (score > np.median(score)).astype(np.int32)
    return pa.table(columns)


def main():
    out = Path(sys.argv[1])
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000_000
    rng = np.random.default_rng(20261125)
    (out / "train").mkdir(parents=True, exist_ok=True)
    per_file = rows // FILES
    for f in range(FILES):
        pq.write_table(table(rng, per_file), out / "train" / f"part-{f}.parquet")
    pq.write_table(table(rng, 200_000), out / "test.parquet")


if __name__ == "__main__":
    main()
