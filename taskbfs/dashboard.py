"""The live taskbfs page of the Dask dashboard: ``/taskbfs`` (and its data, ``/taskbfs/data.json``).

Returns
    :func:`install` ``(runtime)``: the BFS calls it when a search gets its runtime (the
    runtime itself installs no page; it only offers the hook,
    :meth:`~taskbfs.runtime.Runtime.add_listener`). It serves the page on the runtime's
    scheduler — the embedded one or one started separately with ``dask scheduler``
    (taskbfs must be installed there) — once per scheduler. The page then
    refreshes while searches run and shows, for the latest search: the current level and
    direction, the work (frontier vertices, or unvisited vertices on bottom-up levels) of
    each task of that level coloured by the device the plugin chose, against the threshold
    λ; the tasks per device per level; the frontier per level; vertices and edges visited
    and TEPS so far; a timeline of its tasks like the paper's Fig. 11 (one row per worker
    thread, a bar per task from start to stop, dispatched or included, coloured by the
    device that ran it), made of the execution records ``r.trace`` is made of; a table of
    the earlier searches. While a search runs, its timeline grows: the page (or a reader
    of ``data.json``) pulls the records its tasks have left on the workers since the last
    pull, every :data:`LIVE_PULL_S`, and shows the latest :data:`LIVE_MAX_ROWS`
    (:meth:`LiveRuns.follow`). Once it has finished: every level (a table too), and the
    timeline of all its tasks, which the client sends with every level's summary
    (:func:`send_finished`). A selector shows any remembered search instead of the
    latest. ``/individual-taskbfs`` is the same plots without the dashboard's frame,
    listed in the dashboard's ``individual-plots.json`` so that JupyterLab's
    dask-labextension offers it as a panel.
Approach
    Scheduler half only, and cheap: :class:`LiveRuns` is one of the plugin's
    ``listeners`` (named :data:`LISTENER`), called in the scheduler's thread with every placement decision (key,
    task, size, device, time, the policy's λ, and the task's tags). The BFS tags its tasks
    (step: level, task, size, direction; barrier: level, frontier, frontier_edges; first
    task: vertices, directed; last task: done), so no message is added to the run. A search
    run as one task (:mod:`taskbfs.bfs.included`) has no placed steps: its levels come from
    the summaries it publishes for the live page (the latest at most every
    ``taskbfs.search.summary-interval``, each saying which steps run on the GPU), which the plugin
    hands to :meth:`LiveRuns.message`. The Bokeh page and the JSON handler read
    :class:`LiveRuns` on the scheduler's event loop (the same thread): no locks. The live
    timeline costs a search nothing while no one watches; while someone does, one
    ``broadcast`` to the workers every :data:`LIVE_PULL_S` copies at most
    :data:`LIVE_MAX_ROWS` records (they stay on the workers until the client collects
    them at the end). When the last runtime leaves the scheduler, the plugin and its
    listeners go; the page stays served, showing the last search, and the next
    :func:`install` feeds the same board again.
TEPS so far
    Graph500's count over the levels that have run: the edges of the vertices those levels
    expanded (their frontiers' degree sum, halved for an undirected graph; a level's
    frontier is counted once the next level is placed, i.e. once it ran) over the time from
    the search's first task to the placement of the latest level (or to its last task, once
    done), on the scheduler's clock. A search run as one task reports the same count in
    its summaries (every arc, less the unvisited vertices' and the frontier's yet to be
    expanded). When a search is done this is its ``traversed_edges`` over about its
    ``elapsed``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import weakref
from collections import OrderedDict

logger = logging.getLogger(__name__)

#: Path of the page (under the dashboard's prefix) and of its data.
PAGE = "/taskbfs"
DATA = "/taskbfs/data.json"
#: The plots alone, for dask-labextension (listed by the dashboard's individual-plots.json).
INDIVIDUAL_PAGE = "/individual-taskbfs"
#: Refresh period of the page (ms).
REFRESH_MS = 250
#: A running search's latest tasks its live timeline shows.
LIVE_MAX_ROWS = 2048
#: Seconds between two pulls of a running search's records from the workers (while a page
#: or data.json watches it; see LiveRuns.follow).
LIVE_PULL_S = 0.5
#: Searches remembered per scheduler (oldest dropped first).
MAX_RUNS = 8
#: Tasks of a finished search kept for its timeline (the earliest; a search has one per
#: step and barrier when its levels are dispatched, up to T + 1 per level).
MAX_TIMELINE_TASKS = 20_000
#: The name of the BFS's step tasks in the execution records (the public ``r.trace``'s rows).
STEP_NAME = "bfs_step"
#: The page's listener on the placement plugin.
LISTENER = "taskbfs-dashboard"
DEVICE_LABELS = {"smp": "CPU", "cuda": "GPU"}
DEVICE_COLORS = {"CPU": "#4c72b0", "GPU": "#2ca02c"}

_boards: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Level:
    __slots__ = ("direction", "tasks", "sizes", "devices", "frontier", "frontier_edges", "placed")

    def __init__(self, placed: float):
        self.direction = None
        self.tasks: list[int] = []
        self.sizes: list[int] = []
        self.devices: list[str] = []
        self.frontier = None
        self.frontier_edges = None
        self.placed = placed


class _Run:
    """What the page knows of one search (one runtime program)."""

    def __init__(self, program: str, now: float):
        self.program = program
        self.started = now
        self.updated = now
        self.finished: float | None = None
        self.policy = None
        self.lam = None
        self.vertices = None
        self.directed = False
        self.is_bfs = False
        self.levels: dict[int, _Level] = {}
        self.level = -1
        self.visited = 0
        self.degree_sum = 0  # of the frontiers expanded so far (a one-task search's summaries)
        self.arcs: int | None = None
        self.included = False  # one task runs the whole search: counts come as summaries
        self.last_level_placed = now
        self.placed = 0
        self.version = 0
        self.timeline: dict | None = None  # its tasks so far (LiveRuns.follow), all once finished
        self.live: list[dict] = []  # the records pulled while it runs (LiveRuns.follow)
        self.pulled: dict[str, int] = {}  # per worker: how many of its records were pulled
        self.complete = False  # the timeline is the client's, of the finished search
        self.pulling = False
        self.total = 0  # the finished search's tasks (its timeline shows the first few)
        self.zero: float | None = None  # start of the first record pulled
        self.last_pull = -math.inf  # time.monotonic() of the last pull's start

    @property
    def edges(self) -> int:
        """Edges of the levels that have run (see the module docstring, TEPS so far)."""
        degree_sum = self.degree_sum if self.included else self._expanded()
        return degree_sum if self.directed else degree_sum // 2

    def _expanded(self) -> int:
        """Degree sum of the frontiers of the placed levels that have run: all of them
        once done, else those below the latest placed barrier's level."""
        placed = [n for n, lv in self.levels.items() if lv.frontier_edges is not None]
        latest = max(placed, default=-1)
        return sum(self.levels[n].frontier_edges for n in placed
                   if self.finished is not None or n < latest)

    def summary(self) -> dict:
        """One row of the page's table of searches."""
        elapsed = self.elapsed
        return {"program": self.program, "state": "done" if self.finished is not None else "running",
                "started": float(self.started), "vertices": self.vertices,
                "levels": len(self.levels), "visited": int(self.visited), "edges": int(self.edges),
                "elapsed": float(elapsed),
                "mteps": float(self.edges / elapsed / 1e6) if elapsed > 0 else 0.0}

    @property
    def elapsed(self) -> float:
        end = self.finished if self.finished is not None else self.last_level_placed
        return max(end - self.started, 0.0)


