"""Readers and writers: MatrixMarket, SNAP edge lists, .npz; every error names file and line."""

from __future__ import annotations

import gzip
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskbfs.errors import (
    EmptyGraphError,
    GraphFormatError,
    InvalidParameterError,
    TaskBFSError,
)
from taskbfs.graph import Graph, _edgelist, _mtx, _text, kronecker, read_graph, save_graph
from taskbfs.graph import io as gio
from taskbfs.graph.io import GraphFileNotFoundError


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def edges_of(g: Graph) -> set[tuple[int, int]]:
    src = np.repeat(np.arange(g.num_vertices), g.degrees())
    return set(zip(src.tolist(), g.indices.tolist(), strict=True))


def same_graph(a: Graph, b: Graph) -> bool:
    return (
        a.num_vertices == b.num_vertices
        and a.directed == b.directed
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
    )


def format_error(path: str, line: int | None, call=None, match: str | None = None):
    """Assert ``read_graph(path)`` raises a GraphFormatError naming ``path`` and ``line``."""
    with pytest.raises(GraphFormatError, match=match) as info:
        (call or read_graph)(path)
    err = info.value
    assert err.path == path
    assert err.line == line
    assert path in str(err)
    if line is not None:
        assert f"line {line}" in str(err)
    return err


# ====================================================================== npz
@pytest.mark.parametrize("directed", [False, True])
def test_npz_round_trip(tmp_path, directed):
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 300, 2000), rng.integers(0, 300, 2000), 310, directed)
    path = tmp_path / "g.npz"
    g.save(path)
    h = read_graph(path)
    assert same_graph(g, h)
    assert h.indptr.dtype == np.int64 and h.indices.dtype == g.indices.dtype
    assert h.token != g.token  # a fresh identity per load


def test_npz_round_trip_kronecker(tmp_path):
    g = kronecker(10, 8, seed=2)
    path = str(tmp_path / "k.npz")
    save_graph(g, path)
    assert same_graph(g, read_graph(path))
    assert os.path.exists(path)  # exactly the given name


def test_npz_directed_override(tmp_path):
    g = Graph.from_edges([0, 1], [1, 2], directed=True)
    path = tmp_path / "d.npz"
    g.save(path)
    u = read_graph(path, directed=False)
    assert not u.directed and edges_of(u) == {(0, 1), (1, 0), (1, 2), (2, 1)}
    back = read_graph(path, directed=True)
    assert same_graph(g, back)
    h = Graph.from_edges([0, 1], [1, 2])
    h.save(tmp_path / "u.npz")
    d = read_graph(tmp_path / "u.npz", directed=True)
    assert d.directed and edges_of(d) == edges_of(h)


def write_npz(path, **arrays):
    base = dict(
        taskbfs_version=np.int64(1),
        indptr=np.array([0, 1, 2], dtype=np.int64),
        indices=np.array([1, 0], dtype=np.int32),
        num_vertices=np.int64(2),
        directed=np.bool_(False),
    )
    base.update(arrays)
    base = {k: v for k, v in base.items() if v is not None}
    with open(path, "wb") as f:
        np.savez(f, **base)
    return str(path)


def test_npz_valid_baseline(tmp_path):
    g = read_graph(write_npz(tmp_path / "ok.npz"))
    assert edges_of(g) == {(0, 1), (1, 0)}


