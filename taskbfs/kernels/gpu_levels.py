"""A search's levels on the GPU, the frontier kept there: the host tier over plain arrays.

Returns
    :class:`DeviceLevels`: one search's state in device memory (its result, the frontier
    as a queue or a bitmap, the counts) over a device copy of the adjacency of a vertex
    range (the whole graph, or one task's slice: :meth:`~DeviceLevels.found` then gives a
    lone step's pairs), cut into the search's T task ranges (:meth:`~DeviceLevels.set_tasks`);
    :meth:`~DeviceLevels.top_down` / :meth:`~DeviceLevels.bottom_up` run a level's tasks
    placed on the GPU and return its :class:`LevelCounts`, with several tasks
    :meth:`~DeviceLevels.task_counts` the level's counts per task: the only data read back
    per level.
    :func:`result_dtype` gives the type of vertex ids and results (int32 below 2^31
    vertices, int64 beyond).
Approach
    The loop a GPU programmer writes (the peer ``benchmarks/plain_gpu_loop.py``), with the level's
    step and barrier as the task runtime sees them: the caller decides each level's
    direction from the counts (Beamer's rule) and asks for the frontier's conversion
    (:meth:`~DeviceLevels.convert`) when it changes. A top-down level is the frontier's
    degrees, their scan (one launch per 256^d vertices), one search per tile and the
    expansion (one launch when its frontier has few out-arcs, ``small_level_arcs``); a
    bottom-up one, two launches; each ends with a launch that writes its counts (32
    bytes) into mapped host memory, where the host reads them once the level's event
    says its kernels are done (no copy: none waits behind the result's copy, which
    starts beside the last levels, :meth:`~DeviceLevels.snapshot`). The state enters
    from the host's visited bitmap and frontier (:meth:`~DeviceLevels.enter`) and can
    leave again (:meth:`~DeviceLevels.leave`), so that levels run on the CPU between GPU
    ones. A level whose tasks run on both devices skips the CPU tasks' vertices
    (:meth:`~DeviceLevels.place_tasks`, the queue :meth:`~DeviceLevels.split`), hands the
    host the visited bitmap and their frontier, and claims the pairs they found
    (:meth:`~DeviceLevels.accept`). The kernels are in :mod:`taskbfs.kernels._gpu_levels`.
Encoding
    Device buffers come from ``workspace(name, size, dtype)`` (a device array of at least
    ``size`` entries, kept between calls: the worker's device cache). Frontier of level L:
    ``queues[L % 2]`` (top-down) or ``bits[L % 2]`` (bottom-up); counts of level L:
    ``rows[L % 3]``. Results as in :mod:`taskbfs.kernels._gpu_levels` (-1 unreached).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from taskbfs.errors import DeviceUnavailableError
from taskbfs.kernels._gpu_levels import DEFERRED, EXAMINED, FOUND, NEXT_EDGES, ROW, ROWS
from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.gpu import LaunchConfig, Stopwatch, require_cupy, require_gpu

#: Bytes of the counts read back after each level: one row.
COUNTS_BYTES = ROW * 8


@dataclass
class LevelCounts:
    """What one level on the device reports: the vertices it found (unique, the next
    frontier), the sum of their out-degrees, the adjacency entries it read (as the CPU
    step counts them), and its kernels' device seconds."""

    found: int
    next_edges: int
    examined: int
    seconds: float = 0.0


