"""The client's half of the live page: the finished searches a client keeps, and sends to the
page on its scheduler when the page asks for one (:meth:`taskbfs.live_runs.LiveRuns.follow`,
on :data:`~taskbfs.live_runs.WANTED_TOPIC`): a search no one watches costs its client, and
the event loop the embedded cluster shares, nothing.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections import OrderedDict

from taskbfs.live_runs import MAX_RUNS, WANTED_TOPIC, record_columns

logger = logging.getLogger(__name__)

#: The most records and level summaries of a finished search the page is given.
FINISHED_MAX_ROWS = 4096
#: Finished searches a client keeps until the page asks for them (the board remembers
#: :data:`MAX_RUNS`).
KEPT_FINISHED = MAX_RUNS
_kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> {program: ...}
_kept_lock = threading.Lock()


def keep_finished(client, program: str, records, summaries, steps=None) -> None:
    """Keep what the client collected of the finished search ``program`` for the page on
    ``client``'s scheduler: its execution records (the ones ``r.trace`` is made of) and
    every level's summary (:meth:`LiveRuns.finished`). Nothing is made or sent until the
    page asks for it (:meth:`LiveRuns.follow`, on :data:`WANTED_TOPIC`): a search no one
    watches costs the client and the event loop it may share with the cluster nothing.
    The client keeps its last :data:`KEPT_FINISHED` searches; of one deeper than
    :data:`FINISHED_MAX_ROWS` levels, the first records and its summaries as long as its
    result holds them (the page draws no more than those first ones). ``steps``: a
    function of ``(records, summaries)`` that gives more records as columns (as
    :func:`record_columns` makes them: the steps a search kept as arrays, the summaries'
    ``step_tables``), called when the page asks.
    """
    with _kept_lock:
        kept = _kept.get(client)
        if kept is None:
            kept = _kept[client] = OrderedDict()
            client.subscribe_topic(WANTED_TOPIC, functools.partial(_wanted, weakref.ref(client)))
        kept[program] = (len(records), _first_records(records), _kept_levels(summaries),
                         steps)
        while len(kept) > KEPT_FINISHED:
            kept.popitem(last=False)


def _first_records(records: list) -> list:
    """The first :data:`FINISHED_MAX_ROWS` records, and the search task's (the steps kept
    as arrays are named after it) wherever it is."""
    if len(records) <= FINISHED_MAX_ROWS:
        return records
    rest = (r for r in records[FINISHED_MAX_ROWS:] if r.get("search"))
    return [*records[:FINISHED_MAX_ROWS], *rest]


class _FirstLevels(list):
    """The first level summaries of a deep search, with their levels' step tables."""

    step_tables: list = []


def _kept_levels(summaries):
    """What the client keeps of ``summaries``: the summaries themselves (built only when
    read), or of a search deeper than :data:`FINISHED_MAX_ROWS` levels a weak reference
    (its arrays are its result's, and go with it; building its first summaries here
    would cost the caller milliseconds)."""
    if len(summaries) <= FINISHED_MAX_ROWS:
        return lambda: summaries
    try:
        return weakref.ref(summaries)
    except TypeError:  # a plain list: cut now
        first = summaries[:FINISHED_MAX_ROWS]
        return lambda: first


def _first_levels(summaries) -> list:
    """The first :data:`FINISHED_MAX_ROWS` of ``summaries`` (none once gone), with their
    levels' step tables: what the page draws."""
    if summaries is None:
        return []
    if len(summaries) <= FINISHED_MAX_ROWS:
        return summaries
    first = _FirstLevels(summaries[:FINISHED_MAX_ROWS])
    first.step_tables = [(level, table) for level, table in getattr(summaries, "step_tables", ())
                         if level < FINISHED_MAX_ROWS]
    return first


def _wanted(client_ref, event) -> None:
    """The page asked for a finished search (``event``'s program): sent, on the client's
    event loop, if this client keeps it; a failure is logged at debug level and never
    raised."""
    client = client_ref()
    program = event[1].get("program") if isinstance(event[1], dict) else None
    with _kept_lock:
        found = None if client is None else _kept.get(client, {}).pop(program, None)
    if found is None:
        return
    total, records, levels, steps = found

    async def send():
        from distributed.protocol.pickle import dumps

        try:  # the page must never stop a search
            summaries = _first_levels(levels())
            columns, count = record_columns(records), total
            if steps is not None:
                more = steps(records, summaries)
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
    (lists pickle faster than many small arrays): about half of ``to_message``'s cost and
    bytes on a deep search."""
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


__all__ = ["FINISHED_MAX_ROWS", "keep_finished"]