class LiveRuns:
    """Placement listener that keeps, per search, what the page shows.

    Called as ``board(program, decision)`` by the placement plugin for every task it
    places; keeps the :data:`MAX_RUNS` latest programs.
    """

    def __init__(self, max_runs: int = MAX_RUNS):
        self.max_runs = max_runs
        self.runs: OrderedDict[str, _Run] = OrderedDict()

    # ------------------------------------------------------------ the listener (hot path)
    def __call__(self, program: str, decision: dict) -> None:
        now = decision.get("time") or time.time()
        run = self.runs.get(program)
        if run is None:
            run = self.runs[program] = _Run(program, now)
            while len(self.runs) > self.max_runs:
                self.runs.popitem(last=False)
        run.updated = now
        run.placed += 1
        run.version += 1
        if decision.get("lam") is not None:
            run.lam = decision["lam"]
            run.policy = decision.get("policy")
        if "vertices" in decision:  # the search's first task
            run.is_bfs = True
            run.vertices = decision["vertices"]
            run.arcs = decision.get("arcs")
            run.included = bool(decision.get("search"))
            run.directed = bool(decision.get("directed"))
        if decision.get("done"):
            run.finished = now
            return
        level = decision.get("level")
        if level is None:
            return
        if decision.get("search"):  # a search run as one task: its levels come as messages
            return
        run.is_bfs = True
        lv = run.levels.get(level)
        if lv is None:
            lv = run.levels[level] = _Level(now)
            run.level = max(run.level, level)
        if decision.get("task") is not None:  # a step task of the level
            lv.tasks.append(decision["task"])
            lv.sizes.append(decision.get("size") or 0)
            lv.devices.append(DEVICE_LABELS.get(decision.get("device"), decision.get("device")))
            lv.direction = decision.get("direction", lv.direction)
        elif "frontier" in decision:  # the level's barrier: the frontier it started from
            lv.frontier = decision["frontier"]
            lv.frontier_edges = decision.get("frontier_edges") or 0
            run.visited += lv.frontier
            run.last_level_placed = now

    def message(self, program: str, message: dict) -> None:
        """A message a task of ``program`` published: the level summaries of a search run
        as one task (its first placement said ``search``; see the module docstring). Each
        is shown as the level it opens; the last (an empty frontier) ends the search (the
        task writes the result: no assembly task will be placed)."""
        run = self.runs.get(program)
        if run is None:
            return
        if "summaries" in message:  # several levels' summaries in one message
            for summary in message["summaries"]:
                self.message(program, summary)
            return
        if not run.included or "frontier_size" not in message:
            return
        if run.arcs is not None and "reached" in message:
            # cumulative counts: right however few of the levels' summaries are sent
            run.visited = int(message["reached"])
            run.degree_sum = (run.arcs - int(message.get("unexplored_edges") or 0)
                              - int(message.get("frontier_edges") or 0))  # not expanded yet
        if not message["frontier_size"]:  # the search's last summary
            run.finished = time.time()
            run.version += 1
            return
        if "frontier_counts" not in message:
            return
        counts = message["frontier_counts"]
        active = [t for t, c in enumerate(counts) if c > 0]
        on_gpu = message.get("gpu_steps") or [0] * len(counts)
        summary = {"direction": message.get("direction"), "frontier": message["frontier_size"],
                   "frontier_edges": message.get("frontier_edges")}
        self._included_level(run, int(message["level"]), summary, active,
                             _step_sizes(message, active), time.time(),
                             ["cuda" if on_gpu[t] else "smp" for t in active])

    @staticmethod
    def _included_level(run: _Run, level: int, summary: dict, tasks, sizes, now: float,
                        devices) -> None:
        """A level run inside a search's one task: its steps (``tasks`` with frontier
        ``sizes``, on ``devices``) and its frontier (``summary``: direction, frontier,
        frontier_edges)."""
        lv = run.levels.get(level)
        if lv is None:
            lv = run.levels[level] = _Level(now)
        run.level = max(run.level, level)
        lv.tasks = [int(t) for t in tasks]
        lv.sizes = [int(n) for n in sizes]
        lv.devices = [DEVICE_LABELS[d] for d in devices]
        lv.direction = summary.get("direction")
        lv.frontier = int(summary["frontier"])
        lv.frontier_edges = int(summary.get("frontier_edges") or 0)
        run.last_level_placed = now
        run.updated = now
        run.version += 1

    def finished(self, program: str, payload: dict) -> None:
        """What the client collected of a finished search (:func:`send_finished`): every
        level's summary (``summaries``, as :meth:`message` gets them), so that levels whose
        live summaries were throttled away are shown too, and the execution records of all
        its tasks, dispatched and included (``records``, :func:`record_columns`; the first
        of ``total``), which become the timeline and say on which device each step ran."""
        run = self.runs.get(program)
        if run is None:
            return
        records = payload.get("records") or {}
        ran_on = {(lv, t): d for lv, t, d, n in zip(records.get("level", ()), records.get("task", ()),
                                                     records.get("device", ()), records.get("name", ()),
                                                     strict=True) if n == STEP_NAME and lv is not None}
        summaries = payload.get("summaries") or []
        if summaries:
            run.levels = {}
        now = time.time()
        for message in summaries[:-1]:  # the last one only closes the last level
            counts = message["frontier_counts"]
            on_gpu = message.get("gpu_steps") or [0] * len(counts)
            active = [t for t, c in enumerate(counts) if c > 0]
            devices = [ran_on.get((int(message["level"]), t), "cuda" if on_gpu[t] else "smp")
                       for t in active]
            summary = {"direction": message.get("direction"), "frontier": message["frontier_size"],
                       "frontier_edges": message.get("frontier_edges")}
            self._included_level(run, int(message["level"]), summary, active,
                                 _step_sizes(message, active), now, devices)
        if summaries:
            last = summaries[-1]
            run.level = max(run.levels, default=-1)
            run.visited = int(last.get("reached") or run.visited)
            if run.included and run.arcs is not None:
                run.degree_sum = run.arcs - int(last.get("unexplored_edges") or 0)
        run.timeline = _timeline(records)
        run.complete = True
        run.total = int(payload.get("total") or len(run.timeline["start"]))
        if run.finished is None:
            run.finished = now
        run.version += 1

    # ------------------------------------------------------------ the live timeline
    def follow(self, scheduler, program: str | None = None) -> None:
        """Start pulling the execution records the workers made for the running search
        ``program`` (the latest by default) since the last pull, unless one is under way
        or started less than :data:`LIVE_PULL_S` ago: its timeline grows while a page or
        ``data.json`` watches it, showing its latest :data:`LIVE_MAX_ROWS` tasks. The
        search sends nothing for it. Called on the scheduler's event loop."""
        run = self.latest(program)
        if (scheduler is None or run is None or run.finished is not None or run.pulling
                or time.monotonic() - run.last_pull < LIVE_PULL_S):
            return
        run.pulling, run.last_pull = True, time.monotonic()
        asyncio.ensure_future(self._pull(scheduler, run))

    @staticmethod
    async def _pull(scheduler, run: _Run) -> None:
        """One pull of :meth:`follow`: every worker's new records of ``run`` (its latest
        :data:`LIVE_MAX_ROWS`), then its timeline redrawn (unless the client's has come)."""
        from taskbfs.runtime.worker import RECORDS_OP

        try:  # the page must never stop a search
            replies = await scheduler.broadcast(
                msg={"op": RECORDS_OP, "program": run.program, "starts": dict(run.pulled),
                     "limit": LIVE_MAX_ROWS}, on_error="ignore")
            new = {address: (reply["total"], _unpacked(reply["records"]))
                   for address, reply in replies.items() if isinstance(reply, dict)}
            if run.complete or not any(records for _, records in new.values()):
                return
            for address, (total, records) in new.items():
                run.pulled[address] = total
                run.live.extend(records)
            run.live.sort(key=lambda r: r.get("start") or 0.0)
            del run.live[:-LIVE_MAX_ROWS]
            if run.zero is None:  # the timeline's origin: the first task pulled
                run.zero = run.live[0].get("start") or 0.0
            run.timeline = _timeline(record_columns(run.live), zero=run.zero)
            run.version += 1
        except Exception:
            logger.debug("taskbfs: the running search's records were not pulled", exc_info=True)
        finally:
            run.pulling = False

    # ------------------------------------------------------------ readers
    def latest(self, program: str | None = None) -> _Run | None:
        """The search ``program``, or the most recently active one."""
        if program is not None:
            return self.runs.get(program)
        searches = [r for r in self.runs.values() if r.is_bfs]
        return max(searches, key=lambda r: r.updated, default=None)

    def snapshot(self, program: str | None = None) -> dict:
        """Plain-data view of one search (the latest by default), as the page shows it.

        Keys: ``program``, ``programs`` (known ids), ``state`` (``"idle"``, ``"running"``,
        ``"done"``), ``policy``, ``lam``, ``level``, ``direction``, ``visited``, ``edges``,
        ``elapsed``, ``teps``, ``placed``, ``tasks`` (the step tasks of the current level —
        of the level with the most work once the search is done —: ``level``, and per task
        ``task``, ``size``, ``device``) and ``levels`` (per level: ``level``,
        ``direction``, ``frontier``, ``cpu``, ``gpu``), ``timeline`` (the search's tasks, from
        their execution records: ``rows`` (labels), and per task ``row``,
        ``start``, ``stop`` (seconds from the first task's start), ``device``, ``name``,
        ``level``, ``task``, ``included``, ``container`` (it ran included tasks), ``live``
        (a running search's latest tasks, :meth:`follow`), ``total`` (its tasks finished so
        far)) and ``history`` (the searches remembered, newest first:
        :meth:`_Run.summary` rows).
        """
        run = self.latest(program)
        out = {"program": None, "programs": [p for p, r in self.runs.items() if r.is_bfs],
               "state": "idle", "policy": None, "lam": None, "level": None, "direction": None,
               "vertices": None, "visited": 0, "edges": 0, "elapsed": 0.0, "teps": 0.0, "placed": 0,
               "tasks": {"level": None, "task": [], "size": [], "device": []},
               "levels": {"level": [], "direction": [], "frontier": [], "cpu": [], "gpu": []},
               "timeline": _timeline({}),
               "history": [r.summary() for r in sorted(
                   (r for r in self.runs.values() if r.is_bfs), key=lambda r: -r.started)]}
        if run is None:
            return out
        current = run.levels.get(run.level)
        shown = run.level
        if run.finished is not None and run.levels:  # done: show the level with the largest frontier
            shown = max(run.levels, key=lambda n: (_frontier(run.levels[n]), -n))
        elapsed = run.elapsed
        levels = out["levels"]
        for number in sorted(run.levels):
            lv = run.levels[number]
            levels["level"].append(int(number))
            levels["direction"].append(lv.direction or "")
            levels["frontier"].append(_frontier(lv))
            levels["cpu"].append(sum(d == "CPU" for d in lv.devices))
            levels["gpu"].append(sum(d == "GPU" for d in lv.devices))
        out.update(
            program=run.program,
            state="done" if run.finished is not None else "running",
            policy=run.policy,
            lam=None if run.lam is None else float(run.lam),
            level=None if current is None else int(run.level),
            direction=None if current is None else current.direction,
            vertices=run.vertices,
            visited=int(run.visited),
            edges=int(run.edges),
            elapsed=float(elapsed),
            teps=float(run.edges / elapsed) if elapsed > 0 else 0.0,
            placed=int(run.placed),
        )
        if run.timeline is not None:
            total = run.total if run.complete else sum(run.pulled.values())
            out["timeline"] = dict(run.timeline, live=not run.complete, total=total)
        if shown in run.levels:
            lv = run.levels[shown]
            out["tasks"] = {"level": int(shown), "task": [int(t) for t in lv.tasks],
                            "size": [int(s) for s in lv.sizes], "device": list(lv.devices)}
        return out


