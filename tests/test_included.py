"""A search run as one task with its steps and barriers included (taskbfs.search.included)
against the same search dispatched as tasks, and against the independent references, on
many graph shapes; the runtime's rule for where a program can be included; the summary
messages such a task sends."""

from __future__ import annotations

import numpy as np
import pytest
from reference import naive_bfs, scipy_distances
from shapes import directed_cycle, path, shapes

import taskbfs as tb
from taskbfs.runtime import Policy, Runtime
from taskbfs.search import state
from taskbfs.search.state import TOP_DOWN, LevelSummary, SummaryPublisher

SHAPES = {s.name: s for s in shapes()}
SHAPES["path_50"] = path(50)  # deep, short enough to run every level as tasks too
SHAPES.pop("path_3000")
SHAPES["directed_cycle_30"] = directed_cycle(30)  # still wraps round 4 tasks, in 30 levels
SHAPES.pop("directed_cycle_100")  # (its 100 levels as tasks: this file's slowest cases)
LEVEL_COLUMNS = ["level", "direction", "frontier_size", "frontier_edges", "edges_examined",
                 "discovered", "tasks", "tasks_cpu", "tasks_gpu"]
TRACE_COLUMNS = ["level", "task", "lo", "hi", "direction", "size", "edges_examined", "found",
                 "device"]


def build(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices,
                               directed=shape.directed)


def check(graph, shape, source, result):
    expected = naive_bfs(shape.src, shape.dst, shape.num_vertices, source, shape.directed)
    np.testing.assert_array_equal(result.distances, expected)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents)
    assert result.traversed_edges == tb.traversed_edges(graph, result.parents)


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
@pytest.mark.parametrize("prefix", ["path", "star", "grid", "components", "isolated", "self_loops",
                                    "duplicate", "directed_dag", "directed_cycle", "random_directed",
                                    "kronecker_like", "binary_tree", "single_vertex"])
def test_included_and_dispatched_searches_agree(runtime, prefix, direction):
    """The same search, level table and trace (but the ``included`` column) whether the
    steps and barriers are included in one task or dispatched as tasks (a directed
    graph's bottom-up steps read the transposed slices)."""
    shape = next(s for name, s in sorted(SHAPES.items()) if name.startswith(prefix))
    graph = build(shape)
    turned = False
    for tasks in (1, min(4, graph.num_vertices)):
        for source in shape.sources[:2]:
            # cpu: on a GPU machine hybrid's one task runs on the GPU worker
            run = {"tasks": tasks, "direction": direction, "runtime": runtime, "strategy": "cpu"}
            inside = tb.bfs(graph, source, dispatch="auto", **run)
            apart = tb.bfs(graph, source, dispatch="tasks", **run)
            check(graph, shape, source, inside)
            np.testing.assert_array_equal(inside.distances, apart.distances)
            assert inside.traversed_edges == apart.traversed_edges
            assert inside.levels[LEVEL_COLUMNS].equals(apart.levels[LEVEL_COLUMNS])
            assert inside.trace[TRACE_COLUMNS].equals(apart.trace[TRACE_COLUMNS])
            assert not apart.trace["included"].any()
            assert inside.trace["included"].all()
            turned |= bool((inside.levels["direction"] == "bottom-up").any())
    if direction == "auto" and prefix in ("grid", "kronecker_like", "star", "binary_tree"):
        assert turned  # the rule turned both loops bottom-up, at the same levels


def test_a_deep_search_is_one_task_that_writes_the_result(runtime):
    shape = next(s for s in shapes() if s.name.startswith("path"))  # 3000 levels
    graph = build(shape)
    result = tb.bfs(graph, 0, tasks=3, runtime=runtime, direction="top-down", strategy="cpu")
    check(graph, shape, 0, result)
    # one step per level, the last one finding nothing
    assert result.trace["included"].all() and len(result.trace) == graph.num_vertices
    assert result.num_levels == len(result.levels) == graph.num_vertices
    assert result.assembly_seconds > 0  # the included assembly, traced under the result's name
    assert (result.levels["barrier_worker"].notna()).all()  # each level's included barrier
    assert [p["key"].split("-")[0] for p in result.placements] == ["bfs_search"]  # one task placed


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_progress_sees_the_last_level(runtime, dispatch):
    """``progress`` gets summaries as the search goes: every level's when dispatched (level
    0 too), the latest at most every ``state._SUMMARY_INTERVAL`` when the search is
    one task; the last (empty frontier) always."""
    graph = build(SHAPES["grid_40x40"])
    seen = []
    result = tb.bfs(graph, 0, tasks=2, runtime=runtime, strategy="cpu", dispatch=dispatch,
                    progress=seen.append)
    assert seen and seen[-1].frontier_size == 0
    assert [s.level for s in seen] == sorted({s.level for s in seen})
    if dispatch == "tasks":
        assert [s.level for s in seen] == list(range(result.num_levels + 1))


