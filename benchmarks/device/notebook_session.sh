#!/usr/bin/env bash
# notebook_session.sh — execute notebooks in place on the GPU machine (notebooks/execute.py:
# the committed scale, outputs kept), so that their GPU branches run on a real GPU; the
# executed notebooks are copied to $OUT.
#
# Usage (repo root, on the GPU machine):  NOTEBOOKS="lambda_and_devices" bash benchmarks/device/notebook_session.sh
# The device image has neither dask/distributed (.whl/, as in gpu_session.sh) nor Jupyter:
# carry nbclient, ipykernel and matplotlib as wheels for its Python in .whl-nb/
#   pip download nbclient ipykernel matplotlib nbformat --python-version 3.12 \
#       --only-binary=:all: --platform manylinux_2_28_x86_64 -d .whl-nb
# (less numpy, psutil, tornado, packaging and typing_extensions, which the image or .whl/ has).
# Environment: OUT (./out), PYTHON (python3), NOTEBOOKS (every notebook), SECONDS_LEFT (570).
set -u -o pipefail
OUT=${OUT:-./out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
unset NUMBA_ENABLE_CUDASIM
for pair in ".whl:/tmp/site" ".whl-nb:/tmp/nbsite"; do
  wheels=${pair%%:*} site=${pair##*:}
  if ls "$wheels"/*.whl >/dev/null 2>&1 && [ ! -d "$site/.installed" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$wheels"/*.whl || exit 1
    mkdir -p "$site/.installed"
  fi
done
PYTHON="$PY" bash "$(dirname "$0")/numpy_shim.sh" /tmp/shim || exit 1
export PYTHONPATH="/tmp/shim:/tmp/site:/tmp/nbsite:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export PATH="/tmp/nbsite/bin:$PATH"
# shellcheck disable=SC2086
timeout "${SECONDS_LEFT:-570}" "$PY" notebooks/execute.py ${NOTEBOOKS:-} 2>&1 | tee "$OUT/notebooks.log"
cp notebooks/*.ipynb "$OUT/"
