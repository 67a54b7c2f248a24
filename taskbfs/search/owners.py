"""Dispatched levels: every level as step tasks and one barrier per owner worker.

Returns
    :func:`owned_search` → ``(summaries, result, exchange)`` for
    :meth:`taskbfs.search.core._Search.dispatched` (a search whose levels go through the
    Dask scheduler: ``dispatch="tasks"``, or no worker can include the whole search): the
    level summaries the client made, the result (gathered into two arrays for a graph
    the client holds, left on the owners in one piece per vertex range for a
    :class:`~taskbfs.placed.graph.DistributedGraph`), and the bytes each level moved
    between workers.
Approach
    Each worker holding slices of the graph *owns* those vertex ranges (W owners: one on
    the embedded cluster, several when the slices were spread). It keeps two data: an
    :class:`OwnerState` (per range its distances and parents, and its slice's offsets as
    out-degrees: what the barriers and the result read) and an :class:`OwnerFrontier`
    (per range its current frontier and unvisited count, for all its ranges the visited
    bits it knows and its frontier as bits: what the steps read, about n/4 bytes, so that
    a step placed on another worker copies that, not the result arrays). A level is one
    batch of tasks:

    1. per range with work, a step task (placed by the policy, CPU or GPU, as everywhere)
       reading its slice and its owner's frontier (on the owner's worker: no copy); bottom-up
       with several owners also every owner's share of the frontier bits, ORed into the
       whole bitmap once per level on the step's worker. The step splits what it found
       into one :class:`Piece` per owner (top-down candidates go to whoever owns them; bottom-up
       discoveries are the step's own vertices, so only its own owner gets any);
    2. per owner, one barrier task pinned to its worker: it writes the first unvisited
       occurrence of each vertex of its pieces into its frontier and state in place
       (:func:`~taskbfs.kernels.merge.accept_into_range`): visited bit, distance, parent,
       next frontier; then publishes its counts (new frontier vertices, their edges,
       unvisited vertices per range; what the steps examined) to the client as a message
       (no task, no gather). Pieces travel step worker to owner worker;
    3. the client sums the W reports, makes the level's summary as every level does
       (:meth:`~taskbfs.search.state.SwitchRule.summary`: Beamer's rule, the end), keeps
       it for a resume and reports it; the level loop asks for the next level.

    The client side, :class:`OwnedSearch`, is one of the two runners of the one level
    loop (:func:`~taskbfs.search.levels.run_levels`; the other runs a search as one task,
    :class:`~taskbfs.search.included.IncludedLevels`).

    Per level that is T' steps and W barriers (with W > 1, a large top-down level adds a
    getitem per step and owner to split a step's output, where a small one sends every
    owner the step's pieces whole; a bottom-up level adds W tasks that cut each owner's
    share of the frontier bits, and its steps make one piece each, for their owner).
    Parents and distances are written by the owners level by level, so the result is
    ready where it lives when the last level ends.
Encoding
    Bitmaps are uint64 words over global vertex ids (:mod:`taskbfs.kernels.bitmap`); a
    range's words are ``word_span(lo, hi)``, so neighbouring ranges may share a boundary
    word and bits are ORed. What crosses the network per level is in docs/distributed.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.merge import (
    word_span,
)
from taskbfs.runtime.plugin import workers_of, workers_with
from taskbfs.runtime.task import CPU_RESOURCE
from taskbfs.search.levels import run_levels
from taskbfs.search.owner_barrier import OWNER_BARRIER, OWNER_STEP, WHOLE_PIECES_BYTES, ReachedWords
from taskbfs.search.owner_state import BITS_SHARE, INIT, RANGE, REPORT, RESULT, RESUME
from taskbfs.search.state import BOTTOM_UP, TOP_DOWN, LevelSummary, search_rule

__all__ = ["KeptLevels", "OwnedSearch", "owned_search"]


# ====================================================================== on the workers


# ====================================================================== the client's runner
class KeptLevels:
    """What the client keeps of a dispatched search so that a later attempt can resume it
    from the last completed level instead of level 0 (docs/resume.md): the distance of
    every vertex the completed levels reached (one array of n, ``int8`` widened to
    ``int16``/``int32`` as the search gets deeper), the levels' summaries and bytes moved,
    and which attempt ran which levels (for the trace).

    Parameters
    ----------
    num_vertices : int
    sources : ndarray of int64
        The search's sources (distinct).
    """

    def __init__(self, num_vertices: int, sources):
        self.num_vertices, self.sources = num_vertices, sources
        self._levels = None  # made when first read (a resume reads it)
        #: ``(level, reached)`` of the levels completed since :attr:`levels` was last read
        self._pending: list[tuple[int, list]] = []
        self.summaries: list[LevelSummary] = []
        self.exchange: list[dict] = []
        #: ``(attempt, program id, first level)`` of each attempt that ran levels, in order
        self.attempts: list[tuple[int, str, int]] = []
        self.num_tasks = 0  # of the attempts that ran levels (a resume keeps their ranges)
        #: False once a level was completed whose vertices the client does not know
        #: (owners on GPUs): a later attempt then starts again from level 0
        self.resumable = True

    @property
    def level(self) -> int:
        """The last completed level (its frontier is known): where a resume starts."""
        return len(self.summaries) - 1 if self.resumable else 0

    @property
    def levels(self) -> np.ndarray:
        """The distance of every vertex the completed levels reached (-1 elsewhere),
        written from the kept levels when read (a resume reads it; a search that ends
        without one never pays for it, not even the array of n bytes)."""
        if self._levels is None:
            self._levels = np.full(self.num_vertices, -1, dtype=np.int8)
            self._levels[self.sources] = 0
        if self._pending:
            deepest = self._pending[-1][0]
            if deepest > np.iinfo(self._levels.dtype).max:
                self._levels = self._levels.astype(np.int16 if deepest < 2**15 else np.int32)
            for level, reached in self._pending:
                for ids in reached:
                    self._levels[ids.ids() if isinstance(ids, ReachedWords) else ids] = level
            self._pending = []
        return self._levels

    def complete(self, summary: LevelSummary, reached, exchange: dict | None = None) -> None:
        """Keep ``summary`` (which opens level L) and the vertices at distance L
        (``reached``: arrays of vertex ids, or :class:`ReachedWords`; None: not known
        here, so no later attempt resumes)."""
        if reached is None:
            self.resumable = False
        else:
            self._pending.append((summary.level, reached))
        self.summaries.append(summary)
        if exchange is not None:
            self.exchange.append(exchange)

    def start(self, attempt: int, program: str, first: LevelSummary, num_tasks: int) -> int:
        """Note that ``attempt`` (its program ``program``) runs the search's levels, cut
        into ``num_tasks`` ranges, from the last completed one (from ``first``, level 0,
        when none completed); returns that level."""
        if self.level < 1:  # nothing to resume from: start again
            self.resumable = True
            self.summaries, self.exchange, self.attempts = [first], [], []
            self.num_tasks = num_tasks
            self._pending = []
            self._levels = None
        self.attempts.append((attempt, program, self.level))
        return self.level


@dataclass
class _Level:
    """What the client sums from the owners' reports after one barrier."""

    counts: np.ndarray
    edges: np.ndarray
    unvisited: np.ndarray
    examined: np.ndarray
    found: np.ndarray
    device: np.ndarray
    words: dict
    moved: dict
    start: float
    stop: float


