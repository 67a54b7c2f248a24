"""``DistributedGraph``: a graph built on the workers and kept there, never on the client.

What it returns
---------------
:class:`DistributedGraph`, made by :func:`kronecker` / :func:`read_graph` with a
``runtime`` (or :meth:`DistributedGraph.from_dask`): the CSR of each of R vertex ranges
lives on a worker as a :class:`~taskbfs.search.steps.GraphSlice` future. :func:`taskbfs.search`
searches it like a :class:`~taskbfs.graph.Graph` (:meth:`DistributedGraph.place` gives
the search its :class:`~taskbfs.search.placement.PlacedGraph`), and
:func:`taskbfs.validate` checks a search's parents against it range by range on the
workers.

Approach (all Dask tasks; no edge crosses the client)
-----------------------------------------------------
1. Each edge chunk (a Kronecker chunk generated on a worker, a file read there, a
   partition of a dask collection) is counted per bin of vertex ids
   (:func:`~taskbfs.graph.chunked.arc_histogram`); the summed counts give R ranges of
   about equal arcs (:func:`~taskbfs.graph.chunked.range_bounds`), the ``"edges"``
   balance.
2. All-to-all: each chunk groups its arcs by owning range
   (:func:`~taskbfs.graph.chunked.split_arcs`); consecutive ranges go to the same worker,
   so a task per (chunk, owner) copies one slice of the groups, and a task per range
   builds its rows from what every chunk sent its owner
   (:func:`~taskbfs.graph.chunked.range_csr`, on the worker's spare cores), exactly as
   ``Graph.from_edges`` would.
3. A search with other ranges (another T, or ``balance="vertices"``) gets its partition
   computed on a worker from the degrees (the same cut ``partition`` makes) and its
   slices cut out of the built ones by tasks (:func:`~taskbfs.graph.chunked.join_rows`);
   a directed graph's transposed slices are built by the same all-to-all, from the
   slices' own arcs.
"""

from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import CancelledError
from dataclasses import dataclass

import numpy as np
from distributed import Future

from taskbfs import config
from taskbfs.errors import (
    EmptyGraphError,
    InsufficientMemoryError,
    InvalidParameterError,
    InvalidVertexError,
    SearchTimeoutError,
    WorkerLostError,
)
from taskbfs.graph import Graph, Partition
from taskbfs.graph import io as graph_io
from taskbfs.graph._graph import _as_vertex_array, _check_num_vertices
from taskbfs.graph._progress import BuildProgress
from taskbfs.graph.chunked import (
    MAX_BUILD_VERTICES,
    arc_histogram,
    build_plan,
    join_rows,
    kronecker_chunk,
    kronecker_chunk_count,
    piece_arcs,
    range_bounds,
    range_csr,
    split_arcs,
)
from taskbfs.graph.partition import partition_indptr
from taskbfs.runtime.plugin import GPU_RESOURCE, stranded, workers_of, workers_with
from taskbfs.runtime.worker import cores_per_thread
from taskbfs.search.placement import MAX_PLACED_GRAPHS, PlacedGraph
from taskbfs.search.steps import GraphSlice

__all__ = ["DistributedGraph", "build_from_files", "build_kronecker"]

#: Bins of vertex ids the per-chunk arc counts are kept in (at most; one bin per vertex
#: below it): the ranges' cut points fall on bin edges.
HISTOGRAM_BINS = 1 << 16
#: Histograms summed per task of the reduction tree.
_FAN_IN = 16
#: Edges each generating task of a Kronecker build makes (~16 MB of int64 pairs); the graph
#: does not depend on it.
_CHUNK_EDGES = 1 << 20
#: Bytes of an uncompressed edge-list file one task reads (~5M edges, ~80 MB of int64 pairs).
_READ_BYTES = 1 << 26
#: Most share of the smallest worker memory limit taken by the keys one split task sends a
#: worker for several of its ranges at once (one task per chunk and range costs more time).
_SEND_SHARE_OF_MEMORY = 0.125
#: Most share of a worker's memory limit its part of a Kronecker edge list may take to be
#: held until the ranges are cut; beyond, each chunk is generated twice and never held.
_HOLD_SHARE_OF_MEMORY = 0.5
#: A worker's build peak kept within this multiple of its share of the CSR where memory is
#: plentiful (more passes, up to chunked.MAX_CAPPED_PASSES): memory left for the search.
_PEAK_OVER_CSR = 2.0


