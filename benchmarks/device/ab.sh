#!/usr/bin/env bash
# ab.sh — an interleaved A/B of two versions of taskbfs on one machine: each benchmark
# command run for the old code and the new, in turn, ROUNDS times, so that drift on the
# machine favours neither (one process per run; the CSVs say which is which).
#
# Usage (repository root, after `STEPS=env bash benchmarks/device/gpu_session.sh`):
#   mkdir -p _ab_old && git archive <old commit> taskbfs | tar -x -C _ab_old   # at home
#   ROUNDS=2 bash benchmarks/device/ab.sh "granularity.py --scale 24 --tasks 1 128" \
#       "device/call_gaps.py --scale 24 --strategy hybrid"
# Each argument is a script under benchmarks/ and its options; a question script's CSV
# goes to $OUT/<script>-<old|new>-<round>.csv (the profilers print only). The old code is
# the `taskbfs` package under OLD (default ./_ab_old: untracked, so it travels with the
# working tree), put first on PYTHONPATH; the new one is this checkout's.
set -u -o pipefail
OUT=${OUT:-./out}
OLD=${OLD:-./_ab_old}
ROUNDS=${ROUNDS:-2}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
[ -d "$OLD/taskbfs" ] || { echo "no $OLD/taskbfs: git archive the old commit there" >&2; exit 2; }
base="/tmp/shim:/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
old=$(cd "$OLD" && pwd)
for round in $(seq 1 "$ROUNDS"); do
  for run in "$@"; do
    read -ra words <<< "$run"
    script=${words[0]}
    name=$(basename "${script%.py}")
    for side in old new; do
      path=$base
      [ "$side" = old ] && path="$old:$base"  # the old package before this checkout's
      csv=()
      [[ "$script" != device/* ]] && csv=(--csv "$OUT/$name-$side-$round.csv")
      echo "== round $round, $side ($(cd /tmp && PYTHONPATH=$path "$PY" -c 'import taskbfs; print(taskbfs.__file__)')): benchmarks/$run"
      # shellcheck disable=SC2068
      PYTHONPATH=$path "$PY" "benchmarks/$script" ${words[@]:1} "${csv[@]}" 2>&1 | tail -n 12
    done
  done
done
