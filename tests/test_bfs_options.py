"""What BFS users ask for (issue 46): several sources, ``depth_limit``, ``reverse``, and
results as tables, against scipy and networkx.

* Several sources: distances equal the minimum over the sources of scipy's unweighted
  ``shortest_path``; the parents form a forest whose every edge is an arc of the graph one
  level nearer the sources, each source its own parent (checked here from scipy's
  matrix, and by ``tb.validate`` with several sources).
* ``depth_limit=k``: scipy's distances with everything beyond k at -1; k = 0 leaves the
  sources alone.
* ``reverse=True``: scipy's distances over the transposed matrix (networkx's
  ``descendants_at_distance`` on the reversed graph for one shape); a no-op undirected.
* Each on the one-task search (``dispatch="auto"``, the embedded cluster) and the
  dispatched one (``dispatch="tasks"``), T = 1 and 3; graphs on the workers in
  ``tests/test_distributed_search.py``, the GPU in ``tests/test_bfs_options_gpu.py``.
* ``to_pandas`` / ``to_dask_dataframe``; bad values are clear errors naming them.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path
from shapes import shapes

import taskbfs as tb
from taskbfs.errors import DeviceUnavailableError, InvalidParameterError, InvalidVertexError

# deep shapes (a path of 3000 levels) stay in the one-task runs: dispatched, every level
# is a round through the scheduler
SHAPES = [s for s in shapes() if s.num_vertices <= 2100 and not s.name.startswith("path")]
SMALL = [s for s in SHAPES if s.num_vertices <= 600]


def build(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, shape.num_vertices, shape.directed)


def scipy_levels(g: tb.Graph, sources, reverse: bool = False, limit=None) -> np.ndarray:
    """Hops from the nearest of ``sources`` (-1 unreached or beyond ``limit``), by scipy."""
    matrix = g.to_scipy()
    if reverse:
        matrix = matrix.T.tocsr()
    d = shortest_path(matrix, unweighted=True, directed=g.directed,
                      indices=np.unique(sources)).min(axis=0)
    d = np.where(np.isinf(d), -1, d).astype(np.int64)
    return d if limit is None else np.where(d > limit, -1, d)


def check_forest(g: tb.Graph, sources, r, reverse: bool = False) -> None:
    """Graph500-style parent checks of a multi-source search, from scipy's matrix: each
    source is its own parent at 0; every other reached vertex's parent is one level nearer
    and ``parent -> vertex`` is an arc of the graph searched; unreached: -1 both."""
    matrix = g.to_scipy()
    if reverse:
        matrix = matrix.T.tocsr()
    d, p = r.distances.astype(np.int64), r.parents.astype(np.int64)
    sources = np.unique(sources)
    assert (p[sources] == sources).all() and (d[sources] == 0).all()
    assert ((p >= 0) == (d >= 0)).all()
    reached = np.flatnonzero(d > 0)
    assert (d[p[reached]] == d[reached] - 1).all()
    arcs = matrix.tocoo()
    n = g.num_vertices
    assert np.isin(p[reached] * n + reached, arcs.row.astype(np.int64) * n + arcs.col).all()


def sources_of(shape) -> list[int]:
    """The shape's suggested sources, with one named twice (duplicates count once)."""
    return [*shape.sources, shape.sources[0]]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_several_sources_match_scipy_one_task(runtime, shape):
    g, sources = build(shape), sources_of(shape)
    expected = scipy_levels(g, sources)
    for tasks in (1, 3):
        r = tb.bfs(g, sources, tasks=tasks, runtime=runtime)
        np.testing.assert_array_equal(r.distances, expected)
        check_forest(g, sources, r)
        tb.validate(g, sources, r.parents, levels=r.distances)
    assert r.sources.tolist() == sorted(set(sources)) and r.source.tolist() == r.sources.tolist()


