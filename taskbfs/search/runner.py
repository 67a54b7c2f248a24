"""One search's submissions and its result: the search run as one task on the worker that holds its data, or dispatched to its owners."""

from __future__ import annotations

import contextlib
import functools
import time
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError
from dataclasses import dataclass

import numpy as np
import pandas as pd
from distributed import wait as distributed_wait

from taskbfs.finished_runs import keep_finished
from taskbfs.graph import Graph
from taskbfs.placed.graph import DistributedGraph
from taskbfs.placed.kept import KeptResult
from taskbfs.runtime import CUDA, Program
from taskbfs.runtime.plugin import (
    fetch_trace_later,
)
from taskbfs.search.faults import (
    LOST,
    Deadline,
    Heard,
)
from taskbfs.search.included import (
    RESULT_NAME,
    SEARCH,
    SEARCH_ON_GPU,
    SEARCHED,
    LaterSummaries,
    kept_of_search,
)
from taskbfs.search.options import (
    Options,
)
from taskbfs.search.owner_levels import exchanged_search
from taskbfs.search.owners import KeptLevels, owned_search
from taskbfs.search.result import BFSResult
from taskbfs.search.state import LevelSummary, first_summary, summaries_of, switch_parameters
from taskbfs.search.tables import (
    level_table,
    span,
    table_step_columns,
    task_trace,
    trace_answer,
    traversed_edges,
    with_device_stats,
)


@dataclass
class Outcome:
    """What either way of running a search leaves the client with."""

    distances: np.ndarray
    parents: np.ndarray
    summaries: list
    seconds: float  # from the first submission to the result in the client's hands
    assembly_d2h_bytes: int = 0
    kept: KeptResult | None = None  # the result left on the workers (distances None)
    exchange: pd.DataFrame | None = None  # bytes moved per level by the dispatched loop