class OwnedSearch:
    """The client side of a dispatched search: the runner of its levels
    (:func:`~taskbfs.search.levels.run_levels`: :meth:`level`, :meth:`announce`).

    Parameters
    ----------
    program : Program
        The search's program (its policy places the steps).
    placed : PlacedGraph
        The graph's slices on the workers; each worker holding slices owns their ranges.
    slices : list of list of str
        Per range, the data names of its slice (and transposed slice) in ``program``.
    sources : ndarray of int64
        The search's sources (distinct).
    first : callable
        Gives the level-0 summary (``state.first_summary``): asked after the owners are
        known, so that the sources' degrees it waits on arrive beside their round trips.
    direction_mode : str
    alpha, beta : float
        Beamer's parameters.
    depth_limit : int or None
        The last level searched (:class:`~taskbfs.search.state.SwitchRule`).
    waits : object
        Which attempt of the search this is (``attempt``), and how the client waits,
        within the call's timeout, failing when an owner left the
        cluster: ``listen(watch, workers)`` → the program's next message (raising the
        error of the task writing a datum of ``watch``); ``settle(futures, workers)``
        waits until futures are computed (left where they are); ``gather(names)`` →
        their values; ``report(summaries) -> bool`` hands summaries on (True once the
        search ended).
    tags : dict
        The search's tags (vertices, arcs, directed), on its first task.
    keep : bool
        The graph was built on the workers: the result stays there, one piece per range.
    kept : KeptLevels
        What earlier attempts of the search completed: the loop resumes from its last
        completed level (level 0 when none), and keeps each level it completes there.
    """

    def __init__(self, program, placed, slices, sources, first: Callable[[], LevelSummary],
                 direction_mode: str, alpha: float, beta: float, depth_limit, waits,
                 tags: dict, keep: bool, kept: KeptLevels):
        self.program = program
        self.client = program.client
        self.placed = placed
        self.bounds = placed.parts.bounds
        self.n = int(self.bounds[-1])
        self.slices = slices
        self.sources = sources
        self.kept = kept
        self.started = False
        self.rule = search_rule(self.bounds, placed.num_arcs, direction_mode, alpha, beta,
                                depth_limit)
        self.waits = waits
        self.keep = keep
        self.tags = tags
        # the owners' round trips first: the question level 0's summary waits on runs beside them
        self.workers, self.owner_of = self._owners(keep)
        self.resumed_from = kept.start(waits.attempt, program.id, first(), placed.parts.num_tasks)
        self.summaries = kept.summaries
        self.exchange = kept.exchange
        self.owned = [np.flatnonzero(self.owner_of == w) for w in range(len(self.workers))]
        self.states = [f"owner/{w}" for w in range(len(self.workers))]
        self.fronts = [f"front/{w}" for w in range(len(self.workers))]
        self._made = None  # (reached, moved) of the level run last, until announced
        self._ahead: dict[int, dict] = {}  # level -> {owner: report} heard before their turn

    def _owners(self, keep: bool):
        """The worker owning each range, and the list of owners: a worker holding its
        slice that runs host tasks (a ``CPU`` resource) when one does, the fewest-loaded
        of them where Dask made copies. A slice held only by other workers (a GPU worker
        of the embedded cluster) is owned by the fewest-loaded host worker, unless the
        graph was built on the workers (``keep``): its ranges stay where they are."""
        left = self.waits.clock.left  # each round trip within the call's timeout
        who = _who_has(self.client, self.placed.slices, left())
        if not all(who.get(f.key) for f in self.placed.slices):  # still being built, or lost
            self.waits.settle(self.placed.slices)
            who = _who_has(self.client, self.placed.slices, left())
        workers = self.present = workers_of(self.client, left())
        load: dict[str, int] = {}
        holders = []
        for f in self.placed.slices:
            candidates = self._may_own(sorted(who[f.key]), workers, keep)
            holder = min(candidates, key=lambda w: load.get(w, 0))
            load[holder] = load.get(holder, 0) + 1
            holders.append(holder)
        owners = sorted(load)
        index = {w: i for i, w in enumerate(owners)}
        return owners, np.array([index[h] for h in holders], dtype=np.int64)

    def _may_own(self, held: list, workers: dict, keep: bool) -> list:
        """The workers that may own a range whose slice ``held`` hold (see
        :meth:`_owners`)."""
        hosts = workers_with(workers, CPU_RESOURCE)
        return [w for w in held if w in hosts] or (held if keep or not hosts else hosts)

    def run(self):
        """Every level (:func:`~taskbfs.search.levels.run_levels`, this object its runner);
        ``(summaries, result, exchange)``: the result as ``(distances, parents)`` arrays,
        or with ``keep`` one future of ``(distances, parents)`` per range (in vertex
        order) left on its owner."""
        opening = self.summaries[-1]
        if self.resumed_from:
            self.program.put("levels", self.kept.levels)
        last = run_levels(self, opening, announce_opening=not self.resumed_from)
        if not self.started:  # resumed once every level had completed: only the result
            with self.program.batch():
                self._start(last.level)
        self.program.forget("levels")
        result = self._kept() if self.keep else self._gathered()
        return self.summaries, result, pd.DataFrame(self.exchange)

    def _start(self, level: int) -> None:
        """The owners' frontiers and states, for ``level`` (submitted with its batch):
        new at level 0, else rebuilt from the completed levels."""
        self.started = True
        if level == 0:
            self._init()
        else:
            self._resume(level)

    def _resume(self, level: int) -> None:
        """The owners' frontiers and states rebuilt from the client's
        :class:`KeptLevels` (the data ``levels``) at ``level``: each owner reads its
        ranges' in-arcs (the transposed slices of a directed graph)."""
        for w, tasks in enumerate(self.owned):
            self.program.submit(RESUME, ins=[*(self.slices[t][-1] for t in tasks), "levels"],
                                outs=[self.fronts[w], self.states[w]],
                                kwargs={"sources": self.sources, "level": level,
                                        "num_vertices": self.n, "search": self.program.id,
                                        "bounds": self.bounds, "owner_of": self.owner_of},
                                worker=self.workers[w],
                                tags={**(self.tags if w == 0 else {}), "resumed_from": level})

    def _init(self) -> None:
        """The owners' frontiers and states (submitted with level 0)."""
        for w, tasks in enumerate(self.owned):
            self.program.submit(INIT, ins=[self.slices[t][0] for t in tasks],
                                outs=[self.fronts[w], self.states[w]],
                                kwargs=self._init_keywords(w),
                                worker=self.workers[w], tags=self.tags if w == 0 else {})

    def _init_keywords(self, owner: int) -> dict:
        """The keywords of owner ``owner``'s :func:`init_owner` (its result on the host,
        where any worker's steps send their pairs)."""
        return {"sources": self.sources, "num_vertices": self.n, "search": self.program.id,
                "bounds": self.bounds, "owner_of": self.owner_of}

    def level(self, summary: LevelSummary) -> LevelSummary:
        """Submit the level ``summary`` opens as one batch, read its owners' reports,
        return the next summary (what the level reached and moved is kept for
        :meth:`announce`)."""
        program, level, direction = self.program, summary.level, summary.direction
        working = np.flatnonzero(summary.frontier_counts).tolist()
        owners = len(self.workers)
        readers, shares = set(), []  # bottom-up, several owners: who reads the shares
        outs, made = [], []  # per step, its output's name for each owner; every name
        whole = direction == TOP_DOWN and owners > 1 and (
            2 * result_dtype(self.n).itemsize * owners * summary.frontier_edges
            <= WHOLE_PIECES_BYTES)
        kwargs = {"level": level, "direction": direction}
        with program.batch():
            if not self.started:
                self._start(level)
            if direction == BOTTOM_UP and owners > 1:
                shares = self._shares()
                readers = {int(self.owner_of[t]) for t in working}
            for t in working:
                w = int(self.owner_of[t])
                ins = self.slices[t][-1:] if direction == BOTTOM_UP else self.slices[t][:1]
                names, step_outs = _step_outputs(level, t, w, owners, direction, whole)
                size = int(summary.sizes[t])
                # the live page (taskbfs.dashboard) reads these tags as they are placed
                program.submit(OWNER_STEP, ins=[*ins, self.fronts[w], *shares], outs=step_outs,
                               kwargs=kwargs, task_id=t, size=size,
                               tags={"level": level, "task": t, "direction": direction,
                                     "size": size})
                outs.append(names)
                made += step_outs
            for w in range(owners):
                tags = {"level": level, "owner": w}
                if w == 0:  # the level's frontier, once
                    tags.update(frontier=summary.frontier_size,
                                frontier_edges=summary.frontier_edges)
                program.submit(OWNER_BARRIER, ins=[names[w] for names in outs if names[w]],
                               inouts=[self.fronts[w], self.states[w]], in_place=True,
                               worker=self.workers[w],
                               kwargs={"level": level, "owner": w}, tags=tags)
        for name in [*made, *shares]:
            program.forget(name)
        reports = self._reports(level)
        merged = self._merged(reports)
        self._made = ([self._reached(w, r) for w, r in enumerate(reports)],
                      self._moved(level, direction, merged, readers))
        return self._next_summary(summary, merged)

    def announce(self, summary: LevelSummary) -> tuple[LevelSummary, bool]:
        """Keep the level ``summary`` opens for a later attempt (:class:`KeptLevels`:
        ``summary`` and the vertices its level reached, unless it is the first one,
        kept when the attempt started) and hand it to the client (``waits.report``:
        ``progress``, the level an error names); ``(summary, whether the search
        ended)``."""
        if self._made is not None:
            self.kept.complete(summary, *self._made)
            self._made = None
        return summary, self.waits.report([summary])

    def _reached(self, owner: int, report: dict):
        """What owner ``owner``'s barrier reached, as its report sent it: vertex ids, or
        :class:`ReachedWords` over its ranges' spans (:func:`reached_report`)."""
        if not report["reached_words"]:
            return np.frombuffer(report["reached"], result_dtype(self.n))
        spans = tuple(word_span(int(self.bounds[t]), int(self.bounds[t + 1]))
                      for t in self.owned[owner].tolist())
        return ReachedWords(spans, report["reached"])

    def _shares(self) -> list[str]:
        """Every owner's share of the frontier bitmap (data names, in owner order): what a
        bottom-up step reads beside its owner's frontier, assembled on its worker."""
        shares = [f"share/{w}" for w in range(len(self.workers))]
        for w, front in enumerate(self.fronts):
            self.program.submit(BITS_SHARE, ins=[front], outs=[shares[w]], worker=self.workers[w])
        return shares

    def _reports(self, level: int) -> list[dict]:
        """The W owners' reports of ``level``, in owner order. Reports of later levels that
        come first are kept for their turn (owners that run their levels themselves,
        :mod:`taskbfs.search.owner_levels`, go on before the client has heard every owner of
        a level: their messages reach it through the scheduler in no set order)."""
        reports = self._ahead.pop(level, {})
        while len(reports) < len(self.workers):
            message = self.waits.listen(self.states, self.workers)
            report = message.get(REPORT) if isinstance(message, dict) else None
            if report is None or report["level"] < level:
                continue
            if report["level"] == level:
                reports[report["owner"]] = report
            else:
                self._ahead.setdefault(report["level"], {})[report["owner"]] = report
        return [reports[w] for w in range(len(self.workers))]

    def _gathered(self):
        """The owners' ranges gathered into two arrays (one task per owner)."""
        program = self.program
        names = [f"result/{w}" for w in range(len(self.workers))]
        with program.batch():
            for w, state in enumerate(self.states):
                program.submit(RESULT, ins=[state], outs=[names[w]], worker=self.workers[w],
                               tags={"done": True, "owner": w})
        return self._joined([p for ranges in self.waits.gather(names) for p in ranges])

    def _joined(self, pieces):
        """``(distances, parents)`` of every vertex from the owners' ``(task, distances,
        parents)`` pieces (:func:`owner_result`)."""
        if len(pieces) == 1:
            return pieces[0][1:]
        dtype = result_dtype(self.n)
        distances, parents = np.empty(self.n, dtype), np.empty(self.n, dtype)
        for task, d, p in pieces:
            lo, hi = self.bounds[task], self.bounds[task + 1]
            distances[lo:hi], parents[lo:hi] = d, p
        return distances, parents

    def _kept(self) -> list:
        """One future of ``(distances, parents)`` per range, left on its owner."""
        program = self.program
        names = [f"range/{t}" for t in range(self.bounds.size - 1)]
        with program.batch():
            for t, name in enumerate(names):
                w = int(self.owner_of[t])
                program.submit(RANGE, ins=[self.states[w]], outs=[name], worker=self.workers[w],
                               kwargs={"vertex_range": t}, tags={"done": True, "owner": w})
        futures = [program.future(name) for name in names]
        self.waits.settle(futures, self.workers)
        return futures

    def _merged(self, reports) -> _Level:
        return merged_reports(reports, self.owned)

    def _moved(self, level: int, direction: str, merged: _Level, readers: set) -> dict:
        """Bytes the level moved: the steps' pieces (between workers and within one), the
        frontier bitmap's shares (each owner assembling it gets every other owner's words)
        and the step frontiers read on another worker than their owner's (GPU steps)."""
        total_words = sum(merged.words.values())
        return {"level": level, "direction": direction, "owners": len(self.workers),
                "pieces_remote_bytes": merged.moved["remote"],
                "pieces_local_bytes": merged.moved["local"],
                "bitmap_remote_bytes": sum(total_words - merged.words[w] for w in readers),
                "frontier_remote_bytes": merged.moved["inbound"]}

    def _next_summary(self, summary: LevelSummary, merged: _Level) -> LevelSummary:
        return next_summary(self.rule, summary, merged)


