"""Graphs built on the workers (``tb.DistributedGraph``) and results left there.

What it proves
--------------
* The chunk-level build (``taskbfs.graph.chunked``: histogram, range bounds, all-to-all
  split, range CSR) gives exactly ``Graph.from_edges``'s CSR on every shape of
  ``tests/shapes.py``, for several chunkings and range counts; a re-cut and a transpose
  of the ranges give the re-cut / transposed graph's rows.
* On the embedded runtime, one worker process and three worker processes: a graph built
  on the workers (from dask arrays, a dask dataframe, Kronecker chunks generated there,
  edge-list and MatrixMarket files read there) gathers to exactly the graph built here
  from the same edges; searches of it (dispatch "auto" and "tasks", T equal to or other
  than its ranges, every direction) give scipy's distances and parents that pass the
  Graph500 rules, checked range by range on the workers; wrong parents are caught by the
  same rule as with the graph in hand.
* Results of such searches stay on the workers until read: ``r.to_dask()`` chunks, the
  values once computed, ``r.distances`` gathered on first read.
* Bad input is a clear error naming the chunk, edge, file or parameter.
"""

from __future__ import annotations

import contextlib

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from dask.utils import key_split
from distributed import Client, LocalCluster, get_task_stream
from reference import scipy_distances
from shapes import shape, shapes

import taskbfs as tb
from taskbfs.graph.chunked import (
    arc_histogram,
    join_rows,
    piece_arcs,
    range_bounds,
    range_csr,
    split_arcs,
)
from taskbfs.placed import build as bfs_distributed
from taskbfs.placed import placement
from taskbfs.placed.graph import DistributedGraph

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

# ---------------------------------------------------------------------- no Dask: the pieces


def _chunked_csr(src, dst, n, directed, chunks, ranges, bins, threads=1):
    """The chunk-level build run in this process (each range's rows sorted on
    ``threads`` threads): returns (bounds, [(indptr, indices)])."""
    pairs = list(zip(np.array_split(src, chunks), np.array_split(dst, chunks), strict=True))
    hist = sum(arc_histogram(s, d, n, bins, directed) for s, d in pairs)
    bounds = range_bounds(hist, n, ranges)
    splits = [split_arcs(s, d, bounds, n, directed) for s, d in pairs]
    rows = [range_csr([k[o[r]:o[r + 1]] for k, o in splits], int(bounds[r]), int(bounds[r + 1]), n,
                      threads) for r in range(ranges)]
    return bounds, rows


def _joined(bounds, rows):
    indptr, offset = [np.zeros(1, dtype=np.int64)], 0
    for ip, _ in rows:
        indptr.append(ip[1:] + offset)
        offset += int(ip[-1])
    return np.concatenate(indptr), np.concatenate([ix for _, ix in rows])


@pytest.mark.parametrize("s", shapes(), ids=lambda s: s.name)
@pytest.mark.parametrize("chunks, ranges, bins, threads",
                         [(1, 1, 64, 1), (3, 2, 5, 3), (7, 5, 1 << 16, 2)])
def test_pieces_are_from_edges_csr(s, chunks, ranges, bins, threads):
    ranges = min(ranges, s.num_vertices)
    bins = min(max(bins, ranges), s.num_vertices)
    g = tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    bounds, rows = _chunked_csr(s.src, s.dst, s.num_vertices, s.directed, chunks, ranges, bins,
                                threads)
    assert bounds[0] == 0 and bounds[-1] == s.num_vertices and np.all(np.diff(bounds) > 0)
    indptr, indices = _joined(bounds, rows)
    np.testing.assert_array_equal(indptr, g.indptr)
    np.testing.assert_array_equal(indices, g.indices)
    assert indices.dtype == g.indices.dtype
    # another cut of the same rows, and the transpose by the same all-to-all
    other = tb.partition(g, min(3, s.num_vertices), balance="vertices")
    pieces = [(int(bounds[r]), *rows[r]) for r in range(ranges)]
    for lo, hi in other:
        ip, ix = join_rows(lo, hi, pieces)
        np.testing.assert_array_equal(ip, g.indptr[lo:hi + 1] - g.indptr[lo])
        np.testing.assert_array_equal(ix, g.indices[g.indptr[lo]:g.indptr[hi]])
    reversed_ = [split_arcs(*piece_arcs(ip, ix, lo)[::-1], bounds, s.num_vertices, True)
                 for lo, ip, ix in pieces]
    gt = g.transpose()
    for r in range(ranges):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        ip, ix = range_csr([k[o[r]:o[r + 1]] for k, o in reversed_], lo, hi, s.num_vertices,
                           threads)
        np.testing.assert_array_equal(ip, gt.indptr[lo:hi + 1] - gt.indptr[lo])
        np.testing.assert_array_equal(ix, gt.indices[gt.indptr[lo]:gt.indptr[hi]])