class DistributedGraph:
    """A CSR graph whose vertex ranges live on the workers of one runtime.

    Build it with :func:`taskbfs.kronecker` or :func:`taskbfs.read_graph` given a
    ``runtime``, or with :meth:`from_dask`; search it with :func:`taskbfs.search` (on the
    same runtime, the default) and check a result with :func:`taskbfs.validate`.

    Attributes
    ----------
    num_vertices, num_arcs, num_edges : int
    directed : bool
    token : str
        Identity of the data (the device caches key slices by it).
    ranges : Partition
        The vertex ranges it was built in, one :class:`GraphSlice` future each.
    slices : list of distributed.Future
    runtime : Runtime

    Examples
    --------
    >>> import taskbfs as tb
    >>> with tb.Runtime() as rt:
    ...     g = tb.kronecker(8, runtime=rt)          # generated on the workers
    ...     r = tb.bfs(g, 0, runtime=rt)
    ...     _ = tb.validate(g, 0, r.parents, levels=r.distances)
    ...     g.num_vertices
    256
    """

    def __init__(self, runtime, ranges: Partition, slices: list, num_arcs: int, directed: bool,
                 token: str):
        self.runtime = runtime
        self.ranges = ranges
        self.slices = slices
        self.num_vertices = ranges.num_vertices
        self.num_arcs = int(num_arcs)
        self.directed = bool(directed)
        self.token = token
        self.labels = None  # vertices are numbered 0..n-1 (no labels, unlike a Graph's)
        self._degrees: Future | None = None
        self._placed: OrderedDict = OrderedDict()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_chunks(cls, runtime, chunks: list, num_vertices: int | None = None,
                    directed: bool = False, ranges: int | None = None, *,
                    progress=None) -> DistributedGraph:
        """Build from edge chunks already on the workers: futures of ``(src, dst)`` pairs
        (any integer arrays; checked there, as ``Graph.from_edges`` checks its input).
        The list is emptied, so that each chunk is released as soon as it is split.
        ``progress`` as for :func:`taskbfs.kronecker`."""
        with _progress_of(progress, "building the graph on the workers") as bar:
            return cls._from_chunks(runtime, chunks, num_vertices, directed, ranges, bar)

    @classmethod
    def _from_chunks(cls, runtime, chunks, num_vertices, directed, ranges, bar):
        rt = _as_runtime(runtime)
        client = rt.client
        raw, chunks = list(chunks), chunks
        chunks.clear()
        chunks = [client.submit(_checked_pair, c, i, pure=False) for i, c in enumerate(raw)]
        del raw
        if not chunks:
            raise EmptyGraphError("no edge chunks were given, so the graph has no vertices")
        if num_vertices is None:
            largest = max(client.gather([client.submit(_largest_id, c) for c in chunks]))
            num_vertices = largest + 1
        n = _check_num_vertices(num_vertices)
        if n > MAX_BUILD_VERTICES:
            raise InvalidParameterError(
                f"num_vertices = {n}: a graph built on the workers has at most "
                f"{MAX_BUILD_VERTICES} vertices")
        checks = [client.submit(_check_ids, c, i, n) for i, c in enumerate(chunks)]
        client.gather(checks)  # raises the first chunk's bad vertex id
        return cls._build(rt, chunks, n, bool(directed), _check_ranges(ranges, rt, n), bar=bar)

    @classmethod
    def from_dask(cls, edges, dst=None, num_vertices: int | None = None, directed: bool = False,
                  runtime=None, ranges: int | None = None, *, source: str = "source",
                  target: str = "target", progress=None) -> DistributedGraph:
        """Build from a dask collection of edges: a ``dask.dataframe`` with the columns
        ``source`` and ``target`` (named as :meth:`Graph.from_edges` and networkx's
        ``from_pandas_edgelist`` name them), or two 1-D dask arrays ``edges`` (sources)
        and ``dst`` with the same chunks. Each partition becomes one edge chunk on the
        workers."""
        rt = _as_runtime(runtime)
        client = rt.client
        if dst is None:
            if not hasattr(edges, "to_delayed") or not hasattr(edges, "columns"):
                raise InvalidParameterError(
                    "from_dask takes a dask.dataframe, or two dask arrays (src, dst)")
            columns = (source, target)
            missing = [c for c in columns if c not in edges.columns]
            if missing:
                raise InvalidParameterError(f"the dataframe has no column {missing[0]!r} "
                                            f"(columns: {list(edges.columns)})")
            chunks = [client.submit(_frame_pair, f, *columns)
                      for f in client.compute(edges[list(columns)].to_delayed())]
        else:
            src_parts, dst_parts = edges.to_delayed().ravel(), dst.to_delayed().ravel()
            if edges.chunks != dst.chunks:
                raise InvalidParameterError(
                    f"src and dst must have the same chunks, got {edges.chunks} and {dst.chunks}")
            chunks = client.compute([list(p) for p in zip(src_parts, dst_parts, strict=True)])
        return cls.from_chunks(rt, chunks, num_vertices, directed, ranges, progress=progress)

    @classmethod
    def _build(cls, rt, chunks: list, n: int, directed: bool, ranges: int,
               chunk_edges: int = 0, bar: BuildProgress | None = None) -> DistributedGraph:
        client = rt.client
        bar = bar or BuildProgress(False, "")
        token = uuid.uuid4().hex
        bins = min(n, max(HISTOGRAM_BINS, ranges))
        held = [client.submit(_pair_nbytes, c) for c in chunks if not isinstance(c, _Remade)]
        counts = [_on_chunk(client, c, _histogram, n, bins, directed) for c in chunks]
        bar.watch(counts)
        while len(counts) > 1:
            counts = [client.submit(_summed, *counts[i : i + _FAN_IN])
                      for i in range(0, len(counts), _FAN_IN)]
        arcs, held = client.gather([client.submit(_total, counts[0]),
                                    client.submit(_summed_ints, *held)])
        # the arcs counted: the passes that fit the workers' memory, or a refusal before
        # any key is made (kronecker refused what its estimate could tell before this)
        if held and not chunk_edges:  # the chunks' working memory: about their own size
            chunk_edges = held // (16 * len(chunks))
        plan = _plan(rt, arcs, n, ranges, chunk_edges, held)
        ranges = min(plan.ranges, bins)
        bounds = client.submit(range_bounds, counts[0], n, ranges).result()
        del counts
        if plan.passes > 1:
            return cls._build_in_passes(rt, chunks, n, directed, bounds, plan.passes, token,
                                        bar)
        # chunk by chunk, its split then what it sends each owner: Dask runs them in that
        # order, and what is sent is a copy, so a chunk and its split are released as soon
        # as it is cut (and a range built on a worker over its memory target reads its
        # groups back from disk, not every split)
        owners = _owners(client, ranges)
        runs = _owner_runs(owners, _ranges_per_send(client, arcs, ranges))
        sent = []
        for chunk in chunks:
            split = _on_chunk(client, chunk, _split, bounds, n, directed)
            bar.watch([split])
            sent.append([client.submit(_run_keys, split, first, stop) for first, stop in runs])
        chunks.clear()  # the caller's list too
        del chunk, split
        slices = [client.submit(_range_slice, r, int(bounds[r]), int(bounds[r + 1]), n, token,
                                r - runs[j][0], *[s[j] for s in sent], **owners[r])
                  for j, (first, stop) in enumerate(runs) for r in range(first, stop)]
        bar.watch(slices)
        del sent
        arcs = sum(client.gather([client.submit(_arc_count, s) for s in slices]))
        bar.finish()
        return cls(rt, Partition(bounds), slices, arcs, directed, token)

    @classmethod
    def _build_in_passes(cls, rt, chunks: list, n: int, directed: bool, bounds: np.ndarray,
                         passes: int, token: str, bar: BuildProgress) -> DistributedGraph:
        """The all-to-all of :meth:`_build` in ``passes`` passes (:func:`build_plan`):
        each over about ``1 / passes`` of every worker's ranges, its keys made (every
        chunk split again, keeping only the pass's ranges), sent and turned into rows
        before the next pass starts, so that a worker holds one pass's keys at a time."""
        from distributed.client import _wait

        client = rt.client
        ranges = bounds.size - 1
        owners = _owners(client, ranges)
        slices: list = [None] * ranges
        plan = _pass_runs(owners, passes)
        bar.grow(len(plan) * len(chunks) + ranges)  # the steps to come, known now
        for runs in plan:
            wanted = np.zeros(ranges, dtype=np.bool_)
            for first, stop in runs:
                wanted[first:stop] = True
            sent = []
            for chunk in chunks:
                split = _on_chunk(client, chunk, _split, bounds, n, directed, wanted)
                split.add_done_callback(bar.one)
                sent.append([client.submit(_run_keys, split, first, stop) for first, stop in runs])
            del split
            made = {r: client.submit(_range_slice, r, int(bounds[r]), int(bounds[r + 1]), n,
                                     token, r - first, *[s[j] for s in sent], **owners[r])
                    for j, (first, stop) in enumerate(runs) for r in range(first, stop)}
            del sent
            for r, future in made.items():
                slices[r] = future
                future.add_done_callback(bar.one)
            # this pass's keys are gone before the next pass makes its own (as in
            # runtime/resident.py: distributed.wait needs a default client)
            client.sync(_wait, list(made.values()))
        chunks.clear()  # the caller's list too
        arcs = sum(client.gather([client.submit(_arc_count, s) for s in slices]))
        bar.finish()
        return cls(rt, Partition(bounds), slices, arcs, directed, token)

    # ------------------------------------------------------------------ what bfs reads
    @property
    def num_edges(self) -> int:
        """Edges: arcs if directed, arcs / 2 if undirected."""
        return self.num_arcs if self.directed else self.num_arcs // 2

    def check_vertex(self, v, name: str = "vertex") -> int:
        """``v`` as an int if it is a vertex of this graph, else
        :class:`~taskbfs.errors.InvalidVertexError` naming it (as ``Graph.check_vertex``)."""
        return Graph.check_vertex(self, v, name)

    def vertex(self, v, name: str = "vertex") -> int:
        """The vertex number of ``v`` (a distributed graph has no labels: ``check_vertex``)."""
        return self.check_vertex(v, name)

    def degree(self, v: int) -> int:
        """Out-degree of ``v`` (read on the worker holding its range)."""
        return int(self.degree_future(v).result())

    def degree_future(self, v: int) -> Future:
        """A future of :meth:`degree`: asked of the worker now, read when wanted."""
        v = self.check_vertex(v)
        return self.runtime.client.submit(_slice_degree, self.slices[self.ranges.owner(v)], v)

    def degrees(self) -> np.ndarray:
        """Out-degree of every vertex (int64), gathered from the workers (8 bytes per
        vertex on the client; what ``tb.search_keys`` and ``tb.traversed_edges`` read)."""
        return self.degrees_future().result()

    def degrees_future(self) -> Future:
        """A future of the whole out-degree array, on a worker (a search reads it there)."""
        if self._degrees is None:  # each slice's degrees on its worker: 8 bytes a vertex move
            client = self.runtime.client
            self._degrees = client.submit(_concatenated, *[client.submit(_slice_degrees, s)
                                                           for s in self.slices])
        return self._degrees

    def place(self, runtime, tasks: int, balance: str, need_transpose: bool,
              timeout: float | None = None) -> PlacedGraph:
        """The :class:`PlacedGraph` a search with T = ``tasks`` and ``balance`` reads: the
        built slices when they are its ranges (``tasks`` = R and ``balance="edges"``:
        they are balanced by edges already), else slices cut from them on the workers
        (what it asks of the cluster, within ``timeout`` seconds, else ``TimeoutError``)."""
        self._check_runtime(runtime)
        key = (int(tasks), balance)
        placed = self._placed.get(key)
        if placed is None:
            placed = self._placement(int(tasks), balance, timeout)
            placed.recomputable = True  # Dask recomputes a slice lost with its worker
            self._placed[key] = placed
            while len(self._placed) > MAX_PLACED_GRAPHS:
                self._placed.popitem(last=False)
        self._placed.move_to_end(key)
        if need_transpose and placed.transposed is None:
            placed.transposed = (self._transposed(placed, timeout) if self.directed
                                 else placed.slices)
        return placed

    def _placement(self, tasks: int, balance: str, timeout: float | None) -> PlacedGraph:
        client = self.runtime.client
        if tasks == self.ranges.num_tasks and balance == "edges":
            return PlacedGraph(self.ranges, self.slices, self.degrees_future(), self.num_arcs)
        bounds = client.submit(_partition_bounds, self.degrees_future(), tasks,
                               balance).result(timeout=timeout)
        parts = Partition(bounds)
        slices = [client.submit(_cut_slice, t, lo, hi, self.token, *self._covering(lo, hi),
                                **owner)
                  for (t, (lo, hi)), owner in zip(enumerate(parts), _owners(client, tasks, timeout),
                                                  strict=True)]
        return PlacedGraph(parts, slices, self.degrees_future(), self.num_arcs)

    def _covering(self, lo: int, hi: int) -> list:
        """The built slices overlapping ``[lo, hi)``."""
        first, last = self.ranges.owner(np.array([lo, hi - 1]))
        return self.slices[int(first) : int(last) + 1]

    def _transposed(self, placed: PlacedGraph, timeout: float | None = None) -> list:
        """The placed ranges' slices of the reversed graph (in-neighbours), by the same
        all-to-all as the build, from the slices' own arcs."""
        client, n = self.runtime.client, self.num_vertices
        bounds = placed.parts.bounds
        splits = [client.submit(_reversed_split, s, bounds, n) for s in placed.slices]
        owners = _owners(client, placed.parts.num_tasks, timeout)  # as the slices were dealt out
        runs = _owner_runs(owners, _ranges_per_send(client, self.num_arcs,
                                                    placed.parts.num_tasks, timeout))
        sent = [[client.submit(_run_keys, s, first, stop) for first, stop in runs]
                for s in splits]
        return [client.submit(_transposed_slice, placed.slices[t], n, self.token + "/T",
                              t - runs[j][0], *[s[j] for s in sent], **owners[t])
                for j, (first, stop) in enumerate(runs) for t in range(first, stop)]

    def reversed(self) -> DistributedGraph:
        """The graph with every arc reversed (itself when undirected), kept on the workers
        over the same ranges: the in-neighbour slices a bottom-up search reads, built once
        by the same all-to-all and kept with the graph (as many bytes again on the
        workers); what ``bfs(..., reverse=True)`` searches."""
        if not self.directed:
            return self
        made = self.__dict__.get("_reverse")
        if made is None:
            placed = self.place(self.runtime, self.ranges.num_tasks, "edges", need_transpose=True)
            client = self.runtime.client
            slices = [client.submit(_own_adjacency, s, self.token + "/R")
                      for s in placed.transposed]
            made = self.__dict__["_reverse"] = DistributedGraph(
                self.runtime, self.ranges, slices, self.num_arcs, True, self.token + "/R")
        return made

    def _check_runtime(self, runtime) -> None:
        if runtime.client is not self.runtime.client:
            raise InvalidParameterError(
                "this DistributedGraph lives on the workers of another runtime "
                f"({self.runtime.client}); search it there (runtime=None uses its own)")

    # ------------------------------------------------------------------ leaving the workers
    def gather(self, max_bytes: int | None = None) -> Graph:
        """The whole graph on the client, as a :class:`~taskbfs.graph.Graph` with the same
        token.

        Parameters
        ----------
        max_bytes : int, optional
            Refuse (:class:`~taskbfs.errors.InvalidParameterError`) a graph whose CSR
            arrays need more; default half the memory this machine has free.
        """
        itemsize = np.dtype(np.int32 if self.num_vertices <= np.iinfo(np.int32).max
                            else np.int64).itemsize
        need = self.num_arcs * itemsize + 8 * (self.num_vertices + 1)
        limit = _free_memory() // 2 if max_bytes is None else int(max_bytes)
        if need > limit:
            raise InvalidParameterError(
                f"gathering this graph needs {need / 2**30:.2f} GiB on the client, more than "
                f"the {limit / 2**30:.2f} GiB allowed (max_bytes); keep it on the workers")
        pieces = self.runtime.client.gather(self.slices)
        indptr = np.zeros(self.num_vertices + 1, dtype=np.int64)
        offset = 0
        for s in pieces:
            indptr[s.lo + 1 : s.hi + 1] = s.indptr[1:] + offset
            offset += int(s.indptr[-1])
        indices = np.concatenate([s.indices for s in pieces])
        return Graph(indptr, indices, self.num_vertices, self.directed, token=self.token)

    def row_witnesses(self, levels: np.ndarray, parents: np.ndarray, source: int) -> dict:
        """Graph500 rules 3, 4 and 5 checked range by range on the workers: the first
        witness of each (``{3: (u, v) | None, 4: (u, v) | None, 5: v | None}``), the
        ones a whole-graph pass in vertex order finds first
        (:func:`taskbfs.graph500.validate` calls this)."""
        from taskbfs.graph500 import compact_levels

        client = self.runtime.client
        levels_f = client.scatter(compact_levels(levels), broadcast=False, hash=False)
        if self.directed:  # rule 5 from the parent's row: every range reads every parent
            parents_f = [client.scatter(parents, broadcast=False, hash=False)] * len(self.slices)
        else:  # from the child's row: each range its own parents, sent to its holder
            parents_f = self._scattered_by_range(parents)
        found = client.gather([client.submit(_slice_witnesses, s, levels_f, p, source,
                                             self.directed)
                               for s, p in zip(self.slices, parents_f, strict=True)])
        out = {3: None, 4: None, 5: None}
        for rule in (3, 4):
            out[rule] = next((w[rule] for w in found if w[rule] is not None), None)
        fives = [w[5] for w in found if w[5] is not None]
        out[5] = min(fives) if fives else None
        return out

    def _scattered_by_range(self, values: np.ndarray) -> list:
        """``values[lo:hi]`` of each built range, scattered to the worker that holds its
        slice (one scatter per worker): one future per range."""
        client = self.runtime.client
        bounds = self.ranges.bounds
        held = client.who_has(self.slices)
        by_worker: dict = {}
        for t, s in enumerate(self.slices):
            worker = (held.get(s.key) or [None])[0]
            by_worker.setdefault(worker, []).append(t)
        out = [None] * len(self.slices)
        for worker, ranges in by_worker.items():
            parts = [values[int(bounds[t]) : int(bounds[t + 1])] for t in ranges]
            sent = client.scatter(parts, workers=None if worker is None else [worker],
                                  hash=False)
            for t, future in zip(ranges, sent, strict=True):
                out[t] = future
        return out

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return (f"DistributedGraph({kind}, num_vertices={self.num_vertices}, "
                f"num_edges={self.num_edges}, ranges={self.ranges.num_tasks})")


