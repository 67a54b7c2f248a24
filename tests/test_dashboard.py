"""The live ``/taskbfs`` dashboard page: its board, over HTTP during real runs, and in Chromium.

* ``LiveRuns`` fed by hand-made placement decisions (no cluster).
* Over HTTP, while a BFS runs in a thread on the session's embedded runtime: the page
  serves, and ``/taskbfs/data.json`` follows the run level by level and ends with the
  run's own numbers (frontiers, tasks per device, visited vertices, traversed edges);
  its timeline grows while the search runs, each bar a step of the search's own trace.
* The page is the BFS's: a runtime alone serves none; the first search (or
  ``taskbfs.dashboard.install``) adds it, once.
* On a scheduler started separately (``dask scheduler`` + ``dask worker`` processes): a
  search from the client adds the page there, and its live timeline comes from the
  worker process.
* In headless Chromium (Debian's ``chromium``): the page renders, its Bokeh plots are
  drawn (canvases holding the bar colours), the timeline among them before the search
  returns. Skipped only where no Chromium binary exists.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import taskbfs as tb
from taskbfs.dashboard import (
    DATA,
    DEVICE_COLORS,
    INDIVIDUAL_PAGE,
    LISTENER,
    PAGE,
    install,
)
from taskbfs.live_runs import LIVE_MAX_ROWS, LiveRuns
from taskbfs.search import compiled_levels, state

START_TIMEOUT = 60


def _grid(n: int) -> tb.Graph:
    """An n × n grid: 2n - 1 levels from a corner, a frontier of up to n vertices."""
    idx = np.arange(n * n).reshape(n, n)
    src = np.concatenate([idx[:-1, :].ravel(), idx[:, :-1].ravel()])
    dst = np.concatenate([idx[1:, :].ravel(), idx[:, 1:].ravel()])
    return tb.Graph.from_edges(src, dst)


def _base(runtime) -> str:
    link = runtime.dashboard_link
    assert link, "the runtime serves no dashboard"
    return link.rsplit("/", 1)[0]  # ".../status" → the dashboard's root


def _get(url: str, timeout: float = 10) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


def _data(base: str) -> dict:
    return json.loads(_get(base + DATA)[1])


def _program_of(result) -> str:
    """The runtime program id of a search, from its placement keys (``name-<program>-<n>``)."""
    key = result.placements[0]["key"]
    return key.split("-", 1)[1].rsplit("-", 1)[0]


# ----------------------------------------------------------------------------- LiveRuns
def _decision(**fields):
    return {"key": "k", "task": None, "size": None, "device": "smp", "time": 100.0,
            "policy": "hybrid", "lam": 10.0, **fields}


def test_live_runs_follows_a_search_from_its_decisions():
    board = LiveRuns()
    assert board.snapshot()["state"] == "idle" and board.snapshot()["program"] is None
    board("p", _decision(vertices=50, directed=False, time=100.0))
    board("p", _decision(task=0, size=1, level=0, direction="top-down", time=100.5))
    board("p", _decision(level=0, frontier=1, frontier_edges=4, time=100.5))
    snap = board.snapshot()
    assert snap["state"] == "running" and snap["level"] == 0 and snap["visited"] == 1
    assert snap["edges"] == 0 and snap["teps"] == 0  # level 0 is placed, it has not run
    assert snap["elapsed"] == pytest.approx(0.5)
    assert snap["tasks"] == {"level": 0, "task": [0], "size": [1], "device": ["CPU"]}
    # level 1: two CPU tasks, one GPU task (size above λ)
    for task, size, device in ((0, 3, "smp"), (1, 25, "cuda"), (2, 2, "smp")):
        board("p", _decision(task=task, size=size, device=device, level=1, direction="top-down",
                             time=101.0))
    board("p", _decision(level=1, frontier=30, frontier_edges=96, time=101.0))
    snap = board.snapshot()
    assert snap["level"] == 1 and snap["visited"] == 31
    assert snap["edges"] == 2  # level 0 ran (placing level 1 says so): half its degree sum
    assert snap["teps"] == pytest.approx(2.0)  # over the 1 s until level 1 was placed
    assert snap["tasks"]["device"] == ["CPU", "GPU", "CPU"] and snap["lam"] == 10.0
    assert snap["levels"] == {"level": [0, 1], "direction": ["top-down", "top-down"],
                              "frontier": [1, 30], "cpu": [1, 2], "gpu": [0, 1]}
    board("p", _decision(task=0, size=2, level=2, direction="bottom-up", time=101.5))
    board("p", _decision(done=True, time=102.0))
    snap = board.snapshot()
    assert snap["state"] == "done" and snap["elapsed"] == pytest.approx(2.0)
    assert snap["edges"] == 50 and snap["teps"] == pytest.approx(25.0)  # every level ran
    assert snap["tasks"]["level"] == 1  # done: the busiest level is shown
    assert snap["history"] == [{"program": "p", "state": "done", "started": 100.0, "vertices": 50,
                                "levels": 3, "visited": 31, "edges": 50, "elapsed": 2.0,
                                "mteps": pytest.approx(25e-6)}]
    assert json.loads(json.dumps(snap)) == snap  # plain data


def test_live_runs_counts_a_one_task_search_from_its_summaries():
    """A search run as one task: its summaries say what is reached and what is still
    unexplored; the frontier's own edges are not expanded yet, so not counted."""
    board = LiveRuns()
    board("p", _decision(vertices=6, arcs=10, directed=True, search=True, level=0, time=100.0))
    summary = {"level": 0, "direction": "top-down", "frontier_size": 1,
               "frontier_edges": 3, "frontier_counts": [1, 0], "reached": 1, "unexplored_edges": 7}
    board.message("p", {"summaries": [summary]})
    assert board.snapshot()["edges"] == 0  # the source's 3 arcs are the frontier's
    board.message("p", {"summaries": [dict(summary, level=1, frontier_size=3, frontier_edges=5,
                                           frontier_counts=[1, 2], reached=4, unexplored_edges=2)]})
    assert board.snapshot()["edges"] == 3  # level 0 ran: 10 - 2 unexplored - 5 of the frontier
    board.message("p", {"level": 2, "frontier_size": 0, "frontier_edges": 0, "reached": 6,
                        "unexplored_edges": 0})  # an empty frontier: the last summary
    snap = board.snapshot()
    assert snap["state"] == "done" and snap["edges"] == 10 and snap["visited"] == 6
    # a dispatched search (no ``search`` placement): its levels come from its placements
    board("q", _decision(vertices=6, arcs=10, directed=True, level=0, time=100.0))
    board.message("q", {"summaries": [summary, dict(summary, level=1, frontier_size=0)]})
    snap = board.snapshot("q")
    assert snap["state"] == "running" and snap["visited"] == 0