@pytest.mark.parametrize(
    "arrays,match",
    [
        ({"indices": None}, "missing"),
        ({"taskbfs_version": np.int64(99)}, "version 99"),
        ({"indptr": np.array([0, 2, 3])}, "indptr"),
        ({"indptr": np.array([0, 2, 1, 2]), "num_vertices": np.int64(3)}, "decreases"),
        ({"indices": np.array([1, 5], dtype=np.int32)}, "outside"),
        ({"indptr": np.array([0, 2, 2]), "indices": np.array([1, 1])}, "duplicate"),
        (
            {
                "indptr": np.array([0, 2, 3, 4]),
                "indices": np.array([2, 1, 0, 0]),
                "num_vertices": np.int64(3),
            },
            "unsorted",
        ),
        ({"indices": np.array([0, 1], dtype=np.int32)}, "self-loop"),
        (
            {"indptr": np.array([0, 2]), "indices": np.array([1, 0], dtype=np.int32)},
            "indptr must have 3 entries",
        ),
        (
            {
                "indptr": np.array([0, 1, 1, 2]),
                "indices": np.array([1, 0], dtype=np.int32),
                "num_vertices": np.int64(3),
            },
            "not symmetric",
        ),
        ({"directed": np.array([True, False])}, "directed"),
        ({"indices": np.array([1.0, 0.0])}, "integer"),
    ],
)
def test_npz_corrupt(tmp_path, arrays, match):
    path = write_npz(tmp_path / "bad.npz", **arrays)
    format_error(path, None, match=match)


def test_npz_not_a_zip(tmp_path):
    path = write(tmp_path, "fake.npz", "0 1\n")
    format_error(path, None, match="npz")


def test_compressed_npz_refused(tmp_path):
    with pytest.raises(InvalidParameterError, match="zip"):
        read_graph(tmp_path / "g.npz.gz")


# ====================================================================== MatrixMarket
def test_mtx_general_is_directed(tmp_path):
    path = write(
        tmp_path,
        "g.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n% a comment\n%another\n4 4 3\n1 2\n2 3\n4 1\n",
    )
    g = read_graph(path)
    assert g.directed and g.num_vertices == 4
    assert edges_of(g) == {(0, 1), (1, 2), (3, 0)}
    u = read_graph(path, directed=False)
    assert not u.directed and edges_of(u) == {(0, 1), (1, 0), (1, 2), (2, 1), (3, 0), (0, 3)}


def test_mtx_symmetric_is_undirected(tmp_path):
    path = write(
        tmp_path,
        "s.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n%\n5 5 4\n2 1 0.5\n3 1 1e-3\n3 2 -2\n5 5 1\n",
    )
    g = read_graph(path)
    assert not g.directed and g.num_vertices == 5  # vertex 3 isolated, 4's loop dropped
    assert edges_of(g) == {(1, 0), (0, 1), (2, 0), (0, 2), (2, 1), (1, 2)}
    d = read_graph(path, directed=True)
    assert d.directed and edges_of(d) == edges_of(g)


def test_mtx_integer_field_case_and_blank_lines(tmp_path):
    path = write(
        tmp_path,
        "i.mtx",
        "%%matrixmarket MATRIX Coordinate Integer General\n\n3 3 2\n\n1 3 7\n3 2 9\n",
    )
    g = read_graph(path)
    assert edges_of(g) == {(0, 2), (2, 1)}


def test_mtx_no_entries(tmp_path):
    g = read_graph(
        write(tmp_path, "e.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 0\n")
    )
    assert g.num_vertices == 3 and g.num_arcs == 0


def test_mtx_zero_size_is_empty(tmp_path):
    path = write(tmp_path, "z.mtx", "%%MatrixMarket matrix coordinate pattern general\n0 0 0\n")
    with pytest.raises(EmptyGraphError, match="z.mtx"):
        read_graph(path)


MTX_HEAD = "%%MatrixMarket matrix coordinate pattern general\n% comment\n"


