"""A search's clock and its faults: the call's deadline, workers lost during an attempt, and the recovery that decides whether it resumes, restarts or fails."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import CancelledError

import numpy as np
from distributed.comm import CommClosedError
from distributed.scheduler import KilledWorker

from taskbfs import config
from taskbfs.errors import (
    DeviceUnavailableError,
    InvalidParameterError,
    SearchTimeoutError,
    TaskBFSError,
    WorkerLostError,
)
from taskbfs.graph import Graph
from taskbfs.placed.graph import DistributedGraph
from taskbfs.placed.placement import (
    forget_graph,
    forget_lost,
)
from taskbfs.runtime import ExchangeAborted
from taskbfs.runtime.plugin import (
    cluster_resources,
)


def wait_for_a_worker(rt, clock) -> dict:
    """The cluster's resources once a worker is there (waiting up to
    ``runtime.connect-timeout`` seconds, within the call's timeout), else
    :class:`DeviceUnavailableError` saying the cluster has no workers."""
    wait = float(config.get("runtime.connect-timeout"))
    left = clock.left()
    wait = wait if left is None else min(wait, left)
    try:
        rt.client.wait_for_workers(1, timeout=wait)
    except TimeoutError:
        raise DeviceUnavailableError(
            f"the cluster has no workers (none joined within {wait:g} s, "
            f"taskbfs.runtime.connect-timeout): start some, e.g. "
            f"dask worker {rt.client.scheduler.address}") from None
    return cluster_resources(rt.client, clock.left())


def recover(rt, graph, clock: Deadline) -> str:
    """Make the cluster ready for another attempt after a lost worker: the embedded
    cluster's workers restarted, at least one worker there (waiting up to
    ``taskbfs.runtime.connect-timeout`` seconds, within the call's ``timeout``). Why the
    search cannot run again, or "" when it can: a :class:`Graph` is placed again from the
    client's arrays; a :class:`DistributedGraph` only when Dask can recompute every slice
    it lost (built by tasks, not scattered); the next attempt waits for that."""
    with contextlib.suppress(Exception):  # a cluster that cannot heal is judged below
        rt.heal()
    if isinstance(graph, DistributedGraph) and any(
            f.status in ("cancelled", "error") for f in graph.slices):
        return "the graph's slices on it cannot be made again (they were not built by tasks)"
    wait = config.get("runtime.connect-timeout")
    left = clock.left()
    wait = wait if left is None else min(wait, left)
    try:
        rt.client.wait_for_workers(1, timeout=wait)
    except (TimeoutError, *LOST):
        return f"no worker was left to run it (none joined within {wait:g} s)"
    return ""


def tell_attempts(exc: WorkerLostError, lost: list, why_not: str) -> None:
    """Make ``exc``, the last of the ``lost`` attempts' errors, say in one message what
    each attempt lost, and why the search was not tried again (``why_not``; "": no
    retries were left); its ``workers`` become every attempt's."""
    said = []
    for attempt, e in enumerate(lost, 1):
        where = "before its first level" if e.level is None else f"at level {e.level}"
        who = (f"worker {', '.join(e.workers)} left the cluster" if e.workers else
               "it lost data it needed")
        said.append(f"attempt {attempt} {where}: {who}")
    end = (f"not tried again: {why_not}" if why_not else
           f"taskbfs.search.retries-on-worker-loss = {len(lost) - 1}")
    if len(lost) == 1:
        exc.args = (f"{exc}; {end}",)
        return
    exc.args = (f"the search lost a worker in each of its {len(lost)} attempts "
                f"({'; '.join(said)}); {end}",)
    exc.workers = [w for e in lost for w in e.workers]


