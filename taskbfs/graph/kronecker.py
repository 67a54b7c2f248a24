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
The vertex ids are then relabelled by a permutation of ``0 .. 2**scale - 1``.

The random stream is counter-based: round ``r`` of edge ``k`` (bit ``scale - 1 - r`` of
its ids) draws SplitMix64's output number ``64 k + r`` from a 64-bit key of the seed,
``mix(key + (64 k + r + 1) * 0x9E3779B97F4A7C15)``; its low 32 bits are ``ii``'s
``rand``, its high 32 bits ``jj``'s (``rand = u / 2**32``). So edge ``k`` is a pure
function of the seed and ``k`` (the counters are distinct for the first ``2**58`` edges):
the same seed gives the same list whatever the chunk size, the number of threads or of workers. The edges are
cut into ranges generated on every core at once (compiled loops that release the GIL).

* The vertex permutation depends on the seed alone. It is a seeded bijective hash of the
  id, the ``scramble`` function of the Graph500 reference C generator (add, multiply by an
  odd constant, reverse the bits, twice), so it is never materialised: a range costs
  O(range) time and memory at any scale up to 40, where an explicit
  ``randperm(2**scale)`` would not fit.
* The edges are not shuffled (the reference shuffles them): every edge is an independent
  draw from the same distribution, so the list's order carries no structure for a
  shuffle to hide, and a shuffle would make an edge depend on others.

Chunks
------
The list is cut into ``num_chunks(scale, edgefactor)`` chunks of
``_CHUNK_EDGES`` edges (the last one shorter), so that a worker can
generate chunk ``i`` alone: edges ``i * chunk_edges`` onwards of the same list, which is
the chunks concatenated in chunk order.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numba import njit

from taskbfs.errors import InvalidParameterError
from taskbfs.graph._csr import (
    CSR_STEPS,
    check_fits_in_memory,
    csr_of_pieces,
    index_dtype,
)
from taskbfs.graph._graph import Graph
from taskbfs.graph._progress import BuildProgress
from taskbfs.graph._threads import cores, cuts, run

__all__ = ["kronecker", "kronecker_edges", "num_chunks"]

MIN_SCALE, MAX_SCALE = 1, 40

#: Initiator probabilities A, B, C of the Graph500 specification (D = 1 - A - B - C).
INITIATOR = (0.57, 0.19, 0.19)

#: Pieces per thread that :func:`kronecker` makes its edge list in: a build writes a batch of
#: about a piece a thread before it gives them back, so this is how much of the list is
#: held at the end of the build's one pass at most (1 / 16).
_PIECES_PER_THREAD = 16
#: Fewest edges a thread is handed at a time (a thread's start costs more than fewer).
_MIN_RANGE = 1 << 16
#: Edges per chunk: what one worker generates alone (~16 MB of int64 pairs); the graph
#: does not depend on it.
_CHUNK_EDGES = 1 << 20
_MASK64 = (1 << 64) - 1
# Odd multipliers of the Graph500 reference ``scramble`` (generator/graph_generator.c).
_SCRAMBLE_K0 = 0x4519840211493211
_SCRAMBLE_K1 = 0x3050852102C843A5
# SplitMix64's increment (2**64 / golden ratio) and the multipliers of its output mix (as
# in Vigna's splitmix64.c; the generator is Steele, Lea and Flood's).
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


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
    return max(1, math.ceil(_num_edges(scale, edgefactor) / _CHUNK_EDGES))