def _unpacked(value):
    """A worker's serialized reply as the scheduler receives it: wrapped (in-process
    workers) or still serialized (other processes)."""
    from distributed.protocol.serialize import Serialize, Serialized, deserialize

    if isinstance(value, Serialize):
        return value.data
    if isinstance(value, Serialized):
        return deserialize(value.header, value.frames)
    return value


def _step_sizes(summary: dict, tasks) -> list[int]:
    """The sizes the policy placed ``tasks``' steps of a level by (a summary's
    ``step_sizes``; its frontier counts where it has none)."""
    sizes = summary.get("step_sizes") or summary["frontier_counts"]
    return [sizes[t] for t in tasks]


def record_columns(records) -> dict:
    """A search's execution records (one dict per task, as ``Program.records`` returns
    them) as plain columns for :meth:`LiveRuns.finished`: ``key, name, device, worker,
    thread, start, stop, level, task, included`` (the key of the task that ran it, or
    None); at most :data:`MAX_TIMELINE_TASKS`, the earliest."""
    records = sorted(records, key=lambda r: r.get("start") or 0.0)[:MAX_TIMELINE_TASKS]

    def number(value):
        return None if value is None else int(value)

    return {
        "key": [str(r.get("key", "")) for r in records],
        "name": [str(r.get("name", "")) for r in records],
        "device": [str(r.get("device") or "smp") for r in records],
        "worker": [str(r.get("worker") or "") for r in records],
        "thread": [int(r.get("thread") or 0) for r in records],
        "start": [float(r.get("start") or 0.0) for r in records],
        "stop": [float(r.get("stop") or 0.0) for r in records],
        "level": [number(r.get("level")) for r in records],
        "task": [number(r.get("task")) for r in records],
        "included": [None if r.get("included") is None else str(r["included"]) for r in records],
    }