def _who_has(client, futures, timeout: float | None) -> dict:
    """``{key: [worker, ...]}`` of ``futures``, asked of the scheduler within ``timeout``
    seconds, else ``TimeoutError`` (``Client.who_has`` takes no timeout)."""
    return client.sync(client.scheduler.who_has, keys=[f.key for f in futures],
                       callback_timeout=timeout)


def merged_reports(reports, owned: list) -> _Level:
    """The W owners' reports of a level (in owner order; ``owned[w]``: owner w's ranges)
    summed over the graph's ranges."""
    tasks = sum(len(o) for o in owned)
    counts, edges, unvisited = (np.zeros(tasks, np.int64) for _ in range(3))
    examined, found = np.zeros(tasks, np.int64), np.zeros(tasks, np.int64)
    device, words, moved = [], {}, {"remote": 0, "local": 0, "inbound": 0}
    for w, r in enumerate(reports):
        idx = owned[w]
        counts[idx], edges[idx], unvisited[idx] = np.frombuffer(r["ranges"], np.int64).reshape(3, -1)
        for t, e, f, h2d, d2h, ns in r["steps"]:
            examined[t], found[t] = e, f
            if h2d or d2h or ns:
                device.append((t, h2d, d2h, ns))
        words[w] = r["words"]
        for k in moved:
            moved[k] += r[k]
    return _Level(counts, edges, unvisited, examined, found,
                  np.array(device, dtype=np.int64).reshape(-1, 4), words, moved,
                  min(r["start"] for r in reports), max(r["stop"] for r in reports))


