#!/usr/bin/env bash
# gpu_device_check.sh — the GPU task kernels on a real CUDA GPU: tests, then timings.
#
# Returns (prints, and writes under $OUT): env.log (GPU, versions), tests.log (pytest of
# tests/test_kernels_gpu.py against the real GPU, no simulator), bench.log and bench.json
# (gpu_top_down_step / gpu_bottom_up_step vs their numba CPU twins on one task covering a
# random skewed graph of 2^BENCH_SCALE vertices and BENCH_ARCS arcs: edges/s, kernel time
# against the device-memory bound, and a correctness cross-check of every scenario).
# Approach: the graph is made here with numpy (Pareto out-degrees capped at 2^20 — hubs
# like a Kronecker graph's — and uniform targets), so nothing but the kernels is timed.
# GPU times are CUDA-event medians of the step function on device-resident arrays (the
# counter read-back included); CPU times are medians of the single-threaded numba kernel.
# The bound is bytes that must cross device memory (each input once, each output once)
# over the bandwidth of a measured device-to-device copy.
# Paper: Munguía, Bader & Ayguadé, HiPC 2012 (Algorithm 3, the GPU task).
#
# Measured (2026-11-21, NVIDIA H100 80GB HBM3, numba-cuda 0.30.4, n = 2^22, 64M arcs, max degree
# 2^20; d2d copy 2.58 TB/s; medians; CPU = one numba thread, one task):
#   top-down  frontier 1/256   1.27M edges  gpu 0.64 ms  2.0 GE/s | cpu  12.2 ms 0.10 GE/s  x19
#   top-down  frontier 1/16    4.89M edges  gpu 0.85 ms  5.7 GE/s | cpu  53.9 ms 0.09 GE/s  x63
#   top-down  frontier 1/2    33.5M  edges  gpu 1.51 ms 22.2 GE/s | cpu 414   ms 0.08 GE/s  x274
#             (block 256 items 8: 1.35 ms 24.8 GE/s; dedupe=False: 1.63 ms, 8x more pairs out)
#   bottom-up visited 30% f 10%  14.1M edges  gpu 0.58 ms 24.2 GE/s | cpu 98 ms 0.14 GE/s x169
#   bottom-up visited 90% f 5%    2.5M edges  gpu 0.46 ms  5.5 GE/s | cpu 41 ms 0.06 GE/s x91
#   Every result equal to the CPU twin's. Each step costs ~0.4-0.5 ms whatever its size (8-10
#   numba launches, scan allocations, the counter read-back); the marginal top-down rate is
#   ~44 GE/s. run_top_down on the 1/16 frontier: 25 ms wall for 1.4 ms of kernels, the rest
#   is copying 32 MB of int64 pairs back (and 2.6 MB in).
#
# Usage (repo root, on the GPU machine):  bash benchmarks/gpu_device_check.sh
# Environment: OUT (default ./out), PYTHON (default python3), BENCH_SCALE (22),
# BENCH_ARCS (67108864), BENCH_REPS (10), SKIP_TESTS=1 to time only.
set -u -o pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM

# Environment shims for the GPU machine's image, applied in every Python process below:
# - it has no dask: when dask is missing, load taskbfs' subpackages without running
#   taskbfs/__init__.py (which pulls in the Dask runtime); the kernels need neither;
# - its numpy (2.5) dropped aliases that numba-cuda 0.30 still names when it builds its
#   typing registry (np.row_stack): give each missing name numba-cuda overloads a stand-in
#   (row_stack -> vstack), else the first kernel compilation fails.
export TASKBFS_STUB='import os, sys, types
try:
    import dask  # noqa: F401
except ImportError:
    _pkg = types.ModuleType("taskbfs")
    _pkg.__path__ = [os.path.abspath("taskbfs")]
    sys.modules["taskbfs"] = _pkg
