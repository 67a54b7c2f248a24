"""Bad graph data: ``Graph.validate`` (run once by ``tb.bfs``) names each corruption, and a
graph cannot change after it is made (so every search, on any cluster, reads the same data).

The corrupt arrays of the issue (an ``indices`` entry of ``n``, ``-1`` or ``n + 10**7``; a
wrong ``indptr``) used to make the numba kernels read out of bounds: a crash of the
caller's process or silently wrong parents.
"""

from __future__ import annotations

import numpy as np
import pytest
from shapes import shapes

import taskbfs as tb
from taskbfs.errors import InvalidGraphError, InvalidVertexError
from taskbfs.graph import Graph


def _path(n: int = 6) -> Graph:
    return Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def _corrupt(indptr=None, indices=None, n=None, directed=False) -> Graph:
    g = _path()
    return Graph(g.indptr.copy() if indptr is None else indptr,
                 g.indices.copy() if indices is None else indices,
                 g.num_vertices if n is None else n, directed)


def _with_index(k: int, value: int) -> np.ndarray:
    indices = _path().indices.astype(np.int64)
    indices[k] = value
    return indices


# path of 6 vertices: indptr [0 1 3 5 7 9 10], indices [1 0 2 1 3 2 4 3 5 4]
CORRUPTIONS = [
    (dict(indices=_with_index(3, 6)), r"indices\[3\] = 6 \(a neighbour of vertex 2\)"),
    (dict(indices=_with_index(0, -1)), r"indices\[0\] = -1 \(a neighbour of vertex 0\)"),
    (dict(indices=_with_index(9, 6 + 10**7)), r"indices\[9\] = 10000006 \(a neighbour of vertex 5\)"),
    (dict(indptr=np.array([1, 1, 3, 5, 7, 9, 10])), r"indptr\[0\] = 1, must be 0"),
    (dict(indptr=np.array([0, 1, 3, 2, 7, 9, 10])), r"decreases at position 3 \(vertex 2\)"),
    (dict(indptr=np.array([0, 1, 3, 5, 7, 9, 9])), r"indptr\[6\] = 9, but indices has 10"),
    (dict(indptr=np.array([0, 1, 3, 5, 7, 10])), r"indptr has 6 entries, but num_vertices = 6"),
    (dict(indptr=np.array([0, 1, 3, 5, 7, 9, 10], dtype=np.int32)), r"indptr must be a 1-D int64"),
    (dict(indices=np.arange(10, dtype=np.float64) % 6), r"indices must be a 1-D int32 or int64"),
    (dict(indices=[1, 0, 2, 1, 3, 2, 4, 3, 5, 4]), r"indices must be .* got list"),
]


@pytest.mark.parametrize(("arrays", "message"), CORRUPTIONS)
def test_validate_names_each_corruption(arrays, message):
    g = _corrupt(**arrays)
    with pytest.raises(InvalidGraphError, match=message):
        g.validate()


@pytest.mark.parametrize(("arrays", "message"), CORRUPTIONS[:6])
@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_bfs_refuses_corrupt_graphs(runtime, arrays, message, dispatch):
    """Before any task runs: no crash of this process (the embedded cluster's workers run
    here), no wrong parents."""
    with pytest.raises(InvalidGraphError, match=message):
        tb.bfs(_corrupt(**arrays), 0, tasks=2, runtime=runtime, dispatch=dispatch)
    assert tb.bfs(_path(), 0, tasks=2, runtime=runtime).distances.tolist() == list(range(6))


@pytest.mark.parametrize("shape", shapes(), ids=lambda s: s.name)
def test_valid_graphs_pass(shape):
    g = Graph.from_edges(shape.src, shape.dst, shape.num_vertices, shape.directed)
    for built in (g, g.transpose()):
        # the builders' arrays pass the full check when a user hands them over as a Graph
        raw = Graph(built.indptr, built.indices, built.num_vertices, built.directed)
        assert raw.validate() is raw


def test_built_graphs_skip_the_scan(monkeypatch, tmp_path):
    """Graphs that taskbfs's builders made (or a file reader checked) are valid by
    construction: the first search pays no O(arcs) validation pass for them."""
    def scan(*args):
        raise AssertionError("a built graph was scanned again")

    directed = Graph.from_edges([0, 1, 2], [1, 2, 0], directed=True)
    directed.save(tmp_path / "g.npz")
    monkeypatch.setattr("taskbfs.graph._graph._csr_problem", scan)
    for g in (tb.kronecker(6, 4), directed, directed.transpose(), Graph.from_csr([0, 1, 1], [1]),
              tb.read_graph(tmp_path / "g.npz")):
        assert g.validate() is g
    with pytest.raises(AssertionError, match="scanned"):  # a user's own arrays are checked
        Graph(directed.indptr, directed.indices, 3, True).validate()


def test_validation_runs_once(monkeypatch):
    g = _path()
    g.validate()
    calls = []
    monkeypatch.setattr("taskbfs.graph._graph._csr_problem", lambda *a: calls.append(a))
    g.validate()
    assert calls == []


def test_graph_is_immutable(runtime):
    g = _path()
    tb.bfs(g, 0, tasks=2, runtime=runtime)
    with pytest.raises(ValueError, match="read-only"):
        g.indices[0] = 5
    with pytest.raises(ValueError, match="read-only"):
        g.indptr[1] = 0
    with pytest.raises(AttributeError, match="cannot change: its indices"):
        g.indices = np.zeros_like(g.indices)
    with pytest.raises(AttributeError, match="num_vertices"):
        g.num_vertices = 3
    assert tb.bfs(g, 0, tasks=2, runtime=runtime).distances.tolist() == list(range(6))


@pytest.mark.parametrize("source", [True, np.bool_(True), 1.0, np.float32(1.0), np.array(1),
                                    "1", None])
def test_source_must_be_an_integer(runtime, source):
    with pytest.raises(InvalidVertexError, match="integer vertex id"):
        tb.bfs(_path(), source, runtime=runtime)


@pytest.mark.parametrize("source", [1, np.int32(1), np.int64(1), np.uint8(1)])
def test_integer_sources(runtime, source):
    assert tb.bfs(_path(), source, tasks=2, runtime=runtime).distances.tolist() == [1, 0, 1, 2, 3, 4]
