"""Shared fixtures: the bundled data sets and the `arbor` command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "data"
INTEROP = REPO / "crates" / "arbor-ensemble" / "tests" / "interop"


def read(name: str) -> pa.Table:
    """A bundled Parquet file as a pyarrow Table."""
    return pq.read_table(DATA / f"{name}.parquet")


def split(table: pa.Table) -> tuple[pa.Table, pa.ChunkedArray]:
    """Features and label of a bundled table."""
    return table.drop_columns(["label"]), table.column("label")


@pytest.fixture(scope="session")
def cancer() -> tuple[pa.Table, pa.Table]:
    return read("cancer_cls_train"), read("cancer_cls_test")


@pytest.fixture(scope="session")
def digits() -> tuple[pa.Table, pa.Table]:
    return read("digits_cls_train"), read("digits_cls_test")


@pytest.fixture(scope="session")
def diamonds() -> tuple[pa.Table, pa.Table]:
    return read("diamonds_reg_train"), read("diamonds_reg_test")


@pytest.fixture(scope="session")
def flights() -> tuple[pa.Table, pa.Table]:
    return read("flights_cls_train"), read("flights_cls_test")


@pytest.fixture(scope="session")
def arbor_binary() -> str:
    """The `arbor` binary of this checkout (ARBOR_BIN, or cargo's target directory)."""
    candidates = [os.environ.get("ARBOR_BIN")]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    candidates += [str(target / "debug" / "arbor"), str(target / "release" / "arbor")]
    binary = next((c for c in candidates if c and Path(c).is_file()), None)
    if binary is None:
        pytest.fail("no arbor binary: build it with `cargo build` or set ARBOR_BIN")
    return binary


@pytest.fixture(scope="session")
def arbor_cli(arbor_binary):
    """Runs the `arbor` binary of this checkout and returns what it printed."""
    binary = arbor_binary

    def run(*args: str) -> str:
        done = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run