@pytest.mark.parametrize(
    "body,line,match",
    [
        ("4 4 3\n1 2\n2 3\n", 5, "ends after 2 of the 3 entries declared on line 3"),  # truncated
        ("4 4 3\n", 3, "ends after 0 of the 3"),  # no entries at all
        ("4 4 1\n1 2\n2 3\n", 5, "more entries than the 1"),
        ("4 4 2\n1 2\n2 x\n", 5, "non-numeric token 'x'"),
        ("4 4 2\n1 2\n-2 3\n", 5, "negative"),
        ("4 4 2\n1 2\n0 3\n", 5, "1-based"),
        ("4 4 2\n1 2\n5 3\n", 5, r"outside 1\.\.4"),
        ("4 4 2\n1 2\n3\n", 5, "one column"),
        ("4 4 2\n1 2\n2.5 3\n", 5, "not an integer"),
        ("4 5 2\n1 2\n2 3\n", 3, "square"),
        ("4 4\n1 2\n", 3, "size line"),
        ("4 x 2\n", 3, "non-numeric"),
        ("", 3, "before the size line"),
    ],
)
def test_mtx_malformed(tmp_path, body, line, match):
    path = write(tmp_path, "bad.mtx", MTX_HEAD + body)
    format_error(path, line, match=match)


@pytest.mark.parametrize(
    "banner,match",
    [
        ("%%MatrixMarket matrix array real general", "array"),
        ("%%MatrixMarket vector coordinate real general", "vector"),
        ("%%MatrixMarket matrix coordinate pattern", "must read"),
        ("%%MatrixMarket matrix coordinate banana general", "field 'banana'"),
        ("%%MatrixMarket matrix coordinate real lopsided", "symmetry 'lopsided'"),
        ("1 2", "MatrixMarket"),
        ("% just a comment", "MatrixMarket"),
    ],
)
def test_mtx_bad_header(tmp_path, banner, match):
    path = write(tmp_path, "h.mtx", banner + "\n3 3 1\n1 2\n")
    format_error(path, 1, match=match)


def test_mtx_empty_file(tmp_path):
    format_error(write(tmp_path, "empty.mtx", ""), 1, match="empty file")


def test_mtx_error_deep_in_a_large_file(tmp_path):
    """The fast path fails; the scan must still name the exact line."""
    rng = np.random.default_rng(0)
    rows = rng.integers(1, 1001, size=(20000, 2))
    lines = [f"{a} {b}" for a, b in rows.tolist()]
    lines[15432] = "17 1.5e2"
    text = "%%MatrixMarket matrix coordinate pattern general\n1000 1000 20000\n" + "\n".join(lines)
    path = write(tmp_path, "deep.mtx", text + "\n")
    format_error(path, 15432 + 3, match="not an integer")


# ====================================================================== edge lists
def test_snap_txt_with_comments_and_tabs(tmp_path):
    text = (
        "# Directed graph (each unordered pair of nodes is saved once): Wiki-Vote.txt\n"
        "# Nodes: 4 Edges: 4\n"
        "# FromNodeId\tToNodeId\n"
        "0\t1\n1\t2\n2\t0\n\n3\t3\n"
    )
    path = write(tmp_path, "snap.txt", text)
    g = read_graph(path)
    assert not g.directed and g.num_vertices == 4  # undirected by default
    assert edges_of(g) == {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)}
    d = read_graph(path, directed=True)
    assert d.directed and edges_of(d) == {(0, 1), (1, 2), (2, 0)}


def test_csv_header_and_weight_column(tmp_path):
    path = write(tmp_path, "w.csv", "src,dst,weight\n0,1,0.5\n1,2,3\n2,3,1e9\n")
    g = read_graph(path)
    assert edges_of(g) == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)}


def test_header_with_spaces_and_percent_comments(tmp_path):
    path = write(
        tmp_path, "h.el", "% KONECT-style comment\n%  more\nFromNodeId ToNodeId\n5 6\n6 7\n"
    )
    g = read_graph(path)
    assert g.num_vertices == 8 and edges_of(g) >= {(5, 6), (6, 7)}


def test_sparse_ids_are_kept(tmp_path):
    path = write(tmp_path, "sparse.txt", "0 7\n7 1000000\n")
    g = read_graph(path)
    assert g.num_vertices == 1_000_001
    assert g.neighbors(7).tolist() == [0, 1000000]
    assert g.degree(1) == 0 and g.degree(999_999) == 0  # gaps are isolated vertices


