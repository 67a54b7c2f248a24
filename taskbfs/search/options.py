"""The options of :func:`~taskbfs.search.core.bfs` checked: a clear error naming the parameter for each bad value."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from taskbfs import config
from taskbfs.errors import (
    InvalidParameterError,
)
from taskbfs.placed.graph import DistributedGraph
from taskbfs.search.sources import several_sources


@dataclass(frozen=True)
class Options:
    """What a search is asked for besides its graph and how it runs (see :func:`bfs`)."""

    sources: np.ndarray  # int64, distinct, ascending
    depth_limit: int | None = None
    device_result: bool = False


def as_given(source, sources: np.ndarray, graph):
    """``result.source``: the one source's id as before, else the sources' ids."""
    return int(sources[0]) if not several_sources(graph, source) else sources


def check_depth_limit(depth_limit) -> int | None:
    """``depth_limit`` if it is None or an integer >= 0 (a bool or a float is refused)."""
    if depth_limit is None:
        return None
    if isinstance(depth_limit, (bool, np.bool_)) or not isinstance(depth_limit, (int, np.integer)):
        raise InvalidParameterError(f"depth_limit must be an integer >= 0 or None, got "
                                    f"{depth_limit!r} ({type(depth_limit).__name__})")
    if depth_limit < 0:
        raise InvalidParameterError(f"depth_limit must be >= 0 (0: the sources alone), got "
                                    f"{depth_limit}")
    return int(depth_limit)


def check_flag(name: str, value) -> bool:
    """``value`` if it is a bool (a number or a string here is a slip)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def reversed_graph(graph, reverse: bool):
    """The graph a search with ``reverse`` runs on: its transpose when directed (made
    once and kept with the graph), else the graph."""
    if not reverse or not graph.directed:
        return graph
    if isinstance(graph, DistributedGraph):
        return graph.reversed()
    made = graph.__dict__.get("_reversed")
    if made is None:  # kept: the next reversed search reuses it and its placed slices
        made = graph.__dict__["_reversed"] = graph.transpose()
    return made


def check_timeout(timeout):
    """``timeout`` if it is None or a finite number of seconds > 0."""
    if timeout is None:
        return None
    # Dask's own waits take seconds as a finite number; infinity means "no bound", i.e. None.
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.number)) \
            or not (float(timeout) > 0 and np.isfinite(timeout)):
        raise InvalidParameterError(f"timeout must be a finite number of seconds > 0 or None "
                                    f"(None: no bound), got {timeout!r}")
    return timeout


def check_lam(lam):
    """``lam`` if it is None or a number (a bool is refused: ``lam=True`` is a slip)."""
    if isinstance(lam, bool) or not (lam is None or isinstance(lam, (int, float, np.number))):
        raise InvalidParameterError(f"lam (λ) must be a number >= 0 or None, got {lam!r}")
    return lam


def check_progress(progress):
    """``progress`` if it is None or callable, checked before the search runs."""
    if progress is not None and not callable(progress):
        raise InvalidParameterError(f"progress must be a callable taking a level summary, "
                                    f"or None, got {progress!r}")
    return progress


def check_retries(retries) -> int:
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
        raise InvalidParameterError(f"taskbfs.search.retries-on-worker-loss must be an integer "
                                    f">= 0, got {retries!r}")
    return int(retries)


def check_share(gpu_share) -> float:
    try:
        share = float(gpu_share)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"gpu_share must be a number in [0, 1], got {gpu_share!r}") from None
    if not 0.0 <= share <= 1.0:
        raise InvalidParameterError(f"gpu_share must be in [0, 1], got {gpu_share!r}")
    return share


def check_tasks(tasks) -> int | None:
    """``tasks`` as given (None: the default, resolved once the cluster is known)."""
    if tasks is None:
        return None
    if isinstance(tasks, bool) or not isinstance(tasks, (int, np.integer)):
        raise InvalidParameterError(f"tasks must be an integer, got {tasks!r}")
    if tasks < 1:
        raise InvalidParameterError(f"tasks must be >= 1, got {tasks}")
    if tasks > config.get("max-tasks"):
        raise InvalidParameterError(
            f"tasks = {tasks} is more than a search can use (at most taskbfs.max-tasks = "
            f"{config.get('max-tasks')}: every task costs the runtime a slice and ~1 ms per level; "
            f"a few per core is best)"
        )
    return int(tasks)


def check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise InvalidParameterError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
    return value
