#!/usr/bin/env bash
# gpu_overhead_variants.sh — what drives the runtime's per-level cost on the device machine's
# host: level_overhead.py under several settings, one after another (logs under $OUT).
#   default   hybrid (the comb's one-vertex frontiers run on the CPU worker)
#   gpu       strategy gpu: every step on the GPU worker, the barrier on the CPU worker
#   noprof    distributed's worker profiler off
#   switch1   Python's GIL switch interval 1 ms instead of 5
#   threads4  a CPU worker of 4 threads instead of one per core
# Usage (repo root, on the GPU machine): OUT=... bash benchmarks/gpu_overhead_variants.sh
set -u
OUT=${OUT:-./out}
ARGS=${VARIANT_ARGS:---tasks 1 4 16 --length 200}
run() {
  local name=$1; shift
  echo "== variant $name" | tee -a "$OUT/overhead.log"
  env "$@" STEPS=overhead OVERHEAD_ARGS="$ARGS ${EXTRA:-}" OUT="$OUT" bash benchmarks/gpu_session.sh >/dev/null 2>&1
}
STEPS=env OUT="$OUT" bash benchmarks/gpu_session.sh >/dev/null 2>&1
run default
EXTRA="--strategy gpu" run gpu
run noprof DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False
EXTRA="--switch-interval 1" run switch1
EXTRA="--threads 4" run threads4
cat "$OUT/overhead.log"