import importlib.util, pathlib, re
import numpy as _np
_spec = importlib.util.find_spec("numba_cuda")
if _spec is not None and _spec.origin:
    _names = set()
    for _f in pathlib.Path(_spec.origin).parent.rglob("*.py"):
        _names.update(re.findall(r"(?:overload|infer_global|lower_builtin|lower)\(np\.([a-z_]\w*)", _f.read_text(errors="ignore")))
    _added = []
    for _n in sorted(_names):
        try:
            getattr(_np, _n)
        except AttributeError:
            setattr(_np, _n, _np.vstack if _n == "row_stack" else (lambda *a, **k: None))
            _added.append(_n)
    if _added:
        print("numpy shim for numba-cuda:", _added, file=sys.stderr)
'

{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv || true
  "$PY" -c "exec(__import__('os').environ['TASKBFS_STUB'])
import numba, numpy, scipy
from numba import cuda
print('python', sys.version.split()[0], 'numba', numba.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)
try:
    import numba_cuda; print('numba-cuda', numba_cuda.__version__)
except Exception as e: print('numba-cuda ?', e)
d = cuda.get_current_device(); print('device', getattr(d, 'name', 'simulator'), 'cc', d.compute_capability, 'SMs', getattr(d, 'MULTIPROCESSOR_COUNT', '-'))
from taskbfs.kernels.gpu import launch_config; print(launch_config())
"
} 2>&1 | tee "$OUT/env.log"

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  "$PY" -c "exec(__import__('os').environ['TASKBFS_STUB'])
import pytest
sys.exit(pytest.main(['-q', '-rs', '--tb=short', '-p', 'no:cacheprovider', '--durations=5', 'tests/test_kernels_gpu.py']))
" 2>&1 | tee "$OUT/tests.log"
  echo "tests exit status: ${PIPESTATUS[0]}" | tee -a "$OUT/tests.log"
fi

"$PY" - <<'EOF' 2>&1 | tee "$OUT/bench.log"
import os
exec(os.environ["TASKBFS_STUB"])
import json, time
import numpy as np
from numba import cuda
from taskbfs.kernels import cpu, gpu
from taskbfs.kernels.bitmap import bitmap_from_vertices

SCALE = int(os.environ.get("BENCH_SCALE", 22))
ARCS = int(os.environ.get("BENCH_ARCS", 64 << 20))
REPS = int(os.environ.get("BENCH_REPS", 10))
HUB_CAP = 1 << 20
OUT = os.environ.get("OUT", "./out")
rng = np.random.default_rng(2012)
SIMULATED = gpu.simulator_enabled()  # smoke runs of this script only; times then mean nothing
results = {"scale": SCALE, "arcs": ARCS}


def median_seconds(fn, reps, device):
    fn()  # warm-up: compilation, first touch
    times = []
    for _ in range(reps):
        if device and not SIMULATED:
            start, stop = cuda.event(), cuda.event()
            start.record(); fn(); stop.record(); stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(np.min(times)), float(np.max(times))


# ---------------------------------------------------------------- the graph
t0 = time.perf_counter()
n = 1 << SCALE
weights = rng.pareto(1.1, n) + 1.0
deg = np.minimum(np.floor(weights / weights.sum() * ARCS).astype(np.int64), HUB_CAP)
deg += np.bincount(rng.integers(0, n, ARCS - int(deg.sum())), minlength=n)
indptr = np.zeros(n + 1, dtype=np.int64)
np.cumsum(deg, out=indptr[1:])
m = int(indptr[-1])
indices = rng.integers(0, n, m, dtype=np.int32)
print(f"graph: n={n} arcs={m} max_degree={deg.max()} p50/p99 degree="
      f"{np.percentile(deg, 50):.0f}/{np.percentile(deg, 99):.0f} "
      f"vertices of degree>1024: {(deg > 1024).sum()}  ({time.perf_counter() - t0:.1f} s)")
results["max_degree"] = int(deg.max())

# ---------------------------------------------------------------- bandwidth ceiling
a = cuda.device_array(1 << 27, dtype=np.float64)  # 1 GiB
b = cuda.device_array_like(a)
copy_s, _, _ = median_seconds(lambda: b.copy_to_device(a), 5, True)
bandwidth = 2 * a.nbytes / copy_s
del a, b
print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s (read + write)")
results["bandwidth_Bps"] = bandwidth

