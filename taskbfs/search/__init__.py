"""The BFS algorithm on the runtime: level loop, strategies, direction switch, results.

=================  ==========================================================
``bfs``            task-based BFS (hybrid / fixed / cpu / gpu; top-down, bottom-up, auto)
``BFSResult``      distances, parents, trace, levels, elapsed, traversed edges, TEPS
``default_tasks``  T when none is given: one per GPU (hybrid, gpu) or per CPU slot, at least 4
=================  ==========================================================
"""

from taskbfs.search.core import STRATEGIES, bfs, default_tasks
from taskbfs.search.result import BFSResult
from taskbfs.search.state import DIRECTIONS

__all__ = ["DIRECTIONS", "STRATEGIES", "BFSResult", "bfs", "default_tasks"]
