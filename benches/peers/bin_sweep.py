"""Boosting quality across bin counts: arbor, LightGBM and XGBoost with the peer
table's settings (benches/peers/README.md) except `max_bins`/`max_bin`, which
takes each value given.

Why: at one bin count a gap of 0.03-1% between boosting libraries can be the
luck of where the bin edges fall (each library cuts its bins its own way). A
gap that holds across bin counts is the algorithm's; one that changes sign
from one count to the next is not. Prints one row per bin count (AUC for
classification, RMSE for regression) and each library's mean over the counts.

`--boundaries quantile,greedy` gives arbor a column per `bin_boundaries`
choice (docs/algorithms.md, "Histogram binning"); `--peers ""` leaves the
peers out; `--algorithm random-forest` sweeps arbor's forests (the peer
table's forest settings; the boosting peers are left out).

usage: python bin_sweep.py [--dataset synth_reg_250k] [--bins 64,100,...] [--arbor PATH]
                           [--boundaries quantile,greedy] [--peers lightgbm,xgboost]
                           [--algorithm gradient-boosting|random-forest]
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (the peer table's data, settings and metrics)

DEFAULT_BINS = "64,100,128,200,255,256,300,400,512,1024,2048"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="synth_reg_250k", type=peers.dataset)
    ap.add_argument("--bins", default=DEFAULT_BINS, help="comma-separated bin counts")
    ap.add_argument("--arbor", default=str(peers.ROOT / "target" / "release" / "arbor"))
    ap.add_argument("--boundaries", default="quantile", help="comma-separated bin_boundaries choices for arbor")
    ap.add_argument("--peers", default="lightgbm,xgboost", help="comma-separated peers (\"\" for none)")
    ap.add_argument("--algorithm", default=peers.GB, choices=[peers.GB, peers.RF])
    args = ap.parse_args()
    algo = args.algorithm
    if algo == peers.RF:
        args.peers = ""
    bins = [int(b) for b in args.bins.split(",")]
    boundaries = args.boundaries.split(",")
    wanted = [lib for lib in args.peers.split(",") if lib]
    libs = [lib for lib in ("lightgbm", "xgboost") if lib in wanted and lib in peers.available(wanted)]
    arbors = ["arbor" if b == "quantile" else f"arbor {b}" for b in boundaries]

    train, test, cats = peers.load(args.dataset)
    task = "classification" if args.dataset.split("_")[1].startswith("cls") else "regression"
    metric = "auc" if task == "classification" else "rmse"
    data = (train, test, cats, task)
    make_model, arbor_settings = peers.make_model, peers.arbor_settings

    better = "higher" if metric == "auc" else "lower"
    print(f"{args.dataset}, {algo.replace('-', ' ')}, {metric} ({better} is better)")
    print("| bins | " + " | ".join([*arbors, *libs]) + " |")
    print("|---|" + "---|" * (len(arbors) + len(libs)))
    scores = {lib: [] for lib in [*arbors, *libs]}
    for b in bins:
        # The reference settings with this bin count (the peers' makers and arbor's options).
        peers.make_model = lambda lib, algo, t, p, b=b: make_model(lib, algo, t, p).set_params(max_bin=b)
        row = []
        for choice in boundaries:
            peers.arbor_settings = lambda algo, t, b=b, c=choice: [
                s for s in arbor_settings(algo, t) if not s.startswith("max_bins=")
            ] + [f"max_bins={b}", f"bin_boundaries={c}"]
            row.append(peers.run_arbor(args.arbor, args.dataset, algo, task, 1)[3][metric])
        row += [peers.run_peer(lib, peers.GB, data, 1)[2][metric] for lib in libs]
        for lib, v in zip(scores, row):
            scores[lib].append(v)
        print(f"| {b} | " + " | ".join(f"{v:.5f}" for v in row) + " |", flush=True)
    print("| mean | " + " | ".join(f"{statistics.mean(v):.5f}" for v in scores.values()) + " |")


if __name__ == "__main__":
    main()
