"""taskbfs.trace: tables, plots and trace files, on a real run and on a hand-made result.

The real run is checked against counts made independently from the graph (the degrees of
each task's frontier vertices); the hand-made result (two CPU threads and a GPU worker,
known times) pins down the timeline rows, the states and the file formats exactly.
"""

from __future__ import annotations

import json
import re
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

import taskbfs as tb
from taskbfs import trace
from taskbfs.trace import MissingDependencyError

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def graph():
    return tb.kronecker(11, seed=3)


@pytest.fixture(scope="module")
def run(runtime, graph):
    """A top-down run (edges examined per task = the degrees of its frontier vertices)."""
    source = int(tb.search_keys(graph, 1, seed=2)[0])
    return tb.bfs(graph, source, tasks=5, direction="top-down", runtime=runtime)


@pytest.fixture(scope="module")
def auto_run(runtime, graph):
    source = int(tb.search_keys(graph, 1, seed=2)[0])
    return tb.bfs(graph, source, tasks=5, direction="auto", runtime=runtime)


def _result(trace_rows, level_rows, num_tasks=3):
    """A hand-made BFSResult with the given trace and levels."""
    return tb.BFSResult(
        source=0, distances=np.array([0, 1, 1, 2]), parents=np.array([0, 0, 0, 1]),
        trace=pd.DataFrame(trace_rows), levels=pd.DataFrame(level_rows), elapsed=1.0,
        traversed_edges=3, strategy="hybrid", direction="auto", num_tasks=num_tasks)


CPU, GPU = "tcp://10.0.0.1:1", "tcp://10.0.0.2:2"


def _step(level, task, worker, thread, start, stop, device="smp", direction="top-down", **extra):
    return {"level": level, "task": task, "lo": task * 10, "hi": task * 10 + 10, "direction": direction,
            "size": 5 + task, "edges_examined": 7 * (task + 1), "found": task, "device": device,
            "worker": worker, "thread": thread, "start": start, "stop": stop, "name": "bfs_step", **extra}


@pytest.fixture
def handmade():
    # the GPU worker runs first, yet CPU rows come first (as in the paper's Fig. 11)
    rows = [
        _step(0, 0, GPU, 7, 0.10, 0.20, device="cuda", h2d_bytes=100, d2h_bytes=20),
        _step(1, 1, CPU, 1, 0.35, 0.45, direction="bottom-up"),
        _step(1, 2, CPU, 2, 0.36, 0.50, direction="bottom-up"),
        _step(1, 0, GPU, 7, 0.30, 0.40, device="cuda", direction="bottom-up", h2d_bytes=0, d2h_bytes=8),
    ]
    levels = [
        {"level": 0, "direction": "top-down", "frontier_size": 1, "frontier_edges": 2,
         "edges_examined": 7, "discovered": 2, "tasks": 1, "tasks_cpu": 0, "tasks_gpu": 1,
         "start": 0.05, "stop": 0.30, "barrier_seconds": 0.05},
        {"level": 1, "direction": "bottom-up", "frontier_size": 2, "frontier_edges": 3,
         "edges_examined": 28, "discovered": 1, "tasks": 3, "tasks_cpu": 2, "tasks_gpu": 1,
         "start": 0.30, "stop": 0.60, "barrier_seconds": 0.08},
    ]
    return _result(rows, levels)