def _timeline(columns: dict, zero: float | None = None) -> dict:
    """The page's timeline (see :meth:`LiveRuns.snapshot`) from :func:`record_columns`:
    one row per worker thread, CPU threads first, then the threads that ran GPU tasks;
    times from ``zero`` (default: the first task's start)."""
    n = len(columns.get("start", ()))
    out = {"rows": [], "row": [], "start": [], "stop": [], "device": [], "name": [], "level": [],
           "task": [], "included": [], "container": [], "live": False, "total": 0}
    if not n:
        return out
    threads = list(dict.fromkeys(zip(columns["worker"], columns["thread"], strict=True)))
    gpu = {(w, t) for w, t, d in zip(columns["worker"], columns["thread"], columns["device"],
                                     strict=True) if d == "cuda"}
    threads.sort(key=lambda wt: ((wt in gpu), wt[0]))  # stable: first-seen order within a worker
    numbers: dict = {}
    labels = []
    for worker, thread in threads:
        kind = "GPU" if (worker, thread) in gpu else "CPU"
        numbers[worker, kind] = numbers.get((worker, kind), 0) + 1
        labels.append(f"{kind} {numbers[worker, kind]} · {_short(worker)}")
    row_of = {wt: i for i, wt in enumerate(threads)}
    zero = min(columns["start"]) if zero is None else zero
    parents = set(filter(None, columns["included"]))
    out["rows"] = labels
    out["row"] = [row_of[wt] for wt in zip(columns["worker"], columns["thread"], strict=True)]
    out["start"] = [t - zero for t in columns["start"]]
    out["stop"] = [t - zero for t in columns["stop"]]
    out["device"] = [DEVICE_LABELS.get(d, d) for d in columns["device"]]
    out["name"] = list(columns["name"])
    out["level"] = list(columns["level"])
    out["task"] = list(columns["task"])
    out["included"] = [p is not None for p in columns["included"]]
    out["container"] = [k in parents for k in columns["key"]]
    return out


