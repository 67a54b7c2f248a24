"""Placing a graph's partitions on the workers once, and reusing them.

A graph is cut into T vertex-range slices (:mod:`taskbfs.graph.partition`); each slice is
scattered to a worker once per (runtime, graph, T, balance, orientation) and its future
kept here with everything else derived from (graph, T, balance): the partition itself and
the degree sum. Later BFS calls on the same graph reuse all of it, so a search pays
nothing per call for its graph (the ``token`` of :class:`~taskbfs.graph.Graph` names
the data; a graph cannot change, so neither can what was placed). A placed graph whose
data was lost (a worker holding a slice left the cluster) is placed again.
"""

from __future__ import annotations

import functools
import uuid
import weakref
from collections import OrderedDict

from taskbfs import config
from taskbfs.graph import Graph, Partition, partition
from taskbfs.placed.slices import GraphSlice
from taskbfs.runtime.plugin import workers_of, workers_with
from taskbfs.runtime.task import GPU_RESOURCE

#: How many placed graphs a runtime keeps (least recently used dropped first).
MAX_PLACED_GRAPHS = 4

_placed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: Future states of a placed datum that a worker's departure leaves behind.
_BROKEN = frozenset({"cancelled", "lost", "error"})


class PlacedGraph:
    """One graph placed on one runtime: its partition, the futures of its slices (and of
    its degree array), and its arc count (the sum of the degrees)."""

    #: Whether Dask can compute its slices again (a graph built on the workers by tasks):
    #: then a slice lost with its worker is being recomputed, not broken.
    recomputable = False

    def __init__(self, parts: Partition, slices, degrees, num_arcs: int, transposed=None):
        self.parts = parts
        self.slices = slices
        self.degrees = degrees
        self.num_arcs = num_arcs
        self.transposed = transposed
        self.uploaded = frozenset()  # keys of the slices copied to the GPU workers
        self._bundles: dict[int, object] = {}  # futures of SliceBundle, by slices per task

    def slices_per_task(self) -> int:
        """1, or 2 when a step may read a transposed slice distinct from its own (a
        directed graph searched bottom-up)."""
        return 1 if self.transposed is None or self.transposed is self.slices else 2

    def bundle(self, client):
        """The future of every task's slices as one :class:`SliceBundle`, made by a task
        on the worker that holds them (no copy) the first time a search asks for it: a
        search run as one task reads this and the degrees, two inputs whatever T, where
        2T + 1 cost the scheduler and the worker per input and call."""
        per_task = self.slices_per_task()
        future = self._bundles.get(per_task)
        if future is None or future.status in _BROKEN:
            pairs = zip(self.slices, self.transposed if per_task == 2 else self.slices,
                        strict=True)
            args = [s for pair in pairs for s in pair[:per_task]]
            future = client.submit(SliceBundle, *args, per_task=per_task, pure=False,
                                   key=f"slice-bundle-{uuid.uuid4().hex}")
            self._bundles[per_task] = future
        return future

    def slice_futures(self) -> list:
        """The slices' futures, transposed ones too."""
        extra = [] if self.transposed is None or self.transposed is self.slices else self.transposed
        return [*self.slices, *extra]

    def futures(self) -> list:
        """Every future a search reads: the slices (transposed ones too) and the degrees."""
        return [*self.slice_futures(), self.degrees]

    def intact(self) -> bool:
        """Whether no placed datum was lost: a scattered slice whose holder left the
        cluster is cancelled by the scheduler (it cannot be recomputed); a computed one
        is lost until it is computed again, which counts as intact when the graph is
        :attr:`recomputable` (a search waits for it, within its timeout). Pending ones
        (still being built) count as intact."""
        broken = _BROKEN - {"lost"} if self.recomputable else _BROKEN
        return not any(f.status in broken for f in self.futures())


class SliceBundle:
    """Every task's slices in task order (``tasks[t]``: its slice, then its transposed one
    when the bundle has two per task), as one datum. It refers to the placed slices and
    owns none of their memory (``sizeof`` says so, so that the worker does not count
    the graph twice)."""

    def __init__(self, *slices: GraphSlice, per_task: int = 1):
        self.tasks = [tuple(slices[t : t + per_task]) for t in range(0, len(slices), per_task)]

    def __sizeof__(self) -> int:
        return 64 + 8 * len(self.tasks)


