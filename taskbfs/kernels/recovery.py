"""Parents found again from distances alone (a search resumed after a lost worker).

Returns
    :func:`parents_from_levels` writes, for every vertex of a range at distance d >= 1, a
    parent: its first in-neighbour at distance d - 1.
Approach
    Any such neighbour is a valid BFS parent (the Graph500 rules accept any tree that
    agrees with the distances), so a search that kept only which vertices each completed
    level reached can rebuild the parents its lost workers held with one pass over the
    in-arcs of those vertices: what a bottom-up step reads, once.
Encoding
    ``levels`` is the whole graph's distance array (-1 unreached, any integer dtype);
    ``indptr``/``indices`` are one range's in-adjacency (local offsets, global ids).
"""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def parents_from_levels(indptr, indices, lo, levels, parents):
    """Set ``parents[i]`` of each vertex ``lo + i`` at distance d >= 1 to its first
    in-neighbour at distance d - 1 (the source and unreached vertices are left as they
    are); returns how many vertices at d >= 1 found none (0 unless ``levels`` is not a
    BFS's distances)."""
    orphans = 0
    for i in range(indptr.size - 1):
        d = levels[lo + i]
        if d <= 0:
            continue
        found = False
        for k in range(indptr[i], indptr[i + 1]):
            u = indices[k]
            if levels[u] == d - 1:
                parents[i] = u
                found = True
                break
        if not found:
            orphans += 1
    return orphans