def _short(address: str) -> str:
    """A worker address without its protocol and, on this machine, its host; an
    in-process worker by its number."""
    scheme, _, where = address.rpartition("://")
    if scheme == "inproc":
        return "worker " + where.rsplit("/", 1)[-1]
    return where.replace("127.0.0.1", "") or "local"


def _frontier(lv: _Level) -> int:
    """Frontier vertices of a level: from its barrier's tag, else (not placed yet) its steps'."""
    if lv.frontier is not None:
        return int(lv.frontier)
    return int(sum(lv.sizes)) if lv.direction != "bottom-up" else 0


# ----------------------------------------------------------------------------- the client's half
#: The most records and level summaries of a finished search the page is given.
FINISHED_MAX_ROWS = 4096


def send_finished(client, program: str, records, summaries, steps=None) -> None:
    """Give the page on ``client``'s scheduler what the client collected of the finished
    search ``program``: its execution records (the ones ``r.trace`` is made of) and every
    level's summary (:meth:`LiveRuns.finished`). Made and sent on the client's event loop,
    without waiting for an answer (the caller's search is over; the page refreshes when it
    arrives); a failure is logged at debug level and never raised. ``steps``: a function
    that gives more records as columns (as :func:`record_columns` makes them: the steps a
    search kept as arrays), called there too.
    """

    # a deep search's first levels only: the page draws a few thousand bars and rows, and
    # this runs on the loop that (embedded) also runs the cluster
    total = len(records)
    records = records[:FINISHED_MAX_ROWS]
    summaries = summaries[:FINISHED_MAX_ROWS]

    async def send():
        from distributed.protocol.pickle import dumps

        try:  # the page must never stop a search
            columns, count = record_columns(records), total
            if steps is not None:
                more = steps()
                count += len(more["start"])
                columns = _joined_columns(columns, more)
            payload = {"records": columns, "total": count,
                       "summaries": [_drawn(summary) for summary in summaries]}
            # the placement plugin's handler, not run_on_scheduler (a log record per call)
            await client.scheduler.taskbfs_finished(program=program, payload=dumps(payload))
        except Exception:
            logger.debug("taskbfs: the finished search was not sent to the page", exc_info=True)

    client.loop.add_callback(send)


#: What :meth:`LiveRuns.finished` reads of a level summary: its numbers, and per task
#: (T-sized) the frontier counts, the sizes its steps were placed by and their device.
_DRAWN_NUMBERS = ("level", "direction", "frontier_size", "frontier_edges", "reached",
                  "unexplored_edges")
_DRAWN_PER_TASK = ("frontier_counts", "step_sizes", "gpu_steps")


def _drawn(summary) -> dict:
    """The part of ``summary`` (a ``LevelSummary``) that the page draws, in plain data
    (lists pickle faster than many small arrays): half of ``to_message``'s cost and bytes
    on a deep search (benchmarks/RESULTS.md, "The finished search's page payload")."""
    out = {name: getattr(summary, name) for name in _DRAWN_NUMBERS}
    for name in _DRAWN_PER_TASK:
        out[name] = getattr(summary, name).tolist()
    return out


def _joined_columns(first: dict, second: dict) -> dict:
    """Two sets of :func:`record_columns` as one; over :data:`FINISHED_MAX_ROWS` rows, the
    earliest ones."""
    joined = {name: values + second[name] for name, values in first.items()}
    if len(joined["start"]) <= FINISHED_MAX_ROWS:
        return joined
    start = joined["start"]
    order = sorted(range(len(start)), key=start.__getitem__)[:FINISHED_MAX_ROWS]
    return {name: [values[i] for i in order] for name, values in joined.items()}


