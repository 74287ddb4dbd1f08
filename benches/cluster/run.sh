#!/usr/bin/env bash
# The cluster benchmark: trains and scores a random forest on a generated
# table (5M rows x 20 features in 8 Parquet files by default) in one process,
# then on clusters of one and two executors of one task slot each
# (ARBOR_BENCH_EXECUTORS="1 2 4" adds four), and reports wall time, the
# bytes executors wrote for shuffles, each executor's peak memory and the
# most its shard store held.
#
#   benches/cluster/run.sh [DATA_DIR] [ROWS]
#
# Needs a release build with the cluster (cargo build --release --features cluster) and Python with numpy and pyarrow.
set -euo pipefail
cd "$(dirname "$0")/../.."
data="${1:-target/cluster-bench}"
rows="${2:-5000000}"
arbor="${ARBOR:-$PWD/target/release/arbor}"
python="${PYTHON:-python3}"
options="${ARBOR_BENCH_OPTIONS:-n_trees=8 max_depth=16 seed=1}"
# ARBOR_BENCH_EXECUTORS lists the clusters to run, by executor count (default "1 2").
executors="${ARBOR_BENCH_EXECUTORS:-1 2}"
# ARBOR_BENCH_POLICY=push-staged runs the cluster with Ballista's push scheduling
# (arbor's default is pull-staged; see docs/cluster.md for the trade-off).
policy="${ARBOR_BENCH_POLICY:-}"
scheduler_flags=(); executor_flags=()
[[ -z "$policy" ]] || { scheduler_flags=(--scheduler-policy "$policy"); executor_flags=(--task-scheduling-policy "$policy"); }
[[ -d "$data/train" ]] || "$python" benches/cluster/make_data.py "$data" "$rows"
data="$(cd "$data" && pwd)"
features=$(for i in $(seq -w 0 19); do printf 'f%s, ' "$i"; done); features="${features%, }"
tables="CREATE EXTERNAL TABLE train STORED AS PARQUET LOCATION '$data/train/';
CREATE EXTERNAL TABLE test STORED AS PARQUET LOCATION '$data/test.parquet';"
train="COPY (SELECT train_forest(label, $features, '$options') AS model FROM train) TO '$data/model-\$RUN.parquet' STORED AS PARQUET;"
score="CREATE EXTERNAL TABLE models STORED AS PARQUET LOCATION '$data/model-\$RUN.parquet';
COPY (SELECT t.label, predict_forest(m.model, $features) AS p FROM test t CROSS JOIN models m) TO '$data/scored-\$RUN.parquet' STORED AS PARQUET;"
check="CREATE EXTERNAL TABLE s STORED AS PARQUET LOCATION '$data/scored-\$RUN.parquet';
SELECT avg(CASE WHEN label = p THEN 1.0 ELSE 0.0 END) AS accuracy FROM s;"

now() { date +%s.%N; }
run_sql() { # RUN URL STATEMENTS
    local run="$1" url="$2" sql="${3//\$RUN/$1}"
    if [[ -n "$url" ]]; then "$arbor" sql --cluster "$url" --format csv -c "$tables $sql"
    else /usr/bin/time -f %M -o "$data/$run-rss" "$arbor" sql --format csv -c "$tables $sql"; fi
}
phase() { # RUN URL
    rm -rf "$data/model-$1.parquet" "$data/scored-$1.parquet"
    local t0 t1 t2
    t0=$(now); run_sql "$1" "$2" "$train" >/dev/null; t1=$(now)
    [[ -n "$2" ]] || cp "$data/$1-rss" "$data/$1-train-rss"
    run_sql "$1" "$2" "$score" >/dev/null; t2=$(now)
    printf '%-12s train %7.1f s   score %6.1f s   %s\n' "$1" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" \
        "$(run_sql "$1" "" "$check" | tail -1 | sed 's/^/accuracy /')"
}
cluster() { # RUN EXECUTORS
    local run="$1" n="$2" port=50450 pids=()
    "$arbor" cluster scheduler --bind-host 127.0.0.1 --external-host 127.0.0.1 --bind-port $port "${scheduler_flags[@]}" >"$data/$run-scheduler.log" 2>&1 &
    pids+=($!)
    for i in $(seq 1 "$n"); do
        rm -rf "$data/$run-work-$i"; mkdir -p "$data/$run-work-$i"
        "$arbor" cluster executor --scheduler-host 127.0.0.1 --scheduler-port $port \
            --bind-host 127.0.0.1 --external-host 127.0.0.1 --bind-port $((port + 10 * i)) --bind-grpc-port $((port + 10 * i + 1)) \
            --work-dir "$data/$run-work-$i" --vcores 1 "${executor_flags[@]}" >"$data/$run-executor-$i.log" 2>&1 &
        pids+=($!)
    done
    sleep 3
    for pid in "${pids[@]}"; do kill -0 "$pid" || { echo "a cluster process ended; see $data/$run-*.log" >&2; exit 1; }; done
    # Shuffle files are deleted once their stage is read: the largest total
    # the work directories reach, sampled every 200 ms, is what was shuffled.
    local peak="$data/$run-shuffle-peak"
    echo 0 >"$peak"
    ( while sleep 0.2; do
        b=$(du -scb "$data/$run-work-"* 2>/dev/null | tail -1 | cut -f1)
        (( b > $(cat "$peak") )) && echo "$b" >"$peak"
      done ) &
    local poller=$!
    phase "$run" "df://127.0.0.1:$port"
    kill "$poller" 2>/dev/null || true
    local shuffled; shuffled=$(cat "$peak")
    printf '%-12s shuffle files (peak on disk) %s MB; executor peak RSS:' "$run" $((shuffled / 1000000))
    for pid in "${pids[@]:1}"; do printf ' %s MB' $(( $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") / 1024 )); done
    # Each executor logs its shard store's peak bytes as it keeps a shard.
    printf '; shard store peak:'
    for i in $(seq 1 "$n"); do
        held=$(grep -o 'peak [0-9]* bytes' "$data/$run-executor-$i.log" | tail -1 | cut -d' ' -f2) || true
        printf ' %s MB' $(( ${held:-0} / 1000000 ))
    done
    echo
    kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true
}

echo "rows: $(ls "$data/train" | wc -l) files, options: $options, threads: one process uses every core, scheduling: ${policy:-pull-staged}"
phase single ""
echo "single       peak RSS of the training process: $(( $(tail -1 "$data/single-train-rss") / 1024 )) MB"
names=([1]=one-executor [2]=two-executors [3]=three-executors [4]=four-executors)
runs=()
for n in $executors; do
    [[ -n "${names[$n]:-}" ]] || { echo "ARBOR_BENCH_EXECUTORS: 1 to 4 executors, not $n" >&2; exit 1; }
    cluster "${names[$n]}" "$n"
    runs+=("${names[$n]}")
done
"$python" - "$data" "${runs[@]}" <<'PY'
import sys, pyarrow.parquet as pq
d, runs = sys.argv[1], sys.argv[2:]
scored = [pq.read_table(f"{d}/scored-{run}.parquet").column("p") for run in runs]
print(f"{', '.join(runs)}: predictions identical:", all(s.equals(scored[0]) for s in scored))
PY
