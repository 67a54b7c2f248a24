"""taskbfs.search against independent references (scipy, a naive BFS) on many graph shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import naive_bfs, scipy_distances
from shapes import path, shapes

import taskbfs as tb

SHAPES = {s.name: s for s in shapes()}
TASK_COUNTS = (1, 2, 3, 7, 64, "n")
# Very deep shapes cost one scheduler round trip per level; test them on fewer settings.
DEEP = {name for name, s in SHAPES.items() if s.num_vertices >= 1000 and name.startswith("path")}
DISPATCHED_LEVELS = 300


def build(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices,
                               directed=shape.directed)


def resolve_tasks(t, graph):
    """T as the issue lists it; 64 on a graph of fewer vertices is left to bfs to clamp."""
    return graph.num_vertices if t == "n" else t


def check_result(graph, shape, source, result):
    expected = naive_bfs(shape.src, shape.dst, shape.num_vertices, source, shape.directed)
    np.testing.assert_array_equal(result.distances, expected)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents)
    assert result.parents[source] == source
    # the search's own count against Graph500's, from the parents
    assert result.traversed_edges == tb.traversed_edges(graph, result.parents)


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
@pytest.mark.parametrize("tasks", TASK_COUNTS)
@pytest.mark.parametrize("name", sorted(set(SHAPES) - DEEP))
def test_distances_match_references(runtime, name, tasks, dispatch):
    shape = SHAPES[name]
    graph = build(shape)
    source = shape.sources[0]
    result = tb.bfs(graph, source, tasks=resolve_tasks(tasks, graph), runtime=runtime,
                    dispatch=dispatch)
    check_result(graph, shape, source, result)


@pytest.mark.parametrize("name", sorted(set(SHAPES) - DEEP))
def test_every_suggested_source(runtime, name):
    shape = SHAPES[name]
    graph = build(shape)
    for source in shape.sources:
        result = tb.bfs(graph, source, tasks=min(3, graph.num_vertices), runtime=runtime)
        check_result(graph, shape, source, result)


@pytest.mark.parametrize("name", sorted(DEEP))
@pytest.mark.parametrize("tasks, where, dispatch", [(1, "first", "tasks"), (7, "last", "tasks"),
                                                    ("n", "middle", "tasks"), (7, "last", "auto"),
                                                    ("n", "middle", "auto")])
def test_deep_paths(runtime, name, tasks, where, dispatch):
    """A path is one level per vertex: thousands of levels, one frontier vertex each
    (dispatched as tasks, or included in the search's one task). Dispatched, each level is
    a round of Dask tasks (~13 ms on 2 loaded cores), so those searches walk a shorter
    path, DISPATCHED_LEVELS levels from the source: the same code, and still past 255
    levels."""
    shape = SHAPES[name]
    if dispatch == "tasks":
        shape = path(DISPATCHED_LEVELS * (2 if where == "middle" else 1))
    graph = build(shape)
    source = {"first": 0, "middle": shape.num_vertices // 2, "last": shape.num_vertices - 1}[where]
    result = tb.bfs(graph, source, tasks=resolve_tasks(tasks, graph), runtime=runtime,
                    dispatch=dispatch)
    check_result(graph, shape, source, result)
    assert result.num_levels == max(source, shape.num_vertices - 1 - source) + 1


@pytest.mark.parametrize("direction", ["top-down", "bottom-up", "auto"])
@pytest.mark.parametrize("prefix", ["grid", "directed_dag", "components", "kronecker_like",
                                    "star", "complete", "directed_cycle", "random_directed"])
def test_directions_agree(runtime, prefix, direction):
    shape = next(s for name, s in sorted(SHAPES.items()) if name.startswith(prefix))
    graph = build(shape)
    for source in shape.sources[:2]:
        result = tb.bfs(graph, source, tasks=5 if graph.num_vertices >= 5 else 1,
                        direction=direction, runtime=runtime)
        check_result(graph, shape, source, result)


@pytest.mark.parametrize("scale", [8, 10, 12, 14, 16])
def test_kronecker_scales(runtime, scale):
    graph = tb.kronecker(scale, edgefactor=16, seed=scale)
    src, dst = tb.kronecker_edges(scale, edgefactor=16, seed=scale)
    for source in tb.search_keys(graph, 2, seed=3):
        result = tb.bfs(graph, int(source), tasks=8, runtime=runtime)
        np.testing.assert_array_equal(result.distances, scipy_distances(graph, int(source)))
        if scale <= 12:
            expected = naive_bfs(src, dst, graph.num_vertices, int(source), False)
            np.testing.assert_array_equal(result.distances, expected)
        tb.validate(graph, int(source), result.parents)
        assert result.traversed_edges == tb.traversed_edges(graph, result.parents)
        assert result.teps > 0


@pytest.fixture(scope="module")
def cpu_runtime(runtime):
    """A cluster without GPU workers: the default one, or on a GPU machine a CPU-only one."""
    if not runtime.has_gpu:
        yield runtime
        return
    with tb.Runtime(gpus=0, dashboard_address=None) as rt:
        yield rt


@pytest.mark.parametrize("strategy", ["hybrid", "fixed", "cpu"])
def test_strategies_on_a_cpu_cluster(cpu_runtime, strategy):
    graph = tb.kronecker(10, seed=4)
    result = tb.bfs(graph, 0, tasks=16, strategy=strategy, lam=10, runtime=cpu_runtime)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))
    assert set(result.trace["device"]) == {"smp"}  # no GPU worker: everything on the CPU


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_graphs(runtime, data):
    n = data.draw(st.integers(1, 40), label="n")
    m = data.draw(st.integers(0, 120), label="m")
    directed = data.draw(st.booleans(), label="directed")
    src = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int64)
    dst = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int64)
    graph = tb.Graph.from_edges(src, dst, num_vertices=n, directed=directed)
    source = data.draw(st.integers(0, n - 1), label="source")
    tasks = data.draw(st.integers(1, n), label="tasks")
    direction = data.draw(st.sampled_from(["auto", "top-down", "bottom-up"]), label="direction")
    dispatch = data.draw(st.sampled_from(["auto", "tasks"]), label="dispatch")
    result = tb.bfs(graph, source, tasks=tasks, direction=direction, runtime=runtime,
                    dispatch=dispatch)
    np.testing.assert_array_equal(result.distances, naive_bfs(src, dst, n, source, directed))
    tb.validate(graph, source, result.parents)


def test_trace_and_levels_describe_the_run(runtime):
    graph = tb.kronecker(11, seed=2)
    source = int(tb.search_keys(graph, 1, seed=1)[0])
    # cpu: on a GPU machine hybrid would run every level inside one task on the GPU worker
    result = tb.bfs(graph, source, tasks=6, direction="top-down", runtime=runtime, strategy="cpu")
    levels = result.levels
    assert list(levels["level"]) == list(range(result.num_levels - 1 + 1))[: len(levels)]
    # frontier of level L = vertices at distance L (an independent count)
    for row in levels.itertuples():
        assert row.frontier_size == np.count_nonzero(result.distances == row.level)
        assert row.discovered == np.count_nonzero(result.distances == row.level + 1)
    # top-down examines exactly the frontier's edges
    degrees = graph.degrees()
    for row in levels.itertuples():
        assert row.edges_examined == degrees[result.distances == row.level].sum()
    trace = result.trace
    assert {"level", "task", "lo", "hi", "device", "worker", "thread", "start", "stop"} <= set(trace)
    assert (trace["stop"] >= trace["start"]).all()
    assert (trace["start"] >= 0).all()
    # one task per range with a non-empty frontier, per level
    for level, tasks in trace.groupby("level"):
        frontier = np.flatnonzero(result.distances == level)
        parts = tb.partition(graph, 6)
        expected = sorted(set(parts.owner(frontier).tolist()))
        assert sorted(tasks["task"]) == expected
    assert result.placements and all(p["device"] == "smp" for p in result.placements)
    assert result.elapsed > 0 and result.mteps > 0


def test_partitions_are_placed_once_and_reused(runtime):
    from taskbfs.placed.placement import _placed

    graph = tb.kronecker(9, seed=7)
    tb.bfs(graph, 0, tasks=4, runtime=runtime)
    placed = _placed[runtime]
    keys_before = {k: [f.key for f in v.slices] for k, v in placed.items() if k[0] == graph.token}
    tb.bfs(graph, 1, tasks=4, runtime=runtime)
    keys_after = {k: [f.key for f in v.slices] for k, v in placed.items() if k[0] == graph.token}
    assert keys_before and keys_before == keys_after


def test_runs_across_worker_processes():
    """Frontiers, partitions and state crossing process boundaries (serialised, not shared)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        graph = tb.kronecker(10, seed=5)
        for direction in ("auto", "top-down"):
            result = tb.bfs(graph, 3, tasks=5, runtime=client, direction=direction)
            np.testing.assert_array_equal(result.distances, scipy_distances(graph, 3))
            tb.validate(graph, 3, result.parents)
        assert result.trace["worker"].nunique() >= 1


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"source": 99}, tb.InvalidVertexError, "source"),
        ({"source": -1}, tb.InvalidVertexError, "source"),
        ({"source": 1.5}, tb.InvalidVertexError, "source"),
        ({"tasks": 0}, tb.InvalidParameterError, "tasks"),
        ({"tasks": 2.5}, tb.InvalidParameterError, "tasks"),
        ({"lam": -1}, tb.InvalidParameterError, "λ"),
        ({"lam": float("nan")}, tb.InvalidParameterError, "λ"),
        ({"strategy": "quantum"}, tb.InvalidParameterError, "strategy"),
        ({"direction": "sideways"}, tb.InvalidParameterError, "direction"),
        ({"dispatch": "sometimes"}, tb.InvalidParameterError, "dispatch"),
        ({"strategy": "gpu"}, tb.DeviceUnavailableError, "GPU"),
    ],
)
def test_bad_input_is_a_clear_error(cpu_runtime, kwargs, error, words):
    graph = tb.Graph.from_edges(np.arange(9), np.arange(1, 10))
    args = {"source": 0, "runtime": cpu_runtime, **kwargs}
    with pytest.raises(error, match=words):
        tb.bfs(graph, **args)


