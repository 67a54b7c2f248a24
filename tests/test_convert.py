"""Graphs from scipy.sparse and pandas, labelled vertex ids, and tb.bfs taking a scipy
matrix directly: every search compared with scipy.sparse.csgraph or the naive BFS of
tests/reference.py, parents checked by Graph500 rules. networkx: test_convert_networkx.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from reference import naive_bfs_parents
from scipy.sparse import csgraph
from shapes import shapes

import taskbfs as tb
from taskbfs.errors import InvalidParameterError, InvalidVertexError
from taskbfs.graph import as_graph, relabel

SHAPES = shapes()


def _csgraph_distances(matrix, source: int, directed: bool) -> np.ndarray:
    """Hop distances by scipy alone, from the raw matrix (duplicates, loops and all)."""
    d = csgraph.shortest_path(matrix, unweighted=True, directed=directed, indices=source)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def _raw_matrix(shape, fmt: str):
    data = np.ones(shape.src.size)
    coo = sp.coo_array((data, (shape.src, shape.dst)), shape=(shape.num_vertices,) * 2)
    return coo.asformat(fmt)


# ----------------------------------------------------------------------------- scipy
@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_bfs_takes_a_scipy_matrix_as_csgraph_reads_it(runtime, shape):
    raw = _raw_matrix(shape, "csr")
    # an undirected edge list as a symmetric matrix, which from_scipy reads as undirected
    matrix = raw if shape.directed else (raw + raw.T).tocsr()
    graph = tb.Graph.from_scipy(matrix)
    assert graph.directed == (shape.directed and (raw != raw.T).nnz > 0)
    for source in shape.sources:
        r = tb.bfs(matrix, source, tasks=3, runtime=runtime)
        expected = _csgraph_distances(raw, source, directed=shape.directed)
        assert np.array_equal(r.distances, expected), (shape.name, source)
        tb.validate(graph, source, r.parents, levels=r.distances)


@pytest.mark.filterwarnings("ignore:Constructing a DIA matrix:scipy.sparse.SparseEfficiencyWarning")
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "dia", "bsr"])
def test_every_sparse_format_and_the_matrix_class(runtime, fmt):
    shape = next(s for s in SHAPES if s.name.startswith("random_directed"))
    matrix = _raw_matrix(shape, fmt)
    expected = _csgraph_distances(matrix.tocsr(), 0, directed=True)
    assert np.array_equal(tb.bfs(matrix, 0, tasks=2, runtime=runtime).distances, expected)
    old_style = sp.csr_matrix(matrix)  # the spmatrix class, not the sparse array
    assert np.array_equal(tb.bfs(old_style, 0, tasks=2, runtime=runtime).distances, expected)


def test_directed_unless_symmetric_and_explicit_zeros_are_arcs():
    arc = sp.csr_array(([1.0], ([0], [1])), shape=(3, 3))
    assert tb.Graph.from_scipy(arc).directed
    assert not tb.Graph.from_scipy(arc + arc.T).directed
    both_ways = tb.Graph.from_scipy(arc, directed=False)
    assert not both_ways.directed and both_ways.neighbors(1).tolist() == [0]
    zero = sp.csr_array((np.array([0.0]), np.array([2]), np.array([0, 1, 1, 1])), shape=(3, 3))
    assert zero.nnz == 1  # stored, value 0
    assert tb.Graph.from_scipy(zero).neighbors(0).tolist() == [2]
    d = _csgraph_distances(zero, 0, directed=True)
    assert d.tolist() == [0, -1, 1]  # csgraph reads it as an arc as well


@pytest.mark.parametrize("bad, words", [
    (sp.csr_array((2, 3)), "square"),
    (np.eye(3), "csr_array"),
])
def test_scipy_input_refused_clearly(bad, words):
    with pytest.raises(InvalidParameterError, match=words):
        tb.Graph.from_scipy(bad)


def test_a_scipy_matrix_is_converted_once_and_again_when_edited(runtime):
    matrix = sp.csr_array(([1, 1], ([0, 1], [1, 2])), shape=(4, 4))
    first = as_graph(matrix)
    assert as_graph(matrix) is first  # same Graph, same token: partitions stay placed
    assert tb.bfs(matrix, 0, runtime=runtime).distances.tolist() == [0, 1, 2, -1]
    matrix.indices[1] = 3  # edit in place: 1 -> 3 instead of 1 -> 2
    assert as_graph(matrix) is not first
    assert tb.bfs(matrix, 0, runtime=runtime).distances.tolist() == [0, 1, -1, 2]
    copy = matrix.copy()
    assert as_graph(copy) is not as_graph(matrix)  # one entry per object


def test_bfs_refuses_other_graph_types():
    with pytest.raises(InvalidParameterError, match="scipy.sparse matrix or a networkx graph"):
        tb.bfs([[0, 1]], 0)


# ----------------------------------------------------------------------------- pandas, labels
def test_from_pandas_with_named_string_columns(runtime):
    rng = np.random.default_rng(3)
    names = np.array([f"user{i}" for i in range(200)])
    src, dst = rng.integers(0, 200, 600), rng.integers(0, 200, 600)
    df = pd.DataFrame({"who": names[src], "follows": names[dst], "weight": 1.0})
    g = tb.Graph.from_pandas(df, source="who", target="follows", directed=True)
    assert g.directed and set(g.labels.tolist()) == set(names[np.union1d(src, dst)].tolist())
    ids = {label: i for i, label in enumerate(g.labels.tolist())}
    s = str(df["who"][0])
    r = tb.bfs(g, s, tasks=3, runtime=runtime)
    sref = np.array([ids[x] for x in df["who"]])
    dref = np.array([ids[x] for x in df["follows"]])
    expected, _ = naive_bfs_parents(sref, dref, g.num_vertices, ids[s], directed=True)
    assert np.array_equal(r.distances, expected)
    tb.validate(g, s, r.parents, levels=r.distances)
    assert r.distance_dict()[s] == 0 and r.parent_dict()[s] == s


def test_from_pandas_keeps_integer_ids_and_from_edges_takes_a_frame():
    df = pd.DataFrame({"source": [0, 5], "target": [5, 9]})
    g = tb.Graph.from_pandas(df)
    assert g.labels is None and g.num_vertices == 10
    assert tb.Graph.from_edges(df).neighbors(5).tolist() == [0, 9]
    assert tb.Graph.from_pandas(df, relabel=True).labels.tolist() == [0, 5, 9]


@pytest.mark.parametrize("df, kwargs, error, words", [
    (pd.DataFrame({"a": [0], "b": [1]}), {}, InvalidParameterError, "no source column 'source'.*columns: \\['a', 'b'\\]"),
    (pd.DataFrame({"a": [0], "b": [1]}), {"source": "a"}, InvalidParameterError, "no target column 'target'"),
    (pd.DataFrame({"source": ["x", None], "target": ["y", "z"]}, index=[10, 11]), {},
     InvalidVertexError, "row 11 has a missing"),
    ([(0, 1)], {}, InvalidParameterError, "pandas DataFrame"),
])
def test_from_pandas_refuses_clearly(df, kwargs, error, words):
    with pytest.raises(error, match=words):
        tb.Graph.from_pandas(df, **kwargs)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("ids", ["integers", "strings"])
def test_from_edges_reads_a_frame_by_the_column_names_given(runtime, directed, ids):
    shape = next(s for s in SHAPES if s.name.startswith("random_directed"))
    names = np.array([f"v{i}" for i in range(shape.num_vertices)])
    u, v = (shape.src, shape.dst) if ids == "integers" else (names[shape.src], names[shape.dst])
    df = pd.DataFrame({"weight": 1.0, "u": u, "v": v})
    g = tb.Graph.from_edges(df, source="u", target="v", directed=directed)
    number = {label: i for i, label in enumerate(g.labels.tolist())} if ids == "strings" else {}
    raw = sp.coo_array((np.ones(len(df)), ([number.get(x, x) for x in df["u"]],
                                           [number.get(x, x) for x in df["v"]])),
                       shape=(g.num_vertices,) * 2).tocsr()
    source = df["u"][0]
    r = tb.bfs(g, source, tasks=3, runtime=runtime)
    expected = _csgraph_distances(raw, g.vertex(source), directed=directed)
    assert np.array_equal(r.distances, expected)
    tb.validate(g, source, r.parents, levels=r.distances)


def test_from_edges_takes_a_dask_frame_by_the_same_column_names():
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe needs pandas and pyarrow")
    shape = next(s for s in SHAPES if s.name.startswith("random_sparse"))
    df = pd.DataFrame({"u": shape.src, "v": shape.dst})
    frame = tb.Graph.from_edges(df, source="u", target="v")
    lazy = tb.Graph.from_edges(dd.from_pandas(df, npartitions=3), source="u", target="v")
    assert np.array_equal(lazy.indptr, frame.indptr)
    assert np.array_equal(lazy.indices, frame.indices)
    with pytest.raises(InvalidParameterError, match="no target column 'dst'.*columns: \\['u', 'v'\\]"):
        tb.Graph.from_edges(dd.from_pandas(df, npartitions=2), source="u", target="dst")


@pytest.mark.parametrize("src, dst, kwargs, words", [
    (pd.DataFrame({"u": [0], "v": [1]}), None, {"source": "u"},
     "no target column 'target' \\(columns: \\['u', 'v'\\]\\); name it with target="),
    (pd.DataFrame({"u": [0], "v": [1]}), None, {"source": "a", "target": "v"},
     "no source column 'a' \\(columns: \\['u', 'v'\\]\\)"),
    ([0], [1], {"source": "u"}, "name the columns of a DataFrame.*got list as src and dst"),
    ([0], None, {"target": "v"}, "name the columns of a DataFrame.*got list as src$"),
])
def test_from_edges_names_the_missing_column(src, dst, kwargs, words):
    with pytest.raises(InvalidParameterError, match=words):
        tb.Graph.from_edges(src, dst, **kwargs)


def test_relabel_numbers_any_ids():
    (src, dst), labels = relabel(["b", "a"], ["c", "b"])
    assert src.tolist() == [1, 0] and dst.tolist() == [2, 1] and labels.tolist() == ["a", "b", "c"]
    (src, dst), labels = relabel([1, "x"], ["x", (2, 3)])  # unorderable: first appearance
    assert labels.tolist() == [1, "x", (2, 3)] and src.tolist() == [0, 1] and dst.tolist() == [1, 2]


def test_string_ids_in_from_edges(runtime):
    g = tb.Graph.from_edges(["a", "b", "c"], ["b", "c", "d"])
    r = tb.bfs(g, "b", runtime=runtime)
    assert r.distance_dict() == {"a": 1, "b": 0, "c": 1, "d": 2}
    with pytest.raises(InvalidVertexError, match="relabel=True"):
        tb.Graph.from_edges(["a"], ["b"], relabel=False)
    with pytest.raises(InvalidParameterError, match="num_vertices cannot be given"):
        tb.Graph.from_edges(["a"], ["b"], num_vertices=3)
    with pytest.raises(InvalidVertexError, match="source 'q' is not a vertex"):
        tb.bfs(g, "q", runtime=runtime)


def test_transpose_keeps_labels():
    g = tb.Graph.from_edges(["a", "b"], ["b", "c"], directed=True)
    t = g.transpose()
    assert t.labels is g.labels and t.neighbors(t.vertex("b")).tolist() == [g.vertex("a")]


def test_the_docstring_examples_run():
    import doctest

    from taskbfs.graph import _graph, convert

    pytest.importorskip("networkx", reason="convert.py's examples use networkx (the 'networkx' extra)")
    for module in (convert, _graph):
        outcome = doctest.testmod(module)
        assert outcome.failed == 0 and outcome.attempted > 0, module


def test_labels_survive_npz_and_text_formats_refuse_them(tmp_path):
    g = tb.Graph.from_edges(["a", "b", "c"], ["b", "c", "a"], directed=True)
    g.save(tmp_path / "g.npz")
    back = tb.read_graph(tmp_path / "g.npz")
    assert back.labels.tolist() == ["a", "b", "c"] and back.vertex("c") == 2
    assert np.array_equal(back.indices, g.indices) and back.directed
    assert tb.read_graph(tmp_path / "g.npz", directed=False).labels.tolist() == ["a", "b", "c"]
    with pytest.raises(InvalidParameterError, match="labelled.*save it as .npz"):
        g.save(tmp_path / "g.mtx")
    tuples = tb.Graph.from_edges([(0, 1)], [(1, 1)])
    with pytest.raises(InvalidParameterError, match="all strings or all numbers; these are tuple"):
        tuples.save(tmp_path / "t.npz")
