#!/usr/bin/env bash
# paired_wall.sh — old and new code, the user's wall around tb.bfs, in alternating processes
# on the same graphs (benchmarks/gpu_user_wall.py; graphs generated once into GRAPH_DIR).
#
# Usage (repo root, on the device machine, after `git archive OLD taskbfs | tar -x -C
# .old-taskbfs` here so that the old package travels with the working tree):
#   OUT=... ROUNDS=2 WALL_ARGS="--scales 22 24 --keys 8 --configs gpu hybrid" bash benchmarks/paired_wall.sh
# Writes $OUT/wall_{old,new}_{round}.log. Environment: OUT, ROUNDS (2), WALL_ARGS,
# GRAPH_DIR (/tmp/gcache), SESSION_SECONDS (570: no new run starts after it).
set -u -o pipefail
START=$SECONDS
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$OUT STEPS=env bash benchmarks/gpu_session.sh >/dev/null 2>&1
BASE=/tmp/shim:/tmp/site
ARGS=${WALL_ARGS:---scales 22 24 --keys 8 --configs gpu hybrid}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in old new; do
    if (( SECONDS - START > ${SESSION_SECONDS:-570} )); then
      echo "no time left for $side $round" >&2; exit 0
    fi
    tree=$PWD; [ "$side" = old ] && tree=$PWD/.old-taskbfs
    PYTHONPATH=$BASE:$tree:$PWD python3 benchmarks/gpu_user_wall.py $ARGS \
      --graph-dir "${GRAPH_DIR:-/tmp/gcache}" --validate first --csv "$OUT/wall_${side}_${round}.csv" \
      > "$OUT/wall_${side}_${round}.log" 2>&1
    tail -n 12 "$OUT/wall_${side}_${round}.log"
  done
done