def place_graph(runtime, graph: Graph, tasks: int, balance: str,
                need_transpose: bool, timeout: float | None = None) -> PlacedGraph:
    """``graph`` cut into ``tasks`` ranges by ``balance`` and its slices scattered to the
    workers (within ``timeout`` seconds, else ``TimeoutError``), or what an earlier call
    placed. A graph that lives on the workers already
    (:class:`~taskbfs.placed.graph.DistributedGraph`) places itself there."""
    if not isinstance(graph, Graph):
        return graph.place(runtime, tasks, balance, need_transpose, timeout)
    scatter = functools.partial(runtime.client.scatter, hash=False,
                                **({} if timeout is None else {"timeout": timeout}))
    cache = _placed.setdefault(runtime, OrderedDict())
    key = (graph.token, int(tasks), balance)
    placed = cache.get(key)
    if placed is not None and not placed.intact():
        del cache[key]
        placed = None
    if placed is None:
        parts = partition(graph, tasks, balance=balance)
        slices = scatter(graph_slices(graph, parts, graph.token))
        degrees = scatter(graph.degrees())
        placed = PlacedGraph(parts, slices, degrees, graph.num_arcs)
        cache[key] = placed
        while len(cache) > MAX_PLACED_GRAPHS:
            cache.popitem(last=False)
    cache.move_to_end(key)
    if need_transpose and placed.transposed is None:
        if graph.directed:
            reverse = graph.transpose()
            placed.transposed = scatter(
                graph_slices(reverse, placed.parts, graph.token + "/T", out=graph))
        else:
            placed.transposed = placed.slices
    return placed


def is_placed(runtime, graph: Graph, tasks: int, balance: str) -> bool:
    """Whether ``graph`` cut into ``tasks`` ranges by ``balance`` is placed on ``runtime``
    with nothing lost."""
    placed = _placed.get(runtime, {}).get((graph.token, int(tasks), balance))
    return placed is not None and placed.intact()


def graph_slices(graph: Graph, parts: Partition, token: str, out: Graph | None = None) -> list[GraphSlice]:
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


def forget_lost(runtime) -> int:
    """Drop the graphs placed on ``runtime`` whose data a lost worker held (a search that
    lost a worker calls this, so that the next search of the same graph places it
    again); returns how many were dropped."""
    cache = _placed.get(runtime, {})
    lost = [key for key, placed in cache.items() if not placed.intact()]
    for key in lost:
        del cache[key]
    return len(lost)


def forget_graph(runtime, graph: Graph) -> None:
    """Drop every placement of ``graph`` on ``runtime`` (its data may be partly lost)."""
    cache = _placed.get(runtime, {})
    for key in [k for k in cache if k[0] == graph.token]:
        del cache[key]


def tasks_for_slots(slots: int) -> int:
    """The default T for a cluster of ``slots`` CPU slots (0: unknown): one per slot, at
    least ``taskbfs.tasks``."""
    return max(1, config.get("tasks"), int(slots))


#: Most share of the smallest worker memory limit taken by the keys one split task sends a
#: worker for several of its ranges at once (one task per chunk and range costs more time).
_SEND_SHARE_OF_MEMORY = 0.125


def deal_out(client, count: int, timeout: float | None = None) -> list[dict]:
    """``submit`` keywords that deal ``count`` ranges out to the workers, consecutive
    ranges to the same worker (the scheduler would put them where most of their input
    lies, often all on one); a preference, not a restriction. Consecutive, so that
    another cut of the same vertices finds most of its rows on its own worker. Where
    there are GPU workers, the ranges go to them only: a range's owner runs its barriers
    and its steps run best beside it, and the big steps of a search that may use a GPU
    run on one (CPU steps copy only the owner's frontier,
    :class:`~taskbfs.search.owner_state.OwnerFrontier`)."""
    info = workers_of(client, timeout)
    workers = workers_with(info, GPU_RESOURCE) or sorted(info)
    if len(info) < 2:
        return [{}] * count
    return [{"workers": [workers[r * len(workers) // count]], "allow_other_workers": True}
            for r in range(count)]


def owner_runs(owners: list[dict], most: int) -> list[tuple[int, int]]:
    """``(first, stop)`` of each run of at most ``most`` consecutive ranges dealt to the
    same worker: what one split sends in one piece (an all-to-all of a task per owner,
    not per range)."""
    runs, first = [], 0
    for r in range(1, len(owners) + 1):
        if r == len(owners) or owners[r] != owners[first] or r - first == most:
            runs.append((first, r))
            first = r
    return runs


def ranges_per_send(client, arcs: int, ranges: int, timeout: float | None = None) -> int:
    """How many ranges' keys one split sends a worker in one piece: their keys (8 bytes
    an arc, ranges of about equal arcs) at most :data:`_SEND_SHARE_OF_MEMORY`
    of the smallest worker ``memory_limit`` (every range, where no worker has one)."""
    limits = [w.get("memory_limit") or 0 for w in workers_of(client, timeout).values()]
    limits = [m for m in limits if m > 0]
    if not limits:
        return ranges
    range_bytes = max(1, 8 * arcs // ranges)
    return max(1, int(_SEND_SHARE_OF_MEMORY * min(limits)) // range_bytes)