def kronecker_edges(scale: int, edgefactor: int = 16, seed: int = 1, chunk: int | None = None):
    """Graph500 Kronecker edge list, or one chunk of it.

    Parameters
    ----------
    scale : int
        ``2**scale`` vertices, 1 <= scale <= 40.
    edgefactor : int, default 16
        ``edgefactor * 2**scale`` edges in all.
    seed : int, default 1
        Non-negative; the same seed gives the same edges, on any machine, whatever the
        chunk size and the number of cores.
    chunk : int, optional
        ``None``: the whole list. ``i`` in ``0 .. num_chunks(scale, edgefactor) - 1``: only
        chunk ``i`` (generated without the others).

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
    lo, hi = 0, total
    if chunk is not None:
        lo, hi = _chunk_bounds(_check_chunk(chunk, num_chunks(scale, edgefactor)), total)
    return _edges(scale, seed, lo, hi, np.int64, cores())


def kronecker(scale: int, edgefactor: int = 16, seed: int = 1, progress=None) -> Graph:
    """The undirected Graph500 Kronecker graph with ``2**scale`` vertices.

    Self-loops and repeated edges of the generated list are dropped, so ``num_edges`` is a
    little below ``edgefactor * 2**scale``; vertices that no edge touches stay, isolated.
    ``progress``: a bar for a build of more than a few seconds (None: when someone may be
    watching), or a function ``progress(done, total)`` (:mod:`taskbfs.graph._progress`).

    Examples
    --------
    >>> from taskbfs.graph import kronecker
    >>> g = kronecker(6, edgefactor=8, seed=3)
    >>> g.num_vertices, g.directed, g.num_edges <= 8 * 64
    (64, False, True)
    """
    scale, edgefactor = _check_scale(scale), _check_edgefactor(edgefactor)
    seed = _check_seed(seed)
    n = 1 << scale
    ids = index_dtype(n)  # the list kept in the ids' own width: half the bytes below 2^31
    edges = _num_edges(scale, edgefactor)
    # the edge list in pieces, each given back once written: the list shrinks as the CSR grows
    check_fits_in_memory(n, edges, directed=False, extra=2 * ids.itemsize * edges, owned=True)
    threads = cores()
    bounds = cuts(edges, _piece_count(edges, threads))
    with BuildProgress(progress, f"kronecker({scale})", bounds.size - 1 + CSR_STEPS) as bar:
        pieces = _edge_pieces(scale, seed, bounds, ids, threads, step=bar.update)
        indptr, indices = csr_of_pieces(pieces, n, directed=False, step=bar.update, owned=True)
    return Graph.made_valid(indptr, indices, n, False)  # (csr_of_pieces emptied pieces)


# ====================================================================== the generator
def _generation_units(edges: int, threads: int) -> int:
    """Ranges of edges :func:`_edges` makes, one a call on a thread."""
    return max(1, min(4 * threads, edges // _MIN_RANGE))


def _piece_count(edges: int, threads: int) -> int:
    """Pieces :func:`kronecker` makes its edge list in: :data:`_PIECES_PER_THREAD` a
    thread, of at least :data:`_MIN_RANGE` edges."""
    return max(1, min(_PIECES_PER_THREAD * threads, edges // _MIN_RANGE))


def _edges(scale: int, seed: int, lo: int, hi: int, dtype, threads: int, step=None):
    """Edges ``lo .. hi - 1`` of the seed's list as ``dtype`` arrays, made on ``threads``
    threads (each a range of them; ``step()`` called after each range)."""
    src = np.empty(hi - lo, dtype=dtype)
    dst = np.empty(hi - lo, dtype=dtype)
    bounds = cuts(hi - lo, _generation_units(hi - lo, threads))
    parts = [(src[a:b], dst[a:b]) for a, b in itertools.pairwise(bounds)]
    _generate(scale, seed, lo + bounds[:-1], parts, threads, step)
    return src, dst


def _edge_pieces(scale: int, seed: int, bounds: np.ndarray, dtype, threads: int,
                 step=None) -> list:
    """Edges ``bounds[i] .. bounds[i + 1] - 1`` of the seed's list as the ``i``-th pair
    of ``dtype`` arrays, each an allocation of its own (given back on its own), made on
    ``threads`` threads (``step()`` called after each pair)."""
    parts = [(np.empty(b - a, dtype=dtype), np.empty(b - a, dtype=dtype))
             for a, b in itertools.pairwise(bounds)]
    _generate(scale, seed, bounds[:-1], parts, threads, step)
    return parts


def _generate(scale: int, seed: int, firsts, parts: list, threads: int, step) -> None:
    """Edge ``firsts[i]`` on of the seed's list written into the pair ``parts[i]``, one
    pair a call on a thread."""
    params = _stream_key(seed), *_thresholds(), *_scramble_params(scale, _scramble_keys(seed))

    def fill(i: int) -> None:
        _place_edges(np.int64(firsts[i]), scale, *params, True, *parts[i])
        if step is not None:
            step()

    run(fill, range(len(parts)), threads)


def _kronecker_raw(scale: int, edgefactor: int = 16, seed: int = 1, chunk: int = 0):
    """Chunk ``chunk`` before the vertex permutation (for tests)."""
    lo, hi = _chunk_bounds(chunk, _num_edges(scale, edgefactor))
    src = np.empty(hi - lo, dtype=np.int64)
    dst = np.empty(hi - lo, dtype=np.int64)
    params = _stream_key(seed), *_thresholds(), *_scramble_params(scale, _scramble_keys(seed))
    _place_edges(np.int64(lo), scale, *params, False, src, dst)
    return src, dst


#: Edges placed side by side, round by round: the inner loop over them is what the compiler
#: turns into vector instructions.
_BATCH = 256


@njit(nogil=True, cache=True)
def _place_edges(first, scale, key, t_ab, t_a, t_c, add, mul0, mul1, drop, scrambled,
                 src, dst):  # pragma: no cover - numba
    """Edges ``first .. first + src.size - 1`` into ``src``, ``dst``: bit by bit from the
    counter-based stream, then (``scrambled``) relabelled."""
    one = np.uint64(1)
    state = np.empty(_BATCH, dtype=np.uint64)
    u = np.empty(_BATCH, dtype=np.uint64)
    v = np.empty(_BATCH, dtype=np.uint64)
    for lo in range(0, src.size, _BATCH):
        k = min(_BATCH, src.size - lo)
        for j in range(k):
            state[j] = key + np.uint64(first + lo + j) * np.uint64(64) * _GAMMA
            u[j] = 0
            v[j] = 0
        for _ in range(scale):
            for j in range(k):
                state[j] += _GAMMA
                h = _mix(state[j])
                ii = (h & np.uint64(0xFFFFFFFF)) > t_ab
                jj = (h >> np.uint64(32)) > (t_c if ii else t_a)
                u[j] = (u[j] << one) | np.uint64(ii)
                v[j] = (v[j] << one) | np.uint64(jj)
        for j in range(k):
            a, b = u[j], v[j]
            if scrambled:
                a = _scrambled(a, add, mul0, mul1, drop)
                b = _scrambled(b, add, mul0, mul1, drop)
            src[lo + j] = np.int64(a)
            dst[lo + j] = np.int64(b)


@njit(nogil=True, cache=True)
def _mix(z):  # pragma: no cover - numba
    """SplitMix64's output function of its state ``z`` (a bijection of 64-bit words)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _thresholds():
    """``rand > p`` with ``rand = u / 2**32`` is ``u > floor(p * 2**32)`` for integer ``u``."""
    a, b, c = INITIATOR
    ab = a + b
    c_norm, a_norm = c / (1.0 - ab), a / ab

    def to_u32(p):
        return np.uint64(min(max(math.floor(p * 2.0**32), 0), 2**32 - 1))

    return to_u32(ab), to_u32(a_norm), to_u32(c_norm)


