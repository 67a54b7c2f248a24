"""Traces of a BFS run: tidy pandas tables, plots, and files for Paraver and Perfetto.

Returns
    pandas DataFrames (:func:`task_table`, :func:`level_table`, :func:`thread_table`,
    :func:`state_table`), matplotlib Axes (:func:`plot_timeline`, :func:`plot_frontier`,
    :func:`plot_task_times`) and files (:func:`to_paraver`, :func:`to_chrome_trace`,
    :func:`write_trace`).
Approach
    Everything is computed from a :class:`~taskbfs.BFSResult`: ``result.trace`` (one row
    per step task: level, task, vertex range, size, device, worker, thread, start, stop)
    and ``result.levels`` (one row per level, with the barrier's timing). A *timeline
    row* is one worker thread (a CPU worker thread or the thread of a GPU worker); at each
    moment it is in one of four states, as in the paper's Paraver view (Munguía et al.,
    HiPC 2012, Fig. 11, where execution is yellow and idle time sky blue):

    =============  ====  ==================================================================
    state          code  meaning
    =============  ====  ==================================================================
    idle           0     nothing of this search runs on the thread
    top-down       1     a top-down step task runs on it
    bottom-up      2     a bottom-up step task runs on it
    barrier        3     the level's barrier task merges the discoveries, drawn on the
                         thread that ran it (on every row when that thread is unknown)
    =============  ====  ==================================================================
Encoding
    Times are seconds since the search started (``result.trace``'s clock); Paraver files
    use integer nanoseconds, Chrome traces microseconds. Devices are the runtime's names,
    ``"smp"`` (CPU) and ``"cuda"`` (GPU); :func:`task_table` adds ``"CPU"`` / ``"GPU"``.

matplotlib is optional (``pip install "taskbfs[notebooks]"``); it is imported only by the
plotting functions.

Examples
--------
>>> import taskbfs as tb
>>> from taskbfs import trace
>>> r = tb.bfs(tb.Graph.from_edges([0, 1, 1], [1, 2, 3]), 0, tasks=2)
>>> trace.level_table(r)[["level", "frontier_size", "devices"]]
   level  frontier_size devices
0      0              1     CPU
1      1              1     CPU
2      2              2       -
>>> ax = trace.plot_timeline(r)
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     [path.name for path in trace.to_paraver(r, f"{folder}/bfs")]
['bfs.prv', 'bfs.pcf', 'bfs.row']
"""

from __future__ import annotations

import json
import time
from importlib.util import find_spec as _find_spec
from pathlib import Path

import numpy as np
import pandas as pd

from taskbfs.errors import InvalidParameterError, TaskBFSError

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
#: Device colours of the plots (CPU blue, GPU green).
DEVICE_COLORS = {"CPU": "#4c72b0", "GPU": "#2ca02c"}
#: Runtime device names → processor labels.
PROCESSORS = {"smp": "CPU", "cuda": "GPU"}

#: Paraver event types written by :func:`to_paraver` (value 0 ends the event).
PARAVER_EVENTS = {
    9200001: "BFS level (level + 1)",
    9200002: "BFS task id (task + 1)",
    9200003: "Frontier size of the task (vertices)",
    9200004: "Device",
    9200005: "Edges examined by the task",
}
_DEVICE_EVENT_VALUES = {"CPU": 1, "GPU": 2}
_STATE_LABELS = {"idle": "Idle", "top-down": "Step top-down", "bottom-up": "Step bottom-up",
                 "barrier": "Barrier"}

_TASK_COLUMNS = ["level", "task", "lo", "hi", "vertices", "direction", "size", "edges_examined",
                 "found", "device", "processor", "worker", "thread", "row", "start", "stop",
                 "duration", "bytes_moved"]


class MissingDependencyError(TaskBFSError, ImportError):
    """An optional package (matplotlib, pyarrow) is needed for this function."""


# ----------------------------------------------------------------------------- tables
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
    extra = [c for c in df.columns if c not in _TASK_COLUMNS and c != "name"]
    return df[_TASK_COLUMNS + extra].sort_values(["level", "task"]).reset_index(drop=True)


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
    span = _span(result)[1]
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
    origin, end = _span(result)
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


