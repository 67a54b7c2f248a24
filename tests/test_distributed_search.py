"""Searches across worker processes with the barrier split per owner (``taskbfs.search.owners``).

What it proves
--------------
* No Dask: the owner barrier's kernel (``accept_into_range``) keeps exactly the first
  unvisited occurrence of each candidate, as a naive loop does.
* On a LocalCluster of four worker processes on 127.0.0.1: graphs built on the workers (path, star,
  disconnected, directed, Kronecker-like) searched with T >= W and T < W ranges, every
  direction, cpu and hybrid policies, give exactly scipy's distances and the
  single-process search's, with parents that pass the Graph500 rules; every worker
  owns ranges, none holds the graph (the scheduler's count of each worker's bytes stays
  under MEMORY_LIMIT, below the graph's size); the bytes the owners' barriers
  received from other workers and the bitmap shares match what docs/distributed.md
  says crosses the network.
* benchmarks/harness.py's ``cluster`` (what benchmarks/workers.py --gpus runs on) starts one
  worker per GPU pinned with ``CUDA_VISIBLE_DEVICES`` and ``GPU=1`` plus a CPU worker, as
  dask CLI processes on 127.0.0.1; run here with two simulated GPU workers, the cluster it starts has exactly
  those workers and resources.
* A worker restarted between two searches: the next search is correct (Dask computes
  the lost ranges again on the workers) or fails with a clear ``WorkerLostError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster
from reference import scipy_distances
from shapes import path, shape

import taskbfs as tb
from taskbfs.kernels.merge import accept_into_range, word_span
from taskbfs.placed.graph import DistributedGraph
from taskbfs.runtime.plugin import workers_of
from taskbfs.search import owners as bfs_owners

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import harness  # noqa: E402  (benchmarks/harness.py)

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

WORKERS = 4
#: Bytes of data a worker may hold in test_no_worker_holds_the_graph: below the CSR of its
#: Kronecker graph (2.0 MB), checked against the bytes the scheduler counts on each worker.
#: (Not Dask's memory_limit: the search refuses workers whose limit is below their own
#: process's use, ~270 MB for a Python worker, so a graph above the limit would take a
#: scale-23 graph; see the session-12 report.)
MEMORY_LIMIT = 1_500_000


# ---------------------------------------------------------------------- no Dask
def test_owner_accept_keeps_first_unvisited():
    rng = np.random.default_rng(3)
    lo, hi = 130, 390
    first, stop = word_span(lo, hi)
    words = np.zeros(stop - first, np.uint64)
    degrees = rng.integers(0, 9, hi - lo).astype(np.int64)
    distances = np.full(hi - lo, -1, np.int32)
    parents = np.full(hi - lo, -1, np.int32)
    seen = set(rng.choice(np.arange(lo, hi), 40, replace=False).tolist())
    for v in seen:
        words[(v >> 6) - first] |= np.uint64(1) << np.uint64(v & 63)
    vertices = rng.integers(lo, hi, 500).astype(np.int32)
    parent_of = rng.integers(0, 1000, 500).astype(np.int32)
    out = np.empty(500, np.int64)
    n, edges = accept_into_range(vertices, parent_of, 10, 480, lo, words, first,
                                 np.r_[0, np.cumsum(degrees)], 3,
                                 distances, parents, out, 0)
    expected, naive_parent = [], {}
    for v, p in zip(vertices[10:480].tolist(), parent_of[10:480].tolist(), strict=True):
        if v not in seen:
            seen.add(v)
            expected.append(v)
            naive_parent[v] = p
    assert out[:n].tolist() == expected
    assert edges == int(degrees[np.array(expected) - lo].sum())
    for v in expected:
        assert distances[v - lo] == 3 and parents[v - lo] == naive_parent[v]
        assert words[(v >> 6) - first] & (np.uint64(1) << np.uint64(v & 63))
    assert (distances >= 0).sum() == len(expected)


def test_reports_of_a_later_level_that_come_first_wait_for_their_turn():
    """Owners that run their levels themselves go on before the client has heard every
    owner of a level; their reports reach the client in no set order. The client keeps a
    later level's report for that level instead of dropping it (a search hung on it)."""
    from taskbfs.search.owner_state import REPORT
    from taskbfs.search.owners import OwnedSearch

    def report(level, owner):
        return {REPORT: {"level": level, "owner": owner}}

    # owner 1 runs three levels ahead; another kind of message on the same topic between
    arriving = [report(0, 1), report(1, 1), report(2, 1), {"summaries": []}, report(0, 0),
                report(1, 0), report(2, 0)]

    class Waits:
        def listen(self, watch, workers):
            return arriving.pop(0)  # an IndexError: the search would wait forever

    search = object.__new__(OwnedSearch)
    search.workers, search.states, search.waits, search._ahead = ["a", "b"], [], Waits(), {}
    for level in range(3):
        got = search._reports(level)
        assert [(r["level"], r["owner"]) for r in got] == [(level, 0), (level, 1)]
    assert arriving == [] and search._ahead == {}


