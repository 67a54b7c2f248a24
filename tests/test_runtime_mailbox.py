"""Rounds of messages between tasks running at once on several worker processes
(``taskbfs.runtime.mailbox``), in a program that is not a BFS.

What it proves
--------------
* Three tasks, each pinned to its own worker process on 127.0.0.1, trade 25 rounds of
  arrays: each gets, in every round, exactly what each peer sent it in that round (no
  message lost, doubled or filed under another round, although peers run ahead of each
  other by a round).
* A task whose peer never comes ends with ``ExchangeAborted`` when the client aborts its
  channel (at once, not at the timeout), or after the exchange's ``timeout``
  with a message naming the round and the missing messages.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from taskbfs.runtime import ExchangeAborted, Program, abort_channel
from taskbfs.runtime.plugin import workers_of

from programs import EXCHANGE_ROUNDS, process_runtime  # isort: skip  (tests/programs.py)

PEERS = 3


@pytest.fixture(scope="module")
def rt():
    with process_runtime(PEERS) as wrapped:
        yield wrapped


@contextlib.contextmanager
def _program(rt):
    program = Program(rt, "cpu")
    try:
        yield program
    finally:
        program.close()


def _workers(rt) -> list[str]:
    return sorted(workers_of(rt.client))


def _peers(program, peers, rounds, present=None, timeout=None) -> list[str]:
    """One EXCHANGE_ROUNDS task per peer of ``present`` (default all), pinned to it."""
    names = []
    for me, address in enumerate(peers):
        if present is not None and me not in present:
            continue
        names.append(f"seen/{me}")
        program.submit(EXCHANGE_ROUNDS, outs=[names[-1]], worker=address,
                       kwargs={"peers": peers, "me": me, "channel": program.id,
                               "rounds": rounds, "timeout": timeout})
    return names


def test_each_round_brings_what_every_peer_sent_in_it(rt):
    peers = _workers(rt)
    rounds = 25
    with _program(rt) as program:
        seen = program.gather(_peers(program, peers, rounds), timeout=60)
    for me, got in enumerate(seen):
        assert got == [[(100 * r + 10 * p + me, me + 1) for p in range(PEERS)]
                       for r in range(rounds)]


def test_an_aborted_channel_ends_its_waiting_tasks(rt):
    peers = _workers(rt)
    with _program(rt) as program:
        names = _peers(program, peers, 1, present={0, 1})  # peer 2 never comes
        time.sleep(0.5)  # both are waiting
        start = time.perf_counter()
        abort_channel(rt.client, peers, program.id)
        with pytest.raises(ExchangeAborted, match="aborted"):
            program.gather(names, timeout=30)
        assert time.perf_counter() - start < 10


def test_a_peer_that_never_comes_times_out_naming_the_round(rt):
    peers = _workers(rt)
    with _program(rt) as program:
        names = _peers(program, peers, 1, present={0}, timeout=1.5)
        with pytest.raises(ExchangeAborted, match=r"2 of 3 messages of round \('round', 0\)"):
            program.gather(names, timeout=30)