# ====================================================================== builders
def build_kronecker(scale: int, edgefactor: int, seed: int, runtime, ranges: int | None,
                    progress=None):
    """:func:`taskbfs.kronecker` with a runtime: each chunk of the edge list (chunks of
    :data:`_CHUNK_EDGES`) generated on a worker.
    The edge list is held on the workers until the ranges are cut (they need every
    chunk's arc counts), unless it would not fit (:func:`_holds_chunks`): then each chunk
    is generated twice, once for its arc counts and once for its split, and never held."""
    rt = _as_runtime(runtime)
    size = _CHUNK_EDGES
    count = kronecker_chunk_count(scale, edgefactor, seed, size)
    specs = [(scale, edgefactor, seed, i, size) for i in range(count)]
    n = 1 << scale
    ranges = _check_ranges(ranges, rt, n)
    edge_list = count * size * 2 * np.dtype(np.int64).itemsize
    # refused here, before any chunk is made, when the workers cannot hold it: its arcs
    # estimated (both arcs of each generated edge, less self-loops and repeats)
    arcs = int(KRONECKER_ARCS_PER_EDGE * 2 * count * size)
    what = f"building a Kronecker graph of scale {scale}"
    try:
        plan = _plan(rt, arcs, n, ranges, size, 0, what=what)
    except InsufficientMemoryError:
        plan = None  # perhaps with smaller chunks
    if plan is None or plan.passes > 1:  # smaller chunk tasks hold less (the same graph)
        size = max(1, min(size, PASS_CHUNK_EDGES))
        _plan(rt, arcs, n, ranges, size, 0, what=what)  # raises if it cannot fit
        count = kronecker_chunk_count(scale, edgefactor, seed, size)
        specs = [(scale, edgefactor, seed, i, size) for i in range(count)]
    with _progress_of(progress, f"kronecker({scale}) on the workers") as bar:
        if plan is not None and plan.passes == 1 and _holds_chunks(rt.client, edge_list):
            chunks = [rt.client.submit(kronecker_chunk, *spec, pure=False) for spec in specs]
            return DistributedGraph.from_chunks(rt, chunks, n, False, ranges, progress=bar)
        # the generator's chunks name vertices below n by construction: nothing to check
        return DistributedGraph._build(rt, [_Remade(kronecker_chunk, spec) for spec in specs],
                                       n, False, ranges, size, bar)


