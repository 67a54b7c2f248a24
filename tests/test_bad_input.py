"""Bad input ends in a clear ``tb.TaskBFSError`` subclass (issue 44, items 4 and 5), and a
graph owns its arrays. None of these needs a cluster: every check runs before one starts."""

from __future__ import annotations

import numpy as np
import pytest

import taskbfs as tb

PATH = tb.Graph.from_edges([0, 1], [1, 2])


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"runtime": 42}, "runtime"),
        ({"progress": 5}, "progress"),
        ({"lam": True}, "λ"),
    ],
)
def test_bad_search_parameter_is_refused_before_a_cluster(kwargs, words):
    with pytest.raises(tb.InvalidParameterError, match=words):
        tb.bfs(PATH, 0, **kwargs)


def test_bad_edges_are_refused():
    with pytest.raises(tb.InvalidParameterError, match="directed"):
        tb.Graph.from_edges([0, 1], [1, 2], directed="no")
    with pytest.raises(tb.InvalidParameterError, match="src"):
        tb.Graph.from_edges(np.array([[0, 1], [1, 2]]), np.array([1, 2, 0, 0]))
    with pytest.raises(tb.InvalidVertexError, match=str(2**64 - 1)):
        tb.Graph.from_edges(np.array([0, 2**64 - 1], dtype=np.uint64), np.array([1, 2], dtype=np.uint64))
    with pytest.raises(tb.InvalidGraphError, match="indptr"):
        tb.Graph.from_csr(np.array([0.0, 1.5, 2.0]), np.array([1, 0]))


def test_a_huge_vertex_id_in_a_file_is_a_format_error(tmp_path):
    path = tmp_path / "huge.el"
    path.write_text(f"0 1\n{'9' * 4301} 2\n")
    with pytest.raises(tb.GraphFormatError, match="too large") as info:
        tb.read_graph(str(path))
    assert "2" in str(info.value)  # the line


def test_an_undirected_npz_that_is_not_symmetric_is_refused(tmp_path):
    path = tmp_path / "cycle.npz"
    tb.Graph.from_edges([0, 1, 2], [1, 2, 0], directed=True).save(str(path))
    saved = dict(np.load(path))
    saved["directed"] = np.bool_(False)  # 0->1->2->0 claimed undirected
    np.savez(path, **saved)
    with pytest.raises(tb.GraphFormatError, match="not symmetric"):
        tb.read_graph(str(path))


def test_a_graph_owns_its_arrays():
    base_indptr = np.array([0, 1, 2, 2], dtype=np.int64)
    base = np.array([1, 0], dtype=np.int64)
    graph = tb.Graph(base_indptr, base[:], 3)
    assert base.flags.writeable and base_indptr.flags.writeable  # the caller's stay writable
    base[0] = 2
    assert graph.indices.tolist() == [1, 0] and not graph.indices.flags.writeable
    # read-only arrays that own their data are kept, not copied
    frozen = np.array([1, 0], dtype=np.int64)
    frozen.setflags(write=False)
    assert tb.Graph(base_indptr, frozen, 3).indices is frozen