def test_tsv_and_format_override(tmp_path):
    g = read_graph(write(tmp_path, "g.tsv", "0\t1\n1\t2\n"))
    assert g.num_edges == 2
    path = write(tmp_path, "graph.dat", "0 1\n1 2\n")
    assert read_graph(path, format="edgelist").num_edges == 2
    mtx_named_txt = write(
        tmp_path, "m.txt", "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n2 1\n"
    )
    assert edges_of(read_graph(mtx_named_txt, format="mtx")) == {(0, 1), (1, 0)}


def test_mixed_comments_blank_lines_and_indentation(tmp_path):
    text = "# hash\n\n0 1   # trailing\n   \n  % indented percent\n\t1 2\n% percent\n2 3 99 extra\n"
    g = read_graph(write(tmp_path, "mixed.txt", text))
    assert edges_of(g) == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)}


def test_crlf_bom_and_quotes(tmp_path):
    path = tmp_path / "win.csv"
    path.write_bytes(b'\xef\xbb\xbf"src","dst"\r\n"0","1"\r\n1, 2\r\n')
    g = read_graph(path)
    assert edges_of(g) == {(0, 1), (1, 0), (1, 2), (2, 1)}


def test_gzip_edge_list(tmp_path):
    path = tmp_path / "g.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("# c\n0 1\n1 2\n")
    assert read_graph(path).num_edges == 2


@pytest.mark.parametrize(
    "text,line,match",
    [
        ("0 1\n1 x\n2 3\n", 2, "non-numeric token 'x'"),
        ("0 1\n\n# c\n-1 3\n", 4, "negative vertex id -1"),
        ("0 1\n1\n2 3\n", 2, "one column"),
        ("0 1\n1 2.5\n", 2, "'2.5' is not an integer"),
        ("0 1\n1.0 2\n", 2, "'1.0' is not an integer"),
        ("0 1\n1 1e3\n", 2, "not an integer"),
        ("src 5\n0 1\n", 1, "non-numeric token 'src'"),  # half a header
        ("0 1\nsrc dst\n", 2, "non-numeric token 'src'"),  # header not first
        ("# c\nsrc dst\nu v\n", 3, "non-numeric token 'u'"),  # two headers
        ("0 1\n1 99999999999999999999\n", 2, "too large"),
        ("0 1\n1 0x1f\n", 2, "non-numeric"),
    ],
)
def test_edge_list_malformed(tmp_path, text, line, match):
    format_error(write(tmp_path, "bad.txt", text), line, match=match)


def test_csv_malformed(tmp_path):
    format_error(write(tmp_path, "bad.csv", "u,v\n0,1\n1 2\n"), 3, match="one column")
    format_error(write(tmp_path, "bad2.csv", "0,1\n1,\n"), 2, match="one column")


def test_binary_garbage(tmp_path):
    path = tmp_path / "bin.txt"
    path.write_bytes(b"0 1\n\xff\xfe\x00\x01\n")
    format_error(str(path), 2, match="UTF-8")


@pytest.mark.parametrize("text", ["", "\n\n", "# only comments\n% and more\n", "src,dst\n"])
def test_empty_edge_list(tmp_path, text):
    path = write(tmp_path, "empty.txt", text)
    with pytest.raises(EmptyGraphError) as info:
        read_graph(path)
    assert path in str(info.value)
    assert isinstance(info.value, TaskBFSError)


def test_error_deep_in_a_large_edge_list(tmp_path):
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, 5000, size=(50000, 2))
    lines = ["# header comment"] + [f"{a}\t{b}" for a, b in pairs.tolist()]
    lines[43210] = "12\t-7"
    path = write(tmp_path, "deep.txt", "\n".join(lines) + "\n")
    format_error(path, 43211, match="negative vertex id -7")


