"""A plain level-synchronous BFS on the GPU, in raw CUDA kernels, without Dask: the GPU peer.

Returns
    :func:`upload_graph` → :class:`DeviceGraph`: a ``taskbfs.Graph`` and every buffer a
    search needs, placed in GPU memory once. :func:`plain_gpu_bfs` → ``(parents, levels)``:
    the Graph500 parent array on the device (a CuPy array of the graph's vertex type, the
    graph's own buffer, overwritten by its next search) and the direction of each level
    that ran (``len(levels)`` levels).
Approach
    The loop a GPU programmer writes by hand, with no task runtime in the way: a host loop
    (:func:`level_loop`) launches one kernel per level (CuPy ``RawModule``, CUDA C) and
    reads back one row of four counts (one small device-to-host copy per level, nothing
    else). Top-down: one warp per frontier vertex, lanes stride its adjacency, claim
    unvisited neighbours with ``atomicCAS`` on ``parents`` (-1 = unvisited) and append them
    to the next queue with one ``atomicAdd`` per warp and round (ballot); a vertex of
    ``chunk`` out-arcs or more enters the queue as runs of ``chunk`` arcs, one warp each, so
    that a hub is not one warp's serial work. Bottom-up: one lane per vertex, 32 vertices
    (one bitmap word) per warp; an unvisited vertex scans its in-neighbours and stops at the
    first one in the frontier bitmap; the warp writes the next bitmap word whole (ballot),
    so the next bitmap needs no clearing. Both count the next frontier's vertices and
    out-arcs on the device (warp sums, one ``atomicAdd`` per warp). Beamer's switch
    (:func:`switch_direction`, the rule taskbfs's barrier uses, restated here)
    with α = 14, β = 24 (Beamer, Asanović & Patterson, SC12) decides each level's
    direction from those counts; a switch converts the frontier (queue → bitmap, or bitmap →
    queue) in one more kernel (queue → bitmap after clearing the bitmap: a memset). Every
    buffer is allocated by :func:`upload_graph`; a search allocates nothing on the device.
Encoding
    Vertex ids are int32 on the device when the graph has fewer than 2^31 vertices (int64
    beyond), arc offsets int64. ``parents[source] == source``, ``-1`` unreached. Frontier
    queues: ``light`` (vertex ids, out-degree in 1 .. chunk - 1) and ``chunk_v`` /
    ``chunk_begin`` (vertex, first arc of a run of at most ``chunk`` arcs); bitmaps: uint32
    words, vertex ``v`` is bit ``v & 31`` of word ``v >> 5``. Counts: three rows of
    ``[light queue length, chunk queue length, frontier vertices, frontier out-arcs]``
    (uint64), used in turn: level L reads row L - 1, writes row L and clears row L + 1
    (mod 3), so no level needs a memset of its counters.

Needs CuPy and a CUDA GPU (``pip install cupy-cuda12x``); this module imports without
them, and :func:`cupy_status` says why they are unusable. Of taskbfs it uses the public error
type only (importing it runs the package ``__init__``, which loads Dask, but nothing here
submits to it).

    >>> import taskbfs as tb                                     # doctest: +SKIP
    >>> g = tb.kronecker(16)                                     # doctest: +SKIP
    >>> dg = upload_graph(g)                                     # doctest: +SKIP
    >>> parents, levels = plain_gpu_bfs(dg, 0)                   # doctest: +SKIP
    >>> tb.validate(g, 0, parents.get().astype("int64"))         # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from taskbfs import InvalidVertexError

try:
    import cupy
except ImportError:  # the module still imports: the wall benchmark then skips the peer
    cupy = None

AUTO, TOP_DOWN, BOTTOM_UP = "auto", "top-down", "bottom-up"


def switch_direction(mode: str, current: str, frontier_size: int, frontier_edges: int,
                     unexplored_edges: int, num_vertices: int, alpha: float, beta: float,
                     previous_size: int = 0) -> str:
    """Beamer's switch rule with its two side conditions (SC12), as taskbfs states it:
    bottom-up once the frontier is growing and its out-arcs exceed ``unexplored_edges /
    alpha``; top-down again once it is shrinking and has fewer than ``num_vertices / beta``
    vertices; ``mode`` itself unless it is "auto". The CPU peer (``peers.py``) uses it too."""
    if mode != AUTO:
        return mode
    if current == TOP_DOWN:
        growing = frontier_size > previous_size
        return BOTTOM_UP if growing and frontier_edges > unexplored_edges / alpha else TOP_DOWN
    shrinking = frontier_size < previous_size
    return TOP_DOWN if shrinking and frontier_size < num_vertices / beta else BOTTOM_UP


#: Beamer's direction-optimizing parameters (SC12): bottom-up when the frontier's out-arcs
#: exceed the unvisited vertices' out-arcs / ALPHA, top-down again when the frontier has
#: fewer than num_vertices / BETA vertices.
ALPHA = 14.0
BETA = 24.0
#: A frontier vertex with this many out-arcs or more is expanded as runs of this many arcs,
#: one warp each (below it, one warp takes the whole adjacency).
CHUNK_EDGES = 1024
#: Threads per block (a multiple of 32: every kernel works in whole warps).
THREADS = 256
#: Resident blocks per multiprocessor that the grid-stride kernels are sized for.
BLOCKS_PER_SM = 8
#: Entries of one counts row: light queue length, chunk queue length, frontier vertices,
#: frontier out-arcs.
ROW = 4
LIGHT, CHUNKS, VERTICES, EDGES = range(ROW)

KERNELS = r"""
typedef VID_T vid_t;
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ bool claim(int* parents, int v, int u) {
    return atomicCAS(parents + v, -1, u) == -1;
}

