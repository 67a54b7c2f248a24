"""Graph500 Kronecker generator: determinism, chunks, sizes, the initiator's statistics."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from taskbfs.errors import InvalidParameterError
from taskbfs.graph import Graph, kronecker, kronecker_edges, num_chunks
from taskbfs.graph.kronecker import INITIATOR, _kronecker_raw, _scramble, _scramble_keys

#: The generator's module (``taskbfs.graph.kronecker`` names the function).
KRONECKER = importlib.import_module("taskbfs.graph.kronecker")


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 1000 edges, so small graphs have several (and a short last one)."""
    monkeypatch.setattr(KRONECKER, "_CHUNK_EDGES", 1000)
    return 1000


# ---------------------------------------------------------------------- basics
@pytest.mark.parametrize("scale,edgefactor", [(1, 1), (4, 2), (10, 16), (12, 5)])
def test_sizes_and_ranges(scale, edgefactor):
    src, dst = kronecker_edges(scale, edgefactor, seed=3)
    assert src.dtype == np.int64 and dst.dtype == np.int64
    assert src.size == dst.size == edgefactor * 2**scale
    for ids in (src, dst):
        assert ids.min() >= 0 and ids.max() < 2**scale


def test_deterministic_for_a_seed():
    a = kronecker_edges(10, 8, seed=42)
    b = kronecker_edges(10, 8, seed=42)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_different_seeds_differ():
    a = kronecker_edges(10, 8, seed=1)
    b = kronecker_edges(10, 8, seed=2)
    assert not np.array_equal(a[0], b[0])
    assert np.mean(a[0] == b[0]) < 0.1


def test_degree_distribution_is_skewed():
    g = kronecker(14, 16, seed=1)
    deg = g.degrees()
    assert deg.max() > 20 * deg.mean()
    assert np.mean(deg == 0) > 0.05  # Graph500 graphs have many isolated vertices


def test_kronecker_graph():
    g = kronecker(8, 8, seed=5)
    assert isinstance(g, Graph) and not g.directed
    assert g.num_vertices == 256
    src, dst = kronecker_edges(8, 8, seed=5)
    ref = Graph.from_edges(src, dst, num_vertices=256)
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)
    a = g.to_scipy()
    assert (a != a.T).nnz == 0


# ---------------------------------------------------------------------- chunks
def test_num_chunks(small_chunks):
    assert num_chunks(4, 2) == 1  # 32 edges
    assert num_chunks(10, 1) == 2  # 1024 edges
    assert num_chunks(10, 16) == 17  # 16384 edges: 16 full + 1 short


def test_num_chunks_default_size():
    per = KRONECKER._CHUNK_EDGES
    assert num_chunks(20, 16) == (16 << 20) // per
    assert num_chunks(40, 16) == (16 << 40) // per  # counted, never generated


def test_chunks_concatenate_to_full_list(small_chunks):
    scale, ef, seed = 10, 16, 9
    full = kronecker_edges(scale, ef, seed)
    parts = [kronecker_edges(scale, ef, seed, chunk=i) for i in range(num_chunks(scale, ef))]
    assert [p[0].size for p in parts] == [1000] * 16 + [384]
    assert np.array_equal(np.concatenate([p[0] for p in parts]), full[0])
    assert np.array_equal(np.concatenate([p[1] for p in parts]), full[1])


def test_chunk_generated_alone_is_stable(small_chunks):
    # chunk 5 does not depend on chunks 0..4 having been generated first
    alone = kronecker_edges(10, 4, seed=7, chunk=3)
    kronecker_edges(10, 4, seed=7, chunk=0)
    again = kronecker_edges(10, 4, seed=7, chunk=3)
    assert np.array_equal(alone[0], again[0]) and np.array_equal(alone[1], again[1])
    other = kronecker_edges(10, 4, seed=7, chunk=2)
    assert not np.array_equal(alone[0], other[0])


def test_chunk_is_its_raw_edges_relabelled(small_chunks):
    """A chunk is its raw edges relabelled by one global bijection, in the same order (the
    edges are independent draws: nothing to shuffle)."""
    scale, ef, seed, chunk = 9, 8, 11, 2
    raw_s, raw_d = _kronecker_raw(scale, ef, seed, chunk)
    src, dst = kronecker_edges(scale, ef, seed, chunk=chunk)
    keys = _scramble_keys(seed)
    np.testing.assert_array_equal(src, _scramble(raw_s, scale, keys))
    np.testing.assert_array_equal(dst, _scramble(raw_d, scale, keys))


