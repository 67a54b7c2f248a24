"""Graph500 Kronecker generator: determinism, chunks, sizes, the initiator's statistics."""

from __future__ import annotations

import numpy as np
import pytest

from taskbfs import config
from taskbfs.errors import InvalidParameterError
from taskbfs.graph import Graph, kronecker, kronecker_edges, num_chunks
from taskbfs.graph.kronecker import INITIATOR, _kronecker_raw, _scramble, _scramble_keys


@pytest.fixture
def small_chunks(setting, monkeypatch):
    """Chunks of 1000 edges, so small graphs have several (and a short last one)."""
    setting("kronecker.chunk-edges", 1000)
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
    per = config.get("kronecker.chunk-edges")
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


def test_chunk_is_permuted_and_shuffled_raw_chunk(small_chunks):
    """A chunk is its raw edges relabelled by one global bijection, then reordered."""
    scale, ef, seed, chunk = 9, 8, 11, 2
    raw_s, raw_d = _kronecker_raw(scale, ef, seed, chunk)
    src, dst = kronecker_edges(scale, ef, seed, chunk=chunk)
    keys = _scramble_keys(seed)
    relabelled = np.stack([_scramble(raw_s, scale, keys), _scramble(raw_d, scale, keys)], axis=1)
    got = np.stack([src, dst], axis=1)
    order = lambda e: e[np.lexsort((e[:, 1], e[:, 0]))]  # noqa: E731
    assert np.array_equal(order(relabelled), order(got))  # same multiset of edges
    assert not np.array_equal(relabelled, got)  # ... in a different order


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


@pytest.mark.parametrize("scale", [1, 2, 7, 16, 33])
@pytest.mark.parametrize("seed", [0, 5])
def test_compiled_generator_gives_the_numpy_constructions_edges(scale, seed):
    # The bit placement and the vertex permutation are compiled loops; the numpy
    # construction in reference_kronecker.py must give the very same edges.
    from reference_kronecker import raw_edges, scramble

    from taskbfs.graph.kronecker import (
        _chunk_rng,
        _raw_edges,
        _scramble,
        _scramble_keys,
        _thresholds,
    )

    m = 3 * (1 << 16) + 17  # several blocks and a short one
    got = _raw_edges(scale, m, _chunk_rng(seed, 2))
    want = raw_edges(scale, m, _chunk_rng(seed, 2), _thresholds())
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    keys = _scramble_keys(seed)
    np.testing.assert_array_equal(_scramble(got[0], scale, keys), scramble(got[0], scale, keys))