def build_from_files(path, format: str | None, directed: bool | None, runtime,
                     ranges: int | None, progress=None):
    """:func:`taskbfs.read_graph` with a runtime: an uncompressed edge-list or MatrixMarket
    file read by a task per :data:`_READ_BYTES` byte range (cut from the
    file's size on a worker, no pre-scan), a compressed file by a task of its own."""
    with _progress_of(progress, "reading the graph on the workers") as bar:
        return _build_from_files(path, format, directed, _as_runtime(runtime), ranges, bar)


def _build_from_files(path, format, directed, rt, ranges, bar):
    paths = [os.fspath(p) for p in ([path] if isinstance(path, (str, os.PathLike)) else path)]
    if not paths:
        raise InvalidParameterError("no files to read")
    client = rt.client
    plans = client.gather([client.submit(graph_io.byte_ranges, p, _READ_BYTES, format,
                                         pure=False) for p in paths])
    read, checks = [], []
    for p, plan in zip(paths, plans, strict=True):
        ranges_of_p = [None] if plan is None else plan  # None: the whole file in one task
        mine = [client.submit(graph_io.read_edges, p, format, directed, r, pure=False)
                for r in ranges_of_p]
        if plan is not None:  # a MatrixMarket file's ranges hold the entries it declares
            checks.append(client.submit(graph_io.check_entry_count, p, format,
                                        *[client.submit(_entry_count, r) for r in mine]))
        read += mine
    bar.watch(read)
    heads = client.gather([client.submit(_file_head, r) for r in read])
    client.gather(checks)
    kinds = {d for _, d in heads}
    if len(kinds) > 1:
        raise InvalidParameterError(
            f"the files disagree on directedness ({paths[0]} is "
            f"{'directed' if heads[0][1] else 'undirected'}); pass directed=")
    sizes = {n for n, _ in heads if n is not None}
    if len(sizes) > 1:
        raise InvalidParameterError(f"the MatrixMarket files declare different sizes {sorted(sizes)}")
    n = sizes.pop() if sizes else None
    chunks = [client.submit(_edges_of, r) for r in read]
    del read  # the chunks hold the edges now
    return DistributedGraph.from_chunks(rt, chunks, n, kinds.pop(), ranges, progress=bar)