def test_permutation_is_global(small_chunks):
    """Every chunk uses the same relabelling: the hub (raw vertex 0) maps to one id."""
    scale, ef, seed = 10, 16, 4
    hub = int(_scramble(np.array([0]), scale, _scramble_keys(seed))[0])
    src, dst = kronecker_edges(scale, ef, seed)
    deg = np.bincount(np.concatenate([src, dst]), minlength=2**scale)
    assert int(np.argmax(deg)) == hub
    hubs = {int(_scramble(np.array([0]), scale, _scramble_keys(s))[0]) for s in range(8)}
    assert len(hubs) > 1  # the relabelling depends on the seed


@pytest.mark.parametrize("scale", [1, 2, 5, 12])
def test_scramble_is_a_bijection(scale):
    ids = np.arange(2**scale, dtype=np.int64)
    for seed in (0, 1, 12345):
        out = _scramble(ids, scale, _scramble_keys(seed))
        assert out.dtype == np.int64
        assert np.array_equal(np.sort(out), ids)
    if scale >= 5:
        assert not np.array_equal(_scramble(ids, scale, _scramble_keys(1)), ids)


def test_scramble_large_scale_stays_in_range():
    ids = np.array([0, 1, 2**40 - 1, 12345678901], dtype=np.int64)
    out = _scramble(ids, 40, _scramble_keys(3))
    assert out.min() >= 0 and out.max() < 2**40
    assert len(set(out.tolist())) == 4


