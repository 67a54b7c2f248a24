"""The BFS state functions on their own (no cluster): level 0, decided in one place, is
what the general barrier makes of the source, for every direction mode."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from reference import serial_barrier

import taskbfs as tb
from taskbfs import config
from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.direction import switch_direction
from taskbfs.search.state import (
    AUTO,
    BOTTOM_UP,
    TOP_DOWN,
    Discoveries,
    Frontier,
    Progress,
    SwitchRule,
    Tally,
    first_frontier,
    first_summary,
    step_sizes,
)

FIELDS = ("level", "direction", "frontier_size", "frontier_edges")
ARRAYS = ("frontier_counts", "edges_examined", "found")


def _through_the_barrier(degrees, bounds, source, mode, alpha):
    """Level 0 as the general barrier makes it: the source accepted as the one candidate
    of a level -1 (what the one-task search did before :func:`first_summary` decided it)."""
    n = degrees.size
    progress = Progress(np.diff(bounds).astype(np.int64))
    rule = SwitchRule(mode, alpha, config.get("direction.beta"), n, degrees.sum() / n,
                      tuple(np.diff(bounds).tolist()))
    empty = np.empty(0, dtype=np.int64)
    before = Frontier(-1, TOP_DOWN, empty, np.zeros(bounds.size, np.int64), None,
                      empty_bitmap(n), bounds, progress, tally=Tally(rule, 0, int(degrees.sum())))
    src = np.array([source], dtype=np.int64)
    return serial_barrier(before, [Discoveries(-1, src, src.copy(), 0)], degrees)


@pytest.mark.parametrize("mode", [AUTO, TOP_DOWN, BOTTOM_UP])
@pytest.mark.parametrize("bounds", [[0, 300], [0, 1, 2, 300], [0, 64, 65, 200, 300]])
def test_level_zero_is_what_the_barrier_makes_of_the_source(mode, bounds):
    """:func:`first_summary` decides level 0 alone; the client's summary (made from the
    source's degree and the arc count) and the one-task search's first frontier agree
    with the general barrier's work on the source."""
    graph = tb.Graph.from_edges(np.r_[np.zeros(250, int), np.arange(1, 299)],
                                np.r_[np.arange(1, 251), np.arange(2, 300)])
    degrees = graph.degrees()
    # the client sends num_arcs to the init task as the degrees' sum (directed: out-degrees)
    assert degrees.sum() == graph.num_arcs
    directed = tb.Graph.from_edges([0, 0, 1, 2, 2], [1, 2, 2, 0, 2], directed=True)
    assert directed.degrees().sum() == directed.num_arcs == 4
    bounds = np.array(bounds, dtype=np.int64)
    # a hub (switches to bottom-up under auto), a low-degree vertex, the last vertex
    for source in (0, 1, 299):
        want_frontier, want = _through_the_barrier(degrees, bounds, source, mode, 10.0)
        frontier, worker = first_frontier(degrees, bounds, source, mode, alpha=10.0)
        client = first_summary(bounds, source, graph.degree(source), graph.num_arcs, mode, alpha=10.0)
        for got in (worker, client):
            for name in FIELDS + ("unexplored_edges", "reached"):
                assert getattr(got, name) == getattr(want, name), (name, source)
            for name in ARRAYS + ("step_sizes",):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        for name in ("level", "direction"):
            assert getattr(frontier, name) == getattr(want_frontier, name)
        for name in ("vertices", "offsets", "bits", "visited_bits", "bounds", "task_edges"):
            np.testing.assert_array_equal(getattr(frontier, name), getattr(want_frontier, name),
                                          err_msg=name)
        assert frontier.vertices.dtype == np.int64
        got, expected = frontier.progress, want_frontier.progress
        np.testing.assert_array_equal(got.unvisited_per_task, expected.unvisited_per_task)
        assert frontier.tally == want_frontier.tally
    hub = first_summary(bounds, 0, graph.degree(0), graph.num_arcs, mode, alpha=10.0)
    assert hub.direction == (TOP_DOWN if mode == TOP_DOWN else BOTTOM_UP)  # both branches covered


@pytest.mark.parametrize(
    "current, size, previous, edges, unexplored, expected",
    [
        (TOP_DOWN, 50, 10, 200, 1000, BOTTOM_UP),  # growing, edges > unexplored / 10
        (TOP_DOWN, 50, 10, 100, 1000, TOP_DOWN),  # growing, too few edges
        (TOP_DOWN, 5, 10, 200, 1000, TOP_DOWN),  # enough edges, shrinking: stragglers
        (TOP_DOWN, 10, 10, 200, 1000, TOP_DOWN),  # enough edges, not growing
        (BOTTOM_UP, 5, 50, 0, 0, TOP_DOWN),  # shrinking, below n / beta = 10
        (BOTTOM_UP, 50, 500, 0, 0, BOTTOM_UP),  # shrinking, not below n / beta
        (BOTTOM_UP, 5, 2, 0, 0, BOTTOM_UP),  # below n / beta, growing
    ])
def test_switch_rule_needs_a_growing_or_shrinking_frontier(current, size, previous, edges,
                                                           unexplored, expected):
    assert switch_direction(AUTO, current, size, edges, unexplored, num_vertices=200, alpha=10.0,
                            beta=20.0, previous_size=previous) == expected
    for mode in (TOP_DOWN, BOTTOM_UP):
        assert switch_direction(mode, current, size, edges, unexplored, 200, 10.0, 20.0,
                                previous_size=previous) == mode


