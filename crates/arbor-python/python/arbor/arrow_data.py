"""Data from the user as Arrow, without copies where the source is columnar.

pyarrow Tables and RecordBatches pass as they are; pandas data frames go
through ``pyarrow.Table.from_pandas`` (zero-copy for numeric columns without
nulls) and polars or any other producer of the Arrow PyCapsule interface
(``__arrow_c_stream__``) through ``pyarrow.table``; Rust then reads the
result through the same interface. NumPy arrays are row-major, so their
columns are copied once, into columns named ``x0``, ``x1``, ...
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sklearn.utils.validation import check_array


def _is_pandas_frame(x) -> bool:
    return type(x).__module__.startswith("pandas") and hasattr(x, "columns") and hasattr(x, "iloc")


def features(X, estimator_name: str = "arbor") -> tuple[pa.Table | pa.RecordBatch, list[str] | None]:
    """``X`` as an Arrow table and its column names (``None`` for arrays without names)."""
    if isinstance(X, pa.Table | pa.RecordBatch):
        return X, list(X.schema.names)
    if _is_pandas_frame(X):
        table = pa.Table.from_pandas(X, preserve_index=False)
        return table, [str(c) for c in X.columns]
    if hasattr(X, "__arrow_c_stream__"):
        table = pa.table(X)
        return table, list(table.schema.names)
    if hasattr(X, "__arrow_c_array__"):
        batch = pa.record_batch(X)
        return batch, list(batch.schema.names)
    array = check_array(
        X,
        dtype=[np.float64, np.float32],
        ensure_all_finite="allow-nan",
        estimator=estimator_name,
    )
    return numpy_table(array), None


def numpy_table(array: np.ndarray, names: list[str] | None = None) -> pa.Table:
    """A 2-D NumPy array as a table of one column per array column."""
    columns = np.asfortranarray(array)
    names = names if names is not None else [f"x{j}" for j in range(columns.shape[1])]
    return pa.Table.from_arrays([pa.array(columns[:, j]) for j in range(columns.shape[1])], names=names)


def series_name(values) -> str | None:
    """The name a pandas or polars series carries, if any."""
    name = getattr(values, "name", None)
    return name if isinstance(name, str) and name else None