def test_the_page_shows_the_searches_in_a_table():
    pytest.importorskip("bokeh", reason="the page is drawn with Bokeh (the 'notebooks' extra)")
    from taskbfs.dashboard import _Page

    board = LiveRuns()
    for i, (start, arcs) in enumerate([(100.0, 40), (110.0, 60)]):
        board(f"p{i}", _decision(vertices=20, directed=True, time=start))
        board(f"p{i}", _decision(level=0, frontier=1, frontier_edges=arcs, time=start))
        board(f"p{i}", _decision(done=True, time=start + 2))
    page = _Page(board)
    page.update()
    rows = page.history.data
    assert rows["program"] == ["p1", "p0"] and rows["state"] == ["done", "done"]  # newest first
    assert rows["edges"] == [60, 40] and rows["mteps"] == pytest.approx([30e-6, 20e-6])
    assert rows["levels"] == [1, 1] and rows["elapsed"] == [2.0, 2.0]


def test_live_runs_keeps_the_latest_searches_only():
    board = LiveRuns(max_runs=3)
    for i in range(5):
        board(f"p{i}", _decision(vertices=10, time=100.0 + i))
    board("other", _decision(time=200.0))  # not a search (no BFS tags): never shown
    assert board.snapshot()["programs"] == ["p3", "p4"]
    assert board.snapshot()["program"] == "p4"
    assert board.snapshot("p3")["program"] == "p3"
    assert board.latest("p0") is None


def _summary(level, counts, frontier_edges, reached, unexplored, gpu=None, direction="top-down"):
    return {"level": level, "direction": direction, "frontier_counts": counts,
            "frontier_size": sum(counts), "frontier_edges": frontier_edges, "reached": reached,
            "unexplored_edges": unexplored, "gpu_steps": gpu or [0] * len(counts)}


def _records(*rows):
    """record_columns of hand-made records: (name, device, worker, thread, start, stop,
    level, task, included)."""
    from taskbfs.live_runs import record_columns

    names = ("name", "device", "worker", "thread", "start", "stop", "level", "task", "included")
    return record_columns([{"key": f"k{i}", **dict(zip(names, row, strict=True))}
                           for i, row in enumerate(rows)])


def test_a_finished_search_shows_every_level_and_its_tasks_on_their_devices():
    """A one-task search whose live summaries were throttled (the page saw level 0 only):
    what the client sends at the end completes the levels, and its records give the
    timeline, each step on the device that ran it."""
    board = LiveRuns()
    board("p", _decision(vertices=6, arcs=10, directed=True, search=True, level=0, time=100.0))
    first = _summary(0, [1, 0], 3, 1, 7)
    board.message("p", {"summaries": [first]})
    assert board.snapshot()["levels"]["level"] == [0]
    summaries = [first, _summary(1, [1, 2], 5, 4, 2, gpu=[0, 1]), _summary(2, [0, 0], 0, 6, 0)]
    w = "tcp://127.0.0.1:4000"
    g = "tcp://127.0.0.1:5000"
    records = _records(("bfs_search", "cuda", g, 9, 10.0, 10.9, 0, None, None),
                       ("bfs_step", "smp", w, 1, 10.1, 10.2, 0, 0, "k0"),
                       ("bfs_step", "smp", w, 2, 10.3, 10.4, 1, 0, "k0"),
                       ("bfs_step", "cuda", g, 9, 10.3, 10.5, 1, 1, "k0"))
    board.finished("p", {"summaries": summaries, "records": records})
    snap = board.snapshot()
    assert snap["state"] == "done" and snap["visited"] == 6 and snap["edges"] == 10
    assert snap["levels"] == {"level": [0, 1], "direction": ["top-down", "top-down"],
                              "frontier": [1, 3], "cpu": [1, 1], "gpu": [0, 1]}
    assert snap["level"] == 1
    line = snap["timeline"]
    assert line["rows"] == ["CPU 1 · :4000", "CPU 2 · :4000", "GPU 1 · :5000"]  # CPU rows first
    assert line["row"] == [2, 0, 1, 2]
    assert line["device"] == ["GPU", "CPU", "CPU", "GPU"]  # the search task and a step on the GPU
    assert line["start"] == pytest.approx([0.0, 0.1, 0.3, 0.3])
    assert line["stop"] == pytest.approx([0.9, 0.2, 0.4, 0.5])
    assert line["included"] == [False, True, True, True]
    assert line["container"] == [True, False, False, False]  # it ran the others
    assert json.loads(json.dumps(snap)) == snap


