#!/usr/bin/env bash
# What one Ballista job costs level-wise boosting: trains gradient boosting
# on a small bundled table (diamonds, 43k rows) on a one-executor cluster,
# where each tree level is a job, and in one process; prints the jobs the
# scheduler finished and the time each added over one process.
#
#   benches/cluster/job_latency.sh [OPTIONS]   (default: n_rounds=10 max_depth=3)
#
# Needs a release build with the cluster (cargo build --release --features cluster --bin arbor).
set -euo pipefail
cd "$(dirname "$0")/../.."
arbor="$PWD/target/release/arbor"
options="${1:-algorithm=gradient-boosting n_rounds=10 max_depth=3}"
work="$(mktemp -d)"; echo "logs: $work"
trap 'kill $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
sql="CREATE EXTERNAL TABLE d STORED AS PARQUET LOCATION '$PWD/data/diamonds_reg_train.parquet';
SELECT octet_length(forest_info(train_forest(label, carat, cut, color, clarity, depth, \"table\", x, y, z,
  '$options'))) AS info FROM d;"
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

port=50650
"$arbor" cluster scheduler --bind-host 127.0.0.1 --external-host 127.0.0.1 --bind-port $port >"$work/scheduler.log" 2>&1 &
"$arbor" cluster executor --scheduler-host 127.0.0.1 --scheduler-port $port --bind-host 127.0.0.1 \
    --external-host 127.0.0.1 --bind-port $((port + 1)) --bind-grpc-port $((port + 2)) \
    --work-dir "$work" --vcores 1 >"$work/executor.log" 2>&1 &
sleep 3
single=$(seconds "$arbor" sql --format csv -c "$sql")
cluster=$(seconds "$arbor" sql --cluster "df://127.0.0.1:$port" --format csv -c "$sql")
jobs=$(grep -c "Job finished successfully" "$work/scheduler.log")
echo "options: $options"
echo "one process: $single s; one-executor cluster: $cluster s; jobs the scheduler finished: $jobs"
echo "per job over one process: $(echo "scale=3; ($cluster - $single) / $jobs" | bc) s"