class _Cluster(Runtime):
    """A Runtime with a made-up cluster (no client): ``holds_together`` and ``resources``."""

    def __init__(self, together: bool, gpus: int):
        self._together, self._gpus = together, gpus

    def holds_together(self, futures, timeout=None) -> bool:
        return self._together

    def resources(self, timeout=None) -> dict:
        return {"CPU": 2, "GPU": self._gpus, "workers": 1 + self._gpus}


@pytest.mark.parametrize("together, gpus, policy, expected", [
    (False, 0, Policy("cpu"), None),  # no one worker holds the data: dispatch
    (True, 0, Policy("hybrid"), "smp"),  # no GPU: the CPU worker includes every step
    (True, 1, Policy("cpu"), "smp"),  # a policy that never picks the GPU
    (True, 1, Policy("fixed", gpu_tasks=frozenset()), "smp"),
    (True, 1, Policy("hybrid", lam=5), "cuda"),  # the one GPU worker, steps by λ there
    (True, 1, Policy("gpu"), "cuda"),
    (True, 1, Policy("fixed", gpu_tasks=frozenset({0})), "cuda"),
    (True, 2, Policy("hybrid"), None),  # several GPU workers: dispatch, to use them all
    (False, 1, Policy("gpu"), None),
])
def test_where_a_program_can_be_included(together, gpus, policy, expected):
    assert _Cluster(together, gpus).include_site([], policy) == expected


def _summary(level: int, frontier_size: int = 1) -> LevelSummary:
    return LevelSummary(level=level, direction=TOP_DOWN, frontier_counts=np.array([1, 0]),
                        frontier_size=frontier_size, frontier_edges=2)


def test_summaries_are_sent_at_most_every_interval_the_last_at_once(monkeypatch):
    """None before the first interval has passed; then the latest at most once per
    interval; the last at once when one went before it; a search shorter than the
    interval sends none unless a client waits for its summaries (``progress``)."""
    sent = []
    monkeypatch.setattr(state, "publish", lambda message: sent.append(message))
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 3600.0)
    short = SummaryPublisher()
    for level in range(3):
        short.add(_summary(level))
    short.add(_summary(3, frontier_size=0))
    assert sent == []  # a short search no one waits on: its summaries come back with it
    waited = SummaryPublisher(waited=True)
    waited.add(_summary(0))
    waited.add(_summary(1, frontier_size=0))
    assert [m["summaries"][0]["level"] for m in sent] == [1]  # progress gets the last
    sent.clear()
    publisher = SummaryPublisher()
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 0.0)
    publisher.add(_summary(0))  # the interval passed: the latest goes
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 3600.0)
    for level in range(1, 5):
        publisher.add(_summary(level))
    assert [m["summaries"][0]["level"] for m in sent] == [0]
    publisher.add(_summary(5, frontier_size=0))  # the search's last: at once
    assert [m["summaries"][0]["level"] for m in sent] == [0, 5]
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 0.0)
    publisher.add(_summary(6))
    assert [m["summaries"][0]["level"] for m in sent] == [0, 5, 6]
    assert LevelSummary.from_message(sent[-1]["summaries"][0]).frontier_counts.tolist() == [1, 0]


def test_dispatch_must_be_a_choice(runtime):
    graph = tb.Graph.from_edges([0, 1], [1, 2])
    for bad in ("never", 0, True):
        with pytest.raises(tb.InvalidParameterError, match="dispatch"):
            tb.bfs(graph, 0, runtime=runtime, dispatch=bad)


@pytest.mark.parametrize("prefix", ["path", "grid", "kronecker_like", "directed_dag", "star",
                                    "components", "random_directed", "binary_tree"])
