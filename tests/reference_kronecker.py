"""The Kronecker generator's two pieces written again in vectorised numpy, from the
specification's formulas, as an independent reference: ``taskbfs.graph.kronecker``
computes them with compiled loops and must give the very same edges.

``raw_edges`` places edges ``first .. first + m - 1`` bit by bit with the Graph500
formulas in floating point, ``rand`` being the 32-bit halves of the counter-based stream:
SplitMix64's output number ``64 k + r`` for round ``r`` of edge ``k`` (low half for
``ii``, high half for ``jj``), keyed by the seed's third ``SeedSequence`` word.
``scramble`` is the Graph500 reference's seeded bijection of the vertex ids (add,
multiply by an odd constant, reverse the low ``scale`` bits, twice).
"""

from __future__ import annotations

import numpy as np

MASK64 = (1 << 64) - 1
SCRAMBLE_K0 = 0x4519840211493211
SCRAMBLE_K1 = 0x3050852102C843A5
GAMMA = np.uint64(0x9E3779B97F4A7C15)


def seed_words(seed: int) -> np.ndarray:
    """The permutation's two keys and the stream's key."""
    return np.random.SeedSequence(seed).generate_state(3, dtype=np.uint64)


def splitmix64(key, counters: np.ndarray) -> np.ndarray:
    """SplitMix64's outputs number ``counters`` (uint64) of the stream seeded ``key``."""
    z = np.uint64(key) + (counters + np.uint64(1)) * GAMMA
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def raw_edges(scale: int, first: int, m: int, seed: int, initiator=(0.57, 0.19, 0.19)):
    a, b, c = initiator
    ab = a + b
    c_norm, a_norm = c / (1.0 - ab), a / ab
    k = np.arange(first, first + m, dtype=np.uint64)
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for r in range(scale):
        h = splitmix64(seed_words(seed)[2], k * np.uint64(64) + np.uint64(r))
        rand_ii = (h & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2.0**32
        rand_jj = (h >> np.uint64(32)).astype(np.float64) / 2.0**32
        ii_bit = rand_ii > ab
        jj_bit = rand_jj > (c_norm * ii_bit + a_norm * (1 - ii_bit))
        src = (src << 1) + ii_bit
        dst = (dst << 1) + jj_bit
    return src, dst


def scramble(v: np.ndarray, scale: int, keys) -> np.ndarray:
    k0, k1 = keys
    x = v.astype(np.uint64)
    x += np.uint64((k0 + k1) & MASK64)
    x *= np.uint64(k0 | SCRAMBLE_K0)
    x = _reverse_low_bits(x, scale)
    x *= np.uint64(k1 | SCRAMBLE_K1)
    x = _reverse_low_bits(x, scale)
    return x.view(np.int64)


def _reverse_low_bits(x: np.ndarray, bits: int) -> np.ndarray:
    for shift, mask in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F)):
        m = np.uint64(mask)
        x = ((x >> np.uint64(shift)) & m) | ((x & m) << np.uint64(shift))
    x = x.byteswap()
    return x >> np.uint64(64 - bits)
