"""Building a graph's vertex ranges on the workers: no edge crosses the client.

Returns
    :class:`Built` (what a :class:`~taskbfs.placed.graph.DistributedGraph` is made of) from
    :func:`build_kronecker`, :func:`build_from_files`, :func:`from_chunks` and
    :func:`from_dask`; the all-to-all's pieces (:func:`deal_out`, :func:`owner_runs`,
    :func:`ranges_per_send`, :func:`run_keys`, :func:`transposed_slice`) that the graph
    also uses to build its transposed slices.
Approach (all Dask tasks)
    1. Each edge chunk (a Kronecker chunk generated on a worker, a file read there, a
       partition of a dask collection) is counted per bin of vertex ids
       (:func:`~taskbfs.graph.chunked.arc_histogram`); the summed counts give R ranges of
       about equal arcs (:func:`~taskbfs.graph.chunked.range_bounds`), the ``"edges"``
       balance.
    2. All-to-all: each chunk groups its arcs by owning range
       (:func:`~taskbfs.graph.chunked.split_arcs`); consecutive ranges go to the same
       worker, so a task per (chunk, owner) copies one slice of the groups, and a task per
       range builds its rows from what every chunk sent its owner
       (:func:`~taskbfs.graph.chunked.range_csr`, on the worker's spare cores), exactly as
       ``Graph.from_edges`` would.
    3. The arcs counted, the build is planned against the workers' free memory
       (:func:`_plan`): refused with :class:`~taskbfs.errors.InsufficientMemoryError`
       before any key is made when it cannot fit, or run in passes over the ranges.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from taskbfs.errors import (
    EmptyGraphError,
    InsufficientMemoryError,
    InvalidParameterError,
    InvalidVertexError,
)
from taskbfs.graph import Partition
from taskbfs.graph import io as graph_io
from taskbfs.graph._graph import as_vertex_array, check_num_vertices
from taskbfs.graph._progress import BuildProgress
from taskbfs.graph.chunked import (
    MAX_BUILD_VERTICES,
    arc_histogram,
    build_plan,
    kronecker_chunk,
    kronecker_chunk_count,
    range_bounds,
    range_csr,
    split_arcs,
)
from taskbfs.placed.placement import deal_out, owner_runs, ranges_per_send, tasks_for_slots
from taskbfs.placed.slices import GraphSlice
from taskbfs.runtime.choice import resolve_runtime
from taskbfs.runtime.cluster import available_memory
from taskbfs.runtime.plugin import workers_of, workers_with
from taskbfs.runtime.task import CPU_RESOURCE, GPU_RESOURCE
from taskbfs.runtime.worker import cores_per_thread


class Built(NamedTuple):
    """A graph built on the workers: what :class:`~taskbfs.placed.graph.DistributedGraph`
    is made of (its constructor's arguments, in order)."""

    runtime: object
    ranges: Partition
    slices: list
    num_arcs: int
    directed: bool
    token: str


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
#: Most share of a worker's memory limit its part of a Kronecker edge list may take to be
#: held until the ranges are cut; beyond, each chunk is generated twice and never held.
_HOLD_SHARE_OF_MEMORY = 0.5
#: A worker's build peak kept within this multiple of its share of the CSR where memory is
#: plentiful (more passes, up to chunked.MAX_CAPPED_PASSES): memory left for the search.
_PEAK_OVER_CSR = 2.0
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


def build_kronecker(scale: int, edgefactor: int, seed: int, runtime, ranges: int | None,
                    progress=None):
    """:func:`taskbfs.kronecker` with a runtime: each chunk of the edge list (chunks of
    :data:`_CHUNK_EDGES`) generated on a worker.
    The edge list is held on the workers until the ranges are cut (they need every
    chunk's arc counts), unless it would not fit (:func:`_holds_chunks`): then each chunk
    is generated twice, once for its arc counts and once for its split, and never held."""
    rt = as_runtime(runtime)
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
            return from_chunks(rt, chunks, n, False, ranges, progress=bar)
        # the generator's chunks name vertices below n by construction: nothing to check
        return build_slices(rt, [_Remade(kronecker_chunk, spec) for spec in specs],
                                       n, False, ranges, size, bar)


def build_from_files(path, format: str | None, directed: bool | None, runtime,
                     ranges: int | None, progress=None):
    """:func:`taskbfs.read_graph` with a runtime: an uncompressed edge-list or MatrixMarket
    file read by a task per :data:`_READ_BYTES` byte range (cut from the
    file's size on a worker, no pre-scan), a compressed file by a task of its own."""
    with _progress_of(progress, "reading the graph on the workers") as bar:
        return _build_from_files(path, format, directed, as_runtime(runtime), ranges, bar)


def _build_from_files(path, format, directed, rt, ranges, bar):
    paths = [os.fspath(p) for p in ([path] if isinstance(path, (str, os.PathLike)) else path)]
    if not paths:
        raise InvalidParameterError("no files to read")
    client = rt.client
    arcs, plans = zip(*client.gather([client.submit(_file_plan, p, format, directed, pure=False)
                                      for p in paths]), strict=True)
    _check_files_fit(rt, paths, arcs, ranges)
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
    return from_chunks(rt, chunks, n, kinds.pop(), ranges, progress=bar)


def _file_plan(path, format, directed) -> tuple:
    """``(arcs, byte ranges)`` of a file, from its size, on the worker that reads it
    (:func:`~taskbfs.graph.io.file_arcs`, :func:`~taskbfs.graph.io.byte_ranges`)."""
    return (graph_io.file_arcs(path, format, directed),
            graph_io.byte_ranges(path, _READ_BYTES, format))


def _check_files_fit(rt, paths: list, arcs, ranges) -> None:
    """Refuse (:class:`~taskbfs.errors.InsufficientMemoryError`) files whose graph the
    workers cannot hold, before a byte of them is read: ``arcs`` per file as their sizes
    tell (None: a compressed file, which tells nothing and is checked once read, with the
    arcs counted)."""
    if any(a is None for a in arcs):
        return
    total = max(1, int(sum(arcs)))
    n = max(1, total // 16)  # unknown until read: a Kronecker graph's mean degree
    _plan(rt, total, n, _check_ranges(ranges, rt, n), _READ_BYTES // 16, 0,
          what=f"reading {paths[0]}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else ""))


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
        free = [available_memory() // len(owners)] * len(owners)
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


def _remade(make, spec: tuple, fn, *args):
    return fn(make(*spec), *args)


def _checked_pair(pair, index: int):
    src, dst = pair
    src = as_vertex_array(src, f"chunk {index}: src")
    dst = as_vertex_array(dst, f"chunk {index}: dst")
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


def run_keys(split, first: int, stop: int):
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


def transposed_slice(piece: GraphSlice, n: int, token: str, k: int, *sent) -> GraphSlice:
    indptr, indices = range_csr(_keys_of(k, sent), piece.lo, piece.hi, n, cores_per_thread())
    return GraphSlice(piece.task, piece.lo, piece.hi, indptr, indices, token, piece.indptr)


def _frame_pair(frame, source: str, target: str):
    return frame[source].to_numpy(), frame[target].to_numpy()


def _file_head(read) -> tuple:
    return read[2], read[3]


def _entry_count(read) -> int:
    return int(read[0].size)


def _edges_of(read):
    return read[0], read[1]


def as_runtime(runtime):
    if runtime is None:
        raise InvalidParameterError("a graph built on the workers needs runtime= (a Runtime, "
                                    "a distributed.Client or a scheduler address)")
    return resolve_runtime(runtime)


def _check_ranges(ranges, rt, n: int) -> int:
    if ranges is None:
        ranges = tasks_for_slots(int(rt.resources().get(CPU_RESOURCE, 0)))
    if isinstance(ranges, (bool, np.bool_)) or not isinstance(ranges, (int, np.integer)) \
            or ranges < 1:
        raise InvalidParameterError(f"ranges must be an integer >= 1, got {ranges!r}")
    return int(min(ranges, n))


def from_chunks(runtime, chunks: list, num_vertices: int | None = None,
                directed: bool = False, ranges: int | None = None, *,
                progress=None) -> Built:
    """:meth:`~taskbfs.placed.graph.DistributedGraph.from_chunks`'s build."""
    with _progress_of(progress, "building the graph on the workers") as bar:
        return _from_chunks(runtime, chunks, num_vertices, directed, ranges, bar)


def _from_chunks(runtime, chunks, num_vertices, directed, ranges, bar):
    rt = as_runtime(runtime)
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
    n = check_num_vertices(num_vertices)
    if n > MAX_BUILD_VERTICES:
        raise InvalidParameterError(
            f"num_vertices = {n}: a graph built on the workers has at most "
            f"{MAX_BUILD_VERTICES} vertices")
    checks = [client.submit(_check_ids, c, i, n) for i, c in enumerate(chunks)]
    client.gather(checks)  # raises the first chunk's bad vertex id
    return build_slices(rt, chunks, n, bool(directed), _check_ranges(ranges, rt, n), bar=bar)


def from_dask(edges, dst=None, num_vertices: int | None = None, directed: bool = False,
              runtime=None, ranges: int | None = None, *, source: str = "source",
              target: str = "target", progress=None) -> Built:
    """:meth:`~taskbfs.placed.graph.DistributedGraph.from_dask`'s build: each partition
    becomes one edge chunk on the workers."""
    rt = as_runtime(runtime)
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
    return from_chunks(rt, chunks, num_vertices, directed, ranges, progress=progress)


def build_slices(rt, chunks: list, n: int, directed: bool, ranges: int,
                 chunk_edges: int = 0, bar: BuildProgress | None = None) -> Built:
    """The graph of the edge ``chunks`` (futures of pairs, or :class:`_Remade`) built on
    the workers in ``ranges`` ranges (steps 1-3 of the module docstring)."""
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
        return _build_in_passes(rt, chunks, n, directed, bounds, plan.passes, token,
                                    bar)
    # chunk by chunk, its split then what it sends each owner: Dask runs them in that
    # order, and what is sent is a copy, so a chunk and its split are released as soon
    # as it is cut (and a range built on a worker over its memory target reads its
    # groups back from disk, not every split)
    owners = deal_out(client, ranges)
    runs = owner_runs(owners, ranges_per_send(client, arcs, ranges))
    sent = []
    for chunk in chunks:
        split = _on_chunk(client, chunk, _split, bounds, n, directed)
        bar.watch([split])
        sent.append([client.submit(run_keys, split, first, stop) for first, stop in runs])
    chunks.clear()  # the caller's list too
    del chunk, split
    slices = [client.submit(_range_slice, r, int(bounds[r]), int(bounds[r + 1]), n, token,
                            r - runs[j][0], *[s[j] for s in sent], **owners[r])
              for j, (first, stop) in enumerate(runs) for r in range(first, stop)]
    bar.watch(slices)
    del sent
    arcs = sum(client.gather([client.submit(_arc_count, s) for s in slices]))
    bar.finish()
    return Built(rt, Partition(bounds), slices, arcs, directed, token)


def _build_in_passes(rt, chunks: list, n: int, directed: bool, bounds: np.ndarray,
                     passes: int, token: str, bar: BuildProgress) -> Built:
    """The all-to-all of :meth:`_build` in ``passes`` passes (:func:`build_plan`):
    each over about ``1 / passes`` of every worker's ranges, its keys made (every
    chunk split again, keeping only the pass's ranges), sent and turned into rows
    before the next pass starts, so that a worker holds one pass's keys at a time."""
    from distributed.client import _wait

    client = rt.client
    ranges = bounds.size - 1
    owners = deal_out(client, ranges)
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
            sent.append([client.submit(run_keys, split, first, stop) for first, stop in runs])
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
    return Built(rt, Partition(bounds), slices, arcs, directed, token)