@pytest.mark.parametrize("header, sep, newline", [("", " ", "\n"), ("src,dst\n", ",", "\n"),
                                                  ("# c\n% x\nu\tv\n", "\t", "\r\n")])
def test_edge_list_read_in_byte_ranges(tmp_path, header, sep, newline):
    """Every line lands in exactly one byte range, whatever the cut; errors name the line."""
    from taskbfs.graph.io import byte_ranges, read_edges

    s = shape("random_sparse_500_1000")
    path = tmp_path / "edges.csv"
    lines = [f"{u}{sep}{v}" + ("\n# comment\n" if i % 300 == 7 else "")
             for i, (u, v) in enumerate(zip(s.src, s.dst, strict=True))]
    path.write_bytes((header + "\n".join(lines) + "\n").replace("\n", newline).encode())
    whole = read_edges(path)
    np.testing.assert_array_equal(whole[0], s.src)
    for size in (1, 13, 1000, 1 << 20):
        parts = [read_edges(path, byte_range=r) for r in byte_ranges(path, size)]
        np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), s.src)
        np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), s.dst)
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n" * 1000 + "1 x\n")
    with pytest.raises(tb.GraphFormatError, match="bad.txt, line 1001"):
        [read_edges(bad, byte_range=r) for r in byte_ranges(bad, 1000)]
    gz = tmp_path / "g.txt.gz"
    gz.write_bytes(b"")
    assert byte_ranges(gz, 10) is None


@pytest.mark.parametrize("symmetry", ["general", "symmetric"])
def test_matrix_market_read_in_byte_ranges(tmp_path, symmetry):
    """A MatrixMarket file's ranges hold each entry once, whatever the cut (the header
    in none); a bad line is named; a count other than the declared one is found over all
    the ranges (check_entry_count)."""
    from taskbfs.graph.io import byte_ranges, check_entry_count, read_edges

    s = shape("random_sparse_500_1000")
    head = f"%%MatrixMarket matrix coordinate real {symmetry}\n% c\n"
    body = "".join(f"{u + 1} {v + 1} 0.5\n" + ("% x\n" if i % 300 == 7 else "")
                   for i, (u, v) in enumerate(zip(s.src, s.dst, strict=True)))
    path = tmp_path / "g.mtx"
    path.write_text(f"{head}{s.num_vertices} {s.num_vertices} {s.src.size}\n{body}")
    whole = read_edges(path)
    for size in (1, 13, 1000, 1 << 20):
        parts = [read_edges(path, byte_range=r) for r in byte_ranges(path, size)]
        assert {p[2] for p in parts} == {s.num_vertices} and {p[3] for p in parts} == {whole[3]}
        if symmetry == "general":
            np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), s.src)
            np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), s.dst)
        check_entry_count(path, None, *[p[0].size for p in parts])
    path.write_text(f"{head}{s.num_vertices} {s.num_vertices} {s.src.size + 1}\n{body}")
    counts = [read_edges(path, byte_range=r)[0].size for r in byte_ranges(path, 1000)]
    with pytest.raises(tb.GraphFormatError, match=r"g.mtx, line \d+: file ends after"):
        check_entry_count(path, None, *counts)
    bad = tmp_path / "bad.mtx"
    bad.write_text(f"{head}4 4 1001\n" + "1 2\n" * 1000 + "1 2.5\n")
    with pytest.raises(tb.GraphFormatError, match="bad.mtx, line 1004"):
        [read_edges(bad, byte_range=r) for r in byte_ranges(bad, 1000)]


