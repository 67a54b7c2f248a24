"""GPU kernels (``taskbfs.kernels.gpu_levels``: a step over one slice, and a search's
levels) against the CPU kernels and a scipy BFS.

How this file finds a GPU
    The kernels run in this process when ``numba.cuda`` is usable here: a real GPU, or
    numba's simulator switched on before numba was first imported
    (``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/test_kernels_gpu.py``). Otherwise (a
    plain ``pytest`` on a machine without CUDA, where other test modules have already
    imported numba so the variable can no longer take effect) those tests skip and
    ``test_gpu_kernels_in_simulator_subprocess`` runs this very file again in a fresh
    interpreter with ``NUMBA_ENABLE_CUDASIM=1`` and fails if anything there fails. Setting
    the variable from inside this module would be fragile (numba reads it once, at its
    first import, which may already have happened); a subprocess is always clean.

Expectations
    Every step is checked against the CPU kernel on the same inputs (the same vertices,
    parents the CPU pairs them with, exactly its pairs bottom-up, and exact
    ``edges_examined``) and against
    levels from ``scipy.sparse.csgraph.breadth_first_order``. Graphs are tiny because the
    simulator runs each CUDA thread as a Python thread.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from gpu_support import run_module_under_simulator
from scipy.sparse.csgraph import breadth_first_order

from taskbfs.errors import InvalidParameterError
from taskbfs.graph import Graph
from taskbfs.kernels import cpu
from taskbfs.kernels.bitmap import bitmap_from_vertices
from taskbfs.kernels.gpu import gpu_available

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]
IN_PROCESS = gpu_available()
needs_gpu = pytest.mark.skipif(
    not IN_PROCESS,
    reason="numba.cuda is not usable in this process; "
    "test_gpu_kernels_in_simulator_subprocess runs these under NUMBA_ENABLE_CUDASIM=1",
)
BLOCK_SIZES = (32, 64, 128)
#: Small tiles and a short per-thread bottom-up budget so tiny graphs take every path.
ITEMS_PER_THREAD = 2
BU_THREAD_EDGES = 4


# --------------------------------------------------------------------------- the driver
@pytest.mark.skipif(IN_PROCESS, reason="the GPU kernels run in this process")
def test_gpu_kernels_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=900)


def test_import_without_cuda():
    """Importing gpu.py must not need numba.cuda; gpu_available() is then False."""
    if importlib.util.find_spec("dask") is None:
        pytest.skip("taskbfs cannot be imported whole here (no dask): checked where it can")
    code = (
        "import sys; sys.modules['numba.cuda'] = None\n"
        "from taskbfs.kernels import gpu\n"
        "assert gpu.gpu_available() is False\n"
        "try:\n    gpu.launch_config()\nexcept gpu.DeviceUnavailableError:\n    print('ok')\n"
    )
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


# --------------------------------------------------------------------------- graphs
def _path(n=10):
    return Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def _star(leaves=150):
    return Graph.from_edges(np.zeros(leaves, dtype=np.int64), np.arange(1, leaves + 1))


def _grid(side=6):
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(src, dst)


def _skewed(n=300, hub_degree=260, extra=200, seed=3):
    """A hub adjacent to most vertices (degree far above any block size) plus noise."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([np.zeros(hub_degree, dtype=np.int64), rng.integers(1, n, extra)])
    dst = np.concatenate([np.arange(n - hub_degree, n), rng.integers(1, n, extra)])
    return Graph.from_edges(src, dst, num_vertices=n)