def test_the_finished_page_gets_what_it_draws_of_each_summary():
    """``keep_finished`` sends each level summary's drawn part only (``_drawn``): the
    page it makes is the one the whole summary (``to_message``) made."""
    from taskbfs.finished_runs import _drawn
    from taskbfs.search.state import LevelSummary

    def summary(level, counts, sizes, gpu, size, reached):
        return LevelSummary(level, "top-down", np.array(counts), size, 3 * size,
                            edges_examined=np.array([5, 6, 7]), found=np.array([1, 0, 2]),
                            unexplored_edges=20 - reached, gpu_steps=np.array(gpu),
                            reached=reached, step_sizes=np.array(sizes),
                            device_stats=np.array([[1, 8, 16, 100]]))

    summaries = [summary(0, [1, 0, 0], [1, 0, 0], [], 1, 1),
                 summary(1, [2, 0, 3], [4, 0, 3], [1, 0, 0], 5, 6),
                 summary(2, [0, 0, 0], [0, 0, 0], [0, 0, 0], 0, 6)]
    records = _records(("bfs_step", "smp", "tcp://127.0.0.1:4000", 1, 10.0, 10.5, 0, 0, None))
    snaps = []
    for form in (LevelSummary.to_message, _drawn):
        board = LiveRuns()
        board("p", _decision(vertices=6, arcs=20, directed=True, search=True, level=0))
        board.finished("p", {"summaries": [form(s) for s in summaries], "records": records})
        snaps.append({k: v for k, v in board.snapshot().items() if k not in ("elapsed", "teps", "history")})
    assert snaps[0] == snaps[1]
    assert snaps[1]["tasks"] == {"level": 1, "task": [0, 2], "size": [4, 3], "device": ["GPU", "CPU"]}
    assert set(_drawn(summaries[1])) < set(summaries[1].to_message())


def test_the_page_draws_the_timeline_and_levels_of_the_search_chosen():
    pytest.importorskip("bokeh", reason="the page is drawn with Bokeh (the 'notebooks' extra)")
    from taskbfs.dashboard import _Page

    board = LiveRuns()
    for i, name in enumerate(("p0", "p1")):
        board(name, _decision(vertices=6, arcs=10, directed=True, search=True, level=0,
                              time=100.0 + i))
        summaries = [_summary(0, [1], 3, 1, 7), _summary(1, [i + 2], 7, 6, 0), _summary(2, [0], 0, 6, 0)]
        board.finished(name, {"summaries": summaries, "records": _records(
            *[("bfs_step", "smp", "tcp://127.0.0.1:4000", 1, 10.0 + k, 10.5 + k, k, 0, None)
              for k in range(i + 1)])})
    page = _Page(board)
    page.update()
    assert [value for value, _ in page.select.options] == ["latest", "p1", "p0"]
    assert page.level_rows.data["frontier"] == [1, 3]  # the latest: p1
    assert len(page.timeline.data["start"]) == 2
    assert page.timeline_plot.yaxis.major_label_overrides == {0: "CPU 1 · :4000"}
    page.select.value = "p0"  # what a click in the browser does
    assert page.header.text.startswith("<h2>taskbfs: search p0")
    assert page.level_rows.data["frontier"] == [1, 2]
    assert page.timeline.data["stop"] == [0.5]
    page.select.value = "latest"
    assert page.level_rows.data["frontier"] == [1, 3]


# ----------------------------------------------------------------------------- over HTTP
@pytest.fixture(scope="module")
def base(runtime):
    tb.bfs(_grid(2), 0, runtime=runtime)  # a search installs the page
    return _base(runtime)


def test_what_a_client_keeps_of_a_deep_search_is_what_the_page_draws():
    """A search deeper than FINISHED_MAX_ROWS levels: the client keeps its first levels and
    records (and the search task's record, which names its steps), and sends them when
    asked, with the count of all its records."""
    import asyncio

    from distributed.protocol.pickle import loads

    from taskbfs import finished_runs, live_runs
    from taskbfs.search.state import LevelSummary

    class Client:  # what keep_finished and its answer use of a distributed client
        def __init__(self):
            self.handlers, self.sent, self.calls = {}, [], []
            self.loop = self
            self.scheduler = self

        def subscribe_topic(self, topic, handler):
            self.handlers[topic] = handler

        def add_callback(self, call):
            self.calls.append(call)

        async def taskbfs_finished(self, program, payload):
            self.sent.append((program, loads(payload)))

    deep = finished_runs.FINISHED_MAX_ROWS + 100
    records = [{"key": f"k{i}", "name": "bfs_barrier", "device": "smp", "worker": "w",
                "thread": 1, "start": float(i), "stop": float(i), "level": i} for i in range(deep)]
    records.append({"key": "s", "name": "bfs_search", "device": "smp", "worker": "w",
                    "thread": 1, "start": 0.0, "stop": 1.0, "search": True})
    summaries = [LevelSummary(i, "top-down", np.array([1]), 1, 1, reached=i + 1,
                              unexplored_edges=deep - i, gpu_steps=np.array([0]),
                              step_sizes=np.array([1])) for i in range(deep)]
    client = Client()
    seen_with = []

    def steps(kept_records, kept_summaries):
        seen_with.append((kept_records, kept_summaries))
        return live_runs.record_columns([])

    finished_runs.keep_finished(client, "deep", records, summaries, steps=steps)
    client.handlers[live_runs.WANTED_TOPIC]((0.0, {"program": "other"}))
    assert not client.calls  # not this client's search
    client.handlers[live_runs.WANTED_TOPIC]((0.0, {"program": "deep"}))
    asyncio.run(client.calls.pop()())
    (program, payload), = client.sent
    assert program == "deep" and payload["total"] == deep + 1
    assert len(payload["summaries"]) == finished_runs.FINISHED_MAX_ROWS
    kept_records, kept_summaries = seen_with[0]
    assert kept_records[-1]["key"] == "s" and len(kept_summaries) == finished_runs.FINISHED_MAX_ROWS
    client.handlers[live_runs.WANTED_TOPIC]((0.0, {"program": "deep"}))
    assert not client.calls  # sent once: the page has it

    # a search's own LevelSummaries: kept while its result holds them, not beyond
    from taskbfs.search.compiled_levels import LevelSummaries

    def level_summaries():
        made = LevelSummaries(1)
        for summary in summaries:
            made.append(summary)
        return made

    alive, gone = level_summaries(), level_summaries()
    finished_runs.keep_finished(client, "alive", records, alive, steps=steps)
    finished_runs.keep_finished(client, "gone", records, gone, steps=steps)
    del gone
    for program, levels in (("alive", finished_runs.FINISHED_MAX_ROWS), ("gone", 0)):
        client.handlers[live_runs.WANTED_TOPIC]((0.0, {"program": program}))
        asyncio.run(client.calls.pop()())
        assert client.sent[-1][0] == program and len(client.sent[-1][1]["summaries"]) == levels
        assert client.sent[-1][1]["total"] == deep + 1  # the records are kept either way