def test_more_tasks_than_vertices_runs_one_task_per_vertex(runtime):
    shape = SHAPES["duplicate_edges"]
    graph = build(shape)
    result = tb.bfs(graph, 0, tasks=64, runtime=runtime)
    assert result.num_tasks == graph.num_vertices
    check_result(graph, shape, 0, result)


def test_not_a_graph():
    with pytest.raises(tb.InvalidParameterError, match="Graph"):
        tb.bfs([[0, 1]], 0)


def test_elapsed_is_the_whole_call(runtime, monkeypatch):
    """``r.elapsed`` runs from the call's entry: work before the first submission (here a
    slow placement of the graph) counts, and ``teps`` divides by it."""
    import time

    from taskbfs.search import core

    real = core.place_graph

    def slow_place_graph(*args, **kwargs):
        time.sleep(0.2)
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "place_graph", slow_place_graph)
    shape = SHAPES["grid_40x40"]
    graph = build(shape)
    before = time.perf_counter()
    result = tb.bfs(graph, shape.sources[0], tasks=2, runtime=runtime)
    wall = time.perf_counter() - before
    assert 0.2 <= result.elapsed <= wall
    assert result.search_seconds <= result.elapsed - 0.15
    assert result.teps == pytest.approx(result.traversed_edges / result.elapsed)


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_results_are_int32_below_two_to_the_31_vertices(runtime, dispatch):
    """Distances and parents come back as int32 when every vertex id fits (half the bytes
    of int64 to write, copy and keep), whichever way the search ran; int64 beyond."""
    from taskbfs.kernels.assembly import result_dtype

    g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    r = tb.bfs(g, 0, tasks=2, strategy="cpu", runtime=runtime, dispatch=dispatch)
    assert r.distances.dtype == r.parents.dtype == np.int32
    assert r.distances.tolist() == [0, 1, 2, 3] and r.parents.tolist() == [0, 0, 1, 2]
    assert result_dtype(2**31 - 1) == np.int32 and result_dtype(2**31) == np.int64


def test_a_dropped_result_is_freed_at_once(runtime):
    """Nothing keeps a result alive once the caller drops it (no reference cycle waits for
    the garbage collector): its arrays, which may be page-locked buffers lent by a GPU
    worker's pool, go back at once. Its tables still build when read."""
    import gc
    import weakref

    g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    r = tb.bfs(g, 0, tasks=2, strategy="cpu", runtime=runtime)
    assert r.levels["level"].tolist() == [0, 1, 2, 3]
    gc.disable()
    try:
        r = tb.bfs(g, 0, tasks=2, strategy="cpu", runtime=runtime)
        dropped = weakref.ref(r)
        del r
        assert dropped() is None
    finally:
        gc.enable()