def test_range_bounds_balance_arcs():
    """Cuts fall where the cumulative arc count crosses k * arcs / R (bins of 4 ids)."""
    hist = np.array([10, 0, 0, 10, 10, 0, 0, 10])
    np.testing.assert_array_equal(range_bounds(hist, 32, 2), [0, 16, 32])
    np.testing.assert_array_equal(range_bounds(hist, 30, 4), [0, 4, 16, 20, 30])
    with pytest.raises(tb.InvalidParameterError, match="ranges"):
        range_bounds(hist, 32, 9)


# ---------------------------------------------------------------------- clusters

@pytest.fixture(scope="module", params=["embedded", "1 process", "3 processes"])
def rt(request, runtime):
    """The embedded runtime, and LocalClusters of one and of three worker processes."""
    if request.param == "embedded":
        yield runtime
        return
    workers = 1 if request.param == "1 process" else 3
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as wrapped:
        yield wrapped


def _local(s):
    return tb.Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)


def _same_csr(dg: DistributedGraph, g: tb.Graph):
    h = dg.gather()
    assert (h.num_vertices, h.directed, dg.num_arcs) == (g.num_vertices, g.directed, g.num_arcs)
    np.testing.assert_array_equal(h.indptr, g.indptr)
    np.testing.assert_array_equal(h.indices, g.indices)


def _searches_match_scipy(dg, g, rt, source, **kwargs):
    expected = scipy_distances(g, source)
    for dispatch in ("auto", "tasks"):
        r = tb.bfs(dg, source, runtime=rt, dispatch=dispatch, **kwargs)
        assert r.on_workers
        np.testing.assert_array_equal(r.distances, expected)
        tb.validate(dg, source, r.parents, levels=r.distances)
        tb.validate(g, source, r.parents, levels=r.distances)


SEARCHED = ["binary_tree_10", "components", "duplicate_edges", "directed_dag",
            "random_directed_400_1200", "kronecker_like_10_8", "single_vertex"]