def test_a_finished_search_is_sent_to_the_page_only_when_asked(runtime, base):
    """The client keeps what the page draws of a finished search and sends it only when a
    page or data.json asks for that search: an unwatched search costs nothing; a page
    opened later still gets the whole of a recent one."""
    from taskbfs.dashboard import board_on

    def complete(program):
        return runtime.client.run_on_scheduler(
            lambda dask_scheduler: board_on(dask_scheduler).latest(program).complete)

    graph = _grid(12)
    first = tb.bfs(graph, 0, tasks=4, runtime=runtime)
    second = tb.bfs(graph, 5, tasks=4, runtime=runtime)
    time.sleep(1.0)  # what an eager client would have sent by now
    assert not complete(_program_of(first)) and not complete(_program_of(second))
    snap = _finished(base, _program_of(first))  # the earlier one, asked for by this read
    assert snap["program"] == _program_of(first) and snap["timeline"]["live"] is False
    assert snap["levels"]["level"] == first.levels["level"].tolist()
    assert complete(_program_of(first)) and not complete(_program_of(second))


def test_a_kept_search_reaches_the_finished_page_with_every_level(runtime, base):
    """A one-task search whose result stays on the workers (a graph built there) returns on
    its task's last message, its other summaries read from the task later: the page still
    gets every level of it."""
    graph = tb.kronecker(10, 8, seed=3, runtime=runtime)
    r = tb.bfs(graph, 1, tasks=4, runtime=runtime)
    assert r.on_workers
    snap = _finished(base, _program_of(r))
    assert snap["program"] == _program_of(r) and snap["timeline"]["live"] is False
    assert snap["levels"]["level"] == r.levels["level"].tolist()
    assert snap["levels"]["frontier"] == r.levels["frontier_size"].tolist()


def _status(url: str) -> int:
    try:
        return _get(url)[0]
    except urllib.error.HTTPError as err:
        return err.code


def _listeners(dask_scheduler):
    return sorted(dask_scheduler.plugins["taskbfs-placement"].listeners)


def test_the_page_is_added_by_a_search_not_by_the_runtime():
    with tb.Runtime(threads=1, gpus=0) as rt:
        base = _base(rt)
        assert _status(base + DATA) == 404 and _status(base + PAGE) == 404
        assert rt.client.run_on_scheduler(_listeners) == []
        result = tb.bfs(_grid(3), 0, runtime=rt)
        assert _status(base + PAGE) == 200
        assert _data(base)["program"] == _program_of(result)
        assert rt.client.run_on_scheduler(_listeners) == [LISTENER]
        assert install(install(rt)) is rt  # idempotent
        assert rt.client.run_on_scheduler(_listeners) == [LISTENER]


def test_page_and_data_serve_over_http(base):
    status, html = _get(base + PAGE)
    assert status == 200 and "bokeh" in html.lower()
    status, html = _get(base + INDIVIDUAL_PAGE)  # the plots alone, for dask-labextension
    assert status == 200 and "bokeh" in html.lower()
    _, listing = _get(base + "/individual-plots.json")  # where dask-labextension looks
    assert json.loads(listing)["Individual Taskbfs"] == INDIVIDUAL_PAGE
    assert "Individual Task Stream" in json.loads(listing)  # dask's own plots stay listed
    status, body = _get(base + DATA)
    assert status == 200 and set(json.loads(body)) >= {"program", "state", "level", "tasks", "levels", "teps"}
    _, nav = _get(base + "/status")
    assert 'href="taskbfs"' in nav  # a link in the dashboard's top bar