@pytest.mark.parametrize("bound, per_call", [(0, None), (8, None), (None, 3), (1 << 40, 2)])
def test_compiled_levels_are_the_levels_they_replace(runtime, monkeypatch, prefix, bound, per_call):
    """Small top-down levels run by the compiled loop (``COMPILED_LEVEL_EDGES``;
    0: none, 8: a few, else all of them, in calls of ``per_call`` levels) make the same
    levels, counts and trace rows as the level loop's steps and barriers, whether the
    loop stops at a level that is not small, at one Beamer's rule turns bottom-up, at
    the end of the search or at a full buffer."""
    from taskbfs.search import compiled_levels

    if bound is not None:
        monkeypatch.setattr(compiled_levels, "COMPILED_LEVEL_EDGES", bound)
    if per_call is not None:
        monkeypatch.setattr(compiled_levels, "_LEVELS_PER_CALL", per_call)
    shape = next(s for name, s in sorted(SHAPES.items()) if name.startswith(prefix))
    graph = build(shape)
    for tasks in (1, 3):
        for direction in ("auto", "top-down"):
            source = shape.sources[0]
            run = {"tasks": min(tasks, graph.num_vertices), "direction": direction,
                   "runtime": runtime, "strategy": "cpu"}
            inside = tb.bfs(graph, source, **run)
            apart_levels, apart_trace = _dispatched(graph, shape.name, source, run)
            check(graph, shape, source, inside)
            assert inside.levels[LEVEL_COLUMNS + ["unexplored_edges"]].equals(
                apart_levels[LEVEL_COLUMNS + ["unexplored_edges"]])
            assert inside.trace[TRACE_COLUMNS].equals(apart_trace[TRACE_COLUMNS])
            assert inside.levels["barrier_worker"].notna().all()


_DISPATCHED: dict = {}


def _dispatched(graph, name, source, run):
    """The level table and trace of the search dispatched as tasks, made once per shape,
    source, T and direction: the owner loop (taskbfs.search.owners) never runs the compiled
    levels, so the four settings of the test above compare with the same tables."""
    key = (name, source, run["tasks"], run["direction"])
    if key not in _DISPATCHED:
        apart = tb.bfs(graph, source, dispatch="tasks", **run)
        _DISPATCHED[key] = apart.levels, apart.trace
    return _DISPATCHED[key]


def test_a_long_path_runs_at_compiled_speed(runtime):
    """20,000 levels of one vertex: the result, one trace row per level with the level's
    own times, one level row per level (the loop over them is compiled, see
    benchmarks/deep_graphs.py for time)."""
    n = 20_000
    graph = tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n))
    result = tb.bfs(graph, 0, tasks=2, runtime=runtime, strategy="cpu")
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))
    tb.validate(graph, 0, result.parents)
    assert result.num_levels == n  # one step a level (one task has the frontier)
    assert len(result.levels) == result.num_levels and len(result.trace) == result.num_levels
    assert result.trace["included"].all()
    # each level's row has its own span (the cycle counter's, not its compiled block's)
    trace = result.trace.sort_values("level")
    start, stop = trace["start"].to_numpy(), trace["stop"].to_numpy()
    assert (stop >= start).all() and (np.diff(start) >= 0).all()
    assert trace["start"].nunique() > n // 4  # time.time() has ~0.2 µs steps
    assert start.min() >= 0 and stop.max() <= result.elapsed + 1e-3
    barriers = result.levels["barrier_seconds"].to_numpy()
    assert np.isfinite(barriers).all() and (barriers >= 0).all()


@pytest.mark.parametrize("directed", [False, True])
def test_a_search_task_reads_every_slice_as_one_input(runtime, directed):
    """The bundle a search task reads instead of 2T + 1 inputs: made once per placement
    and orientation, each task's slices in task order (a directed graph's transposed
    ones beside them), their bytes not counted again; the search is right (scipy,
    Graph500 rules)."""
    from dask.sizeof import sizeof

    from taskbfs.placed.placement import place_graph

    rng = np.random.default_rng(4)
    graph = tb.Graph.from_edges(rng.integers(0, 500, 4000), rng.integers(0, 500, 4000),
                                num_vertices=500, directed=directed)
    source = int(np.argmax(np.diff(graph.indptr)))
    r = tb.bfs(graph, source, tasks=64, strategy="cpu", runtime=runtime)
    np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
    tb.validate(graph, source, r.parents, levels=r.distances)
    placed = place_graph(runtime, graph, 64, "edges", need_transpose=True)
    bundle = placed.bundle(runtime.client)
    assert placed.bundle(runtime.client) is bundle  # made once
    got = bundle.result()
    per_task = 2 if directed else 1
    assert [len(t) for t in got.tasks] == [per_task] * 64
    assert [t[0].lo for t in got.tasks] == placed.parts.bounds[:-1].tolist()
    if directed:
        assert all(t[1] is not t[0] and t[1].lo == t[0].lo for t in got.tasks)
    assert sizeof(got) < 2048 < sum(sizeof(s.indices) for t in got.tasks for s in t)