# ----------------------------------------------------------------------------- installation
def install(runtime):
    """Serve the live page on ``runtime``'s scheduler, fed by its placement decisions.

    Idempotent: once per runtime it costs one scheduler call, later calls nothing; the
    page and its board are made once per scheduler. A scheduler without Bokeh, or
    without a dashboard, gets the JSON data route only, or just the board; a failure is
    logged on the scheduler and never raised (the page must not stop a search).

    Parameters
    ----------
    runtime : taskbfs.runtime.Runtime

    Returns
    -------
    The runtime, for chaining (``rt = install(rt)``).
    """
    from taskbfs import config

    try:  # within runtime.connect-timeout: a stopped scheduler must not hold a search
        runtime.add_listener(LISTENER, board_on, config.get("runtime.connect-timeout"))
    except Exception:  # e.g. a scheduler that cannot import taskbfs.dashboard
        logger.warning("taskbfs: the /taskbfs dashboard page could not be added", exc_info=True)
    return runtime


def board_on(scheduler) -> LiveRuns:
    """The :class:`LiveRuns` of ``scheduler``, made and its page served the first time.

    Runs on the scheduler (:meth:`~taskbfs.runtime.Runtime.add_listener` sends it there).
    Without an HTTP server only the board is kept; without Bokeh (or with the dashboard
    off) only the JSON data route is served.
    """
    board = _boards.get(scheduler)
    if board is not None:
        return board
    board = _boards[scheduler] = LiveRuns()
    http = getattr(scheduler, "http_application", None)
    if http is None:
        return board
    prefix = _dashboard_prefix(http)
    from tornado.web import RequestHandler

    class DataHandler(RequestHandler):
        def get(self):
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            program = self.get_argument("program", None)
            board.follow(scheduler, program)
            self.write(json.dumps(board.snapshot(program)))

    http.add_handlers(r".*", [(prefix + DATA.replace(".", r"\."), DataHandler)])
    if prefix is not None and _has_bokeh_dashboard(http):
        _add_bokeh_page(scheduler, http, prefix)
    return board


def _dashboard_prefix(http) -> str:
    """The dashboard's URL prefix ("" or "/something"), read from its Bokeh app."""
    for app in getattr(http, "applications", ()):
        prefix = getattr(app, "prefix", None)
        if isinstance(prefix, str):
            return prefix.rstrip("/")
    return ""


def _has_bokeh_dashboard(http) -> bool:
    return any(type(app).__name__.endswith("BokehTornado") for app in getattr(http, "applications", ()))


def _add_bokeh_page(scheduler, http, prefix: str) -> None:
    from distributed.dashboard.core import BokehApplication
    from tornado.ioloop import IOLoop

    variables = {}
    try:
        from distributed.dashboard.scheduler import template_variables

        variables = template_variables(scheduler)
        if PAGE.strip("/") not in variables["pages"]:
            variables["pages"].append(PAGE.strip("/"))  # a link in the dashboard's top bar
    except Exception:  # the navigation bar is a nicety
        logger.debug("taskbfs: dashboard navigation not extended", exc_info=True)
    app = BokehApplication({PAGE: taskbfs_doc, INDIVIDUAL_PAGE: individual_taskbfs_doc}, scheduler,
                           prefix=prefix, template_variables=variables)
    http.add_application(app)
    app.initialize(IOLoop.current())
    app.start()
    _list_individual_page(http, app)


def _list_individual_page(http, app) -> None:
    """Name :data:`INDIVIDUAL_PAGE` among the paths of the dashboard's own Bokeh application,
    which is where its ``individual-plots.json`` (read by dask-labextension) looks for
    ``individual-*`` pages. Our application serves the page; the entry only lists it."""
    ours = app.applications[INDIVIDUAL_PAGE]
    for other in http.applications:
        if other is not app and type(other).__name__.endswith("BokehTornado"):
            other.applications.setdefault(INDIVIDUAL_PAGE, ours)
            return


# ----------------------------------------------------------------------------- the page
def taskbfs_doc(scheduler, extra, doc) -> None:
    """Build the Bokeh document of ``/taskbfs`` (called by Bokeh for every browser session)."""
    board = _boards.get(scheduler) or LiveRuns()
    page = _Page(board, scheduler)
    doc.title = "taskbfs: live BFS"
    doc.add_root(page.root)
    doc.add_periodic_callback(page.update, REFRESH_MS)
    page.update()
    try:
        from distributed.dashboard.components.scheduler import BOKEH_THEME, env

        doc.template = env.get_template("simple.html")
        doc.template_variables.update(extra)
        doc.theme = BOKEH_THEME
    except Exception:  # plain page without distributed's frame
        logger.debug("taskbfs: dashboard template unavailable", exc_info=True)


def individual_taskbfs_doc(scheduler, extra, doc) -> None:
    """Build the Bokeh document of ``/individual-taskbfs``: the page's plots without the
    dashboard's frame (a dask-labextension panel)."""
    page = _Page(_boards.get(scheduler) or LiveRuns(), scheduler)
    doc.title = "taskbfs"
    page.root.sizing_mode = "stretch_both"
    doc.add_root(page.root)
    doc.add_periodic_callback(page.update, REFRESH_MS)
    page.update()


#: Columns of the table of searches: (field of a history row, title).
HISTORY_COLUMNS = (("program", "search"), ("state", "state"), ("vertices", "vertices"),
                   ("levels", "levels"), ("visited", "visited"), ("edges", "edges"),
                   ("elapsed", "seconds"), ("mteps", "MTEPS"))