def _progress_of(progress, what: str) -> BuildProgress:
    """The :class:`BuildProgress` a build reports to (``progress`` itself when it is one,
    as a builder hands its bar to the one it calls)."""
    return progress if isinstance(progress, BuildProgress) else BuildProgress(progress, what)


@dataclass(frozen=True)
class _Remade:
    """An edge chunk that a task makes again each time it reads it: ``make(*spec)``, a
    deterministic generator's chunk (so that a build need not hold the edge list)."""

    make: Callable
    spec: tuple


def _on_chunk(client, chunk, fn, *args):
    """A future of ``fn(pair, *args)`` for the edge chunk ``chunk``: a future of its
    ``(src, dst)`` pair, or a :class:`_Remade` (then the task makes the pair itself)."""
    if isinstance(chunk, _Remade):
        return client.submit(_remade, chunk.make, chunk.spec, fn, *args, pure=False)
    return client.submit(fn, chunk, *args)


#: Edges per Kronecker chunk when a build runs in passes (each chunk is made again every
#: pass; a smaller one holds less while it is split).
PASS_CHUNK_EDGES = 1 << 18
#: Arcs of a Kronecker graph per generated edge and direction (self-loops and repeats
#: dropped): 128.3 M arcs of 2 x 67.1 M at scale 22 (0.956); the estimate a build on the
#: workers is checked against before it starts (then again with the arcs counted).
KRONECKER_ARCS_PER_EDGE = 0.96


#: Dask's thresholds (fractions of a worker's memory_limit) at which a worker pauses, and
#: at which its nanny ends it: a build plans within the first of them that is on.
_WORKER_MEMORY_ACTIONS = ("distributed.worker.memory.pause", "distributed.worker.memory.terminate")


