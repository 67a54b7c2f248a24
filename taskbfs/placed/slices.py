"""``GraphSlice``: one vertex range's adjacency, the unit of a graph placed on the workers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from taskbfs.kernels.cpu import searchable_bits


@dataclass
class GraphSlice:
    """One task's share of the graph: vertices ``[lo, hi)`` and their adjacency.

    ``indices`` lists out-neighbours (in-neighbours for a transposed slice used by
    bottom-up steps on directed graphs; ``out_indptr`` then holds the range's local
    out-adjacency offsets, whose differences are the out-degrees the switch rule sums).
    """

    task: int
    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    token: str  # graph identity + orientation, the device cache key
    out_indptr: np.ndarray | None = None  # None: ``indptr`` is the out-adjacency
    _searchable: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: The typed lists of every task's slices, kept on task 0's (see ``level_tasks.TaskLists``).
    _lists: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def nbytes(self) -> int:
        return self.indptr.nbytes + self.indices.nbytes

    def __sizeof__(self) -> int:
        # what Dask counts (placement by data locality, worker memory): the arrays the
        # slice owns, not the other slices ``_lists`` refers to
        extra = [a for a in (self.out_indptr, self._searchable) if a is not None]
        return 64 + self.nbytes + sum(a.nbytes for a in extra)

    def __post_init__(self):
        self._read_only()
        # made with the slice at placement, not by the first search that reads it
        if self._searchable is None:
            self._searchable = searchable_bits(self.indptr, self.lo, self.hi)

    def __setstate__(self, state):
        # a slice sent to another worker arrives with whatever flags Dask gave its arrays
        self.__dict__.update(state)
        self._read_only()

    def _read_only(self) -> None:
        """The adjacency as read-only views, whatever made it: numba compiles a kernel
        once per argument type, and an array's writeable flag is part of its type, so
        slices that differed in it would compile the step kernels again inside a search."""
        for name in ("indptr", "indices", "out_indptr"):
            array = getattr(self, name)
            if array is not None and array.flags.writeable:
                view = array.view()
                view.setflags(write=False)
                setattr(self, name, view)

    def searchable_bits(self) -> np.ndarray:
        """The range's vertices with an adjacency entry, as global-aligned bitmap words
        (:func:`~taskbfs.kernels.cpu.searchable_bits`), kept with the slice, which lives
        on its worker for as long as the graph is placed."""
        return self._searchable

    @property
    def out_offsets(self) -> np.ndarray:
        """Local offsets of the range's out-adjacency (its out-degrees as differences)."""
        return self.indptr if self.out_indptr is None else self.out_indptr