config = gpu.launch_config()
print(config)
t0 = time.perf_counter()
d_indptr = cuda.to_device(np.ascontiguousarray(indptr, dtype=np.int64))
d_indices = cuda.to_device(indices)
cuda.synchronize()
up_s = time.perf_counter() - t0
up_bytes = d_indptr.nbytes + d_indices.nbytes
print(f"partition upload: {up_bytes / 1e6:.0f} MB in {up_s:.3f} s "
      f"({up_bytes / up_s / 1e9:.1f} GB/s host->device)")
results["upload_GBps"] = up_bytes / up_s / 1e9
_scratch = {}


def workspace(name, size, dtype):
    """Scratch buffers by name, grown on demand (what the device-data service's scratch
    gives a GPU worker; the service needs dask, which this image lacks)."""
    buf = _scratch.get(name)
    if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
        buf = _scratch[name] = cuda.device_array(max(int(size), 1), dtype=dtype)
    return buf


def same_vertices(gv, cv):
    return np.array_equal(bitmap_from_vertices(gv, n), bitmap_from_vertices(cv, n))


rows = []


def report(kind, label, edges, found, g_s, c_s, bound_s, ok, extra=""):
    row = dict(kind=kind, label=label, edges=int(edges), found=int(found), gpu_s=g_s,
               cpu_s=c_s, gpu_eps=edges / g_s, cpu_eps=edges / c_s if c_s else None,
               bound_s=bound_s, ok=bool(ok))
    rows.append(row)
    cpu_txt = f"cpu {c_s * 1e3:8.2f} ms {edges / c_s / 1e9:6.2f} GE/s  x{c_s / g_s:6.1f}" if c_s else ""
    print(f"{kind:9s} {label:28s} edges {edges:>10d} found {found:>9d} | gpu {g_s * 1e3:7.3f} ms "
          f"{edges / g_s / 1e9:6.2f} GE/s (bound {bound_s * 1e3:6.3f} ms, {bound_s / g_s:4.0%}) | "
          f"{cpu_txt} {'OK' if ok else 'MISMATCH'} {extra}")