class _Page:
    """The Bokeh models of the page and their refresh."""

    def __init__(self, board: LiveRuns, scheduler=None):
        from bokeh.layouts import column, row
        from bokeh.models import (
            BasicTicker,
            ColumnDataSource,
            DataRange1d,
            DataTable,
            Div,
            HoverTool,
            NumberFormatter,
            Select,
            TableColumn,
        )
        from bokeh.plotting import figure

        self.board = board
        self.scheduler = scheduler  # where the running search's records are pulled from
        self.seen = None
        self.chosen: str | None = None  # the search the selector names; None: the latest
        self.select = Select(title="Search", value=LATEST, options=[(LATEST, "the latest")],
                             name="taskbfs-select", width=420)
        self.select.on_change("value", self._choose)
        self.header = Div(text=_header({"state": "idle"}), name="taskbfs-header",
                          sizing_mode="stretch_width")
        self.tasks = ColumnDataSource({"task": [], "size": [], "device": [], "color": []}, name="taskbfs-tasks")
        self.lam = ColumnDataSource({"x": [], "y": []}, name="taskbfs-lambda")
        self.levels = ColumnDataSource({"level": [], "direction": [], "frontier": [], "cpu": [], "gpu": []},
                                       name="taskbfs-levels")
        common = {"height": 320, "sizing_mode": "stretch_width", "tools": "pan,wheel_zoom,box_zoom,reset,save"}

        work = figure(title="Work per task against λ (dashed)",
                      y_axis_type="log", y_range=DataRange1d(start=0.5), name="taskbfs-work", **common)
        work.vbar(x="task", top="size", bottom=0.5, width=0.8, color="color", legend_field="device",
                  source=self.tasks)
        work.line(x="x", y="y", source=self.lam, color="#d62728", line_dash="dashed", line_width=2)
        work.xaxis.axis_label = "task"
        work.yaxis.axis_label = "size placed by (vertices; unvisited, bottom-up)"
        work.add_tools(HoverTool(tooltips=[("task", "@task"), ("size", "@size"), ("device", "@device")]))
        work.legend.location = "top_left"
        work.legend.background_fill_alpha = 0.6

        devices = figure(title="Tasks per device per level", name="taskbfs-devices", **common)
        devices.vbar_stack(["cpu", "gpu"], x="level", width=0.8, source=self.levels,
                           fill_color=[DEVICE_COLORS["CPU"], DEVICE_COLORS["GPU"]], line_color=None,
                           legend_label=["CPU", "GPU"])
        devices.xaxis.axis_label = "level"
        devices.yaxis.axis_label = "tasks"
        devices.legend.location = "top_left"

        frontier = figure(title="Frontier per level", y_axis_type="log", y_range=DataRange1d(start=0.5),
                          name="taskbfs-frontier", **common)
        frontier.vbar(x="level", top="frontier", bottom=0.5, width=0.8, source=self.levels, color="#ffcc00")
        frontier.xaxis.axis_label = "level"
        frontier.yaxis.axis_label = "vertices"
        frontier.add_tools(HoverTool(tooltips=[("level", "@level"), ("direction", "@direction"),
                                               ("frontier", "@frontier"), ("CPU tasks", "@cpu"),
                                               ("GPU tasks", "@gpu")]))
        for fig in (work, devices, frontier):  # task ids and levels are integers
            fig.xaxis.ticker = BasicTicker(min_interval=1)
        self.work = work
        self.timeline = ColumnDataSource({field: [] for field in TIMELINE_FIELDS}, name="taskbfs-timeline")
        self.timeline_plot = _timeline_figure(self.timeline)
        self.level_rows = ColumnDataSource({field: [] for field, _ in LEVEL_COLUMNS}, name="taskbfs-level-rows")
        level_table = DataTable(source=self.level_rows, name="taskbfs-level-table", height=220,
                                sizing_mode="stretch_width", index_position=None,
                                columns=[TableColumn(field=f, title=t) for f, t in LEVEL_COLUMNS])
        self.history = ColumnDataSource({field: [] for field, _ in HISTORY_COLUMNS},
                                        name="taskbfs-history")
        formats = {"elapsed": "0.000", "mteps": "0,0.0", "visited": "0,0", "edges": "0,0",
                   "vertices": "0,0"}
        columns = [TableColumn(field=field, title=title, **(
                       {"formatter": NumberFormatter(format=formats[field])} if field in formats else {}))
                   for field, title in HISTORY_COLUMNS]
        table = DataTable(source=self.history, columns=columns, name="taskbfs-history-table",
                          height=220, sizing_mode="stretch_width", index_position=None)
        self.root = column(self.select, self.header, row(work, devices, sizing_mode="stretch_width"),
                           frontier, self.timeline_plot, Div(text="<h3>Levels</h3>"), level_table,
                           Div(text="<h3>Searches (newest first)</h3>"), table,
                           sizing_mode="stretch_width", name="taskbfs-root")

    def _choose(self, attr, old, new) -> None:
        self.chosen = None if new == LATEST else new
        self.update()

    def update(self) -> None:
        if self.chosen is not None and self.board.latest(self.chosen) is None:
            self.chosen = None  # dropped from the board: back to the latest
        self.board.follow(self.scheduler, self.chosen)
        snap = self.board.snapshot(self.chosen)
        run = self.board.latest(self.chosen)
        stamp = (snap["program"], run.version if run else None, snap["state"])
        self.header.text = _header(snap)  # elapsed time moves on while running
        history = {field: [row[field] for row in snap["history"]] for field, _ in HISTORY_COLUMNS}
        if history != dict(self.history.data):
            self.history.data = history
        options = [(LATEST, "the latest")] + [(row["program"], f"{row['program']} ({row['state']})")
                                              for row in snap["history"]]
        if options != [tuple(o) for o in self.select.options]:
            self.select.options = options
        if self.select.value != (self.chosen or LATEST):
            self.select.value = self.chosen or LATEST
        if stamp == self.seen:
            return
        self.seen = stamp
        self._show_timeline(snap["timeline"])
        self.level_rows.data = {field: snap["levels"][field] for field, _ in LEVEL_COLUMNS}
        tasks = snap["tasks"]
        self.tasks.data = {"task": tasks["task"], "size": tasks["size"], "device": tasks["device"],
                           "color": [DEVICE_COLORS.get(d, "#999999") for d in tasks["device"]]}
        which = "current level" if snap["state"] == "running" else "largest level"
        self.work.title.text = (f"Work per task at the {which} ({tasks['level']}) against λ (dashed)"
                                if tasks["level"] is not None else "Work per task against λ (dashed)")
        lam = snap["lam"]
        if lam and tasks["task"]:
            self.lam.data = {"x": [min(tasks["task"]) - 0.5, max(tasks["task"]) + 0.5], "y": [lam, lam]}
        else:
            self.lam.data = {"x": [], "y": []}
        self.levels.data = snap["levels"]


    def _show_timeline(self, timeline: dict) -> None:
        full = [not c for c in timeline["container"]]
        self.timeline.data = {
            **{field: timeline[field] for field in TIMELINE_FIELDS if field in timeline},
            "top": [r + (0.4 if f else 0.48) for r, f in zip(timeline["row"], full, strict=True)],
            "bottom": [r - (0.4 if f else 0.48) for r, f in zip(timeline["row"], full, strict=True)],
            "color": [DEVICE_COLORS.get(d, "#999999") for d in timeline["device"]],
            "alpha": [1.0 if f else 0.25 for f in full],
            "duration": [b - a for a, b in zip(timeline["start"], timeline["stop"], strict=True)],
        }
        plot = self.timeline_plot
        plot.yaxis.ticker = list(range(len(timeline["rows"])))
        plot.yaxis.major_label_overrides = {i: label for i, label in enumerate(timeline["rows"])}
        plot.height = max(160, 60 + 26 * len(timeline["rows"]))
        if timeline.get("live"):
            plot.title.text = (f"The latest {len(timeline['start']):,} of the {timeline['total']:,} "
                               "tasks finished so far, one row per worker thread (the paper's "
                               "Fig. 11): the search is running")
        elif timeline["rows"]:
            plot.title.text = ("Tasks over time, one row per worker thread (the paper's Fig. 11); "
                               "faint: a task that ran others included in it")
        else:
            plot.title.text = "Tasks over time: drawn as the search's tasks finish"