# ----------------------------------------------------------------------------- plots
def plot_timeline(result, ax=None, legend: bool = True):
    """The execution timeline: one row per worker thread, coloured by state (paper Fig. 11).

    Parameters
    ----------
    result : BFSResult
    ax : matplotlib Axes, optional
        Where to draw (a new figure if None).
    legend : bool
        Draw the state legend.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import plot_timeline
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> ax = plot_timeline(r)              # then e.g. ax.figure.savefig("timeline.png")
    >>> ax.get_xlabel()
    'seconds since the search started'
    """
    plt = _pyplot("plot_timeline")
    from matplotlib.patches import Patch

    threads = thread_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.0 + 0.35 * max(len(threads), 1)))
    states = state_table(result)
    for state, group in states.groupby("state"):
        color = _mpl_color(STATE_COLORS[state])
        # busy states get an outline of their own colour, so that a task of a few µs still shows
        outline = {"edgecolor": "none"} if state == "idle" else {"edgecolor": color, "linewidth": 0.5}
        for row, spans in group.groupby("row"):
            ax.broken_barh(list(zip(spans["start"], spans["stop"] - spans["start"], strict=True)),
                           (row - 0.4, 0.8), facecolors=color, **outline)
    ax.set_yticks(threads["row"].tolist(), threads["label"].tolist())
    ax.set_ylim(len(threads) - 0.5, -0.5)
    ax.set_xlim(*_span(result))
    ax.set_xlabel("seconds since the search started")
    for level in result.levels.itertuples():
        ax.axvline(level.stop, color="0.3", lw=0.4, alpha=0.5)
    ax.set_title(f"BFS from {result.source}: {result.num_tasks} tasks, strategy {result.strategy}, "
                 f"{len(result.levels)} levels")
    if legend:
        handles = [Patch(color=_mpl_color(c), label=s) for s, c in STATE_COLORS.items()]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False,
                  fontsize="small")
    return ax


def plot_frontier(result, ax=None, log: bool = True):
    """Frontier size, newly discovered and visited vertices per level (paper Fig. 5).

    Bottom-up levels are shaded. Returns the matplotlib Axes.

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import plot_frontier
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> ax = plot_frontier(r)
    >>> ax.get_xlabel()
    'BFS level (shaded: bottom-up)'
    """
    plt = _pyplot("plot_frontier")
    levels = level_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    x = levels["level"].to_numpy()
    width = 0.4
    ax.bar(x - width / 2, levels["frontier_size"], width, label="frontier (vertices at this level)",
           color=_mpl_color(STATE_COLORS["top-down"]), zorder=2)
    ax.bar(x + width / 2, levels["discovered"], width, label="discovered by this level",
           color=DEVICE_COLORS["CPU"], zorder=2)
    ax.plot(x, levels["visited"], "k.-", label="visited so far", zorder=3)
    for level in levels.loc[levels["direction"] == "bottom-up", "level"]:
        ax.axvspan(level - 0.5, level + 0.5, color="0.9", lw=0, zorder=0)
    if log:
        ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xlabel("BFS level (shaded: bottom-up)")
    ax.set_ylabel("vertices")
    ax.set_title(f"Traversal evolution from vertex {result.source}")
    ax.legend(fontsize="small")
    return ax


