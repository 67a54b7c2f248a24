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

Modules: :mod:`~taskbfs.trace.tables` (the tables, and the states and colours the
others share), :mod:`~taskbfs.trace.plots` (matplotlib) and :mod:`~taskbfs.trace.files`
(Parquet / CSV, Paraver, Chrome traces); every name below is importable from here.
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

from taskbfs.trace.files import (
    PARAVER_EVENTS,
    check_trace_path,
    to_chrome_trace,
    to_paraver,
    write_trace,
)
from taskbfs.trace.plots import (
    DEVICE_COLORS,
    check_figure_path,
    check_plotting,
    plot_frontier,
    plot_task_times,
    plot_timeline,
)
from taskbfs.trace.tables import (
    STATE_COLORS,
    STATES,
    MissingDependencyError,
    level_table,
    state_table,
    task_table,
    thread_table,
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
