"""Owners that run the levels themselves: one task per owner worker, pieces traded worker to worker.

Returns
    :func:`exchanged_search` → ``(summaries, result, exchange)``, as
    :func:`~taskbfs.search.owners.owned_search` returns them, for a search whose ranges
    several workers own and whose levels the runtime may include (``dispatch="auto"``).
Approach
    A dispatched level (:mod:`taskbfs.search.owners`) is a batch of step tasks and W barriers
    through the scheduler, and the client's round trip for the owners' reports: on several
    GPU workers that coordination takes longer than the level's steps. Here each owner runs one task, :data:`OWNER_LEVELS`, on its worker for
    the whole search (seceded from the worker's thread pool: it waits on its peers most of
    the time). Per level it

    1. runs the steps of its ranges with work as tasks included in it (OmpSs ``final``),
       each on the device the runtime's one rule gives its size
       (:class:`~taskbfs.runtime.policy.Placement`; a CPU worker's are all CPU steps,
       side by side on its threads), and splits what they found into one
       :class:`~taskbfs.search.owner_barrier.Piece` per owner, as a dispatched step does;
    2. sends every other owner its pieces and receives theirs
       (:class:`~taskbfs.runtime.mailbox.Exchange`: worker to worker, no scheduler; not in
       a bottom-up level, whose steps find only their own range's vertices);
    3. merges them as the dispatched owner barrier does
       (:func:`~taskbfs.search.owner_barrier.accept_pieces`, included), which makes its report;
    4. publishes the report to the client (who keeps the level for a resume and reports
       it, as for a dispatched level) and sends it to every other owner; with all W
       reports every owner makes the same next summary (the one switch rule), learns the
       vertices the others reached (their visited bits; a bottom-up level's whole frontier
       bitmap) and goes on.

    So a level costs two rounds of messages between the owners (one bottom-up) instead of a
    scheduler batch and a client round trip. The client's
    side, :class:`ExchangedSearch`, submits the owners' tasks once (from level 0 each makes
    its owner's state itself) and then reads the reports, level by level, as the dispatched
    runner does (the same :class:`~taskbfs.search.owners.KeptLevels`, result tasks and faults:
    a lost owner fails the search, which resumes dispatched from the last level the client
    kept).
Faults
    An owner task waits for its peers up to the exchange's timeout (minutes); the
    client aborts the exchange when its search fails (a lost worker, the call's timeout),
    so the others end at once.
"""

from __future__ import annotations

import time

import numpy as np

from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.bitmap import set_bits
from taskbfs.kernels.merge import word_span
from taskbfs.runtime import (
    CUDA,
    SMP,
    Exchange,
    Placement,
    Task,
    abort_channel,
    communicator,
    include,
    include_each,
    publish,
    thread_pool,
)
from taskbfs.runtime.collective import abort_communicators
from taskbfs.runtime.mailbox import EXCHANGE_TIMEOUT
from taskbfs.runtime.plugin import workers_with
from taskbfs.runtime.task import GPU_RESOURCE
from taskbfs.search.device_owner import DeviceOwner, owner_announce
from taskbfs.search.included import BARRIER_NAME, RESULT_NAME
from taskbfs.search.levels import run_levels
from taskbfs.search.owner_barrier import accept_pieces, reached_report, split_for_owners
from taskbfs.search.owner_state import (
    REPORT,
    as_frontier,
    init_owner,
    owner_result,
)
from taskbfs.search.owners import OwnedSearch, merged_reports, next_summary
from taskbfs.search.state import BOTTOM_UP, LevelSummary, SummaryPublisher
from taskbfs.search.steps import STEP_NAME, slice_for, step_cuda, step_smp

__all__ = ["OWNER_LEVELS", "ExchangedSearch", "OwnerLevels", "exchanged_search"]


