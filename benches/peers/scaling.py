"""Scaling: how arbor's training time and memory grow with rows and threads.

Trains `arbor train` (whole processes, the peer table's settings; forests with
--trees trees, 20 by default, to keep the 4M-row runs short) on the synthetic
sets of 250k, 1M and 4M rows (50 float32 features; written to target/synth/ by
make_synth.py on first use) and prints, per set and algorithm:
- seconds and microseconds per training row on 2 threads;
- the per-row cost against the smallest size's (issue 35's target: at most 1.2);
- peak resident memory against the raw float32 feature matrix (target: 1.5);
- on the smallest size, one thread's time over two threads' (target: 1.8).

Run from the repository root after `cargo build --release`:

    python benches/peers/scaling.py [--sizes 250,1000,4000] [--trees 20] [--repeat 1]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from peers import GB, RF, ROOT, arbor_settings, files  # noqa: E402

FEATURES = 50


def train(binary, train_file, algo, task, trees, threads):
    """Whole-process seconds and peak resident bytes of one `arbor train`."""
    settings = [f"n_trees={trees}" if s.startswith("n_trees=") else s for s in arbor_settings(algo, task)]
    with tempfile.TemporaryDirectory(prefix="arbor-scaling-") as tmp:
        cmd = [binary, "train", "--input", train_file, "--label", "label", "--output", Path(tmp) / "model.arbor"]
        cmd += ["--algorithm", algo]
        for kv in settings:
            cmd += ["--set", kv]
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        start = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        err = child.stderr.read().decode()
        child.stderr.close()
        if status != 0:
            raise RuntimeError(f"`{' '.join(map(str, cmd))}` failed: {err.strip()[-600:]}")
        return seconds, usage.ru_maxrss * 1024  # ru_maxrss is in KiB on Linux


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="250,1000,4000", help="thousands of rows of the synthetic sets")
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1, help="median of N runs")
    ap.add_argument("--arbor", default=str(ROOT / "target" / "release" / "arbor"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| set | model | train rows | seconds | µs/row | per-row cost / smallest | peak MiB | "
          "peak / raw f32 | 1 thread / 2 threads |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, task in (("cls", "classification"), ("reg", "regression")):
        for algo in (RF, GB):
            base = None
            for size in sizes:
                train_file, _ = files(f"synth_{kind}_{size}k")
                rows = pq.ParquetFile(train_file).metadata.num_rows
                runs = [train(args.arbor, train_file, algo, task, args.trees, 2) for _ in range(args.repeat)]
                seconds = statistics.median(s for s, _ in runs)
                peak = max(p for _, p in runs)
                per_row = seconds / rows
                base = base or per_row
                raw = rows * FEATURES * 4
                threads = ""
                if size == sizes[0]:
                    one = statistics.median(train(args.arbor, train_file, algo, task, args.trees, 1)[0]
                                            for _ in range(args.repeat))
                    threads = f"{one / seconds:.2f}"
                model = "forest" if algo == RF else "boosting"
                print(f"| synth_{kind} | {model} | {rows:,} | {seconds:.2f} | {per_row * 1e6:.2f} | "
                      f"{per_row / base:.2f} | {peak / 2**20:.0f} | {peak / raw:.2f} | {threads} |", flush=True)


if __name__ == "__main__":
    main()
