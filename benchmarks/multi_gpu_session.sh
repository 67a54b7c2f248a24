#!/usr/bin/env bash
# multi_gpu_session.sh — issue 20 item 4 on the one-GPU device machine: 1, 2 and 4 GPU
# workers sharing GPU 0 (each its own process and device cache) plus a CPU worker, a
# Kronecker graph generated on them, gpu and hybrid searches with levels dispatched and as
# the user gets them (benchmarks/multi_gpu.py --share), log under $OUT.
#
# Usage (repo root, on the GPU machine):  bash benchmarks/multi_gpu_session.sh
# Environment: OUT (./out), PYTHON (python3), GPUS ("1 2 4"), SCALE (22), KEYS (4),
# SHARE ("--share": every GPU worker on GPU 0; set it empty on a machine of several GPUs),
# WEAK ("": set it to --weak for scale + log2(G) on G GPUs too), DISPATCH ("tasks auto"),
# STRATEGIES ("gpu hybrid"), LOG (multi_gpu_share.log), SECONDS_LEFT (the run's timeout, 570),
# TIMELINE ("": --timeline prints the last key's levels of each configuration).
# The device image lacks dask/distributed (wheels in .whl/, installed into /tmp/site) and
# numpy names numba-cuda overloads (benchmarks/numpy_shim.sh), as in gpu_session.sh.
set -u -o pipefail
OUT=${OUT:-./out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
unset NUMBA_ENABLE_CUDASIM
if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/distributed ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
PYTHON="$PY" bash benchmarks/numpy_shim.sh /tmp/shim || exit 1
export PYTHONPATH="/tmp/shim:/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# shellcheck disable=SC2086
timeout "${SECONDS_LEFT:-570}" "$PY" benchmarks/multi_gpu.py ${SHARE---share} ${WEAK:-} \
  --gpus ${GPUS:-1 2 4} --scale "${SCALE:-22}" --keys "${KEYS:-4}" \
  --strategies ${STRATEGIES:-gpu hybrid} ${TIMELINE:-} --dispatch ${DISPATCH:-tasks auto} 2>&1 \
  | tee -a "$OUT/${LOG:-multi_gpu_share.log}"
