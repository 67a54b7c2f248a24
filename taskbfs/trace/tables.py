"""The tables of a BFS run's trace, and the words its plots and files share.

Returns
    pandas DataFrames: :func:`task_table` (a row per step task), :func:`level_table` (a
    row per level), :func:`thread_table` (a row per timeline row) and :func:`state_table`
    (the timeline as state intervals, :data:`STATES`); :func:`search_span`, the search's
    span on the trace's clock.
Approach
    Computed from ``result.trace`` and ``result.levels`` alone (see :mod:`taskbfs.trace`);
    :mod:`taskbfs.trace.plots` and :mod:`taskbfs.trace.files` draw and write these tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from taskbfs.errors import TaskBFSError

#: Timeline states: name → Paraver state code.
STATES = {"idle": 0, "top-down": 1, "bottom-up": 2, "barrier": 3}
#: Their colours (RGB), shared by the matplotlib timeline and the Paraver .pcf. Idle is
#: Paraver's own sky blue and execution yellow, as in the paper's Fig. 11.
STATE_COLORS = {
    "idle": (117, 195, 255),
    "top-down": (255, 204, 0),
    "bottom-up": (230, 110, 0),
    "barrier": (110, 110, 110),
}
#: Runtime device names → processor labels.
PROCESSORS = {"smp": "CPU", "cuda": "GPU"}

#: The columns of :func:`task_table`, in order (further columns of the trace follow).
TASK_COLUMNS = ["level", "task", "lo", "hi", "vertices", "direction", "size", "edges_examined",
                "found", "device", "processor", "worker", "thread", "row", "start", "stop",
                "duration", "bytes_moved"]


class MissingDependencyError(TaskBFSError, ImportError):
    """An optional package (matplotlib, pyarrow) is needed for this function."""


def task_table(result) -> pd.DataFrame:
    """One row per executed step task, with what the issue's trace lists.

    Parameters
    ----------
    result : BFSResult

    Returns
    -------
    pandas.DataFrame
        Columns: ``level, task, lo, hi`` (vertex range ``[lo, hi)``), ``vertices``
        (``hi - lo``), ``direction``, ``size`` (the size the step was placed by:
        its frontier vertices, or their out-arcs in vertices of the mean degree when that is
        more, on a top-down level; unvisited vertices on a bottom-up one; scaled to the whole
        graph by its vertices over the task's), ``edges_examined``, ``found`` (vertices the
        step found, before the barrier removes duplicates), ``device`` (``"smp"`` /
        ``"cuda"``), ``processor`` (``"CPU"`` / ``"GPU"``), ``worker``, ``thread``, ``row``
        (timeline row, see :func:`thread_table`), ``start, stop, duration`` (seconds),
        ``bytes_moved`` (host↔device bytes of GPU steps, 0 on the CPU), then any further
        column of ``result.trace`` (e.g. ``h2d_bytes``, ``kernel_seconds``).

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import task_table
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> task_table(r)[["level", "task", "size", "processor"]]
       level  task  size processor
    0      0     0     2       CPU
    1      0     1     3       CPU
    2      1     1     3       CPU
    """
    trace = result.trace
    df = trace.copy()
    n = len(df)
    for name, default in (("edges_examined", 0), ("found", 0), ("size", 0)):
        if name not in df:
            df[name] = default
    df["vertices"] = (df["hi"] - df["lo"]).astype(np.int64) if n else pd.Series(dtype=np.int64)
    df["processor"] = df["device"].map(PROCESSORS).fillna(df["device"]) if n else pd.Series(dtype=object)
    df["duration"] = (df["stop"] - df["start"]).astype(float) if n else pd.Series(dtype=float)
    moved = np.zeros(n, dtype=np.int64)
    for name in ("h2d_bytes", "d2h_bytes"):
        if name in df:
            moved += df[name].fillna(0).to_numpy(dtype=np.int64)
    if "bytes_moved" in df:
        moved = df["bytes_moved"].fillna(0).to_numpy(dtype=np.int64)
    df["bytes_moved"] = moved
    rows = _row_index(df)
    df["row"] = [rows.get((w, t), -1) for w, t in zip(df["worker"], df["thread"], strict=True)] if n else []
    df["row"] = df["row"].astype(np.int64)
    extra = [c for c in df.columns if c not in TASK_COLUMNS and c != "name"]
    return df[TASK_COLUMNS + extra].sort_values(["level", "task"]).reset_index(drop=True)


def level_table(result) -> pd.DataFrame:
    """One row per BFS level: frontier, direction, devices used, and where the time went.

    Parameters
    ----------
    result : BFSResult

    Returns
    -------
    pandas.DataFrame
        ``result.levels``'s columns (level, direction, frontier_size, frontier_edges,
        edges_examined, discovered, tasks, tasks_cpu, tasks_gpu, start, stop,
        barrier_seconds, ...) plus ``visited`` (vertices reached up to this level's
        frontier), ``devices`` (``"CPU"``, ``"GPU"``, ``"CPU+GPU"`` or ``"-"``),
        ``seconds`` (the level, barrier included), ``step_seconds`` (until the barrier
        starts), ``task_seconds`` (sum of its tasks' run times), ``longest_task_seconds``,
        ``imbalance`` (longest / mean task time; 1 is perfect balance), ``bytes_moved``
        and ``meps`` (millions of edges examined per second of the level).

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import level_table
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> level_table(r)[["level", "frontier_size", "discovered", "devices"]]
       level  frontier_size  discovered devices
    0      0              1           1     CPU
    1      1              1           1     CPU
    2      2              1           0       -
    """
    levels = result.levels.copy()
    if not len(levels):
        for name in ("visited", "devices", "seconds", "step_seconds", "task_seconds",
                     "longest_task_seconds", "imbalance", "bytes_moved", "meps"):
            levels[name] = pd.Series(dtype=object if name == "devices" else float)
        return levels
    tasks = task_table(result)
    per_level = tasks.groupby("level").agg(
        task_seconds=("duration", "sum"),
        longest_task_seconds=("duration", "max"),
        mean_task_seconds=("duration", "mean"),
        bytes_moved=("bytes_moved", "sum"),
    )
    levels = levels.merge(per_level, left_on="level", right_index=True, how="left")
    levels["visited"] = levels["frontier_size"].cumsum()
    cpu = levels["tasks_cpu"].to_numpy() > 0
    gpu = levels["tasks_gpu"].to_numpy() > 0
    levels["devices"] = np.select([cpu & gpu, cpu, gpu], ["CPU+GPU", "CPU", "GPU"], "-")
    levels["seconds"] = levels["stop"] - levels["start"]
    levels["step_seconds"] = levels["seconds"] - levels["barrier_seconds"]
    for name in ("task_seconds", "longest_task_seconds", "mean_task_seconds"):
        levels[name] = levels[name].fillna(0.0)
    mean = levels.pop("mean_task_seconds").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        levels["imbalance"] = np.where(mean > 0, levels["longest_task_seconds"] / mean, np.nan)
        seconds = levels["seconds"].to_numpy()
        levels["meps"] = np.where(seconds > 0, levels["edges_examined"] / seconds / 1e6, np.nan)
    levels["bytes_moved"] = levels["bytes_moved"].fillna(0).astype(np.int64)
    return levels.reset_index(drop=True)


def thread_table(result) -> pd.DataFrame:
    """One row per timeline row: a worker thread that ran step tasks of this search.

    Returns
    -------
    pandas.DataFrame
        ``row, label, processor, worker, worker_index, thread, thread_index, tasks,
        busy_seconds, utilization`` (busy share of the search's span). CPU threads come
        first, as in the paper's Fig. 11; ``label`` reads e.g. ``"CPU w0.t1"``.
    """
    trace = result.trace
    columns = ["row", "label", "processor", "worker", "worker_index", "thread", "thread_index",
               "tasks", "busy_seconds", "utilization"]
    if not len(trace):
        return pd.DataFrame(columns=columns)
    df = trace.assign(duration=trace["stop"] - trace["start"],
                      processor=trace["device"].map(PROCESSORS).fillna(trace["device"]))
    threads = (df.groupby(["worker", "thread"], sort=False)
                 .agg(processor=("processor", _mode), first=("start", "min"),
                      tasks=("task", "size"), busy_seconds=("duration", "sum"))
                 .reset_index())
    workers = (threads.groupby("worker", sort=False)
                      .agg(processor=("processor", _mode), first=("first", "min"))
                      .reset_index())
    workers["gpu"] = workers["processor"] == "GPU"
    workers = workers.sort_values(["gpu", "first"], kind="stable").reset_index(drop=True)
    workers["worker_index"] = np.arange(len(workers))
    threads = threads.merge(workers[["worker", "worker_index", "gpu"]], on="worker")
    threads = threads.sort_values(["gpu", "worker_index", "first"], kind="stable").reset_index(drop=True)
    threads["thread_index"] = threads.groupby("worker_index").cumcount()
    threads["row"] = np.arange(len(threads))
    threads["label"] = [f"{p} w{w}.t{t}" for p, w, t in
                        zip(threads["processor"], threads["worker_index"], threads["thread_index"], strict=True)]
    span = search_span(result)[1]
    threads["utilization"] = threads["busy_seconds"] / span if span > 0 else np.nan
    return threads[columns]


def state_table(result) -> pd.DataFrame:
    """The timeline as state intervals: every row covers the whole search, without overlaps.

    Returns
    -------
    pandas.DataFrame
        ``row, state, start, stop, level`` sorted by row and time; ``state`` is one of
        :data:`STATES` (level is -1 for idle intervals).
    """
    threads = thread_table(result)
    origin, end = search_span(result)
    intervals: dict[int, list] = {int(r): [] for r in threads["row"]}
    tasks = task_table(result)
    for row, start, stop, direction, level in zip(tasks["row"], tasks["start"], tasks["stop"],
                                                  tasks["direction"], tasks["level"], strict=True):
        state = direction if direction in STATES else "top-down"
        intervals[int(row)].append((float(start), float(stop), state, int(level)))
    barriers = _barrier_rows(result, threads, list(intervals))
    out = []
    for row, spans in intervals.items():
        spans = sorted(spans) + [(b0, b1, "barrier", lv) for b0, b1, lv, rows in barriers
                                 if row in rows]
        spans.sort(key=lambda s: (s[0], s[2] == "barrier"))
        t = origin
        for start, stop, state, level in spans:
            start = max(start, t)  # clocks of different workers may disagree slightly
            stop = min(stop, end)
            if stop <= start:
                continue
            if start > t:
                out.append((row, "idle", t, start, -1))
            out.append((row, state, start, stop, level))
            t = stop
        if t < end:
            out.append((row, "idle", t, end, -1))
    return pd.DataFrame(out, columns=["row", "state", "start", "stop", "level"])


def _barrier_rows(result, threads: pd.DataFrame, all_rows: list) -> list:
    """``(start, stop, level, rows)`` per barrier: the row of the thread that ran it, or
    every row when that thread is unknown or ran no step task."""
    levels = result.levels
    row_of = {(w, t): int(r) for w, t, r in
              zip(threads["worker"], threads["thread"], threads["row"], strict=True)}
    places = zip(levels.get("barrier_worker", [None] * len(levels)),
                 levels.get("barrier_thread", [None] * len(levels)), strict=True)
    out = []
    for stop, seconds, level, place in zip(levels.get("stop", ()), levels.get("barrier_seconds", ()),
                                           levels.get("level", ()), places, strict=True):
        row = row_of.get(place)
        out.append((float(stop - seconds), float(stop), int(level),
                    [row] if row is not None else all_rows))
    return out


def _mode(values: pd.Series):
    return values.mode().iloc[0] if len(values) else None


def _row_index(trace: pd.DataFrame) -> dict:
    if not len(trace):
        return {}
    threads = thread_table(_TraceOnly(trace))
    return {(w, t): int(r) for w, t, r in zip(threads["worker"], threads["thread"], threads["row"], strict=True)}


class _TraceOnly:
    """Just enough of a BFSResult for :func:`thread_table` (its span is the trace's)."""

    def __init__(self, trace):
        self.trace = trace
        self.levels = pd.DataFrame({"start": [], "stop": []})


def search_span(result) -> tuple[float, float]:
    """(0, end of the search) on the trace's clock."""
    ends = [0.0]
    if len(result.trace):
        ends.append(float(result.trace["stop"].max()))
    if len(result.levels):
        ends.append(float(result.levels["stop"].max()))
    return 0.0, max(ends)