def _plan(rt, arcs: int, n: int, ranges: int, chunk_edges: int = 0, held: int = 0,
          what: str = "building this graph"):
    """:func:`~taskbfs.graph.chunked.build_plan` for this runtime's workers: what each
    worker that owns ranges can take before Dask pauses it (``memory_limit`` x
    ``distributed.worker.memory.pause``, or ``terminate`` where pausing is off, less the
    memory its process uses now, as the scheduler last heard; no limit where both are
    off; in-process workers share this machine's available memory)."""
    import dask

    info = workers_of(rt.client)
    owners = workers_with(info, GPU_RESOURCE) or sorted(info)
    if not owners:
        return build_plan(arcs, n, ranges, [None], chunk_edges=chunk_edges, held=held, what=what)
    if rt.in_process:
        from taskbfs.runtime.cluster import _available_memory

        free = [_available_memory() // len(owners)] * len(owners)
    else:
        # neither pausing nor the nanny's terminate on: nothing stops a process for its size
        fraction = next((float(f) for f in map(dask.config.get, _WORKER_MEMORY_ACTIONS) if f),
                        None)
        free = [None if not info[w].get("memory_limit") or fraction is None else
                max(0, int(fraction * info[w]["memory_limit"])
                    - int(info[w].get("metrics", {}).get("memory", 0))) for w in owners]
    threads = [info[w].get("nthreads", 1) for w in owners]
    return build_plan(arcs, n, ranges, free, threads, chunk_edges, held, what,
                      _PEAK_OVER_CSR)


def _pass_runs(owners: list[dict], passes: int) -> list[list[tuple[int, int]]]:
    """Per pass, the ``(first, stop)`` run of each worker's ranges it builds: each
    worker's consecutive ranges cut into ``passes`` groups (of ``ceil(mine / passes)``,
    the last ones smaller or empty)."""
    blocks, first = [], 0
    for r in range(1, len(owners) + 1):
        if r == len(owners) or owners[r] != owners[first]:
            blocks.append((first, r))
            first = r
    out = []
    for p in range(passes):
        runs = []
        for a, b in blocks:
            size = -(-(b - a) // passes)
            lo, hi = a + p * size, min(b, a + (p + 1) * size)
            if lo < hi:
                runs.append((lo, hi))
        if runs:
            out.append(runs)
    return out


def _holds_chunks(client, nbytes: int) -> bool:
    """Whether a build may hold an edge list of ``nbytes`` on the workers until its
    ranges are cut: its chunk tasks run wherever a thread is free, so each worker holds
    about its share of the cluster's threads of it, which must be at most
    :data:`_HOLD_SHARE_OF_MEMORY` of its ``memory_limit`` (a worker without one: any)."""
    info = workers_of(client).values()
    threads = sum(w.get("nthreads", 1) for w in info) or 1
    share = _HOLD_SHARE_OF_MEMORY
    return all(nbytes * w.get("nthreads", 1) / threads <= share * w["memory_limit"]
               for w in info if w.get("memory_limit"))


# ====================================================================== worker tasks
def _remade(make, spec: tuple, fn, *args):
    return fn(make(*spec), *args)


def _checked_pair(pair, index: int):
    src, dst = pair
    src = _as_vertex_array(src, f"chunk {index}: src")
    dst = _as_vertex_array(dst, f"chunk {index}: dst")
    if src.shape != dst.shape:
        raise InvalidParameterError(f"chunk {index}: src and dst have lengths {src.size} "
                                    f"and {dst.size}")
    return src, dst


def _largest_id(pair) -> int:
    return int(max(pair[0].max(initial=-1), pair[1].max(initial=-1)))


def _check_ids(pair, index: int, n: int) -> None:
    src, dst = pair
    bad = np.flatnonzero((src >= n) | (dst >= n))
    if bad.size:
        k = int(bad[0])
        raise InvalidVertexError(f"chunk {index}, edge {k} ({int(src[k])}, {int(dst[k])}) names "
                                 f"a vertex outside 0..{n - 1} (num_vertices={n})")


def _split(pair, bounds: np.ndarray, n: int, directed: bool, wanted=None):
    return split_arcs(pair[0], pair[1], bounds, n, directed, wanted)


def _pair_nbytes(pair) -> int:
    return int(pair[0].nbytes + pair[1].nbytes)


def _summed_ints(*values) -> int:
    return int(sum(values))


def _histogram(pair, n: int, bins: int, directed: bool) -> np.ndarray:
    return arc_histogram(pair[0], pair[1], n, bins, directed)


def _total(counts: np.ndarray) -> int:
    return int(counts.sum())


def _summed(*counts) -> np.ndarray:
    return np.sum(counts, axis=0)


def _run_keys(split, first: int, stop: int):
    """What a split sends the owner of ranges ``first .. stop - 1``: their keys (a copy,
    so that the split can go) and their offsets in it."""
    keys, offsets = split
    return (keys[offsets[first] : offsets[stop]].copy(),
            offsets[first : stop + 1] - offsets[first])


def _keys_of(k: int, sent) -> list:
    """The keys of the ``k``-th range of each owner's share in ``sent`` (views)."""
    return [keys[offsets[k] : offsets[k + 1]] for keys, offsets in sent]


def _range_slice(r: int, lo: int, hi: int, n: int, token: str, k: int, *sent) -> GraphSlice:
    indptr, indices = range_csr(_keys_of(k, sent), lo, hi, n, cores_per_thread())
    return GraphSlice(r, lo, hi, indptr, indices, token)


def _arc_count(piece: GraphSlice) -> int:
    return int(piece.indptr[-1])


def _slice_degree(piece: GraphSlice, v: int) -> int:
    return int(piece.indptr[v - piece.lo + 1] - piece.indptr[v - piece.lo])


def _slice_degrees(piece: GraphSlice) -> np.ndarray:
    return np.diff(piece.indptr)


def _concatenated(*arrays) -> np.ndarray:
    return np.concatenate(arrays)


def _partition_bounds(degrees: np.ndarray, tasks: int, balance: str) -> np.ndarray:
    indptr = np.zeros(degrees.size + 1, dtype=np.int64)
    np.cumsum(degrees, out=indptr[1:])
    return partition_indptr(indptr, tasks, balance).bounds


def _cut_slice(t: int, lo: int, hi: int, token: str, *pieces) -> GraphSlice:
    indptr, indices = join_rows(lo, hi, [(p.lo, p.indptr, p.indices) for p in pieces])
    return GraphSlice(t, lo, hi, indptr, indices, token)


def _reversed_split(piece: GraphSlice, bounds: np.ndarray, n: int):
    src, dst = piece_arcs(piece.indptr, piece.indices, piece.lo)
    return split_arcs(dst, src, bounds, n, True)


def _own_adjacency(piece: GraphSlice, token: str) -> GraphSlice:
    """A transposed slice as the out-adjacency of the reversed graph (its in-arcs are its
    out-arcs there)."""
    return GraphSlice(piece.task, piece.lo, piece.hi, piece.indptr, piece.indices, token)


def _transposed_slice(piece: GraphSlice, n: int, token: str, k: int, *sent) -> GraphSlice:
    indptr, indices = range_csr(_keys_of(k, sent), piece.lo, piece.hi, n, cores_per_thread())
    return GraphSlice(piece.task, piece.lo, piece.hi, indptr, indices, token, piece.indptr)


def _slice_witnesses(piece: GraphSlice, levels, parents, source: int, directed: bool) -> dict:
    from taskbfs.graph500 import row_witnesses

    return row_witnesses(piece.indptr, piece.indices, piece.lo, levels, parents, source, directed,
                         cores_per_thread(), own_parents=not directed)


def _frame_pair(frame, source: str, target: str):
    return frame[source].to_numpy(), frame[target].to_numpy()


def _file_head(read) -> tuple:
    return read[2], read[3]


def _entry_count(read) -> int:
    return int(read[0].size)


def _edges_of(read):
    return read[0], read[1]


# ====================================================================== helpers
def _as_runtime(runtime):
    from taskbfs.search.core import _runtime

    if runtime is None:
        raise InvalidParameterError("a graph built on the workers needs runtime= (a Runtime, "
                                    "a distributed.Client or a scheduler address)")
    return _runtime(runtime)


def _owners(client, count: int, timeout: float | None = None) -> list[dict]:
    """``submit`` keywords that deal ``count`` ranges out to the workers, consecutive
    ranges to the same worker (the scheduler would put them where most of their input
    lies, often all on one); a preference, not a restriction. Consecutive, so that
    another cut of the same vertices finds most of its rows on its own worker. Where
    there are GPU workers, the ranges go to them only: a range's owner runs its barriers
    and its steps run best beside it, and the big steps of a search that may use a GPU
    run on one (CPU steps copy only the owner's frontier,
    :class:`~taskbfs.search.owners.OwnerFrontier`)."""
    info = workers_of(client, timeout)
    workers = workers_with(info, GPU_RESOURCE) or sorted(info)
    if len(info) < 2:
        return [{}] * count
    return [{"workers": [workers[r * len(workers) // count]], "allow_other_workers": True}
            for r in range(count)]


def _owner_runs(owners: list[dict], most: int) -> list[tuple[int, int]]:
    """``(first, stop)`` of each run of at most ``most`` consecutive ranges dealt to the
    same worker: what one split sends in one piece (an all-to-all of a task per owner,
    not per range)."""
    runs, first = [], 0
    for r in range(1, len(owners) + 1):
        if r == len(owners) or owners[r] != owners[first] or r - first == most:
            runs.append((first, r))
            first = r
    return runs


def _ranges_per_send(client, arcs: int, ranges: int, timeout: float | None = None) -> int:
    """How many ranges' keys one split sends a worker in one piece: their keys (8 bytes
    an arc, ranges of about equal arcs) at most :data:`_SEND_SHARE_OF_MEMORY`
    of the smallest worker ``memory_limit`` (every range, where no worker has one)."""
    limits = [w.get("memory_limit") or 0 for w in workers_of(client, timeout).values()]
    limits = [m for m in limits if m > 0]
    if not limits:
        return ranges
    range_bytes = max(1, 8 * arcs // ranges)
    return max(1, int(_SEND_SHARE_OF_MEMORY * min(limits)) // range_bytes)


def _check_ranges(ranges, rt, n: int) -> int:
    if ranges is None:
        from taskbfs.runtime.plugin import CPU_RESOURCE
        from taskbfs.search.core import tasks_for_slots

        ranges = tasks_for_slots(int(rt.resources().get(CPU_RESOURCE, 0)))
    if isinstance(ranges, (bool, np.bool_)) or not isinstance(ranges, (int, np.integer)) \
            or ranges < 1:
        raise InvalidParameterError(f"ranges must be an integer >= 1, got {ranges!r}")
    return int(min(ranges, n))


def _free_memory() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - distributed depends on psutil
        return 1 << 62


# ====================================================================== results kept there
class KeptResult:
    """A search's distances and parents left on the workers, in pieces over vertex
    ranges: ``pieces[i]`` is a future of the ``(distances, parents)`` of vertices
    ``bounds[i] .. bounds[i + 1] - 1``."""

    def __init__(self, client, pieces: list, bounds: np.ndarray, on_device: bool = False):
        self.client = client
        self._pieces = pieces
        self.bounds = np.asarray(bounds, dtype=np.int64)
        #: The pieces are CuPy arrays in a GPU worker's memory (``bfs(device_result=True)``).
        self.on_device = on_device
        self._here = None  # (distances, parents) made by a worker of this process

    @classmethod
    def in_this_process(cls, client, arrays: tuple, bounds: np.ndarray) -> KeptResult:
        """The ``(distances, parents)`` CuPy ``arrays`` a GPU worker of this process left in
        its GPU's memory, as they are: they become Dask data (a piece per range, no copy)
        only when read as dask collections."""
        kept = cls(client, None, bounds, on_device=True)
        kept._here = arrays
        return kept

    @property
    def pieces(self) -> list:
        """A future of ``(distances, parents)`` per range."""
        if self._pieces is None:
            d, p = self._here
            ranges = [(d[lo:hi], p[lo:hi]) for lo, hi in zip(self.bounds[:-1].tolist(),
                                                             self.bounds[1:].tolist(), strict=True)]
            self._pieces = self.client.scatter(ranges, hash=False)
        return self._pieces

    def to_device(self) -> KeptResult:
        """The pieces as CuPy arrays on a GPU worker (no copy where they are already
        there; one host to device copy for a piece made on the host)."""
        from taskbfs.runtime.plugin import GPU_RESOURCE

        pieces = [self.client.submit(_piece_to_device, p, resources={GPU_RESOURCE: 1})
                  for p in self.pieces]
        return KeptResult(self.client, pieces, self.bounds, on_device=True)

    @classmethod
    def of_search(cls, client, outcome: Future, bounds: np.ndarray) -> KeptResult:
        """The result inside a one-task search's outcome, cut into the ranges ``bounds``
        on the worker that holds it."""
        pieces = [client.submit(_outcome_range, outcome, int(lo), int(hi))
                  for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        return cls(client, pieces, bounds)

    def to_dask(self):
        """``(distances, parents)`` as dask arrays, one chunk per piece."""
        import dask.array as da

        from taskbfs.search.result import result_dtype

        sizes = np.diff(self.bounds).tolist()
        dtype = result_dtype(int(self.bounds[-1]))
        meta = {}
        if self.on_device:  # chunks of CuPy arrays
            import cupy

            meta = {"meta": cupy.empty(0, dtype=dtype)}
        out = []
        for field in (0, 1):
            parts = [da.from_delayed(self.client.submit(_field, p, field), shape=(size,),
                                     dtype=dtype, **meta)
                     for p, size in zip(self.pieces, sizes, strict=True)]
            out.append(da.concatenate(parts) if len(parts) > 1 else parts[0])
        return tuple(out)

    def to_dask_dataframe(self, frame):
        """The reached vertices as a dask DataFrame, one partition per piece, each made by
        ``frame(distances, parents, lo)`` on the worker that holds its piece."""
        import dask.dataframe as dd

        parts = [self.client.submit(_piece_frame, p, int(lo), frame, self.on_device)
                 for p, lo in zip(self.pieces, self.bounds[:-1], strict=True)]
        dtype = _result_dtype_of(self.bounds)
        meta = frame(np.empty(0, dtype), np.empty(0, dtype), 0)
        return dd.from_delayed(parts, meta=meta, verify_meta=False)

    def gather(self):
        """``(distances, parents)`` as two numpy arrays on the client (pieces on a GPU
        copied to their worker's host first).

        Raises
        ------
        WorkerLostError
            A piece was lost with its worker and cannot be made again (it was written by
            owner tasks pinned to that worker: Dask would wait for it forever); seen
            within :data:`LOST_CHECK_SECONDS` of the wait. Pieces Dask can recompute
            elsewhere are waited for.
        SearchTimeoutError
            The scheduler did not answer that check within ``runtime.connect-timeout``.
        """
        if self._here is not None:
            return _piece_to_host(self._here)
        self._wait()
        on_host = ([self.client.submit(_piece_to_host, p) for p in self.pieces]
                   if self.on_device else self.pieces)
        try:
            pieces = self.client.gather(on_host)
        except CancelledError:  # a piece's data was lost and cannot be recomputed
            raise self._lost(()) from None
        return _joined(pieces, np)

    def gather_device(self):
        """``(distances, parents)`` of pieces on a GPU as two CuPy arrays in this process
        (the worker's own arrays when it runs in this process; else sent by Dask)."""
        import cupy

        if self._here is not None:
            return self._here
        return _joined(self.client.gather(self.pieces), cupy)


    def _wait(self) -> None:
        """Wait until every piece is computed, checking every
        :data:`LOST_CHECK_SECONDS` that none waits for a worker that left."""
        from distributed import wait

        while True:
            try:
                with self.client.as_current():  # ``wait`` uses the current client
                    wait(self.pieces, timeout=LOST_CHECK_SECONDS)
                return
            except TimeoutError:
                pass
            limit = config.get("runtime.connect-timeout")
            try:
                gone = stranded(self.client, self.pieces, timeout=limit)
            except TimeoutError:
                raise SearchTimeoutError(
                    f"the search's result could not be read from the workers: the scheduler "
                    f"did not answer within {limit:g} s (runtime.connect-timeout)") from None
            if gone:
                raise self._lost(gone)

    @staticmethod
    def _lost(workers) -> WorkerLostError:
        who = (f"worker {', '.join(workers)}, which left the cluster" if workers else
               "a worker that left the cluster")
        return WorkerLostError(
            f"the search's result (distances and parents) was kept on {who}, and is lost "
            f"with it (the owner tasks that wrote it cannot run elsewhere): search again",
            workers)


#: Seconds between the checks of :meth:`KeptResult.gather` that no piece waits for a
#: worker that left (a scheduler round trip each, while the pieces are not all there).
LOST_CHECK_SECONDS = 1.0


def outcome_summaries(client, outcome: Future, timeout: float | None = None):
    """``(summaries, assembly_d2h_bytes)`` of a one-task search's outcome, without its
    result arrays (within ``timeout`` seconds, else ``TimeoutError``)."""
    return client.submit(_outcome_meta, outcome).result(timeout=timeout)


def _outcome_range(outcome, lo: int, hi: int):
    return outcome.distances[lo:hi], outcome.parents[lo:hi]


def _outcome_meta(outcome):
    return outcome.summaries, outcome.assembly_d2h_bytes


def _field(piece, field: int) -> np.ndarray:
    return piece[field]


def _joined(pieces: list, xp):
    """``(distances, parents)`` of the pieces in vertex order, as arrays of ``xp``."""
    if len(pieces) == 1:
        return tuple(pieces[0])
    return (xp.concatenate([d for d, _ in pieces]), xp.concatenate([p for _, p in pieces]))


def _piece_to_device(piece):
    import cupy

    return tuple(cupy.asarray(x) for x in piece)


def _result_dtype_of(bounds) -> np.dtype:
    from taskbfs.search.result import result_dtype

    return result_dtype(int(bounds[-1]))


def _piece_frame(piece, lo: int, frame, on_device: bool):
    distances, parents = _piece_to_host(piece) if on_device else piece
    return frame(distances, parents, lo)


def _piece_to_host(piece):
    return tuple(x if isinstance(x, np.ndarray) else x.get() for x in piece)