def next_summary(rule, summary: LevelSummary, merged: _Level) -> LevelSummary:
    """The summary of the level after ``summary``'s, from the summed counts
    (:meth:`~taskbfs.search.state.SwitchRule.summary`, as every runner makes it)."""
    return rule.summary(
        summary.level + 1, summary.direction, summary.frontier_size,
        summary.unexplored_edges, merged.counts, merged.edges, merged.unvisited,
        edges_examined=merged.examined, found=merged.found, start=merged.start,
        stop=merged.stop, device_stats=merged.device)


def _step_outputs(level: int, task: int, owner: int, owners: int, direction: str,
                  whole: bool) -> tuple[list, list]:
    """A level's step of range ``task`` (owned by ``owner``): the name of the datum each
    owner's barrier reads of it (None: nothing for that owner), and the step's outputs.
    Top-down: one piece per owner, each its own output (a getitem splits them), or with
    ``whole`` one output every owner reads; bottom-up: one piece, for its owner (the
    step finds its own vertices)."""
    if whole:
        name = f"to/{level}/{task}"
        return [name] * owners, [name]
    names = [f"to/{level}/{task}/{o}" if direction == TOP_DOWN or o == owner else None
             for o in range(owners)]
    return names, [n for n in names if n]


def owned_search(program, placed, slices, sources, first: LevelSummary, direction_mode: str,
                 alpha: float, beta: float, depth_limit, waits, tags: dict, keep: bool,
                 kept: KeptLevels):
    """Run :class:`OwnedSearch`; ``(summaries, result, exchange)``."""
    return OwnedSearch(program, placed, slices, sources, first, direction_mode, alpha, beta,
                       depth_limit, waits, tags, keep, kept).run()