@pytest.mark.parametrize("name", SEARCHED)
def test_from_dask_arrays_equals_from_edges(rt, name):
    s = shape(name)
    g = _local(s)
    for chunk in (max(1, s.src.size // 3), s.src.size or 1):
        src, dst = da.from_array(s.src, chunks=chunk), da.from_array(s.dst, chunks=chunk)
        for ranges in (1, 3):
            dg = DistributedGraph.from_dask(src, dst, num_vertices=s.num_vertices,
                                            directed=s.directed, runtime=rt, ranges=ranges)
            _same_csr(dg, g)
    source = s.sources[-1]
    _searches_match_scipy(dg, g, rt, source, tasks=min(3, s.num_vertices))
    _searches_match_scipy(dg, g, rt, source, tasks=min(2, s.num_vertices), balance="vertices",
                          direction="bottom-up")


@contextlib.contextmanager
def three_small_workers():
    """A runtime on 3 worker processes of one thread and 2 GB each."""
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, memory_limit="2GB",
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        yield rt


@pytest.mark.parametrize("share, sends_per_chunk", [(0.125, 3), (1e-12, 5)])
def test_each_chunk_sends_each_owner_its_ranges_in_one_task(monkeypatch, share, sends_per_chunk):
    """On 3 workers of 2 GB, 5 ranges: a chunk's keys reach a worker in one task for all
    of its ranges (3 a chunk), or one per range where they would be above
    ``_SEND_SHARE_OF_MEMORY`` of a worker's memory limit (5); the same graph either
    way, and a directed graph's transpose built the same way."""
    monkeypatch.setattr(placement, "_SEND_SHARE_OF_MEMORY", share)  # read by the client
    monkeypatch.setattr(bfs_distributed, "_CHUNK_EDGES", 3000)
    s = shape("random_directed_400_1200")
    g = _local(s)
    with three_small_workers() as rt:
        with get_task_stream(rt.client) as stream:
            dk = tb.kronecker(11, edgefactor=8, seed=4, runtime=rt, ranges=5)
            dd = DistributedGraph.from_dask(da.from_array(s.src, chunks=400),
                                            da.from_array(s.dst, chunks=400), s.num_vertices,
                                            directed=True, runtime=rt, ranges=5)
        chunks = -(-(8 << 11) // 3000) + 3
        sends = sum(1 for t in stream.data if key_split(t["key"]) == "run_keys")
        assert sends == chunks * sends_per_chunk
        _same_csr(dk, tb.kronecker(11, edgefactor=8, seed=4))
        _same_csr(dd, g)
        _searches_match_scipy(dd, g, rt, s.sources[-1], tasks=5, direction="bottom-up")


@pytest.mark.parametrize("share, held", [(0.5, True), (1e-9, False)])
def test_kronecker_edge_list_held_or_generated_twice(monkeypatch, share, held):
    """On 3 workers of 2 GB, a Kronecker build holds its edge list until its ranges are
    cut while a worker's share of it (by threads) is at most ``_HOLD_SHARE_OF_MEMORY``
    of its memory limit, else generates each chunk twice (for its arc counts, then for
    its split) and holds none: the same graph either way."""
    monkeypatch.setattr(bfs_distributed, "_HOLD_SHARE_OF_MEMORY", share)  # read by the client
    monkeypatch.setattr(bfs_distributed, "_CHUNK_EDGES", 3000)
    with three_small_workers() as rt:
        with get_task_stream(rt.client) as stream:
            dk = tb.kronecker(11, edgefactor=8, seed=4, runtime=rt, ranges=5)
        names = [key_split(t["key"]) for t in stream.data]
        chunks = -(-(8 << 11) // 3000)
        assert names.count("kronecker_chunk") == (chunks if held else 0)
        assert names.count("remade") == (0 if held else 2 * chunks)
        g = tb.kronecker(11, edgefactor=8, seed=4)
        _same_csr(dk, g)
        _searches_match_scipy(dk, g, rt, int(np.argmax(g.degrees())), tasks=5)


@pytest.mark.parametrize("chunk_edges", [1 << 10, 3000, 1 << 20])
def test_kronecker_built_on_workers(rt, monkeypatch, chunk_edges):
    """Chunks generated on the workers, of the chunk size the client's build cuts: the
    graph the same seed gives in this process, at the default chunk size (one chunk)."""
    g = tb.kronecker(11, edgefactor=8, seed=4)
    monkeypatch.setattr(bfs_distributed, "_CHUNK_EDGES", chunk_edges)
    dg = tb.kronecker(11, edgefactor=8, seed=4, runtime=rt, ranges=4)
    assert isinstance(dg, DistributedGraph) and dg.ranges.num_tasks == 4
    _same_csr(dg, g)
    _searches_match_scipy(dg, g, rt, int(np.argmax(g.degrees())), tasks=4)
    _searches_match_scipy(dg, g, rt, 7, tasks=3, direction="top-down")


def test_files_read_on_workers(rt, tmp_path, monkeypatch):
    monkeypatch.setattr(bfs_distributed, "_READ_BYTES", 1000)  # the client's value is passed on
    s = shape("random_directed_400_1200")
    cuts = np.array_split(np.arange(s.src.size), 3)
    paths = []
    for i, idx in enumerate(cuts):
        path = tmp_path / f"part{i}.txt"
        path.write_text("# u v\n" + "".join(f"{u} {v}\n" for u, v in zip(s.src[idx], s.dst[idx],
                                                                            strict=True)))
        paths.append(path)
    for directed in (False, True):
        dg = tb.read_graph(paths, directed=directed, runtime=rt, ranges=2)
        g = tb.Graph.from_edges(s.src, s.dst, directed=directed)
        _same_csr(dg, g)
    _searches_match_scipy(dg, g, rt, 0, tasks=3)
    mtx = []
    for i, idx in enumerate(cuts):
        path = tmp_path / f"part{i}.mtx"
        body = "".join(f"{u + 1} {v + 1}\n" for u, v in zip(s.src[idx], s.dst[idx], strict=True))
        path.write_text(f"%%MatrixMarket matrix coordinate pattern general\n"
                        f"{s.num_vertices} {s.num_vertices} {idx.size}\n{body}")
        mtx.append(path)
    dg = tb.read_graph(mtx, runtime=rt)
    _same_csr(dg, tb.Graph.from_edges(s.src, s.dst, s.num_vertices, directed=True))


def test_from_dask_dataframe(rt):
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe needs pandas and pyarrow")
    s = shape("grid_40x40")
    frame = dd.from_pandas(pd.DataFrame({"a": s.src, "b": s.dst, "w": 1.0}), npartitions=4)
    dg = DistributedGraph.from_dask(frame, runtime=rt, source="a", target="b")
    g = _local(s)
    _same_csr(dg, g)
    _searches_match_scipy(dg, g, rt, 17, tasks=2)
    named = r"no column 'source' \(columns: \['a', 'b', 'w'\]\)"
    with pytest.raises(tb.InvalidParameterError, match=named):
        DistributedGraph.from_dask(frame, runtime=rt)  # the default names: source, target


def test_validation_on_workers_finds_what_the_graph_in_hand_finds(rt):
    s = shape("grid_40x40")
    dg = DistributedGraph.from_dask(da.from_array(s.src, chunks=500),
                                    da.from_array(s.dst, chunks=500), runtime=rt, ranges=3)
    g = _local(s)
    parents = tb.bfs(dg, 0, runtime=rt).parents
    wrong = {5: parents.copy(), 4: parents.copy()}
    wrong[5][41] = 0  # vertex 41 is (1, 1): 0 is not its neighbour
    wrong[4][1599] = -1  # the far corner, a leaf of every BFS tree from 0, left out
    cycle = tb.Graph.from_edges(np.arange(6), (np.arange(6) + 1) % 6)
    dcycle = DistributedGraph.from_dask(da.from_array(np.arange(6), chunks=4),
                                        da.from_array((np.arange(6) + 1) % 6, chunks=4),
                                        runtime=rt, ranges=2)
    # directed: rule 5 read from the parent's row (every range gets every parent)
    d = shape("random_directed_400_1200")
    gd = _local(d)
    ddg = DistributedGraph.from_dask(da.from_array(d.src, chunks=400),
                                     da.from_array(d.dst, chunks=400), num_vertices=d.num_vertices,
                                     directed=True, runtime=rt, ranges=3)
    directed_bad = tb.bfs(gd, 0).parents.copy()
    child = int(np.flatnonzero((directed_bad >= 0) & (np.arange(d.num_vertices) != 0))[-1])
    others = np.setdiff1d(np.flatnonzero(directed_bad >= 0),
                          [child, *gd.indices[gd.indptr[child]:gd.indptr[child + 1]]])
    # a reached vertex that has no arc to the child, and no arc from the child
    stranger = next(int(u) for u in others
                    if child not in gd.indices[gd.indptr[u]:gd.indptr[u + 1]])
    directed_bad[child] = stranger
    cases = [(g, dg, wrong[5], 5), (g, dg, wrong[4], 4),
             (cycle, dcycle, np.array([0, 0, 1, 2, 3, 4]), 3),  # edge (0, 5): levels 0 and 5
             (gd, ddg, directed_bad, 5)]
    for in_hand, kept, bad, rule in cases:
        with pytest.raises(tb.ValidationError) as here:
            tb.validate(in_hand, 0, bad)
        with pytest.raises(tb.ValidationError) as there:
            tb.validate(kept, 0, bad)
        assert there.value.rule == here.value.rule == rule
        assert str(there.value) == str(here.value)


def test_results_stay_on_the_workers(rt):
    s = shape("kronecker_like_10_8")
    dg = DistributedGraph.from_dask(da.from_array(s.src, chunks=2000),
                                    da.from_array(s.dst, chunks=2000), runtime=rt, ranges=3)
    expected = scipy_distances(_local(s), 0)
    for dispatch, tasks in (("auto", 3), ("tasks", 2)):
        r = tb.bfs(dg, 0, tasks=tasks, dispatch=dispatch, runtime=rt)
        assert r.on_workers
        # its level table and counts as the same search of the graph in hand has them
        # (a one-task search's summaries, but its last, are read from its task when asked)
        here = tb.bfs(_local(s), 0, tasks=tasks, dispatch=dispatch, runtime=rt)
        assert r.traversed_edges == here.traversed_edges
        columns = ["level", "direction", "frontier_size", "frontier_edges", "discovered"]
        assert r.levels[columns].equals(here.levels[columns])
        assert len(r.trace) == len(here.trace)
        d, p = r.to_dask()
        assert d.shape == p.shape == (s.num_vertices,) and d.dtype == np.int32
        # one chunk per range: the one-task search's result cut by range, or the
        # owners' pieces when levels are dispatched (taskbfs.search.owners)
        assert len(d.chunks[0]) == tasks
        with rt.client.as_current():
            computed = d.compute()
            assert int((p >= 0).sum().compute()) == int((expected >= 0).sum())
        assert computed.dtype == np.int32  # as declared: the result's dtype
        np.testing.assert_array_equal(computed, expected)
        assert r.on_workers  # nothing gathered yet
        np.testing.assert_array_equal(r.distances, expected)
        assert not r.on_workers


def test_in_process_results_have_task_chunks(runtime):
    g = tb.kronecker(8, seed=2)
    r = tb.bfs(g, 0, tasks=3, runtime=runtime)
    d, _ = r.to_dask()
    assert d.chunks == (tuple(tb.partition(g, 3).sizes.tolist()),)
    np.testing.assert_array_equal(d.compute(), r.distances)


# ---------------------------------------------------------------------- errors

def test_bad_input_is_a_clear_error(runtime, tmp_path):
    src = da.from_array(np.array([0, 1, 2, 3]), chunks=2)
    with pytest.raises(tb.InvalidVertexError, match=r"chunk 1, edge 1 \(3, 9\)"):
        DistributedGraph.from_dask(src, da.from_array(np.array([1, 2, 3, 9]), chunks=2),
                                   num_vertices=5, runtime=runtime)
    with pytest.raises(tb.InvalidVertexError, match="chunk 0: src"):
        DistributedGraph.from_dask(da.from_array(np.array([-1, 1])),
                                   da.from_array(np.array([1, 2])), runtime=runtime)
    with pytest.raises(tb.InvalidParameterError, match="same chunks"):
        DistributedGraph.from_dask(src, da.from_array(np.arange(4), chunks=3), runtime=runtime)
    with pytest.raises(tb.InvalidParameterError, match="ranges"):
        DistributedGraph.from_dask(src, src, runtime=runtime, ranges=0)
    with pytest.raises(tb.InvalidParameterError, match="runtime"):
        DistributedGraph.from_dask(src, src)
    with pytest.raises(tb.InvalidParameterError, match="ranges"):
        tb.kronecker(4, ranges=2)
    with pytest.raises(tb.InvalidParameterError, match="scale"):
        tb.kronecker(0, runtime=runtime)
    with pytest.raises(tb.GraphFormatError, match="missing.txt"):
        tb.read_graph([tmp_path / "missing.txt"], runtime=runtime)
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n1 x\n")
    with pytest.raises(tb.GraphFormatError, match="bad.txt, line 2"):
        tb.read_graph([bad], runtime=runtime)
    dg = tb.kronecker(6, runtime=runtime, ranges=2)
    with pytest.raises(tb.InvalidParameterError, match="max_bytes"):
        dg.gather(max_bytes=100)
    with pytest.raises(tb.InvalidVertexError, match="source"):
        tb.bfs(dg, 64, runtime=runtime)


def test_graph_of_another_runtime_is_refused(runtime):
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster, set_as_default=False) as c:
        dg = tb.kronecker(6, runtime=c, ranges=2)
        with pytest.raises(tb.InvalidParameterError, match="another runtime"):
            tb.bfs(dg, 0, runtime=runtime)
        r = tb.bfs(dg, 0)  # its own runtime by default
        np.testing.assert_array_equal(r.distances, scipy_distances(tb.kronecker(6), 0))
