"""A level's tasks and barrier on several threads (taskbfs.search.level_tasks): the same levels
as the level loop's steps and serial barrier, on many shapes, task counts and thread counts;
every task of every level traced with its own thread and times; the result slices."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from reference import scipy_distances, serial_barrier
from shapes import path, shapes

import taskbfs as tb
from taskbfs.graph import partition
from taskbfs.placed.placement import graph_slices
from taskbfs.runtime import worker
from taskbfs.search.level_tasks import LevelTasks
from taskbfs.search.state import BOTTOM_UP, first_frontier
from taskbfs.search.steps import slice_for, step_smp

#: The catalogue, its 3000-vertex path as one of 300 (still a vertex a level, hundreds of
#: levels): every level is a round of the thread pool, and 3000 of them for each task count,
#: source and thread count took ~8% of the whole suite's time.
SHAPES = {s.name: s for s in shapes() if s.name != "path_3000"} | {"path_300": path(300)}


def build(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices,
                               directed=shape.directed)


def task_slices(graph, tasks):
    parts = partition(graph, tasks)
    out = graph_slices(graph, parts, graph.token)
    if not graph.directed:
        return parts, [(s,) for s in out]
    inward = graph_slices(graph.transpose(), parts, graph.token + "/T", out=graph)
    return parts, list(zip(out, inward, strict=True))


def loop_levels(graph, parts, slices, source, direction):
    """(frontier, summary, steps run) of every level made plainly: steps one by one, then
    a serial barrier (``reference.serial_barrier``)."""
    degrees = np.diff(graph.indptr).astype(np.int64)
    frontier, summary = first_frontier(degrees, parts.bounds, source, direction)
    made = [(frontier, summary, 0)]
    while summary.frontier_size:
        found = [step_smp(slice_for(slices[t], frontier), frontier)
                 for t in range(parts.num_tasks) if frontier.has_work(t)]
        frontier, summary = serial_barrier(frontier, found, degrees)
        made.append((frontier, summary, len(found)))
    return made


def same_frontier(a, b):
    assert a.level == b.level and a.direction == b.direction
    if a.direction == BOTTOM_UP:
        np.testing.assert_array_equal(a.bits, b.bits)
    else:
        np.testing.assert_array_equal(a.offsets, b.offsets)
        np.testing.assert_array_equal(a.vertices, b.vertices)  # same order: same barrier


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_levels_on_threads_are_the_level_loops(name, direction, monkeypatch):
    """Frontiers (vertices in order, offsets, bitmaps), visited sets and per-task counts
    equal the level loop's at every level, for 1 to 4 threads and task counts up to one
    per vertex (more tasks than threads, steps claimed in any order). Every level here
    is small: each thread is given a share however small, so that 4 threads run."""
    monkeypatch.setattr(worker, "ENTRIES_PER_THREAD", 1)
    shape = SHAPES[name]
    graph = build(shape)
    degrees = np.diff(graph.indptr).astype(np.int64)
    for tasks in sorted({1, min(3, graph.num_vertices), min(64, graph.num_vertices)}):
        parts, slices = task_slices(graph, tasks)
        for source in shape.sources[:2]:
            expected = loop_levels(graph, parts, slices, source, direction)
            for threads in (1, 4):
                runner = LevelTasks(slices, degrees, threads)
                frontier, summary = first_frontier(degrees, parts.bounds, source, direction)
                for want_frontier, want, steps in expected[1:]:
                    frontier, summary, rows, _barrier = runner.run(frontier)
                    same_frontier(frontier, want_frontier)
                    for field in ("frontier_counts", "edges_examined", "found"):
                        np.testing.assert_array_equal(getattr(summary, field), getattr(want, field))
                    assert (summary.frontier_size, summary.frontier_edges, summary.reached,
                            summary.unexplored_edges) == (want.frontier_size, want.frontier_edges,
                                                          want.reached, want.unexplored_edges)
                    assert len(rows) == steps
                # the visited set is updated in place: compare it once, at the end
                np.testing.assert_array_equal(frontier.visited_bits, want_frontier.visited_bits)


def test_a_level_takes_a_thread_per_share_of_its_work():
    """At most one thread per step, and one per ENTRIES_PER_THREAD entries of work: a
    small level runs in the calling thread alone."""
    graph = tb.kronecker(6, 4, seed=1)
    _, slices = task_slices(graph, 4)
    runner = LevelTasks(slices, np.diff(graph.indptr).astype(np.int64), 8)
    share = worker.ENTRIES_PER_THREAD
    assert runner._threads_for(3, 10) == 1
    assert runner._threads_for(100, 5 * share) == 5
    assert runner._threads_for(3, 10 * share) == 3
    assert runner._threads_for(100, 100 * share) == 8
    assert runner._threads_for(0, 0) == 1


def test_every_task_of_every_level_is_traced_with_its_thread_and_times(runtime):
    """T = 256 on a Kronecker graph: one included step row per task with work per level,
    each with a thread of this process, and start <= stop inside the call; the result is
    right (scipy, Graph500 rules)."""
    graph = tb.kronecker(12, 16, seed=3)
    source = int(tb.search_keys(graph, 1, seed=2)[0])
    r = tb.bfs(graph, source, tasks=256, strategy="cpu", runtime=runtime)
    np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
    tb.validate(graph, source, r.parents, levels=r.distances)
    trace = r.trace
    steps = trace[trace["name"] == "bfs_step"]
    # the tasks with work per level, from the distances: owners of the level's vertices
    # (top-down) or of the vertices still unvisited (bottom-up)
    bounds = partition(graph, 256).bounds
    owner = np.searchsorted(bounds, np.arange(graph.num_vertices), side="right") - 1
    far = np.where(r.distances < 0, graph.num_vertices, r.distances)
    expected = 0
    for level, direction in r.levels[["level", "direction"]].itertuples(index=False):
        mine = far == level if direction == "top-down" else far > level
        if (far == level).any():  # the last level (an empty frontier) runs no step
            expected += np.unique(owner[mine]).size
    assert len(steps) == expected > 256
    assert steps[["device", "thread", "start", "stop"]].notna().all().all()
    assert (steps["device"] == "smp").all() and steps["included"].all()
    assert (steps["start"] <= steps["stop"]).all()
    assert steps["start"].min() >= 0 and steps["stop"].max() <= r.elapsed
    threads = {t.ident for t in threading.enumerate()}
    assert set(steps["thread"]) <= threads
    assert not steps.duplicated(["level", "task"]).any()


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_result_written_on_threads_is_each_vertex_once(threads):
    """assemble_all on 1 to 4 threads, records in chunks (here many: 2^15 pairs each) and
    the fill in slices: per vertex the distance and a parent of its one level, for logs of
    one level with duplicates (top-down candidates, int32), of many levels (depths) and
    bucketed ones, over a range that is not the whole graph (checked against the logs
    with numpy)."""
    from taskbfs.search.state import Discoveries, assemble_all

    rng = np.random.default_rng(threads)
    n = 200_000
    order = rng.permutation(n)
    level_of = rng.integers(0, 6, n)  # vertex v at distance level_of[v] + 1
    level_of[order[:1000]] = -1  # unreached
    logs, levels = [], []
    for level in range(6):
        mine = order[level_of[order] == level]
        twice = np.concatenate([mine, mine[: mine.size // 3]])  # duplicates, same level
        if level == 2:
            depths = np.full(twice.size, level + 1)
            logs.append(Discoveries(-1, twice, rng.integers(0, n, twice.size), 0, depths=depths))
        else:
            logs.append(Discoveries(level, twice.astype(np.int32),
                                    rng.integers(0, n, twice.size).astype(np.int32), 0))
        levels.append(level)
    bounds = np.array([0, n], dtype=np.int64)
    source = int(order[0])
    lo, hi = 1000, n - 7
    d, p = assemble_all(logs, levels, sources=source, bounds=bounds, cuts=[lo, 150_000, hi],
                        threads=threads)
    assert d.dtype == np.int32 and p.dtype == np.int32
    want_d = level_of + 1
    want_d[level_of < 0] = -1
    want_d[source] = 0
    np.testing.assert_array_equal(d, want_d[lo:hi])
    # a reached vertex keeps one of the parents its logs name (a duplicate: either)
    named = np.unique(np.concatenate([log.vertices.astype(np.int64) * n + log.parents
                                      for log in logs]))
    vertex = np.arange(lo, hi)
    reached = (d > 0)
    assert np.isin(vertex[reached] * n + p[reached], named).all()
    assert (p[d == -1] == -1).all()
    if lo <= source < hi:
        assert p[source - lo] == source