def test_valid_file_never_scans_line_by_line(tmp_path, monkeypatch):
    """Well-formed files go through the vectorised path only."""

    def fail(*args, **kwargs):
        raise AssertionError("line-by-line scan used on a valid file")

    monkeypatch.setattr(_edgelist, "_scan_edgelist", fail)
    monkeypatch.setattr(_mtx, "_scan_mtx", fail)
    read_graph(write(tmp_path, "a.txt", "# c\n# d\nFromNodeId\tToNodeId\n0\t1\n1\t2\n"))
    read_graph(write(tmp_path, "b.csv", "src,dst,w\n0,1,2.5\n3,4,1\n"))
    read_graph(write(tmp_path, "c.el", "% k\n0 1 1 9\n\n5 2\n"))
    read_graph(
        write(
            tmp_path,
            "d.mtx",
            "%%MatrixMarket matrix coordinate real general\n%\n3 3 2\n1 2 1.0\n3 1 2\n",
        )
    )


# random well-formed files: the fast path and the careful scan agree with the truth
_sep = st.sampled_from([" ", "\t", "  ", ","])


@st.composite
def edge_files(draw):
    m = draw(st.integers(1, 40))
    pairs = draw(
        st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=m, max_size=m)
    )
    sep = draw(_sep)
    comma = sep == ","
    lines = []
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["# SNAP", "% konect"])))
    if draw(st.booleans()):
        lines.append(sep.join(["src", "dst"]))
    for u, v in pairs:
        extra = draw(st.sampled_from(["", "1", "0.25", "x"]))
        cols = [str(u), str(v)] + ([extra] if extra else [])
        line = sep.join(cols)
        if not comma and draw(st.booleans()):
            line = " " + line + " "
        lines.append(line)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# note", "   "])))
    return ("x.csv" if comma else "x.txt"), "\n".join(lines) + "\n", pairs


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=edge_files())
def test_random_edge_files_fast_and_scan_agree(tmp_path, case):
    name, text, pairs = case
    path = write(tmp_path, name, text)
    src, dst = np.array(pairs).T
    truth = Graph.from_edges(src, dst)
    fast = read_graph(path)
    assert same_graph(fast, truth)
    layout = _edgelist._sniff_edgelist(path)
    s, d = _edgelist._scan_edgelist(path, layout)
    assert np.array_equal(s, src) and np.array_equal(d, dst)


# ====================================================================== writers
@pytest.mark.parametrize("name", ["g.mtx", "g.txt", "g.csv", "g.el", "g.txt.gz"])
@pytest.mark.parametrize("directed", [False, True])
def test_text_writers_round_trip(tmp_path, name, directed):
    rng = np.random.default_rng(5)
    g = Graph.from_edges(rng.integers(0, 80, 400), rng.integers(0, 80, 400), 80, directed)
    path = tmp_path / name
    save_graph(g, path)
    h = read_graph(path, directed=directed)
    n = g.num_vertices if name.endswith(".mtx") else int(g.indices.max()) + 1
    assert h.num_vertices == n
    assert edges_of(h) == edges_of(g)


def test_save_graph_rejects_non_graph(tmp_path):
    with pytest.raises(InvalidParameterError):
        save_graph([[0, 1]], tmp_path / "x.npz")


# ====================================================================== paths & formats
def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.mtx")
    with pytest.raises(GraphFileNotFoundError) as info:
        read_graph(path)
    err = info.value
    assert isinstance(err, FileNotFoundError)
    assert isinstance(err, GraphFormatError) and isinstance(err, TaskBFSError)
    assert err.path == path and err.filename == path and path in str(err)


def test_directory_is_not_a_graph(tmp_path):
    (tmp_path / "dir.txt").mkdir()
    with pytest.raises(GraphFormatError, match="directory"):
        read_graph(tmp_path / "dir.txt")


def test_unknown_suffix_lists_known(tmp_path):
    path = write(tmp_path, "graph.xyz", "0 1\n")
    with pytest.raises(InvalidParameterError) as info:
        read_graph(path)
    for known in (".mtx", ".txt", ".el", ".csv", ".npz", "edgelist"):
        assert known in str(info.value)