@pytest.mark.parametrize("shape", SMALL, ids=[s.name for s in SMALL])
def test_options_match_scipy_dispatched(runtime, shape):
    """Several sources, a depth limit and reverse traversal, each level as tasks."""
    g, sources = build(shape), sources_of(shape)
    r = tb.bfs(g, sources, tasks=3, runtime=runtime, dispatch="tasks")
    np.testing.assert_array_equal(r.distances, scipy_levels(g, sources))
    check_forest(g, sources, r)
    r = tb.bfs(g, sources, tasks=3, runtime=runtime, dispatch="tasks", depth_limit=2)
    np.testing.assert_array_equal(r.distances, scipy_levels(g, sources, limit=2))
    check_forest(g, sources, r)
    if shape.directed:
        r = tb.bfs(g, sources, tasks=3, runtime=runtime, dispatch="tasks", reverse=True)
        np.testing.assert_array_equal(r.distances, scipy_levels(g, sources, reverse=True))
        check_forest(g, sources, r, reverse=True)


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
@pytest.mark.parametrize("limit", [0, 1, 3, 40])
def test_depth_limit_matches_scipy(runtime, direction, limit):
    """Deep (a path, a grid: the compiled loop's levels), wide (Kronecker-like: bottom-up
    levels) and directed graphs, from one source and several."""
    for shape in (shapes()[0], shapes()[2], shapes()[-1], shapes()[12]):
        g = build(shape)
        for sources in (shape.sources[1], shape.sources):
            for tasks in (1, 3):
                r = tb.bfs(g, sources, tasks=tasks, runtime=runtime, direction=direction,
                           depth_limit=limit)
                np.testing.assert_array_equal(r.distances,
                                              scipy_levels(g, [sources], limit=limit)
                                              if np.ndim(sources) == 0
                                              else scipy_levels(g, sources, limit=limit))
                check_forest(g, np.atleast_1d(sources), r)
    assert r.depth_limit == limit and len(r.levels) <= limit + 1


def test_depth_limit_as_networkx_descendants_at_distance(runtime):
    nx = pytest.importorskip("networkx", reason="networkx is the reference here (the 'test' extra)")
    shape = next(s for s in shapes() if s.name == "random_directed_400_1200")
    g = build(shape)
    G = nx.DiGraph(zip(shape.src.tolist(), shape.dst.tolist(), strict=True))
    G.add_nodes_from(range(shape.num_vertices))
    r = tb.bfs(g, 0, runtime=runtime, depth_limit=3)
    for k in range(5):
        assert set(np.flatnonzero(r.distances == k).tolist()) == (
            nx.descendants_at_distance(G, 0, k) if k <= 3 else set())
    reverse = tb.bfs(g, [0, 7], runtime=runtime, reverse=True, depth_limit=2)
    R = G.reverse()
    for k in range(3):
        assert set(np.flatnonzero(reverse.distances == k).tolist()) == {
            v for v, d in nx.multi_source_dijkstra_path_length(R, {0, 7}, cutoff=2).items()
            if d == k}
    layers = list(nx.bfs_layers(G, [0, 7]))
    several = tb.bfs(g, [0, 7], runtime=runtime)
    for k, layer in enumerate(layers):
        assert set(np.flatnonzero(several.distances == k).tolist()) == set(layer)


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_reverse_follows_in_neighbours(runtime, dispatch):
    directed = [s for s in SMALL if s.directed]
    for shape in directed:
        g = build(shape)
        for source in shape.sources:
            r = tb.bfs(g, source, tasks=2, runtime=runtime, reverse=True, dispatch=dispatch,
                       direction="auto")
            np.testing.assert_array_equal(r.distances, scipy_levels(g, [source], reverse=True))
            check_forest(g, [source], r, reverse=True)
            tb.validate(g.transpose(), source, r.parents, levels=r.distances)
    assert r.reverse
    undirected = build(shapes()[2])
    np.testing.assert_array_equal(tb.bfs(undirected, 5, reverse=True, runtime=runtime).distances,
                                  tb.bfs(undirected, 5, runtime=runtime).distances)


def test_reverse_transposes_once_per_graph(runtime):
    g = build(next(s for s in shapes() if s.name == "directed_dag"))
    tb.bfs(g, 6, reverse=True, runtime=runtime)
    made = g.__dict__["_reversed"]
    tb.bfs(g, 8, reverse=True, runtime=runtime)
    assert g.__dict__["_reversed"] is made


def test_several_labelled_sources(runtime):
    g = tb.Graph.from_edges(["a", "b", "c", "x"], ["b", "c", "d", "y"])
    r = tb.bfs(g, ["a", "d", "a"], runtime=runtime)
    assert r.distance_dict() == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert r.parent_dict() == {"a": "a", "b": "a", "c": "d", "d": "d"}
    table = r.to_pandas()
    assert table.to_dict("list") == {"vertex": ["a", "b", "c", "d"], "distance": [0, 1, 1, 0],
                                     "parent": ["a", "a", "d", "d"]}
    tb.validate(g, ["a", "d"], r.parents, levels=r.distances)