#: The page's choice of "the latest search".
LATEST = "latest"
#: Columns of the timeline's data source (besides the drawn geometry).
TIMELINE_FIELDS = ("row", "start", "stop", "device", "name", "level", "task", "included", "top",
                   "bottom", "color", "alpha", "duration")
#: Columns of the table of levels: (field of the snapshot's levels, title).
LEVEL_COLUMNS = (("level", "level"), ("direction", "direction"), ("frontier", "frontier"),
                 ("cpu", "CPU tasks"), ("gpu", "GPU tasks"))


def _timeline_figure(source):
    """The timeline plot: a bar per task, from its start to its stop, on its thread's row,
    coloured by device."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure

    plot = figure(title="Tasks over time", height=160, sizing_mode="stretch_width",
                  tools="xpan,xwheel_zoom,box_zoom,reset,save", name="taskbfs-timeline-plot")
    plot.quad(left="start", right="stop", bottom="bottom", top="top", source=source,
              fill_color="color", fill_alpha="alpha", line_color=None, legend_field="device")
    plot.xaxis.axis_label = "seconds since the search's first task started"
    plot.yaxis.ticker = []
    plot.ygrid.grid_line_color = None
    plot.legend.location = "top_right"
    plot.add_tools(HoverTool(tooltips=[("task", "@name"), ("level", "@level"), ("task id", "@task"),
                                       ("device", "@device"), ("seconds", "@duration{0.000000}"),
                                       ("included", "@included")]))
    return plot


def _header(snap: dict) -> str:
    if snap.get("program") is None:
        return ("<h2>taskbfs</h2><p>No search yet: run <code>taskbfs.bfs(..., runtime=...)</code> "
                "on this cluster and this page follows it.</p>")
    lam = "–" if snap["lam"] is None else f"{snap['lam']:g}"
    teps = snap["teps"]
    if snap["state"] == "running":
        where = f"<b>level {snap['level']}</b> ({snap['direction'] or 'barrier only'})"
    else:
        where = f"<b>{len(snap['levels']['level'])} levels</b>"
    return (
        f"<h2>taskbfs: search {snap['program']} — {snap['state']}</h2>"
        f"<p>{where} · policy {snap['policy'] or '–'}, "
        f"λ = {lam} · {len(snap['tasks']['task'])} tasks at level {snap['tasks']['level']} · "
        f"visited {snap['visited']:,} of {snap['vertices'] or 0:,} vertices, {snap['edges']:,} edges · "
        f"{snap['elapsed']:.3f} s · <b>{teps / 1e6:,.2f} MTEPS{' so far' if snap['state'] == 'running' else ''}"
        f"</b> · {snap['placed']:,} tasks placed</p>"
    )


__all__ = ["DATA", "INDIVIDUAL_PAGE", "LISTENER", "PAGE", "LiveRuns", "board_on",
           "individual_taskbfs_doc", "install", "record_columns", "send_finished", "taskbfs_doc"]