class DeviceLevels:
    """One search's levels on this GPU (see the module docstring).

    Parameters
    ----------
    graph : DeviceSlice
        The out-adjacency of the vertices ``[graph.lo, graph.hi)``: every vertex for a
        search's levels, one task's range for a step run alone (ids stay global).
    in_graph : DeviceSlice
        The in-adjacency the bottom-up levels read, of the same range (``graph`` itself
        when undirected).
    num_vertices : int
    config : LaunchConfig
    workspace : callable
        ``workspace(name, size, dtype)`` → a device buffer of at least ``size`` entries.
    """

    #: A top-down level whose frontier has at most this many out-arcs runs as one launch
    #: (``top_down_small``): the scan and tile launches would cost more than the level's
    #: kernel (0: every level through the tiled kernels; the warm-up sets 0 to load them).
    small_level_arcs = 1 << 16

    def __init__(self, graph, in_graph, num_vertices: int, config: LaunchConfig, workspace):
        from taskbfs.kernels._gpu_levels import level_kernels
        from taskbfs.kernels.bitmap import words_for

        cuda = require_gpu()
        self.read_range(graph, in_graph)
        self.n = int(num_vertices)
        self.words = words_for(self.n)
        self.config = config
        self.dtype = result_dtype(self.n)
        self.k = level_kernels(config.block_size, config.items_per_thread, self.dtype.name)
        self._workspace = workspace
        n, words = max(self.n, 1), max(self.words, 1)
        self.parents = workspace("levels_parents", n, self.dtype)
        self.distances = workspace("levels_distances", n, self.dtype)
        self.queues = [workspace(f"levels_queue{i}", n, self.dtype) for i in (0, 1)]
        self.bits = [workspace(f"levels_bits{i}", words, np.uint64) for i in (0, 1)]
        self.deferred = workspace("levels_deferred", n, self.dtype)
        self.visited = workspace("levels_visited", words, np.uint64)
        self.tail = workspace("levels_tail", 1, np.int64)
        #: The most vertex ids :meth:`enter_reached` takes (pairs and frontier): as many
        #: bytes as two bitmaps, the visited set and a frontier (what :meth:`enter` sends).
        self.entry_capacity = 2 * words * 8 // self.dtype.itemsize
        self.entry = workspace("levels_entry", self.entry_capacity, self.dtype)
        self._host_entry = None  # the entry as the host packs it (enter_reached)
        self.rows = [cuda.device_array(ROW, dtype=np.int64) for _ in range(ROWS)]
        self._watch = Stopwatch(cuda, config.simulated)  # times each level's kernels
        self.host_row = cuda.mapped_array(ROW, dtype=np.int64)  # the counts, as written
        self._done = cuda.event()  # marks the kernels queued so far (counts, the copy)
        self.entered = False  # whether the result arrays hold this search's state
        self._copy = None  # a result copy under way (snapshot): (after, distances, parents)
        self._side = None  # (the stream's owner, the stream) the copy runs on
        #: Host seconds the last :meth:`leave` took (0.0 before the first): what keeping
        #: the state here instead would save.
        self.leave_seconds = 0.0
        self.num_tasks = 1
        self._bounds = None
        self.set_tasks(np.array([0, self.n], dtype=np.int64))

    def read_range(self, graph, in_graph) -> None:
        """Read the adjacency ``graph`` (and ``in_graph``, bottom-up) from now on: the whole
        graph, or one task's slice for a step run alone (:meth:`found`)."""
        if (graph.lo, graph.hi) != (in_graph.lo, in_graph.hi):
            raise ValueError(f"the two orientations cover [{graph.lo}, {graph.hi}) and "
                             f"[{in_graph.lo}, {in_graph.hi})")
        self.graph, self.in_graph = graph, in_graph
        self.lo, self.hi = int(graph.lo), int(graph.hi)

    def set_tasks(self, bounds: np.ndarray) -> None:
        """The search's T vertex ranges (``bounds``, T + 1): with several, every level also
        counts what it found per task (:meth:`task_counts`) and runs only its tasks placed
        here (``on_gpu``). The buffers are kept while T and the ranges stay."""
        bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        if self._bounds is None or not np.array_equal(bounds, self._bounds):
            cuda = require_gpu()
            self._bounds = bounds
            t = self.num_tasks = int(bounds.size - 1)
            self.bounds = self._workspace("levels_bounds", t + 1, np.int64)
            self._upload(self.bounds, bounds)
            self.on_gpu = self._workspace("levels_on_gpu", t, np.uint8)
            # per task found, their arcs, entries read, then the level's counts row: one
            # buffer a level, in turn (a level's tally zeroes the next level's)
            self.task_rows = [self._workspace(f"levels_task_rows{i}", 3 * t + ROW, np.int64)
                              for i in (0, 1)]
            self.host_task_rows = cuda.mapped_array(3 * t + ROW, dtype=np.int64)
            self.tails = self._workspace("levels_tails", 2, np.int64)
            self._on_gpu = None
        self.place_tasks(np.ones(self.num_tasks, dtype=np.uint8))
        if self.num_tasks > 1:  # the per-task counts are read with several tasks only
            self.zero_task_rows()

    @property
    def counts_bytes(self) -> int:
        """Bytes a level reads back: its counts row, with several tasks beside the 3 x T
        per-task counts (:meth:`task_counts`)."""
        return COUNTS_BYTES if self.num_tasks == 1 else int(self.host_task_rows.nbytes)

    def zero_task_rows(self) -> None:
        """Zero both levels' per-task counts (when the state enters from the host)."""
        cfg = self.config
        for rows in self.task_rows:  # whole buffers: a view of a device array costs more
            self.k.base.fill[cfg.blocks_for(3 * self.num_tasks + ROW), cfg.block_size](rows, 0)

    def start_search(self) -> None:
        """Forget the last search: the next :meth:`enter` starts a new result."""
        self.entered = False
        if self._copy is not None:  # an abandoned search's copy: its buffers go back whole
            self._side[1].synchronize()
            self._copy = None

    # ------------------------------------------------------------------ in and out
    def enter_reached(self, level: int, top_down: bool, reached: np.ndarray,
                      frontier: np.ndarray) -> int:
        """Start this search's result from what the host reached: ``reached`` (shape
        ``(3, k)``, ``result_dtype``) holds per row the vertices, their parents and their
        distances (every vertex the search visited, the source included; a vertex may be
        named twice at one distance), ``frontier`` the vertex ids of level ``level``
        (top-down: each once; bottom-up: repeats allowed), at most ``entry_capacity`` ids
        in all. One copy to the device and two launches, whatever the graph's size.
        Returns the bytes copied."""
        cfg = self.config
        k, f = reached.shape[1], frontier.size
        if 3 * k + f > self.entry_capacity:
            raise ValueError(f"{k} pairs and {f} frontier ids exceed the entry's "
                             f"{self.entry_capacity} (use enter)")
        if self._host_entry is None:  # page-locked, so that its copy is one transfer
            self._host_entry = _host_array(require_gpu(), self.config.simulated,
                                           self.entry_capacity, self.dtype)
        packed = self._host_entry[: 3 * k + f]
        packed[: 3 * k] = reached.ravel()
        packed[3 * k:] = frontier
        entry = self.entry
        self._upload(entry, packed)
        p = level % 2
        self.k.fresh_result[cfg.blocks_for(max(self.n, ROW)), cfg.block_size](
            self.n, self.parents, self.distances, self.rows[level % ROWS], self.bits[p],
            0 if top_down else self.words)
        # the whole buffer and offsets: a view of a device array costs host work to make
        self.k.write_reached[cfg.blocks_for(max(k, f, 1)), cfg.block_size](
            entry, k, f, top_down, self.parents, self.distances, self.queues[p], self.bits[p])
        self.entered = True
        return int(packed.nbytes)

    def enter(self, level: int, top_down: bool, visited_bits: np.ndarray, frontier: np.ndarray) -> int:
        """Take the search's state from the host: the visited bitmap of level ``level`` and
        its frontier (vertex ids top-down, bitmap words bottom-up). The first call of the
        search starts its result (-1, and -2 for the visited vertices); later ones mark
        the vertices the host visited since. Returns the bytes copied to the device."""
        cfg = self.config
        self._upload(self.visited, np.ascontiguousarray(visited_bits, dtype=np.uint64))
        self.k.enter[cfg.blocks_for(max(self.n, ROW)), cfg.block_size](
            self.visited, self.n, not self.entered, self.parents, self.distances,
            self.rows[level % ROWS])
        self.entered = True
        if top_down:
            frontier = np.ascontiguousarray(frontier, dtype=self.dtype)
            self._upload(self.queues[level % 2], frontier)
        else:
            frontier = np.ascontiguousarray(frontier, dtype=np.uint64)
            self._upload(self.bits[level % 2], frontier)
        return int(visited_bits.nbytes + frontier.nbytes)

    def leave(self, level: int, top_down: bool, count: int):
        """The search's state for the host at level ``level``: ``(visited bitmap, frontier,
        bytes copied)``, the frontier as int64 vertex ids (top-down, ``count`` of them) or
        bitmap words."""
        start = time.perf_counter()
        cfg = self.config
        self.k.visited_words[cfg.blocks_for(self.words), cfg.block_size](
            self.parents, self.n, self.words, self.visited)
        visited = self.visited[: self.words].copy_to_host()
        if top_down:
            frontier = (self.queues[level % 2][:count].copy_to_host().astype(np.int64)
                        if count else np.empty(0, dtype=np.int64))
            moved = count * self.dtype.itemsize
        else:
            frontier = self.bits[level % 2][: self.words].copy_to_host()
            moved = frontier.nbytes
        self.leave_seconds = time.perf_counter() - start
        return visited, frontier, int(visited.nbytes + moved)

    def result(self):
        """``(distances, parents)``: the device arrays (``result_dtype``, at least
        ``num_vertices`` entries; -2 where a host step's pair belongs)."""
        return self.distances, self.parents

    def snapshot(self, level: int) -> None:
        """Start copying the result to the host now, after level ``level``'s kernels, on a
        stream beside the levels still to run: their vertices (at distances beyond
        ``level + 1``) are written over the copy at the end (:meth:`copied_result`). Into
        two free pinned buffers of the pool only (a copy into new memory cannot run
        beside kernels); without them the result is copied at the end."""
        from taskbfs.kernels.pinned import pinned_pool

        if self._copy is not None:
            return
        pool = pinned_pool()
        distances = pool.take(self.n, self.dtype, allocate=False)
        parents = pool.take(self.n, self.dtype, allocate=False)
        if distances is None or parents is None:
            return
        stream = self._side_stream(require_gpu())
        self._done.record()
        self._done.wait(stream)  # after the kernels queued so far
        for host, device in ((distances, self.distances), (parents, self.parents)):
            self._download(host, device, stream)
        self._copy = (level + 1, distances, parents)

    def copied_result(self):
        """``(distances, parents)`` on the host from :meth:`snapshot`'s copy, the vertices
        the later levels found written over it (found on the device by distance, so any
        later level, of either direction, is covered); None without a snapshot."""
        if self._copy is None:
            return None
        after, distances, parents = self._copy
        self._copy = None
        later_v, later_p, later_d = self._found_after(after, 3)
        self._side[1].synchronize()
        parents[later_v], distances[later_v] = later_p, later_d
        return distances, parents

    def found(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """The vertices level ``level`` found and their parents, on the host (``result_dtype``,
        in no set order): what a step run alone here returns (its search entered fresh, so
        every vertex at a distance beyond ``level`` is the level's)."""
        return tuple(self._found_after(level, 2))

    def _found_after(self, after: int, columns: int) -> list[np.ndarray]:
        """The vertices at a distance beyond ``after``, on the host: the first ``columns``
        of their ids, parents and distances (``found_after``, into the queues and the
        deferred list, free once the levels are done)."""
        cfg = self.config
        self.k.base.fill[1, cfg.block_size](self.tail, 0)
        logs = (self.queues[0], self.queues[1], self.deferred)
        self.k.found_after[cfg.blocks_for(self.n), cfg.block_size](
            self.distances, self.parents, self.n, after, *logs, self.tail)
        count = np.empty(1, dtype=np.int64)
        self._download(count, self.tail)
        found = [np.empty(int(count[0]), dtype=self.dtype) for _ in range(columns)]
        for host, device in zip(found, logs[:columns], strict=True):
            self._download(host, device)
        return found

    def _side_stream(self, cuda):
        """The stream the result's copy runs on: CuPy's non-blocking one, which does not
        wait for the default stream's kernels (a numba stream would; without CuPy, or
        under the simulator, the copy then runs after the levels, still correct)."""
        if self._side is None:
            try:
                cupy = require_cupy("a copy beside the levels")
            except DeviceUnavailableError:
                self._side = (None, cuda.stream())
            else:
                owner = cupy.cuda.Stream(non_blocking=True)
                self._side = (owner, cuda.external_stream(owner.ptr))
        return self._side[1]

    # ------------------------------------------------------------------ levels
    def top_down(self, level: int, size: int, edges: int, frontier=None,
                 read: bool = True) -> LevelCounts:
        """Level ``level`` top-down: its ``size`` frontier vertices with ``edges`` out-arcs
        (``frontier``: the queue they are in, default the level's); with ``read`` False
        its counts are left on the device (:meth:`task_counts` reads them)."""
        if edges == 0:  # nothing to read: the search ends here
            return LevelCounts(0, 0, 0)
        cfg, base = self.config, self.k.base
        frontier = self.queues[level % 2] if frontier is None else frontier
        if edges <= self.small_level_arcs:
            with self._watch as watch:
                self.k.top_down_small[max(1, min(size, cfg.grid_size)), cfg.block_size](
                    self.graph.indptr, self.graph.indices, self.lo, self.hi, frontier, size,
                    level + 1,
                    self.parents, self.distances, self.queues[(level + 1) % 2],
                    *self._rows(level))
                self._publish(level, read)
            return self._counts(level, watch.seconds, read)
        offsets = self._workspace("levels_offsets", size + 1, np.int64)
        num_tiles = -(-int(edges) // self.k.tile)
        tile_first = self._workspace("levels_tile_first", num_tiles + 1, np.int64)
        with self._watch as watch:
            base.frontier_degrees[cfg.blocks_for(size + 1), cfg.block_size](
                self.graph.indptr, self.lo, frontier, size, offsets)
            self._scan(offsets, size + 1)
            base.tile_sources[cfg.blocks_for(num_tiles + 1), cfg.block_size](
                offsets, size, num_tiles, tile_first)
            self.k.top_down[min(num_tiles, cfg.grid_size), cfg.block_size](
                self.graph.indptr, self.graph.indices, self.lo, self.hi, frontier, offsets,
                size, tile_first,
                num_tiles, level + 1, self.parents, self.distances, self.queues[(level + 1) % 2],
                *self._rows(level))
            self._publish(level, read)
        return self._counts(level, watch.seconds, read)

    def bottom_up(self, level: int, read: bool = True) -> LevelCounts:
        """Level ``level`` bottom-up (its frontier is the bitmap); ``read`` as for
        :meth:`top_down`."""
        cfg = self.config
        limit = cfg.bu_thread_edges
        g, gin = self.graph, self.in_graph
        word_tile = max(cfg.block_size, 64) // 64
        first, stop = self.lo // 64, -(-self.hi // 64)  # the range's words
        blocks = max(1, min(-(-(stop - first) // word_tile), cfg.grid_size))
        with self._watch as watch:
            self.k.bottom_up[blocks, cfg.block_size](
                gin.indptr, gin.indices, g.indptr, self.lo, self.hi, self.words,
                self.bits[level % 2], level + 1, limit, self.parents, self.distances,
                self.bits[(level + 1) % 2], self.deferred, *self._rows(level), self.bounds,
                self.num_tasks, self.on_gpu, self.task_rows[level % 2])
            self.k.bottom_up_rest[cfg.grid_size, cfg.block_size](
                gin.indptr, gin.indices, g.indptr, self.lo, self.bits[level % 2], level + 1,
                limit, self.deferred, self.parents, self.distances, self.bits[(level + 1) % 2],
                self.rows[level % ROWS], self.bounds, self.num_tasks, self.task_rows[level % 2])
            self._publish(level, read)
        return self._counts(level, watch.seconds, read)

    def convert(self, level: int, to_top_down: bool, count: int) -> float:
        """Turn level ``level``'s frontier (``count`` vertices) from a bitmap into a queue
        (``to_top_down``) or back; returns the kernels' device seconds."""
        cfg, fill = self.config, self.k.base.fill
        p = level % 2
        with self._watch as watch:
            if to_top_down:
                fill[1, cfg.block_size](self.tail, 0)
                self.k.bits_to_queue[cfg.blocks_for(self.words), cfg.block_size](
                    self.bits[p], self.words, self.queues[p], self.tail)
            else:
                fill[cfg.blocks_for(self.words), cfg.block_size](self.bits[p], 0)
                self.k.queue_to_bits[cfg.blocks_for(count), cfg.block_size](
                    self.queues[p], count, self.bits[p])
        return watch.seconds

    # ------------------------------------------------------------------ several tasks
    def place_tasks(self, on_gpu: np.ndarray) -> None:
        """Which tasks of the next level run here (``on_gpu``, per task): sent when they
        change."""
        on_gpu = np.ascontiguousarray(on_gpu, dtype=np.uint8)
        if not np.array_equal(on_gpu, self._on_gpu):
            self._on_gpu = on_gpu
            self._upload(self.on_gpu, on_gpu)

    def split(self, level: int, size: int, gpu_size: int):
        """Level ``level``'s frontier queue (``size`` vertices, ``gpu_size`` of them of
        tasks placed here) split: ``(the GPU tasks' queue on the device, the others'
        vertices on the host, int64)``."""
        cfg = self.config
        gpu_queue = self._workspace("levels_gpu_queue", max(size, 1), self.dtype)
        cpu_queue = self._workspace("levels_cpu_queue", max(size, 1), self.dtype)
        self.k.base.fill[1, cfg.block_size](self.tails, 0)
        cpu = np.empty(size - gpu_size, dtype=self.dtype)
        if size:
            self.k.split_queue[min(cfg.blocks_for(size), cfg.grid_size), cfg.block_size](
                self.queues[level % 2], size, self.bounds, self.num_tasks, self.on_gpu,
                gpu_queue, cpu_queue, self.tails)
        self._download(cpu, cpu_queue)
        return gpu_queue, cpu.astype(np.int64)

    def visited_bits(self) -> np.ndarray:
        """The visited bitmap on the host (what the level's CPU tasks read)."""
        cfg = self.config
        self.k.visited_words[cfg.blocks_for(self.words), cfg.block_size](
            self.parents, self.n, self.words, self.visited)
        bits = np.empty(self.words, dtype=np.uint64)
        self._download(bits, self.visited)
        return bits

    def frontier_bits(self, level: int) -> np.ndarray:
        """Level ``level``'s bottom-up frontier bitmap on the host."""
        bits = np.empty(self.words, dtype=np.uint64)
        self._download(bits, self.bits[level % 2])
        return bits

    def accept(self, level: int, top_down: bool, vertices: np.ndarray,
               parents: np.ndarray) -> int:
        """The pairs the level's CPU tasks found into the search (each vertex unreached so
        far claimed, queued or set in the next bitmap, counted); bytes copied."""
        cfg = self.config
        m = int(vertices.size)
        pairs = np.empty(2 * m, dtype=self.dtype)
        pairs[:m], pairs[m:] = vertices, parents
        buffer = self._workspace("levels_pairs", max(2 * m, 1), self.dtype)
        self._upload(buffer, pairs)
        p = (level + 1) % 2
        self.k.accept_pairs[cfg.blocks_for(max(m, ROW)), cfg.block_size](
            buffer, m, level + 1, top_down, self.graph.indptr, self.lo, self.hi, self.parents,
            self.distances, self.queues[p], self.bits[p], *self._rows(level))
        return int(pairs.nbytes)

    def task_counts(self, level: int, tallied: bool = False) -> tuple[LevelCounts, np.ndarray]:
        """Level ``level``'s counts and, per task, ``(found, their out-arcs, entries read)``
        (shape ``(3, T)``), written into mapped host memory: the first two counted over
        the level's distances here (``tallied``: already counted, by an owner's
        ``take_reached``; the counts row is then not read); the entries read by a
        bottom-up level's GPU tasks counted as they ran (top-down: zero)."""
        cfg = self.config
        t = self.num_tasks
        if not tallied:
            tiles = -(-(self.hi - self.lo) // (cfg.block_size * cfg.items_per_thread))
            self.k.tally_found[max(1, min(tiles, cfg.grid_size)), cfg.block_size](
                self.distances, level + 1, self.graph.indptr, self.lo, self.hi, self.bounds, t,
                self.rows[level % ROWS], self.task_rows[level % 2],
                self.task_rows[(level + 1) % 2])
        host = self.host_task_rows
        self.k.publish[cfg.blocks_for(host.size), cfg.block_size](self.task_rows[level % 2],
                                                                  host.size, host)
        self._done.record()
        self._done.synchronize()
        row = host[3 * t:]
        counts = LevelCounts(int(row[FOUND]), int(row[NEXT_EDGES]), int(row[EXAMINED]))
        return counts, host[: 3 * t].reshape(3, t).copy()

    # ------------------------------------------------------------------ helpers
    def _rows(self, level: int):
        """The counts row level ``level`` writes, and the next level's (zeroed by it)."""
        return self.rows[level % ROWS], self.rows[(level + 1) % ROWS]

    def _publish(self, level: int, read: bool) -> None:
        """With ``read``, level ``level``'s counts row into :attr:`host_row` (mapped host
        memory: no copy to wait for behind the result's, which runs beside the last
        levels), its last kernel."""
        if read:
            self.k.publish[1, ROW](self.rows[level % ROWS], ROW, self.host_row)

    def _counts(self, level: int, seconds: float, read: bool = True) -> LevelCounts:
        """The counts :meth:`_publish` wrote (its kernels done: the stopwatch waited)."""
        if not read:
            return LevelCounts(0, 0, 0, seconds)
        row = self.host_row
        return LevelCounts(int(row[FOUND]), int(row[NEXT_EDGES]), int(row[EXAMINED]), seconds)

    def _scan(self, data, n: int, depth: int = 0) -> None:
        """In-place exclusive scan of ``data[:n]`` (int64), into preallocated tile sums."""
        cfg, base = self.config, self.k.base
        num_tiles = -(-int(n) // cfg.block_size)
        sums = self._workspace(f"levels_scan{depth}", num_tiles, np.int64)
        base.scan_tiles[cfg.blocks_for(n), cfg.block_size](data, n, sums)
        if num_tiles > 1:
            self._scan(sums, num_tiles, depth + 1)
            base.add_tile_offsets[cfg.blocks_for(n), cfg.block_size](data, n, sums)

    def _upload(self, buffer, host: np.ndarray) -> None:
        """Copy ``host`` (contiguous) into the start of the device array ``buffer``."""
        if not host.size:
            return
        if self.config.simulated:
            buffer[: host.size].copy_to_device(host)
        else:  # the driver's copy itself, without a device-array view and its checks
            from numba.cuda.cudadrv.driver import host_to_device

            host_to_device(buffer, host, host.nbytes)

    def _download(self, host: np.ndarray, buffer, stream=0) -> None:
        """Fill ``host`` (contiguous) from the start of the device array ``buffer`` (on
        ``stream``: a copy into page-locked ``host`` then returns at once)."""
        if not host.size:
            return
        if self.config.simulated:
            buffer[: host.size].copy_to_host(host, stream=stream)
        else:
            from numba.cuda.cudadrv.driver import device_to_host

            device_to_host(host, buffer, host.nbytes, stream=stream)


def _host_array(cuda, simulated: bool, size: int, dtype) -> np.ndarray:
    """A page-locked host array of ``size`` ``dtype`` entries (pageable under the simulator)."""
    return np.zeros(size, dtype) if simulated else cuda.pinned_array(size, dtype)


__all__ = ["COUNTS_BYTES", "DEFERRED", "DeviceLevels", "LevelCounts", "result_dtype"]
