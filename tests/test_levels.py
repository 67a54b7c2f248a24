"""The one level loop (taskbfs.search.levels.run_levels): what it asks of a runner (a made-up
runner, scripted), and that both ways of running a search, one task and dispatched, go
through it with their runners and announce the same levels."""

from __future__ import annotations

import numpy as np
import pytest
from shapes import shapes

import taskbfs as tb
from taskbfs.search import compiled_levels, included, levels, owners
from taskbfs.search.compiled_levels import LevelBlock, LevelSummaries
from taskbfs.search.levels import run_levels
from taskbfs.search.state import BOTTOM_UP, TOP_DOWN, LevelSummary, SwitchRule


def _summary(level: int, size: int, direction: str = TOP_DOWN) -> LevelSummary:
    return LevelSummary(level, direction, np.array([size], dtype=np.int64), size, 2 * size)


def _block(first: int, sizes: list[int]) -> LevelBlock:
    """A compiled block that made levels ``first + 1 ..`` with frontiers ``sizes``."""
    count = len(sizes)
    stats = np.array([[s, 2 * s, 0, 0] for s in sizes], dtype=np.int64).reshape(count, 4)
    steps = np.array([[first + i, 0, 1, 1, s] for i, s in enumerate(sizes)], dtype=np.int64)
    return LevelBlock(first, TOP_DOWN, stats, steps, np.zeros((count, 3)),
                      np.array([sizes[-1]], dtype=np.int64), np.array([sizes[-1]], dtype=np.int64),
                      0.0, 0.0, SwitchRule("auto", 15.0, 18.0, 2, 2.0, (2,)))


class ScriptedRunner:
    """A runner whose levels are a script: per level run, the summary (or block) it makes;
    it keeps what the loop asked, in order, and stops where it is told to."""

    def __init__(self, script: list, stop_at: int | None = None):
        self.script = list(script)
        self.stop_at = stop_at
        self.calls: list[tuple[str, int]] = []
        self.summaries = LevelSummaries(1)

    def level(self, summary):
        self.calls.append(("level", summary.level))
        return self.script.pop(0)

    def announce(self, made):
        if isinstance(made, LevelBlock):  # as the one-task runner keeps a block
            self.summaries.add_block(made)
            summary = self.summaries[-1]
        else:
            self.summaries.append(made)
            summary = made
        self.calls.append(("announce", summary.level))
        return summary, summary.level == self.stop_at


def test_the_loop_runs_and_announces_each_level_until_the_frontier_is_empty():
    runner = ScriptedRunner([_summary(1, 3), _summary(2, 5, BOTTOM_UP), _summary(3, 0)])
    last = run_levels(runner, _summary(0, 1))
    assert last.level == 3 and last.frontier_size == 0
    assert runner.calls == [("announce", 0), ("level", 0), ("announce", 1), ("level", 1),
                            ("announce", 2), ("level", 2), ("announce", 3)]
    assert [s.level for s in runner.summaries] == [0, 1, 2, 3]
    assert not runner.script  # no level asked for after the last


def test_a_block_of_levels_is_announced_as_it_came_and_the_loop_goes_on_from_its_last():
    """A compiled block (levels 1-3 at once): announced once; the next level is asked of
    the summary the runner announced (its last level's)."""
    runner = ScriptedRunner([_block(0, [2, 4, 3]), _summary(4, 0)])
    last = run_levels(runner, _summary(0, 1))
    assert last.level == 4
    assert runner.calls == [("announce", 0), ("level", 0), ("announce", 3), ("level", 3),
                            ("announce", 4)]
    assert [s.frontier_size for s in runner.summaries] == [1, 2, 4, 3, 0]


def test_summaries_of_blocks_are_built_when_read_wherever_they_are_asked_for():
    """Blocks between levels run one by one: each block level's summary is built from its
    block when first read (by position, from the end, or in a slice) and kept."""
    summaries = LevelSummaries(1)
    summaries.append(_summary(0, 1))
    summaries.add_block(_block(0, [2, 4]))
    summaries.append(_summary(3, 5))
    summaries.add_block(_block(3, [6, 7, 8]))
    assert len(summaries) == 7
    assert [s.level for s in summaries] == list(range(7))
    assert [s.frontier_size for s in summaries] == [1, 2, 4, 5, 6, 7, 8]
    assert summaries[-1].level == 6 and summaries[-3].frontier_size == 6
    assert [s.level for s in summaries[1:5]] == [1, 2, 3, 4]
    assert summaries[5] is summaries[-2]  # built once


