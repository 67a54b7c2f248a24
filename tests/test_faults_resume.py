"""What a resumed search rebuilds on its owners, checked without a cluster.

A dispatched search that loses a worker resumes from the last level it completed
(docs/resume.md): the owners' state is rebuilt from the distances the client kept
(:class:`~taskbfs.search.owners.KeptLevels`), the parents found again over in-arcs
(:func:`~taskbfs.kernels.recovery.parents_from_levels`). Here that rebuild is called
directly, at every level of every test shape, and compared with scipy's distances and the
Graph500 rules; the kill tests (tests/test_faults.py, tests/test_faults_waits.py) run it
on real clusters.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import scipy_distances
from shapes import path, shapes

import taskbfs as tb
from taskbfs.errors import TaskBFSError
from taskbfs.graph import partition
from taskbfs.kernels.recovery import parents_from_levels
from taskbfs.placed.placement import graph_slices
from taskbfs.search.owner_state import resume_owner
from taskbfs.search.owners import KeptLevels
from taskbfs.search.state import LevelSummary


def _graph(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices,
                               directed=shape.directed)


def _in_slices(graph: tb.Graph, tasks: int) -> list:
    """The slices a resumed owner reads: in-arcs (the transpose of a directed graph)."""
    parts = partition(graph, tasks, balance="edges")
    if graph.directed:
        return graph_slices(graph.transpose(), parts, "t", out=graph)
    return graph_slices(graph, parts, "t")


def _rebuilt(slices, distances, source: int, level: int):
    """Every range of ``slices`` rebuilt at ``level`` by one owner: (distances, parents,
    frontier, visited bits, unvisited count) over the whole graph."""
    dtype = np.int8 if level < 128 else np.int16 if level < 2**15 else np.int32  # as KeptLevels
    levels = np.where(distances <= level, distances, -1).astype(dtype)
    front, state = resume_owner(*slices, levels, sources=[source], level=level,
                                num_vertices=distances.size, search="s")
    got_d = np.concatenate([r.distances for r in state.ranges])
    got_p = np.concatenate([r.parents for r in state.ranges])
    return got_d, got_p, np.concatenate(front.frontiers), front.visited, sum(front.unvisited)


@pytest.mark.parametrize("shape", shapes(), ids=lambda s: s.name)
def test_owners_rebuilt_at_a_level_agree_with_scipy(shape):
    """Levels 1, 2, the middle one, the last but one and the last."""
    graph = _graph(shape)
    for source in shape.sources:
        distances = scipy_distances(graph, source)
        depth = int(distances.max())
        for level in sorted({1, 2, depth // 2, depth - 1, depth} - {0} if depth else set()):
            d, p, frontier, visited, unvisited = _rebuilt(_in_slices(graph, 3), distances,
                                                          source, level)
            upto = np.where(distances <= level, distances, -1)
            np.testing.assert_array_equal(d, upto)
            np.testing.assert_array_equal(frontier, np.flatnonzero(distances == level))
            assert unvisited == np.count_nonzero(upto < 0)
            bits = np.unpackbits(visited.view(np.uint8), bitorder="little")[:graph.num_vertices]
            np.testing.assert_array_equal(bits, upto >= 0)
            reached = upto >= 0
            assert (p[~reached] == -1).all()
            if level == depth:  # the whole tree: every Graph500 rule
                tb.validate(graph, source, p, d)


def test_rebuilt_parents_are_one_level_nearer_along_an_in_arc():
    """A directed path with arcs back from every vertex to the ones before it: each
    vertex has many in-neighbours, one of them one level nearer."""
    n = 40
    src = np.r_[np.arange(n - 1), [v for v in range(2, n) for _ in range(2)]]
    dst = np.r_[np.arange(1, n), [u for v in range(2, n) for u in (0, v - 2)]]
    graph = tb.Graph.from_edges(src, dst, num_vertices=n, directed=True)
    distances = scipy_distances(graph, 0)
    _, parents, *_ = _rebuilt(_in_slices(graph, 4), distances, 0, n - 1)
    np.testing.assert_array_equal(parents, np.r_[0, np.arange(n - 1)])


def test_levels_that_are_not_a_bfs_are_refused():
    """A corrupted levels array (a vertex at distance 3 with no neighbour at 2) is an
    error, not a parent made up."""
    graph = _graph(path(5))
    levels = np.array([0, 1, 5, 3, 4], dtype=np.int8)
    with pytest.raises(TaskBFSError, match="no in-neighbour one level nearer"):
        resume_owner(*_in_slices(graph, 1), levels, sources=[0], level=4, num_vertices=5,
                     search="s")
    parents = np.full(5, -1, dtype=np.int32)
    assert parents_from_levels(graph.indptr, graph.indices, 0, levels, parents) == 2


def _summary(level: int) -> LevelSummary:
    return LevelSummary(level, "top-down", np.zeros(1, np.int64), 1, 0)


def test_kept_levels_widen_with_depth_and_restart_from_scratch():
    """The client's levels array is int8 until a level needs more (int16, int32), and made
    only when read; an attempt that finds no completed level starts again from level 0."""
    kept = KeptLevels(1000, sources=[0])
    assert kept.start(1, "p1", _summary(0), 4) == 0
    for level in range(1, 300):
        kept.complete(_summary(level), [np.array([level])])
    assert kept.levels.dtype == np.int16 and kept.levels[299] == 299 and kept.levels[1] == 1
    assert kept.level == 299 and kept.start(2, "p2", _summary(0), 8) == 299
    assert kept.num_tasks == 4 and kept.attempts == [(1, "p1", 0), (2, "p2", 299)]

    fresh = KeptLevels(10, sources=[3])
    assert fresh.start(1, "p1", _summary(0), 2) == 0
    # the array of n is made when a resume reads it: a search never resumed never pays for it
    assert fresh._levels is None
    assert fresh.start(2, "p2", _summary(0), 5) == 0  # nothing completed: from level 0
    assert fresh.attempts == [(2, "p2", 0)] and fresh.num_tasks == 5
    assert fresh.levels.tolist() == [-1, -1, -1, 0, -1, -1, -1, -1, -1, -1]


def test_owners_report_what_they_reached_in_the_fewer_bytes():
    """An owner's barrier reports its new frontier to the client's KeptLevels as vertex
    ids, or as its ranges' bitmap words when those are fewer bytes (a large level); both
    name the same vertices, and the kept levels decode the words only when read."""
    from taskbfs.kernels.merge import frontier_bitmap, word_span
    from taskbfs.search.owner_barrier import ReachedWords, reached_report
    from taskbfs.search.owner_state import init_owner

    graph = _graph(path(1000))
    parts = partition(graph, 3, balance="vertices")
    slices = graph_slices(graph, parts, "t")
    mine = [slices[0], slices[2]]  # an owner of two ranges that are not neighbours
    front, state = init_owner(*mine, sources=[0], num_vertices=1000, search="s",
                              bounds=parts.bounds, owner_of=np.array([0, 1, 0]))
    spans = tuple(word_span(p.lo, p.hi) for p in mine)
    for frontier in ([5, 7], list(range(mine[0].lo + 2, mine[0].hi, 2)) + [mine[1].hi - 1]):
        ids = np.array(frontier, dtype=np.int64)
        front.frontiers = [ids[ids < mine[0].hi], ids[ids >= mine[1].lo]]
        front.counts = np.array([f.size for f in front.frontiers], dtype=np.int64)
        frontier_bitmap(front.current(), front.bits)
        data, as_words = reached_report(front, state)
        assert as_words == (4 * ids.size > 8 * state.words)
        got = ReachedWords(spans, data).ids() if as_words else np.frombuffer(data, np.int32)
        assert sorted(set(got.tolist())) == frontier

    kept = KeptLevels(1000, sources=[0])
    kept.start(1, "p", _summary(0), 3)
    kept.complete(_summary(1), [np.array([1], dtype=np.int32)])
    kept.complete(_summary(2), [ReachedWords(spans, data)])
    assert kept._pending  # nothing decoded yet
    levels = kept.levels
    assert levels[0] == 0 and levels[1] == 1 and levels[mine[1].hi - 1] == 2
    assert levels[mine[0].lo + 2] == 2 and levels[3] == -1
    assert np.count_nonzero(levels == 2) == len(frontier)
