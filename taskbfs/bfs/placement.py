"""Placing a graph's partitions on the workers once, and reusing them.

A graph is cut into T vertex-range slices (:mod:`taskbfs.graph.partition`); each slice is
scattered to a worker once per (runtime, graph, T, balance, orientation) and its future
kept here with everything else derived from (graph, T, balance): the partition itself and
the degree sum. Later BFS calls on the same graph reuse all of it, so a search pays
nothing per call for its graph (the ``token`` of :class:`~taskbfs.graph.Graph` names
the data).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

from taskbfs.bfs.steps import GraphSlice
from taskbfs.graph import Graph, Partition, partition

#: How many placed graphs a runtime keeps (least recently used dropped first).
MAX_PLACED_GRAPHS = 4

_placed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class PlacedGraph:
    """One graph placed on one runtime: its partition, the futures of its slices (and of
    its degree array), and its arc count (the sum of the degrees)."""

    def __init__(self, parts: Partition, slices, degrees, num_arcs: int, transposed=None):
        self.parts = parts
        self.slices = slices
        self.degrees = degrees
        self.num_arcs = num_arcs
        self.transposed = transposed

    def futures(self) -> list:
        """Every future a search reads: the slices (transposed ones too) and the degrees."""
        extra = [] if self.transposed is None or self.transposed is self.slices else self.transposed
        return [*self.slices, *extra, self.degrees]


def place_graph(runtime, graph: Graph, tasks: int, balance: str,
                need_transpose: bool) -> PlacedGraph:
    """``graph`` cut into ``tasks`` ranges by ``balance`` and its slices scattered to the
    workers, or what an earlier call placed. A graph that lives on the workers already
    (:class:`~taskbfs.bfs.distributed.DistributedGraph`) places itself there."""
    if not isinstance(graph, Graph):
        return graph.place(runtime, tasks, balance, need_transpose)
    cache = _placed.setdefault(runtime, OrderedDict())
    key = (graph.token, int(tasks), balance)
    placed = cache.get(key)
    if placed is None:
        parts = partition(graph, tasks, balance=balance)
        client = runtime.client
        slices = client.scatter(_slices(graph, parts, graph.token), hash=False)
        degrees = client.scatter(graph.degrees(), hash=False)
        placed = PlacedGraph(parts, slices, degrees, graph.num_arcs)
        cache[key] = placed
        while len(cache) > MAX_PLACED_GRAPHS:
            cache.popitem(last=False)
    cache.move_to_end(key)
    if need_transpose and placed.transposed is None:
        if graph.directed:
            reverse = graph.transpose()
            placed.transposed = runtime.client.scatter(
                _slices(reverse, placed.parts, graph.token + "/T", out=graph), hash=False
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