def _directed(n=120, m=400, seed=5):
    """Random arcs, an out-hub (vertex 1) and an in-hub (vertex 7)."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, m), np.ones(100, dtype=np.int64),
                          np.arange(10, 110)])
    dst = np.concatenate([rng.integers(0, n, m), np.arange(10, 110),
                          np.full(100, 7, dtype=np.int64)])
    return Graph.from_edges(src, dst, num_vertices=n, directed=True)


def _isolated(n=50, used=30, seed=7):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, used, 60), rng.integers(0, used, 60)
    return Graph.from_edges(src, dst, num_vertices=n)


#: name → (graph builder, BFS source, number of tasks)
GRAPHS = {
    "path": (_path, 0, 3),
    "star": (_star, 5, 2),
    "grid": (_grid, 0, 3),
    "skewed": (_skewed, 299, 3),
    "directed": (_directed, 0, 2),
    "isolated": (_isolated, 0, 3),
}


# --------------------------------------------------------------------------- references
def _levels(graph, source):
    """BFS depth of every vertex (-1 unreached), from scipy's breadth-first order."""
    order, pred = breadth_first_order(graph.to_scipy(), source, directed=graph.directed,
                                      return_predecessors=True)
    depth = np.full(graph.num_vertices, -1, dtype=np.int64)
    depth[source] = 0
    for v in order[1:]:
        depth[v] = depth[pred[v]] + 1
    return depth


def _ranges(n, tasks):
    bounds = np.linspace(0, n, tasks + 1).astype(np.int64)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def _slice(graph, lo, hi):
    start, stop = graph.indptr[lo], graph.indptr[hi]
    return graph.indptr[lo : hi + 1] - start, graph.indices[start:stop]


def _pairs(vertices, parents):
    return Counter(zip(vertices.tolist(), parents.tolist(), strict=True))


def _check_parents(graph, vertices, parents, frontier_set):
    """Every reported parent is in the frontier and has an arc to its vertex."""
    for v, u in zip(vertices.tolist(), parents.tolist(), strict=True):
        assert u in frontier_set
        assert v in set(graph.neighbors(u).tolist())