def plot_task_times(result, ax=None, lam: float | None = None):
    """Task run time against task size, one point per step, coloured by device (paper Fig. 4).

    Parameters
    ----------
    result : BFSResult or pandas.DataFrame
        A result, or a :func:`task_table` (e.g. several runs concatenated).
    lam : float, optional
        Draw the threshold λ as a vertical line.
    """
    plt = _pyplot("plot_task_times")
    tasks = result if isinstance(result, pd.DataFrame) else task_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for processor, group in tasks.groupby("processor"):
        ax.scatter(group["size"].clip(lower=1), group["duration"].clip(lower=1e-7), s=10, alpha=0.6,
                   label=f"{processor} tasks", color=DEVICE_COLORS.get(processor, "0.5"))
    if lam is not None and lam > 0:
        ax.axvline(lam, color="k", ls="--", lw=1, label=f"λ = {lam:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("task size (frontier vertices)")
    ax.set_ylabel("task run time (s)")
    ax.legend(fontsize="small")
    return ax


# ----------------------------------------------------------------------------- files
def _source_of(result):
    """A search's source for a table column: its id, or its sources' ids as text."""
    sources = getattr(result, "sources", None)
    if sources is None or len(sources) == 1:
        return int(result.source)
    return " ".join(map(str, sources.tolist()))


def write_trace(result, path) -> Path:
    """Write :func:`task_table` to ``path``: Parquet (``.parquet``, ``.pq``) or CSV (``.csv``).

    Parameters
    ----------
    result : BFSResult or list of BFSResult
        Several searches are written as one table with two leading columns, ``search``
        (0, 1, …) and ``source``.
    path : str or Path

    Raises
    ------
    InvalidParameterError
        Unknown suffix.
    MissingDependencyError
        Parquet without pyarrow.
    """
    path = check_trace_path(path)
    if isinstance(result, (list, tuple)):
        tables = [task_table(r).assign(search=i, source=_source_of(r)) for i, r in enumerate(result)]
        table = pd.concat(tables, ignore_index=True) if tables else _empty_task_table()
        table = table[["search", "source"] + [c for c in table.columns if c not in ("search", "source")]]
    else:
        table = task_table(result)
    if path.suffix.lower() == ".csv":
        table.to_csv(path, index=False)
    else:
        table.to_parquet(path, index=False)
    return path


def _empty_task_table() -> pd.DataFrame:
    """An empty :func:`task_table` (its columns, no rows)."""
    return pd.DataFrame(columns=["search", "source", *_TASK_COLUMNS])


def check_trace_path(path) -> Path:
    """``path`` as a Path if :func:`write_trace` can write it, else a clear error (nothing runs)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv"):
        raise InvalidParameterError(
            f"trace file {str(path)!r}: unknown suffix {suffix or '(none)'!r}; use .parquet or .csv")
    if suffix != ".csv" and _find_spec("pyarrow") is None:
        raise MissingDependencyError(
            f"writing {path} needs pyarrow (pip install pyarrow), or use a .csv file")
    if not path.parent.is_dir():
        raise InvalidParameterError(f"trace file {str(path)!r}: no directory {str(path.parent)!r}")
    return path


def check_figure_path(path, what: str = "the figure") -> Path:
    """``path`` as a Path if matplotlib can save a figure there (a format it writes, an
    existing directory), else a clear error (nothing runs)."""
    check_plotting(what)
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(path)
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise InvalidParameterError(
            f"{what} {str(path)!r}: unknown image suffix {path.suffix or '(none)'!r}; use one "
            f"of {', '.join('.' + f for f in sorted(formats))}")
    if not path.parent.is_dir():
        raise InvalidParameterError(f"{what} {str(path)!r}: no directory {str(path.parent)!r}")
    return path


def check_plotting(what: str = "plotting") -> None:
    """Raise :class:`MissingDependencyError` now if matplotlib is not installed."""
    if _find_spec("matplotlib") is None:
        raise MissingDependencyError(
            f"{what} needs matplotlib: pip install matplotlib (or \"taskbfs[notebooks]\")")


def to_paraver(result, basename) -> tuple[Path, Path, Path]:
    """Write the run as a Paraver trace: ``basename.prv``, ``.pcf`` and ``.row``.

    The resource model has one node per worker and one CPU per timeline row; the process
    model one application with one Paraver *task* per worker and one *thread* per worker
    thread. States are :data:`STATES`; each step also emits the events of
    :data:`PARAVER_EVENTS` at its start (and value 0 at its end).

    Returns
    -------
    (Path, Path, Path)
        The .prv, .pcf and .row files.
    """
    base = Path(basename)
    if base.suffix == ".prv":
        base = base.with_suffix("")
    prv, pcf, row = (base.with_name(base.name + s) for s in (".prv", ".pcf", ".row"))
    threads = thread_table(result)
    states = state_table(result)
    tasks = task_table(result)
    end_ns = _ns(_span(result)[1])
    workers = (threads.groupby("worker_index", sort=True)
                      .agg(worker=("worker", "first"), threads=("row", "size"))
                      .reset_index())
    # row → (cpu, appl, task, thread), all 1-based
    ids = {int(r.row): (int(r.row) + 1, 1, int(r.worker_index) + 1, int(r.thread_index) + 1)
           for r in threads.itertuples()}
    records = []
    for s in states.itertuples():
        cpu, appl, task, thread = ids[int(s.row)]
        records.append((_ns(s.start), 1, f"1:{cpu}:{appl}:{task}:{thread}:{_ns(s.start)}:{_ns(s.stop)}:"
                                         f"{STATES[s.state]}"))
    for t in tasks.itertuples():
        cpu, appl, task, thread = ids[int(t.row)]
        where = f"{cpu}:{appl}:{task}:{thread}"
        begin = (f"9200001:{int(t.level) + 1}:9200002:{int(t.task) + 1}:9200003:{int(t.size)}:"
                 f"9200004:{_DEVICE_EVENT_VALUES.get(t.processor, 0)}:9200005:{int(t.edges_examined)}")
        finish = "9200001:0:9200002:0:9200003:0:9200004:0:9200005:0"
        records.append((_ns(t.start), 2, f"2:{where}:{_ns(t.start)}:{begin}"))
        records.append((_ns(t.stop), 0, f"2:{where}:{_ns(t.stop)}:{finish}"))
    records.sort(key=lambda r: (r[0], r[1]))
    date = time.strftime("%d/%m/%y at %H:%M")
    cpus = ",".join(str(int(n)) for n in workers["threads"])
    appl = ",".join(f"{int(n)}:{i + 1}" for i, n in enumerate(workers["threads"]))
    header = f"#Paraver ({date}):{end_ns}_ns:{len(workers)}({cpus}):1:{len(workers)}({appl})"
    prv.write_text(header + "\n" + "".join(r[2] + "\n" for r in records))
    pcf.write_text(_paraver_pcf())
    names = [f"{r.label} ({r.worker})" for r in threads.itertuples()]
    row.write_text(
        f"LEVEL CPU SIZE {len(threads)}\n" + "".join(f"{n}\n" for n in names) + "\n"
        f"LEVEL NODE SIZE {len(workers)}\n" + "".join(f"{w}\n" for w in workers["worker"]) + "\n"
        f"LEVEL THREAD SIZE {len(threads)}\n" + "".join(f"{n}\n" for n in names)
    )
    return prv, pcf, row


def to_chrome_trace(result, path) -> Path:
    """Write the run as Chrome trace-event JSON (open it in https://ui.perfetto.dev).

    One process per worker (pid 1, 2, …; CPU workers first) with one thread per worker
    thread, a complete event (``"X"``) per step task with its level, range, size, edges
    and device in ``args``; process 0, "BFS levels", shows each level and its barrier, and
    a counter of the frontier size. Times are microseconds since the search started.

    Returns
    -------
    Path
    """
    path = Path(path)
    threads = thread_table(result)
    tasks = task_table(result)
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "BFS levels"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "level"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "barrier"}},
    ]
    pid_of = {}
    for r in threads.itertuples():
        pid = int(r.worker_index) + 1
        if pid not in pid_of.values():
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                           "args": {"name": f"{r.processor} worker {r.worker}"}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                           "args": {"sort_index": pid}})
        pid_of[int(r.row)] = pid
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": int(r.thread_index),
                       "args": {"name": r.label}})
    tid_of = dict(zip(threads["row"].astype(int), threads["thread_index"].astype(int), strict=True))
    for t in tasks.itertuples():
        events.append({
            "ph": "X", "name": f"L{int(t.level)} task {int(t.task)}", "cat": f"step,{t.direction}",
            "pid": pid_of[int(t.row)], "tid": tid_of[int(t.row)],
            "ts": _us(t.start), "dur": max(_us(t.stop) - _us(t.start), 0.0),
            "args": {"level": int(t.level), "task": int(t.task), "lo": int(t.lo), "hi": int(t.hi),
                     "direction": t.direction, "size": int(t.size),
                     "edges_examined": int(t.edges_examined), "found": int(t.found),
                     "device": t.processor, "bytes_moved": int(t.bytes_moved)},
        })
    for lv in result.levels.itertuples():
        events.append({"ph": "X", "name": f"level {int(lv.level)} ({lv.direction})", "cat": "level",
                       "pid": 0, "tid": 0, "ts": _us(lv.start), "dur": max(_us(lv.stop) - _us(lv.start), 0.0),
                       "args": {"frontier_size": int(lv.frontier_size), "discovered": int(lv.discovered),
                                "edges_examined": int(lv.edges_examined), "tasks": int(lv.tasks),
                                "tasks_cpu": int(lv.tasks_cpu), "tasks_gpu": int(lv.tasks_gpu)}})
        events.append({"ph": "X", "name": f"barrier {int(lv.level)}", "cat": "barrier", "pid": 0,
                       "tid": 1, "ts": _us(lv.stop - lv.barrier_seconds),
                       "dur": max(_us(lv.barrier_seconds), 0.0), "args": {"level": int(lv.level)}})
        events.append({"ph": "C", "name": "frontier", "pid": 0, "tid": 0, "ts": _us(lv.start),
                       "args": {"vertices": int(lv.frontier_size)}})
    doc = {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"source": int(result.source), "tasks": int(result.num_tasks),
                      "strategy": result.strategy, "direction": result.direction,
                      "elapsed_seconds": float(result.elapsed), "teps": float(result.teps)},
    }
    path.write_text(json.dumps(doc))
    return path


# ----------------------------------------------------------------------------- helpers
def _pyplot(what: str):
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependencyError(
            f"{what} needs matplotlib: pip install matplotlib (or \"taskbfs[notebooks]\")") from None
    return plt


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


def _span(result) -> tuple[float, float]:
    """(0, end of the search) on the trace's clock."""
    ends = [0.0]
    if len(result.trace):
        ends.append(float(result.trace["stop"].max()))
    if len(result.levels):
        ends.append(float(result.levels["stop"].max()))
    return 0.0, max(ends)


def _ns(seconds) -> int:
    return max(int(round(float(seconds) * 1e9)), 0)


def _us(seconds) -> float:
    return round(float(seconds) * 1e6, 3)


def _mpl_color(rgb) -> tuple:
    return tuple(c / 255 for c in rgb)


def _paraver_pcf() -> str:
    states = "".join(f"{code}    {_STATE_LABELS[name]}\n" for name, code in STATES.items())
    colors = "".join(f"{STATES[name]}    {{{r},{g},{b}}}\n" for name, (r, g, b) in STATE_COLORS.items())
    events = ""
    for code, label in PARAVER_EVENTS.items():
        events += f"EVENT_TYPE\n0    {code}    {label}\n"
        if code == 9200004:
            events += "VALUES\n0      End\n" + "".join(f"{v}      {k}\n" for k, v in _DEVICE_EVENT_VALUES.items())
        events += "\n"
    return (
        "DEFAULT_OPTIONS\n\n"
        "LEVEL               THREAD\n"
        "UNITS               NANOSEC\n"
        "LOOK_BACK           100\n"
        "SPEED               1\n"
        "FLAG_ICONS          ENABLED\n"
        "NUM_OF_STATE_COLORS 1000\n"
        "YMAX_SCALE          37\n\n\n"
        "DEFAULT_SEMANTIC\n\n"
        "THREAD_FUNC          State As Is\n\n\n"
        f"STATES\n{states}\n\n"
        f"STATES_COLOR\n{colors}\n\n"
        f"{events}"
    )


__all__ = [
    "DEVICE_COLORS",
    "MissingDependencyError",
    "PARAVER_EVENTS",
    "STATES",
    "STATE_COLORS",
    "level_table",
    "plot_frontier",
    "plot_task_times",
    "plot_timeline",
    "state_table",
    "task_table",
    "thread_table",
    "to_chrome_trace",
    "to_paraver",
    "check_figure_path",
    "check_plotting",
    "check_trace_path",
    "write_trace",
]
