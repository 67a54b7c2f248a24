"""Placing a graph's partitions on the workers once, and reusing them.

A graph is cut into T vertex-range slices (:mod:`taskbfs.graph.partition`); each slice is
scattered to a worker once per (runtime, graph, T, balance, orientation) and its future
kept here, so later levels and later BFS calls on the same graph reuse it (the
``token`` of :class:`~taskbfs.graph.Graph` names the data).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import numpy as np

from taskbfs.bfs.steps import GraphSlice
from taskbfs.graph import Graph, Partition

#: How many placed graphs a runtime keeps (least recently used dropped first).
MAX_PLACED_GRAPHS = 4

_placed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class PlacedGraph:
    """Futures of one graph's slices (and of its degree array) on one runtime."""

    def __init__(self, slices, degrees, transposed=None):
        self.slices = slices
        self.degrees = degrees
        self.transposed = transposed


def place_graph(runtime, graph: Graph, parts: Partition, need_transpose: bool) -> PlacedGraph:
    """Scatter ``graph``'s slices to the workers, or return the ones placed before."""
    cache = _placed.setdefault(runtime, OrderedDict())
    key = (graph.token, tuple(parts.bounds.tolist()) if parts.num_tasks <= 64 else _digest(parts))
    placed = cache.get(key)
    if placed is None:
        client = runtime.client
        slices = client.scatter(_slices(graph, parts, graph.token), hash=False)
        degrees = client.scatter(graph.degrees(), hash=False)
        placed = PlacedGraph(slices, degrees)
        cache[key] = placed
        while len(cache) > MAX_PLACED_GRAPHS:
            cache.popitem(last=False)
    cache.move_to_end(key)
    if need_transpose and placed.transposed is None:
        if graph.directed:
            reverse = graph.transpose()
            placed.transposed = runtime.client.scatter(
                _slices(reverse, parts, graph.token + "/T", out=graph), hash=False
            )
        else:
            placed.transposed = placed.slices
    return placed


def _slices(graph: Graph, parts: Partition, token: str, out: Graph | None = None) -> list[GraphSlice]:
    """The T slices of ``graph``; for a transpose, ``out`` is the graph itself, whose local
    offsets each slice carries too (bottom-up steps sum their discoveries' out-degrees)."""
    slices = []
    for t in range(parts.num_tasks):
        lo, hi = parts.range(t)
        start, stop = graph.indptr[lo], graph.indptr[hi]
        indptr = graph.indptr[lo : hi + 1] - start
        out_indptr = None if out is None else out.indptr[lo : hi + 1] - out.indptr[lo]
        slices.append(GraphSlice(t, int(lo), int(hi), indptr, graph.indices[start:stop], token,
                                 out_indptr))
    return slices


def _digest(parts: Partition) -> str:
    import hashlib

    return hashlib.sha1(np.ascontiguousarray(parts.bounds).tobytes()).hexdigest()