# ---------------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def rt():
    """Four worker processes on 127.0.0.1."""
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as wrapped:
        yield wrapped


def _built(s, rt, ranges):
    chunk = max(1, s.src.size // 3)
    return DistributedGraph.from_dask(da.from_array(s.src, chunks=chunk),
                                      da.from_array(s.dst, chunks=chunk), runtime=rt,
                                      num_vertices=s.num_vertices, directed=s.directed,
                                      ranges=ranges)


def _graph_bytes(g: tb.Graph) -> int:
    return g.indptr.nbytes + g.indices.nbytes


def _worker_bytes(rt) -> dict:
    """Bytes of data the scheduler counts on each worker."""
    return rt.client.run_on_scheduler(
        lambda dask_scheduler: {a: ws.nbytes for a, ws in dask_scheduler.workers.items()})


@pytest.mark.parametrize("name", ["path_30", "star_2000", "components", "directed_dag",
                                  "random_directed_400_1200", "kronecker_like_10_8"])
def test_searches_match_scipy_and_one_process(rt, runtime, name):
    # a path of 30 vertices searched from its middle (15 levels, a frontier on both sides,
    # crossing all 8 ranges): each level is rounds of Dask tasks here (300 levels took 6
    # minutes)
    s = path(30) if name == "path_30" else shape(name)
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    source = s.sources[1] if name == "path_30" else s.sources[-1]
    expected = scipy_distances(g, source)
    # T >= W: every worker owns ranges; T < W: some own none (the path's levels of rounds
    # between four processes are the slowest part here: it runs the first only)
    for ranges in (8,) if name == "path_30" else (8, 3):
        dg = _built(s, rt, ranges)
        runs = [("auto", "hybrid"), ("top-down", "cpu"), ("bottom-up", "cpu")]
        for direction, strategy in runs:
            here = tb.bfs(g, source, tasks=ranges, direction=direction, strategy=strategy,
                          runtime=runtime)
            r = tb.bfs(dg, source, tasks=ranges, direction=direction, strategy=strategy,
                       runtime=rt)
            assert r.on_workers and len(r.exchange) == len(r.levels)
            np.testing.assert_array_equal(r.distances, expected)
            np.testing.assert_array_equal(r.distances, here.distances)
            tb.validate(g, source, r.parents, levels=r.distances)
            assert r.traversed_edges == here.traversed_edges
    tb.validate(dg, source, r.parents, levels=r.distances)  # range by range on the workers


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_no_worker_holds_the_graph(rt, dispatch):
    """``auto``: each owner runs the levels in one task and trades pieces and reports
    with the others (taskbfs.search.owner_levels); ``tasks``: every level is step tasks and
    owner barriers through the scheduler (taskbfs.search.owners)."""
    dg = tb.kronecker(14, edgefactor=16, seed=2, runtime=rt, ranges=8)
    g = dg.gather()
    assert _graph_bytes(g) > MEMORY_LIMIT
    owners = rt.client.who_has(dg.slices)
    assert len({w for ws in owners.values() for w in ws}) == WORKERS  # each owns ranges
    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    progress = []
    r = tb.bfs(dg, source, tasks=8, runtime=rt, progress=progress.append, dispatch=dispatch)
    held = _worker_bytes(rt)
    assert max(held.values()) < min(MEMORY_LIMIT, _graph_bytes(g)), held
    np.testing.assert_array_equal(r.distances, expected)
    tb.validate(dg, source, r.parents, levels=r.distances)
    assert [s.level for s in progress] == list(range(len(r.levels) + 1))
    assert set(r.levels["direction"]) == {"top-down", "bottom-up"}
    ex = r.exchange.set_index("level")
    assert (ex["owners"] == WORKERS).all()
    # top-down candidates go to their owners: most cross to another worker
    top_down = ex[ex["direction"] == "top-down"]
    assert top_down["pieces_remote_bytes"].sum() > top_down["pieces_local_bytes"].sum() > 0
    # bottom-up, dispatched: each owner with steps gets every other owner's share of the
    # bitmap, (W - 1) / W of ceil(n / 64) words (plus boundary words counted by both
    # neighbours); exchanged: every owner sends the others what it reached each level, as
    # ids or as its words, whichever is fewer bytes
    bottom_up = ex[ex["direction"] == "bottom-up"]
    words = 8 * -(-g.num_vertices // 64)
    for moved in bottom_up["bitmap_remote_bytes"]:
        least = (WORKERS - 1) * words if dispatch == "tasks" else 1
        assert least <= moved <= (WORKERS - 1) * (words + 8 * 8)
    # auto: every step included in its owner's one task, on the owner's worker
    assert (r.trace["included"] == (dispatch == "auto")).all()
    assert r.trace["worker"].nunique() == WORKERS
    # its discoveries are its own vertices: its one piece goes to its owner, nothing to
    # the others (unless a step ran away from its owner)
    assert ((bottom_up["frontier_remote_bytes"] > 0)
            | (bottom_up["pieces_remote_bytes"] == 0)).all()
    if dispatch == "auto":  # the slowest owner's time in each part of a level
        parts = ex[[f"{p}_seconds" for p in ("opening", "steps", "pieces", "barrier")]]
        assert (parts >= 0).all().all() and (parts["steps_seconds"] > 0).all()
        assert (ex["opening_seconds"] > 0).all()
        # the owner tasks' wait from their submission to their start: the first level's
        assert ex["queued_seconds"].iloc[0] > 0 and (ex["queued_seconds"].iloc[1:] == 0).all()
        # a bottom-up level trades no pieces: its owners only split their steps' output
        assert (bottom_up["pieces_seconds"] < top_down["pieces_seconds"].max()).all()
        # the least any owner waited for its peers: within the rounds' own time
        waited = ex["least_waited_seconds"]
        assert (waited >= 0).all()
        assert (waited <= parts["opening_seconds"] + parts["pieces_seconds"] + 1e-3).all()


def test_top_down_pieces_split_by_owner_or_sent_whole_search_alike(rt, monkeypatch):
    """A top-down level's step pieces reach their owners split (a getitem per step and
    owner) or, for a small level, whole (every owner reads all of a step's pieces): the
    same distances, valid parents, and about W times the bytes when whole."""
    s = shape("kronecker_like_10_8")
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    dg = _built(s, rt, 8)
    expected = scipy_distances(g, 0)
    moved = {}
    for limit in (0, 2**40):  # always split, always whole
        monkeypatch.setattr(bfs_owners, "WHOLE_PIECES_BYTES", limit)  # read by the client
        r = tb.bfs(dg, 0, tasks=8, direction="top-down", strategy="cpu", runtime=rt,
                   dispatch="tasks")
        np.testing.assert_array_equal(r.distances, expected)
        tb.validate(g, 0, r.parents, levels=r.distances)
        moved[limit] = int((r.exchange["pieces_remote_bytes"]
                            + r.exchange["pieces_local_bytes"]).sum())
    assert moved[2**40] > 2 * moved[0] > 0


def test_worker_restarted_between_searches(rt):
    s = shape("kronecker_like_10_8")
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    dg = _built(s, rt, 8)
    expected = scipy_distances(g, 0)
    np.testing.assert_array_equal(tb.bfs(dg, 0, tasks=8, runtime=rt).distances, expected)
    victim = sorted(workers_of(rt.client))[1]
    rt.client.restart_workers([victim])
    try:
        r = tb.bfs(dg, 0, tasks=8, runtime=rt, timeout=120)
    except tb.WorkerLostError as exc:  # a clear error is allowed, naming the loss
        assert "left the cluster" in str(exc) or "lost data" in str(exc)
        r = tb.bfs(dg, 0, tasks=8, runtime=rt, timeout=120)
    np.testing.assert_array_equal(r.distances, expected)
    tb.validate(g, 0, r.parents, levels=r.distances)


def test_multi_gpu_script_starts_one_worker_per_gpu(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    commands = harness.worker_commands("sched.json", gpus=3, cpu_threads=5, share=False,
                                         simulate=True)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in commands] == ["", "0", "1", "2"]
    assert all(env["NUMBA_ENABLE_CUDASIM"] == "1" for _, env in commands)
    for argv, _ in commands:
        assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert commands[0][0][-2:] == ["--resources", "CPU=5"]
    assert all(argv[-4:] == ["--nthreads", "1", "--resources", "GPU=1"] for argv, _ in commands[1:])
    shared = harness.worker_commands("s", gpus=2, cpu_threads=1, share=True, simulate=False)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in shared] == ["", "0", "0"]
    # the GPUs the script was given, as the host numbers them
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    given = harness.worker_commands("s", gpus=2, cpu_threads=1, share=False, simulate=False)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in given] == ["", "3", "5"]
    shared = harness.worker_commands("s", gpus=2, cpu_threads=1, share=True, simulate=False)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in shared] == ["", "3", "3"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with harness.cluster(2, 1, share=False, simulate=True) as client:
        assert harness.resources_of(client) == {"cpu": {"CPU": 1.0}, "gpu-0": {"GPU": 1.0},
                                                  "gpu-1": {"GPU": 1.0}}
        assert all(w["host"] == "127.0.0.1"
                   for w in workers_of(client).values())


def test_sources_depth_limit_reverse_and_tables_on_the_workers(rt):
    """Issue 46's options on a graph built on four worker processes (each owner's search
    task trading pieces, or levels as tasks): several sources, a depth limit, reverse
    traversal (the reversed graph built on the workers once), and the result as a dask
    DataFrame made where its pieces are; against scipy."""
    from test_bfs_options import check_forest, scipy_levels

    s = shape("random_directed_400_1200")
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    dg = _built(s, rt, 6)
    sources = [0, 200, 399, 0]
    for dispatch, kwargs in (("auto", {}), ("auto", {"reverse": True}),
                             ("tasks", {"depth_limit": 2}),
                             ("tasks", {"reverse": True, "depth_limit": 1})):
        r = tb.bfs(dg, sources, tasks=6, runtime=rt, dispatch=dispatch, **kwargs)
        assert r.on_workers
        frame = r.to_dask_dataframe()
        expected = scipy_levels(g, sources, kwargs.get("reverse", False), kwargs.get("depth_limit"))
        np.testing.assert_array_equal(r.distances, expected)
        check_forest(g, sources, r, kwargs.get("reverse", False))
        table = rt.client.compute(frame).result()
        np.testing.assert_array_equal(table["vertex"], np.flatnonzero(expected >= 0))
        np.testing.assert_array_equal(table["distance"], expected[expected >= 0])
    assert dg.reversed() is dg.reversed()
