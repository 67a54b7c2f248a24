"""The board behind the live dashboard page: what the scheduler knows of each search, fed
by the placement plugin's decisions and the summaries a search publishes (the page,
:mod:`taskbfs.dashboard`, draws it; ``data.json`` serves it).

Approach
    Scheduler half only, and cheap: :class:`LiveRuns` is one of the plugin's
    ``listeners`` (named ``taskbfs.dashboard.LISTENER``), called in the scheduler's thread with every placement decision (key,
    task, size, device, time, the policy's λ, and the task's tags). The BFS tags its tasks
    (step: level, task, size, direction; barrier: level, frontier, frontier_edges; first
    task: vertices, directed; last task: done), so no message is added to the run. A search
    run as one task (:mod:`taskbfs.search.included`) has no placed steps: its levels come from
    the summaries it publishes for the live page (the latest a few times a second,
    each saying which steps run on the GPU), which the plugin
    hands to :meth:`LiveRuns.message`. The Bokeh page and the JSON handler read
    :class:`LiveRuns` on the scheduler's event loop (the same thread): no locks. The live
    timeline costs a search nothing while no one watches; while someone does, one
    ``broadcast`` to the workers every :data:`LIVE_PULL_S` copies at most
    :data:`LIVE_MAX_ROWS` records (they stay on the workers until the client collects
    them at the end). When the last runtime leaves the scheduler, the plugin and its
    listeners go; the page stays served, showing the last search, and the next
    :func:`taskbfs.dashboard.install` feeds the same board again.
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
import logging
import math
import time
from collections import OrderedDict

logger = logging.getLogger(__name__)

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
#: The event topic on which the page asks the clients for a finished search
#: (:func:`taskbfs.finished_runs.keep_finished`).
WANTED_TOPIC = "taskbfs-finished-wanted"
#: The name of the BFS's step tasks in the execution records (the public ``r.trace``'s rows).
STEP_NAME = "bfs_step"
DEVICE_LABELS = {"smp": "CPU", "cuda": "GPU"}


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
        """What the client collected of a finished search
        (:func:`taskbfs.finished_runs.keep_finished`): every
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
        search sends nothing for it. Until the page has the whole search, it also asks
        the clients for it (:func:`taskbfs.finished_runs.keep_finished`) every
        :data:`LIVE_PULL_S`. Called on the scheduler's event loop."""
        run = self.latest(program)
        if (scheduler is None or run is None or run.complete
                or time.monotonic() - run.last_pull < LIVE_PULL_S):
            return
        run.last_pull = time.monotonic()
        scheduler.log_event(WANTED_TOPIC, {"program": run.program})
        if run.finished is None and not run.pulling:
            run.pulling = True
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


__all__ = ["LiveRuns", "WANTED_TOPIC", "record_columns"]
