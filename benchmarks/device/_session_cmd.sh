#!/usr/bin/env bash
STEPS=env bash benchmarks/device/gpu_session.sh >/dev/null 2>&1
export PYTHONPATH=/tmp/shim:/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
timeout 60 python3 -m pytest -q -x -n 0 -p no:cacheprovider tests/test_distributed_gpu.py -k lost_gpu_owner 2>&1 | tail -3
