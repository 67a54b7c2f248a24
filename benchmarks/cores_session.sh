#!/usr/bin/env bash
# cores_session.sh — issues 22 and 23 on the 16-core device host: the T curves (granularity.py,
# every core, dispatch auto and tasks; DISPATCH="auto" for the included curve only), the
# thread-scaling table (thread_scaling.py: the plain prange loop at 1..16 threads, taskbfs
# cpu at 2..16 worker threads, scales 21 and 23) and a 16-thread timeline of one search
# (search_timeline.py: where the call goes, level by level, then assembly and the rest).
# Usage (repo root, device machine, wheels carried in .whl/ or WHL):
#   OUT=out SCALES="21 23" bash benchmarks/cores_session.sh
# PARTS picks what runs (default all three), e.g. issue 22's included T curve alone:
#   PARTS=granularity DISPATCH=auto GRAN_TASKS="4 16 32 64 128 256" bash benchmarks/cores_session.sh
set -u -o pipefail
OUT=${OUT:-./out}
WHL=${WHL:-.whl}
mkdir -p "$OUT"
if ls "$WHL"/*.whl >/dev/null 2>&1; then
  "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHL"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
bash benchmarks/numpy_shim.sh /tmp/shim && export PYTHONPATH=/tmp/shim:$PYTHONPATH
export PYTHONUNBUFFERED=1
"${PYTHON:-python3}" -c "import os, platform, numba, numpy; print(platform.node(), os.cpu_count(), 'cores;', 'numba', numba.__version__, 'numpy', numpy.__version__)" | tee "$OUT/env.log"
date -u | tee -a "$OUT/env.log"
PARTS=${PARTS:-granularity scaling timeline}
part() { [[ " $PARTS " == *" $1 "* ]]; }
part granularity && timeout "${GRAN_SECONDS:-150}" "${PYTHON:-python3}" benchmarks/granularity.py --scale "${GRAN_SCALE:-21}" --keys "${GRAN_KEYS:-4}" \
  --tasks ${GRAN_TASKS:-1 4 16 64 128 256} --dispatch ${DISPATCH:-auto tasks} --repeats "${GRAN_REPEATS:-2}" --group "${GRAN_GROUP:-4}" --csv "$OUT/granularity.csv" 2>&1 | tee "$OUT/granularity.log"
part scaling && timeout "${SCALING_SECONDS:-240}" "${PYTHON:-python3}" benchmarks/thread_scaling.py --scales ${SCALES:-21 23} --keys 8 \
  --plain-threads ${PLAIN_THREADS:-1 2 4 8 16} --threads 2 4 8 16 --tasks ${SCALING_TASKS:-64 128} \
  2>&1 | tee "$OUT/scaling.log"
part timeline && timeout "${TIMELINE_SECONDS:-90}" "${PYTHON:-python3}" benchmarks/search_timeline.py --scale 21 \
  --tasks ${TIMELINE_TASKS:-16 64} --keys 3 2>&1 | tee "$OUT/timeline.log"
