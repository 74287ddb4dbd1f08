"""Rows binned once and trained on many times: ``arbor.Dataset`` and ``arbor.cv``.

A ``Dataset`` reads its source twice, as arbor's command line reads a file:
the first pass decides each feature's bins (from a sample of rows chosen by
their content), the second bins every batch as it arrives and drops its
values, so a Parquet file or a pyarrow dataset larger than memory as floats
trains from one byte a value. Every estimator's ``fit`` takes it in place of
``X, y`` (LightGBM's ``Dataset`` and XGBoost's ``QuantileDMatrix`` exist for
the same reason), and ``cv`` trains the folds of a cross-validation on row
subsets of the one binned table instead of binning it once a fold.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from arbor import _arbor


def _opener(source, columns: list[str] | None):
    """A callable that returns a new Arrow stream of ``source`` at each call."""
    if isinstance(source, str | os.PathLike):
        source = pads.dataset(os.fspath(source), format="parquet")
    if isinstance(source, pads.Dataset):
        return lambda: source.scanner(columns=columns).to_reader()
    if isinstance(source, pa.RecordBatchReader):
        msg = "a RecordBatchReader can be read once, and binning reads its source twice: pass a table, a pyarrow dataset or a Parquet path"
        raise TypeError(msg)
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    elif type(source).__module__.startswith("pandas") and hasattr(source, "columns"):
        source = pa.Table.from_pandas(source, preserve_index=False)
    elif not isinstance(source, pa.Table) and hasattr(source, "__arrow_c_stream__"):
        source = pa.table(source)
    if not isinstance(source, pa.Table):
        msg = f"cannot read {type(source).__name__}: pass a Parquet path, a pyarrow dataset or table, or a data frame"
        raise TypeError(msg)
    table = source.select(columns) if columns is not None else source
    return table.to_reader


class Dataset:
    """Training rows binned once: a Parquet file or directory, a pyarrow
    dataset or table, or a pandas or polars data frame, with the column
    ``label`` as the label (``weight``: sample weights; ``group``: query ids
    for ``GradientBoostingRanker``, which makes the task regression unless
    given; ``features``: the feature columns, by default every other column).

    ``task`` (default: from the label's type), ``max_bins``, ``min_bin_size``,
    ``bin_boundaries`` and ``split_method`` decide the bins; an estimator fitted on the dataset
    that asks for other bins is refused.

    It indexes like a table's rows (``dataset[rows]``, rows in the order the
    source gave them, null labels left out) into a dataset sharing its bins,
    and ``dataset.y`` is its label column, so scikit-learn's
    ``GridSearchCV(estimator, grid).fit(dataset, dataset.y)`` and
    ``cross_val_score`` search over one binning: every fold trains on rows
    taken from it and is scored on its own (``predict`` and ``score`` take
    a dataset, for models fitted on its bins).
    """

    #: How many times any ``Dataset`` has binned rows: fits and
    #: cross-validations on a dataset bin nothing again.
    binnings = 0

    def __init__(
        self,
        source,
        label: str,
        *,
        weight: str | None = None,
        group: str | None = None,
        features: list[str] | None = None,
        task: str | None = None,
        max_bins: int = 256,
        min_bin_size: int = 5,
        bin_boundaries: str = "quantile",
        split_method: str = "hist",
    ):
        columns = None if features is None else [label, *(c for c in (weight, group) if c), *features]
        options = [("max_bins", str(max_bins)), ("min_bin_size", str(min_bin_size)), ("split_method", split_method)]
        if bin_boundaries != "quantile":
            options.append(("bin_boundaries", bin_boundaries))
        if task is not None:
            options.append(("task", task))
        self._rows = _arbor.bin_rows(
            _opener(source, columns), label=label, options=options, weight=weight, features=features, group=group
        )
        Dataset.binnings += 1
        self.label = label

    @classmethod
    def _of(cls, rows: _arbor.BinnedRows, label: str) -> Dataset:
        dataset = cls.__new__(cls)
        dataset._rows = rows
        dataset.label = label
        return dataset

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, features)``, as a table's."""
        return (self.n_rows, len(self.feature_names))

    def __len__(self) -> int:
        return self.n_rows

    def __getitem__(self, key) -> Dataset:
        """The rows ``key`` selects (an array or list of row numbers, a
        boolean mask or a slice), in that order, with these bins."""
        if isinstance(key, tuple):
            if len(key) != 2 or key[1] is not Ellipsis:
                msg = "a Dataset is indexed by rows only: dataset[rows]"
                raise IndexError(msg)
            key = key[0]
        n = self.n_rows
        if isinstance(key, slice):
            positions = np.arange(n)[key]
        else:
            positions = np.asarray(key)
            if positions.ndim != 1:
                msg = "a Dataset's rows are taken by a 1-d array of row numbers, a boolean mask or a slice"
                raise IndexError(msg)
            if positions.dtype == bool:
                if len(positions) != n:
                    msg = f"a boolean mask of {len(positions)} values for {n} rows"
                    raise IndexError(msg)
                positions = np.flatnonzero(positions)
            elif len(positions) and positions.dtype.kind not in "iu":
                msg = f"rows are taken by integers, not {positions.dtype}"
                raise IndexError(msg)
            positions = np.where(positions < 0, positions + n, positions)
            if len(positions) and (positions.min() < 0 or positions.max() >= n):
                msg = f"row numbers run from {-n} to {n - 1}"
                raise IndexError(msg)
        return Dataset._of(self._rows.take(positions.astype(np.uint32).tolist()), self.label)

    @property
    def y(self) -> np.ndarray:
        """The label of every row, in row order (classes as the label column holds them)."""
        return self._rows.labels().to_numpy(zero_copy_only=False)

    @property
    def n_rows(self) -> int:
        """Rows binned (rows whose label is null are left out)."""
        return self._rows.n_rows

    @property
    def feature_names(self) -> list[str]:
        """The features, in the order models trained on them know them."""
        return self._rows.feature_names

    @property
    def task(self) -> str:
        """``classification`` or ``regression``."""
        return self._rows.task

    @property
    def size_bytes(self) -> int:
        """Bytes the binned rows hold."""
        return self._rows.size_bytes

    def train(self, options: list[tuple[str, str]], init_model: _arbor.Model | None = None) -> _arbor.Model:
        """A model trained on these rows with arbor's options by name
        (boosting continued from ``init_model``, whose bins they must have)."""
        return _arbor.train_binned(self._rows, options=options, init_model=init_model)

    def __repr__(self) -> str:
        return f"Dataset({self.n_rows} rows, {len(self.feature_names)} features, label={self.label!r}, {self.task})"


def cv(params: dict, dataset: Dataset, folds: int = 5) -> list[dict]:
    """Cross-validates arbor's options ``params`` (e.g. ``{"algorithm":
    "gradient-boosting", "n_rounds": 50}``) on ``dataset``: each of ``folds``
    models trains on the other folds' rows (dealt at random from ``seed``)
    with the dataset's bins, and is scored on its own fold. Returns one dict
    per fold: ``model``, ``training_rows``, ``held_out_rows`` and ``score``
    (accuracy for classification, RMSE for regression). Binning happens once,
    when the dataset was made.
    """
    options = [(str(k), _text(v)) for k, v in params.items()]
    folds_run = _arbor.cross_validate(dataset._rows, options=options, folds=folds)
    return [
        {"model": model, "training_rows": trained, "held_out_rows": held_out, "score": score}
        for model, trained, held_out, score in folds_run
    ]


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
