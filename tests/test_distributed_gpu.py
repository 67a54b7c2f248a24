"""Several GPU workers sharing one GPU, plus a CPU worker, searching a graph built on them.

What it proves
--------------
The code path of a multi-GPU node, on a machine with one GPU or none (issue 20 item 4):
``benchmarks/harness.py``'s ``cluster(..., share=True)`` (what ``benchmarks/workers.py
--gpus G --share`` runs on) starts, as separate ``dask`` CLI processes on
127.0.0.1, a CPU worker and three GPU workers that all see GPU 0
(``CUDA_VISIBLE_DEVICES=0 dask worker --resources GPU=1``), under numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1`` in the workers only) where there is no GPU. On that cluster a
:class:`~taskbfs.DistributedGraph` (built on the workers from dask arrays, or generated
there by ``tb.kronecker``) searched with the ``gpu`` and ``hybrid`` strategies, levels
dispatched through the owner barrier and as one task:

* gives exactly scipy's distances and the single-process search's, with parents that pass
  the Graph500 rules checked range by range on the workers;
* spreads the gpu strategy's steps over more than one GPU worker, each keeping the slices
  it searched in its own device cache (counted by that worker's cache, not a shared one);
* runs hybrid's steps on both kinds of worker when λ falls among the steps' sizes;
* deals the ranges out to the GPU workers, runs every gpu step on its range's owner (no
  owner frontier crosses workers) and a CPU step elsewhere copies only the owner's
  frontier (the visited and frontier bits, the frontier vertices), not its result arrays;
* a GPU owner killed while the owners run their levels ends the search in
  ``WorkerLostError`` within seconds (no retry allowed), and the next search works.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from reference import scipy_distances
from shapes import kronecker_like, shape

import taskbfs as tb
from taskbfs.kernels.bitmap import words_for
from taskbfs.placed.graph import DistributedGraph
from taskbfs.runtime.plugin import workers_of
from taskbfs.search.device_cache import device_cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import harness  # noqa: E402  (benchmarks/harness.py)

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

GPU_WORKERS = 3
RANGES = 8
#: The workers simulate their GPU where this machine has none.
SIMULATED = harness.gpu_count() == 0

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("numba.cuda") is None,
    reason="numba.cuda is not installed (pip install numba-cuda): no simulator for the workers")


@pytest.fixture(scope="module")
def rt():
    """A CPU worker and GPU_WORKERS GPU workers sharing GPU 0 (simulated where there is
    no GPU)."""
    with harness.cluster(GPU_WORKERS, 1, share=True, simulate=SIMULATED) as client, \
            runtime_without_warm_up(client) as wrapped:
        yield wrapped


def _gpu_workers(rt) -> set:
    info = workers_of(rt.client)
    return {a for a, w in info.items() if w.get("resources", {}).get("GPU", 0) > 0}


def _cache_slices(rt) -> dict:
    """Per GPU worker, the slices its own device cache holds and has uploaded."""
    stats = rt.client.run(lambda dask_worker: device_cache(dask_worker).stats(),
                          workers=sorted(_gpu_workers(rt)))
    return {a: (s["slices"], s["misses"]) for a, s in stats.items()}


def test_gpu_workers_share_one_gpu(rt):
    assert harness.resources_of(rt.client) == {
        "cpu": {"CPU": 1.0}, **{f"gpu-{i}": {"GPU": 1.0} for i in range(GPU_WORKERS)}}
    seen = rt.client.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"),
                                  os.environ.get("NUMBA_ENABLE_CUDASIM")))
    # the first GPU this process may use, as the host numbers it (GPU 0 without a list)
    first = (os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip() or "0")
    simulated = "1" if SIMULATED else None
    assert sorted(seen.values()) == [("", simulated)] + [(first, simulated)] * GPU_WORKERS


def _from_shape(s, rt):
    chunk = max(1, s.src.size // 3)
    return DistributedGraph.from_dask(da.from_array(s.src, chunks=chunk),
                                      da.from_array(s.dst, chunks=chunk), runtime=rt,
                                      num_vertices=s.num_vertices, directed=s.directed,
                                      ranges=RANGES)


#: Every GPU step here runs in the simulator (a Python thread per CUDA thread): the
#: Kronecker-like shape at scale 8 (scale 10 took most of this file's time).
SHAPES = [kronecker_like(scale=8, edgefactor=8, seed=3), shape("directed_dag")]


@pytest.mark.parametrize("s", SHAPES, ids=lambda s: s.name)
def test_gpu_and_hybrid_match_scipy_and_one_process(rt, runtime, s):
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    dg = _from_shape(s, rt)
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    here = tb.bfs(g, source, tasks=RANGES, runtime=runtime)
    np.testing.assert_array_equal(here.distances, expected)
    for strategy, dispatch in [("gpu", "tasks"), ("hybrid", "tasks"), ("gpu", "auto")]:
        r = tb.bfs(dg, source, tasks=RANGES, strategy=strategy, dispatch=dispatch, runtime=rt)
        np.testing.assert_array_equal(r.distances, expected, err_msg=f"{strategy} {dispatch}")
        assert r.traversed_edges == here.traversed_edges
        tb.validate(dg, source, r.parents, levels=r.distances)  # on the workers
        if strategy == "gpu":
            assert set(r.trace["device"]) == {"cuda"}
        if dispatch == "auto":  # the owners kept the state on their GPUs: bitmaps crossed
            owners = r.exchange["owners"].to_numpy()
            np.testing.assert_array_equal(r.exchange["bitmap_remote_bytes"],
                                          owners * (owners - 1) * 8 * words_for(s.num_vertices))


def test_steps_spread_over_gpu_workers_each_with_its_own_cache(rt):
    dg = tb.kronecker(8, 16, seed=3, runtime=rt, ranges=RANGES)
    g = dg.gather()
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    before = _cache_slices(rt)
    r = tb.bfs(dg, source, tasks=RANGES, strategy="gpu", dispatch="tasks", runtime=rt)
    np.testing.assert_array_equal(r.distances, expected)
    tb.validate(dg, source, r.parents, levels=r.distances)
    ran = set(r.trace["worker"])
    assert ran <= _gpu_workers(rt) and len(ran) >= 2, ran
    after = _cache_slices(rt)
    for worker in ran:  # each GPU worker uploaded into, and holds, its own cache
        assert after[worker][1] > before[worker][1] or after[worker][0] > 0, (worker, after)
        assert after[worker][0] > 0, (worker, after)
    # hybrid with λ among the steps' sizes: the small steps on the CPU worker, the rest on GPUs
    lam = float(np.median(r.trace["size"]))
    mixed = tb.bfs(dg, source, tasks=RANGES, strategy="hybrid", lam=lam, dispatch="tasks",
                   runtime=rt)
    np.testing.assert_array_equal(mixed.distances, expected)
    tb.validate(dg, source, mixed.parents, levels=mixed.distances)
    assert set(mixed.trace["device"]) == {"smp", "cuda"}
    small = mixed.trace[mixed.trace["size"] <= lam]
    assert (small["device"] == "smp").all()


def test_ranges_live_on_gpu_workers_and_steps_stay_with_their_owner(rt):
    dg = tb.kronecker(8, 16, seed=5, runtime=rt, ranges=RANGES)
    gpus = _gpu_workers(rt)
    who = rt.client.who_has(dg.slices)
    holder = [next(iter(who[f.key])) for f in dg.slices]
    assert set(holder) == gpus, holder  # dealt out to every GPU worker, none to the CPU one
    g = dg.gather()
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    r = tb.bfs(dg, source, tasks=RANGES, strategy="gpu", dispatch="tasks", runtime=rt)
    np.testing.assert_array_equal(r.distances, expected)
    for task, worker in zip(r.trace["task"], r.trace["worker"], strict=True):
        assert worker == holder[task], (task, worker, holder[task])
    assert r.exchange["frontier_remote_bytes"].sum() == 0
    # every step on the CPU worker: each reads its owner's frontier (two bitmaps, every
    # range's bounds and owner, and at most the level's frontier vertices), never the
    # owner's distances and parents
    cpu = tb.bfs(dg, source, tasks=RANGES, strategy="cpu", dispatch="tasks", runtime=rt)
    np.testing.assert_array_equal(cpu.distances, expected)
    bitmaps = 2 * 8 * -(-g.num_vertices // 64)
    ranges = 8 * (2 * RANGES + 1)
    for row in cpu.exchange.itertuples():
        steps = int((cpu.trace["level"] == row.level).sum())
        frontier = int((expected == row.level).sum())
        assert 0 < row.frontier_remote_bytes <= steps * (bitmaps + ranges + 8 * frontier), row


def test_ranges_cut_for_a_search_stay_on_one_gpu_worker_each(rt):
    """A search with other ranges than the built ones cuts its slices on the GPU workers
    and uploads each into the device of the worker that holds it only: no slice is copied
    to another worker (a copy that Dask's memory manager may keep instead of the owner's,
    moving ranges together onto one worker)."""
    dg = tb.kronecker(9, 16, seed=6, runtime=rt, ranges=RANGES)
    g = dg.gather()
    source = int(np.argmax(g.degrees()))
    r = tb.bfs(dg, source, tasks=GPU_WORKERS, strategy="gpu", dispatch="tasks", runtime=rt)
    np.testing.assert_array_equal(r.distances, scipy_distances(g, source))
    placed = dg.place(rt, GPU_WORKERS, "edges", False)
    held = rt.client.who_has(placed.slices)
    assert all(len(held[f.key]) == 1 for f in placed.slices), held
    assert {next(iter(held[f.key])) for f in placed.slices} == _gpu_workers(rt), held


def test_a_client_that_is_not_the_default_places_a_graph_on_several_gpu_workers(rt):
    """A process whose only client was made with ``set_as_default=False`` (so Dask has no
    default client) searches an in-client graph on several GPU workers: placing it waits
    for the slices through that client (``distributed.wait`` alone asks for a default one:
    "No clients found", seen on a machine of two GPUs)."""
    code = (
        "import sys, numpy as np, taskbfs as tb\n"
        "from distributed import Client\n"
        "from scipy.sparse.csgraph import shortest_path\n"
        "g = tb.kronecker(7, edgefactor=8, seed=3)\n"
        "with Client(sys.argv[1], set_as_default=False) as c, tb.Runtime(c) as rt:\n"
        "    r = tb.bfs(g, 0, tasks=4, strategy='gpu', dispatch='tasks', runtime=rt)\n"
        "    assert len(set(r.trace['worker'])) > 1, set(r.trace['worker'])\n"
        "d = shortest_path(g.to_scipy(), unweighted=True, indices=0)\n"
        "expected = np.where(np.isinf(d), -1, d).astype(np.int64)\n"
        "assert (r.distances == expected).all()\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])))
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the client needs no GPU; its workers simulate one
    out = subprocess.run([sys.executable, "-c", code, rt.client.scheduler.address], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1:] == ["ok"]


def test_gpu_owners_run_their_levels_on_their_gpus(rt):
    """Owner levels on GPU workers: each owner keeps its ranges' state on its GPU for the
    whole search and the owners trade each level's found vertices as bitmaps; the result is
    scipy's, with parents valid by the Graph500 rules (checked on the workers), and the
    same with the levels dispatched; a level's GPU steps copy back only the counts, and
    hybrid's CPU steps on the owners' threads reach the same distances."""
    dg = tb.kronecker(10, 16, seed=5, runtime=rt, ranges=RANGES)
    g = dg.gather()
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    r = tb.bfs(dg, source, tasks=RANGES, strategy="gpu", dispatch="auto", runtime=rt)
    np.testing.assert_array_equal(r.distances, expected)
    tb.validate(dg, source, r.parents, levels=r.distances)
    host = tb.bfs(dg, source, tasks=RANGES, strategy="gpu", dispatch="tasks", runtime=rt)
    np.testing.assert_array_equal(host.distances, expected)
    # a graph the client holds, placed on the GPU workers: the owners' results gathered
    here = tb.bfs(g, source, tasks=RANGES, strategy="gpu", dispatch="auto", runtime=rt)
    np.testing.assert_array_equal(here.distances, expected)
    tb.validate(g, source, here.parents)
    assert len(set(here.trace["worker"])) > 1
    trace = r.trace
    assert set(trace["device"]) == {"cuda"}
    bottom_up = trace[trace["direction"] == "bottom-up"]
    assert len(bottom_up) and (r.levels["direction"] == "top-down").any()
    # per level, each owner's first GPU step reports the batch: its counts read back
    # (3 per range and a row of 4, int64), no pairs; every owner sends the others its bitmap
    ran = trace[trace["d2h_bytes"] > 0]
    assert len(ran) and (ran["d2h_bytes"] == 8 * (3 * RANGES + 4)).all()
    owners = r.exchange["owners"].to_numpy()
    assert (owners > 1).all()
    # the counts the owners summed: each level's frontier is the vertices at its distance
    at_distance = np.bincount(expected[expected >= 0])
    np.testing.assert_array_equal(r.levels["frontier_size"], at_distance[: len(r.levels)])
    np.testing.assert_array_equal(r.exchange["bitmap_remote_bytes"],
                                  owners * (owners - 1) * 8 * words_for(g.num_vertices))
    # hybrid: the small steps on the owners' CPUs, their accepted pairs sent to the GPUs
    sizes = np.sort(r.trace["size"].to_numpy())
    mixed = tb.bfs(dg, source, tasks=RANGES, strategy="hybrid", lam=int(np.median(sizes)),
                   dispatch="auto", runtime=rt)
    assert set(mixed.trace["device"]) == {"smp", "cuda"}
    np.testing.assert_array_equal(mixed.distances, expected)
    tb.validate(dg, source, mixed.parents, levels=mixed.distances)


def test_one_gpu_owner_of_several_gpu_workers_keeps_the_state_on_its_gpu(rt):
    """One range (T = 1) on a cluster of several GPU workers: its one owner runs the levels
    with the state on its GPU (no collective partner); the counts it makes each level are
    the distances' histogram and it reads back only them."""
    g = tb.kronecker(9, 8, seed=2)
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    r = tb.bfs(g, source, tasks=1, strategy="gpu", runtime=rt)
    np.testing.assert_array_equal(r.distances, expected)
    tb.validate(g, source, r.parents)
    assert (r.exchange["owners"] == 1).all()
    np.testing.assert_array_equal(r.levels["frontier_size"],
                                  np.bincount(expected[expected >= 0])[: len(r.levels)])
    assert (r.trace["d2h_bytes"] == 8 * 4).all()  # one counts row a level, no pairs