def test_unknown_format_lists_known(tmp_path):
    with pytest.raises(InvalidParameterError, match="mtx, edgelist, npz"):
        read_graph(write(tmp_path, "g.txt", "0 1\n"), format="graphml")


def test_bad_directed_argument(tmp_path):
    with pytest.raises(InvalidParameterError, match="directed"):
        read_graph(write(tmp_path, "g.txt", "0 1\n"), directed="yes")


@pytest.mark.parametrize(("indices", "message"), [
    ([1, 2, 2, 0, 0], "a row is unsorted or holds a duplicate"),  # vertex 0: 1, 2, 2
    ([2, 1, 0, 0, 1], "a row is unsorted or holds a duplicate"),  # vertex 0: 2, 1
    ([1, 2, 1, 0, 0], "self-loops are stored"),  # vertex 1 -> 1
    ([1, 2, 0, 0, 2], "self-loops are stored"),  # vertex 2 -> 2, the last arc
])
def test_npz_with_a_bad_row_is_refused(tmp_path, indices, message):
    """Rows checked in one pass (no arc-sized temporaries): sorted, no repeat, no self-loop."""
    path = tmp_path / "bad.npz"
    np.savez(path, taskbfs_version=np.int64(gio.NPZ_VERSION), indptr=np.array([0, 2, 3, 5]),
             indices=np.array(indices, dtype=np.int32), num_vertices=np.int64(3),
             directed=np.bool_(True))
    with pytest.raises(GraphFormatError, match=f"corrupt taskbfs .npz: {message}"):
        read_graph(path)


