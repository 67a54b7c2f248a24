"""Files of a BFS run's trace: its task table as Parquet or CSV, a Paraver trace, a
Chrome trace-event file (Perfetto).

Encoding
    Times in the tables are seconds since the search started; Paraver files use integer
    nanoseconds, Chrome traces microseconds.
"""

from __future__ import annotations

import json
import time
from importlib.util import find_spec as _find_spec
from pathlib import Path

import pandas as pd

from taskbfs.errors import InvalidParameterError
from taskbfs.trace.tables import (
    STATE_COLORS,
    STATES,
    TASK_COLUMNS,
    MissingDependencyError,
    search_span,
    state_table,
    task_table,
    thread_table,
)

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
    return pd.DataFrame(columns=["search", "source", *TASK_COLUMNS])


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
    end_ns = _ns(search_span(result)[1])
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


def _ns(seconds) -> int:
    return max(int(round(float(seconds) * 1e9)), 0)


def _us(seconds) -> float:
    return round(float(seconds) * 1e6, 3)


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
