"""Partition: T contiguous non-empty vertex ranges, owner lookup, CSR slices, balance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskbfs.errors import InvalidParameterError, InvalidVertexError
from taskbfs.graph import Graph, Partition, kronecker, partition


def random_graph(n: int, m: int, seed: int, directed: bool = False) -> Graph:
    rng = np.random.default_rng(seed)
    return Graph.from_edges(
        rng.integers(0, n, m), rng.integers(0, n, m), num_vertices=n, directed=directed
    )


def star(n: int) -> Graph:
    return Graph.from_edges(np.zeros(n - 1, dtype=np.int64), np.arange(1, n), num_vertices=n)


def assert_valid(p: Partition, n: int, tasks: int) -> None:
    b = p.bounds
    assert b.dtype == np.int64
    assert b.shape == (tasks + 1,)
    assert b[0] == 0 and b[-1] == n
    assert np.all(np.diff(b) >= 1), "every range must be non-empty"
    assert p.num_tasks == len(p) == tasks
    assert p.sizes.sum() == n and np.all(p.sizes >= 1)
    assert list(p) == [p.range(t) for t in range(tasks)]


def owners_by_ranges(p: Partition) -> np.ndarray:
    """Owner of every vertex, from the ranges alone (independent of searchsorted)."""
    return np.repeat(np.arange(p.num_tasks), p.sizes)


# ---------------------------------------------------------------------- properties
@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 300),
    m=st.integers(0, 900),
    seed=st.integers(0, 2**16),
    frac=st.floats(0, 1),
    balance=st.sampled_from(["edges", "vertices"]),
)
def test_bounds_cover_and_owner_agrees(n, m, seed, frac, balance):
    g = random_graph(n, m, seed)
    tasks = max(1, min(n, 1 + int(frac * n)))
    p = partition(g, tasks, balance=balance)
    assert_valid(p, n, tasks)
    expected = owners_by_ranges(p)
    assert np.array_equal(p.owner(np.arange(n)), expected)
    for v in {0, n // 2, n - 1}:
        assert p.owner(v) == expected[v]
        assert isinstance(p.owner(v), int)
        lo, hi = p.range(p.owner(v))
        assert lo <= v < hi


@pytest.mark.parametrize("balance", ["edges", "vertices"])
def test_t_equals_one_and_n(balance):
    g = random_graph(50, 120, seed=1)
    one = partition(g, 1, balance=balance)
    assert one.bounds.tolist() == [0, 50]
    every = partition(g, 50, balance=balance)
    assert every.bounds.tolist() == list(range(51))
    assert np.array_equal(every.owner(np.arange(50)), np.arange(50))


@pytest.mark.parametrize("bad", [0, -1, 51, 1000])
def test_tasks_out_of_range_raise(bad):
    g = random_graph(50, 120, seed=1)
    with pytest.raises(InvalidParameterError, match=r"tasks.*1\.\.50"):
        partition(g, bad)


@pytest.mark.parametrize("bad", [2.5, "4", None, True])
def test_tasks_not_integer_raise(bad):
    g = random_graph(50, 120, seed=1)
    with pytest.raises(InvalidParameterError, match="tasks"):
        partition(g, bad)


def test_numpy_integer_tasks_accepted():
    g = random_graph(50, 120, seed=1)
    assert partition(g, np.int32(5)).num_tasks == 5


def test_unknown_balance_raises():
    with pytest.raises(InvalidParameterError, match="balance"):
        partition(random_graph(10, 20, seed=0), 2, balance="degree")


def test_vertices_balance_sizes_differ_by_at_most_one():
    p = partition(random_graph(103, 10, seed=0), 10, balance="vertices")
    assert p.sizes.max() - p.sizes.min() <= 1


# ---------------------------------------------------------------------- edge balance
def test_edge_balance_on_kronecker():
    g = kronecker(14, edgefactor=16, seed=2)
    tasks = 32
    p = partition(g, tasks, balance="edges")
    assert_valid(p, g.num_vertices, tasks)
    arcs = p.arc_counts(g)
    assert arcs.sum() == g.num_arcs
    ideal = g.num_arcs / tasks
    # A cut can miss the target by at most half a vertex's degree on each side.
    assert arcs.max() <= ideal + g.degrees().max()
    assert arcs.max() <= 1.25 * ideal
    # ... and it is much better than equal vertex counts on this skewed graph? At least not worse.
    by_vertices = partition(g, tasks, balance="vertices").arc_counts(g)
    assert arcs.max() <= by_vertices.max()


def test_edge_balance_star_keeps_ranges_non_empty():
    g = star(100)  # every arc touches vertex 0: all cut targets fall on vertex 1
    p = partition(g, 10, balance="edges")
    assert_valid(p, 100, 10)
    assert p.range(0) == (0, 1)  # the hub alone


def test_edge_balance_without_edges():
    g = Graph.from_edges([], [], num_vertices=20)
    p = partition(g, 7, balance="edges")
    assert_valid(p, 20, 7)


def test_edge_balance_heavy_tail():
    # all arcs at the last vertices: the early cuts must still advance one by one
    n = 40
    g = Graph.from_edges(np.full(10, n - 1), np.arange(n - 11, n - 1), num_vertices=n)
    p = partition(g, 8, balance="edges")
    assert_valid(p, n, 8)


# ---------------------------------------------------------------------- Partition itself
def test_partition_from_bounds_and_queries():
    p = Partition([0, 3, 5, 9])
    assert p.num_tasks == 3 and p.num_vertices == 9
    assert p.range(0) == (0, 3) and p.range(2) == (5, 9)
    assert p.sizes.tolist() == [3, 2, 4]
    assert p.owner(np.array([[0, 4], [5, 8]])).tolist() == [[0, 1], [2, 2]]
    assert p == Partition(np.array([0, 3, 5, 9], dtype=np.int32))
    assert p != Partition([0, 4, 5, 9])
    with pytest.raises(ValueError):
        p.bounds[1] = 2  # read-only


@pytest.mark.parametrize("bounds", [[0], [1, 3], [0, 3, 3, 5], [0, 4, 2], [[0, 1], [1, 2]]])
def test_bad_bounds_raise(bounds):
    with pytest.raises(InvalidParameterError):
        Partition(bounds)


def test_owner_out_of_range_raises():
    p = Partition([0, 3, 5])
    for bad in (-1, 5, [0, 5], np.array([-2])):
        with pytest.raises(InvalidVertexError):
            p.owner(bad)
    with pytest.raises(InvalidVertexError):
        p.owner(1.5)


def test_range_bad_task_raises():
    p = Partition([0, 3, 5])
    for bad in (-1, 2, 1.0):
        with pytest.raises(InvalidParameterError):
            p.range(bad)


# ---------------------------------------------------------------------- slices
@pytest.mark.parametrize("directed", [False, True])
def test_slice_matches_graph_neighbours(directed):
    g = random_graph(200, 900, seed=4, directed=directed)
    p = partition(g, 7)
    total = 0
    for t in range(p.num_tasks):
        indptr, indices, lo, hi = p.slice(g, t)
        assert (lo, hi) == p.range(t)
        assert indptr.dtype == np.int64 and indptr[0] == 0 and indptr.size == hi - lo + 1
        assert np.shares_memory(indices, g.indices)  # a view, not a copy
        for v in range(lo, hi):
            got = indices[indptr[v - lo] : indptr[v - lo + 1]]
            assert np.array_equal(got, g.neighbors(v))
        total += indices.size
    assert total == g.num_arcs


def test_slice_does_not_touch_graph_indptr():
    g = random_graph(30, 60, seed=5)
    before = g.indptr.copy()
    indptr, _, _, _ = partition(g, 3).slice(g, 2)
    indptr[:] = 0
    assert np.array_equal(g.indptr, before)


def test_slice_wrong_graph_raises():
    p = Partition([0, 3, 5])
    with pytest.raises(InvalidParameterError, match="5 vertices"):
        p.slice(random_graph(6, 10, seed=0), 0)
