#!/usr/bin/env bash
# gpu_session.sh — run tests and benchmark questions on a GPU machine whose Python has no
# dask (the lent device image): logs and CSVs under $OUT.
#
# Usage (repository root, on the GPU machine):
#   STEPS="env bench" BENCH="compare.py --scale 22 24; granularity.py --scale 22" \
#       bash benchmarks/device/gpu_session.sh
#   STEPS=env bash benchmarks/device/gpu_session.sh    # set up only, then in the same shell:
#   export PYTHONPATH=/tmp/shim:/tmp/site:$PWD; python3 benchmarks/compare.py --scale 22
# Steps (run in the order given):
#   env       GPU, driver, versions                                        -> $OUT/env.log
#   tests     python -m pytest (PYTEST_FLAGS, default "-x -q"; no simulator) -> $OUT/tests.log
#   bench     each ";"-separated command of BENCH: a question script of benchmarks/ and its
#             options, its CSV written to $OUT/<script>.csv (copy it into
#             benchmarks/results/ and run `python benchmarks/report.py` at home) -> $OUT/bench.log
#   rmm       tests/test_rmm_gpu.py with rmm from .whl-rmm/ (`pip download rmm-cu12 -d
#             .whl-rmm`, carried like .whl/; kept out of /tmp/site)     -> $OUT/rmm.log
#   daskcuda  tests/test_dask_cuda_gpu.py with dask-cuda from .whl/cuda/ (`pip download
#             --no-deps dask-cuda nvidia-ml-py click`; cuda-core where the image lacks it)
#                                                                        -> $OUT/daskcuda.log
# Environment: OUT (./out), PYTHON (python3), SESSION_SECONDS (570: each step's timeout is
# what is left of it), TASKBFS_COMMIT (the commit the CSV rows name: the copy has no .git).
#
# The device image has no dask/distributed: carry them as wheels in .whl/ (the device
# tool's README); they are installed into /tmp/site here. Its numpy may lack names that
# numba-cuda overloads (np.row_stack): numpy_shim.sh writes a sitecustomize.py that gives
# each missing name a stand-in in every Python process (pytest's and Dask's subprocesses too).
set -u -o pipefail
START=$SECONDS
left() { echo $(( ${SESSION_SECONDS:-570} - (SECONDS - START) )); }
OUT=${OUT:-./out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
STEPS=${STEPS:-env bench}
HERE=$(cd "$(dirname "$0")" && pwd)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0

if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/distributed ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
PYTHON="$PY" bash "$HERE/numpy_shim.sh" /tmp/shim || exit 1
export PYTHONPATH="/tmp/shim:/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"

for step in $STEPS; do
  case $step in
  env)
    {
      echo "== $(date -u +%FT%TZ) $(hostname), $(nproc) cores"
      nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv || true
      "$PY" -c "
import dask, distributed, numba, numpy, scipy, pandas
print('python', __import__('sys').version.split()[0], 'dask', dask.__version__, 'distributed', distributed.__version__,
      'numba', numba.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'pandas', pandas.__version__)
import numba_cuda; print('numba-cuda', numba_cuda.__version__)
import taskbfs as tb; print('taskbfs', tb.__version__, tb.__file__)
"
    } 2>&1 | tee "$OUT/env.log"
    ;;
  tests)
    timeout "$(left)" "$PY" -m pytest ${PYTEST_FLAGS:--x -q} -p no:cacheprovider --durations=15 \
      2>&1 | tee "$OUT/tests.log"
    echo "tests exit status: ${PIPESTATUS[0]}" | tee -a "$OUT/tests.log"
    ;;
  bench)
    IFS=';' read -ra RUNS <<< "${BENCH:-compare.py --scale 20 22}"
    for run in "${RUNS[@]}"; do
      read -ra words <<< "$run"
      [ ${#words[@]} -gt 0 ] || continue
      script=${words[0]}
      echo "== $(date -u +%FT%TZ) benchmarks/$run" | tee -a "$OUT/bench.log"
      # shellcheck disable=SC2068
      timeout "$(left)" "$PY" "benchmarks/$script" ${words[@]:1} --csv "$OUT/${script%.py}.csv" \
        2>&1 | tee -a "$OUT/bench.log"
    done
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
  *) echo "unknown step $step" ;;
  esac
done
