"""A search's tables: the trace of its step tasks and its level table, built from the tasks' records and the level summaries when first read."""

from __future__ import annotations

import warnings
from concurrent.futures import TimeoutError as FuturesTimeout

import numpy as np
import pandas as pd

from taskbfs.errors import (
    TaskBFSError,
)
from taskbfs.runtime import CUDA, SMP
from taskbfs.search.compiled_levels import LEVELS_NAME, outside_blocks, summary_columns
from taskbfs.search.included import (
    BARRIER_NAME,
)
from taskbfs.search.state import TOP_DOWN, LevelSummary, step_sizes
from taskbfs.search.steps import STEP_NAME

#: Seconds reading a result's trace waits for its records (asked for when the search
#: ended; they come in milliseconds unless the scheduler is gone).
TRACE_WAIT_SECONDS = 60.0


def trace_answer(pending) -> tuple[list, list]:
    """``(records, placements)`` of a finished search, once they arrived."""
    try:
        return pending.result(TRACE_WAIT_SECONDS)
    except FuturesTimeout:
        raise TaskBFSError(f"the search's trace records did not arrive within "
                           f"{TRACE_WAIT_SECONDS:.0f} s (is the scheduler still up?)") from None
    except Exception as exc:
        raise TaskBFSError(f"the search's trace records could not be read: "
                           f"{type(exc).__name__}: {exc}") from None


def traversed_edges(num_arcs: int, last: LevelSummary, directed: bool) -> int:
    """Graph500's traversed edges, from the search's own counts: the arcs of the reached
    vertices are every arc but those of the vertices left unvisited (the last summary's
    ``unexplored_edges``); an undirected graph stores each edge as two arcs."""
    arcs = int(num_arcs) - int(last.unexplored_edges)
    return arcs if directed else arcs // 2


_TRACE_COLUMNS = ["level", "task", "lo", "hi", "direction", "size", "edges_examined", "found",
                  "device", "worker", "thread", "start", "stop", "name", "included"]


def task_trace(records, parts, wall_start, summaries=()) -> pd.DataFrame:
    rows = [r for r in records
            if r.get("name") == STEP_NAME and _had_work(r["level"], r["task"], summaries)]
    frames = [_step_frame(rows, summaries)] if rows else []
    frames += _compiled_step_frames(records, summaries)
    frames += _table_step_frames(records, summaries)
    lost = _unrecorded_steps(frames, summaries)
    if lost:
        frames.append(_step_frame(lost, summaries))
    if not frames:
        return pd.DataFrame(columns=_TRACE_COLUMNS)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    tasks = df["task"].to_numpy()
    df["lo"] = parts.bounds[tasks]
    df["hi"] = parts.bounds[tasks + 1]
    df["start"] -= wall_start
    df["stop"] -= wall_start
    return (df[_TRACE_COLUMNS].sort_values(["level", "task"], kind="stable")
            .reset_index(drop=True))


def _step_frame(rows: list[dict], summaries) -> pd.DataFrame:
    """Trace rows of the step tasks (dispatched or included) from their records."""
    df = pd.DataFrame(rows)
    df["size"] = [int(summaries[r["level"]].sizes[r["task"]]) for r in rows]
    df["direction"] = [summaries[r["level"]].direction for r in rows]
    df["edges_examined"], df["found"] = _step_counts(df, summaries)
    # run inside another task (its key in the record) rather than as a task of its own
    df["included"] = df["included"].notna() if "included" in df else False
    return df


def _compiled_step_frames(records, summaries) -> list[pd.DataFrame]:
    """Trace rows of the steps that compiled level blocks ran
    (:mod:`taskbfs.search.compiled_levels`), one frame per block, from its step array: each
    with the record of the included task that ran the block (worker, thread) and the
    span of its level's steps (``LevelBlock.level_times``)."""
    blocks = getattr(summaries, "blocks", ())
    if not blocks:
        return []
    ran_by = {r["level"]: r for r in records if r.get("name") == LEVELS_NAME}
    frames = []
    for block in blocks:
        record = ran_by.get(block.first, {})
        steps = block.step_stats
        frames.append(pd.DataFrame({
            "level": steps[:, 0], "task": steps[:, 1],
            "size": step_sizes(TOP_DOWN, steps[:, 2], steps[:, 3], block.rule, steps[:, 1]),
            "edges_examined": steps[:, 3], "found": steps[:, 4], "direction": TOP_DOWN,
            "name": STEP_NAME, "device": record.get("device", "smp"),
            "worker": record.get("worker"), "thread": record.get("thread"),
            # each level's own span, from the block's cycle counts
            "start": block.level_times[steps[:, 0] - block.first, 0],
            "stop": block.level_times[steps[:, 0] - block.first, 1],
            "included": record.get("included", True) is not None}))
    return frames