def test_data_follows_a_running_search(runtime, base):
    graph = _grid(100)  # 199 levels: a few seconds
    tb.bfs(graph, 0, tasks=2, runtime=runtime, direction="top-down")  # warm up
    box = {}

    def search():
        # every level as tasks (small levels would run the whole grid inside one task in
        # milliseconds): the page follows the placements
        box["result"] = tb.bfs(graph, 0, tasks=16, lam=7, runtime=runtime, direction="top-down",
                               dispatch="tasks")

    thread = threading.Thread(target=search)
    thread.start()
    snapshots = []
    deadline = time.monotonic() + 120
    while thread.is_alive() and time.monotonic() < deadline:
        snapshots.append(_data(base))
        time.sleep(0.05)
    thread.join()
    result = box["result"]
    program = _program_of(result)
    final = _data(base)
    live = [s for s in snapshots if s["program"] == program and s["state"] == "running"]
    assert len(live) >= 3, f"only {len(live)} snapshots while the search ran"
    levels = [s["level"] for s in live]
    assert levels == sorted(levels) and levels[-1] > levels[0]  # it moved on while we watched
    trace = result.trace
    expanded = result.levels.set_index("level")["frontier_edges"]
    for snap in live:  # edges so far: those of the levels that ran before the current one
        assert snap["edges"] == int(expanded[expanded.index < snap["level"]].sum()) // 2
    for snap in live:  # each snapshot's tasks are those the search ran at that level
        if snap["tasks"]["level"] is None:
            continue
        ran = trace[trace["level"] == snap["tasks"]["level"]]
        shown = sorted(zip(snap["tasks"]["task"], snap["tasks"]["size"], strict=True))
        assert set(shown) <= set(zip(ran["task"], ran["size"], strict=True))
        assert snap["lam"] == 7.0 and snap["policy"] == "hybrid"
        assert set(snap["tasks"]["device"]) <= {"CPU"}
    assert final["program"] == program and final["state"] == "done"
    assert final["levels"]["level"] == result.levels["level"].tolist()
    assert final["levels"]["frontier"] == result.levels["frontier_size"].tolist()
    assert final["levels"]["cpu"] == result.levels["tasks_cpu"].tolist()
    assert final["levels"]["gpu"] == result.levels["tasks_gpu"].tolist() == [0] * len(result.levels)
    assert final["visited"] == result.reached == graph.num_vertices
    assert final["edges"] == result.traversed_edges
    assert 0.25 < final["teps"] / result.teps < 4  # the scheduler's clock, not the client's
    assert final["level"] == result.levels["level"].iloc[-1]


def test_data_shows_levels_run_inside_the_search_task(runtime, base, monkeypatch):
    """Levels run inside a search's one task are placed by no one: the page shows them
    from the summaries the task publishes (here every one: no interval between them),
    the same as the search's own level table (and no compiled blocks of levels, which
    send their last level's summary only)."""
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 0.0)
    monkeypatch.setattr(compiled_levels, "COMPILED_LEVEL_EDGES", 0)
    graph = _grid(30)  # 59 small top-down levels
    result = tb.bfs(graph, 0, tasks=4, runtime=runtime, direction="top-down")
    assert result.trace["included"].all()
    final = _data(base)
    assert final["program"] == _program_of(result) and final["state"] == "done"
    assert final["levels"]["level"] == result.levels["level"].tolist()
    assert final["levels"]["frontier"] == result.levels["frontier_size"].tolist()
    assert final["levels"]["cpu"] == result.levels["tasks_cpu"].tolist()
    assert final["levels"]["direction"] == result.levels["direction"].tolist()
    assert final["visited"] == result.reached == graph.num_vertices
    assert final["edges"] == result.traversed_edges
    assert final["level"] == result.levels["level"].iloc[-1]
    shown = final["tasks"]  # the level with the largest frontier
    ran = result.trace[result.trace["level"] == shown["level"]]
    assert sorted(zip(shown["task"], shown["size"], strict=True)) == sorted(
        zip(ran["task"], ran["size"], strict=True))


def _finished(base: str, program: str, timeout: float = 30) -> dict:
    """data.json of ``program`` once the client's end-of-search records have reached the
    page (sent without waiting: poll, with a deadline). Until then, reading the page can
    show the live timeline pulled from the workers, which may lack the last steps."""
    deadline = time.monotonic() + timeout
    while True:
        snap = json.loads(_get(f"{base}{DATA}?program={program}")[1])
        line = snap["timeline"]
        if (line["rows"] and line.get("live") is False) or time.monotonic() > deadline:
            return snap
        time.sleep(0.05)


def _same_steps(snap: dict, result) -> None:
    """Every step of ``result.trace`` is a bar of the page's timeline: same level, task,
    device and run time; and the page's levels are the search's own."""
    line = snap["timeline"]
    bars = {(lv, t): (d, b - a) for lv, t, d, a, b, n in zip(
        line["level"], line["task"], line["device"], line["start"], line["stop"], line["name"],
        strict=True) if n == "bfs_step"}
    trace = result.trace
    for row in trace.itertuples():
        device, seconds = bars[row.level, row.task]
        assert device == {"smp": "CPU", "cuda": "GPU"}[row.device]
        assert seconds == pytest.approx(row.stop - row.start, abs=1e-6)
    assert len(bars) == len(trace)
    levels = result.levels
    assert snap["levels"]["level"] == levels["level"].tolist()
    assert snap["levels"]["frontier"] == levels["frontier_size"].tolist()
    assert snap["levels"]["cpu"] == levels["tasks_cpu"].tolist()
    assert snap["levels"]["gpu"] == levels["tasks_gpu"].tolist()


