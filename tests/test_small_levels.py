"""Small levels inside one task (taskbfs.bfs.small_levels) against every level as tasks and
against the independent references, on many graph shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import naive_bfs, scipy_distances
from shapes import path, shapes

import taskbfs as tb
from taskbfs import config
from taskbfs.bfs.core import _small_levels
from taskbfs.bfs.small_levels import SmallLevels
from taskbfs.bfs.state import BOTTOM_UP, TOP_DOWN, LevelSummary
from taskbfs.runtime import Policy

SHAPES = {s.name: s for s in shapes()}
SHAPES["path_50"] = path(50)  # deep, short enough to run every level as tasks too
SHAPES.pop("path_3000")
ALL = 1 << 40  # every top-down level is small
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


def summary(direction=TOP_DOWN, size=10, edges=100, unexplored=0, counts=None) -> LevelSummary:
    return LevelSummary(level=3, direction=direction,
                        frontier_counts=np.array(counts if counts is not None else [size]),
                        frontier_size=size, frontier_edges=edges, unexplored_edges=unexplored)


def test_rule_admits_small_top_down_levels():
    rule = SmallLevels(max_edges=100, max_vertices=20)
    assert rule.admits(summary(size=10, edges=100))
    assert not rule.admits(summary(size=10, edges=101))  # too many edges
    assert not rule.admits(summary(size=21, edges=50))  # more than λ: the GPU's
    assert not rule.admits(summary(direction=BOTTOM_UP, size=1, edges=1))  # no bottom-up bound
    assert not rule.admits(summary(size=0, edges=0))  # the search is over
    assert SmallLevels(max_edges=5).max_vertices == math.inf


def test_rule_admits_bottom_up_levels_with_few_unexplored_edges():
    rule = SmallLevels(max_edges=100, max_vertices=20, max_bottom_up_edges=1000)
    up = {"direction": BOTTOM_UP, "size": 500, "edges": 10**6}  # a big frontier is fine
    assert rule.admits(summary(**up, unexplored=1000, counts=[20, 3]))
    assert not rule.admits(summary(**up, unexplored=1001, counts=[20, 3]))  # may read more
    assert not rule.admits(summary(**up, unexplored=10, counts=[21, 3]))  # a step above λ
    assert not rule.admits(summary(**{**up, "size": 0}, unexplored=0, counts=[0, 0]))  # over
    assert not SmallLevels(100).admits(summary(**up, unexplored=0, counts=[1, 1]))


class _Stub:
    """What ``_small_levels`` asks of a runtime."""

    def __init__(self, together=True):
        self.together = together

    def holds_together(self, futures):
        return self.together


class _Placed:
    slices = ()


@pytest.mark.parametrize("one_task", [True, False])  # config.GPU_LEVELS_IN_ONE_TASK
@pytest.mark.parametrize("kind, gpus, lookahead, together, expected", [
    ("hybrid", 0, 0, True, (math.inf, None)),  # no GPU: every task runs on the CPU
    # a small level must be one the policy sends to the CPU; a GPU level, to the GPU
    ("hybrid", 1, 0, True, "hybrid"),  # every level on the one GPU worker, steps by λ
    ("hybrid", 2, 0, True, (7.0, None)),  # GPU levels spread over several GPU workers
    ("cpu", 1, 0, True, (math.inf, None)),
    ("fixed", 0, 0, True, (math.inf, None)),
    ("fixed", 1, 0, True, None),  # its GPU tasks stay on the GPU
    ("gpu", 1, 0, True, "gpu"),  # every level on the one GPU worker
    ("gpu", 2, 0, True, None),
    ("hybrid", 1, 2, True, None),  # levels submitted ahead
    ("hybrid", 0, 0, False, None),  # no worker holds every slice: it would copy them
])
def test_which_searches_have_small_levels(monkeypatch, kind, gpus, lookahead, together, expected,
                                          one_task):
    monkeypatch.setattr(config, "GPU_LEVELS_IN_ONE_TASK", one_task)
    resources = {"CPU": 2, "GPU": gpus}
    policy = Policy(kind, lam=7)
    rule = _small_levels(_Stub(together), resources, policy, 1000, lookahead, _Placed())
    if expected == "gpu":
        assert rule == (SmallLevels(0, 0, 0, gpu_above=-1.0) if one_task else None)
    elif expected == "hybrid":
        small_on_cpu = SmallLevels(1000, 7.0, config.SMALL_BOTTOM_UP_EDGES)
        assert rule == (SmallLevels(0, 0, 0, gpu_above=7.0) if one_task else small_on_cpu)
    elif expected is None:
        assert rule is None
    else:
        max_vertices, gpu_above = expected
        assert rule == SmallLevels(1000, max_vertices, config.SMALL_BOTTOM_UP_EDGES, gpu_above)
    assert _small_levels(_Stub(), resources, policy, 0, 0, _Placed()) is None  # off


def test_rule_on_one_gpu_worker_takes_every_level_and_places_steps_by_size():
    hybrid = SmallLevels(0, 0, 0, gpu_above=7)
    bottom_up = {"direction": BOTTOM_UP, "size": 100, "edges": 10**6}
    for level in (summary(size=16, edges=10**6, counts=[8, 0, 8]), summary(size=1, counts=[1]),
                  summary(**bottom_up, unexplored=10**9, counts=[9, 3])):
        assert hybrid.device(level) == "cuda" and hybrid.admits(level, "cuda")
        assert not hybrid.admits(level)  # not a CPU task's
    assert hybrid.device(summary(size=0, edges=0, counts=[0, 0])) is None  # the search is over
    assert [hybrid.on_gpu(size) for size in (0, 7, 8)] == [False, False, True]  # above λ
    every = SmallLevels(0, 0, 0, gpu_above=-1.0)  # gpu on one GPU worker
    assert every.on_gpu(0) and every.on_gpu(1)
    cpu_only = SmallLevels(100, 7, 1000)
    assert not cpu_only.on_gpu(10**9)
    assert cpu_only.device(summary(size=9, edges=50, counts=[7, 2])) == "smp"
    assert cpu_only.device(summary(size=15, edges=50, counts=[8, 7])) is None  # a step above λ


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
@pytest.mark.parametrize("prefix", ["path", "star", "grid", "components", "isolated", "self_loops",
                                    "duplicate", "directed_dag", "directed_cycle", "random_directed",
                                    "kronecker_like", "binary_tree", "single_vertex"])
@pytest.mark.parametrize("bottom_up_edges", [0, ALL])
def test_small_levels_agree_with_levels_as_tasks(runtime, monkeypatch, prefix, direction,
                                                 bottom_up_edges):
    """The same search, level table and trace (but the ``included`` column) whether the
    small levels run inside one task or as T steps and a barrier each (with bottom-up
    levels small or not; a directed graph's read the transposed slices)."""
    monkeypatch.setattr(config, "SMALL_BOTTOM_UP_EDGES", bottom_up_edges)
    shape = next(s for name, s in sorted(SHAPES.items()) if name.startswith(prefix))
    graph = build(shape)
    for tasks in (1, min(4, graph.num_vertices)):
        for source in shape.sources[:2]:
            # cpu: on a GPU machine hybrid runs every level inside one task on the GPU worker
            run = {"tasks": tasks, "direction": direction, "runtime": runtime, "strategy": "cpu"}
            inside = tb.bfs(graph, source, small_level_edges=ALL, **run)
            apart = tb.bfs(graph, source, small_level_edges=0, **run)
            check(graph, shape, source, inside)
            np.testing.assert_array_equal(inside.distances, apart.distances)
            assert inside.levels[LEVEL_COLUMNS].equals(apart.levels[LEVEL_COLUMNS])
            assert inside.trace[TRACE_COLUMNS].equals(apart.trace[TRACE_COLUMNS])
            assert not apart.trace["included"].any()
            # every top-down level ran inside; bottom-up ones too when they may
            inside_expected = (inside.trace["direction"] == TOP_DOWN) | (bottom_up_edges > 0)
            assert inside.trace["included"].tolist() == inside_expected.tolist()


def test_a_deep_search_runs_in_one_task_which_writes_the_result(runtime):
    shape = next(s for s in shapes() if s.name.startswith("path"))  # 3000 levels
    graph = build(shape)
    result = tb.bfs(graph, 0, tasks=3, runtime=runtime, direction="top-down")
    check(graph, shape, 0, result)
    # one step per level, the last one finding nothing
    assert result.trace["included"].all() and len(result.trace) == graph.num_vertices
    assert result.num_levels == len(result.levels) == graph.num_vertices
    assert result.assembly_seconds > 0  # the included assembly, traced under the result's name
    assert (result.levels["barrier_worker"].notna()).all()  # each level's included barrier


@pytest.mark.parametrize("bottom_up_cutoff", [0, 20_000])
def test_only_levels_under_the_cutoff_run_inside(runtime, monkeypatch, bottom_up_cutoff):
    monkeypatch.setattr(config, "SMALL_BOTTOM_UP_EDGES", bottom_up_cutoff)
    graph = tb.kronecker(12, edgefactor=16, seed=4)
    cutoff = 2000
    seen_bottom_up_inside = False
    for source in tb.search_keys(graph, 4, seed=2):
        source = int(source)
        result = tb.bfs(graph, source, tasks=3, runtime=runtime, small_level_edges=cutoff,
                        strategy="cpu")
        np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
        tb.validate(graph, source, result.parents)
        inside = result.trace.groupby("level")["included"].agg(["all", "any"])
        assert (inside["all"] == inside["any"]).all()  # a level is inside or not as a whole
        levels = result.levels.set_index("level")
        top_down = levels["direction"] == TOP_DOWN
        small = ((top_down & (levels["frontier_edges"] <= cutoff))
                 | (~top_down & (levels["unexplored_edges"] <= bottom_up_cutoff)))
        assert inside["all"].equals(small.loc[inside.index].rename("all"))
        seen_bottom_up_inside |= bool((inside["all"] & ~top_down.loc[inside.index]).any())
    assert seen_bottom_up_inside == (bottom_up_cutoff > 0)


def test_small_level_edges_must_be_a_count(runtime):
    graph = tb.Graph.from_edges([0, 1], [1, 2])
    for bad in (-1, 1.5, True, "many"):
        with pytest.raises(tb.InvalidParameterError, match="small_level_edges"):
            tb.bfs(graph, 0, runtime=runtime, small_level_edges=bad)