class Search:
    """One search's submissions, and its result (see :func:`bfs`)."""

    def __init__(self, program: Program, graph: Graph, placed, search: Options, direction: str,
                 progress, clock: Deadline, heard: Heard, attempt: int, kept: KeptLevels,
                 source_degree: Callable[[], Callable[[], np.ndarray]]):
        self.program = program
        self.source_degree = source_degree
        self.attempt = attempt
        self.kept = kept  # the levels earlier attempts completed (see bfs)
        self.clock = clock
        self.heard = heard
        self.graph = graph
        self.placed = placed
        self.parts = placed.parts
        self.sources = search.sources
        self.depth_limit = search.depth_limit
        self.device_result = search.device_result
        self.direction = direction
        self.progress = progress
        program.put_future("degrees", placed.degrees)
        # α and β as configured now, sent to the worker too: both sides decide alike
        alpha, beta = switch_parameters(None, None)
        self.init = {"bounds": self.parts.bounds, "sources": search.sources,
                     "direction_mode": direction, "total_edges": placed.num_arcs, "alpha": alpha,
                     "beta": beta, "depth_limit": search.depth_limit,
                     "device_result": search.device_result, "progress": progress is not None}
        self.tags = {"vertices": graph.num_vertices, "directed": bool(graph.directed),
                     "arcs": placed.num_arcs}
        # a graph kept on the workers keeps its results there too (gathered when read),
        # and a result asked for on the GPU stays there
        self.keep = isinstance(graph, DistributedGraph) or search.device_result
        # a one-task search's result asked for on a GPU of this process: the call's value
        # is the worker's own arrays, no copy
        self.here_on_device = (search.device_result and program.runtime.in_process
                               and not isinstance(graph, DistributedGraph))

    def included(self, device: str) -> Outcome:
        """The whole search as one task on the worker that holds every slice
        (:mod:`taskbfs.search.included`), on ``device``."""
        program = self.program
        start = time.perf_counter()
        task = SEARCH_ON_GPU if device == CUDA else SEARCH
        # every slice as one input: 2 inputs whatever T (see PlacedGraph.bundle)
        program.put_future("slices", self.placed.bundle(program.client))
        tags = {**self.tags, "level": 0, "search": True}
        if self.progress is None and (not self.keep or self.here_on_device):  # its value goes to this caller only
            kwargs = {"init": self.init, "policy": program.policy}
            value = functools.partial(program.call, task, ins=["slices", "degrees"],
                                      kwargs=kwargs, tags=tags)
        else:  # a kept result's search says when it is done (see _searched)
            kwargs = {"init": {**self.init, "kept": self.keep}, "policy": program.policy}
            program.submit(task, ins=["slices", "degrees"], outs=["search"], kwargs=kwargs,
                           tags=tags)
            while self.progress is not None and not self.report(
                    next_summaries(program, "search", self.clock)):
                pass
            if self.keep:
                future = program.future("search")
                last, d2h = self._searched()
                summaries = LaterSummaries(program.client, future, last)
                kept = kept_of_search(program.client, future, self.parts.bounds)
                if self.device_result:  # CuPy arrays already when made on a GPU worker
                    kept = kept.to_device()
                return Outcome(None, None, summaries, time.perf_counter() - start, d2h, kept)
            value = functools.partial(program.get, "search")
        try:
            outcome = value(timeout=self.clock.left())
        except (TimeoutError, *LOST):
            self._hear_latest()
            raise
        seconds = time.perf_counter() - start
        if self.here_on_device:
            kept = KeptResult.in_this_process(program.client, (outcome.distances, outcome.parents),
                                              self.parts.bounds)
            return Outcome(None, None, outcome.summaries, seconds, kept=kept)
        return Outcome(outcome.distances, outcome.parents, outcome.summaries, seconds,
                        outcome.assembly_d2h_bytes)

    def _searched(self) -> tuple[LevelSummary, int]:
        """The last summary and the result's bytes copied from the GPU, from the message
        a search task whose result stays on its worker sends last (any summaries before
        it, sent for the live page, say how far the search got)."""
        while True:
            message = self.program.next_message(watch=["search"], timeout=self.clock.left())
            if SEARCHED in message:
                return LevelSummary.from_message(message[SEARCHED]), int(message["d2h_bytes"])
            if "summaries" in message:
                self.heard.level = summaries_of(message)[-1].level

    def dispatched(self, exchanged: bool = False) -> Outcome:
        """Every level as T' step tasks and one barrier per owner worker through the
        scheduler (:mod:`taskbfs.search.owners`), or with ``exchanged`` as one task per owner
        worker that runs them all and trades pieces with the others
        (:mod:`taskbfs.search.owner_levels`); the result gathered from the owners, or left
        there for a graph kept on the workers."""
        start = time.perf_counter()
        source_degree = self.source_degree()  # asked now, read by first() below

        def first() -> LevelSummary:
            return first_summary(self.parts.bounds, self.sources, source_degree(),
                                 self.placed.num_arcs, self.direction, self.init["alpha"],
                                 self.init["beta"], self.depth_limit)

        if self.kept.level >= 1:  # a resumed search reported its first levels already
            self.heard.level = self.kept.level
        search = exchanged_search if exchanged else owned_search
        slices = slice_names(self.program, self.placed, self.parts.num_tasks)  # not bundled
        summaries, result, exchange = search(
            self.program, self.placed, slices, self.sources, first, self.direction,
            self.init["alpha"], self.init["beta"], self.depth_limit, self, self.tags,
            self.keep, self.kept)
        seconds = time.perf_counter() - start
        if self.keep:
            kept = KeptResult(self.program.client, result, self.parts.bounds)
            if self.device_result:  # each range's result to a GPU worker (a copy each)
                kept = kept.to_device()
            return Outcome(None, None, summaries, seconds, kept=kept, exchange=exchange)
        return Outcome(*result, summaries, seconds, exchange=exchange)

    def _check(self, workers=()) -> None:
        """Fail the search when the call's timeout passed or a worker holding the graph's
        ranges (one of ``workers``) left the cluster (a task pinned to it would wait
        forever)."""
        if self.clock.timeout is not None and self.clock.left() <= 1e-3:
            raise TimeoutError("the search's timeout passed")
        if not self.placed.intact():
            raise CancelledError("a worker holding ranges of the graph left the cluster")
        # asked of the scheduler within the timeout: a frozen one must not hold the call
        if workers and set(workers) - set(self.program.client.nthreads(
                callback_timeout=self.clock.left())):
            raise CancelledError("a worker holding ranges of the graph left the cluster")

    def settle(self, futures, workers=()) -> None:
        """Wait until ``futures`` are computed, within the call's timeout (see
        :meth:`_check`)."""
        client = self.program.client
        while True:
            try:
                with client.as_current():  # ``wait`` uses the default client; ours may not be it
                    distributed_wait(futures, timeout=min(self.clock.left() or 1.0, 1.0))
                break
            except TimeoutError:
                pass
            self._check(workers)
        for f in futures:
            if f.status in ("error", "cancelled"):
                f.result()

    def listen(self, watch, workers=()):
        """The program's next message (the error of the task writing a datum of
        ``watch`` raised instead), within the call's timeout (see :meth:`_check`)."""
        while True:
            try:
                return self.program.next_message(watch=watch,
                                                 timeout=min(self.clock.left() or 1.0, 1.0))
            except TimeoutError:
                pass
            self._check(workers)

    def gather(self, names):
        """The values of the data ``names``, within the call's timeout."""
        return self.program.gather(names, self.clock.left())

    def report(self, summaries) -> bool:
        """Hand ``summaries`` to ``progress``; whether the last one ends the search."""
        for summary in summaries:
            if self.progress is not None:
                self.progress(summary)
        self.heard.level = summaries[-1].level
        return summaries[-1].frontier_size == 0

    def _attempts_that_ran(self, program_id: str) -> list[tuple[int, str, int]]:
        """``(attempt, program id, first level)`` of the attempts whose levels this
        result is made of: this one's alone unless it resumed an earlier one."""
        ran = self.kept.attempts
        if ran and ran[-1][1] == program_id:
            return ran
        return [(self.attempt, program_id, 0)]

    def _hear_latest(self) -> None:
        """Read the summaries a one-task search sent and no one read (for the level an
        error names; the program's other messages, e.g. a resident call's placement, are
        skipped)."""
        with contextlib.suppress(TimeoutError):
            while True:
                message = self.program.next_message(timeout=0)
                if isinstance(message, dict) and "summaries" in message:
                    self.heard.level = summaries_of(message)[-1].level

    def result(self, outcome: Outcome, strategy: str, wall_start: float) -> BFSResult:
        """The :class:`BFSResult` of ``outcome``; its tables are built when first read
        (``wall_start``, the call's entry as ``time.time()``, is their clock's zero)."""
        program, parts, summaries = self.program, self.parts, outcome.summaries
        self.heard.level = summaries[-1].level
        # The tasks' records are asked for now and read when a table is first read: the
        # caller does not wait for that round trip, nor for the live page's copy (its
        # steps' records made on the event loop, later).
        pending = program.finished_later()
        client, program_id = program.client, program.id
        ran = self._attempts_that_ran(program_id)
        earlier = [(fetch_trace_later(client, pid), first, stop)
                   for (_, pid, first), (_, _, stop) in zip(ran[:-1], ran[1:], strict=True)]

        later = getattr(summaries, "later", None)  # a kept search's, read when asked

        def to_page(done) -> None:
            if done.exception() is None and (later is None or later.exception() is None):
                records = done.result()[0]
                every = summaries if later is None else later.result()
                keep_finished(client, program_id, records, every, steps=table_step_columns)

        if later is None:
            pending.add_done_callback(to_page)
        else:  # no callback may wait for them: it may run on the client's event loop
            later.add_done_callback(lambda _: pending.add_done_callback(to_page))

        def fetched():
            records, placements = trace_answer(pending)
            for answer, first, stop in earlier:  # the levels that attempt completed
                ran_records, ran_placements = trace_answer(answer)
                records = [*(r for r in ran_records if first <= r.get("level", -1) < stop),
                           *records]
                placements = [*ran_placements, *placements]
            return records, placements

        def trace():
            table = with_device_stats(task_trace(fetched()[0], parts, wall_start, summaries),
                                       summaries)
            # which attempt ran each level (a restart from level 0 ran them all again)
            firsts = np.array([first for _, _, first in ran], dtype=np.int64)
            which = np.searchsorted(firsts, table["level"].to_numpy(np.int64), side="right") - 1
            table["attempt"] = np.array([a for a, _, _ in ran], dtype=np.int64)[which]
            table["resumed_from"] = firsts[which]
            return table

        def levels():
            # through a weak reference: a result that refers to itself through this
            # closure would live (with its arrays, maybe pinned buffers lent by the GPU
            # worker's pool) until the next garbage collection, not until it is dropped
            return level_table(summaries, mine().trace, wall_start, fetched()[0])

        result = BFSResult(
            source=self.sources,
            distances=outcome.distances,
            parents=outcome.parents,
            trace=trace,
            levels=levels,
            elapsed=outcome.seconds,
            search_seconds=outcome.seconds,
            traversed_edges=traversed_edges(self.placed.num_arcs, summaries[-1],
                                             self.graph.directed),
            strategy=strategy,
            direction=self.direction,
            num_tasks=parts.num_tasks,
            placements=lambda: fetched()[1],
            assembly_seconds=lambda: span(fetched()[0], RESULT_NAME),
            assembly_d2h_bytes=outcome.assembly_d2h_bytes,
            kept=outcome.kept,
            bounds=parts.bounds,
        )
        if outcome.exchange is not None:
            result.exchange = outcome.exchange  # docs/distributed.md: bytes per level
        mine = weakref.ref(result)
        return result


def slice_names(program: Program, placed, num_tasks: int) -> list[list[str]]:
    """Per task, the data names of the slices a step reads: its slice, and the transposed
    one when the graph has a distinct one (a directed graph searched bottom-up)."""
    distinct = placed.transposed is not None and placed.transposed is not placed.slices
    names = []
    for t in range(num_tasks):
        program.put_future(f"part/{t}", placed.slices[t])
        names.append([f"part/{t}"])
        if distinct:
            program.put_future(f"tpart/{t}", placed.transposed[t])
            names[t].append(f"tpart/{t}")
    return names


def next_summaries(program: Program, producer: str, clock: Deadline) -> list[LevelSummary]:
    """The summaries of the next message a barrier or the search task sent (the task
    that writes ``producer``: its error is raised instead of waiting forever)."""
    return summaries_of(program.next_message(watch=[producer], timeout=clock.left()))