# ====================================================================== on the workers
def owner_levels(*args, layout: list, peers: list, owner: int, channel: str,
                 opening: LevelSummary, rule, policy, per_range: bool,
                 init: dict | None = None, submitted: float | None = None,
                 exchange_timeout: float | None = None, collective=None) -> tuple:
    """The task :data:`OWNER_LEVELS`: every level of the search from ``opening`` for the
    ranges of owner ``owner`` (called as ``owner_levels(*slices, front, state)``: per
    owned range, in the owner's order, ``layout[i]`` slices: its out-adjacency slice, then
    its transposed one when it has one; at level 0 as ``owner_levels(*slices,
    init=keywords)``, the owner's state then made here by :func:`init_owner`); ``peers``
    are the owners' workers, ``channel`` names the search's exchange. Returns the owner's
    result (with ``per_range``, one ``(distances, parents)`` per range, left there for a
    graph kept on the workers; else :func:`~taskbfs.search.owner_state.owner_result`, for the
    client to gather), then ``(front, state)``. ``submitted``: when the client submitted
    the task (``time.time()``), for the first level's ``queued`` part; ``exchange_timeout``:
    how long it waits for a peer's message of a round (the client's
    :data:`~taskbfs.runtime.mailbox.EXCHANGE_TIMEOUT`); ``collective``: the owners'
    :class:`~taskbfs.runtime.Communicator` when their state lives on their GPUs
    (:class:`~taskbfs.search.device_owner.DeviceOwner`; a fresh search only)."""
    from distributed import secede

    entered = time.perf_counter()
    queued = 0.0 if submitted is None else max(time.time() - submitted, 0.0)
    if init is None:
        *names, front, state = args
    else:
        names = args
    cuts = np.cumsum([0, *layout])
    slices = [tuple(names[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    if collective is not None:
        secede()
        return _device_owner_levels(slices, collective.join(owner, channel, exchange_timeout),
                                    rule, policy, opening, init, per_range, queued)
    if init is not None:
        front, state = init_owner(*(s[0] for s in slices), **init)
    secede()  # it waits for its peers: its thread slot is the worker's for other tasks
    exchange = Exchange(channel, peers, owner, timeout=exchange_timeout)
    try:
        runner = OwnerLevels(slices, front, state, exchange, rule, policy, opening, entered,
                             fresh=init is not None, queued=queued)
        run_levels(runner, opening)
    finally:
        exchange.close()
    result = include(RESULT_NAME, _owner_results, {"done": True, "owner": owner}, front, state,
                     per_range)
    return (*result, front, state)


def _device_owner_levels(slices, collective, rule, policy, opening: LevelSummary, init: dict,
                         per_range: bool, queued: float) -> tuple:
    """:func:`owner_levels` for an owner whose state lives on its GPU: its result, and
    no frontier or state on the host."""
    tasks = np.flatnonzero(np.asarray(init["owner_of"]) == collective.rank)
    try:
        runner = DeviceOwner(slices, tasks, init["bounds"], init["sources"], collective,
                             rule, Placement(policy, gpu_present=True), opening, queued)
        run_levels(runner, opening)
        result = include(RESULT_NAME, runner.result, {"done": True, "owner": collective.rank},
                         per_range)
    finally:
        collective.close()
    return (*result, None, None)


def _owner_results(front, state, per_range: bool) -> list:
    """The owner's result as :func:`owner_levels` returns it (the state's own arrays: no
    level writes them any more)."""
    if per_range:
        return [(r.distances, r.parents) for r in state.ranges]
    return [owner_result(state)]


#: The parts of a level on an owner that its report times (the slowest owner's go into
#: ``BFSResult.exchange`` as ``<part>_seconds``): ``opening``, from its previous report to
#: this level's first step (the previous level's reports traded and learnt, the next
#: summary made; at the first level, from the owner task's start: its state made, the
#: exchange opened, the opening frontier traded); ``steps``, the level's steps;
#: ``pieces``, their pairs split and traded (top-down); ``barrier``, the pieces accepted
#: and the report made; and before them ``queued``, the first level's wait from the
#: client's submission of the owner task to its start (0 at later levels).
#: Beside them, ``least_waited_seconds``: the least time any owner spent waiting for its
#: peers' messages in the same window (the rounds' latency even for the slowest owner;
#: the rest of a round's time is waiting for the slowest).
PHASES = ("queued", "opening", "steps", "pieces", "barrier")


#: One owner's levels: ``ins`` its ranges' slices, ``outs`` its result (per range, or
#: one), ``inouts`` its frontier and state (updated in place); pinned to the owner's worker.
OWNER_LEVELS = Task("bfs_owner_levels", smp=owner_levels)


class OwnerLevels:
    """The runner of one owner's levels (:func:`~taskbfs.search.levels.run_levels`), inside
    :data:`OWNER_LEVELS` (see the module docstring).

    Parameters
    ----------
    slices : list of tuple of GraphSlice
        Per owned range (in the owner's order), its slices.
    front : OwnerFrontier
    state : OwnerState
    exchange : Exchange
        Between the owners, this one ``exchange.me``.
    rule : SwitchRule
        The search's switch rule (the client's: every owner makes the same summaries).
    policy : Policy or PlacementPolicy
        Places each step (with the worker's GPU when it has one).
    opening : LevelSummary
        The level the search starts from here.
    entered : float
        When the owner's task started (``time.perf_counter()``): the first level's
        ``opening`` phase runs from then.
    fresh : bool
        The search starts here from its source (its state just made): every owner knows
        the opening frontier, so no round of messages trades it.
    queued : float
        Seconds the owner's task waited from its submission to its start (the first
        level's report says so).
    """

    def __init__(self, slices, front, state, exchange: Exchange, rule, policy,
                 opening: LevelSummary, entered: float, fresh: bool = False,
                 queued: float = 0.0):
        self.front, self.state, self.exchange, self.rule = front, state, exchange, rule
        self.slices = dict(zip(front.tasks.tolist(), slices, strict=True))
        self.me, self.owners = exchange.me, len(exchange.peers)
        has_gpu = bool(exchange.worker.state.total_resources.get(GPU_RESOURCE, 0))
        self.placement = Placement(policy, gpu_present=has_gpu)
        bounds = front.bounds
        self.id_dtype = result_dtype(int(bounds[-1]))  # a report's vertex ids
        self.owned = [np.flatnonzero(front.owner_of == w) for w in range(self.owners)]
        self.spans = [[word_span(int(bounds[t]), int(bounds[t + 1])) for t in tasks.tolist()]
                      for tasks in self.owned]
        # owner 0 sends the live page the levels' summaries, as a one-task search does
        self.publisher = SummaryPublisher() if self.me == 0 else None
        self._reported = entered  # when this owner's last report was made (perf_counter)
        self._waited = 0.0  # the exchange's waits until then
        self._queued = queued  # the first report's, then 0
        if self.owners > 1 and fresh:  # the sources: visited, and the whole frontier
            set_bits(front.visited, state.sources)
            set_bits(front.bits, state.sources)
        elif self.owners > 1:  # the frontier the others start from (a resumed search's)
            reached, as_words = reached_report(front, state)
            share = {"reached": reached, "reached_words": as_words}
            self._learn(exchange.all_to_all(("opening", opening.level), [share] * self.owners))

    def level(self, summary: LevelSummary) -> LevelSummary:
        """Run the level ``summary`` opens (see the module docstring); the next summary.
        Its report says how long each part took on this owner (``phases``)."""
        opened = time.perf_counter()
        front, level, me = self.front, summary.level, self.me
        frontier = as_frontier(front, level, summary.direction, None)  # bits: see _learn
        outgoing = [[] for _ in range(self.owners)]
        found_steps = self._steps(frontier, summary)
        stepped = time.perf_counter()
        for task, found in found_steps:
            pieces = split_for_owners(found, frontier, front.owner_of, task, 0)
            for owner, piece in enumerate(pieces):
                if owner == me or piece.offsets[-1]:  # its own carries the step's counts
                    outgoing[owner].append(piece)
        if summary.direction == BOTTOM_UP:  # a bottom-up step finds only its own vertices:
            pieces = outgoing[me]  # no owner sends another any (every owner skips the round)
        else:
            received = self.exchange.all_to_all(("pieces", level), outgoing)
            pieces = [p for got in received for p in got]
        traded = time.perf_counter()
        report = include(BARRIER_NAME, accept_pieces, {"level": level, "owner": me},
                         pieces, front, self.state, level, me)
        reported = time.perf_counter()
        report["phases"] = {
            "queued": self._queued, "opening": opened - self._reported,
            "steps": stepped - opened, "pieces": traded - stepped, "barrier": reported - traded,
            "waited": self.exchange.waited - self._waited}
        self._reported, self._waited, self._queued = reported, self.exchange.waited, 0.0
        publish({REPORT: report})
        reports = self.exchange.all_to_all(("reports", level), [report] * self.owners)
        made = next_summary(self.rule, summary, merged_reports(reports, self.owned))
        if self.owners > 1:
            self._learn(reports)
        return made

    def announce(self, made: LevelSummary) -> tuple[LevelSummary, bool]:
        """``(made with the device of each of its steps, False)``: :func:`owner_announce`."""
        return owner_announce(made, self.placement, self.publisher)

    def _steps(self, frontier, summary: LevelSummary) -> list:
        """``[(range, Discoveries)]`` of this owner's steps of the level, each on the device
        :meth:`announce` gave it (:func:`run_steps`), their raw pairs."""
        calls = [({"level": frontier.level, "task": t, "size": int(summary.sizes[t]),
                   "direction": frontier.direction},
                  (slice_for(self.slices[t], frontier), frontier))
                 for t in self.front.tasks.tolist() if summary.sizes[t]]
        found = run_steps(calls, summary.gpu_steps)
        return [(tags["task"], f) for (tags, _), f in zip(calls, found, strict=True)]

    def _learn(self, reports) -> None:
        """The vertices the other owners reached (their ``reports``) marked visited here,
        and in the owner's frontier bitmap, which so holds the whole frontier of the next
        level for a bottom-up level's steps (the next barrier clears it before it sets the
        vertices it accepts: a report or a range's frontier reads only its own words)."""
        front = self.front
        bits = front.bits
        for owner, report in enumerate(reports):
            if owner == self.me:
                continue
            if report["reached_words"]:
                words = np.frombuffer(report["reached"], dtype=np.uint64)
                at = 0
                for first, stop in self.spans[owner]:
                    share = words[at : at + stop - first]
                    bits[first:stop] |= share
                    front.visited[first:stop] |= share
                    at += stop - first
            else:
                ids = np.frombuffer(report["reached"], dtype=self.id_dtype)
                set_bits(bits, ids)
                set_bits(front.visited, ids)


# ====================================================================== the client's runner
class ExchangedSearch(OwnedSearch):
    """The client side of a search whose owners run its levels themselves: their
    :data:`OWNER_LEVELS` tasks submitted once (making their states from level 0), then
    the owners' reports read level by level as :class:`~taskbfs.search.owners.OwnedSearch`
    reads a dispatched level's (the same parameters). Its first task is tagged ``search``: the live page reads its levels
    from owner 0's summaries, as a one-task search's (no step is placed through the
    scheduler)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tags = {**self.tags, "search": True}
        self.on_gpus = False  # whether the owners' state lives on their GPUs (_start)

    def run(self):
        try:
            return super().run()
        except BaseException:
            abort_channel(self.client, self.workers, self.program.id)
            if self.on_gpus:  # an owner waiting in NCCL for a lost one stops waiting
                abort_communicators(self.program.runtime, self.workers)
            raise

    def _may_own(self, held: list, workers: dict, keep: bool) -> list:
        """With a policy that uses the GPU and a cluster with GPU workers, the GPU workers
        holding the range's slice (where the search's ranges were placed), else every GPU
        worker (the slice is copied there when the search starts): an owner runs every
        step of its ranges, so one without a GPU would run the GPU steps on its CPU.
        Otherwise as :meth:`OwnedSearch._may_own`."""
        uses_gpu = getattr(self.program.policy, "uses_gpu", True)  # a user policy may
        gpus = workers_with(workers, GPU_RESOURCE) if uses_gpu else []
        if not gpus:
            return super()._may_own(held, workers, keep)
        return [w for w in held if w in gpus] or sorted(gpus)

    def _start(self, level: int) -> None:
        """The owners' level tasks from ``level``: at level 0 each makes its owner's state
        itself (:func:`init_owner`: no task before it; on its GPU where :meth:`_on_gpus`),
        else they take up the states :meth:`OwnedSearch._start` rebuilds."""
        fresh = level == 0
        if fresh:
            self.started = True
        else:
            super()._start(level)
        opening = self.summaries[-1]
        self.on_gpus = fresh and self._on_gpus()
        collective = (communicator(self.program.runtime, self.workers, present=self.present)
                      if self.on_gpus else None)
        for w, tasks in enumerate(self.owned):
            names = [name for t in tasks.tolist() for name in self.slices[t]]
            results = ([f"range/{t}" for t in tasks.tolist()] if self.keep else [f"result/{w}"])
            state = [self.fronts[w], self.states[w]]
            self.program.submit(
                OWNER_LEVELS, ins=names, outs=results + (state if fresh else []),
                inouts=[] if fresh else state, in_place=not fresh, worker=self.workers[w],
                kwargs={"layout": [len(self.slices[t]) for t in tasks.tolist()],
                        "peers": self.workers, "owner": w, "channel": self.program.id,
                        "opening": opening, "rule": self.rule, "policy": self.program.policy,
                        "per_range": self.keep,
                        "init": self._init_keywords(w) if fresh else None,
                        "submitted": time.time(), "exchange_timeout": EXCHANGE_TIMEOUT,
                        "collective": collective},
                tags={**(self.tags if fresh and w == 0 else {}), "owner": w, "opening": level})

    def _on_gpus(self) -> bool:
        """Whether the owners keep the search's state on their GPUs
        (:class:`~taskbfs.search.device_owner.DeviceOwner`): every owner a GPU worker, and
        a policy that uses the GPU."""
        gpus = set(workers_with(self.present, GPU_RESOURCE))  # as _owners found them
        return set(self.workers) <= gpus and getattr(self.program.policy, "uses_gpu", True)

    def _kept(self) -> list:
        """One future of ``(distances, parents)`` per range, left on its owner (the owner
        tasks' outputs), once the owner tasks have ended (their values hold every range's
        result; the outputs split from them may still be on their way)."""
        ranges = [f"range/{t}" for t in range(self.bounds.size - 1)]
        owners = {f.key: f for f in map(self.program.producer, ranges)}
        self.waits.settle(list(owners.values()), self.workers)
        return [self.program.future(name) for name in ranges]

    def _gathered(self):
        """The owners' ranges (the owner tasks' outputs) gathered into two arrays."""
        names = [f"result/{w}" for w in range(len(self.workers))]
        return self._joined([p for ranges in self.waits.gather(names) for p in ranges])

    def level(self, summary: LevelSummary) -> LevelSummary:
        """The summary after ``summary``'s, from the owners' reports of its level (their
        tasks started with the first level)."""
        if not self.started:
            with self.program.batch():
                self._start(summary.level)
        reports = self._reports(summary.level)
        merged = self._merged(reports)
        # owners on GPUs keep their vertices there: a later attempt starts again
        reached = None if self.on_gpus else [self._reached(w, r) for w, r in enumerate(reports)]
        self._made = (reached, self._exchanged(summary.level, summary.direction, merged, reports))
        return self._next_summary(summary, merged)

    def _exchanged(self, level: int, direction: str, merged, reports) -> dict:
        """Bytes the level moved between workers (:meth:`OwnedSearch._moved`'s row): the
        pieces, and what each owner's report says it reached, sent to every other owner
        (``bitmap_remote_bytes``: no owner reads bitmap shares here), and the slowest
        owner's time in each part of the level (:data:`PHASES`)."""
        moved = self._moved(level, direction, merged, set())
        shares = sum(len(r["reached"]) for r in reports)
        moved["bitmap_remote_bytes"] = (shares * (len(self.workers) - 1)
                                        + sum(r.get("traded", 0) for r in reports))
        for phase in PHASES:
            moved[f"{phase}_seconds"] = max(r["phases"][phase] for r in reports)
        moved["least_waited_seconds"] = min(r["phases"]["waited"] for r in reports)
        return moved


def exchanged_search(program, placed, slices, sources, first: LevelSummary,
                     direction_mode: str, alpha: float, beta: float, depth_limit, waits,
                     tags: dict, keep: bool, kept):
    """Run :class:`ExchangedSearch`; ``(summaries, result, exchange)``."""
    return ExchangedSearch(program, placed, slices, sources, first, direction_mode, alpha,
                           beta, depth_limit, waits, tags, keep, kept).run()


def run_steps(calls, gpu_steps: np.ndarray, smp=step_smp, cuda=step_cuda) -> list:
    """A level's steps (``calls`` as for :func:`include_each`, in task order), each on the
    device its level's summary gives it (``gpu_steps``, decided by the runner's
    ``announce``): the CPU ones (``smp``) side by side on the thread pool, then the GPU ones
    (``cuda``) one after another; their outputs in task order."""
    on_gpu = [bool(gpu_steps[tags["task"]]) for tags, _ in calls]
    cpu_calls = [c for c, g in zip(calls, on_gpu, strict=True) if not g]
    gpu_calls = [c for c, g in zip(calls, on_gpu, strict=True) if g]
    # one step alone runs in this thread: there is nothing to overlap
    executor = thread_pool() if len(cpu_calls) > 1 else None
    cpu = iter(include_each(STEP_NAME, smp, cpu_calls, executor=executor, device=SMP))
    gpu = iter(include_each(STEP_NAME, cuda, gpu_calls, device=CUDA))
    return [next(gpu if g else cpu) for g in on_gpu]
