#!/usr/bin/env bash
# Every test of arbor: Rust (unit, integration, SQL logic, command line) and
# Python (the package built from this checkout, in a virtual environment of
# its own under target/). Needs the Rust toolchain and a Python >= 3.10 with
# venv; the Python packages come from PyPI the first time.
#
#   scripts/test.sh              everything
#   ARBOR_TESTS=rust scripts/test.sh     only cargo test
#   ARBOR_TESTS=python scripts/test.sh   only the Python package's tests
set -euo pipefail
cd "$(dirname "$0")/.."

what="${ARBOR_TESTS:-all}"
target="${CARGO_TARGET_DIR:-$PWD/target}"

if [[ "$what" != python ]]; then
    echo "== cargo test"
    cargo test --workspace --all-features --locked
fi

if [[ "$what" != rust ]]; then
    echo "== Python package"
    venv="${ARBOR_VENV:-$target/python-venv}"
    python="${PYTHON:-python3}"
    if [[ ! -x "$venv/bin/python" ]]; then
        "$python" -m venv "$venv"
    fi
    export VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH"
    pip install --quiet --disable-pip-version-check -r crates/arbor-python/requirements-test.txt
    # A debug build in the shared target directory: with the features
    # arbor-python's Cargo.toml unifies, the dependencies cargo test compiled
    # are reused, not compiled again.
    maturin develop --quiet --manifest-path crates/arbor-python/Cargo.toml
    # The command line the tests compare with (cargo test builds it).
    [[ -x "$target/debug/arbor" ]] || cargo build --locked --all-features --bin arbor
    # The report's browser test renders pages in headless Chromium: Debian's
    # package, installed here when it is missing and the machine lets us.
    if ! command -v chromium >/dev/null 2>&1; then
        apt=()
        if [[ $(id -u) == 0 ]]; then
            apt=(apt-get)
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            apt=(sudo -n apt-get)
        fi
        if ((${#apt[@]})); then
            echo "== installing Chromium (Debian's package) for the report's browser test"
            export DEBIAN_FRONTEND=noninteractive
            "${apt[@]}" install -y -q chromium >/dev/null 2>&1 ||
                { "${apt[@]}" update -q >/dev/null 2>&1 && "${apt[@]}" install -y -q chromium >/dev/null 2>&1; } ||
                echo "Chromium could not be installed: the report's browser test will be skipped"
        fi
    fi
    ARBOR_BIN="$target/debug/arbor" python -m pytest -q -p no:cacheprovider crates/arbor-python/tests
fi