def test_stragglers_after_the_bottom_up_levels_stay_top_down(runtime):
    """A hub, its leaves, then a path hanging off one leaf: the hub's and the leaves'
    levels go bottom-up (a growing frontier with most edges), the path's first vertex back
    to top-down (shrinking), and the rest of the path stays top-down although each of its
    one-vertex levels has more edges than the unexplored ones / alpha: the frontier no
    longer grows."""
    from reference import scipy_distances

    leaves = np.arange(1, 301)
    path = np.arange(1000, 1006)
    src = np.r_[np.zeros(300, int), 1, path[:-1]]
    dst = np.r_[leaves, path[0], path[1:]]
    graph = tb.Graph.from_edges(src, dst, num_vertices=1010)
    for dispatch in ("tasks", "auto"):
        r = tb.bfs(graph, 0, tasks=2, runtime=runtime, dispatch=dispatch)
        np.testing.assert_array_equal(r.distances, scipy_distances(graph, 0))
        assert list(r.levels["direction"]) == [BOTTOM_UP] * 2 + [TOP_DOWN] * 6


@pytest.mark.parametrize("dispatch", ["tasks", "auto"])
def test_alpha_changed_after_import_reaches_the_next_search(setting, runtime, monkeypatch, dispatch):
    """``taskbfs.direction.alpha`` is read at each search, by the client and the worker alike: a
    tiny α never goes bottom-up (m_f > m_u / α never holds), the default does here."""
    from reference import scipy_distances

    graph = tb.kronecker(10, seed=5)
    source = int(np.argmax(graph.degrees()))
    directions = []
    for alpha in (tb.config.get("direction.alpha"), 1e-9):
        setting("direction.alpha", alpha)
        r = tb.bfs(graph, source, tasks=2, strategy="cpu", runtime=runtime, dispatch=dispatch)
        np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
        directions.append(set(r.levels["direction"]))
    assert BOTTOM_UP in directions[0]
    assert directions[1] == {TOP_DOWN}


@pytest.mark.parametrize("direction", [AUTO, TOP_DOWN, BOTTOM_UP])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("dispatch", ["tasks", "auto"])
def test_result_written_by_many_slices_matches_scipy(runtime, direction, directed, dispatch):
    """3 tasks: inside the search's one task (included) the worker's threads write the
    result in claimed pieces (``assemble_all``); dispatched, the owners write it level by
    level (``search.owners``) and nothing is assembled from the steps' outputs. Every vertex is
    written once either way: the distances match scipy and the parents pass."""
    from reference import scipy_distances

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 400, 1500), rng.integers(0, 400, 1500)
    graph = tb.Graph.from_edges(src, dst, num_vertices=420, directed=directed)  # 20 isolated
    source = int(src[0])
    r = tb.bfs(graph, source, tasks=3, direction=direction, runtime=runtime, dispatch=dispatch)
    np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
    tb.validate(graph, source, r.parents, levels=r.distances)
    assert r.assembly_seconds > 0


def _rule(task_vertices, mean_degree=4.0) -> SwitchRule:
    task_vertices = tuple(int(v) for v in task_vertices)
    return SwitchRule("auto", 15.0, 18.0, sum(task_vertices), mean_degree, task_vertices)


def test_step_sizes_count_a_top_down_frontier_by_its_arcs_in_mean_degrees():
    counts = np.array([3, 0, 1, 2], dtype=np.int64)
    arcs = np.array([6, 0, 50, 3], dtype=np.int64)
    even = _rule([10, 10, 10, 10])  # each task a quarter of the graph: its work times 4
    np.testing.assert_array_equal(step_sizes(TOP_DOWN, counts, arcs, even), [12, 0, 52, 8])
    # bottom-up steps read their unvisited vertices: those are the work
    np.testing.assert_array_equal(step_sizes(BOTTOM_UP, counts, arcs, even), 4 * counts)


def test_step_sizes_are_the_same_work_at_any_number_of_tasks():
    """λ means the same at any T: one task's size is its work; a frontier spread evenly
    over T tasks gives each the size of the whole frontier; an uneven cut scales each task
    by its own share of the vertices."""
    whole = step_sizes(TOP_DOWN, np.array([64]), np.array([256]), _rule([1024]))
    np.testing.assert_array_equal(whole, [64])
    spread = step_sizes(TOP_DOWN, np.full(16, 4), np.full(16, 16), _rule(np.full(16, 64)))
    np.testing.assert_array_equal(spread, np.full(16, 64))
    uneven = step_sizes(BOTTOM_UP, np.array([3, 3]), None, _rule([25, 75]))
    np.testing.assert_array_equal(uneven, [12, 4])


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_trace_size_of_a_hub_step_is_its_arcs_in_mean_degrees(runtime, dispatch):
    g = tb.Graph.from_edges(np.zeros(99, dtype=np.int64), np.arange(1, 100), num_vertices=100)
    mean = g.num_arcs / g.num_vertices  # 198 arcs (undirected star) over 100 vertices
    # one task: a step's size is its work (more tasks scale it: see test_step_sizes_*)
    r = tb.bfs(g, 0, tasks=1, direction="top-down", runtime=runtime, dispatch=dispatch)
    sizes = r.trace.groupby("level")["size"].sum()
    assert sizes[0] == int(np.ceil(99 / mean))  # one vertex with 99 arcs
    assert sizes[1] == 99  # 99 leaves of one arc each: their count is more


def test_bfs_uses_only_the_kernels_public_modules():
    """search/ reaches the GPU tier through kernels' public modules (``kernels/gpu.py``,
    ``gpu_levels.py``, ...), never a private kernel module or a private name."""
    room = Path(tb.__file__).parent / "search"
    for path in room.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("taskbfs.kernels"):
                private = [node.module] if "._" in node.module else []
                private += [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"
