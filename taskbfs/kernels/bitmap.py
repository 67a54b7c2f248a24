"""Bitmaps over vertex ids, the encoding of visited sets and bottom-up frontiers.

A bitmap for ``n`` vertices is a ``uint64`` array of ``words_for(n)`` words; vertex ``v``
is bit ``v & 63`` of word ``v >> 6``. Kept as plain arrays so that the same buffers go
to numba, to CUDA and over the wire.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def words_for(num_vertices: int) -> int:
    """Number of uint64 words of a bitmap over ``num_vertices`` vertices."""
    return (int(num_vertices) + 63) >> 6


def empty_bitmap(num_vertices: int) -> np.ndarray:
    """A bitmap with no bit set."""
    return np.zeros(words_for(num_vertices), dtype=np.uint64)


@njit(nogil=True, cache=True)
def test_bit(bits, v):
    """True if vertex ``v`` is set in ``bits``."""
    return (bits[v >> 6] >> np.uint64(v & 63)) & np.uint64(1) != 0


@njit(nogil=True, cache=True)
def test_and_set(bits, v):
    """True if vertex ``v`` was already set in ``bits``; sets it either way."""
    word = v >> 6
    bit = np.uint64(1) << np.uint64(v & 63)
    if bits[word] & bit:
        return True
    bits[word] |= bit
    return False


@njit(nogil=True, cache=True)
def set_bits(bits, vertices):
    """Set every vertex of ``vertices`` in ``bits`` (in place)."""
    for i in range(vertices.size):
        v = vertices[i]
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


def bitmap_from_vertices(vertices, num_vertices: int) -> np.ndarray:
    """A new bitmap with exactly ``vertices`` set."""
    bits = empty_bitmap(num_vertices)
    set_bits(bits, np.asarray(vertices, dtype=np.int64))
    return bits
