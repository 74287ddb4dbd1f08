"""Writes the learning-to-rank set rank_train.parquet / rank_test.parquet from
LightGBM's LambdaRank example data.

usage: python data/make_rank.py RAW_DIR [OUT_DIR]   (OUT_DIR default: the directory of this file)
needs: numpy, pyarrow

Source: https://github.com/microsoft/LightGBM, folder examples/lambdarank/
(files rank.train, rank.test, rank.train.query, rank.test.query; read at
commit bae0b7ba953341a32b2a9c5c5c437a1b976f576f). Copyright (c) Microsoft
Corporation, MIT License. RAW_DIR must hold those four files.

Raw format: rank.{train,test} are LibSVM text, one document a line,
`label idx:value ...`, with 1-based feature indices 1..300; rank.*.query list
the number of consecutive lines of each query, in file order (the query ids are
not in the LibSVM files). Train: 3,005 rows, 201 queries; test: 768 rows, 50
queries; labels are relevance grades 0-4.

Output columns (the row order of the raw files is kept, so the rows of a query
are contiguous):
- `query` int32: the query id, 0, 1, 2, ... in file order. Each file numbers
  its own queries from 0: test ids do NOT continue after train's.
- `label` int32: the relevance grade 0-4.
- `f0` .. `f299` float32: feature fK is LibSVM index K+1. An entry absent from
  a line is 0.0, as LightGBM reads LibSVM. Both files get all 300 columns (the
  largest index of either file), including features that are always 0 in a
  file. Note: LightGBM's own LibSVM loader keeps the indices as they are, so it
  sees 301 features with an always-empty Column_0, and its Column_{K+1} is fK
  here.
"""
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def read_libsvm(path):
    """(labels, [(index, value) pairs per row]) of a LibSVM text file."""
    labels, rows = [], []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            label = float(parts[0])
            if label != int(label) or not 0 <= label <= 4:
                raise ValueError(f"{path}:{lineno}: label {parts[0]} is not a grade 0-4")
            labels.append(int(label))
            pairs = [(int(i), float(v)) for i, v in (t.split(":") for t in parts[1:])]
            if any(i < 1 for i, _ in pairs) or len({i for i, _ in pairs}) != len(pairs):
                raise ValueError(f"{path}:{lineno}: an index below 1 or given twice")
            rows.append(pairs)
    return labels, rows


def table(labels, rows, sizes, n_features):
    if sum(sizes) != len(labels) or min(sizes) < 1:
        raise ValueError(f"query sizes sum to {sum(sizes)}, the file has {len(labels)} rows")
    x = np.zeros((len(rows), n_features), dtype=np.float32)
    for r, pairs in enumerate(rows):
        for i, v in pairs:
            x[r, i - 1] = v
    columns = {
        "query": pa.array(np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)),
        "label": pa.array(np.asarray(labels, dtype=np.int32)),
    }
    columns.update({f"f{k}": pa.array(x[:, k]) for k in range(n_features)})
    return pa.table(columns)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    raw = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent
    sets = {}
    for name in ("train", "test"):
        labels, rows = read_libsvm(raw / f"rank.{name}")
        sizes = [int(s) for s in (raw / f"rank.{name}.query").read_text().split()]
        sets[name] = (labels, rows, sizes)
    n_features = max(i for _, rows, _ in sets.values() for pairs in rows for i, _ in pairs)
    for name, (labels, rows, sizes) in sets.items():
        t = table(labels, rows, sizes, n_features)
        path = out / f"rank_{name}.parquet"
        pq.write_table(t, path, compression="zstd")
        print(f"{path}: {t.num_rows} rows, {len(sizes)} queries, {n_features} features, "
              f"labels {np.bincount(labels, minlength=5).tolist()}, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
