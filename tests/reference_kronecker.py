"""The vectorised numpy construction of the Kronecker generator's two inner pieces, kept
as an independent reference: ``taskbfs.graph.kronecker`` computes them with numba and
must give the very same edges (the same seed gives the same graph).

``raw_edges`` places each edge bit by bit from 32-bit uniforms (one 64-bit draw per edge
and round: the first k halves for ``ii``, the next k for ``jj``), ``scramble`` is the
Graph500 reference's seeded bijection of the vertex ids (add, multiply by an odd
constant, reverse the low ``scale`` bits, twice).
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 16
MASK64 = (1 << 64) - 1
SCRAMBLE_K0 = 0x4519840211493211
SCRAMBLE_K1 = 0x3050852102C843A5


def raw_edges(scale: int, m: int, rng: np.random.Generator, thresholds):
    t_ab, t_a, t_c = thresholds
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    draw = rng.bit_generator.random_raw
    for lo in range(0, m, BLOCK):
        k = min(m, lo + BLOCK) - lo
        s, d = src[lo : lo + k], dst[lo : lo + k]
        for _ in range(scale):
            u = draw(k).view(np.uint32)
            u_ii, u_jj = u[:k], u[k:]
            ii = u_ii > t_ab
            jj = (ii & (u_jj > t_c)) | (~ii & (u_jj > t_a))
            s <<= 1
            s += ii
            d <<= 1
            d += jj
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