__device__ __forceinline__ bool claim(long long* parents, long long v, long long u) {
    unsigned long long* slot = reinterpret_cast<unsigned long long*>(parents + v);
    const unsigned long long unvisited = 0xffffffffffffffffull;
    return atomicCAS(slot, unvisited, static_cast<unsigned long long>(u)) == unvisited;
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long x) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        x += __shfl_down_sync(FULL_MASK, x, offset);
    }
    return x;
}

__device__ __forceinline__ long long thread_id() {
    return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long thread_count() {
    return static_cast<long long>(gridDim.x) * blockDim.x;
}

/* Appends v (out-arcs begin .. begin + degree) to a frontier queue: a light vertex to
   `light` (one atomicAdd on tails[0] per warp), a heavy one (degree >= chunk) as
   ceil(degree / chunk) runs to `chunk_v` / `chunk_begin` (tails[1]); a vertex without
   out-arcs is left out, as it has nothing to expand. Every lane of the warp calls it. */
__device__ __forceinline__ void enqueue(bool take, vid_t v, long long begin, long long degree,
                                        long long chunk, vid_t* light, vid_t* chunk_v,
                                        long long* chunk_begin, unsigned long long* tails,
                                        int lane) {
    const bool is_light = take && degree > 0 && degree < chunk;
    const unsigned mask = __ballot_sync(FULL_MASK, is_light);
    if (mask != 0u) {
        unsigned long long at = 0ull;
        if (lane == 0) {
            at = atomicAdd(tails, static_cast<unsigned long long>(__popc(mask)));
        }
        at = __shfl_sync(FULL_MASK, at, 0);
        if (is_light) {
            light[at + __popc(mask & ((1u << lane) - 1u))] = v;
        }
    }
    if (take && degree >= chunk) {
        const long long runs = (degree + chunk - 1) / chunk;
        const unsigned long long at = atomicAdd(tails + 1, static_cast<unsigned long long>(runs));
        for (long long r = 0; r < runs; ++r) {
            chunk_v[at + r] = v;
            chunk_begin[at + r] = begin + r * chunk;
        }
    }
}

/* Adds the warp's counts of newly found vertices and their out-arcs to row[2], row[3]. */
__device__ __forceinline__ void count_found(unsigned long long found, unsigned long long arcs,
                                            unsigned long long* row, int lane) {
    found = warp_sum(found);
    arcs = warp_sum(arcs);
    if (lane == 0 && found != 0ull) {
        atomicAdd(row + 2, found);
        atomicAdd(row + 3, arcs);
    }
}

/* Every vertex unvisited but the source; the source's adjacency as level 0's queue;
   rows 0 and 1 cleared, row 2 (level 0's input) = the source's queue lengths and counts. */
extern "C" __global__ void start(const long long* indptr, long long n, vid_t source,
                                 long long chunk, vid_t* parents, vid_t* light,
                                 vid_t* chunk_v, long long* chunk_begin,
                                 unsigned long long* rows) {
    const long long tid = thread_id();
    const long long stride = thread_count();
    const long long begin = indptr[source];
    const long long degree = indptr[source + 1] - begin;
    const long long runs = degree >= chunk ? (degree + chunk - 1) / chunk : 0;
    for (long long v = tid; v < n; v += stride) {
        parents[v] = v == source ? source : static_cast<vid_t>(-1);
    }
    for (long long r = tid; r < runs; r += stride) {
        chunk_v[r] = source;
        chunk_begin[r] = begin + r * chunk;
    }
    if (tid == 0) {
        const bool is_light = degree > 0 && degree < chunk;
        if (is_light) {
            light[0] = source;
        }
        for (int i = 0; i < 8; ++i) {
            rows[i] = 0ull;
        }
        rows[8] = is_light ? 1ull : 0ull;
        rows[9] = static_cast<unsigned long long>(runs);
        rows[10] = 1ull;
        rows[11] = static_cast<unsigned long long>(degree);
    }
}

/* One top-down level: a warp per queue entry (a light vertex, or a run of a heavy one's
   arcs); its lanes take 32 arcs at a time and claim their unvisited heads. */
extern "C" __global__ void top_down(const long long* indptr, const vid_t* indices,
                                    long long chunk, const vid_t* light_in,
                                    const vid_t* chunk_v_in, const long long* chunk_begin_in,
                                    const unsigned long long* row_in, vid_t* parents,
                                    vid_t* light_out, vid_t* chunk_v_out,
                                    long long* chunk_begin_out, unsigned long long* row_out,
                                    unsigned long long* row_stale) {
    const long long tid = thread_id();
    if (tid < 4) {
        row_stale[tid] = 0ull;
    }
    const int lane = threadIdx.x & 31;
    const long long warps = thread_count() >> 5;
    const long long light_count = static_cast<long long>(row_in[0]);
    const long long items = light_count + static_cast<long long>(row_in[1]);
    unsigned long long found = 0ull, arcs = 0ull;
    for (long long item = tid >> 5; item < items; item += warps) {
        vid_t u;
        long long begin, end;
        if (item < light_count) {
            u = light_in[item];
            begin = indptr[u];
            end = indptr[u + 1];
        } else {
            const long long run = item - light_count;
            u = chunk_v_in[run];
            begin = chunk_begin_in[run];
            end = indptr[u + 1];
            if (begin + chunk < end) {
                end = begin + chunk;
            }
        }
        for (long long base = begin; base < end; base += 32) {
            const long long e = base + lane;
            bool take = false;
            vid_t v = 0;
            long long v_begin = 0, degree = 0;
            if (e < end) {
                v = indices[e];
                if (parents[v] == static_cast<vid_t>(-1) && claim(parents, v, u)) {
                    take = true;
                    v_begin = indptr[v];
                    degree = indptr[v + 1] - v_begin;
                    found += 1ull;
                    arcs += static_cast<unsigned long long>(degree);
                }
            }
            enqueue(take, v, v_begin, degree, chunk, light_out, chunk_v_out, chunk_begin_out,
                    row_out, lane);
        }
    }
    count_found(found, arcs, row_out, lane);
}

/* One bottom-up level: lane = vertex, warp = one 32-vertex word of the next bitmap. */
extern "C" __global__ void bottom_up(const long long* in_indptr, const vid_t* in_indices,
                                     const long long* indptr, long long n, long long words,
                                     const unsigned* frontier, vid_t* parents, unsigned* next,
                                     unsigned long long* row_out,
                                     unsigned long long* row_stale) {
    const long long tid = thread_id();
    if (tid < 4) {
        row_stale[tid] = 0ull;
    }
    const int lane = threadIdx.x & 31;
    const long long warps = thread_count() >> 5;
    unsigned long long found = 0ull, arcs = 0ull;
    for (long long w = tid >> 5; w < words; w += warps) {
        const long long v = w * 32 + lane;
        bool hit = false;
        if (v < n && parents[v] == static_cast<vid_t>(-1)) {
            const long long end = in_indptr[v + 1];
            for (long long e = in_indptr[v]; e < end; ++e) {
                const vid_t u = in_indices[e];
                if ((frontier[u >> 5] >> (u & 31)) & 1u) {
                    parents[v] = u;
                    hit = true;
                    break;
                }
            }
        }
        const unsigned mask = __ballot_sync(FULL_MASK, hit);
        if (lane == 0) {
            next[w] = mask;
        }
        if (hit) {
            found += 1ull;
            arcs += static_cast<unsigned long long>(indptr[v + 1] - indptr[v]);
        }
    }
    count_found(found, arcs, row_out, lane);
}

/* The queue (lengths in row[0], row[1]) as bits of a cleared bitmap. */
extern "C" __global__ void queue_to_bitmap(const vid_t* light, const vid_t* chunk_v,
                                           const unsigned long long* row, unsigned* bitmap) {
    const long long light_count = static_cast<long long>(row[0]);
    const long long items = light_count + static_cast<long long>(row[1]);
    for (long long i = thread_id(); i < items; i += thread_count()) {
        const vid_t v = i < light_count ? light[i] : chunk_v[i - light_count];
        atomicOr(bitmap + (v >> 5), 1u << (v & 31));
    }
}

/* The bitmap's vertices appended to the queue, whose lengths row[0], row[1] start at 0. */
extern "C" __global__ void bitmap_to_queue(const long long* indptr, long long n,
                                           long long words, long long chunk,
                                           const unsigned* bitmap, vid_t* light,
                                           vid_t* chunk_v, long long* chunk_begin,
                                           unsigned long long* row) {
    const int lane = threadIdx.x & 31;
    const long long warps = thread_count() >> 5;
    for (long long w = thread_id() >> 5; w < words; w += warps) {
        const unsigned bits = bitmap[w];
        if (bits == 0u) {
            continue;
        }
        const long long v = w * 32 + lane;
        const bool take = ((bits >> lane) & 1u) != 0u && v < n;
        long long begin = 0, degree = 0;
        if (take) {
            begin = indptr[v];
            degree = indptr[v + 1] - begin;
        }
        enqueue(take, static_cast<vid_t>(v), begin, degree, chunk, light, chunk_v, chunk_begin,
                row, lane);
    }
}
"""

KERNEL_NAMES = ("start", "top_down", "bottom_up", "queue_to_bitmap", "bitmap_to_queue")
_MODULES: dict = {}  # vertex dtype name → {kernel name: cupy RawKernel}


def cupy_status() -> str | None:
    """None when CuPy and a CUDA GPU are usable here, else why not (one line)."""
    if cupy is None:
        return "CuPy is not installed"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no driver, no device: CuPy raises its own types
        return f"CuPy finds no usable CUDA device ({exc})"
    return None if count > 0 else "CuPy finds no CUDA device"


def device_name() -> str | None:
    """The current CUDA device's name as CuPy reports it (None when CuPy is unusable)."""
    if cupy_status() is not None:
        return None
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def vertex_dtype(num_vertices: int) -> np.dtype:
    """int32 when every vertex id and -1 fit (fewer than 2^31 vertices), else int64."""
    return np.dtype(np.int32) if num_vertices < 2**31 else np.dtype(np.int64)


def kernel_source(vid: np.dtype) -> str:
    """The CUDA C of every kernel, for vertex ids of dtype ``vid`` (int32 or int64)."""
    return KERNELS.replace("VID_T", "int" if vid == np.int32 else "long long", 1)


def _kernels(vid: np.dtype) -> dict:
    """The compiled kernels for vertex dtype ``vid`` (compiled once per process)."""
    if vid.name not in _MODULES:
        module = cupy.RawModule(code=kernel_source(vid))
        _MODULES[vid.name] = {name: module.get_function(name) for name in KERNEL_NAMES}
    return _MODULES[vid.name]


@dataclass(eq=False)
class DeviceGraph:
    """A graph and the buffers of its searches in GPU memory (made by :func:`upload_graph`).

    Attributes
    ----------
    num_vertices, num_arcs : int
    directed : bool
    vid : numpy.dtype
        Vertex id type on the device (int32 or int64).
    chunk : int
        Out-arcs from which a frontier vertex is expanded in runs (``CHUNK_EDGES``).
    indptr, indices : cupy.ndarray
        Out-adjacency (int64 offsets, ``vid`` ids).
    in_indptr, in_indices : cupy.ndarray
        In-adjacency for bottom-up levels (the same arrays when undirected).
    host_indptr : numpy.ndarray
        The graph's own ``indptr`` (the source's degree is read there).
    parents : cupy.ndarray
        The last search's parent array.
    light, chunk_v, chunk_begin, bitmap : tuple of two cupy.ndarray
        Frontier buffers, current and next, swapped every level.
    counts : cupy.ndarray
        The counts, uint64 of shape (3, 4); ``rows`` are its three rows (views).
    rows : tuple of three cupy.ndarray
    host_row : numpy.ndarray
        Pinned host copy of one counts row.
    words : int
        Bitmap words, ``ceil(num_vertices / 32)``.
    max_blocks : int
        Largest grid launched (``BLOCKS_PER_SM`` blocks per multiprocessor).
    """

    num_vertices: int
    num_arcs: int
    directed: bool
    vid: np.dtype
    chunk: int
    indptr: object
    indices: object
    in_indptr: object
    in_indices: object
    host_indptr: np.ndarray
    parents: object
    light: tuple
    chunk_v: tuple
    chunk_begin: tuple
    bitmap: tuple
    counts: object
    rows: tuple
    host_row: np.ndarray
    words: int
    max_blocks: int

    @property
    def device_bytes(self) -> int:
        """Bytes of GPU memory held (adjacency and buffers)."""
        arrays = [self.indptr, self.indices, self.parents, *self.light, *self.chunk_v,
                  *self.chunk_begin, *self.bitmap]
        if self.directed:
            arrays += [self.in_indptr, self.in_indices]
        return int(sum(a.nbytes for a in arrays)) + int(self.counts.nbytes)


def upload_graph(graph, chunk: int = CHUNK_EDGES) -> DeviceGraph:
    """Copy a ``taskbfs.Graph`` to the GPU once, with every buffer its searches use.

    Parameters
    ----------
    graph : taskbfs.Graph
        CSR: ``indptr`` int64, ``indices`` int32 or int64 (sorted rows; a directed graph's
        transpose is built here for the bottom-up levels).
    chunk : int
        Out-arcs from which a frontier vertex is expanded as runs of ``chunk`` arcs, one
        warp each (``CHUNK_EDGES``; small values test that path on small graphs).

    Returns
    -------
    DeviceGraph
    """
    if cupy is None:
        raise ImportError("the plain GPU loop needs CuPy (pip install cupy-cuda12x)")
    chunk = int(chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    n = int(graph.num_vertices)
    vid = vertex_dtype(n)
    indptr = cupy.asarray(np.ascontiguousarray(graph.indptr, dtype=np.int64))
    indices = cupy.asarray(np.ascontiguousarray(graph.indices, dtype=vid))
    in_indptr, in_indices = indptr, indices
    if graph.directed:
        t = graph.transpose()
        in_indptr = cupy.asarray(np.ascontiguousarray(t.indptr, dtype=np.int64))
        in_indices = cupy.asarray(np.ascontiguousarray(t.indices, dtype=vid))
    words = (n + 31) // 32
    runs = 2 * int(graph.num_arcs) // chunk + 2  # each heavy vertex: ceil(d / chunk) <= 2 d / chunk
    counts = cupy.zeros((3, ROW), dtype=np.uint64)
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    return DeviceGraph(
        num_vertices=n, num_arcs=int(graph.num_arcs), directed=bool(graph.directed), vid=vid,
        chunk=chunk, indptr=indptr, indices=indices, in_indptr=in_indptr,
        in_indices=in_indices, host_indptr=graph.indptr,
        parents=cupy.empty(n, dtype=vid),
        light=(cupy.empty(n, dtype=vid), cupy.empty(n, dtype=vid)),
        chunk_v=(cupy.empty(runs, dtype=vid), cupy.empty(runs, dtype=vid)),
        chunk_begin=(cupy.empty(runs, dtype=np.int64), cupy.empty(runs, dtype=np.int64)),
        bitmap=(cupy.zeros(words, dtype=np.uint32), cupy.zeros(words, dtype=np.uint32)),
        counts=counts, rows=(counts[0], counts[1], counts[2]), host_row=_pinned_row(), words=words,
        max_blocks=int(sms) * BLOCKS_PER_SM,
    )


def _pinned_row() -> np.ndarray:
    """A host array for one counts row, in page-locked memory when CuPy offers it."""
    return pinned_empty(ROW, np.uint64)


def pinned_empty(shape, dtype) -> np.ndarray:
    """An empty host array in page-locked memory when CuPy offers it (else pageable)."""
    try:
        import cupyx

        return cupyx.empty_pinned(shape, dtype=dtype)
    except (ImportError, AttributeError):
        return np.empty(shape, dtype=dtype)


def pinned_like(array) -> np.ndarray:
    """A pinned host array to copy the device ``array`` into (``array.get(out=...)``)."""
    return pinned_empty(array.shape, array.dtype)


def plain_gpu_bfs(graph_on_device: DeviceGraph, source: int, direction: str = AUTO,
                  alpha: float = ALPHA, beta: float = BETA):
    """BFS from ``source`` by a plain loop of GPU kernels (no Dask, no taskbfs runtime).

    Parameters
    ----------
    graph_on_device : DeviceGraph
        From :func:`upload_graph`.
    source : int
    direction : {"auto", "top-down", "bottom-up"}
        auto: Beamer's switch with ``alpha`` and ``beta``.
    alpha, beta : float

    Returns
    -------
    parents : cupy.ndarray
        Graph500 parent array (``graph_on_device.vid``), on the device; the graph's own
        buffer, which the next search overwrites (copy it first to keep it).
    levels : list of str
        Direction of each level that ran.

    Notes
    -----
    Returns once the last level's counts have been read back, so every kernel has run.
    """
    g = graph_on_device
    try:
        s = int(source)
    except (TypeError, ValueError):
        raise InvalidVertexError(f"source must be an integer vertex id, got {source!r}") from None
    if s != source or not 0 <= s < g.num_vertices:
        raise InvalidVertexError(
            f"source {source!r} is not a vertex of this graph "
            f"(valid ids: 0..{g.num_vertices - 1})")
    if direction not in (AUTO, TOP_DOWN, BOTTOM_UP):
        raise ValueError(f"unknown direction {direction!r}")
    ops = CupyLevels(g)
    ops.start(s)
    degree = int(g.host_indptr[s + 1] - g.host_indptr[s])
    levels = level_loop(ops, degree, g.num_arcs, g.num_vertices, direction, alpha, beta)
    return g.parents, levels


def level_loop(ops, source_degree: int, num_arcs: int, num_vertices: int, mode: str,
               alpha: float, beta: float) -> list:
    """The host side of a search: one level at a time until the frontier is empty.

    Parameters
    ----------
    ops : CupyLevels or an object with the same methods
        ``to_queue(level)``, ``to_bitmap(level, size, arcs)``,
        ``top_down(level, size, arcs)`` and ``bottom_up(level, size, arcs)``, the last two
        returning the next frontier's ``(vertices, out-arcs)``. Level 0's frontier (the
        source) is already in queue form (``ops.start``).
    source_degree, num_arcs, num_vertices : int
    mode : {"auto", "top-down", "bottom-up"}
    alpha, beta : float

    Returns
    -------
    list of str
        Direction of each level.

    Notes
    -----
    The unvisited vertices' out-arcs start at ``num_arcs - source_degree`` and lose each
    new frontier's out-arcs, as in taskbfs's barrier; each level's direction comes from
    :func:`switch_direction` with the frontier's size before.
    """
    unexplored = int(num_arcs) - int(source_degree)
    size, arcs = 1, int(source_degree)
    direction = switch_direction(mode, TOP_DOWN, size, arcs, unexplored, num_vertices,
                                 alpha, beta, previous_size=0)
    in_queue = True  # the frontier's form: queue, or bitmap after a bottom-up level
    directions = []
    while size > 0:
        level = len(directions)
        if level > num_vertices:
            raise RuntimeError("more BFS levels than vertices: the kernels' counts are wrong")
        if direction == TOP_DOWN:
            if not in_queue:
                ops.to_queue(level)
            new_size, new_arcs = ops.top_down(level, size, arcs)
        else:
            if in_queue:
                ops.to_bitmap(level, size, arcs)
            new_size, new_arcs = ops.bottom_up(level, size, arcs)
        in_queue = direction == TOP_DOWN
        directions.append(direction)
        unexplored -= new_arcs
        direction = switch_direction(mode, direction, new_size, new_arcs, unexplored,
                                     num_vertices, alpha, beta, previous_size=size)
        size, arcs = new_size, new_arcs
    return directions


class CupyLevels:
    """The kernel launches of one search on a :class:`DeviceGraph` (see :func:`level_loop`).

    Level L reads frontier buffers L % 2 and writes (L + 1) % 2; it reads counts row
    (L - 1) % 3, writes row L % 3 and clears row (L + 1) % 3 (``start`` fills row 2, level
    0's input, and clears rows 0 and 1).
    """

    def __init__(self, graph_on_device: DeviceGraph):
        self.g = graph_on_device
        self.k = _kernels(graph_on_device.vid)
        self.chunk = np.int64(graph_on_device.chunk)
        self.n = np.int64(graph_on_device.num_vertices)
        self.words = np.int64(graph_on_device.words)

    def _blocks(self, warps: int) -> tuple:
        """A grid of enough blocks for ``warps`` warps of work, at most ``max_blocks``."""
        per_block = THREADS // 32
        return (max(1, min(self.g.max_blocks, (int(warps) + per_block - 1) // per_block)),)

    def _queue_items(self, size: int, arcs: int) -> int:
        """Upper estimate of a frontier's queue entries (light vertices and runs)."""
        return int(size) + 2 * int(arcs) // self.g.chunk + 1

    def start(self, source: int) -> None:
        """Level 0: parents reset, the source as the frontier queue."""
        g = self.g
        self.k["start"](
            self._blocks(g.num_vertices // 32 + 1), (THREADS,),
            (g.indptr, self.n, g.vid.type(source), self.chunk, g.parents, g.light[0],
             g.chunk_v[0], g.chunk_begin[0], g.counts))

    def top_down(self, level: int, size: int, arcs: int) -> tuple:
        g, cur, nxt = self.g, level % 2, (level + 1) % 2
        self.k["top_down"](
            self._blocks(self._queue_items(size, arcs)), (THREADS,),
            (g.indptr, g.indices, self.chunk, g.light[cur], g.chunk_v[cur], g.chunk_begin[cur],
             g.rows[(level + 2) % 3], g.parents, g.light[nxt], g.chunk_v[nxt],
             g.chunk_begin[nxt], g.rows[level % 3], g.rows[(level + 1) % 3]))
        return self._read(level)

    def bottom_up(self, level: int, size: int, arcs: int) -> tuple:
        g, cur, nxt = self.g, level % 2, (level + 1) % 2
        self.k["bottom_up"](
            self._blocks(g.words), (THREADS,),
            (g.in_indptr, g.in_indices, g.indptr, self.n, self.words, g.bitmap[cur], g.parents,
             g.bitmap[nxt], g.rows[level % 3], g.rows[(level + 1) % 3]))
        return self._read(level)

    def to_bitmap(self, level: int, size: int, arcs: int) -> None:
        g, cur = self.g, level % 2
        g.bitmap[cur].fill(0)
        self.k["queue_to_bitmap"](
            self._blocks(self._queue_items(size, arcs) // 32 + 1), (THREADS,),
            (g.light[cur], g.chunk_v[cur], g.rows[(level + 2) % 3], g.bitmap[cur]))

    def to_queue(self, level: int) -> None:
        g, cur = self.g, level % 2
        self.k["bitmap_to_queue"](
            self._blocks(g.words), (THREADS,),
            (g.indptr, self.n, self.words, self.chunk, g.bitmap[cur], g.light[cur],
             g.chunk_v[cur], g.chunk_begin[cur], g.rows[(level + 2) % 3]))

    def _read(self, level: int) -> tuple:
        """The next frontier's (vertices, out-arcs): the one copy back of the level."""
        self.g.rows[level % 3].get(out=self.g.host_row)
        return int(self.g.host_row[VERTICES]), int(self.g.host_row[EDGES])