#: Levels of the path the lost-owner test searches; the kill comes at KILL_LEVEL (on a
#: real GPU the owners run ahead of the client's progress: a longer path).
PATH_LEVELS, KILL_LEVEL = (30 if SIMULATED else 60), 5


@pytest.mark.filterwarnings("ignore:the trace has no record:RuntimeWarning")  # the lost worker's
def test_a_lost_gpu_owner_is_worker_lost_and_the_next_search_works(setting):
    """A GPU owner SIGKILLed while the owners run their levels (``dispatch="auto"``, two
    GPU workers of their own cluster, a path built on them; on a machine with two GPUs,
    one each, so that the owners trade over NCCL): with no retry allowed the
    search ends in ``WorkerLostError`` naming it, within seconds of the kill, and no owner
    task is left waiting; the next search of the same graph (the lost ranges built again by
    Dask on the workers left) gives scipy's distances."""
    import signal
    import time

    from taskbfs.errors import WorkerLostError

    n = PATH_LEVELS
    src, dst = np.arange(n - 1), np.arange(1, n)
    g = tb.Graph.from_edges(src, dst, num_vertices=n)
    expected = scipy_distances(g, 0)
    # two GPUs: the owners trade over NCCL, and the one left waiting is aborted
    with harness.cluster(2, 1, share=harness.gpu_count() < 2, simulate=SIMULATED) as client, \
            runtime_without_warm_up(client) as rt:
        dg = DistributedGraph.from_dask(da.from_array(src, chunks=n // 3),
                                        da.from_array(dst, chunks=n // 3), runtime=rt,
                                        num_vertices=n, ranges=4)
        kw = dict(tasks=4, strategy="gpu", dispatch="auto", runtime=rt, timeout=240)
        tb.bfs(dg, 0, **kw)  # the owners' code loaded
        holders = {w for ws in client.who_has(dg.slices).values() for w in ws}
        owners = sorted(holders & set(rt.gpu_workers()))
        assert len(owners) == 2  # several owners: owner levels, not one included task
        victim = owners[-1]
        pid = client.run(os.getpid, workers=[victim])[victim]
        killed = []

        def progress(summary):
            if summary.level == KILL_LEVEL and not killed:
                killed.append(time.perf_counter())
                os.kill(pid, signal.SIGKILL)

        setting("search.retries-on-worker-loss", 0)
        with pytest.raises(WorkerLostError) as lost:
            tb.bfs(dg, 0, progress=progress, **kw)
        assert killed and time.perf_counter() - killed[0] < 30
        assert lost.value.workers == [victim]
        # the owner left ends at its next round (a simulated GPU step can take seconds)
        deadline = time.monotonic() + 60
        while any(client.run(lambda dask_worker: len(dask_worker.state.long_running)).values()):
            assert time.monotonic() < deadline, "an owner task still waits for the lost one"
            time.sleep(0.1)
        setting("search.retries-on-worker-loss", 2)
        again = tb.bfs(dg, 0, **kw)
        np.testing.assert_array_equal(again.distances, expected)
        tb.validate(dg, 0, again.parents, levels=again.distances)