def test_the_page_follows_owners_that_run_their_levels():
    """A graph kept on two worker processes, searched with owner levels (each owner runs
    the levels in one task, taskbfs.search.owner_levels; no step is placed through the
    scheduler): owner 0's summaries (a few a second) move the page on while the search
    runs, and the finished page has every level of the search."""
    from distributed import Client, LocalCluster

    n = 400  # a path: 400 levels, a few seconds on two processes
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client, tb.Runtime(client) as rt:
        import dask.array as da

        from taskbfs.placed.graph import DistributedGraph

        src, dst = np.arange(n - 1), np.arange(1, n)
        graph = DistributedGraph.from_dask(da.from_array(src, chunks=200),
                                           da.from_array(dst, chunks=200), runtime=rt,
                                           num_vertices=n, ranges=4)
        tb.bfs(graph, 0, runtime=rt, direction="top-down")  # installs the page, warms up
        base = _base(rt)
        box = {}
        thread = threading.Thread(target=lambda: box.update(
            result=tb.bfs(graph, 0, runtime=rt, direction="top-down")))
        thread.start()
        snapshots = []
        while thread.is_alive():
            snapshots.append(_data(base))
            time.sleep(0.02)
        thread.join()
        result = box["result"]
        assert result.trace["included"].all() and result.trace["worker"].nunique() == 2
        program = _program_of(result)
        live = [s for s in snapshots if s["program"] == program and s["state"] == "running"]
        levels = [s["level"] for s in live if s["level"] is not None]  # None: no summary yet
        assert len(set(levels)) >= 2 and levels == sorted(levels), levels  # it moved on
        final = _finished(base, program)  # asked of the client by this read, then sent
        assert final["program"] == program and final["state"] == "done"
        assert final["levels"]["level"] == result.levels["level"].tolist()
        assert final["levels"]["frontier"] == result.levels["frontier_size"].tolist()
        assert final["visited"] == result.reached == n


def test_the_final_page_has_every_level_of_a_throttled_one_task_search(runtime, base, monkeypatch):
    """A search run as one task sends the live page its latest summary at most every
    ``_SUMMARY_INTERVAL``: while it ran, the page saw a few levels; once it is done, the page
    has every level, and a timeline bar for every step of the search's trace."""
    monkeypatch.setattr(state, "_SUMMARY_INTERVAL", 60.0)  # nothing between the first and the last
    monkeypatch.setattr(compiled_levels, "COMPILED_LEVEL_EDGES", 0)  # the steps one by one
    graph = _grid(30)
    result = tb.bfs(graph, 0, tasks=4, runtime=runtime, direction="top-down")
    assert result.trace["included"].all() and len(result.levels) == 59
    snap = _finished(base, _program_of(result))
    assert snap["state"] == "done"
    _same_steps(snap, result)
    assert snap["visited"] == result.reached and snap["edges"] == result.traversed_edges
    line = snap["timeline"]
    assert "bfs_search" in line["name"]  # the task that ran them all, drawn faint behind them
    assert line["container"][line["name"].index("bfs_search")]
    assert all(line["included"][i] for i, n in enumerate(line["name"]) if n == "bfs_step")
    assert len(line["rows"]) >= 1 and max(line["row"]) < len(line["rows"])


def _path(n: int) -> tb.Graph:
    """A path of ``n`` vertices: ``n`` levels of one vertex from vertex 0."""
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def _watch(base: str, search, every: float = 0.1) -> tuple:
    """Run ``search()`` in a thread, reading data.json every ``every`` s until it returns:
    ``(its result, the snapshots read while it ran)``."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(result=search()))
    thread.start()
    seen = []
    while thread.is_alive():
        seen.append(_data(base))
        time.sleep(every)
    thread.join()
    assert "result" in box, "the search failed (see the thread's traceback above)"
    return box["result"], seen


def _live_bars_are_the_searchs(live: list, result) -> None:
    """The running search's timelines ``live`` grew while it ran, and their step bars are
    steps of ``result.trace``: same level, task, device and run time. (A one-task search
    keeps its steps as a table per level, sent when it ends: while it runs, its barriers
    are the bars.)"""
    totals = [s["timeline"]["total"] for s in live]
    assert totals == sorted(totals) and totals[-1] > totals[0], totals  # it grew while we watched
    ran = {(row.level, row.task): (row.device, row.stop - row.start) for row in result.trace.itertuples()}
    names = set(live[-1]["timeline"]["name"])
    assert names and names <= {"bfs_init", "bfs_step", "bfs_barrier"}, names
    for snap in live:
        line = snap["timeline"]
        assert 0 < len(line["start"]) <= min(LIVE_MAX_ROWS, line["total"])
        assert len(line["rows"]) >= 1 and max(line["row"]) < len(line["rows"])
        for i in [i for i, n in enumerate(line["name"]) if n == "bfs_step"]:
            device, seconds = ran[line["level"][i], line["task"][i]]
            assert line["device"][i] == {"smp": "CPU", "cuda": "GPU"}[device]
            assert line["stop"][i] - line["start"][i] == pytest.approx(seconds, abs=1e-6)


def test_the_timeline_grows_while_a_one_task_search_runs(runtime, base, monkeypatch):
    """The default path (the whole search in one task): while it runs, data.json (as the
    page) shows the latest tasks it finished, pulled from the worker; once it is done,
    the client's timeline of the whole search."""
    monkeypatch.setattr(compiled_levels, "COMPILED_LEVEL_EDGES", 0)  # each level's steps and barrier one by one
    tb.bfs(_path(50), 0, tasks=4, runtime=runtime)  # warm-up
    graph = _path(20_000)  # 20,000 levels of ~0.1-0.5 ms: seconds
    result, seen = _watch(base, lambda: tb.bfs(graph, 0, tasks=4, runtime=runtime))
    program = _program_of(result)
    assert result.trace["included"].all() and len(result.levels) == graph.num_vertices
    live = [s for s in seen if s["program"] == program and s["state"] == "running"
            and s["timeline"]["live"]]
    assert len(live) >= 2, f"{len(live)} live timelines in {len(seen)} snapshots"
    _live_bars_are_the_searchs(live, result)
    final = _finished(base, program)
    assert not final["timeline"]["live"]
    assert final["timeline"]["total"] >= live[-1]["timeline"]["total"]  # all tasks, not those drawn