class Deadline:
    """The time left of a call's ``timeout`` (None: unbounded)."""

    def __init__(self, timeout):
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.number)) \
                    or not timeout > 0:
                raise InvalidParameterError(f"timeout must be a number of seconds > 0 or None, "
                                            f"got {timeout!r}")
            timeout = float(timeout)
        self.timeout = timeout
        self._end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        """Seconds left (a small positive number once passed), or None."""
        if self._end is None:
            return None
        return max(self._end - time.monotonic(), 1e-3)


class Heard:
    """The last level of the search the client heard of (for error messages)."""

    level: int | None = None


#: What distributed raises when a worker (or the scheduler) left with data a search needs.
LOST = (CancelledError, CommClosedError, KilledWorker)


@contextlib.contextmanager
def faults(rt, graph: Graph, since: float, clock: Deadline, heard: Heard):
    """Turn what distributed raises when the cluster fails a search into taskbfs errors:
    a lost worker into :class:`WorkerLostError` (and the placements it held dropped), a
    passed ``timeout`` into :class:`SearchTimeoutError`."""
    try:
        yield
    except ExchangeAborted as exc:  # a peer's message did not come, or could not be sent
        if not exc.workers:
            raise
        lost = [w for w in workers_lost_since(rt, since) if w in exc.workers]
        if lost:  # it left the cluster: a lost worker, as below
            raise lost_error(rt, graph, heard, lost, exc) from None
        where = "before its first level" if heard.level is None else f"at level {heard.level}"
        how = (f"within the exchange's timeout ({exc.timeout:g} s; it may be frozen or "
               f"overloaded)" if exc.timeout is not None else f"({exc})")
        raise SearchTimeoutError(
            f"the search did not finish: it was {where}, and worker {', '.join(exc.workers)} "
            f"did not answer the other owners {how}", heard.level) from None
    except TaskBFSError:
        raise
    except TimeoutError as exc:
        where = "before its first level" if heard.level is None else f"at level {heard.level}"
        within = (f"within its timeout of {clock.timeout:g} s" if clock.timeout is not None else
                  f"because the cluster did not answer in time ({exc or type(exc).__name__})")
        raise SearchTimeoutError(
            f"the search did not finish {within}: it was {where} (a worker or the scheduler "
            f"may be frozen or overloaded)", heard.level
        ) from None
    except LOST as exc:
        raise lost_error(rt, graph, heard, workers_lost_since(rt, since), exc) from None


def lost_error(rt, graph, heard: Heard, workers: list[str], exc: Exception) -> WorkerLostError:
    """The :class:`WorkerLostError` of a search that lost ``workers`` (empty: it cannot
    say which; ``exc`` is what distributed raised), the placements they held dropped."""
    forget_lost(rt)
    forget_graph(rt, graph)
    where = "before its first level" if heard.level is None else f"at level {heard.level}"
    who = (f"worker {', '.join(workers)} left the cluster" if workers else
           f"the cluster lost data the search needed ({type(exc).__name__}: {exc})")
    return WorkerLostError(f"the search failed {where}: {who}; the graph's data on it is "
                           f"placed again by the next search", workers, heard.level)


#: Seconds a failed search waits for the scheduler to log the worker it lost (the
#: search may hear of the loss, through a failed transfer, before the scheduler does).
LOST_WORKER_WAIT = 5.0


def workers_lost_since(rt, since: float) -> list[str]:
    """Addresses of the workers the scheduler removed since ``since`` (``time.time()``),
    from its event log; empty when it cannot say. No slack before ``since``: a worker
    removed just before the call (an earlier search's loss) is not this search's."""
    give_up = time.monotonic() + LOST_WORKER_WAIT
    while True:
        try:
            events = rt.client.sync(rt.client.scheduler.events, topic="all",
                                    callback_timeout=config.get("runtime.connect-timeout"))
        except Exception:  # the scheduler itself may be gone
            return []
        lost = sorted({msg["worker"] for stamp, msg in events
                       if isinstance(msg, dict) and msg.get("action") == "remove-worker"
                       and stamp >= since})
        if lost or time.monotonic() > give_up:
            return lost
        time.sleep(0.1)
