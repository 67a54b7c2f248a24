"""The task-based level-synchronous BFS (the paper's Algorithm 2) on the runtime.

Returns
    :class:`~taskbfs.bfs.result.BFSResult`.
Approach
    Per level, one step task per vertex range with work to do (top-down: a non-empty
    frontier; bottom-up: unvisited vertices), each placed on a CPU or GPU worker by the
    scheduler plugin from its size and the strategy; then one barrier task that folds
    their discoveries into the visited set and yields the next frontier (its only output:
    T + 1 tasks per level). All of a level's tasks reach the scheduler as one batch; the
    client only reads the level's small summary. A small level (a few thousand frontier
    edges, all on the CPU) is one task instead, which also runs the small levels after it
    (:mod:`taskbfs.bfs.small_levels`). The steps' outputs stay on the workers
    until the frontier is empty; then one task per group of ranges writes that group's
    parents and distances from them, in parallel. Partitions are placed once per graph
    and reused; frontiers and the visited set stay on the workers.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from taskbfs import config
from taskbfs.bfs.placement import place_graph
from taskbfs.bfs.result import BFSResult
from taskbfs.bfs.small_levels import SMALL_LEVELS, Assembly, SmallLevels
from taskbfs.bfs.state import (
    AUTO,
    BOTTOM_UP,
    DIRECTIONS,
    TOP_DOWN,
    LevelSummary,
    assemble_search,
    assembly_count,
    assembly_cuts,
    barrier,
    first_summary,
    init_state,
    size_label,
    switch_parameters,
    tasks_overlapping,
)
from taskbfs.bfs.steps import STEP
from taskbfs.errors import InvalidParameterError
from taskbfs.graph import Graph, partition
from taskbfs.runtime import CUDA, Policy, Program, Task, fetch_placements
from taskbfs.runtime.cluster import default_runtime
from taskbfs.runtime.plugin import CPU_RESOURCE, GPU_RESOURCE

STRATEGIES = ("hybrid", "fixed", "cpu", "gpu")

INIT = Task("bfs_init", smp=init_state)
BARRIER = Task("bfs_barrier", smp=barrier)
FINISH = Task("bfs_result", smp=assemble_search)


def bfs(graph: Graph, source: int, tasks: int | None = None, strategy: str = "hybrid",
        lam: float | None = None, runtime=None, direction: str = AUTO,
        balance: str = config.DEFAULT_BALANCE, gpu_share: float = config.DEFAULT_GPU_SHARE,
        progress=None, lookahead: int | None = None,
        small_level_edges: int | None = None) -> BFSResult:
    """Breadth-first search from ``source`` as a program of tasks on a Dask cluster.

    Parameters
    ----------
    graph : Graph
    source : int
        Start vertex.
    tasks : int, optional
        Number T of vertex-range tasks, any number >= 1 (a task owns at least one vertex,
        so T above the vertex count runs one task per vertex: ``result.num_tasks`` says
        how many ran); default :func:`default_tasks`: one per GPU worker for ``hybrid``
        and ``gpu`` on a cluster with GPUs, else one per CPU slot, at most
        ``config.DEFAULT_TASKS``.
    strategy : {"hybrid", "fixed", "cpu", "gpu"}
        hybrid: a task goes to the GPU when its frontier exceeds λ (paper Sec. V.A);
        fixed: the first ``gpu_share`` of the tasks always run on the GPU (Sec. V.B);
        cpu / gpu: every task on that device. Without GPU workers, hybrid and fixed run
        everything on the CPU; gpu raises :class:`~taskbfs.errors.DeviceUnavailableError`.
    lam : float, optional
        λ of the hybrid strategy (default ``config.DEFAULT_LAMBDA``).
    runtime : Runtime, distributed.Client, str or None
        Where to run; None uses the embedded default cluster (started once per process).
    direction : {"auto", "top-down", "bottom-up"}
        auto switches between top-down and bottom-up levels by Beamer's rule.
    balance : {"edges", "vertices"}
        How vertex ranges are cut.
    gpu_share : float
        Share of the tasks bound to the GPU by the fixed strategy.
    progress : callable, optional
        Called as ``progress(summary)`` after every level (the CLI's progress display).
    lookahead : int, optional
        Levels submitted before the barrier that sizes them has run (default
        ``config.DEFAULT_LOOKAHEAD``): their steps wait on the scheduler and start as soon
        as the barrier ends, with no round trip through the client; the scheduler plugin
        places them when the barrier's counts arrive. 0 submits each level after its
        summary has reached the client, with steps only for the tasks that have work.
    small_level_edges : int, optional
        A top-down level with at most this many frontier edges (default
        ``config.SMALL_LEVEL_EDGES``), whose steps would all run on the CPU (hybrid: each
        step at most λ vertices; never with the fixed strategy on a cluster with GPUs),
        runs inside one task, with the small levels after it, instead of as T
        steps and a barrier each (:mod:`taskbfs.bfs.small_levels`); so does a bottom-up
        level with at most ``config.SMALL_BOTTOM_UP_EDGES`` edges left unexplored. Their
        steps and barriers are in the trace all the same, with ``included`` set. 0: every
        level is T steps and a barrier. Off with ``lookahead`` > 0, and on a cluster where no one
        worker holds every slice (it would copy them). With one GPU worker, gpu and hybrid
        run every level inside one task on it (``config.GPU_LEVELS_IN_ONE_TASK``).

    Returns
    -------
    BFSResult

    Examples
    --------
    >>> import taskbfs as tb
    >>> g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    >>> r = tb.bfs(g, 0, tasks=2)                  # doctest: +SKIP
    >>> r.distances.tolist(), r.parents.tolist()   # doctest: +SKIP
    ([0, 1, 2, 3], [0, 0, 1, 2])
    """
    if not isinstance(graph, Graph):
        raise InvalidParameterError(f"graph must be a taskbfs.Graph, got {type(graph).__name__}")
    source = graph.check_vertex(source, "source")
    requested = _check_tasks(tasks)
    direction = _check_choice("direction", direction, DIRECTIONS)
    strategy = _check_choice("strategy", strategy, STRATEGIES)
    share = _check_share(gpu_share)
    ahead = _check_count("lookahead", lookahead, config.DEFAULT_LOOKAHEAD)
    small_edges = _check_count("small_level_edges", small_level_edges, config.SMALL_LEVEL_EDGES)
    policy = Policy(strategy, lam=config.DEFAULT_LAMBDA if lam is None else lam)
    rt = _runtime(runtime)
    resources = rt.resources()
    slots = int(resources.get(CPU_RESOURCE, 0))
    # A task owns at least one vertex: more tasks than vertices means one task per vertex.
    num_tasks = min(requested or _default_for(resources, strategy), graph.num_vertices)
    if strategy == "fixed":
        policy = replace(policy, gpu_tasks=frozenset(range(round(share * num_tasks))))
    if policy.needs_gpu:
        rt.require_gpu("strategy 'gpu'")

    parts = partition(graph, num_tasks, balance=balance)
    placed = place_graph(rt, graph, parts, need_transpose=direction != TOP_DOWN)
    small = _small_levels(rt, resources, policy, small_edges, ahead, placed)
    program = Program(rt, policy, name="bfs")
    try:
        return _run(program, graph, parts, placed, source, strategy, direction, progress,
                    assembly_count(graph.num_vertices, slots), ahead, small)
    finally:
        program.close()


def _run(program, graph, parts, placed, source, strategy, direction, progress,
         assembly_tasks: int, lookahead: int, small: SmallLevels | None) -> BFSResult:
    num_tasks = parts.num_tasks
    slices = _slice_names(program, placed, num_tasks)
    program.put_future("degrees", placed.degrees)

    start = time.perf_counter()
    wall_start = time.time()
    # The level-0 summary needs no round trip: INIT and the first level go as one batch.
    # α and β as configured now, sent to the worker too: both sides decide alike
    alpha, beta = switch_parameters(None, None)
    summary = first_summary(parts.bounds, source, graph.degree(source), graph.num_arcs, direction,
                            alpha, beta)
    summaries = [summary]
    logs: list[_Log] = []
    levels = _Submitter(program, slices, lookahead, small, logs, source,
                        assembly_cuts(graph.num_vertices, assembly_tasks))
    levels.start(summary, init={"bounds": parts.bounds, "source": source,
                                "direction_mode": direction, "total_edges": graph.num_arcs,
                                "alpha": alpha, "beta": beta},
                 tags={"vertices": graph.num_vertices, "directed": bool(graph.directed)})
    while True:
        summary = _next_summary(program)
        summaries.append(summary)
        if progress is not None:
            progress(summary)
        if summary.frontier_size == 0:
            break
        if not summary.chained:  # else the task that sent it runs that level
            levels.after(summary)
    if summary.assembled:  # the small-level task that ended the search wrote the result
        program.taskwait(["frontier"])
        elapsed = time.perf_counter() - start
        for log in logs:
            program.forget(log.name)
        distances, parents = program.get("frontier").result
    else:
        pieces = _submit_assembly(program, parts, source, _ran(logs, summaries), assembly_tasks,
                                  included=levels.small_tasks > 0,
                                  threaded=config.THREADED_ASSEMBLY and program.runtime.in_process)
        program.taskwait(pieces)
        elapsed = time.perf_counter() - start
        distances, parents = _joined(program.gather(pieces))
    records = program.records()
    placements = fetch_placements(program.client, program.id)
    from taskbfs.graph500 import traversed_edges

    trace = _with_device_stats(_task_trace(records, parts, wall_start, summaries), summaries)
    return BFSResult(
        source=source,
        distances=distances,
        parents=parents,
        trace=trace,
        levels=_level_table(summaries, trace, wall_start, _barrier_places(records)),
        elapsed=elapsed,
        traversed_edges=traversed_edges(graph, parents),
        strategy=strategy,
        direction=direction,
        num_tasks=num_tasks,
        placements=placements,
        assembly_seconds=_span(records, FINISH.name),
        assembly_d2h_bytes=sum(int(r.get("d2h_bytes", 0)) for r in records
                               if r.get("name") == FINISH.name),
    )


class _Submitter:
    """Submits the levels of one search as their summaries arrive (see :meth:`after`)."""

    def __init__(self, program: Program, slices, lookahead: int, small: SmallLevels | None,
                 logs: list, source: int, cuts: list):
        self.source = source  # and the result's slices: for a small-level task that ends it
        self.cuts = cuts
        self.program = program
        self.slices = slices
        self.lookahead = lookahead
        self.small = small
        self.logs = logs  # where the submitted steps' outputs are (appended to)
        self.submitted = -1  # the last level submitted
        self.small_tasks = 0  # small-level tasks submitted

    def start(self, summary: LevelSummary, init: dict, tags: dict) -> None:
        """The first batch: the task that makes the level-0 frontier (``init_state(**init)``,
        traced with ``tags``) and level 0; one small-level task doing both when level 0
        is small (one task and one hop fewer)."""
        device = self.small.device(summary) if self.small is not None else None
        if device is not None:
            self._submit_small(summary, device, init, tags)
            return
        with self.program.batch():
            self.program.submit(INIT, ins=["degrees"], outs=["frontier"], kwargs=init, tags=tags)
            self.after(summary)

    def after(self, summary: LevelSummary) -> None:
        """What to submit once ``summary`` (a non-empty level) is known, as one batch: a
        small-level task when the level is small, else that level from its summary
        unless it was submitted ahead, then the levels up to ``lookahead`` after it when
        that is worth it.

        A level submitted ahead has a step for every task, so it pays off only when most
        tasks have work: at least ``config.LOOKAHEAD_MIN_ACTIVE`` of them in the latest
        level known (a path searched with one task per vertex would otherwise run T idle
        steps per level).
        """
        program, level = self.program, summary.level
        device = self.small.device(summary) if self.small is not None else None
        if device is not None:
            self._submit_small(summary, device)
            return
        active = int(np.count_nonzero(summary.frontier_counts))
        with program.batch():
            if self.submitted < level:
                self.logs += _submit_level(program, self.slices, level, summary)
                self.submitted = level
            if active >= config.LOOKAHEAD_MIN_ACTIVE * len(self.slices):
                while self.submitted < level + self.lookahead:
                    self.submitted += 1
                    self.logs += _submit_level(program, self.slices, self.submitted)

    def _submit_small(self, summary: LevelSummary, device: str, init: dict | None = None,
                      tags: dict | None = None) -> None:
        """A small-level task from level ``summary.level``, for ``device``: its size is
        what makes the policy place it there; with ``init``, it also makes the level-0
        frontier (``outs`` rather than ``inouts``)."""
        active = np.flatnonzero(summary.frontier_counts)
        sizes = summary.frontier_counts[active]
        # the GPU worker's task is "larger than λ"; a CPU one, as large as its largest step
        size = int(self.small.gpu_above) + 1 if device == CUDA else int(sizes.max())
        # every earlier step's output too, to write the result if the search ends inside
        assembly = Assembly(FINISH.name, self.source, self.cuts, [log.level for log in self.logs])
        frontier = {"inouts": ["frontier"], "in_place": True} if init is None else {
            "outs": ["frontier"]}
        self.program.submit(
            SMALL_LEVELS, ins=[name for names in self.slices for name in names] + ["degrees"]
            + [log.name for log in self.logs], **frontier,
            kwargs={"level": summary.level, "small": self.small, "barrier_name": BARRIER.name,
                    "assembly": assembly, "init": init, "slices_per_task": len(self.slices[0])},
            size=size,
            # the live page shows the level's steps from these
            tags={**(tags or {}), "level": summary.level, "small_levels": True,
                  "direction": summary.direction, "frontier": summary.frontier_size,
                  "frontier_edges": summary.frontier_edges, "active": active.tolist(),
                  "sizes": sizes.tolist()})
        self.submitted = summary.level
        self.small_tasks += 1


def _slice_names(program: Program, placed, num_tasks: int) -> list[list[str]]:
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


@dataclass(frozen=True)
class _Log:
    """Where one step's output (its discoveries) lives until the end of the search."""

    name: str
    level: int
    task: int


def _submit_level(program: Program, slices, level: int, summary: LevelSummary | None = None
                  ) -> list[_Log]:
    """One level: step tasks, then the barrier, as one batch.

    With the level's ``summary`` at hand, a step per task with work, placed by its size,
    reading the one slice its direction needs.
    Without (submitted ahead), a step per task: each reads its direction and its work
    from the frontier (an idle one returns at once), and the plugin places it when the
    barrier before it publishes the sizes.
    """
    if summary is None:
        active = range(len(slices))
    else:
        active = np.flatnonzero(summary.frontier_counts).tolist()
    logs, step_keys = [], []
    with program.batch():
        for t in active:
            name = f"found/{level}/{t}"
            tags = {"level": level, "task": t}
            reads = slices[t]  # the step picks by the frontier's direction
            if summary is None:
                placement = {"size_from": size_label(level)}
            else:  # the live page (taskbfs.dashboard) reads these tags as they are placed
                placement = {"size": int(summary.frontier_counts[t])}
                tags.update(size=placement["size"], direction=summary.direction)
                reads = reads[-1:] if summary.direction == BOTTOM_UP else reads[:1]
            step_keys.append(program.submit(STEP, ins=[*reads, "frontier"], outs=[name], task_id=t,
                                            tags=tags, **placement))
            logs.append(_Log(name, level, t))
        tags = {"level": level}
        follow = ()
        if summary is not None:
            tags.update(frontier=summary.frontier_size, frontier_edges=summary.frontier_edges)
            if config.BARRIER_FOLLOWS_GPU_STEPS:
                follow = step_keys  # all on the GPU: merge there, where their outputs are
        program.submit(BARRIER, ins=[log.name for log in logs] + ["degrees"], inouts=["frontier"],
                       in_place=True, kwargs={"level": level}, tags=tags, follow=follow)
    return logs


def _ran(logs: list[_Log], summaries: list[LevelSummary]) -> list[tuple[_Log, str]]:
    """The steps that had work (:func:`_had_work`; levels submitted ahead have a step for
    every task), each with its direction."""
    return [(log, summaries[log.level].direction) for log in logs
            if _had_work(log.level, log.task, summaries)]


def _submit_assembly(program: Program, parts, source: int, ran: list[tuple[_Log, str]],
                     count: int, included: bool = False, threaded: bool = False) -> list[str]:
    """``count`` tasks, one per equal slice of the vertex ids, write the slice's distances
    and parents from the steps' outputs: every top-down step's (bucketed by owner) and the
    bottom-up steps' of the tasks overlapping the slice, and with ``included`` those that
    small-level tasks ran (the last frontier holds them). With ``threaded`` (workers that
    share this process's memory) one task writes the ``count`` slices instead, on a thread
    each: the same work without ``count - 1`` task dispatches, and one piece, not
    ``count`` to join. Returns the names of the pieces, in vertex order."""
    cuts = assembly_cuts(int(parts.bounds[-1]), count)
    if threaded and count > 1:
        groups = [cuts]
    else:
        groups = [cuts[g : g + 2] for g in range(len(cuts) - 1)]
    names = []
    with program.batch():
        for g, group in enumerate(groups):
            lo, hi = group[0], group[-1]
            tasks = tasks_overlapping(parts.bounds, lo, hi)
            mine = [log for log, direction in ran if direction != BOTTOM_UP or log.task in tasks]
            name = f"result/{g}"
            reads = [log.name for log in mine] + (["frontier"] if included else [])
            program.submit(FINISH, ins=reads, outs=[name],
                           kwargs={"source": source, "lo": lo, "hi": hi, "bounds": parts.bounds,
                                   "levels": [log.level for log in mine], "included": included,
                                   "cuts": group},
                           tags={"done": True, "group": g})
            names.append(name)
    for log, _direction in ran:
        program.forget(log.name)
    return names


def _joined(pieces):
    """The groups' ``(distances, parents)`` pieces as two whole arrays."""
    if len(pieces) == 1:
        return pieces[0]
    return (np.concatenate([d for d, _ in pieces]), np.concatenate([p for _, p in pieces]))


def _next_summary(program: Program) -> LevelSummary:
    """The summary the last barrier published."""
    return LevelSummary.from_message(program.next_message(watch=["frontier"]))


def _task_trace(records, parts, wall_start, summaries=()) -> pd.DataFrame:
    columns = ["level", "task", "lo", "hi", "direction", "size", "edges_examined", "found",
               "device", "worker", "thread", "start", "stop", "name", "included"]
    rows = [r for r in records
            if r.get("name") == STEP.name and _had_work(r["level"], r["task"], summaries)]
    if not rows:
        return pd.DataFrame(columns=columns)
    df = pd.DataFrame(rows)
    df["size"] = [int(summaries[r["level"]].frontier_counts[r["task"]]) for r in rows]
    df["direction"] = [summaries[r["level"]].direction for r in rows]
    df["lo"] = parts.bounds[df["task"].to_numpy()]
    df["hi"] = parts.bounds[df["task"].to_numpy() + 1]
    df["edges_examined"], df["found"] = _step_counts(df, summaries)
    # run inside a small-level task (its key in the record) rather than as a task of its own
    df["included"] = df["included"].notna() if "included" in df else False
    df["start"] -= wall_start
    df["stop"] -= wall_start
    return df[columns].sort_values(["level", "task"]).reset_index(drop=True)


def _had_work(level: int, task: int, summaries) -> bool:
    """Whether the step of ``task`` at ``level`` had work: a level before the last summary
    (the one with an empty frontier) and a non-zero count in its level's summary."""
    return level < len(summaries) - 1 and summaries[level].frontier_counts[task] > 0


def _step_counts(df: pd.DataFrame, summaries):
    """Per step row: edges examined and vertices found (before the barrier's
    deduplication), from the summary of the barrier that merged the step (level + 1)."""
    examined = np.zeros(len(df), dtype=np.int64)
    found = np.zeros(len(df), dtype=np.int64)
    by_level = {s.level: s for s in summaries}
    tasks = df["task"].to_numpy()
    for level, idx in df.groupby("level").indices.items():
        merged = by_level.get(int(level) + 1)
        if merged is not None and merged.edges_examined.size:
            examined[idx] = merged.edges_examined[tasks[idx]]
            found[idx] = merged.found[tasks[idx]]
    return examined, found


def _devices_per_level(trace: pd.DataFrame) -> dict:
    """Level → (CPU tasks, GPU tasks), in one pass over the trace."""
    if not len(trace):
        return {}
    counts = pd.crosstab(trace["level"], trace["device"])
    cpu = counts["smp"] if "smp" in counts else pd.Series(0, index=counts.index)
    gpu = counts["cuda"] if "cuda" in counts else pd.Series(0, index=counts.index)
    return {int(level): (int(c), int(g)) for level, c, g in zip(counts.index, cpu, gpu, strict=True)}


def _span(records, name: str) -> float:
    """Seconds from the first start to the last stop of the tasks called ``name``."""
    mine = [r for r in records if r.get("name") == name]
    if not mine:
        return 0.0
    return max(r["stop"] for r in mine) - min(r["start"] for r in mine)


def _barrier_places(records) -> dict:
    """Level → (worker, thread) of the barrier that merged that level's steps."""
    return {r["level"]: (r["worker"], r["thread"]) for r in records
            if r.get("name") == BARRIER.name and "level" in r}


def _level_table(summaries, trace: pd.DataFrame, wall_start: float,
                 barrier_places: dict | None = None) -> pd.DataFrame:
    devices = _devices_per_level(trace)
    barrier_places = barrier_places or {}
    rows = []
    for prev, cur in zip(summaries[:-1], summaries[1:], strict=True):
        cpu, gpu = devices.get(prev.level, (0, 0))
        rows.append({
            "level": prev.level,
            "direction": prev.direction,
            "frontier_size": prev.frontier_size,
            "frontier_edges": prev.frontier_edges,
            "unexplored_edges": prev.unexplored_edges,
            "edges_examined": int(cur.edges_examined.sum()),
            "discovered": cur.frontier_size,
            "tasks": cpu + gpu,
            "tasks_cpu": cpu,
            "tasks_gpu": gpu,
            "start": prev.barrier_stop - wall_start,
            "stop": cur.barrier_stop - wall_start,
            "barrier_seconds": cur.barrier_stop - cur.barrier_start,
            "barrier_worker": barrier_places.get(prev.level, (None, None))[0],
            "barrier_thread": barrier_places.get(prev.level, (None, None))[1],
            **_device_totals(cur),
        })
    return pd.DataFrame(rows)


#: Per-task device columns of the trace (0 for CPU tasks), from LevelSummary.device_stats.
DEVICE_COLUMNS = ("h2d_bytes", "d2h_bytes", "kernel_seconds")


def _device_rows(summary) -> np.ndarray:
    """``summary.device_stats`` as an int64 array of rows (task, h2d, d2h, kernel_ns)."""
    return np.asarray(getattr(summary, "device_stats", ()), dtype=np.int64).reshape(-1, 4)


def _device_totals(summary) -> dict:
    """A level's device traffic and kernel time (the steps that the summary merged)."""
    rows = _device_rows(summary)
    return {"h2d_bytes": int(rows[:, 1].sum()), "d2h_bytes": int(rows[:, 2].sum()),
            "kernel_seconds": float(rows[:, 3].sum()) / 1e9}


def _with_device_stats(trace: pd.DataFrame, summaries) -> pd.DataFrame:
    """Add the per-task device columns: the barrier after level L reports the steps of L."""
    for name in DEVICE_COLUMNS:
        trace[name] = 0.0 if name == "kernel_seconds" else 0
    if not len(trace):
        return trace
    stats = [(s.level - 1, *row) for s in summaries for row in _device_rows(s).tolist()]
    if not stats:
        return trace
    found = pd.DataFrame(stats, columns=["level", "task", "h2d_bytes", "d2h_bytes", "kernel_ns"])
    merged = trace[["level", "task"]].merge(found, on=["level", "task"], how="left")
    trace["h2d_bytes"] = merged["h2d_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["d2h_bytes"] = merged["d2h_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["kernel_seconds"] = merged["kernel_ns"].fillna(0).to_numpy() / 1e9
    return trace


def _check_share(gpu_share) -> float:
    try:
        share = float(gpu_share)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"gpu_share must be a number in [0, 1], got {gpu_share!r}") from None
    if not 0.0 <= share <= 1.0:
        raise InvalidParameterError(f"gpu_share must be in [0, 1], got {gpu_share!r}")
    return share


def _check_count(name: str, value, default: int) -> int:
    """``value`` as an integer >= 0 (None: ``default``), or a clear error naming ``name``."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidParameterError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def _small_levels(rt, resources: dict, policy: Policy, max_edges: int, lookahead: int,
                  placed) -> SmallLevels | None:
    """The rule for the levels of this search that one task runs by itself
    (:mod:`taskbfs.bfs.small_levels`), or None when there are none: turned off
    (``max_edges`` 0), levels submitted ahead (their steps are already queued), slices
    that no one worker holds together, or a strategy that spreads GPU work over several
    GPU workers or binds it to tasks (fixed). With one GPU worker
    (``config.GPU_LEVELS_IN_ONE_TASK``) and a policy that sends steps by size to
    the GPU, every level runs inside one task there, each step on the device the
    policy gives it."""
    if max_edges == 0 or lookahead > 0 or not rt.holds_together(placed.slices):
        return None
    bottom_up = config.SMALL_BOTTOM_UP_EDGES
    gpus = int(resources.get(GPU_RESOURCE, 0))
    if not gpus or policy.kind == "cpu":
        return SmallLevels(max_edges, math.inf, bottom_up)
    if gpus == 1 and config.GPU_LEVELS_IN_ONE_TASK and policy.kind in ("hybrid", "gpu"):
        # every level on the GPU worker; its steps by λ (hybrid), or all on the GPU (gpu)
        return SmallLevels(0, 0, 0, gpu_above=policy.lam if policy.kind == "hybrid" else -1.0)
    if policy.kind == "hybrid":
        return SmallLevels(max_edges, policy.lam, bottom_up)
    return None


def _check_tasks(tasks) -> int | None:
    """``tasks`` as given (None: the default, resolved once the cluster is known)."""
    if tasks is None:
        return None
    if isinstance(tasks, bool) or not isinstance(tasks, (int, np.integer)):
        raise InvalidParameterError(f"tasks must be an integer, got {tasks!r}")
    if tasks < 1:
        raise InvalidParameterError(f"tasks must be >= 1, got {tasks}")
    return int(tasks)


def default_tasks(runtime=None, strategy: str = "hybrid") -> int:
    """T when ``bfs`` is not given ``tasks``.

    With GPU workers and a strategy that sends big levels to them (``hybrid``, ``gpu``):
    ``config.DEFAULT_TASKS_PER_GPU`` per GPU worker. Otherwise (``cpu``, ``fixed``, or no
    GPU): one task per CPU slot of the cluster, at most ``config.DEFAULT_TASKS``. See
    those settings for the measurements behind them.

    Parameters
    ----------
    runtime : Runtime, distributed.Client, str or None
        As for :func:`bfs` (None: the embedded default cluster).
    strategy : {"hybrid", "fixed", "cpu", "gpu"}
    """
    strategy = _check_choice("strategy", strategy, STRATEGIES)
    return _default_for(_runtime(runtime).resources(), strategy)


def _default_for(resources: dict, strategy: str) -> int:
    gpus = int(resources.get(GPU_RESOURCE, 0))
    if gpus and strategy in ("hybrid", "gpu"):
        return max(1, gpus * config.DEFAULT_TASKS_PER_GPU)
    return tasks_for_slots(int(resources.get(CPU_RESOURCE, 0)))


def tasks_for_slots(slots: int) -> int:
    """The default T for a cluster of ``slots`` CPU slots (0: unknown)."""
    return max(1, min(config.DEFAULT_TASKS, slots or config.DEFAULT_TASKS))


def _check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise InvalidParameterError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
    return value


def _runtime(runtime):
    from taskbfs.dashboard import install  # the live page is the BFS's, not the runtime's
    from taskbfs.runtime import Runtime

    if runtime is None:
        runtime = default_runtime()
    elif not isinstance(runtime, Runtime):
        runtime = _wrapped_runtime(runtime)
    return install(runtime)


_wrapped_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_wrapped_addresses: dict = {}


def _wrapped_runtime(client_or_address):
    """A Runtime around a Client or address given to bfs(), kept for reuse across calls
    (its placed partitions with it); dropped with the Client."""
    from taskbfs.runtime import Runtime

    cache = _wrapped_addresses if isinstance(client_or_address, str) else _wrapped_clients
    rt = cache.get(client_or_address)
    if rt is None or rt.client.status not in ("running", "connecting"):
        rt = cache[client_or_address] = Runtime(client_or_address)
    return rt


__all__ = ["STRATEGIES", "bfs", "default_tasks", "TOP_DOWN", "BOTTOM_UP", "AUTO"]
