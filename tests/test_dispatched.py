"""The dispatched level loop (``taskbfs.search.owners``) for a graph the client holds.

* Every shape of tests/shapes.py (the deep ones smaller: see ``_shapes``), searched with
  ``dispatch="tasks"`` on three worker processes whose placed slices spread over them
  (W = 3 owners), matches scipy and passes the Graph500 rules, in every direction; on one
  in-process worker (W = 1) the same loop runs with one owner (tests/test_bfs.py covers
  every shape there too).
* Per level the loop submits T' steps and W barriers, nothing else: no task cuts a
  step's frontier and none reports counts (the barriers publish them).
* The result comes home as int32 arrays below 2^31 vertices, and the trace and level
  tables keep every step's device, worker, thread, start and stop.
"""

from __future__ import annotations

import numpy as np
import pytest
from distributed import Client, LocalCluster
from reference import scipy_distances
from shapes import directed_cycle, grid, path, shapes

import taskbfs as tb

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

WORKERS = 3


@pytest.fixture(scope="module")
def spread():
    """Three worker processes on 127.0.0.1 (a graph's slices are scattered over them)."""
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        yield rt


def _shapes():
    """Every shape; the deep ones smaller, as each level is a round of Dask tasks on three
    processes here: a path of 20 levels stands for path_3000 (its frontier still walks
    through all 7 tasks and 3 owners), a directed cycle of 20 for directed_cycle_100 (from
    the middle its frontier still wraps from the last owner to the first), an 8 x 8 grid
    for grid_40x40 (auto still turns bottom-up and back, from the corner and from the
    middle, with work for all 7 steps of a level)."""
    smaller = {"path_3000": path(20), "directed_cycle_100": directed_cycle(20),
               "grid_40x40": grid(8, 8)}
    return [smaller.get(s.name, s) for s in shapes()]


@pytest.mark.parametrize("s", _shapes(), ids=lambda s: s.name)
def test_every_shape_on_several_owners(spread, s):
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    tasks = min(7, g.num_vertices)
    for source in s.sources[:2]:
        expected = scipy_distances(g, source)
        for direction in ("auto", "top-down", "bottom-up"):
            r = tb.bfs(g, source, tasks=tasks, direction=direction, strategy="cpu",
                       runtime=spread, dispatch="tasks")
            np.testing.assert_array_equal(r.distances, expected, err_msg=f"{direction} {source}")
            tb.validate(g, source, r.parents, levels=r.distances)
            assert r.distances.dtype == np.int32 and r.parents.dtype == np.int32
            assert (r.exchange["owners"] == len(_holders(spread, g, tasks))).all()
            if s.name.startswith("grid") and direction == "auto":  # the smaller grid still turns
                assert set(r.levels["direction"]) == {"top-down", "bottom-up"}


def _placed_slices(rt, g, tasks):
    from taskbfs.placed.placement import place_graph

    return place_graph(rt, g, tasks, "edges", need_transpose=False).slices


def _holders(rt, g, tasks) -> set:
    who = rt.client.who_has(_placed_slices(rt, g, tasks))
    return {w for ws in who.values() for w in ws}


def test_slices_spread_over_several_owners(spread):
    """The scatter puts a graph's slices on every worker: the loop has W = 3 owners, and
    top-down candidates cross between them."""
    s = [s for s in shapes() if s.name == "kronecker_like_10_8"][0]
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    r = tb.bfs(g, 0, tasks=6, runtime=spread, dispatch="tasks", strategy="cpu")
    assert len(_holders(spread, g, 6)) == WORKERS
    assert (r.exchange["owners"] == WORKERS).all()
    assert r.exchange["pieces_remote_bytes"].sum() > 0
    np.testing.assert_array_equal(r.distances, scipy_distances(g, 0))


@pytest.mark.parametrize("direction", ["top-down", "bottom-up", "auto"])
def test_a_level_is_its_steps_and_one_barrier_per_owner(runtime, direction):
    """One owner (the in-process worker): per level, the steps with work and one barrier;
    then the owner's state made once and its result read once."""
    s = [s for s in shapes() if s.name == "kronecker_like_10_8"][0]
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    r = tb.bfs(g, 0, tasks=4, runtime=runtime, dispatch="tasks", direction=direction,
               strategy="cpu")
    np.testing.assert_array_equal(r.distances, scipy_distances(g, 0))
    names = [p["key"].rsplit("-", 3)[0] for p in r.placements]  # task-program-id-n
    levels = len(r.levels)
    steps = int((r.levels["tasks"]).sum())
    assert names.count("bfs_step") == steps == len(r.trace)
    assert names.count("bfs_barrier") == levels
    assert names.count("bfs_init") == 1 and names.count("bfs_result") == 1
    assert len(names) == steps + levels + 2
    trace = r.trace
    for column in ("device", "worker", "thread", "start", "stop"):
        assert trace[column].notna().all(), column
    assert (trace["stop"] >= trace["start"]).all()
    assert r.levels["barrier_worker"].notna().all()


