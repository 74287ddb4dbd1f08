#!/usr/bin/env bash
# SHA-256 of the models and outputs a set of trainings gives, for refactors
# that must not change a byte: run it with the `arbor` binary built before the
# change and after it, and diff the two listings.
#
#   scripts/fingerprint.sh path/to/arbor > before.txt
#   scripts/fingerprint.sh path/to/arbor > after.txt && diff before.txt after.txt
#
# Trains both algorithms on flights (categorical features, missing values),
# diamonds (regression) and digits (10 classes), with the forest options that
# take other paths (random splitter, best-first, exact splits, out-of-bag and
# permutation importance) and boosting's early stopping; then predicts
# (classes, probabilities, contributions), inspects (--json) and runs the SQL
# quickstart. Every output of every step is hashed.
set -euo pipefail
arbor="$(realpath "${1:?usage: scripts/fingerprint.sh ARBOR_BINARY}")"
cd "$(dirname "$0")/.."
data="$PWD/data"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# name | data set | options
runs=(
  "flights_rf|flights_cls|--set n_trees=8 --set max_depth=12 --set seed=7"
  "flights_rf_oob|flights_cls|--set n_trees=6 --set max_depth=10 --set oob=true --set importance=mda_scaled --set seed=3"
  "flights_et|flights_cls|--set n_trees=6 --set splitter=random --set seed=5"
  "flights_best_first|flights_cls|--set n_trees=4 --set max_leaf_nodes=64 --set seed=2"
  "flights_gb|flights_cls|--algorithm gradient-boosting --set n_rounds=20"
  "flights_gb_es|flights_cls|--algorithm gradient-boosting --set n_rounds=40 --set early_stopping_rounds=5 --set validation_fraction=0.2"
  "diamonds_rf|diamonds_reg|--set n_trees=8 --set seed=11"
  "diamonds_rf_exact|diamonds_reg|--set n_trees=3 --set split_method=exact --set max_depth=8"
  "diamonds_gb|diamonds_reg|--algorithm gradient-boosting --set n_rounds=30"
  "digits_rf|digits_cls|--set n_trees=10 --set criterion=entropy"
  "digits_gb|digits_cls|--algorithm gradient-boosting --set n_rounds=10"
)

for run in "${runs[@]}"; do
  IFS='|' read -r name set options <<<"$run"
  model="$out/$name.arbor"
  # shellcheck disable=SC2086
  "$arbor" train --input "$data/${set}_train.parquet" --label label --output "$model" $options 2>/dev/null
  echo "$name model $(sha256sum <"$model" | cut -c1-64)"
  proba=(); [[ "$set" == *_cls ]] && proba=(--proba)
  "$arbor" predict --model "$model" --input "$data/${set}_test.parquet" --output "$out/$name.pred.parquet" "${proba[@]}" 2>/dev/null
  echo "$name predict $(sha256sum <"$out/$name.pred.parquet" | cut -c1-64)"
  "$arbor" inspect --model "$model" --json >"$out/$name.json"
  echo "$name inspect $(sha256sum <"$out/$name.json" | cut -c1-64)"
done
for name in flights_gb diamonds_rf digits_gb; do
  set=$(printf '%s\n' "${runs[@]}" | grep "^$name|" | cut -d'|' -f2)
  "$arbor" predict --model "$out/$name.arbor" --input "$data/${set}_test.parquet" --output "$out/$name.contrib.parquet" --contributions 2>/dev/null
  echo "$name contributions $(sha256sum <"$out/$name.contrib.parquet" | cut -c1-64)"
done
echo "quickstart $("$arbor" sql sql/quickstart.sql --format csv 2>/dev/null | sha256sum | cut -c1-64)"
