#!/usr/bin/env bash
export TASKBFS_COMMIT=${TASKBFS_COMMIT:-unknown}
STEPS=env bash benchmarks/device/gpu_session.sh >/dev/null 2>&1
export PYTHONPATH=/tmp/shim:/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
timeout 200 python3 benchmarks/compare.py --scale 23 --strategies cpu --peers numba --keys 4 --repeats 3 --csv $OUT/compare.csv > $OUT/compare.log 2>&1
grep -v Warn $OUT/compare.log | tail -4
timeout 300 python3 benchmarks/granularity.py --scale 22 24 --strategies gpu hybrid --tasks 1 16 128 --keys 4 --repeats 3 --csv $OUT/granularity.csv > $OUT/gran.log 2>&1
grep -v Warn $OUT/gran.log | tail -14