def _seed_words(seed: int) -> np.ndarray:
    """Three 64-bit words of the seed: the permutation's two keys, then the stream's key."""
    return np.random.SeedSequence(seed).generate_state(3, dtype=np.uint64)


def _stream_key(seed: int) -> np.uint64:
    """The key of the seed's counter-based stream."""
    return np.uint64(_seed_words(seed)[2])


def _scramble_keys(seed: int) -> tuple[int, int]:
    """Two 64-bit keys for the vertex permutation, from the seed alone."""
    k0, k1 = _seed_words(seed)[:2]
    return int(k0), int(k1)


def _scramble_params(scale: int, keys: tuple[int, int]):
    """``(add, mul0, mul1, drop)`` of :func:`_scrambled` for ``scale`` and ``keys``."""
    k0, k1 = keys
    return (np.uint64((k0 + k1) & _MASK64), np.uint64(k0 | _SCRAMBLE_K0),
            np.uint64(k1 | _SCRAMBLE_K1), np.uint64(64 - scale))


def _scramble(v: np.ndarray, scale: int, keys: tuple[int, int]) -> np.ndarray:
    """A seeded bijection of ``0 .. 2**scale - 1`` (Graph500 reference ``scramble``).

    Adding a constant and multiplying by an odd one are bijections modulo ``2**scale``
    (only the low ``scale`` bits matter), and so is reversing those bits.
    """
    out = np.empty(v.size, dtype=np.int64)
    _scramble_ids(v, *_scramble_params(scale, keys), out)
    return out


@njit(nogil=True, cache=True)
def _scramble_ids(v, add, mul0, mul1, drop, out):  # pragma: no cover - numba
    for i in range(v.size):
        out[i] = np.int64(_scrambled(np.uint64(v[i]), add, mul0, mul1, drop))


@njit(nogil=True, cache=True)
def _scrambled(x, add, mul0, mul1, drop):  # pragma: no cover - numba
    """The id ``x`` relabelled: add, multiply, keep the reversed low bits, twice."""
    x = _reverse_bits((x + add) * mul0) >> drop
    return _reverse_bits(x * mul1) >> drop


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
    return chunk * _CHUNK_EDGES, min(total, (chunk + 1) * _CHUNK_EDGES)


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