def test_tables(runtime):
    shape = next(s for s in shapes() if s.name == "components")
    g = build(shape)
    r = tb.bfs(g, [0, 13], tasks=3, runtime=runtime)
    table = r.to_pandas()
    reached = np.flatnonzero(r.distances >= 0)
    assert list(table.columns) == ["vertex", "distance", "parent"]
    np.testing.assert_array_equal(table["vertex"], reached)
    np.testing.assert_array_equal(table["distance"], r.distances[reached])
    np.testing.assert_array_equal(table["parent"], r.parents[reached])
    frame = r.to_dask_dataframe()
    assert frame.npartitions >= 1
    assert frame.compute().reset_index(drop=True).equals(table)


def test_several_sources_match_one_search_from_each_side(runtime):
    """The multi-source distances are the minimum of single-source searches (one task and
    dispatched)."""
    g = build(next(s for s in shapes() if s.name == "kronecker_like_10_8"))
    each = np.stack([tb.bfs(g, s, runtime=runtime).distances for s in (0, 4, 220)])
    each = np.where(each < 0, np.iinfo(np.int32).max, each).min(axis=0)
    for dispatch in ("auto", "tasks"):
        r = tb.bfs(g, np.array([0, 4, 220]), runtime=runtime, dispatch=dispatch)
        np.testing.assert_array_equal(np.where(r.distances < 0, np.iinfo(np.int32).max,
                                               r.distances), each)


@pytest.mark.parametrize("source, error, words", [
    ([0, 99], InvalidVertexError, "source 99"),
    ([0, -1], InvalidVertexError, "source -1"),
    ([0, 1.5], InvalidVertexError, "source"),
    ([], InvalidParameterError, "empty"),
    ([[0, 1]], InvalidParameterError, "flat"),
    (np.array([True, False]), InvalidVertexError, "source"),
])
def test_bad_sources(runtime, source, error, words):
    g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    with pytest.raises(error, match=words):
        tb.bfs(g, source, runtime=runtime)
    assert issubclass(InvalidVertexError, InvalidParameterError)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"depth_limit": -1}, InvalidParameterError, "depth_limit"),
    ({"depth_limit": True}, InvalidParameterError, "depth_limit"),
    ({"depth_limit": 2.0}, InvalidParameterError, "depth_limit"),
    ({"depth_limit": "3"}, InvalidParameterError, "depth_limit"),
    ({"reverse": 1}, InvalidParameterError, "reverse"),
    ({"device_result": "yes"}, InvalidParameterError, "device_result"),
    ({"device_result": True, "strategy": "cpu"}, InvalidParameterError, "device_result"),
    ({"device_result": True}, DeviceUnavailableError, "CuPy"),
])
def test_bad_options(runtime, kwargs, error, words):
    g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    with pytest.raises(error, match=words):
        tb.bfs(g, 0, runtime=runtime, **kwargs)


def test_to_cupy_without_cupy_is_a_clear_error(runtime):
    from taskbfs.kernels.gpu import require_cupy

    try:
        require_cupy("here")
    except DeviceUnavailableError:
        pass
    else:
        pytest.skip("CuPy is here: tests/test_bfs_options_gpu.py reads it")
    r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, runtime=runtime)
    with pytest.raises(DeviceUnavailableError, match="to_cupy"):
        r.to_cupy()


def test_validate_several_sources_names_a_broken_rule():
    g = tb.Graph.from_edges([0, 1, 2, 4], [1, 2, 3, 5])
    parents = np.array([0, 0, 3, 3, -1, -1])
    assert tb.validate(g, [0, 3], parents).tolist() == [0, 1, 1, 0, -1, -1]
    with pytest.raises(tb.ValidationError, match="source 4 has parent -1"):
        tb.validate(g, [0, 4], parents)
    wrong = parents.copy()
    wrong[2] = 1  # 2 is one hop from 3, two from 0 through 1
    with pytest.raises(tb.ValidationError, match="rule 3"):
        tb.validate(g, [0, 3], wrong)