# ====================================================================== the compiled parser
def test_valid_files_never_reach_pandas(tmp_path, monkeypatch):
    """Well-formed MatrixMarket and edge-list files are read by the compiled parser alone
    (pandas' reader is the fallback for comments among the edges and the like)."""

    def fail(*args, **kwargs):
        raise AssertionError("pandas used on a file the compiled parser takes")

    monkeypatch.setattr(_edgelist, "_read_table", fail)
    monkeypatch.setattr(_mtx, "_read_table", fail)
    g = read_graph(write(tmp_path, "a.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                            "% c\n4 4 3\n1 2 0.5\n\n 2\t3 1e3\r\n4 1\n"))
    assert edges_of(g) == {(0, 1), (1, 2), (3, 0)}
    g = read_graph(write(tmp_path, "b.txt", "# c\nsrc dst\n0 1\n2\t3 7\n\n4  5\n"))
    assert edges_of(g) == {(0, 1), (2, 3), (4, 5), (1, 0), (3, 2), (5, 4)}
    g = read_graph(write(tmp_path, "c.csv", "0,1,0.5\n2 , 3\n"))
    assert edges_of(g) == {(0, 1), (2, 3), (1, 0), (3, 2)}


def test_ids_beyond_int32_are_read_as_int64(tmp_path):
    big = 2**31 + 5
    src, dst, n, _ = gio.read_edges(write(tmp_path, "big.txt", f"0 1\n{big} 2\n"))
    assert src.tolist() == [0, big] and dst.tolist() == [1, 2]


@pytest.mark.parametrize("line", ["17 1.5e2", "17 2x", "0x1f 2", "3,4"])
def test_lenient_parsers_token_refused(tmp_path, line):
    """What fast_matrix_market (``17 1.5e2`` read as (17, 1)) or pyarrow (``0x1f`` read as
    31) would take is a format error naming the line."""
    body = "\n".join(["1 2"] * 5 + [line] + ["2 3"] * 5) + "\n"
    format_error(write(tmp_path, "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                          f"40 40 11\n{body}"), 8)
    if "," not in line:
        format_error(write(tmp_path, "e.txt", body), 6)


@pytest.mark.parametrize("name", ["g.mm", "g.mtx.gz", "g.csv.gz"])
def test_writers_keep_the_name(tmp_path, name):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    save_graph(g, tmp_path / name)
    assert os.listdir(tmp_path) == [name]
    assert edges_of(read_graph(tmp_path / name)) == edges_of(g)


@pytest.mark.parametrize("window", [4096, 3 * 4096, 1 << 26])
def test_compiled_parser_windows_and_pieces(tmp_path, monkeypatch, window):
    """A file mapped a window at a time and parsed in pieces (small ones here): every
    line read once, wherever the windows and pieces cut; a line longer than a window
    goes to pandas."""
    monkeypatch.setattr(_text, "_WINDOW_BYTES", window)
    monkeypatch.setattr(_text, "_PARSE_BYTES", 1000)
    rng = np.random.default_rng(3)
    pairs = rng.integers(0, 3000, size=(20000, 2))
    body = "".join(f"{u + 1} {v + 1}{' 0.5' * (i % 3)}\n" for i, (u, v) in enumerate(pairs))
    path = write(tmp_path, "w.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                    f"% c\n3000 3000 {len(pairs)}\n{body}")
    src, dst, _, _ = gio.read_edges(path)
    assert np.array_equal(src, pairs[:, 0]) and np.array_equal(dst, pairs[:, 1])
    path = write(tmp_path, "w.txt", "# c\n" + "".join(f"{u}\t{v}\n" for u, v in pairs))
    src, dst, _, _ = gio.read_edges(path)
    assert np.array_equal(src, pairs[:, 0]) and np.array_equal(dst, pairs[:, 1])
    long_line = write(tmp_path, "l.txt", "0 1 " + "7" * 9000 + "\n2 3\n")
    assert gio.read_edges(long_line)[0].tolist() == [0, 2]


def test_file_arcs_tells_the_arcs_before_reading(tmp_path):
    """From the file's size and a few samples of its lines: the arcs read within 5%,
    exactly for MatrixMarket; None for a compressed file."""
    g = kronecker(12, seed=2)
    for name in ("g.txt", "g.mtx"):
        save_graph(g, tmp_path / name)
        src, dst, _, directed = gio.read_edges(tmp_path / name)
        arcs = src.size * (1 if directed else 2)
        estimate = gio.file_arcs(tmp_path / name)
        assert 0.95 * arcs <= estimate <= 1.05 * arcs, name
    assert gio.file_arcs(tmp_path / "g.mtx") == g.num_arcs
    assert gio.file_arcs(tmp_path / "g.txt", directed=True) * 2 == gio.file_arcs(tmp_path / "g.txt")
    save_graph(g, tmp_path / "g.txt.gz")
    assert gio.file_arcs(tmp_path / "g.txt.gz") is None


@pytest.mark.parametrize("flaw", ["asymmetric", "unsorted"])
def test_npz_flaws_in_the_last_rows_are_found(tmp_path, flaw):
    """The row and symmetry checks run on every core over blocks of rows: a flaw in the
    last block is found and named as one in the first is."""
    n = 3000
    path_src, path_dst = np.arange(n - 4), np.arange(1, n - 3)
    src = np.concatenate([path_src, path_dst, [n - 3, n - 2, n - 1]])
    dst = np.concatenate([path_dst, path_src, [n - 2, n - 1, n - 3]])  # and a one-way cycle
    graph = Graph.from_edges(src, dst, directed=True, num_vertices=n)
    path = tmp_path / "late.npz"
    graph.save(str(path))
    saved = dict(np.load(path))
    if flaw == "asymmetric":
        saved["directed"] = np.bool_(False)  # in-degrees equal out-degrees, yet not symmetric
        message = f"undirected graph is not symmetric: arc {n - 3}->{n - 2} is stored, {n - 2}->{n - 3} is not"
    else:
        row = saved["indices"][saved["indptr"][n - 5]:saved["indptr"][n - 4]]
        row[:] = row[::-1].copy()  # vertex n - 5: n - 4, n - 6
        message = "a row is unsorted or holds a duplicate"
    np.savez(path, **saved)
    with pytest.raises(GraphFormatError, match=re.escape(f"corrupt taskbfs .npz: {message}")):
        read_graph(path)
