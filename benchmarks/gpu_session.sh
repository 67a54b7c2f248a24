#!/usr/bin/env bash
# gpu_session.sh — one device-machine session for issue 3: the whole test suite on a real
# GPU, the λ crossover (benchmarks/lambda_crossover.py) and the strategy table
# (benchmarks/gpu_strategies.py), logs and CSVs written under $OUT.
#
# Usage (repo root, on the GPU machine):  STEPS="env tests lambda strategies" bash benchmarks/gpu_session.sh
# Steps (run in the order given):
#   env         GPU, driver, versions, launch config                      -> $OUT/env.log
#   tests       python -m pytest -x -q (no simulator; PYTEST_FLAGS replaces "-x -q") -> $OUT/tests.log
#   overhead    level_overhead.py (OVERHEAD_ARGS)      -> $OUT/overhead.log
#   timeline    search_timeline.py (TIMELINE_ARGS; several runs separated by ";") -> $OUT/timeline.log
#   profile     gpu_step_profile.py (PROFILE_ARGS)     -> $OUT/profile.log
#   onetask     gpu_one_task_profile.py (ONETASK_ARGS; several runs separated by ";") -> $OUT/onetask.log
#   memory      host_memory_costs.py (pageable/pinned copies, first touch) -> $OUT/memory.log
#   lambda      lambda_crossover.py (LAMBDA_ARGS)      -> $OUT/lambda.log, $OUT/lambda_crossover.csv
#   strategies  gpu_strategies.py (STRATEGY_ARGS)      -> $OUT/strategies.log, $OUT/gpu_strategies.csv
#   first       first_search.py (FIRST_ARGS): the first search of a fresh process against
#               the steady ones                                           -> $OUT/first.log
#   rmm         tests/test_rmm_gpu.py with rmm installed from .whl-rmm/ (rmm-cu12 and its
#               dependencies: `pip download rmm-cu12 -d .whl-rmm`, carried like .whl/; kept out
#               of /tmp/site so that the other steps keep numba's own allocator) -> $OUT/rmm.log
#   daskcuda    tests/test_dask_cuda_gpu.py on a real dask-cuda LocalCUDACluster, with dask-cuda
#               and its pure-Python dependencies from .whl/cuda/ (`pip download --no-deps
#               dask-cuda nvidia-ml-py click`, and cuda-core for cp312 when the image lacks it),
#               kept out of /tmp/site like rmm's                          -> $OUT/daskcuda.log
#   wall        gpu_user_wall.py (WALL_ARGS): the plain GPU loop (plain_gpu_loop.py, CuPy) and
#               taskbfs timed by the user's stopwatch in one process -> $OUT/wall.log, $OUT/gpu_user_wall.csv
# Environment: OUT (default ./out), PYTHON (python3), SESSION_SECONDS (the time the whole
# session may take, 570: each step's timeout is what is left of it, and gpu_strategies.py
# starts no new T in its last 60 s), STRATEGY_LAM=crossover (pass the λ that the lambda
# step just measured to gpu_strategies.py).
#
# The device image has no dask/distributed: carry them as wheels in .whl/ (see the device
# tool's README) — they are installed into /tmp/site here. Its numpy (2.5) lacks aliases that
# numba-cuda 0.30 overloads (np.row_stack): a sitecustomize.py on PYTHONPATH gives each missing
# name a stand-in in every Python process (pytest's subprocesses too), as in
# benchmarks/gpu_device_check.sh.
set -u -o pipefail
START=$SECONDS
left() { echo $(( ${SESSION_SECONDS:-570} - (SECONDS - START) )); }
OUT=${OUT:-./out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
STEPS=${STEPS:-env tests lambda strategies}
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0

if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/distributed ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
PYTHON="$PY" bash benchmarks/numpy_shim.sh /tmp/shim || exit 1
export PYTHONPATH="/tmp/shim:/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"

for step in $STEPS; do
  case $step in
  env)
    {
      echo "== $(date -u +%FT%TZ) $(hostname), $(nproc) cores"
      nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv || true
      cat /tmp/shim/sitecustomize.py
      "$PY" -c "
import dask, distributed, numba, numpy, scipy, pandas
from numba import cuda
print('python', __import__('sys').version.split()[0], 'dask', dask.__version__, 'distributed', distributed.__version__,
      'numba', numba.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'pandas', pandas.__version__)
import numba_cuda; print('numba-cuda', numba_cuda.__version__)
from taskbfs.kernels.gpu import launch_config; print(launch_config())
from taskbfs.runtime.cluster import detect_gpus; print('detect_gpus', detect_gpus())
"
    } 2>&1 | tee "$OUT/env.log"
    ;;
  tests)
    timeout "$(left)" "$PY" -m pytest ${PYTEST_FLAGS:--x -q} -p no:cacheprovider --durations=15 \
      2>&1 | tee "$OUT/tests.log"
    echo "tests exit status: ${PIPESTATUS[0]}" | tee -a "$OUT/tests.log"
    ;;
  overhead)
    timeout "$(left)" "$PY" benchmarks/level_overhead.py ${OVERHEAD_ARGS:-} 2>&1 | tee -a "$OUT/overhead.log"
    ;;
  timeline)
    IFS=';' read -ra RUNS <<< "${TIMELINE_ARGS:---scale 24 --tasks 1 --strategy gpu --direction top-down}"
    for run_args in "${RUNS[@]}"; do
      timeout "$(left)" "$PY" benchmarks/search_timeline.py $run_args 2>&1 | tee -a "$OUT/timeline.log"
    done
    ;;
  onetask)
    IFS=';' read -ra RUNS <<< "${ONETASK_ARGS:---scale 24 --direction top-down}"
    for run_args in "${RUNS[@]}"; do
      timeout "$(left)" "$PY" benchmarks/gpu_one_task_profile.py $run_args 2>&1 | tee -a "$OUT/onetask.log"
    done
    ;;
  memory)
    timeout "$(left)" "$PY" benchmarks/host_memory_costs.py --threads "$(nproc)" 2>&1 | tee "$OUT/memory.log"
    ;;
  profile)
    timeout "$(left)" "$PY" benchmarks/gpu_step_profile.py ${PROFILE_ARGS:-} 2>&1 | tee -a "$OUT/profile.log"
    ;;
  lambda)
    timeout "$(left)" "$PY" benchmarks/lambda_crossover.py --out "$OUT/lambda_crossover.csv" ${LAMBDA_ARGS:-} \
      2>&1 | tee "$OUT/lambda.log"
    ;;
  strategies)
    LAM_ARG=""
    if [ "${STRATEGY_LAM:-}" = crossover ] && grep -q "(lambda = " "$OUT/lambda.log" 2>/dev/null; then
      LAM_ARG="--lam $(sed -n 's/.*(lambda = \([0-9]*\)).*/\1/p' "$OUT/lambda.log")"
    fi
    timeout "$(left)" "$PY" benchmarks/gpu_strategies.py --out "$OUT/gpu_strategies.csv" \
      --deadline "$(( $(left) - 60 ))" $LAM_ARG ${STRATEGY_ARGS:-} 2>&1 | tee "$OUT/strategies.log"
    ;;
  wall)
    timeout "$(left)" "$PY" benchmarks/gpu_user_wall.py --csv "$OUT/gpu_user_wall.csv" ${WALL_ARGS:-} \
      2>&1 | tee "$OUT/wall.log"
    ;;
  rmm)
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/rmmsite .whl-rmm/*.whl 2>&1 | tee "$OUT/rmm.log"
    PYTHONPATH="/tmp/rmmsite:$PYTHONPATH" timeout "$(left)" "$PY" -m pytest ${PYTEST_FLAGS:--o addopts= -q} \
      -p no:cacheprovider -rs tests/test_rmm_gpu.py 2>&1 | tee -a "$OUT/rmm.log"
    ;;
  daskcuda)
    wheels=(.whl/cuda/*.whl)
    if "$PY" -c "import cuda.core" 2>/dev/null; then  # the image's own cuda-core, as numba-cuda's
      wheels=($(ls .whl/cuda/*.whl | grep -v cuda_core))
    fi
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/cudasite "${wheels[@]}" 2>&1 | tee "$OUT/daskcuda.log"
    PYTHONPATH="/tmp/cudasite:$PYTHONPATH" timeout "$(left)" "$PY" -m pytest ${PYTEST_FLAGS:--o addopts= -q} \
      -p no:cacheprovider -rs tests/test_dask_cuda_gpu.py 2>&1 | tee -a "$OUT/daskcuda.log"
    ;;
  first)
    timeout "$(left)" "$PY" benchmarks/first_search.py ${FIRST_ARGS:---scale 22 --strategies cpu hybrid gpu} \
      2>&1 | tee "$OUT/first.log"
    ;;
  *) echo "unknown step $step" ;;
  esac
done
