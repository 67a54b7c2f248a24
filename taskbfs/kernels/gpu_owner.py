"""What every owner found at a level, into one owner's state on its GPU: the host tier over the owner kernels.

Returns
    :class:`FoundShare` over an owner's :class:`~taskbfs.kernels.gpu_levels.DeviceLevels`:
    :meth:`~FoundShare.claimed` gives the level's next bitmap holding the vertices this
    owner claimed (to be OR'd with every other owner's, in place, by the caller's
    collective); :meth:`~FoundShare.take` then marks every vertex the bitmap names
    reached, queues and counts this owner's tasks' vertices, and readies the next level's
    bitmap and counts. The kernels are in :mod:`taskbfs.kernels._gpu_owner`.
"""

from __future__ import annotations

import numpy as np

from taskbfs.kernels._gpu_levels import ROWS
from taskbfs.kernels._gpu_owner import owner_kernels


class FoundShare:
    """An owner's side of a level's trade of found vertices (see the module docstring).

    Parameters
    ----------
    levels : DeviceLevels
        The owner's, its tasks set (``set_tasks``) and its search entered.
    own : ndarray of bool
        Per task, whether this owner owns it.
    workspace : callable
        ``workspace(name, size, dtype)`` → a device buffer of at least ``size`` entries.
    """

    def __init__(self, levels, own: np.ndarray, workspace):
        self.levels = levels
        self.k = owner_kernels(levels.config.block_size, levels.dtype.name)
        self.own_tasks = workspace("owner_tasks", own.size, np.uint8)
        self.own_tasks[: own.size].copy_to_device(own.astype(np.uint8))
        self._clear(levels.bits[1])  # level 0's next bitmap: the levels OR into it

    def claimed(self, level: int, top_down: bool):
        """Level ``level``'s next bitmap (a device array of every vertex's bit), holding
        the vertices claimed here: a top-down level's from its queue (a bottom-up level
        wrote them itself)."""
        levels, cfg = self.levels, self.levels.config
        p = (level + 1) % 2
        if top_down:
            self.k.claims_to_bits[cfg.grid_size, cfg.block_size](
                levels.queues[p], levels.rows[level % ROWS], levels.bits[p])
        return levels.bits[p]

    def take(self, level: int) -> None:
        """The bitmap :meth:`claimed` gave, now every owner's found vertices, into this
        owner's state: each vertex reached (parent -2 where claimed elsewhere), this
        owner's queued (its next top-down frontier) and counted per task with their
        out-arcs (read by ``task_counts(level, tallied=True)``); this level's frontier
        bitmap cleared for the next level to OR into, and the next level's counts zeroed."""
        levels, cfg = self.levels, self.levels.config
        p = (level + 1) % 2
        levels.k.base.fill[1, cfg.block_size](levels.tail, 0)
        self.k.take_reached[min(cfg.blocks_for(levels.words), cfg.grid_size), cfg.block_size](
            levels.bits[p], levels.words, levels.graph.indptr, levels.lo, levels.hi, level + 1,
            levels.parents, levels.distances, levels.queues[p], levels.tail, levels.bounds,
            levels.num_tasks, self.own_tasks, levels.task_rows[level % 2], levels.task_rows[p],
            levels.bits[level % 2], levels.rows[(level + 1) % ROWS])

    def _clear(self, bits) -> None:
        cfg = self.levels.config
        self.levels.k.base.fill[cfg.blocks_for(self.levels.words), cfg.block_size](bits, 0)


__all__ = ["FoundShare"]