def test_the_loop_stops_where_its_runner_says():
    """A runner may stop a search whose frontier is not empty (the dispatched one's
    ``waits.report``): no level after it is asked for."""
    runner = ScriptedRunner([_summary(1, 3), _summary(2, 5), _summary(3, 0)], stop_at=2)
    last = run_levels(runner, _summary(0, 1))
    assert (last.level, last.frontier_size) == (2, 5)
    assert runner.calls[-1] == ("announce", 2) and len(runner.script) == 1
    runner = ScriptedRunner([_summary(1, 3)], stop_at=0)
    assert run_levels(runner, _summary(0, 1)).level == 0
    assert runner.calls == [("announce", 0)]


def test_an_opening_announced_already_is_not_announced_again():
    """A resumed search starts from a level an earlier attempt announced."""
    runner = ScriptedRunner([_summary(5, 2), _summary(6, 0)])
    assert run_levels(runner, _summary(4, 1), announce_opening=False).level == 6
    assert runner.calls == [("level", 4), ("announce", 5), ("level", 5), ("announce", 6)]
    runner = ScriptedRunner([])
    assert run_levels(runner, _summary(7, 0), announce_opening=False).level == 7
    assert runner.calls == []


@pytest.fixture
def loops(monkeypatch):
    """Every call of the level loop by either way of running a search: ``(runner's class,
    [announced summaries])`` (the embedded cluster's workers are threads of this process,
    so the one-task search's loop is seen too)."""
    seen = []

    def recorded(runner, opening, **kwargs):
        announced = []
        seen.append((type(runner), announced))
        announce = runner.announce

        def announcing(made):
            summary, stop = announce(made)
            announced.append(summary)
            return summary, stop

        runner.announce = announcing
        return levels.run_levels(runner, opening, **kwargs)

    monkeypatch.setattr(included, "run_levels", recorded)
    monkeypatch.setattr(owners, "run_levels", recorded)
    return seen


@pytest.mark.parametrize("tasks", [1, 4])
def test_both_ways_of_running_a_search_go_through_the_one_loop(runtime, loops, monkeypatch, tasks):
    """A one-task and a dispatched search of one graph each call the loop once, with their
    runner; both announce every level with the same direction, frontier and step sizes
    (the one-task search's compiled levels switched off: each level announced alone)."""
    monkeypatch.setattr(compiled_levels, "COMPILED_LEVEL_EDGES", 0)
    shape = next(s for s in shapes() if s.name.startswith("kronecker_like"))
    graph = tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices)
    source = shape.sources[0]
    inside = tb.bfs(graph, source, tasks=tasks, runtime=runtime, strategy="cpu")
    apart = tb.bfs(graph, source, tasks=tasks, runtime=runtime, strategy="cpu", dispatch="tasks")
    np.testing.assert_array_equal(inside.distances, apart.distances)
    assert [runner for runner, _ in loops] == [included.IncludedLevels, owners.OwnedSearch]
    one, dispatched = (announced for _, announced in loops)
    assert [s.level for s in one] == list(range(inside.num_levels + 1))
    assert [s.level for s in dispatched] == [s.level for s in one]
    assert {s.direction for s in one} == {TOP_DOWN, BOTTOM_UP}  # the rule turned, both alike
    for a, b in zip(one, dispatched, strict=True):
        assert (a.direction, a.frontier_size, a.frontier_edges) == \
            (b.direction, b.frontier_size, b.frontier_edges)
        np.testing.assert_array_equal(a.sizes, b.sizes)
        np.testing.assert_array_equal(a.frontier_counts, b.frontier_counts)
    assert list(inside.levels["direction"]) == [s.direction for s in one[:-1]]