# ---------------------------------------------------------------------- statistics
def test_quadrant_statistics_match_initiator():
    """Before relabelling, each bit pair (src bit, dst bit) falls in quadrant
    (0,0), (0,1), (1,0), (1,1) with probabilities A, B, C, D."""
    scale = 12
    src, dst = _kronecker_raw(scale, 16, seed=5)  # 65536 edges
    a, b, c = INITIATOR
    expected = np.array([a, b, c, 1 - a - b - c])
    for bit in (scale - 1, 0, scale // 2):  # the top bit, and two others
        i = (src >> bit) & 1
        j = (dst >> bit) & 1
        freq = np.bincount(2 * i + j, minlength=4) / src.size
        # binomial standard error is below 0.002 here; allow 5 of them
        assert np.allclose(freq, expected, atol=0.01), (bit, freq)


def test_raw_ids_in_range():
    src, dst = _kronecker_raw(6, 4, seed=1)
    assert src.size == 256 and src.min() >= 0 and max(src.max(), dst.max()) < 64


def test_relabelling_preserves_degree_multiset():
    scale, ef, seed = 10, 8, 2
    raw_s, raw_d = _kronecker_raw(scale, ef, seed)
    src, dst = kronecker_edges(scale, ef, seed, chunk=0)
    deg_raw = np.sort(np.bincount(np.concatenate([raw_s, raw_d]), minlength=2**scale))
    deg = np.sort(np.bincount(np.concatenate([src, dst]), minlength=2**scale))
    assert np.array_equal(deg_raw, deg)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize("scale", [0, -1, 41, 2.0, True, "8", None])
def test_bad_scale(scale):
    with pytest.raises(InvalidParameterError, match="scale"):
        kronecker_edges(scale)
    with pytest.raises(InvalidParameterError, match="scale"):
        kronecker(scale)
    with pytest.raises(InvalidParameterError, match="scale"):
        num_chunks(scale)


@pytest.mark.parametrize("edgefactor", [0, -3, 1.5, None])
def test_bad_edgefactor(edgefactor):
    with pytest.raises(InvalidParameterError, match="edgefactor"):
        kronecker_edges(4, edgefactor)


@pytest.mark.parametrize("seed", [-1, 1.5, "x"])
def test_bad_seed(seed):
    with pytest.raises(InvalidParameterError, match="seed"):
        kronecker_edges(4, 2, seed=seed)


@pytest.mark.parametrize("chunk", [-1, 1, 2.0])
def test_bad_chunk(chunk):
    with pytest.raises(InvalidParameterError, match="chunk"):
        kronecker_edges(4, 2, chunk=chunk)


def test_numpy_integers_accepted():
    src, _ = kronecker_edges(np.int64(4), np.int32(2), seed=np.uint8(3), chunk=np.int16(0))
    assert src.size == 32


@pytest.mark.parametrize("scale", [1, 2, 7, 16, 33, 40])
@pytest.mark.parametrize("seed", [0, 5])
def test_compiled_generator_gives_the_references_edges(scale, seed, monkeypatch):
    """The compiled loops give the edges that reference_kronecker.py computes from the
    specification's formulas and the counter-based stream, raw and relabelled, from an
    edge far into the list."""
    from reference_kronecker import raw_edges, scramble, seed_words

    monkeypatch.setattr(KRONECKER, "_CHUNK_EDGES", 3017)
    first, m, ef = 2 * 3017, 3017, 5000  # (chunk 2 is whole at scale 1)
    raw = _kronecker_raw(scale, ef, seed, chunk=2)
    want = raw_edges(scale, first, m, seed)
    np.testing.assert_array_equal(raw[0], want[0])
    np.testing.assert_array_equal(raw[1], want[1])
    if scale <= 16:
        src, dst = kronecker_edges(scale, ef, seed, chunk=2)
        keys = tuple(int(w) for w in seed_words(seed)[:2])
        np.testing.assert_array_equal(src, scramble(want[0], scale, keys))
        np.testing.assert_array_equal(dst, scramble(want[1], scale, keys))


# ---------------------------------------------------------------------- one stream
@pytest.mark.parametrize("chunk_edges", [7, 1000, 3000, 1 << 20])
def test_same_edges_whatever_the_chunk_size(chunk_edges, monkeypatch):
    """The seed alone fixes the list: whole or chunk by chunk, at any chunk size."""
    want = kronecker_edges(10, 16, seed=9)  # the default chunk size: one chunk
    monkeypatch.setattr(KRONECKER, "_CHUNK_EDGES", chunk_edges)
    got = kronecker_edges(10, 16, seed=9)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    if chunk_edges >= 1000:
        parts = [kronecker_edges(10, 16, 9, chunk=i) for i in range(num_chunks(10, 16))]
        np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), want[0])
        np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), want[1])


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_same_graph_whatever_the_threads(threads, monkeypatch):
    """Made on 1-8 threads, in ranges of 100 edges: the same edges and the same graph
    (the generator's threads and the build's)."""
    import importlib

    want_edges = kronecker_edges(11, 8, seed=6)
    want = kronecker(11, 8, seed=6)
    for name in ("taskbfs.graph.kronecker", "taskbfs.graph._csr"):
        module = importlib.import_module(name)
        monkeypatch.setattr(module, "_MIN_RANGE", 100)
        monkeypatch.setattr(module, "cores", lambda: threads)
    src, dst = kronecker_edges(11, 8, seed=6)
    np.testing.assert_array_equal(src, want_edges[0])
    np.testing.assert_array_equal(dst, want_edges[1])
    got = kronecker(11, 8, seed=6)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)


def test_kronecker_graph_matches_scipy():
    """The graph is scipy's build of the edge list: symmetrised, loops and repeats out."""
    from test_graph_build import scipy_reference

    src, dst = kronecker_edges(13, 16, seed=3)
    g = kronecker(13, 16, seed=3)
    ref = scipy_reference(src, dst, 1 << 13, directed=False)
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_graph500_statistics(seed):
    """Scale 14, edgefactor 16: the kept edges, the hub, the isolated and degree-1
    vertices in the ranges of Graph500 graphs of this size drawn from another stream
    (numpy's PCG64, seeds 1-3: 0.812-0.813 of the edges kept, max degree 138-142x the
    mean, 23.4-23.7% isolated, 12.3-12.9% of degree 1)."""
    g = kronecker(14, 16, seed=seed)
    deg = g.degrees()
    assert 0.80 < g.num_edges / (16 << 14) < 0.825
    assert 120 < deg.max() / deg.mean() < 165
    assert 0.22 < np.mean(deg == 0) < 0.25
    assert 0.11 < np.mean(deg == 1) < 0.145