def test_accepting_spans_is_accepting_each_span_in_turn():
    """The owner barrier's kernel over several steps' spans of one range keeps exactly what
    :func:`accept_into_range` keeps span by span (first unvisited occurrence wins)."""
    from taskbfs.kernels.merge import accept_into_range, accept_spans_into_range, word_span

    rng = np.random.default_rng(8)
    lo, hi = 70, 333
    first, stop = word_span(lo, hi)
    vertices = rng.integers(lo, hi, 900).astype(np.int32)
    parents = rng.integers(0, 2000, 900).astype(np.int32)
    starts = np.array([0, 150, 150, 600], np.int64)
    stops = np.array([100, 150, 580, 900], np.int64)
    degrees = rng.integers(0, 7, hi - lo).astype(np.int64)
    runs = []
    for together in (True, False):
        words = np.zeros(stop - first, np.uint64)
        words[1] = np.uint64(0xF0F0)  # some visited already
        dist, par = np.full(hi - lo, -1, np.int32), np.full(hi - lo, -1, np.int32)
        out = np.empty(900, np.int64)
        if together:
            n, edges = accept_spans_into_range(vertices, parents, starts, stops, lo, words, first,
                                               np.r_[0, np.cumsum(degrees)], 4, dist, par, out)
        else:
            n, edges = 0, 0
            for a, b in zip(starts, stops, strict=True):
                n, e = accept_into_range(vertices, parents, int(a), int(b), lo, words, first,
                                         np.r_[0, np.cumsum(degrees)], 4, dist, par, out, n)
                edges += e
        runs.append((out[:n].tolist(), edges, dist.tolist(), par.tolist(), words.tolist()))
    assert runs[0] == runs[1] and len(runs[0][0]) > 0


def test_an_owner_barrier_on_threads_accepts_what_one_thread_does(monkeypatch):
    """The owner barrier's accept in shares on several threads (atomic visited bits)
    accepts the same vertices at the same depth with the same edges as one thread; each
    accepted vertex's parent is one of its candidates' (any is a BFS parent)."""
    from taskbfs.kernels.merge import frontier_bitmap, word_span
    from taskbfs.search import owner_barrier
    from taskbfs.search.owner_barrier import _accept
    from taskbfs.search.owner_state import RangeState

    rng = np.random.default_rng(11)
    lo, hi = 1000, 41000
    first, stop = word_span(lo, hi)
    vertices = rng.integers(lo, hi, 200_000).astype(np.int32)
    parents = rng.integers(0, 50_000, vertices.size).astype(np.int32)
    starts = np.array([0, 70_000, 70_000, 150_000], np.int64)
    stops = np.array([60_000, 70_000, 140_000, 200_000], np.int64)
    offsets = np.r_[0, np.cumsum(rng.integers(0, 9, hi - lo))].astype(np.int64)
    monkeypatch.setattr(owner_barrier.os, "cpu_count", lambda: 4)
    runs = []
    for parallel_min in (10**9, 4096):  # one thread, then 4 shares
        with monkeypatch.context() as patch:
            patch.setattr(owner_barrier, "_PARALLEL_ACCEPT_MIN", parallel_min)
            words = np.zeros(stop - first, np.uint64)
            words[3] = np.uint64(0xFFFF0000FFFF)  # some visited already
            rs = RangeState(0, lo, hi, first, stop, offsets, np.full(hi - lo, -1, np.int32),
                            np.full(hi - lo, -1, np.int32))
            bits = np.full(2 + hi // 64, np.uint64(0))
            frontier, edges = _accept(vertices, parents, starts, stops, rs, words, 5,
                                      int((stops - starts).sum()), bits)
            runs.append((frontier.copy(), edges, rs, words, bits))
    (one, edges_one, rs_one, words_one, bits_one), (many, edges_many, rs_many, words_many,
                                                    bits_many) = runs
    assert sorted(one.tolist()) == sorted(many.tolist()) and len(set(many.tolist())) == many.size
    assert edges_one == edges_many and one.size > 10_000
    np.testing.assert_array_equal(rs_one.distances, rs_many.distances)
    np.testing.assert_array_equal(words_one, words_many)
    # the frontier's bits: set as the vertices are accepted, on each share's thread
    expected_bits = np.zeros_like(bits_one)
    frontier_bitmap(one, expected_bits)
    np.testing.assert_array_equal(bits_one, expected_bits)
    np.testing.assert_array_equal(bits_many, expected_bits)
    used = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops, strict=True)])
    candidates = set(zip(vertices[used].tolist(), parents[used].tolist(), strict=True))
    assert all((v, int(rs_many.parents[v - lo])) in candidates for v in many[:2000].tolist())
