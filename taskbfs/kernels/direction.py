"""Level-direction helpers shared by the BFS barrier and the no-Dask peer loop.

Returns
    The next level's direction (Beamer's switch rule, as used by the TOTEM paper,
    Sec. 2.2) and a join of the tasks' discovery arrays. Pure functions: no Dask here.
"""

from __future__ import annotations

import numpy as np

TOP_DOWN = "top-down"
BOTTOM_UP = "bottom-up"
AUTO = "auto"


def switch_direction(mode: str, current: str, frontier_size: int, frontier_edges: int,
                     unexplored_edges: int, num_vertices: int, alpha: float, beta: float) -> str:
    """Direction of the next level: ``mode`` unless it is ``"auto"``, else Beamer's rule —
    bottom-up once the frontier's edges exceed ``unexplored_edges / alpha``, back to
    top-down once the frontier has fewer than ``num_vertices / beta`` vertices."""
    if mode != AUTO:
        return mode
    if current == TOP_DOWN:
        return BOTTOM_UP if frontier_edges > unexplored_edges / alpha else TOP_DOWN
    return TOP_DOWN if frontier_size < num_vertices / beta else BOTTOM_UP


def concat(arrays) -> np.ndarray:
    """The non-empty arrays joined (no copy for one; int64 empty for none)."""
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return np.empty(0, dtype=np.int64)
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays)
