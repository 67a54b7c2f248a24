"""publish() / Program.next_message(): a task's small message reaches its client as an event."""

from __future__ import annotations

import time

import pytest

from taskbfs.errors import TaskExecutionError
from taskbfs.runtime import Program, Task, publish


def _count_and_tell(values):
    publish({"count": len(values), "total": sum(values)})
    return sorted(values)


def _fail_before_telling(values):
    raise ZeroDivisionError("planted failure")


def _slow_then_tell(values):
    time.sleep(0.3)
    publish({"after": "sleep"})
    return values


def _published(message: dict) -> dict:
    """The message as the task published it (dask adds the sending worker's address)."""
    return {k: v for k, v in message.items() if k != "worker"}


@pytest.fixture(scope="module")
def rt():
    from taskbfs.runtime import Runtime

    with Runtime(dashboard_address=None) as runtime:
        yield runtime


def test_messages_arrive_in_order_and_carry_plain_data(rt):
    program = Program(rt)
    try:
        program.put("xs", [3, 1, 2])
        for _ in range(3):
            program.submit(Task("tell", smp=_count_and_tell), inouts=["xs"])
        messages = [program.next_message(watch=["xs"], timeout=30) for _ in range(3)]
        assert [_published(m) for m in messages] == [{"count": 3, "total": 6}] * 3
        assert all(m["worker"] for m in messages)  # dask names the sending worker
        assert program.get("xs") == [1, 2, 3]
    finally:
        program.close()


def test_a_failing_watched_task_raises_instead_of_waiting(rt):
    program = Program(rt)
    try:
        program.put("xs", [1])
        program.submit(Task("fails", smp=_fail_before_telling), inouts=["xs"])
        with pytest.raises(TaskExecutionError, match="ZeroDivisionError"):
            program.next_message(watch=["xs"], timeout=30)
    finally:
        program.close()


def test_waiting_times_out_when_nothing_is_sent(rt):
    program = Program(rt)
    try:
        program.put("xs", [1])
        with pytest.raises(TimeoutError):
            program.next_message(timeout=0.2)
    finally:
        program.close()


def test_messages_of_two_programs_do_not_mix(rt):
    first, second = Program(rt), Program(rt)
    try:
        first.put("xs", [1, 2])
        second.put("xs", [5])
        first.submit(Task("slow", smp=_slow_then_tell), inouts=["xs"])
        second.submit(Task("tell", smp=_count_and_tell), inouts=["xs"])
        assert _published(second.next_message(watch=["xs"], timeout=30)) == {"count": 1, "total": 5}
        assert _published(first.next_message(watch=["xs"], timeout=30)) == {"after": "sleep"}
    finally:
        first.close()
        second.close()


def test_publish_outside_a_task_is_dropped():
    publish({"nobody": "listens"})  # no worker, no program: nothing to send, no error