def _table_step_frames(records, summaries) -> list[pd.DataFrame]:
    """Trace rows of the steps kept as step tables (one array per level: the levels on a
    worker's threads, :class:`~taskbfs.search.level_tasks.LevelTasks`, and the GPU batches of
    :class:`~taskbfs.search.device_levels.GpuLevels`), in one frame: the worker that of the
    search task that ran them."""
    tables = [(level, t) for level, t in getattr(summaries, "step_tables", ()) if len(t)]
    if not tables:
        return []
    search = next((r for r in records if r.get("search")), {})
    levels = np.concatenate([np.full(len(t), level, dtype=np.int64) for level, t in tables])
    table = np.concatenate([t for _, t in tables])
    tasks = table[:, 0]
    df = pd.DataFrame({"level": levels, "task": tasks, "thread": table[:, 1],
                       "start": table[:, 2] / 1e9, "stop": table[:, 3] / 1e9,
                       "name": STEP_NAME, "device": np.where(table[:, 4] > 0, CUDA, SMP),
                       "worker": search.get("worker"), "included": True})
    df["size"] = np.concatenate([summaries[level].sizes[t[:, 0]] for level, t in tables])
    df["direction"] = np.concatenate([np.full(len(t), summaries[level].direction, dtype=object)
                                      for level, t in tables])
    df["edges_examined"], df["found"] = _step_counts(df, summaries)
    return [df]


def table_step_columns(records, summaries) -> dict:
    """The steps of the step tables as record columns (as
    :func:`~taskbfs.live_runs.record_columns` makes them, for the live page's timeline),
    made on the client's event loop after the call returned, with no object per step."""
    tables = [(level, t) for level, t in getattr(summaries, "step_tables", ()) if len(t)]
    search = next((r for r in records if r.get("search")), {})
    parent = str(search.get("key", ""))
    table = (np.concatenate([t for _, t in tables]) if tables
             else np.zeros((0, 5), dtype=np.int64))
    levels = (np.concatenate([np.full(len(t), level, dtype=np.int64) for level, t in tables])
              if tables else np.zeros(0, dtype=np.int64))
    n = len(table)
    return {"key": [f"{parent}/{STEP_NAME}"] * n, "name": [STEP_NAME] * n,
            "device": np.where(table[:, 4] > 0, CUDA, SMP).tolist(),
            "worker": [str(search.get("worker") or "")] * n, "thread": table[:, 1].tolist(),
            "start": (table[:, 2] / 1e9).tolist(), "stop": (table[:, 3] / 1e9).tolist(),
            "level": levels.tolist(), "task": table[:, 0].tolist(), "included": [parent] * n}


def _unrecorded_steps(frames: list[pd.DataFrame], summaries) -> list[dict]:
    """Records for the steps that had work but left none (the worker that ran them left
    the cluster before the search collected its records, and Dask ran them again or
    not at all): worker, thread, start and stop unknown. Warns when there are any.
    Compiled blocks always report their steps, so only the other levels are looked at."""
    have = {pair for f in frames for pair in zip(f["level"].tolist(), f["task"].tolist(),
                                                  strict=True)}
    missing = [{"name": STEP_NAME, "level": level, "task": t, "device": None, "worker": None,
                "thread": None, "start": np.nan, "stop": np.nan, "included": None}
               for level in _loop_levels(summaries)
               for t in np.flatnonzero(summaries[level].frontier_counts).tolist()
               if (level, t) not in have]
    if missing:
        warnings.warn(f"the trace has no record of {len(missing)} of {len(have) + len(missing)} "
                      f"steps (their worker left the cluster): their rows have no worker, "
                      f"thread, start or stop", RuntimeWarning, stacklevel=5)
    return missing


def _loop_levels(summaries) -> list[int]:
    """The levels with steps (all but the last) that no compiled block ran."""
    levels, start = [], 0
    for block in sorted(getattr(summaries, "blocks", ()), key=lambda b: b.first):
        levels += range(start, block.first)
        start = max(start, block.last_level)
    return levels + list(range(start, len(summaries) - 1))


def _had_work(level: int, task: int, summaries) -> bool:
    """Whether the step of ``task`` at ``level`` had work: a level before the last summary
    (the one with an empty frontier) and a non-zero count in its level's summary."""
    return level < len(summaries) - 1 and summaries[level].frontier_counts[task] > 0


def _step_counts(df: pd.DataFrame, summaries):
    """Per step row: edges examined and vertices found (before the barrier's
    deduplication), from the summary of the barrier that merged the step (level + 1)."""
    examined = np.zeros(len(df), dtype=np.int64)
    found = np.zeros(len(df), dtype=np.int64)
    tasks = df["task"].to_numpy()
    for level, idx in df.groupby("level").indices.items():
        if int(level) + 1 < len(summaries):
            merged = summaries[int(level) + 1]
            if merged.edges_examined.size:
                examined[idx] = merged.edges_examined[tasks[idx]]
                found[idx] = merged.found[tasks[idx]]
    return examined, found