# ---------------------------------------------------------------- top-down
mask = gpu.zeroed(workspace, "mask", (n + 63) // 64, np.uint64, config)
for label, fraction in (("frontier 1/256", 1 / 256), ("frontier 1/16", 1 / 16), ("frontier 1/2", 1 / 2)):
    chosen = rng.random(n) < fraction
    chosen[np.argmax(deg)] = True  # the biggest hub is in every frontier
    frontier = np.flatnonzero(chosen).astype(np.int64)
    visited = bitmap_from_vertices(np.flatnonzero(chosen | (rng.random(n) < 0.25)), n)
    total = int(deg[frontier].sum())
    d_frontier, d_visited = cuda.to_device(frontier), cuda.to_device(visited)
    out_v = cuda.device_array(n, dtype=np.int64)
    out_u = cuda.device_array(n, dtype=np.int64)

    def gpu_step(cfg=config, mask=mask):
        return gpu.gpu_top_down_step(d_indptr, d_indices, 0, d_frontier, d_visited, out_v, out_u,
                                     mask_bits=mask, config=cfg, workspace=workspace,
                                     total_edges=total)

    found, edges = gpu_step()
    g_s, g_min, g_max = median_seconds(gpu_step, REPS, True)
    c_v, c_u = cpu.allocate_outputs(total)
    c_s, _, _ = median_seconds(
        lambda: cpu.top_down_step(indptr, indices, 0, frontier, visited, c_v, c_u), 3, False)
    c_found, c_edges = cpu.top_down_step(indptr, indices, 0, frontier, visited, c_v, c_u)
    ok = edges == c_edges == total and same_vertices(out_v[:found].copy_to_host(), c_v[:c_found])
    bytes_min = 4 * total + 24 * frontier.size + 16 * found + visited.nbytes
    report("top-down", label, edges, found, g_s, c_s, bytes_min / bandwidth, ok,
           f"(gpu min/max {g_min * 1e3:.3f}/{g_max * 1e3:.3f} ms; cpu pairs {c_found})")
    if label == "frontier 1/2":
        for block, items in ((128, 4), (512, 4), (256, 1), (256, 8)):
            cfg = gpu.launch_config(block_size=block, items_per_thread=items)
            found_v, _ = gpu_step(cfg)
            v_s, _, _ = median_seconds(lambda cfg=cfg: gpu_step(cfg), REPS, True)
            report("td-tune", f"block {block} items {items}", edges, found_v, v_s, None,
                   bytes_min / bandwidth, found_v == found)
        big_v = cuda.device_array(total, dtype=np.int64)
        big_u = cuda.device_array(total, dtype=np.int64)
        nodedupe = lambda: gpu.gpu_top_down_step(d_indptr, d_indices, 0, d_frontier, d_visited,  # noqa: E731
                                                 big_v, big_u, dedupe=False, config=config,
                                                 workspace=workspace, total_edges=total)
        found_nd, _ = nodedupe()
        v_s, _, _ = median_seconds(nodedupe, REPS, True)
        report("td-tune", "dedupe=False", edges, found_nd, v_s, None,
               (4 * total + 16 * found_nd) / bandwidth, found_nd == c_found)
        del big_v, big_u

# ---------------------------------------------------------------- bottom-up
deferred = workspace("deferred", n, np.int64)
for label, visited_p, frontier_p in (("visited 30% frontier 10%", 0.30, 0.10),
                                      ("visited 90% frontier 5%", 0.90, 0.05)):
    is_visited = rng.random(n) < visited_p
    is_frontier = is_visited & (rng.random(n) < frontier_p / visited_p)
    visited = bitmap_from_vertices(np.flatnonzero(is_visited), n)
    fbits = bitmap_from_vertices(np.flatnonzero(is_frontier), n)
    d_visited, d_fbits = cuda.to_device(visited), cuda.to_device(fbits)
    out_v = cuda.device_array(n, dtype=np.int64)
    out_u = cuda.device_array(n, dtype=np.int64)

    def gpu_step(cfg=config):
        return gpu.gpu_bottom_up_step(d_indptr, d_indices, 0, n, d_visited, d_fbits, out_v, out_u,
                                      config=cfg, workspace=workspace)

    found, edges = gpu_step()
    g_s, g_min, g_max = median_seconds(gpu_step, REPS, True)
    c_v, c_u = cpu.allocate_outputs(n)
    c_s, _, _ = median_seconds(
        lambda: cpu.bottom_up_step(indptr, indices, 0, n, visited, fbits, c_v, c_u), 3, False)
    c_found, c_edges = cpu.bottom_up_step(indptr, indices, 0, n, visited, fbits, c_v, c_u)
    gv, gu = out_v[:found].copy_to_host(), out_u[:found].copy_to_host()
    order = np.argsort(gv)
    ok = (edges == c_edges and found == c_found and np.array_equal(gv[order], c_v[:c_found])
          and np.array_equal(gu[order], c_u[:c_found]))
    bytes_min = 8 * n + 2 * visited.nbytes + 4 * edges + 16 * found
    report("bottom-up", label, edges, found, g_s, c_s, bytes_min / bandwidth, ok,
           f"(gpu min/max {g_min * 1e3:.3f}/{g_max * 1e3:.3f} ms)")
    for limit in (8, 128):
        cfg = gpu.launch_config(bu_thread_edges=limit)
        found_v, edges_v = gpu_step(cfg)
        v_s, _, _ = median_seconds(lambda cfg=cfg: gpu_step(cfg), REPS, True)
        report("bu-tune", f"bu_thread_edges {limit}", edges_v, found_v, v_s, None,
               bytes_min / bandwidth, (found_v, edges_v) == (found, edges))

results["rows"] = rows
with open(os.path.join(OUT, "bench.json"), "w") as fh:
    json.dump(results, fh, indent=1)
print("all scenarios agree with the CPU twins" if all(r["ok"] for r in rows) else "SOME MISMATCH")
EOF
echo "bench exit status: ${PIPESTATUS[0]}" | tee -a "$OUT/bench.log"
