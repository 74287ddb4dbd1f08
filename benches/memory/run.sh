#!/usr/bin/env bash
# The memory benchmark: peak resident memory of `arbor train` and of the peer
# libraries (oneDAL through scikit-learn-intelex/daal4py, LightGBM, XGBoost,
# each loading the Parquet as its users do: benches/memory/peers.py) training
# a 20-tree forest and 20 boosting rounds on the same tables, in MB and as a
# ratio to the table's raw f32 matrix (rows x features x 4 bytes).
#
#   benches/memory/run.sh [--cgroup-fraction F] [TRAIN_PARQUET_OR_DIR ...]
#
# Default tables: target/memory-bench/synth_cls_4000k_train.parquet (3.2M rows
# x 50 features, made by benches/peers/make_synth.py) and the cluster table
# target/cluster-bench/train (5M x 20, made by benches/cluster/make_data.py);
# missing defaults are generated. The label column is "label".
# With --cgroup-fraction F (or CGROUP_FRACTION=F, e.g. 0.6) every process runs
# in a cgroup-v1 memory cgroup limited to F x the raw matrix, and the table
# says "killed" for a process the kernel killed. Needs root for that.
# Column "arbor sql" is the same training as one SQL statement in `arbor sql`
# (train_forest without GROUP BY over the Parquet table, DataFusion's
# default two partitions).
# Environment: ARBOR (target/release/arbor; ARBOR=- runs the peers only),
# PYTHON (python3, with benches/peers/requirements.txt), PEERS (empty: none; "onedal
# lightgbm xgboost"), TIMEOUT (seconds per run, none by default), LOG_DIR
# (keeps every run's output and /usr/bin/time line). Cells: peak MB (10^6
# bytes), its ratio to the raw matrix, wall seconds of the process (load + fit).
set -euo pipefail
cd "$(dirname "$0")/../.."
fraction="${CGROUP_FRACTION:-}"
if [[ "${1:-}" == --cgroup-fraction ]]; then fraction="$2"; shift 2; fi
arbor="${ARBOR:-target/release/arbor}"
python="${PYTHON:-python3}"
peers="${PEERS-onedal lightgbm xgboost}"
inputs=("$@")
if [[ ${#inputs[@]} -eq 0 ]]; then
    inputs=(target/memory-bench/synth_cls_4000k_train.parquet target/cluster-bench/train)
    [[ -e "${inputs[0]}" ]] || { mkdir -p target/memory-bench; "$python" benches/peers/make_synth.py target/memory-bench 4000000; }
    [[ -e "${inputs[1]}" ]] || "$python" benches/cluster/make_data.py target/cluster-bench 5000000
fi
work="$(mktemp -d)"
logs="${LOG_DIR:-$work}"
mkdir -p "$logs"
cgroup=""
cleanup() { rm -rf "$work"; if [[ -n "$cgroup" ]]; then rmdir "$cgroup" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [[ -n "$fraction" ]]; then
    cgroup="/sys/fs/cgroup/memory/arbor-bench-$$"
    mkdir "$cgroup"
fi

oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cgroup/memory.oom_control"; }

# Runs NAME CMD... (in the cgroup if any) and sets cell to "MB (ratio) secs",
# "killed", "timeout", "n/a" or "error".
measure() {
    local name="$1" status=0 before=0 prefix=()
    shift
    [[ -z "${TIMEOUT:-}" ]] || prefix=(timeout "$TIMEOUT")
    if [[ -n "$cgroup" ]]; then
        before=$(oom_kills)
        prefix+=(sh -c "echo \$\$ > $cgroup/cgroup.procs; exec \"\$@\"" sh)
    fi
    /usr/bin/time -f '%M %e' -o "$logs/$name.time" "${prefix[@]}" "$@" >"$logs/$name.log" 2>&1 || status=$?
    local rss secs
    read -r rss secs < <(tail -1 "$logs/$name.time")
    if [[ $status -eq 137 || ( -n "$cgroup" && "$(oom_kills)" != "$before" ) ]]; then cell=killed
    elif [[ $status -eq 124 ]]; then cell=timeout
    elif [[ $status -ne 0 ]]; then cell=error
    elif grep -q ' n/a$' "$logs/$name.log"; then cell=n/a
    else cell=$(awk -v kb="$rss" -v s="$secs" -v raw="$raw" 'BEGIN { printf "%d (%.2f) %.0fs", kb * 1024 / 1e6, kb * 1024 / raw, s }')
    fi
}

printf '%-32s %-14s %7s  %-9s' file "rows x feat" "raw MB" algorithm
for tool in arbor "arbor sql" $peers; do printf ' %-20s' "$tool"; done
echo
for input in "${inputs[@]}"; do
    read -r rows features columns < <("$python" -c "import pyarrow.dataset as d, sys
t = d.dataset(sys.argv[1], format='parquet')
print(t.count_rows(), len(t.schema.names) - 1, ','.join(n for n in t.schema.names if n != 'label'))" "$input")
    raw=$((rows * features * 4))
    if [[ -n "$cgroup" ]]; then
        echo 0 >"$cgroup/memory.force_empty" 2>/dev/null || true
        awk -v r="$raw" -v f="$fraction" 'BEGIN { printf "%d\n", r * f }' >"$cgroup/memory.limit_in_bytes"
    fi
    name="$(basename "$input")"
    name="${name%.parquet}"
    for algorithm in forest boosting; do
        if [[ $algorithm == forest ]]; then options=(--set n_trees=20); sql_options="n_trees=20"
        else options=(--algorithm gradient-boosting --set n_rounds=20); sql_options="algorithm=gradient-boosting n_rounds=20"; fi
        printf "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION '%s';\nSELECT length(forest_info(m)) FROM (SELECT train_forest(label, %s, '%s') AS m FROM t);\n" \
            "$(realpath "$input")" "$columns" "$sql_options" >"$work/train.sql"
        printf '%-32s %-14s %7d  %-9s' "$(basename "$input")" "${rows}x$features" $((raw / 1000000)) "$algorithm"
        cell=-
        [[ "$arbor" == - ]] || measure "$name-$algorithm-arbor" "$arbor" train --input "$input" --label label --output "$work/model.arbor" "${options[@]}"
        printf ' %-20s' "$cell"
        cell=-
        [[ "$arbor" == - ]] || measure "$name-$algorithm-arbor-sql" "$arbor" sql "$work/train.sql"
        printf ' %-20s' "$cell"
        for peer in $peers; do
            measure "$name-$algorithm-$peer" "$python" benches/memory/peers.py "$peer" "$algorithm" "$input" label
            printf ' %-20s' "$cell"
        done
        echo
    done
done
echo "peak resident MB (ratio to the raw f32 matrix) wall seconds${fraction:+; memory cgroup limit $fraction x raw}"
