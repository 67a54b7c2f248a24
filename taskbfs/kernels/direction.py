"""Level-direction helpers shared by the BFS barrier and the no-Dask peer loop.

Returns
    The next level's direction (Beamer's switch rule, as used by the TOTEM paper,
    Sec. 2.2). Pure functions: no Dask here.
"""

from __future__ import annotations

TOP_DOWN = "top-down"
BOTTOM_UP = "bottom-up"
AUTO = "auto"


def switch_direction(mode: str, current: str, frontier_size: int, frontier_edges: int,
                     unexplored_edges: int, num_vertices: int, alpha: float, beta: float,
                     previous_size: int = 0) -> str:
    """Direction of the next level: ``mode`` unless it is ``"auto"``, else Beamer's rule
    with its two side conditions (Beamer, Asanović & Patterson, SC12: the frontier grows
    on the way into bottom-up and shrinks on the way out) — bottom-up once the frontier
    (``frontier_size`` vertices, ``previous_size`` in the level before) is growing and
    its edges exceed ``unexplored_edges / alpha``; back to top-down once it is shrinking
    and has fewer than ``num_vertices / beta`` vertices.

    Without the growing condition, the few stragglers of a search's last levels went
    bottom-up: their edges exceed ``unexplored_edges / alpha`` when almost no unexplored
    edges are left, and a bottom-up level scans every unvisited vertex (the isolated
    ones included) to find a handful.
    """
    if mode != AUTO:
        return mode
    if current == TOP_DOWN:
        growing = frontier_size > previous_size
        return BOTTOM_UP if growing and frontier_edges > unexplored_edges / alpha else TOP_DOWN
    shrinking = frontier_size < previous_size
    return TOP_DOWN if shrinking and frontier_size < num_vertices / beta else BOTTOM_UP

