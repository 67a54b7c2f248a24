"""The Graph500 Kronecker generator: ``kronecker_edges(...) -> (src, dst)`` and ``kronecker(...) -> Graph``.

What it returns
---------------
``edgefactor * 2**scale`` edges ``(src[k], dst[k])`` as two int64 arrays of vertex ids in
``0 .. 2**scale - 1``. Like the Graph500 reference, the list may hold self-loops and
repeated edges; :func:`kronecker` drops them when it builds the (undirected) Graph.

Approach (Graph500 specification, reference ``kronecker_generator.m``; paper 002)
---------------------------------------------------------------------------------
Each edge is placed bit by bit: for each of the ``scale`` bits, with ``ab = A + B``,
``c_norm = C / (1 - ab)``, ``a_norm = A / ab``::

    ii_bit = rand > ab
    jj_bit = rand > (c_norm * ii_bit + a_norm * (1 - ii_bit))

so the edge falls in quadrant (0,0), (0,1), (1,0), (1,1) with probability A, B, C, D.
``rand`` is a 32-bit uniform (the two halves of one 64-bit draw), placed by a compiled
loop (numba) over the edges. The vertex ids are then relabelled by a permutation of
``0 .. 2**scale - 1`` and the edges shuffled.

Chunks
------
The edges are cut into ``num_chunks(scale, edgefactor)`` chunks of
``taskbfs.kronecker.chunk-edges`` edges (the last one shorter). Chunk ``i`` draws from its
own stream, ``PCG64(SeedSequence(seed, spawn_key=(i,)))`` (what ``SeedSequence.spawn``
would give child ``i``), so a worker can generate chunk ``i`` alone; the full list is the
chunks concatenated in chunk order. The edges depend on the seed and on the chunk size:
change ``KRONECKER_CHUNK_EDGES`` and the same seed gives a different (equally valid) graph.

* The vertex permutation is global: it depends on the seed alone and every chunk applies
  the same one. It is a seeded bijective hash of the id, the ``scramble`` function of the
  Graph500 reference C generator (add, multiply by an odd constant, reverse the bits,
  twice), so it is never materialised: a chunk costs O(chunk) time and memory at any
  scale up to 40, where an explicit ``randperm(2**scale)`` would not fit.
* The edge shuffle is within a chunk. A global shuffle would need every edge in one place,
  which would defeat independent generation; and since every edge is an independent draw
  from the same distribution, the order of the chunks carries no structure (no locality)
  for the shuffle to hide.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from taskbfs import config
from taskbfs.errors import InvalidParameterError
from taskbfs.graph._graph import Graph, _check_fits_in_memory, _chunks_to_csr, index_dtype

__all__ = ["kronecker", "kronecker_edges", "num_chunks"]

MIN_SCALE, MAX_SCALE = 1, 40

#: Initiator probabilities A, B, C of the Graph500 specification (D = 1 - A - B - C).
INITIATOR = (0.57, 0.19, 0.19)

_BLOCK = 1 << 16  # edges processed at a time inside a chunk (keeps temporaries in cache)
_MASK64 = (1 << 64) - 1
# Odd multipliers of the Graph500 reference ``scramble`` (generator/graph_generator.c).
_SCRAMBLE_K0 = 0x4519840211493211
_SCRAMBLE_K1 = 0x3050852102C843A5


# ====================================================================== public API
def num_chunks(scale: int, edgefactor: int = 16) -> int:
    """Number of independently generable chunks of the edge list.

    Examples
    --------
    >>> from taskbfs.graph import num_chunks
    >>> num_chunks(16, 16)  # 2**20 edges, one chunk of 2**20
    1
    """
    scale, edgefactor = _check_scale(scale), _check_edgefactor(edgefactor)
    return max(1, math.ceil(_num_edges(scale, edgefactor) / config.get("kronecker.chunk-edges")))


def kronecker_edges(scale: int, edgefactor: int = 16, seed: int = 1, chunk: int | None = None):
    """Graph500 Kronecker edge list, or one chunk of it.

    Parameters
    ----------
    scale : int
        ``2**scale`` vertices, 1 <= scale <= 40.
    edgefactor : int, default 16
        ``edgefactor * 2**scale`` edges in all.
    seed : int, default 1
        Non-negative; the same seed gives the same edges, on any machine.
    chunk : int, optional
        ``None``: the whole list. ``i`` in ``0 .. num_chunks(scale, edgefactor) - 1``: only
        chunk ``i`` (generated from its own random stream, without the others).

    Returns
    -------
    src, dst : ndarray of int64
        Endpoints; may include self-loops and repeated edges (as the specification allows).

    Examples
    --------
    >>> from taskbfs.graph import kronecker_edges
    >>> src, dst = kronecker_edges(4, edgefactor=2, seed=7)
    >>> src.size, int(max(src.max(), dst.max())) < 16
    (32, True)
    """
    scale, edgefactor = _check_scale(scale), _check_edgefactor(edgefactor)
    seed = _check_seed(seed)
    total = _num_edges(scale, edgefactor)
    chunks = num_chunks(scale, edgefactor)
    if chunk is not None:
        chunk = _check_chunk(chunk, chunks)
        return _chunk_edges(scale, seed, chunk, _chunk_bounds(chunk, total))
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)

    def fill(i: int) -> None:
        lo, hi = _chunk_bounds(i, total)
        src[lo:hi], dst[lo:hi] = _chunk_edges(scale, seed, i, (lo, hi))

    # Chunks are independent and their compiled loops and numpy's draws release the GIL:
    # one thread per core (scale 22 on 2 cores: 7.9 s serial, 4.4 s with 2 threads).
    workers = min(chunks, os.cpu_count() or 1)
    if workers == 1:
        for i in range(chunks):
            fill(i)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(fill, range(chunks)))
    return src, dst


def kronecker(scale: int, edgefactor: int = 16, seed: int = 1) -> Graph:
    """The undirected Graph500 Kronecker graph with ``2**scale`` vertices.

    Self-loops and repeated edges of the generated list are dropped, so ``num_edges`` is a
    little below ``edgefactor * 2**scale``; vertices that no edge touches stay, isolated.

    Examples
    --------
    >>> from taskbfs.graph import kronecker
    >>> g = kronecker(6, edgefactor=8, seed=3)
    >>> g.num_vertices, g.directed, g.num_edges <= 8 * 64
    (64, False, True)
    """
    scale, edgefactor = _check_scale(scale), _check_edgefactor(edgefactor)
    n = 1 << scale
    ids = index_dtype(n)  # the chunks kept in the ids' own width: half the bytes below 2^31
    edges = _num_edges(scale, edgefactor)
    # the edges kept (two ids each) and one chunk being generated (~32 bytes an edge)
    working = 2 * ids.itemsize * edges + 32 * min(edges, config.get("kronecker.chunk-edges"))
    _check_fits_in_memory(n, edges, directed=False, extra=working)
    chunks = []
    for i in range(num_chunks(scale, edgefactor)):
        src, dst = kronecker_edges(scale, edgefactor, seed, chunk=i)
        chunks.append((src.astype(ids), dst.astype(ids)))
        del src, dst
    if n > (1 << 31):
        src, dst = (np.concatenate(side) for side in zip(*chunks, strict=True))
        return Graph.from_edges(src, dst, num_vertices=n, directed=False)
    indptr, indices = _chunks_to_csr(chunks, n, directed=False)
    return Graph.made_valid(indptr, indices, n, False)


# ====================================================================== the generator
def _kronecker_raw(scale: int, edgefactor: int = 16, seed: int = 1, chunk: int = 0):
    """Chunk ``chunk`` before the vertex permutation and the shuffle (for tests)."""
    total = _num_edges(scale, edgefactor)
    lo, hi = _chunk_bounds(chunk, total)
    return _raw_edges(scale, hi - lo, _chunk_rng(seed, chunk))


def _chunk_edges(scale: int, seed: int, chunk: int, bounds: tuple[int, int]):
    lo, hi = bounds
    rng = _chunk_rng(seed, chunk)
    src, dst = _raw_edges(scale, hi - lo, rng)
    keys = _scramble_keys(seed)
    src, dst = _scramble(src, scale, keys), _scramble(dst, scale, keys)
    order = rng.permutation(hi - lo)
    return src[order], dst[order]


def _raw_edges(scale: int, m: int, rng: np.random.Generator):
    """Bit-by-bit placement of ``m`` edges; bit ``b`` of the ids comes from round ``b``.

    Per block of edges the stream is drawn as the numpy construction drew it, one 64-bit
    draw per edge and round (round r's k draws, as 2k uint32: the first k for ``ii``, the
    next k for ``jj``), and the bits are placed by a compiled loop
    (tests/reference_kronecker.py holds the numpy construction; the edges are the same).
    """
    t_ab, t_a, t_c = _thresholds()
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    draw = rng.bit_generator.random_raw
    for lo in range(0, m, _BLOCK):
        k = min(m, lo + _BLOCK) - lo
        uniforms = draw(k * scale).view(np.uint32)
        _place_bits(uniforms, scale, k, t_ab, t_a, t_c, src[lo : lo + k], dst[lo : lo + k])
    return src, dst


@njit(nogil=True, cache=True)
def _place_bits(uniforms, scale, k, t_ab, t_a, t_c, src, dst):  # pragma: no cover - numba
    src[:] = 0
    dst[:] = 0
    for r in range(scale):  # round by round, as the draws lie in memory
        base = 2 * k * r
        for i in range(k):
            ii = uniforms[base + i] > t_ab
            u_jj = uniforms[base + k + i]
            jj = (u_jj > t_c) if ii else (u_jj > t_a)
            src[i] = (src[i] << 1) + (1 if ii else 0)
            dst[i] = (dst[i] << 1) + (1 if jj else 0)


def _thresholds():
    """``rand > p`` with ``rand = u / 2**32`` is ``u > floor(p * 2**32)`` for integer ``u``."""
    a, b, c = INITIATOR
    ab = a + b
    c_norm, a_norm = c / (1.0 - ab), a / ab

    def to_u32(p):
        return np.uint32(min(max(math.floor(p * 2.0**32), 0), 2**32 - 1))

    return to_u32(ab), to_u32(a_norm), to_u32(c_norm)


def _chunk_rng(seed: int, chunk: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(chunk,))))


def _scramble_keys(seed: int) -> tuple[int, int]:
    """Two 64-bit keys for the vertex permutation, from the seed alone."""
    k0, k1 = np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64)
    return int(k0), int(k1)


def _scramble(v: np.ndarray, scale: int, keys: tuple[int, int]) -> np.ndarray:
    """A seeded bijection of ``0 .. 2**scale - 1`` (Graph500 reference ``scramble``).

    Adding a constant and multiplying by an odd one are bijections modulo ``2**scale``
    (only the low ``scale`` bits matter), and so is reversing those bits.
    """
    k0, k1 = keys
    out = np.empty(v.size, dtype=np.int64)
    _scramble_ids(v, np.uint64((k0 + k1) & _MASK64), np.uint64(k0 | _SCRAMBLE_K0),
                  np.uint64(k1 | _SCRAMBLE_K1), np.uint64(64 - scale), out)
    return out


@njit(nogil=True, cache=True)
def _scramble_ids(v, add, mul0, mul1, drop, out):  # pragma: no cover - numba
    for i in range(v.size):
        x = np.uint64(v[i]) + add
        x = _reverse_bits(x * mul0) >> drop
        x = _reverse_bits(x * mul1) >> drop
        out[i] = np.int64(x)


@njit(nogil=True, cache=True)
def _reverse_bits(x):  # pragma: no cover - numba
    """All 64 bits of ``x`` reversed."""
    x = ((x >> np.uint64(1)) & np.uint64(0x5555555555555555)) | ((x & np.uint64(0x5555555555555555)) << np.uint64(1))
    x = ((x >> np.uint64(2)) & np.uint64(0x3333333333333333)) | ((x & np.uint64(0x3333333333333333)) << np.uint64(2))
    x = ((x >> np.uint64(4)) & np.uint64(0x0F0F0F0F0F0F0F0F)) | ((x & np.uint64(0x0F0F0F0F0F0F0F0F)) << np.uint64(4))
    x = ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)) | ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8))
    x = ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)) | ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16))
    return (x >> np.uint64(32)) | (x << np.uint64(32))


# ====================================================================== checks
def _num_edges(scale: int, edgefactor: int) -> int:
    return edgefactor << scale


def _chunk_bounds(chunk: int, total: int) -> tuple[int, int]:
    size = config.get("kronecker.chunk-edges")
    return chunk * size, min(total, (chunk + 1) * size)


def _as_int(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidParameterError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _check_scale(scale) -> int:
    scale = _as_int(scale, "scale")
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise InvalidParameterError(f"scale must be in {MIN_SCALE}..{MAX_SCALE}, got {scale}")
    return scale


def _check_edgefactor(edgefactor) -> int:
    edgefactor = _as_int(edgefactor, "edgefactor")
    if edgefactor < 1:
        raise InvalidParameterError(f"edgefactor must be >= 1, got {edgefactor}")
    return edgefactor


def _check_seed(seed) -> int:
    seed = _as_int(seed, "seed")
    if seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer, got {seed}")
    return seed


def _check_chunk(chunk, chunks: int) -> int:
    chunk = _as_int(chunk, "chunk")
    if not 0 <= chunk < chunks:
        raise InvalidParameterError(f"chunk must be in 0..{chunks - 1}, got {chunk}")
    return chunk
