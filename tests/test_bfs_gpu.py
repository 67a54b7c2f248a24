"""GPU step tasks end to end: ``tb.bfs`` with the gpu, hybrid and fixed strategies.

How this file finds a GPU
    As ``tests/test_kernels_gpu.py``: when numba.cuda is usable in this process (a real GPU,
    or ``NUMBA_ENABLE_CUDASIM=1`` set before numba's first import) the tests run here, on
    the embedded default runtime, which then has one ``GPU=1`` worker. Otherwise
    ``test_gpu_bfs_in_simulator_subprocess`` runs this file again in a fresh interpreter
    with the simulator on. The simulator runs each CUDA thread as a Python thread, so
    the graphs are tiny and T is small (about 30 s for the whole file).

Expectations
    Distances equal scipy's, parents pass the Graph500 rules, and the trace says where
    each step ran: ``cuda`` steps on the GPU worker with their bytes moved and kernel
    time, ``smp`` steps on the CPU worker with zeros. The device cache uploads a slice
    once and reuses it across levels and BFS calls, and evicts under its budget.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import run_module_under_simulator
from reference import scipy_distances, serial_barrier

import taskbfs as tb
from taskbfs.kernels.bitmap import bitmap_from_vertices, empty_bitmap
from taskbfs.kernels.gpu import gpu_available
from taskbfs.placed.slices import GraphSlice
from taskbfs.search.owner_barrier import OWNER_STEP
from taskbfs.search.state import BOTTOM_UP, TOP_DOWN, Frontier
from taskbfs.search.steps import STEP_NAME, step_smp

IN_PROCESS = gpu_available()
needs_gpu = pytest.mark.skipif(
    not IN_PROCESS,
    reason="numba.cuda is not usable in this process; "
    "test_gpu_bfs_in_simulator_subprocess runs these under NUMBA_ENABLE_CUDASIM=1",
)
DEVICE_COLUMNS = ("h2d_bytes", "d2h_bytes", "kernel_seconds")


@pytest.fixture(autouse=True)
def _levels_as_tasks(setting, monkeypatch):
    """These tests follow the GPU steps as tasks, level by level: the search as one task
    on the GPU worker (``taskbfs.dispatch`` "auto") is off unless a test asks for
    it (the section "every level in one task" below)."""
    setting("dispatch", "tasks")


# --------------------------------------------------------------------------- the driver
@pytest.mark.gpu
@pytest.mark.skipif(IN_PROCESS, reason="the GPU tests run in this process")
def test_gpu_bfs_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=1200)


# --------------------------------------------------------------------------- without a GPU
def test_cpu_trace_has_zero_device_columns(runtime):
    g = tb.Graph.from_edges([0, 1, 2, 2], [1, 2, 3, 4])
    r = tb.bfs(g, 0, tasks=2, strategy="cpu", runtime=runtime)
    for name in DEVICE_COLUMNS:
        assert name in r.trace.columns and name in r.levels.columns
        assert (r.trace[name] == 0).all() and (r.levels[name] == 0).all()
    assert set(r.trace["device"]) == {"smp"}


def test_step_task_has_both_implementations():
    assert OWNER_STEP.impls == ("smp", "cuda")


# --------------------------------------------------------------------------- graphs
def _kron():
    return tb.kronecker(7, edgefactor=8, seed=3)  # 128 vertices, hubs, isolated vertices


def _directed():
    rng = np.random.default_rng(11)
    src = np.concatenate([rng.integers(0, 90, 260), np.full(40, 3)])
    dst = np.concatenate([rng.integers(0, 90, 260), np.arange(40, 80)])
    return tb.Graph.from_edges(src, dst, num_vertices=100, directed=True)


def _path(n=8):
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def _hub_source(g):
    return int(np.argmax(g.degrees()))


def _gpu_worker(runtime):
    gpus = runtime.gpu_workers()  # asked of the scheduler (the client's copy may lag)
    assert len(gpus) == 1, gpus
    return gpus[0]


def _check(g, source, r):
    np.testing.assert_array_equal(r.distances, scipy_distances(g, source))
    tb.validate(g, source, r.parents)
    assert r.parents[source] == source


def _check_devices(r, gpu_worker, expect_cuda):
    """``expect_cuda``: boolean per trace row (where the step must have run); the barriers
    (host code) run on the CPU worker."""
    trace = r.trace
    expect_cuda = np.asarray(expect_cuda, dtype=bool)
    np.testing.assert_array_equal(trace["device"].to_numpy() == "cuda", expect_cuda)
    on_gpu, on_cpu = trace[expect_cuda], trace[~expect_cuda]
    assert (on_gpu["worker"] == gpu_worker).all()
    assert (on_cpu["worker"] != gpu_worker).all()
    # every GPU step reads its counters back; a CPU step moves nothing
    assert (on_gpu["d2h_bytes"] >= 24).all() and (on_gpu["kernel_seconds"] > 0).all()
    assert (on_cpu[list(DEVICE_COLUMNS)] == 0).all().all()
    levels = r.levels
    assert levels["tasks_gpu"].sum() == expect_cuda.sum()
    assert levels["h2d_bytes"].sum() == trace["h2d_bytes"].sum()
    assert (levels["barrier_worker"] != gpu_worker).all()


def _gpu_cache_stats(runtime):
    from taskbfs.search.device_cache import device_cache

    def stats(dask_worker):
        if not dask_worker.state.total_resources.get("GPU"):
            return None
        return device_cache(dask_worker).stats()

    found = [s for s in runtime.client.run(stats).values() if s is not None]
    assert len(found) == 1
    return found[0]


# --------------------------------------------------------------------------- end to end
@needs_gpu
@pytest.mark.parametrize("graph, direction, tasks", [
    (_kron, "auto", 3),
    (_directed, "bottom-up", 2),
    (_directed, "top-down", 3),
])
def test_gpu_strategy_matches_scipy(runtime, graph, direction, tasks):
    g = graph()
    source = _hub_source(g)
    r = tb.bfs(g, source, tasks=tasks, strategy="gpu", direction=direction, runtime=runtime)
    _check(g, source, r)
    _check_devices(r, _gpu_worker(runtime), np.ones(len(r.trace), dtype=bool))
    if direction != "auto":
        assert set(r.trace["direction"]) == {direction}


@needs_gpu
def test_device_cache_reuses_slices_across_levels_and_calls(runtime):
    g = _path(8)  # 7 levels, each a single frontier vertex: every level reuses the slices
    before = _gpu_cache_stats(runtime)
    first = tb.bfs(g, 0, tasks=2, strategy="gpu", direction="top-down", runtime=runtime)
    middle = _gpu_cache_stats(runtime)
    second = tb.bfs(g, 0, tasks=2, strategy="gpu", direction="top-down", runtime=runtime)
    after = _gpu_cache_stats(runtime)
    _check(g, 0, first)
    _check(g, 0, second)
    # one upload per slice datum (offsets, neighbours), when the first call placed the graph
    assert middle["misses"] - before["misses"] == 4
    assert middle["bytes_up"] - before["bytes_up"] >= sum(a.nbytes for a in (g.indptr, g.indices))
    assert after["misses"] == middle["misses"]  # the second call uploads no slice
    assert after["hits"] - middle["hits"] == 2 * len(second.trace)  # two data per step
    # Per level only the visited bitmap (2 words) and the task's frontier (one vertex) go up.
    for r in (first, second):
        assert (r.trace["h2d_bytes"] <= 2 * 8 + 8).all()
    assert after["bytes_down"] - middle["bytes_down"] == second.trace["d2h_bytes"].sum()


@needs_gpu
@pytest.mark.parametrize("strategy, tasks, dispatch", [
    ("hybrid", 2, "auto"),
    ("gpu", 1, "auto"),  # the search as one task: its device levels' buffers made too
    ("fixed", 3, "tasks"),  # (included, this graph's search never ends, on main too)
])
def test_placing_the_graph_uploads_its_slices_not_the_first_search(runtime, strategy, tasks,
                                                                   dispatch):
    """A policy that may use the GPU: placing the graph copies its slices to the GPU
    worker's device memory (the device-data service's counters move then), and the first
    search uploads none; the CPU strategy places nothing there."""
    from taskbfs.placed.placement import place_graph
    from taskbfs.search.device_cache import upload_to_gpus

    g = tb.Graph.from_edges(np.r_[np.arange(19), [0] * 5], np.r_[np.arange(1, 20), 5, 7, 9, 11, 13])
    slice_bytes = sum(a.nbytes for a in (g.indptr, g.indices))
    before = _gpu_cache_stats(runtime)
    tb.bfs(g, 0, tasks=tasks, strategy="cpu", runtime=runtime)
    assert _gpu_cache_stats(runtime)["misses"] == before["misses"]  # cpu: nothing placed there
    placed = place_graph(runtime, g, tasks, tb.config.get("balance"), need_transpose=True)
    upload_to_gpus(runtime, placed, g.num_vertices, "graph" if dispatch == "auto" else "slices")
    placed = _gpu_cache_stats(runtime)
    # offsets and neighbours: per slice for steps as tasks, of the whole graph for a search
    # run as one task on the GPU worker (its levels' batches read every range)
    copies = 2 * tasks if dispatch == "tasks" else 2
    assert placed["misses"] - before["misses"] == copies
    assert placed["bytes_up"] - before["bytes_up"] >= slice_bytes - 8 * (tasks - 1)
    r = tb.bfs(g, 0, tasks=tasks, strategy=strategy, runtime=runtime, dispatch=dispatch)
    _check(g, 0, r)
    after = _gpu_cache_stats(runtime)
    assert after["misses"] == placed["misses"]  # the first search uploaded no slice
    assert (r.trace["h2d_bytes"] < slice_bytes).all()


@needs_gpu
@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_hybrid_places_a_hub_frontier_by_its_arcs(runtime, dispatch):
    """A frontier of one hub is placed as the work of its arcs (in vertices of the mean
    degree), not as one vertex: with λ = 2 it runs on the GPU."""
    g = _kron()
    source = _hub_source(g)
    mean = g.num_arcs / g.num_vertices
    hub_size = int(np.ceil(g.degree(source) / mean))
    assert hub_size > 2
    r = tb.bfs(g, source, tasks=1, strategy="hybrid", lam=2, runtime=runtime, dispatch=dispatch)
    _check(g, source, r)
    first = r.trace[r.trace["level"] == 0].iloc[0]
    assert (first["size"], first["device"]) == (hub_size, "cuda")


@needs_gpu
@pytest.mark.parametrize("lam, expect", [(0, "all"), (10**9, "none"), (56, "size")])
def test_hybrid_lambda_places_by_frontier_size(runtime, lam, expect):
    g = _kron()
    source = _hub_source(g)
    r = tb.bfs(g, source, tasks=3, strategy="hybrid", lam=lam, runtime=runtime)
    _check(g, source, r)
    size = r.trace["size"].to_numpy()
    cuda = {"all": np.ones(size.size, bool), "none": np.zeros(size.size, bool),
            "size": size > lam}[expect]
    _check_devices(r, _gpu_worker(runtime), cuda)
    if expect == "size":
        assert cuda.any() and not cuda.all(), r.trace[["level", "task", "size", "device"]]


@needs_gpu
def test_default_t_is_one_task_per_gpu_for_hybrid_and_gpu(runtime):
    g = _kron()
    source = _hub_source(g)
    slots = runtime.resources()["CPU"]
    for strategy, want in (("hybrid", 1), ("gpu", 1), ("cpu", max(slots, tb.config.get("tasks")))):
        r = tb.bfs(g, source, strategy=strategy, lam=0, runtime=runtime)
        _check(g, source, r)
        assert r.num_tasks == want == tb.default_tasks(runtime, strategy)
        assert set(r.trace["device"]) == ({"smp"} if strategy == "cpu" else {"cuda"})


@needs_gpu
def test_fixed_binds_the_first_tasks_to_the_gpu(runtime):
    g = _kron()
    source = _hub_source(g)
    r = tb.bfs(g, source, tasks=4, strategy="fixed", gpu_share=0.5, runtime=runtime)
    _check(g, source, r)
    _check_devices(r, _gpu_worker(runtime), r.trace["task"].to_numpy() < 2)


@needs_gpu
def test_fixed_with_small_levels_on_its_cpu_tasks_ends(runtime):
    """A small top-down level whose frontier lies in a CPU task of the fixed policy runs in
    the compiled loop while a GPU task has no vertex (the loop stopped at once there and the
    search went round forever)."""
    g = tb.Graph.from_edges(np.r_[np.arange(19), [0] * 5], np.r_[np.arange(1, 20), 5, 7, 9, 11, 13])
    r = tb.bfs(g, 0, tasks=3, strategy="fixed", gpu_share=0.3, runtime=runtime, timeout=120)
    _check(g, 0, r)
    assert set(r.trace.loc[r.trace["task"] == 0, "device"]) == {"cuda"}


# --------------------------------------------------------------------------- the cache alone
def _slices(g, bounds, token):
    out = []
    for t in range(len(bounds) - 1):
        lo, hi = bounds[t], bounds[t + 1]
        start, stop = g.indptr[lo], g.indptr[hi]
        out.append(GraphSlice(t, lo, hi, g.indptr[lo:hi + 1] - start, g.indices[start:stop], token))
    return out


def _frontier(g, bounds, direction, frontier_vertices, visited_vertices):
    n = g.num_vertices
    fv = np.sort(np.asarray(frontier_vertices, dtype=np.int64))
    offsets = np.searchsorted(fv, bounds).astype(np.int64)
    bits = bitmap_from_vertices(fv, n) if direction == BOTTOM_UP else None
    visited = bitmap_from_vertices(visited_vertices, n) if len(visited_vertices) else empty_bitmap(n)
    return Frontier(1, direction, fv, offsets, bits, visited)


def _pairs(d):
    return sorted(zip(d.vertices.tolist(), d.parents.tolist(), strict=True))


@needs_gpu
def test_a_step_runs_on_a_thread_that_never_used_the_gpu():
    """An owner's steps run on whatever thread its task has (not the one that uploaded
    its slices): each thread gets the device's context before the levels' driver calls."""
    import threading

    from taskbfs.search.device_cache import DeviceCache
    from taskbfs.search.gpu_step import run_step_on_gpu

    g = _kron()
    bounds = [0, 60, g.num_vertices]
    parts = _slices(g, bounds, "thread-test")
    first = _frontier(g, bounds, TOP_DOWN, [1, 70], [1, 70])
    cache = DeviceCache(budget=1 << 30)
    for p in parts:  # the slices uploaded here, in this thread
        run_step_on_gpu(p, first, cache=cache)
    found = {}

    def step(p):
        found[p.task] = run_step_on_gpu(p, first, cache=cache)

    threads = [threading.Thread(target=step, args=(p,)) for p in parts]
    for t in threads:
        t.start()
        t.join()
    for p in parts:
        assert _pairs(found[p.task]) == _pairs(step_smp(p, first))
    cache.clear()


@needs_gpu
def test_cache_evicts_least_recently_used_under_its_budget():
    from taskbfs.search.device_cache import DeviceCache
    from taskbfs.search.gpu_step import run_step_on_gpu

    g = _kron()
    bounds = [0, 40, 80, g.num_vertices]
    parts = _slices(g, bounds, "cache-test")
    sizes = [p.indptr.nbytes + p.indices.nbytes for p in parts]
    first = _frontier(g, bounds, TOP_DOWN, [1, 50, 100], [1, 50, 100])
    # Room for the scratch buffers and two slices, not three.
    probe = DeviceCache(budget=1 << 30)
    for p in parts:
        run_step_on_gpu(p, first, cache=probe)
    scratch = probe.used_bytes - sum(sizes)
    cache = DeviceCache(budget=scratch + sizes[0] + sizes[1] + max(sizes) // 2)
    gpu_found, cpu_found = [], []
    for p in parts:
        d = run_step_on_gpu(p, first, cache=cache)
        cpu = step_smp(p, first)
        assert d.edges_examined == cpu.edges_examined
        gpu_found += d.vertices.tolist()
        cpu_found += cpu.vertices.tolist()
    # The level's GPU steps share one vertex mask: each vertex is reported once in all.
    assert sorted(gpu_found) == sorted(set(cpu_found))
    # two data per slice (offsets, neighbours), each uploaded once, through the service
    assert cache.data.misses == 6 and cache.data.evictions >= 1
    assert cache.keys()[-1] == ("cache-test", 2, 80, g.num_vertices)
    assert ("cache-test", 0, 0, 40) not in cache.keys()  # the least recently used went first
    assert cache.data.bytes_up >= sum(sizes)
    assert cache.used_bytes <= cache.budget
    # A bottom-up level on the same cache: identical pairs to the CPU twin.
    bu = _frontier(g, bounds, BOTTOM_UP, [1, 50, 100], [1, 50, 100])
    for p in parts:
        d = run_step_on_gpu(p, bu, cache=cache)
        cpu = step_smp(p, bu)
        assert _pairs(d) == _pairs(cpu) and d.edges_examined == cpu.edges_examined
    assert cache.used_bytes <= cache.budget
    cache.clear()
    assert len(cache.data) == 0 and cache.keys() == []


def _step_graphs():
    return [("kron", _kron(), [0, 40, 80, 128]), ("kron-cuts", _kron(), [0, 1, 2, 127, 128]),
            ("directed", _directed(), [0, 33, 100])]


@needs_gpu
@pytest.mark.parametrize("name", ["kron", "kron-cuts", "directed"])
def test_a_gpu_step_finds_what_the_cpu_step_finds(name):
    """A GPU step (one level of the device levels over its slice alone) against the CPU
    step of the same slice and frontier: top-down, each candidate the CPU step finds
    once, each with a parent in the step's frontier with an arc to it, the same entries
    read;
    bottom-up, exactly the CPU step's pairs and entries read; the CPU step's dtype, and
    bytes moved as the step counts them."""
    from taskbfs.search.device_cache import DeviceCache
    from taskbfs.search.gpu_step import _READ_BACK_BYTES, run_step_on_gpu

    _, g, bounds = next(x for x in _step_graphs() if x[0] == name)
    cache = DeviceCache(budget=1 << 30)
    frontiers = [_frontier(g, bounds, TOP_DOWN, [1, 2, 70, 99], [1, 2, 70, 99]),
                 _frontier(g, bounds, TOP_DOWN, [3], [3, 5]),
                 _frontier(g, bounds, BOTTOM_UP, [1, 50, 90], [1, 50, 90])]
    for frontier in frontiers:
        down = frontier.direction == TOP_DOWN
        for p in _slices(g, bounds, f"step-test-{name}"):
            if down:
                on_gpu = run_step_on_gpu(p, frontier, cache=cache)
            else:
                t = _transposed(g, bounds, p.task) if g.directed else p
                on_gpu = run_step_on_gpu(t, frontier, cache=cache)
                p = t
            on_cpu = step_smp(p, frontier)
            assert on_gpu.vertices.dtype == on_cpu.vertices.dtype == p.indices.dtype
            assert on_gpu.edges_examined == on_cpu.edges_examined
            pairs = list(zip(on_gpu.vertices.tolist(), on_gpu.parents.tolist(), strict=True))
            cpu_pairs = set(zip(on_cpu.vertices.tolist(), on_cpu.parents.tolist(), strict=True))
            if down:  # any frontier vertex with an arc to it is a parent
                assert sorted(on_gpu.vertices.tolist()) == sorted(set(on_cpu.vertices.tolist()))
                mine = set(frontier.of_task(p.task).tolist())
                assert all(u in mine and v in set(g.neighbors(u).tolist()) for v, u in pairs)
            else:
                assert sorted(pairs) == sorted(cpu_pairs)
            pair_bytes = 2 * on_gpu.vertices.size * 4  # int32 ids below 2^31 vertices
            assert on_gpu.d2h_bytes in (0, _READ_BACK_BYTES + pair_bytes)


def _transposed(g, bounds, task):
    """Task ``task``'s slice of the in-adjacency of directed ``g`` (what a bottom-up step
    reads), its out-offsets beside it."""
    t = g.transpose()
    lo, hi = int(bounds[task]), int(bounds[task + 1])
    indptr = t.indptr[lo:hi + 1] - t.indptr[lo]
    return GraphSlice(task, lo, hi, indptr, t.indices[t.indptr[lo]:t.indptr[hi]],
                      "step-test-transposed", out_indptr=g.indptr[lo:hi + 1] - g.indptr[lo])


@needs_gpu
def test_dispatched_gpu_steps_move_their_frontier_and_their_pairs(runtime):
    """End to end, every GPU step of a dispatched search copies back its counts and its
    pairs (int32 on this graph), and sends up the visited bitmap and its frontier."""
    from taskbfs.search.gpu_step import _READ_BACK_BYTES

    g = _kron()
    source = _hub_source(g)
    words = (g.num_vertices + 63) // 64
    for direction in (TOP_DOWN, BOTTOM_UP):
        r = tb.bfs(g, source, tasks=3, strategy="gpu", direction=direction, runtime=runtime,
                   dispatch="tasks")
        _check(g, source, r)
        steps = r.trace[r.trace["name"] == STEP_NAME]
        assert len(steps) and (steps["device"] == "cuda").all()
        ran = steps[steps["d2h_bytes"] > 0]  # a top-down step whose vertices have no arcs: none
        assert len(ran) >= 2
        pair_bytes = 2 * g.indices.dtype.itemsize
        np.testing.assert_array_equal(ran["d2h_bytes"],
                                      _READ_BACK_BYTES + pair_bytes * ran["found"])
        assert (ran["h2d_bytes"] >= 8 * words).all()


def _odd_sized():
    """A Kronecker graph plus a tail and isolated vertices: 150 vertices (not a whole
    number of bitmap words), top-down levels with many candidates per vertex. From the hub,
    auto runs top-down, bottom-up twice, then top-down down the tail (4 vertices: two
    single-vertex levels after the switch back; each level costs seconds in the simulator)."""
    g = tb.kronecker(7, edgefactor=8, seed=5)
    coo = g.to_scipy().tocoo()
    src, dst = coo.row, coo.col
    tail = np.arange(128, 132)
    src = np.concatenate([src, [int(np.argmax(g.degrees()))], tail[:-1]])
    dst = np.concatenate([dst, tail[:1], tail[1:]])
    return tb.Graph.from_edges(src, dst, num_vertices=150)


def _sole_step_levels(g, source, cache, direction, token):
    """A search as a plain level loop of T = 1 GPU steps on ``cache``: yields after each
    step (so that two searches can take turns on one cache), returns the distances."""
    from taskbfs.search.gpu_step import run_step_on_gpu
    from taskbfs.search.state import first_frontier

    bounds = np.array([0, g.num_vertices], dtype=np.int64)
    (part,) = _slices(g, bounds, token)
    degrees = np.diff(g.indptr).astype(np.int64)
    frontier, summary = first_frontier(degrees, bounds, source, direction)
    distances = np.full(g.num_vertices, -1, dtype=np.int64)
    distances[source] = 0
    moved = []
    while summary.frontier_size:
        d = run_step_on_gpu(part, frontier, cache=cache)
        distances[d.vertices] = frontier.level + 1
        moved.append(d.h2d_bytes)
        yield
        frontier, summary = serial_barrier(frontier, [d], degrees)
    return distances, moved


def _run_all(searches) -> list:
    """Run the generators of :func:`_sole_step_levels` step by step, in turn."""
    results = [None] * len(searches)
    active = dict(enumerate(searches))
    while active:
        for i, search in list(active.items()):
            try:
                next(search)
            except StopIteration as stop:
                results[i] = stop.value
                del active[i]
    return results


@needs_gpu
@pytest.mark.parametrize("direction", ["top-down", "auto"])
def test_steps_of_two_searches_take_turns_on_one_gpu(direction):
    """Two searches of one graph taking turns on one GPU, step by step: each step enters
    its own state whatever the other left there, so both find scipy's distances and move
    the bytes they move alone."""
    from taskbfs.search.device_cache import DeviceCache

    g = _odd_sized()
    sources = [_hub_source(g), int(np.flatnonzero(g.degrees())[0])]
    cache = DeviceCache(budget=1 << 30)
    _run_all([_sole_step_levels(g, sources[1], cache, direction, "chain-test")])  # the upload
    both = _run_all([_sole_step_levels(g, s, cache, direction, "chain-test") for s in sources])
    alone = _run_all([_sole_step_levels(g, sources[0], cache, direction, "chain-test")])
    for (distances, _), source in zip(both, sources, strict=True):
        np.testing.assert_array_equal(distances, scipy_distances(g, source))
    np.testing.assert_array_equal(alone[0][0], scipy_distances(g, sources[0]))
    turns, single = both[0][1], alone[0][1]
    assert len(turns) == len(single) >= 3 and turns == single


# --------------------------------------------------------------------------- every level in one task
@needs_gpu
@pytest.mark.parametrize("graph, direction, tasks", [
    (_kron, "auto", 1),
    (_kron, "auto", 3),
    (_odd_sized, "bottom-up", 1),
    (_directed, "auto", 1),
    (_directed, "auto", 2),  # bottom-up steps read the transposed slices
    (_directed, "top-down", 3),
    (_path, "top-down", 2),
])
def test_gpu_levels_in_one_task_are_the_levels_as_tasks(runtime, monkeypatch, graph, direction,
                                                       tasks):
    """With the gpu strategy on the one GPU worker, every level runs inside one task placed
    there (``dispatch="auto"``): the same search, level table and trace as
    with each level as GPU step tasks and a barrier, every step traced on ``cuda`` on the
    GPU worker as an included task, and one task placed in all."""
    g = graph()
    source = _hub_source(g)
    runs = {}
    for inside in (False, True):
        r = runs[inside] = tb.bfs(g, source, tasks=tasks, strategy="gpu", direction=direction,
                                  runtime=runtime, dispatch="auto" if inside else "tasks")
        _check(g, source, r)
    level_columns = ["level", "direction", "frontier_size", "frontier_edges", "unexplored_edges",
                     "edges_examined", "discovered", "tasks", "tasks_gpu"]
    # not "found": a level's top-down GPU steps share one vertex mask, so which of them
    # reports a vertex depends on the order they ran in (the level's total does not)
    trace_columns = ["level", "task", "lo", "hi", "direction", "size", "edges_examined",
                     "device", "worker"]
    assert runs[True].levels[level_columns].equals(runs[False].levels[level_columns])
    assert runs[True].trace[trace_columns].equals(runs[False].trace[trace_columns])
    inside, apart = runs[True], runs[False]
    assert inside.trace["included"].all() and not apart.trace["included"].any()
    assert (inside.trace["device"] == "cuda").all()
    assert (inside.trace["worker"] == _gpu_worker(runtime)).all()
    # a level's GPU steps run as one batch, whose kernel time its first step reports
    assert (inside.trace.groupby("level")["kernel_seconds"].sum() > 0).all()
    assert (inside.levels["barrier_worker"] == _gpu_worker(runtime)).all()
    assert [p["device"] for p in inside.placements] == ["cuda"]  # the one task
    assert len(apart.placements) > len(apart.trace)  # every step and barrier


@needs_gpu
@pytest.mark.parametrize("tasks", [1, 3])
def test_the_result_copy_runs_beside_the_last_levels(runtime, monkeypatch, tasks):
    """A GPU search that turns top-down again after bottom-up levels starts copying its
    result to the host then, beside its last levels; the vertices those levels find are
    written over the copy at the end: the same result as the levels as tasks give."""
    from taskbfs.kernels.gpu_levels import DeviceLevels

    copies = []
    original = DeviceLevels.copied_result

    def spy(self):
        copied = original(self)
        copies.append(copied is not None)
        return copied

    monkeypatch.setattr(DeviceLevels, "copied_result", spy)
    g = tb.kronecker(10, edgefactor=4, seed=3)  # from its hub: 2 levels after bottom-up
    source = _hub_source(g)
    r = tb.bfs(g, source, tasks=tasks, strategy="gpu", direction="auto", runtime=runtime,
               dispatch="auto")
    _check(g, source, r)
    directions = r.levels["direction"].tolist()
    turn = directions.index("bottom-up")
    turned_back = directions.index("top-down", turn)
    # the levels after the copy began found vertices: they are what was written over it
    assert r.levels["frontier_size"].iloc[turned_back + 1] > 0
    assert copies == [True]
    apart = tb.bfs(g, source, tasks=tasks, strategy="gpu", direction="auto", runtime=runtime,
                   dispatch="tasks")
    np.testing.assert_array_equal(r.distances, apart.distances)


@needs_gpu
@pytest.mark.parametrize("graph, direction", [
    (_kron, "auto"),
    (_kron, "top-down"),
    (_kron, "bottom-up"),
    (_directed, "auto"),  # bottom-up levels read the transposed slice
    (_path, "auto"),
])
def test_one_task_gpu_levels_keep_the_frontier_on_the_device(runtime, graph, direction):
    """T = 1 on the GPU worker: each level's step and barrier run on the device
    (``search/device_levels.py``), traced ``cuda`` on the GPU worker; after the first level
    nothing goes up, and each level reads back only its counts (``COUNTS_BYTES``): the
    frontier never crosses the bus. The level table is that of the levels as tasks."""
    from taskbfs.kernels.gpu_levels import COUNTS_BYTES

    g = graph()
    source = _hub_source(g)
    tb.bfs(g, source, tasks=1, strategy="gpu", runtime=runtime, dispatch="auto")  # uploads
    r = tb.bfs(g, source, tasks=1, strategy="gpu", direction=direction, runtime=runtime,
               dispatch="auto")
    _check(g, source, r)
    apart = tb.bfs(g, source, tasks=1, strategy="gpu", direction=direction, runtime=runtime,
                   dispatch="tasks")
    columns = ["level", "direction", "frontier_size", "frontier_edges", "unexplored_edges",
               "edges_examined", "discovered"]
    assert r.levels[columns].equals(apart.levels[columns])
    trace = r.trace
    assert (trace["device"] == "cuda").all() and trace["included"].all()
    assert (trace["d2h_bytes"] == COUNTS_BYTES).all()
    # level 0 sends the source as a pair (vertex, parent, distance) and as the frontier,
    # int32 both ways: the device makes the result, the queue or the bits
    assert trace["h2d_bytes"].iloc[0] == 4 * 4
    assert (trace["h2d_bytes"].iloc[1:] == 0).all()
    assert (r.levels["barrier_worker"] == _gpu_worker(runtime)).all()


@needs_gpu
def test_one_task_gpu_levels_all_through_the_tiled_kernels(runtime, monkeypatch):
    """``DeviceLevels.small_level_arcs`` = 0: every top-down level of a one-task GPU search
    runs through the scan and tile kernels, none as the one launch of a small level; the
    search is the same (scipy's distances, valid parents, the same level table)."""
    g = _kron()
    source = _hub_source(g)
    runs = []
    from taskbfs.kernels.gpu_levels import DeviceLevels

    for arcs in (DeviceLevels.small_level_arcs, 0):
        monkeypatch.setattr(DeviceLevels, "small_level_arcs", arcs)
        runs.append(tb.bfs(g, source, tasks=1, strategy="gpu", direction="top-down",
                           runtime=runtime, dispatch="auto"))
    for r in runs:
        _check(g, source, r)
    columns = ["level", "direction", "frontier_size", "frontier_edges", "edges_examined",
               "discovered"]
    assert runs[0].levels[columns].equals(runs[1].levels[columns])


@needs_gpu
def test_a_levels_cpu_tasks_stay_on_the_device_while_they_cost_less_than_the_move(runtime):
    """Hybrid, T = 3, the levels' sizes 24; 63 54 58; 18 21 22. With λ = 20 the state is
    on the device when level 2 is placed and its first task is one the policy puts on the
    CPU. While no move of this graph's state has been paid for, that task runs on the host
    (a level on both devices); after one (λ = 30: level 2 has no GPU task, the state
    leaves), it stays on the device with the others, as rent. Every search gives scipy's
    distances and valid parents."""
    g = tb.kronecker(7, edgefactor=8, seed=3)  # _kron's graph, a fresh object: its own device state
    source = _hub_source(g)
    devices = []
    for lam in (20, 30, 20):
        r = tb.bfs(g, source, tasks=3, strategy="hybrid", lam=lam, runtime=runtime,
                   dispatch="auto")
        _check(g, source, r)
        level = r.trace[r.trace["level"] == 2].sort_values("task")
        assert level["size"].tolist() == [18, 21, 22], r.trace[["level", "task", "size", "device"]]
        devices.append(level["device"].tolist())
    assert devices == [["smp", "cuda", "cuda"], ["smp"] * 3, ["cuda"] * 3]


@needs_gpu
@pytest.mark.parametrize("direction", ["auto", "top-down"])
def test_hybrid_one_task_moves_the_state_between_host_and_device(runtime, direction):
    """Hybrid, T = 1, λ between the level sizes: levels alternate between the host and the
    GPU; a GPU level takes the state up (its bytes up: the visited bitmap and the
    frontier) and the barrier before a host level brings it back, and the result is
    the levels as tasks give: scipy's distances, valid parents, the same devices."""
    g = _kron()
    source = _hub_source(g)
    lam = 25  # between the levels' sizes from the hub: 8, 58, 20
    runs = {inside: tb.bfs(g, source, tasks=1, strategy="hybrid", lam=lam, direction=direction,
                           runtime=runtime, dispatch="auto" if inside else "tasks")
            for inside in (False, True)}
    for r in runs.values():
        _check(g, source, r)
    columns = ["level", "task", "direction", "size", "device", "edges_examined"]
    assert runs[True].trace[columns].equals(runs[False].trace[columns])
    trace = runs[True].trace
    devices = trace["device"].tolist()
    assert "smp" in devices and "cuda" in devices
    for i, device in enumerate(devices):
        if device == "cuda":  # entered from the host: the visited bitmap went up
            entered = i == 0 or devices[i - 1] == "smp"
            assert (trace["h2d_bytes"].iloc[i] > 0) == entered


@needs_gpu
@pytest.mark.parametrize("direction", ["auto", "top-down"])
@pytest.mark.parametrize("isolated", [12_000, 0])
def test_hybrid_first_entry_sends_the_reached_pairs_when_they_fit(runtime, direction,
                                                                  isolated):
    """Hybrid, T = 1: the search's first GPU level after host levels takes up the pairs the
    host found (and the frontier's ids), not the visited bitmap, when they take at most the
    bytes of two bitmaps: a Kronecker component among 12,000 isolated vertices (a 1.5 kB
    bitmap; the pairs and ids take ~1.1 kB, and each bottom-up level of the simulator
    reads every vertex). On the component alone (a 16-byte bitmap) it sends the bitmap and the frontier. The result is
    scipy's with valid parents either way, the devices those of the levels-as-tasks run."""
    coo = _kron().to_scipy().tocoo()
    g = tb.Graph.from_edges(coo.row, coo.col, num_vertices=128 + isolated)
    source = _hub_source(g)
    probe = tb.bfs(g, source, tasks=1, strategy="cpu", direction=direction, runtime=runtime)
    lam = int(probe.trace["size"].iloc[0])  # level 0 on the host, larger levels on the GPU
    runs = {inside: tb.bfs(g, source, tasks=1, strategy="hybrid", lam=lam, direction=direction,
                           runtime=runtime, dispatch="auto" if inside else "tasks")
            for inside in (False, True)}
    for r in runs.values():
        _check(g, source, r)
    columns = ["level", "task", "direction", "size", "device"]
    assert runs[True].trace[columns].equals(runs[False].trace[columns])
    r = runs[True]
    trace = r.trace.sort_values(["level", "start"])
    first = trace["device"].tolist().index("cuda")
    level = int(trace["level"].iloc[first])
    assert level > 0  # host levels first
    h2d = int(trace["h2d_bytes"].iloc[first])
    bitmap = -(-g.num_vertices // 64) * 8
    frontier = int(r.levels["frontier_size"].iloc[level])
    top_down = trace["direction"].iloc[first] == "top-down"
    if isolated:  # int32 rows of vertex, parent, distance (a vertex may come twice), ids
        reached = int(((r.distances >= 0) & (r.distances <= level)).sum())
        assert (3 * reached + frontier) * 4 <= h2d < bitmap
    else:
        assert h2d == bitmap + (frontier * 4 if top_down else bitmap)


def _set_leave_seconds(runtime, seconds: float) -> None:
    """Set the price of moving the state to the host on the GPU worker's device levels (of
    the graph its last search used)."""
    def set_price(dask_worker):
        from taskbfs.search.device_cache import device_cache

        kept = device_cache(dask_worker)._levels
        if kept is not None:
            kept[1].leave_seconds = seconds
        return kept is not None

    assert all(runtime.client.run(set_price, workers=[_gpu_worker(runtime)]).values())


@needs_gpu
def test_hybrid_keeps_small_levels_on_the_gpu_while_they_cost_less_than_the_move(runtime):
    """Hybrid, T = 1, on the GPU worker: once the search's state is on the GPU, a level
    the policy puts on the CPU stays there while the levels kept so far took less time
    than the last move to the host (``DeviceLevels.leave_seconds``). With that price
    unbounded, every level after the first GPU one stays; with no price, each level goes
    where the policy puts it; the result is right either way."""
    g = _kron()
    source = _hub_source(g)
    lam = 25  # between the levels' sizes from the hub: 8, 58, 20

    def search():
        r = tb.bfs(g, source, tasks=1, strategy="hybrid", lam=lam, runtime=runtime,
                   dispatch="auto")
        _check(g, source, r)
        assert r.trace["included"].all()
        return r.trace.sort_values(["level", "start"])

    search()  # this graph's device levels, made
    try:
        _set_leave_seconds(runtime, 1e9)
        kept = search()
        on_gpu = (kept["device"] == "cuda").to_numpy()
        first = int(np.argmax(on_gpu))
        assert on_gpu.any() and on_gpu[first:].all()
        assert (kept["size"].to_numpy()[first:] <= lam).any()  # a level the policy puts on the CPU
        _set_leave_seconds(runtime, 0.0)
        placed = search()
        assert (placed["device"] == np.where(placed["size"] > lam, "cuda", "smp")).all()
        assert (placed["device"] == "smp").any() and (placed["device"] == "cuda").any()
    finally:
        _set_leave_seconds(runtime, 0.0)


@needs_gpu
@pytest.mark.parametrize("lam", [0, 6, 10**9])
@pytest.mark.parametrize("direction", ["auto", "top-down"])
def test_hybrid_levels_inside_tasks_are_placed_as_the_policy_places_steps(runtime, monkeypatch,
                                                                          lam, direction):
    """Hybrid on one GPU worker: every level runs inside one task on the GPU worker, each
    step on the device the policy gives its size (the trace's device per step equals the
    run with every level as tasks): above λ on the GPU, else on the host's threads."""
    g = _kron()
    source = _hub_source(g)
    runs = {}
    for inside in (False, True):
        r = runs[inside] = tb.bfs(g, source, tasks=3, strategy="hybrid", lam=lam,
                                  direction=direction, runtime=runtime,
                                  dispatch="auto" if inside else "tasks")
        _check(g, source, r)
    columns = ["level", "task", "direction", "size", "device"]  # "found": see above
    assert runs[True].trace[columns].equals(runs[False].trace[columns])
    trace = runs[True].trace
    assert (trace["device"] == np.where(trace["size"] > lam, "cuda", "smp")).all()
    assert trace["included"].all() and (trace["worker"] == _gpu_worker(runtime)).all()
    assert [p["device"] for p in runs[True].placements] == ["cuda"]  # the one task
    cuda = trace[trace["device"] == "cuda"]  # one batch a level: its first step reports it
    assert (cuda.groupby("level")["kernel_seconds"].sum() > 0).all()
    assert (trace.loc[trace["device"] == "smp", list(DEVICE_COLUMNS)] == 0).all().all()


@needs_gpu
@pytest.mark.parametrize("tasks", [1, 3])
def test_a_user_policy_places_the_steps_of_a_search_on_the_gpu_worker(tasks):
    """The search task as the GPU worker runs it (``run_search``, called here), with a user
    policy, a plain function that gives no ``largest_cpu_size``: each step where the
    function puts it (one task: its levels on the device or the host, by the runtime's
    rule; three: each step), the right result, and no compiled level (the compiled loop
    places by numbers such a policy does not give)."""
    from taskbfs import config
    from taskbfs.runtime import FunctionPolicy
    from taskbfs.search.included import run_search
    from taskbfs.search.warmup import _bundle

    g = _kron()
    source = _hub_source(g)
    bundle, bounds = _bundle(g, tasks)
    init = {"bounds": bounds, "sources": np.array([source], dtype=np.int64), "direction_mode": "auto",
            "total_edges": g.num_arcs, "alpha": config.get("direction.alpha"),
            "beta": config.get("direction.beta")}
    # between the steps' sizes (one task: 8, 58, 20; three: 24, then 63 54 58, 18 21 22)
    lam = 25 if tasks == 1 else 56
    policy = FunctionPolicy(lambda size, task_id: "cuda" if size > lam else "smp")
    out = run_search(bundle, g.degrees(), init=init, policy=policy, device="cuda")
    np.testing.assert_array_equal(out.distances, scipy_distances(g, source))
    tb.validate(g, source, out.parents)
    assert not out.summaries.blocks
    placed = [(int(s.sizes[t]), int(s.gpu_steps[t])) for s in out.summaries
              for t in np.flatnonzero(s.sizes)]
    assert {on_gpu for _, on_gpu in placed} == {0, 1}
    # the policy's word, except for levels kept with the state on the device (rent)
    assert all(on_gpu for size, on_gpu in placed if size > lam)


@needs_gpu
@pytest.mark.parametrize("graph, direction", [
    (_kron, "auto"),
    (_kron, "top-down"),
    (_odd_sized, "bottom-up"),
    (_directed, "auto"),
    (_path, "top-down"),
])
@pytest.mark.parametrize("strategy, tasks, lam", [
    ("gpu", 1, None),
    ("gpu", 3, None),  # the three tasks of a level as one batch
    ("hybrid", 1, 0),
    ("hybrid", 1, 6),  # levels on both devices: the host levels' pairs written on the host
    ("hybrid", 3, 2),  # a level's tasks on both devices: the CPU ones' pairs claimed there
    ("hybrid", 1, 10**9),  # every step on the CPU: no device result at all
])
def test_result_kept_on_the_device_is_the_result_assembled_on_the_host(setting,
        runtime, graph, direction, strategy, tasks, lam):
    """A search run as one task on the GPU worker keeps its result on the device from its
    first GPU level and copies it back once: the same distances as the steps dispatched as
    tasks (whose pairs the host assembles), valid parents, the same level table; one
    device result per search that ran a GPU step, none otherwise."""
    from taskbfs.kernels.assembly import result_dtype

    g = graph()
    source = _hub_source(g)
    runs = {}
    for dispatch in ("tasks", "auto"):
        setting("dispatch", dispatch)
        before = _gpu_cache_stats(runtime)["results"]
        r = runs[dispatch] = tb.bfs(g, source, tasks=tasks, strategy=strategy, lam=lam,
                                    direction=direction, runtime=runtime)
        _check(g, source, r)
        if dispatch == "auto":
            kept = bool((r.trace["device"] == "cuda").any())
            assert _gpu_cache_stats(runtime)["results"] - before == int(kept)
            # the result's copy back is accounted for: two arrays over every vertex
            itemsize = result_dtype(g.num_vertices).itemsize
            assert r.assembly_d2h_bytes == (2 * itemsize * g.num_vertices if kept else 0)
        assert r.distances.dtype == r.parents.dtype == result_dtype(g.num_vertices)
    columns = ["level", "direction", "frontier_size", "frontier_edges", "edges_examined", "tasks"]
    assert runs["auto"].levels[columns].equals(runs["tasks"].levels[columns])
    assert np.array_equal(runs["auto"].distances, runs["tasks"].distances)
    if strategy == "gpu":  # each level reads back its counts (per task too with several)
        from taskbfs.kernels.gpu_levels import COUNTS_BYTES

        d2h = runs["auto"].trace.groupby("level")["d2h_bytes"].sum()
        read_back = COUNTS_BYTES if tasks == 1 else 8 * (3 * tasks + COUNTS_BYTES // 8)
        assert (d2h == read_back).all()
