"""The level loop: the one place a search goes from level to level, whoever runs the levels.

Returns
    :func:`run_levels` → the summary of the last level (an empty frontier, or the level
    where its runner said to stop).
Approach
    A level is always T' step tasks and a barrier, and its barrier ends it with the
    level's summary (:meth:`~taskbfs.search.state.SwitchRule.summary`: the next direction,
    the step sizes, the end). What varies is who runs the tasks: a *runner*. The loop asks
    its runner to run the level the current summary opens and to announce what that made,
    until the frontier is empty. Three runners:

    - :class:`taskbfs.search.included.IncludedLevels`, inside the one search task on the
      worker that holds every slice: each level on the device (one task on the GPU
      worker), in the compiled loop (a block of small top-down CPU levels at once), on the
      CPU worker's threads, or as included steps and an included barrier; it announces
      by deciding each step's device (``gpu_steps``), keeping the summary and sending the
      latest to the client now and then (live page, ``progress``);
    - :class:`taskbfs.search.owners.OwnedSearch`, on the client: each level as one batch of
      dispatched step tasks and one barrier per owner worker, the owners' reports summed
      into the summary; it announces by keeping the level for a resume
      (:class:`~taskbfs.search.owners.KeptLevels`) and handing it to ``progress`` and the
      live page (through the client's ``waits.report``, which also says when to stop);
    - :class:`taskbfs.search.owner_levels.OwnerLevels`, inside one task per owner worker: its
      ranges' steps and its barrier included, pieces and reports traded with the other
      owners worker to worker, every owner making the same summary from the W reports;
      it announces by deciding its steps' devices (and owner 0 by sending the live page
      the latest summary now and then); the client's
      :class:`~taskbfs.search.owner_levels.ExchangedSearch`, an ``OwnedSearch`` that submits
      no level, reads the reports and keeps and reports the levels.

Runner protocol
    A runner has two methods:

    ``level(summary) -> LevelSummary | LevelBlock``
        Run the level ``summary`` opens (its steps and barrier) and return the summary of
        the next level, or a :class:`~taskbfs.search.compiled_levels.LevelBlock` (several
        levels at once; its last level's summary opens the next one).
    ``announce(made) -> (LevelSummary, bool)``
        Record and announce ``made`` (a summary or a block, as ``level`` returned it, or
        the summary the search starts from): the summary that opens the next level, as
        the runner will read it, and whether the search stops there although its frontier
        is not empty.

    The loop keeps no state: a runner keeps its frontier, its summaries and what it must
    hand back at the end (the result is assembled by its caller once the loop returns).
"""

from __future__ import annotations

from typing import Protocol

from taskbfs.search.compiled_levels import LevelBlock
from taskbfs.search.state import LevelSummary

__all__ = ["LevelRunner", "run_levels"]


class LevelRunner(Protocol):
    """What :func:`run_levels` asks of whoever runs the levels (see the module docstring)."""

    def level(self, summary: LevelSummary) -> LevelSummary | LevelBlock:
        """Run the level ``summary`` opens; the next level's summary, or a block of them."""

    def announce(self, made: LevelSummary | LevelBlock) -> tuple[LevelSummary, bool]:
        """Record and announce ``made``; the summary opening the next level, and whether
        to stop."""


def run_levels(runner: LevelRunner, opening: LevelSummary, *,
               announce_opening: bool = True) -> LevelSummary:
    """Run every level from the one ``opening`` opens; the last level's summary.

    Parameters
    ----------
    runner : LevelRunner
        Runs each level and announces what it made.
    opening : LevelSummary
        The summary of the level the search starts from (level 0, or the last level an
        earlier attempt completed when a dispatched search resumes).
    announce_opening : bool
        Announce ``opening`` first (False: it was announced already, by the attempt that
        completed it).
    """
    summary, stop = runner.announce(opening) if announce_opening else (opening, False)
    while summary.frontier_size and not stop:
        summary, stop = runner.announce(runner.level(summary))
    return summary