def _scenarios(name):
    """(graph, depth, level, frontier, visited bits, frontier bits) for a few levels."""
    build, source, _ = GRAPHS[name]
    graph = build()
    depth = _levels(graph, source)
    last = int(depth.max())
    wanted = sorted({0, last // 2, max(last - 1, 0)}) if last > 3 else range(last + 1)
    for level in wanted:
        frontier = np.flatnonzero(depth == level)
        visited = np.flatnonzero((depth >= 0) & (depth <= level))
        yield (graph, depth, level, frontier, bitmap_from_vertices(visited, graph.num_vertices),
               bitmap_from_vertices(frontier, graph.num_vertices))


def _config(block_size):
    from taskbfs.kernels.gpu import launch_config

    return launch_config(block_size=block_size, items_per_thread=ITEMS_PER_THREAD,
                         bu_thread_edges=BU_THREAD_EDGES)


def _cases():
    """Every graph at the smallest block size; the skewed one at every block size, the
    directed one at two (the simulator is too slow for the full product)."""
    cases = [(name, BLOCK_SIZES[0]) for name in GRAPHS]
    cases += [("skewed", b) for b in BLOCK_SIZES[1:]] + [("directed", BLOCK_SIZES[1])]
    return cases


# --------------------------------------------------------------------------- the one tier
def _service():
    """The runtime's device-data service over the GPU tier's allocator, as a GPU worker has
    it: its ``scratch`` is the kernels' workspace."""
    from taskbfs.kernels.gpu import NumbaAllocator
    from taskbfs.runtime.device_data import DeviceData

    return DeviceData(NumbaAllocator(), budget=1 << 30)


def _up(array, dtype=None):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(array, dtype=dtype))


def _levels_over(indptr, indices, lo, n, config, data, small_arcs):
    """A :class:`DeviceLevels` over the slice ``[lo, lo + len(indptr) - 1)`` (copied up;
    scratch from the service), as a GPU step runs it; ``small_arcs``: its
    ``small_level_arcs`` (0: every top-down level through the tiled kernels)."""
    from taskbfs.kernels.gpu import DeviceSlice
    from taskbfs.kernels.gpu_levels import DeviceLevels

    host = np.ascontiguousarray(indptr, dtype=np.int64)
    dev = DeviceSlice(lo, lo + host.size - 1, n, _up(host), _up(indices), host)
    levels = DeviceLevels(dev, dev, n, config, data.scratch)
    levels.small_level_arcs = small_arcs
    levels.start_search()
    return levels


def _top_down(indptr, indices, lo, frontier, visited, config, data=None, small_arcs=0):
    """A top-down step over a slice (one level of the device levels over it): host pairs
    and the entries read."""
    data = data or _service()
    frontier = np.ascontiguousarray(frontier, dtype=np.int64)
    total = int((indptr[frontier - lo + 1] - indptr[frontier - lo]).sum())
    levels = _levels_over(indptr, indices, lo, 64 * visited.size, config, data, small_arcs)
    levels.enter(0, True, visited, frontier)
    counts = levels.top_down(0, frontier.size, total)
    v, u = levels.found(0)
    return v.astype(np.int64), u.astype(np.int64), counts.examined


def _bottom_up(indptr, indices, lo, hi, visited, frontier_bits, config, data=None):
    """A bottom-up step over a slice, as :func:`_top_down`."""
    data = data or _service()
    levels = _levels_over(indptr, indices, lo, 64 * visited.size, config, data, 0)
    levels.enter(0, False, visited, frontier_bits)
    counts = levels.bottom_up(0)
    v, u = levels.found(0)
    return v.astype(np.int64), u.astype(np.int64), counts.examined


# --------------------------------------------------------------------------- kernel tests
@needs_gpu
@pytest.mark.parametrize(("name", "block_size"), _cases())
def test_top_down_matches_cpu_and_scipy(name, block_size):
    config = _config(block_size)
    data = _service()
    tasks = GRAPHS[name][2]
    for graph, depth, level, frontier_all, visited, _ in _scenarios(name):
        for lo, hi in _ranges(graph.num_vertices, tasks):
            frontier = frontier_all[(frontier_all >= lo) & (frontier_all < hi)]
            if frontier.size == 0:
                continue
            indptr, indices = _slice(graph, lo, hi)
            cv, cu, cedges = cpu.run_top_down(indptr, indices, lo, frontier, visited)
            # scipy: next-level vertices reached from this task's frontier.
            reached = {v for u in frontier.tolist() for v in graph.neighbors(u).tolist()}
            expected = {v for v in reached if depth[v] == level + 1}

            for small_arcs in (0, 1 << 16):  # the tiled kernels, then the one launch
                gv, gu, gedges = _top_down(indptr, indices, lo, frontier, visited, config,
                                           data=data, small_arcs=small_arcs)
                assert len(set(gv.tolist())) == gv.size, "a vertex reported twice"
                assert set(gv.tolist()) == set(cv.tolist()) == expected
                assert set(_pairs(gv, gu)) <= set(_pairs(cv, cu))
                _check_parents(graph, gv, gu, set(frontier.tolist()))
                assert gedges == cedges == int(graph.degrees()[frontier].sum())


@needs_gpu
@pytest.mark.parametrize(("name", "block_size"), _cases())
def test_bottom_up_matches_cpu_and_scipy(name, block_size):
    config = _config(block_size)
    data = _service()
    tasks = GRAPHS[name][2]
    for graph, depth, level, _, visited, frontier_bits in _scenarios(name):
        inward = graph.transpose()
        for lo, hi in _ranges(graph.num_vertices, tasks):
            indptr, indices = _slice(inward, lo, hi)
            cv, cu, cedges = cpu.run_bottom_up(indptr, indices, lo, hi, visited, frontier_bits)
            gv, gu, gedges = _bottom_up(indptr, indices, lo, hi, visited, frontier_bits, config,
                                        data=data)
            assert _pairs(gv, gu) == _pairs(cv, cu)  # same first parent as the CPU
            assert gedges == cedges
            own = np.arange(lo, hi)
            assert set(gv.tolist()) == set(own[depth[lo:hi] == level + 1].tolist())


@needs_gpu
def test_hub_split_across_blocks():
    """A hub of 600 neighbours against 32-thread blocks: top-down tiles and the
    bottom-up block stage must both cover its whole adjacency."""
    n = 601
    graph = Graph.from_edges(np.zeros(n - 1, dtype=np.int64), np.arange(1, n))
    config = _config(32)
    visited = bitmap_from_vertices([0], n)
    gv, gu, edges = _top_down(graph.indptr, graph.indices, 0, np.array([0]), visited, config)
    assert sorted(gv.tolist()) == list(range(1, n)) and set(gu.tolist()) == {0}
    assert edges == n - 1
    # Bottom-up from leaf 600 (the hub's last in-neighbour): the hub scans all 600.
    gv, gu, edges = _bottom_up(graph.indptr, graph.indices, 0, n, bitmap_from_vertices([600], n),
                               bitmap_from_vertices([600], n), config)
    assert gv.tolist() == [0] and gu.tolist() == [600]
    cv, cu, cedges = cpu.run_bottom_up(graph.indptr, graph.indices, 0, n,
                                       bitmap_from_vertices([600], n),
                                       bitmap_from_vertices([600], n))
    assert edges == cedges == (n - 1) + (n - 2)  # hub: 600 edges; other leaves: 1 each


@needs_gpu
def test_empty_frontier_and_bad_input():
    from taskbfs.kernels.gpu import check_slice, launch_config

    graph = _path(6)
    indptr, indices = _slice(graph, 2, 4)
    found, _, examined = _top_down(indptr, indices, 2, np.empty(0, np.int64),
                                   bitmap_from_vertices([], 6), _config(32))
    assert (found.size, examined) == (0, 0)
    with pytest.raises(InvalidParameterError):
        launch_config(block_size=48)
    with pytest.raises(InvalidParameterError, match=r"task range \[0, 3\) with 2 indptr"):
        check_slice(np.array([0, 1]), 0, 3, 6)
    check_slice(indptr, 2, 4, 6)


@needs_gpu
def test_launch_config_from_device():
    from taskbfs.kernels.gpu import DEFAULT_BLOCK_SIZE, launch_config

    config = launch_config()
    assert config.block_size in (DEFAULT_BLOCK_SIZE, 32)
    assert config.grid_size >= config.sm_count >= 1
    assert config.block_size % config.warp_size == 0 or config.simulated
    assert config.blocks_for(1) == 1
    assert config.blocks_for(10**12) == config.grid_size


# --------------------------------------------------------------------------- levels on the device
def _device_levels(graph, block_size):
    """A :class:`DeviceLevels` over the whole ``graph`` (one task), its slices and scratch in
    a device-data service."""
    from taskbfs.kernels.gpu import DeviceSlice
    from taskbfs.kernels.gpu_levels import DeviceLevels

    config = _config(block_size)
    data = _service()
    n = graph.num_vertices

    def whole(g, name):
        indptr = data.fetch((name, "indptr"), g.indptr)[0]
        return DeviceSlice(0, n, n, indptr, data.fetch((name, "indices"), g.indices)[0], g.indptr)

    out = whole(graph, "out")
    inward = whole(graph.transpose(), "in") if graph.directed else out
    return DeviceLevels(out, inward, n, config, data.scratch)


def _level_beside_cpu(levels, graph, level, top_down, frontier, visited, frontier_bits):
    """Level ``level`` on the device levels and the CPU step's ``(vertices, parents,
    edges examined)`` on the same inputs: ``(device counts, cpu outputs)``."""
    if top_down:
        counts = levels.top_down(level, frontier.size, int(graph.degrees()[frontier].sum()))
        return counts, cpu.run_top_down(graph.indptr, graph.indices, 0, frontier, visited)
    inward = graph.transpose()
    return levels.bottom_up(level), cpu.run_bottom_up(inward.indptr, inward.indices, 0,
                                                      graph.num_vertices, visited, frontier_bits)


@needs_gpu
@pytest.mark.parametrize(("name", "block_size"), _cases())
def test_device_levels_enter_from_the_reached_pairs(name, block_size):
    """A search's first entry from the pairs its host steps found (``enter_reached``):
    the result holds exactly those pairs (a vertex named twice keeps one of its equal-
    distance parents), every other vertex is -1, and the level that follows finds what the
    CPU step finds, top-down from the frontier as a queue and bottom-up from it as bits
    (ids named twice)."""
    from taskbfs.kernels.bitmap import bitmap_from_vertices

    for graph, depth, level, frontier, visited, frontier_bits in _scenarios(name):
        n = graph.num_vertices
        seen = np.flatnonzero((depth >= 0) & (depth <= level))
        # stored as given: the parent column need not be a BFS tree for this check
        pairs = np.stack([seen, (seen * 7 + 3) % n, depth[seen]]).astype(np.int32)
        twice = np.concatenate([pairs, pairs[:, : seen.size // 2]], axis=1)
        expected = np.flatnonzero(depth == level + 1)
        for top_down in (True, False):
            levels = _device_levels(graph, block_size)
            ids = frontier if top_down else np.concatenate([frontier, frontier[:2]])
            if twice.size + ids.size > levels.entry_capacity:  # a larger one is refused
                with pytest.raises(ValueError, match="enter"):
                    levels.enter_reached(level, top_down, twice, ids.astype(np.int32))
                levels.entry_capacity = twice.size + ids.size  # to check the kernels
                levels.entry = levels._workspace("levels_entry", levels.entry_capacity,
                                                 levels.dtype)
                levels._host_entry = np.zeros(levels.entry_capacity, levels.dtype)
            moved = levels.enter_reached(level, top_down, twice, ids.astype(np.int32))
            assert moved == (twice.size + ids.size) * 4
            parents = levels.parents.copy_to_host()[:n]
            distances = levels.distances.copy_to_host()[:n]
            np.testing.assert_array_equal(parents[seen], pairs[1])
            np.testing.assert_array_equal(distances[seen], pairs[2])
            others = np.setdiff1d(np.arange(n), seen)
            assert (parents[others] == -1).all() and (distances[others] == -1).all()
            counts, (_, _, cedges) = _level_beside_cpu(levels, graph, level, top_down, frontier,
                                                       visited, frontier_bits)
            assert counts.examined == cedges and counts.found == expected.size
            distances = levels.distances.copy_to_host()[:n]
            np.testing.assert_array_equal(np.flatnonzero(distances == level + 1), expected)
            after = bitmap_from_vertices(np.flatnonzero((depth >= 0) & (depth <= level + 1)), n)
            np.testing.assert_array_equal(levels.leave(level + 1, True, counts.found)[0], after)


@needs_gpu
@pytest.mark.parametrize("small_arcs", [0, 1 << 16], ids=["tiled", "small"])
@pytest.mark.parametrize(("name", "block_size"), _cases())
def test_device_levels_match_the_cpu_steps(name, block_size, small_arcs):
    """One level on the device (``kernels/gpu_levels.py``), entered from the host's visited
    bitmap and frontier: top-down (by the tiled kernels, and by the one-launch kernel of a
    small level: ``small_level_arcs``), the vertices of the next level each once with a
    frontier parent (``atomicCAS`` on the result), bottom-up the CPU step's exact pairs;
    both count the entries read as the CPU does and the new vertices' out-arcs; the visited
    vertices are -2 in the result; leaving gives back the visited set with the new
    vertices and the next frontier (as vertices, or bits after :meth:`convert`)."""
    from taskbfs.kernels.assembly import result_dtype
    from taskbfs.kernels.bitmap import bitmap_from_vertices

    for graph, depth, level, frontier, visited, frontier_bits in _scenarios(name):
        n = graph.num_vertices
        expected = np.flatnonzero(depth == level + 1)
        out_degrees = graph.degrees()
        after = bitmap_from_vertices(np.flatnonzero((depth >= 0) & (depth <= level + 1)), n)
        for top_down in (True, False):
            levels = _device_levels(graph, block_size)
            levels.small_level_arcs = small_arcs
            assert levels.dtype == result_dtype(n) == np.int32
            levels.enter(level, top_down, visited, frontier if top_down else frontier_bits)
            parents = levels.parents.copy_to_host()[:n]
            seen = (depth >= 0) & (depth <= level)
            assert (parents[seen] == -2).all() and (parents[~seen] == -1).all()
            counts, (cv, cu, cedges) = _level_beside_cpu(levels, graph, level, top_down,
                                                         frontier, visited, frontier_bits)
            assert counts.examined == cedges
            assert counts.found == expected.size
            assert counts.next_edges == int(out_degrees[expected].sum())
            distances = levels.distances.copy_to_host()[:n]
            parents = levels.parents.copy_to_host()[:n]
            found = np.flatnonzero(distances == level + 1)
            np.testing.assert_array_equal(found, expected)
            if top_down:
                _check_parents(graph, found, parents[found], set(frontier.tolist()))
            else:
                assert _pairs(found, parents[found]) == _pairs(cv, cu)
            if counts.found and top_down:  # the queue as bits, and back
                levels.convert(level + 1, False, counts.found)
                levels.convert(level + 1, True, counts.found)
            elif counts.found:
                levels.convert(level + 1, True, counts.found)
            seen_now, nxt, _ = levels.leave(level + 1, True, counts.found)
            np.testing.assert_array_equal(seen_now, after)
            if counts.found:  # the state leaves with its frontier as bits too
                levels.convert(level + 1, False, counts.found)
                seen_bits, bits, moved = levels.leave(level + 1, False, counts.found)
                np.testing.assert_array_equal(seen_bits, after)
                np.testing.assert_array_equal(bits, bitmap_from_vertices(expected, n))
                assert moved == after.nbytes + bits.nbytes
                levels.convert(level + 1, True, counts.found)
            assert sorted(nxt.tolist()) == expected.tolist()


@needs_gpu
@pytest.mark.parametrize(("name", "block_size"), _cases())
def test_device_levels_count_each_tasks_found_vertices(name, block_size):
    """With several tasks, a level's counts per task (``task_counts``: its found vertices
    and their out-arcs) and its totals are numpy's over the reference levels, top-down and
    bottom-up, with a few tasks and with more tasks than vertices (many of them empty)."""
    for graph, depth, level, frontier, visited, frontier_bits in _scenarios(name):
        n = graph.num_vertices
        expected = np.flatnonzero(depth == level + 1)
        degrees = graph.degrees()
        for tasks in (3, n + 7):
            bounds = np.linspace(0, n, tasks + 1).astype(np.int64)
            owner = np.searchsorted(bounds, expected, side="right") - 1
            want_found = np.bincount(owner, minlength=tasks)
            want_arcs = np.bincount(owner, weights=degrees[expected], minlength=tasks)
            for top_down in (True, False):
                levels = _device_levels(graph, block_size)
                levels.set_tasks(bounds)
                levels.enter(level, top_down, visited, frontier if top_down else frontier_bits)
                if top_down:
                    levels.top_down(level, frontier.size, int(degrees[frontier].sum()),
                                    read=False)
                else:
                    levels.bottom_up(level, read=False)
                totals, per_task = levels.task_counts(level)
                assert totals.found == expected.size
                assert totals.next_edges == int(degrees[expected].sum())
                np.testing.assert_array_equal(per_task[0], want_found)
                np.testing.assert_array_equal(per_task[1], want_arcs.astype(np.int64))


@needs_gpu
@pytest.mark.parametrize("block_size", BLOCK_SIZES[:2])
def test_an_owner_takes_every_owners_found_vertices(block_size):
    """``take_reached`` on each of two owners (ranges not word-aligned; one task or several
    each; or every other task, another owner's between them): every found vertex is
    reached at the level's distance, parent -2 where not claimed here; the owner's own
    found vertices are queued and counted per task with their out-arcs (numpy's), other
    owners' tasks not at all, the next level's counts zeroed and its bitmap cleared;
    ``claims_to_bits`` sets the vertices a level queued."""
    from numba import cuda

    from taskbfs.kernels._gpu_owner import owner_kernels

    for graph, depth, level, _, _, _ in _scenarios("skewed"):
        n = graph.num_vertices
        degrees = graph.degrees()
        found = np.flatnonzero(depth == level + 1)
        if not found.size:
            continue
        bits = bitmap_from_vertices(found, n)
        split = n // 2 + 3
        for bounds in (np.array([0, split, n]), np.linspace(0, n, 6).astype(np.int64)):
            tasks = bounds.size - 1
            k = owner_kernels(block_size, "int32")
            cut = int(np.searchsorted(bounds, split, side="right") - 1)  # first task of B
            owned = [np.arange(cut), np.arange(cut, tasks)]
            if tasks > 2:  # every other task: the other owner's between this one's
                owned += [np.arange(0, tasks, 2), np.arange(1, tasks, 2)]
            for mine_tasks in owned:
                lo, hi = int(bounds[mine_tasks[0]]), int(bounds[mine_tasks[-1] + 1])
                own = np.zeros(tasks, np.uint8)
                own[mine_tasks] = 1
                parents = np.full(n, -1, np.int32)
                claimed = found[::3]  # claimed here this level: parent and distance set
                parents[claimed], parents[depth <= level] = 0, 0
                distances = np.where(parents >= 0, level + 1, -1).astype(np.int32)
                distances[depth <= level] = depth[depth <= level]
                rows = cuda.to_device(np.zeros(3 * tasks + 4, np.int64))
                next_rows = cuda.to_device(np.ones(3 * tasks + 4, np.int64))
                old_bits = cuda.to_device(np.full_like(bits, 7))  # the level's frontier
                next_row = cuda.to_device(np.ones(4, np.int64))
                d_parents, d_distances = cuda.to_device(parents), cuda.to_device(distances)
                queue, tail = cuda.to_device(np.zeros(n, np.int32)), cuda.to_device(np.zeros(1, np.int64))
                indptr = np.ascontiguousarray(graph.indptr[lo : hi + 1] - graph.indptr[lo])
                k.take_reached[2, block_size](
                    cuda.to_device(bits), bits.size, cuda.to_device(indptr.astype(np.int64)), lo,
                    hi, level + 1, d_parents, d_distances, queue, tail,
                    cuda.to_device(bounds.astype(np.int64)), tasks, cuda.to_device(own), rows,
                    next_rows, old_bits, next_row)
                got_p, got_d = d_parents.copy_to_host(), d_distances.copy_to_host()
                others = np.setdiff1d(found, claimed)
                assert (got_p[others] == -2).all() and (got_p[claimed] == 0).all()
                assert (got_d[found] == level + 1).all()
                mine = found[own[np.searchsorted(bounds, found, side="right") - 1] == 1]
                count = int(tail.copy_to_host()[0])
                np.testing.assert_array_equal(np.sort(queue.copy_to_host()[:count]), mine)
                owner = np.searchsorted(bounds, mine, side="right") - 1
                per_task = rows.copy_to_host()[: 2 * tasks].reshape(2, tasks)
                np.testing.assert_array_equal(per_task[0], np.bincount(owner, minlength=tasks))
                np.testing.assert_array_equal(
                    per_task[1], np.bincount(owner, weights=degrees[mine], minlength=tasks))
                assert not next_rows.copy_to_host().any() and not next_row.copy_to_host().any()
                assert not old_bits.copy_to_host().any()
            # the claims a level queued, as bits
            queued = cuda.to_device(found.astype(np.int32))
            row = cuda.to_device(np.array([found.size, 0, 0, 0], np.int64))
            out = cuda.to_device(np.zeros_like(bits))
            k.claims_to_bits[2, block_size](queued, row, out)
            np.testing.assert_array_equal(out.copy_to_host(), bits)


# --------------------------------------------------------------------------- launches
def test_a_launch_parameter_is_the_word_that_holds_its_bytes():
    """The scalars a CuPy launch passes in 8-byte slots (numba's ABI): a boolean as one
    byte, integers as two's complement of their width, floats as their IEEE bytes; the
    driver reads a narrower one from the slot's low bytes (little-endian)."""
    import struct

    from numba import types

    from taskbfs.kernels._gpu_launch import _parameters

    def word(value):
        return _parameters(value, None)

    assert word(True) == (types.boolean, [1]) and word(np.bool_(False)) == (types.boolean, [0])
    assert word(-3) == (types.int64, [(1 << 64) - 3])
    assert word(np.int32(-7)) == (types.int32, [(1 << 32) - 7])
    assert word(np.uint64(0xFFFF_FFFF_FFFF_FFFF)) == (types.uint64, [(1 << 64) - 1])
    assert word(0.5)[1] == [int.from_bytes(struct.pack("<d", 0.5), "little")]
    assert word(np.float32(0.25)) == (types.float32, [int.from_bytes(struct.pack("<f", 0.25),
                                                                      "little")])
    for value in (True, -3, np.int32(-7), 0.5, np.float32(0.25)):  # each fits its slot
        np.array(word(value)[1], dtype=np.uint64)


@needs_gpu
def test_a_kernel_launched_by_cupy_is_the_kernel_numba_launches():
    """The same numba kernel run by numba's launch and through CuPy (its PTX, numba's
    argument ABI: 1-D and 2-D arrays, a strided view, signed and unsigned integers of 32
    and 64 bits, negative ones too, a double and a float, a boolean) writes the same
    values; under the simulator, or without CuPy, the kernel is numba's own."""
    from numba import config as numba_config
    from numba import cuda

    from taskbfs.kernels._gpu_launch import CupyLaunchedKernel, launched_by_cupy

    @cuda.jit
    def mix(out, table, every_other, shift, mask, scale, negate):
        i = cuda.grid(1)
        if i < out.size:
            value = table[i % table.shape[0], i % table.shape[1]] + every_other[i] + shift
            value = (value & mask) * scale
            out[i] = -value if negate else value

    launched = launched_by_cupy(mix)
    cupy_there = importlib.util.find_spec("cupy") is not None
    if numba_config.ENABLE_CUDASIM or not cupy_there:
        assert launched is mix
        return
    assert isinstance(launched, CupyLaunchedKernel)
    table = cuda.to_device(np.arange(12, dtype=np.int64).reshape(3, 4))
    every_other = cuda.to_device(np.arange(200, dtype=np.int64))[::2]
    for shift, scale, negate in ((-3, 0.5, False), (np.int32(5), 0.5, True),
                                 (np.int32(-7), np.float32(0.25), False), (-3, 0.5, True)):
        # fresh output arrays each round: parameters kept for an array die with it
        by_numba = cuda.to_device(np.zeros(100, dtype=np.float64))
        by_cupy = cuda.to_device(np.ones(100, dtype=np.float64))
        args = (table, every_other, shift, np.uint64(0xFF), scale, negate)
        mix[1, 128](by_numba, *args)
        launched[1, 128](by_cupy, *args)
        np.testing.assert_array_equal(by_cupy.copy_to_host(), by_numba.copy_to_host())
    with pytest.raises(TypeError, match="device arrays"):
        launched[1, 128](np.zeros(100), *args)