def test_the_timeline_of_a_dispatched_search(runtime, base):
    graph = tb.kronecker(9, seed=2)
    result = tb.bfs(graph, int(tb.search_keys(graph, 1, seed=2)[0]), tasks=4, lam=3,
                    runtime=runtime, dispatch="tasks")
    snap = _finished(base, _program_of(result))
    _same_steps(snap, result)
    line = snap["timeline"]
    barriers = [i for i, n in enumerate(line["name"]) if n == "bfs_barrier"]
    assert len(barriers) == len(result.levels) and not any(line["included"][i] for i in barriers)
    assert set(line["device"]) == {"CPU"}


# ----------------------------------------------------------------------------- a separate scheduler
@pytest.fixture(scope="module")
def cli_scheduler(tmp_path_factory):
    """``dask scheduler`` with a dashboard and one ``CPU=2`` ``dask worker``, as processes."""
    tmp = tmp_path_factory.mktemp("dash-cluster")
    dask = [sys.executable, "-m", "dask"]
    procs, logs = [], []

    def spawn(name, args):
        log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 (closed in finally)
        logs.append(log)
        procs.append(subprocess.Popen(dask + args, stdout=log, stderr=subprocess.STDOUT))

    try:
        spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                            "127.0.0.1:0", "--scheduler-file", str(tmp / "scheduler.json")])
        deadline = time.monotonic() + START_TIMEOUT
        while not ((tmp / "scheduler.json").exists() and (tmp / "scheduler.json").stat().st_size):
            assert procs[0].poll() is None, "dask scheduler exited"
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads((tmp / "scheduler.json").read_text())["address"]
        spawn("worker", ["worker", address, "--nthreads", "2", "--resources", "CPU=2"])
        yield address
    except BaseException:
        for log in logs:
            log.flush()
            print(Path(log.name).read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        for p in reversed(procs):  # the worker first
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


@pytest.mark.slow
def test_page_on_a_separately_started_scheduler(cli_scheduler):
    with tb.Runtime(cli_scheduler) as rt:
        rt.client.wait_for_workers(1, timeout=START_TIMEOUT)
        base = _base(rt)
        install(rt)  # what a search does first
        assert _data(base)["state"] == "idle"
        graph = tb.kronecker(9, seed=1)
        result = tb.bfs(graph, int(tb.search_keys(graph, 1, seed=1)[0]), tasks=4, lam=3, runtime=rt)
        # a search shorter than the summary interval sends the page none: the page has it
        # done once its client's end-of-search records arrive
        snap = _finished(base, _program_of(result))
        # the live timeline from a worker process: a search of every level as tasks
        grid = _grid(40)
        slow, seen = _watch(base, lambda: tb.bfs(grid, 0, tasks=4, runtime=rt, dispatch="tasks"))
        live = [s for s in seen if s["program"] == _program_of(slow) and s["state"] == "running"
                and s["timeline"]["live"]]
        assert len(live) >= 2, f"{len(live)} live timelines in {len(seen)} snapshots"
        _live_bars_are_the_searchs(live, slow)
        assert snap["program"] == _program_of(result) and snap["state"] == "done"
        assert snap["visited"] == result.reached and snap["edges"] == result.traversed_edges
        assert snap["lam"] == 3.0
        status, html = _get(base + PAGE)
        assert status == 200 and "bokeh" in html.lower()


# ----------------------------------------------------------------------------- headless Chromium
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--remote-allow-origins=*", "--window-size=1400,1000"]

#: Walks the page and its shadow roots (Bokeh 3 renders into them): text, and for every
#: canvas of a plot how many pixels carry each of the given colours.
PROBE = r"""
((colors, withPixels) => {
  const out = {text: "", canvases: 0, pixels: Object.fromEntries(colors.map(c => [c, 0])),
               perCanvas: [], options: [],
               bokeh: typeof Bokeh === "undefined" ? 0 : Bokeh.documents.length};
  const rgb = colors.map(c => [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)]);
  function walk(root) {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { out.text += " " + el.shadowRoot.textContent; walk(el.shadowRoot); }
      if (el.tagName === "SELECT") out.options.push(Array.from(el.options).map(o => o.value));
      if (el.tagName !== "CANVAS" || el.width < 100 || el.height < 100) continue;
      out.canvases += 1;
      if (!withPixels) continue;
      const data = el.getContext("2d").getImageData(0, 0, el.width, el.height).data;
      const mine = Object.fromEntries(colors.map(c => [c, 0]));
      for (let i = 0; i < data.length; i += 4) {
        rgb.forEach((c, k) => {
          if (Math.abs(data[i] - c[0]) + Math.abs(data[i + 1] - c[1]) + Math.abs(data[i + 2] - c[2]) < 12) {
            out.pixels[colors[k]] += 1;
            mine[colors[k]] += 1;
          }
        });
      }
      out.perCanvas.push(mine);
    }
  }
  out.text += document.body ? document.body.textContent : "";
  walk(document);
  return out;
})(%s, %s)
"""


def _with_cpu_bars(probe: dict) -> int:
    """How many of the page's canvases show CPU-coloured bars."""
    return sum(c[DEVICE_COLORS["CPU"]] > 100 for c in probe.get("perCanvas", ()))


def _chromium() -> str | None:
    explicit = os.environ.get("TASKBFS_CHROMIUM")
    if explicit:
        return explicit
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


async def _probe_page(chromium: str, url: str, until, timeout: float, screenshot: Path,
                      ready=None, start=None, seen=None, pixels=lambda: True):
    """Open ``url`` in headless Chromium and evaluate PROBE every 0.1 s (counting pixels only
    when ``pixels()``): once ``ready(result)``, call ``start()``; stop when ``until(result)``;
    append every result to ``seen``; screenshot."""
    from tornado.websocket import websocket_connect

    profile = tempfile.mkdtemp(prefix="taskbfs-chromium-")
    proc = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             "--remote-debugging-port=0", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited: {proc.stderr.read().decode()[-2000:]}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            await asyncio.sleep(0.1)
        port = port_file.read_text().split()[0]
        pages = []
        while not pages:
            targets = json.loads(_get(f"http://127.0.0.1:{port}/json/list")[1])
            pages = [t for t in targets if t.get("type") == "page" and t.get("url", "").startswith(url)]
            assert time.monotonic() < deadline, f"chromium shows no page at {url}: {targets}"
            await asyncio.sleep(0.1)
        ws = await websocket_connect(pages[0]["webSocketDebuggerUrl"], max_message_size=64 << 20)
        ids = iter(range(1, 1 << 30))

        async def call(method, **params):
            n = next(ids)
            await ws.write_message(json.dumps({"id": n, "method": method, "params": params}))
            while True:
                message = json.loads(await ws.read_message())
                if message.get("id") == n:
                    assert "error" not in message, message
                    return message["result"]

        colors = json.dumps([DEVICE_COLORS["CPU"], "#ffcc00"])
        result = None
        started = start is None
        while time.monotonic() < deadline:
            expression = PROBE % (colors, "true" if pixels() else "false")
            reply = await call("Runtime.evaluate", expression=expression, returnByValue=True)
            result = reply["result"].get("value")
            if result and seen is not None:
                seen.append(result)
            if result and not started and ready(result):
                start()
                started = True
            elif result and started and until(result):
                break
            await asyncio.sleep(0.1)
        shot = await call("Page.captureScreenshot", format="png")
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        ws.close()
        return result
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def test_page_renders_its_plots_in_headless_chromium(runtime, base, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium binary found (looked for " + ", ".join(CHROMIUM_NAMES) +
                    " on PATH and $TASKBFS_CHROMIUM): install Debian's chromium package")
    graph = tb.kronecker(10, seed=5)
    earlier = tb.bfs(graph, int(tb.search_keys(graph, 1, seed=3)[0]), tasks=8, runtime=runtime)
    grid = _grid(80)  # 159 levels: the page must follow it while it runs
    tb.bfs(grid, 0, tasks=2, runtime=runtime)  # warm-up
    box = {}
    thread = threading.Thread(target=lambda: box.update(  # every level as tasks: it takes a while
        result=tb.bfs(grid, 0, tasks=8, runtime=runtime, dispatch="tasks")))

    def drawn(r):
        return r["canvases"] >= 3 and all(count > 100 for count in r["pixels"].values())

    def done(r):  # the finished search's timeline too: a third canvas with CPU bars
        return ("result" in box and _program_of(box["result"]) in r["text"] and " done" in r["text"]
                and drawn(r) and _with_cpu_bars(r) >= 3)

    shot, seen = tmp_path / "taskbfs-page.png", []
    try:
        probe = asyncio.run(_probe_page(chromium, base + PAGE, done, 90, shot, ready=drawn,
                                        start=thread.start, seen=seen))
    finally:
        if thread.is_alive() or thread.ident is not None:
            thread.join()
    result = box["result"]
    program = _program_of(result)
    # while the search ran, the page showed it running, and its level moved on
    running = [r["text"] for r in seen if program in r["text"] and "— running" in r["text"]]
    levels = {int(t.split("level ", 1)[1].split()[0]) for t in running}
    assert len(levels) >= 2, f"the page showed {len(running)} running states, levels {sorted(levels)}"
    # and its timeline grew while it ran: a third canvas with CPU bars before the search returned
    assert any(_with_cpu_bars(r) >= 3 for r in seen if program in r["text"] and "— running" in r["text"]), \
        [_with_cpu_bars(r) for r in seen]
    if os.environ.get("TASKBFS_SCREENSHOT_DIR"):  # keep it for a human to look at
        shutil.copy(shot, Path(os.environ["TASKBFS_SCREENSHOT_DIR"]) / shot.name)
    assert probe is not None and probe["bokeh"] >= 1, probe
    assert program in probe["text"] and "done" in probe["text"], probe["text"][:500]
    assert probe["canvases"] >= 4, probe  # the three plots and the timeline
    assert _with_cpu_bars(probe) >= 3, probe  # work per task, tasks per level, the timeline
    offered = [" ".join(o) for o in probe["options"]]  # the selector's entries (labels)
    assert [o for o in offered if program in o and _program_of(earlier) in o], \
        offered  # the selector offers this search and the earlier one
    assert "CPU tasks" in probe["text"]  # the table of levels
    assert "Searches (newest first)" in probe["text"]  # the table of searches lists
    assert _program_of(earlier) in probe["text"].split("Searches (newest first)", 1)[1]  # the earlier one
    assert probe["pixels"][DEVICE_COLORS["CPU"]] > 100, probe  # CPU task bars
    assert probe["pixels"]["#ffcc00"] > 100, probe  # frontier bars
    assert shot.stat().st_size > 10_000