def _devices_per_level(trace: pd.DataFrame, num_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level: (CPU tasks, GPU tasks) of the trace."""
    levels = trace["level"].to_numpy(dtype=np.int64)
    on_gpu = (trace["device"] == "cuda").to_numpy()
    gpu = np.bincount(levels[on_gpu], minlength=num_levels)[:num_levels]
    cpu = np.bincount(levels, minlength=num_levels)[:num_levels] - gpu
    return cpu, gpu


def span(records, name: str) -> float:
    """Seconds from the first start to the last stop of the tasks called ``name``."""
    mine = [r for r in records if r.get("name") == name]
    if not mine:
        return 0.0
    return max(r["stop"] for r in mine) - min(r["start"] for r in mine)


def _barrier_places(records, summaries, num_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level: worker and thread of the barrier that merged that level's steps (for
    levels of a compiled block, of the included task that ran it); None where unknown."""
    workers = np.full(num_levels, None, dtype=object)
    threads = np.full(num_levels, None, dtype=object)
    for r in records:
        if r.get("name") == BARRIER_NAME and 0 <= r.get("level", -1) < num_levels:
            workers[r["level"]], threads[r["level"]] = r["worker"], r["thread"]
    ran_by = {r["level"]: r for r in records if r.get("name") == LEVELS_NAME}
    for block in getattr(summaries, "blocks", ()):
        record = ran_by.get(block.first)
        if record is not None:
            ran = slice(block.first, min(block.last_level, num_levels))
            workers[ran], threads[ran] = record["worker"], record["thread"]
    return workers, threads


def level_table(summaries, trace: pd.DataFrame, wall_start: float, records=()) -> pd.DataFrame:
    """One row per level that ran: its opening summary's counts and the closing
    barrier's (edges examined, vertices discovered, device traffic, times)."""
    cols = summary_columns(summaries)
    levels = len(summaries) - 1
    cpu, gpu = _devices_per_level(trace, levels)
    workers, threads = _barrier_places(records, summaries, levels)
    opened, closed = slice(0, levels), slice(1, levels + 1)
    return pd.DataFrame({
        "level": np.arange(levels, dtype=np.int64),
        "direction": cols["direction"][opened],
        "frontier_size": cols["frontier_size"][opened],
        "frontier_edges": cols["frontier_edges"][opened],
        "unexplored_edges": cols["unexplored_edges"][opened],
        "edges_examined": cols["edges_examined"][closed],
        "discovered": cols["frontier_size"][closed],
        "tasks": cpu + gpu,
        "tasks_cpu": cpu,
        "tasks_gpu": gpu,
        "start": cols["barrier_stop"][opened] - wall_start,
        "stop": cols["barrier_stop"][closed] - wall_start,
        "barrier_seconds": cols["barrier_stop"][closed] - cols["barrier_start"][closed],
        "barrier_worker": workers,
        "barrier_thread": threads,
        "h2d_bytes": cols["h2d_bytes"][closed],
        "d2h_bytes": cols["d2h_bytes"][closed],
        "kernel_seconds": cols["kernel_ns"][closed] / 1e9,
    })


#: Per-task device columns of the trace (0 for CPU tasks), from LevelSummary.device_stats.
DEVICE_COLUMNS = ("h2d_bytes", "d2h_bytes", "kernel_seconds")


def _device_rows(summary) -> np.ndarray:
    """``summary.device_stats`` as an int64 array of rows (task, h2d, d2h, kernel_ns)."""
    return np.asarray(getattr(summary, "device_stats", ()), dtype=np.int64).reshape(-1, 4)


def with_device_stats(trace: pd.DataFrame, summaries) -> pd.DataFrame:
    """Add the per-task device columns: the barrier after level L reports the steps of L."""
    for name in DEVICE_COLUMNS:
        trace[name] = 0.0 if name == "kernel_seconds" else 0
    if not len(trace):
        return trace
    stats = [(s.level - 1, *row) for s in outside_blocks(summaries)  # blocks: CPU only
             for row in _device_rows(s).tolist()]
    if not stats:
        return trace
    found = pd.DataFrame(stats, columns=["level", "task", "h2d_bytes", "d2h_bytes", "kernel_ns"])
    merged = trace[["level", "task"]].merge(found, on=["level", "task"], how="left")
    trace["h2d_bytes"] = merged["h2d_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["d2h_bytes"] = merged["d2h_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["kernel_seconds"] = merged["kernel_ns"].fillna(0).to_numpy() / 1e9
    return trace