# ----------------------------------------------------------------------------- tables
def test_task_table_on_a_real_run(run, graph):
    tasks = trace.task_table(run)
    assert len(tasks) == len(run.trace)
    assert {"level", "task", "lo", "hi", "vertices", "size", "edges_examined", "found", "device",
            "processor", "worker", "thread", "row", "start", "stop", "duration", "bytes_moved"} <= set(tasks)
    assert (tasks["vertices"] == tasks["hi"] - tasks["lo"]).all()
    assert np.allclose(tasks["duration"], tasks["stop"] - tasks["start"])
    assert set(tasks["processor"]) == {"CPU"} and (tasks["bytes_moved"] == 0).all()
    # independent count: a top-down step examines the edges of its frontier vertices
    degrees = graph.degrees()
    mean = graph.num_arcs / graph.num_vertices
    for t in tasks.itertuples():
        mine = np.flatnonzero(run.distances == t.level)
        mine = mine[(mine >= t.lo) & (mine < t.hi)]
        # placed by its frontier vertices, or their arcs in mean degrees when that is more,
        # scaled to the whole graph (times its vertices over the task's)
        work = max(mine.size, int(np.ceil(degrees[mine].sum() / mean)))
        assert t.size == -(-work * graph.num_vertices // t.vertices)
        assert t.edges_examined == degrees[mine].sum()
        assert t.found <= t.edges_examined
    # every vertex of the next level was found by some task of this level
    for level, group in tasks.groupby("level"):
        assert group["found"].sum() >= np.count_nonzero(run.distances == level + 1)


def test_level_table_adds_devices_and_times(run):
    levels = trace.level_table(run)
    tasks = trace.task_table(run)
    assert list(levels["level"]) == list(run.levels["level"])
    assert (levels["visited"] == np.cumsum(levels["frontier_size"])).all()
    assert levels["visited"].iloc[-1] + levels["discovered"].iloc[-1] == run.reached
    assert set(levels["devices"]) == {"CPU"}
    assert np.allclose(levels["seconds"], levels["stop"] - levels["start"])
    assert np.allclose(levels["step_seconds"] + levels["barrier_seconds"], levels["seconds"])
    by_level = tasks.groupby("level")["duration"]
    assert np.allclose(levels["task_seconds"], by_level.sum().reindex(levels["level"]).to_numpy())
    assert np.allclose(levels["longest_task_seconds"], by_level.max().reindex(levels["level"]).to_numpy())
    assert (levels["imbalance"] >= 1 - 1e-9).all()


def test_tables_of_the_handmade_result(handmade):
    threads = trace.thread_table(handmade)
    assert list(threads["label"]) == ["CPU w0.t0", "CPU w0.t1", "GPU w1.t0"]
    assert list(threads["tasks"]) == [1, 1, 2]
    assert np.allclose(threads["busy_seconds"], [0.10, 0.14, 0.20])
    assert np.allclose(threads["utilization"], np.array([0.10, 0.14, 0.20]) / 0.60)
    tasks = trace.task_table(handmade)
    assert list(tasks["bytes_moved"]) == [120, 8, 0, 0]  # sorted by (level, task): h2d + d2h
    assert list(tasks["row"]) == [2, 2, 0, 1]
    levels = trace.level_table(handmade)
    assert list(levels["devices"]) == ["GPU", "CPU+GPU"]
    assert list(levels["bytes_moved"]) == [120, 8]
    assert list(levels["visited"]) == [1, 3]
    assert np.allclose(levels["imbalance"], [1.0, 0.14 / (0.34 / 3)])


def test_state_table_covers_every_row_without_overlap(handmade):
    states = trace.state_table(handmade)
    for _, group in states.groupby("row"):
        assert group["start"].iloc[0] == 0.0 and group["stop"].iloc[-1] == pytest.approx(0.60)
        assert np.allclose(group["start"].to_numpy()[1:], group["stop"].to_numpy()[:-1])
        assert (group["stop"] > group["start"]).all()
    gpu = states[states["row"] == 2]
    assert list(gpu["state"]) == ["idle", "top-down", "idle", "barrier", "bottom-up", "idle", "barrier"]
    assert np.allclose(gpu["start"], [0, 0.10, 0.20, 0.25, 0.30, 0.40, 0.52])
    # the barrier of level 1 is [0.52, 0.60] on every row
    barriers = states[(states["state"] == "barrier") & (states["level"] == 1)]
    assert len(barriers) == 3 and np.allclose(barriers["start"], 0.52) and np.allclose(barriers["stop"], 0.60)


def test_state_table_of_a_real_run_has_one_step_state_per_task(auto_run):
    states = trace.state_table(auto_run)
    steps = states[states["state"].isin(["top-down", "bottom-up"])]
    assert len(steps) <= len(auto_run.trace)
    assert set(steps["state"]) <= set(auto_run.trace["direction"])
    assert np.allclose(states.groupby("row")["stop"].max(), trace.tables.search_span(auto_run)[1])


def test_empty_trace_gives_empty_tables():
    empty = _result(pd.DataFrame(columns=["level", "task", "lo", "hi", "direction", "size", "device",
                                          "worker", "thread", "start", "stop", "name"]),
                    pd.DataFrame(columns=["level", "direction", "frontier_size", "frontier_edges",
                                          "edges_examined", "discovered", "tasks", "tasks_cpu",
                                          "tasks_gpu", "start", "stop", "barrier_seconds"]))
    assert len(trace.task_table(empty)) == 0 and "bytes_moved" in trace.task_table(empty)
    assert len(trace.level_table(empty)) == 0 and "devices" in trace.level_table(empty)
    assert len(trace.thread_table(empty)) == 0
    assert len(trace.state_table(empty)) == 0


# ----------------------------------------------------------------------------- plots
def test_plot_timeline_draws_one_row_per_thread(handmade):
    import matplotlib.pyplot as plt

    ax = trace.plot_timeline(handmade)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["CPU w0.t0", "CPU w0.t1", "GPU w1.t0"]
    colors = {tuple(np.round(c.get_facecolor()[0][:3], 3)) for c in ax.collections}
    expected = {tuple(np.round(np.array(rgb) / 255, 3)) for rgb in trace.STATE_COLORS.values()}
    assert colors == expected  # all four states drawn
    assert ax.get_xlim() == pytest.approx((0.0, 0.60))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(trace.STATES)
    _, given = plt.subplots()
    assert trace.plot_timeline(handmade, ax=given) is given
    plt.close("all")


def test_plot_frontier_and_task_times(auto_run, tmp_path):
    import matplotlib.pyplot as plt

    ax = trace.plot_frontier(auto_run)
    levels = len(auto_run.levels)
    frontier, discovered = ax.containers  # the two bar series
    assert len(frontier) == len(discovered) == levels
    assert [p.get_height() for p in frontier] == list(auto_run.levels["frontier_size"])
    assert [p.get_height() for p in discovered] == list(auto_run.levels["discovered"])
    assert ax.get_yscale() == "log"
    ax.figure.savefig(tmp_path / "frontier.png")
    ax = trace.plot_task_times(auto_run, lam=100)
    assert len(ax.collections) == 1 and ax.collections[0].get_offsets().shape[0] == len(auto_run.trace)
    assert any("λ = 100" in t.get_text() for t in ax.get_legend().get_texts())
    ax = trace.plot_task_times(trace.task_table(auto_run))  # a table works too
    plt.close("all")


def test_plots_say_when_matplotlib_is_missing(handmade, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    for plot in (trace.plot_timeline, trace.plot_frontier, trace.plot_task_times):
        with pytest.raises(MissingDependencyError, match="needs matplotlib"):
            plot(handmade)
    with pytest.raises(ImportError):  # also an ImportError, as callers expect
        trace.plot_timeline(handmade)


# ----------------------------------------------------------------------------- files
HEADER = re.compile(r"^#Paraver \((\d\d)/(\d\d)/(\d\d) at (\d\d):(\d\d)\):(\d+)_ns:(\d+)\(([\d,]+)\):1:"
                    r"(\d+)\(([\d:,]+)\)$")


def _parse_prv(path):
    lines = path.read_text().splitlines()
    m = HEADER.match(lines[0])
    assert m, lines[0]
    ftime, nodes = int(m[6]), int(m[7])
    cpus = [int(c) for c in m[8].split(",")]
    tasks = [tuple(int(x) for x in t.split(":")) for t in m[10].split(",")]
    assert len(cpus) == nodes and len(tasks) == int(m[9])
    states, events, times = [], [], []
    for line in lines[1:]:
        fields = [int(x) for x in line.split(":")]
        assert fields[0] in (1, 2)
        (states if fields[0] == 1 else events).append(fields)
        times.append(fields[5])
    assert times == sorted(times)  # records in time order
    return ftime, cpus, tasks, states, events


def test_to_paraver_writes_a_consistent_trace(handmade, tmp_path):
    prv, pcf, row = trace.to_paraver(handmade, tmp_path / "run")
    assert [p.name for p in (prv, pcf, row)] == ["run.prv", "run.pcf", "run.row"]
    ftime, cpus, tasks, states, events = _parse_prv(prv)
    assert ftime == 600_000_000
    assert cpus == [2, 1] and tasks == [(2, 1), (1, 2)]  # worker 1: 2 threads on node 1, ...
    # states: per (task, thread), contiguous from 0 to ftime, on the thread's own CPU
    by_thread = {}
    for _, cpu, appl, task, thread, begin, end, state in states:
        assert appl == 1 and state in trace.STATES.values() and begin < end
        by_thread.setdefault((task, thread), []).append((begin, end, cpu))
    assert set(by_thread) == {(1, 1), (1, 2), (2, 1)}
    for spans in by_thread.values():
        spans.sort()
        assert spans[0][0] == 0 and spans[-1][1] == ftime
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
        assert len({cpu for *_, cpu in spans}) == 1
    # events: one begin and one end per step, level and task encoded + 1
    assert len(events) == 2 * len(handmade.trace)
    begins = [e for e in events if e[7] != 0]
    assert sorted((e[7] - 1, e[9] - 1) for e in begins) == sorted(zip(handmade.trace["level"], handmade.trace["task"], strict=True))
    gpu_begin = [e for e in begins if e[3] == 2]
    assert all(e[13] == 2 for e in gpu_begin) and gpu_begin[0][5] == 100_000_000
    text = pcf.read_text()
    for code in trace.STATES.values():
        assert re.search(rf"^{code}\s+\S", text.split("STATES_COLOR")[0].split("STATES")[1], re.M)
    for code in trace.PARAVER_EVENTS:
        assert f"{code}" in text
    rows = row.read_text().split("\n\n")
    assert rows[0].startswith("LEVEL CPU SIZE 3\n") and len(rows[0].splitlines()) == 4
    assert rows[1].startswith("LEVEL NODE SIZE 2\n")
    assert rows[2].startswith("LEVEL THREAD SIZE 3\n")


def test_to_paraver_of_a_real_run(auto_run, tmp_path):
    prv, _, _ = trace.to_paraver(auto_run, tmp_path / "real.prv")  # the suffix is optional
    assert prv.name == "real.prv"
    ftime, cpus, tasks, states, events = _parse_prv(prv)
    assert sum(cpus) == len(trace.thread_table(auto_run))
    assert len(events) == 2 * len(auto_run.trace)
    assert max(s[6] for s in states) == ftime


def test_to_chrome_trace(handmade, auto_run, tmp_path):
    path = trace.to_chrome_trace(handmade, tmp_path / "run.json")
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    steps = [e for e in events if e["ph"] == "X" and e["cat"].startswith("step")]
    assert len(steps) == 4
    gpu = [e for e in steps if e["args"]["device"] == "GPU"]
    assert {e["pid"] for e in gpu} == {2} and {e["pid"] for e in steps if e not in gpu} == {1}
    first = min(gpu, key=lambda e: e["ts"])
    assert first["ts"] == pytest.approx(100_000) and first["dur"] == pytest.approx(100_000)
    assert first["args"]["bytes_moved"] == 120 and first["name"] == "L0 task 0"
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert (0, "BFS levels") in names and (2, f"GPU worker {GPU}") in names
    threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in steps} <= threads
    barriers = [e for e in events if e.get("cat") == "barrier"]
    assert [b["ts"] for b in barriers] == pytest.approx([250_000, 520_000])
    assert sum(e["ph"] == "C" for e in events) == 2
    real = json.loads(trace.to_chrome_trace(auto_run, tmp_path / "real.json").read_text())
    assert sum(e.get("cat", "").startswith("step") for e in real["traceEvents"]) == len(auto_run.trace)
    assert real["otherData"]["tasks"] == 5


def test_write_trace_by_suffix(auto_run, tmp_path, monkeypatch):
    expected = trace.task_table(auto_run)
    for name in ("t.parquet", "t.csv"):
        path = trace.write_trace(auto_run, tmp_path / name)
        back = pd.read_parquet(path) if name.endswith("parquet") else pd.read_csv(path)
        assert list(back.columns) == list(expected.columns)
        assert (back[["level", "task", "size", "edges_examined"]].to_numpy()
                == expected[["level", "task", "size", "edges_examined"]].to_numpy()).all()
    with pytest.raises(tb.InvalidParameterError, match="unknown suffix '.txt'"):
        trace.write_trace(auto_run, tmp_path / "t.txt")
    monkeypatch.setattr(trace.files, "_find_spec", lambda name: None)  # as if pyarrow were not installed
    with pytest.raises(MissingDependencyError, match="needs pyarrow"):
        trace.write_trace(auto_run, tmp_path / "u.parquet")


# ----------------------------------------------------------------------------- the CLI
def test_cli_run_writes_trace_and_timeline(runtime, tmp_path, capsys):
    from taskbfs import cli

    address = runtime.client.scheduler.address  # the session's cluster, not a new one
    csv, png = tmp_path / "trace.csv", tmp_path / "timeline.png"
    status = cli.main(["run", "--scale", "9", "--keys", "2", "--tasks", "4", "--scheduler", address,
                       "--trace", str(csv), "--timeline", str(png)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"trace: {csv}" in out and f"timeline: {png}" in out
    table = pd.read_csv(csv)
    assert list(table.columns[:4]) == ["search", "source", "level", "task"]
    assert set(table["search"]) == {0, 1} and table["source"].nunique() == 2
    sources = [int(line.split()[1].rstrip(":")) for line in out.splitlines() if line.startswith("source ")]
    assert sorted(set(table["source"])) == sorted(sources)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    parquet = tmp_path / "trace.parquet"
    assert cli.main(["run", "--scale", "8", "--tasks", "2", "--scheduler", address, "--trace", str(parquet)]) == 0
    assert set(pd.read_parquet(parquet)["search"]) == {0}


def test_cli_refuses_a_bad_trace_file_before_running(tmp_path, capsys):
    from taskbfs import cli

    assert cli.main(["run", "--scale", "8", "--trace", str(tmp_path / "trace.txt")]) == 2
    captured = capsys.readouterr()
    assert "trace.txt" in captured.err and "use .parquet or .csv" in captured.err
    assert "graph:" not in captured.out  # refused before generating the graph
    assert cli.main(["run", "--scale", "8", "--trace", str(tmp_path / "no" / "dir" / "t.csv")]) == 2
    assert "no directory" in capsys.readouterr().err


def test_each_barrier_is_drawn_on_the_thread_that_ran_it(runtime):
    graph = tb.kronecker(11, seed=3)
    result = tb.bfs(graph, int(tb.search_keys(graph, 1, seed=2)[0]), tasks=4, runtime=runtime)
    threads = tb.trace.thread_table(result)
    row_of = {(w, t): r for w, t, r in zip(threads["worker"], threads["thread"], threads["row"],
                                           strict=True)}
    states = tb.trace.state_table(result)
    barriers = states[states["state"] == "barrier"]
    assert len(barriers) >= 1
    for level in result.levels.itertuples():
        expected = row_of.get((level.barrier_worker, level.barrier_thread))
        rows = set(barriers.loc[barriers["level"] == level.level, "row"])
        if expected is not None and rows:
            assert rows == {expected}


def test_the_call_does_not_wait_for_its_trace(monkeypatch):
    """A search's records are asked for when it ends and read when a table is first read:
    the call never waits for them, and a runtime's close() waits for those on their way,
    so a result read after its runtime closed still has its whole trace."""
    from taskbfs.runtime.program import Program

    def waited(*args, **kwargs):
        raise AssertionError("tb.bfs waited for the trace's records")

    monkeypatch.setattr(Program, "finished", waited)
    graph = tb.kronecker(9, seed=5)
    with tb.Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        results = [tb.bfs(graph, source, tasks=3, runtime=rt) for source in (1, 2)]
        assert not rt._pending or all(not f.cancelled() for f in rt._pending)
    for r in results:  # read after close
        steps = r.trace
        assert len(steps) and set(steps["level"]) <= set(range(r.num_levels))
        assert steps["device"].notna().all() and (steps["stop"] >= steps["start"]).all()
        assert r.placements and r.assembly_seconds >= 0
        assert len(r.levels) == r.num_levels
