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


@njit(nogil=True, cache=True)
def _popcount(x):
    """Set bits of the uint64 ``x`` (SWAR)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(nogil=True, cache=True)
def count_bits(words):
    """Set bits of the bitmap words ``words``."""
    n = 0
    for i in range(words.size):
        if words[i]:
            n += _popcount(words[i])
    return n


@njit(nogil=True, cache=True)
def ids_of_words(words, first_word):
    """The vertex ids of the set bits of ``words`` (bitmap words from word ``first_word``
    on), ascending, int64: the zero words skipped, a set bit found by its lowest-bit mask."""
    out = np.empty(count_bits(words), dtype=np.int64)
    at = 0
    for i in range(words.size):
        x = words[i]
        base = (first_word + i) * 64
        while x:
            low = x & (~x + np.uint64(1))
            out[at] = base + np.int64(_popcount(low - np.uint64(1)))
            at += 1
            x ^= low
    return out
