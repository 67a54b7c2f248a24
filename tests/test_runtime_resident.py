"""Resident calls (taskbfs/runtime/resident.py): ``Program.call`` runs a task on the
worker that holds its inputs with no scheduler round trip, traced and placed as a
dispatched task is, and falls back to the scheduler when no worker holds them all.

A task of the runtime layer (no BFS): it returns where and how it ran.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.comm import CommClosedError
from programs import runtime_without_warm_up

import taskbfs as tb
from taskbfs.errors import TaskExecutionError
from taskbfs.runtime import CUDA, SMP, Program, Task, fetch_placements, include_each
from taskbfs.runtime.plugin import fetch_trace, workers_of
from taskbfs.runtime.resident import NotResident


def _where(a, b, scale=1):
    """The sum of two arrays, and where it ran: (value, worker address, thread)."""
    from distributed import get_worker

    return float((a + b).sum() * scale), get_worker().address, threading.get_ident()


def _fail(a):
    raise ValueError("bad tile")


def _sleep(a, seconds):
    time.sleep(seconds)
    return a


def _die(a):
    os._exit(1)


def _with_pieces(a):
    """Two included pieces, then ``a``."""
    include_each("piece", lambda x: x + 1, [({"part": 0}, (a,)), ({"part": 1}, (a,))])
    return a


def _double(a):
    return 2 * a


WHERE = Task("where", smp=_where)
FAIL = Task("fail", smp=_fail)
SLEEP = Task("sleep", smp=_sleep)
DIE = Task("die", smp=_die)
WITH_PIECES = Task("with_pieces", smp=_with_pieces)
DOUBLE = Task("double", smp=_double)


def test_a_call_runs_resident_traced_and_placed(runtime):
    """On the embedded cluster: the value comes back; the scheduler never saw the task
    (no decision in its log), yet the program's trace and placements have it as they
    have a dispatched task (same key form, device, worker, thread, tags)."""
    p = Program(runtime, policy="cpu")
    p.put("a", np.arange(4.0))
    p.put("b", np.ones(4))
    value, worker, thread = p.call(WHERE, ins=["a", "b"], kwargs={"scale": 2}, tags={"tile": 7})
    assert value == 2 * (6.0 + 4.0)
    assert worker in workers_of(runtime.client)
    assert not fetch_placements(runtime.client, p.id)  # nothing went through the scheduler
    records, placements = p.finished(timeout=30)
    (record,) = [r for r in records if r["name"] == "where"]
    assert record["worker"] == worker and record["thread"] == thread
    assert record["device"] == SMP and record["tile"] == 7
    assert record["key"].startswith(f"where-{p.id}-")
    assert [(d["key"], d["device"], d["tile"]) for d in placements] == [(record["key"], SMP, 7)]
    p.close()


def test_a_calls_error_names_the_task(runtime):
    p = Program(runtime, policy="cpu")
    p.put("a", 1)
    with pytest.raises(TaskExecutionError, match="task 'fail'.*ValueError: bad tile"):
        p.call(FAIL, ins=["a"])
    p.close()


def test_a_call_within_its_timeout(runtime):
    p = Program(runtime, policy="cpu")
    p.put("a", 1)
    assert p.call(SLEEP, ins=["a"], kwargs={"seconds": 0.01}, timeout=30) == 1
    with pytest.raises(TimeoutError):
        p.call(SLEEP, ins=["a"], kwargs={"seconds": 1.0}, timeout=0.2)
    time.sleep(1.0)  # the call goes on there (as a started task would): let it end
    records, _ = p.finished(timeout=30)  # the first came with its value; the second's answer,
    assert [r["name"] for r in records] == ["sleep"]  # with its record, went to no one
    assert fetch_trace(runtime.client, p.id, timeout=30) == ([], [])  # and none stays there
    p.close()


_MEET = threading.Barrier(2)


def _meet(a):
    """Return once another call waits here too (the embedded workers share this process)."""
    _MEET.wait(timeout=30)
    return a


MEET = Task("meet", smp=_meet)


def test_calls_from_several_threads_run_side_by_side(runtime):
    """Resident calls run on their worker's threads, side by side: two calls that each
    wait for the other both return (one after the other, the first would time out)."""
    if max(runtime.client.nthreads().values()) < 2:
        pytest.skip("the embedded worker has one thread: nothing can overlap")
    p = Program(runtime, policy="cpu")
    p.put("a", 1)
    results = []
    callers = [threading.Thread(target=lambda: results.append(p.call(MEET, ins=["a"], timeout=60)))
               for _ in range(2)]
    for c in callers:
        c.start()
    for c in callers:
        c.join()
    assert results == [1, 1]
    p.close()


@pytest.fixture(scope="module")
def two_workers():
    """Two worker processes (one thread each, ``CPU=1``) on 127.0.0.1."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster:
        rt = runtime_without_warm_up(cluster)
        try:
            yield rt
        finally:
            rt.close()


def _scatter_to(rt, p, name, value, address):
    p.put_future(name, rt.client.scatter(value, workers=[address], hash=False))


def test_a_call_runs_where_its_inputs_are(two_workers):
    rt = two_workers
    first, second = sorted(workers_of(rt.client))
    p = Program(rt, policy="cpu")
    for address in (first, second):
        _scatter_to(rt, p, "a", np.ones(3), address)
        _scatter_to(rt, p, "b", np.ones(3), address)
        value, worker, _ = p.call(WHERE, ins=["a", "b"])
        assert (value, worker) == (6.0, address)
    assert not fetch_placements(rt.client, p.id)  # nothing went through the scheduler
    p.close()


def test_inputs_apart_go_through_the_scheduler(two_workers):
    """No worker holds both inputs: the task is submitted (the scheduler's placement
    log has it), and its value is the same."""
    rt = two_workers
    first, second = sorted(workers_of(rt.client))
    p = Program(rt, policy="cpu")
    _scatter_to(rt, p, "a", np.ones(3), first)
    _scatter_to(rt, p, "b", np.ones(3), second)
    value, _, _ = p.call(WHERE, ins=["a", "b"])
    assert value == 6.0
    assert [d["device"] for d in fetch_placements(rt.client, p.id)] == [SMP]
    p.close()


def test_a_worker_without_the_inputs_says_so(two_workers):
    rt = two_workers
    first, second = sorted(workers_of(rt.client))
    a = rt.client.scatter(np.ones(3), workers=[second], hash=False)
    with pytest.raises(NotResident, match=first):
        rt.residents.call(first, "where-x-0", SMP, WHERE, {"program": "x", "tags": {}}, [a, a],
                          {}, {"key": "where-x-0"}, timeout=30)


def test_a_lost_worker_fails_the_call_and_the_next_one_runs(two_workers):
    rt = two_workers
    p = Program(rt, policy="cpu")
    first = sorted(workers_of(rt.client))[0]
    _scatter_to(rt, p, "a", 1, first)
    with pytest.raises(CommClosedError, match=first):
        p.call(DIE, ins=["a"], timeout=60)
    deadline = time.monotonic() + 60
    while first in rt.client.nthreads():  # the scheduler may not have noticed the loss yet
        assert time.monotonic() < deadline, f"{first} still listed"
        time.sleep(0.05)
    rt.client.wait_for_workers(2, timeout=60)  # the nanny starts another
    survivor = sorted(rt.client.nthreads())
    _scatter_to(rt, p, "a", np.ones(2), survivor[0])
    _scatter_to(rt, p, "b", np.ones(2), survivor[0])
    assert p.call(WHERE, ins=["a", "b"], timeout=60)[:2] == (4.0, survivor[0])
    p.close()


def test_close_takes_the_handler_off_a_cluster_not_its_own():
    """The runtime's worker handler goes when the runtime leaves a user's cluster."""
    from taskbfs.runtime.resident import RESIDENT_OP

    def has_handler(dask_worker):
        return RESIDENT_OP in dask_worker.handlers

    with LocalCluster(n_workers=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        rt = runtime_without_warm_up(client)
        assert all(client.run(has_handler).values())
        rt.close()
        assert not any(client.run(has_handler).values())


def test_a_one_task_search_runs_resident(runtime, monkeypatch):
    """The BFS's one-task search (its value goes to the caller) runs through the driver,
    and its result equals the dispatched search's."""
    from taskbfs.runtime.resident import Residents

    calls = []
    call = Residents.call
    monkeypatch.setattr(Residents, "call", lambda self, *a, **k: calls.append(a[3].name)
                        or call(self, *a, **k))
    g = tb.kronecker(scale=9, seed=3)
    r = tb.bfs(g, 1, runtime=runtime)
    assert calls == ["bfs_search"]
    d = tb.bfs(g, 1, runtime=runtime, dispatch="tasks")
    assert [p["key"].split("-")[0] for p in r.placements] == ["bfs_search"]
    assert r.placements[0]["device"] in (SMP, CUDA)
    np.testing.assert_array_equal(r.distances, d.distances)
    tb.validate(g, 1, r.parents)


def test_a_user_policys_error_is_handled_as_the_plugin_handles_it(runtime):
    """The device of a resident call is the plugin's one decision (``decide_device``): a
    user policy that raises is logged, the task runs where it can (the CPU), and its
    placement says why."""

    class Broken:
        def decide(self, size=None, impls=(SMP, CUDA), gpu_present=True, task_id=None):
            raise RuntimeError("no idea")

    p = Program(runtime, policy=Broken())
    p.put("a", np.ones(2))
    p.put("b", np.ones(2))
    assert p.call(WHERE, ins=["a", "b"])[0] == 4.0
    _, placements = p.finished(timeout=30)
    (decision,) = placements
    assert decision["device"] == SMP and "RuntimeError: no idea" in decision["policy_error"]
    p.close()


def test_a_calls_records_come_back_with_its_value(two_workers):
    """The answer of a resident call carries its worker's records of the program (the
    call's own and its included pieces'), taken off that worker: a program whose tasks
    all ran so has its whole trace at once, and the workers keep none of it."""
    rt = two_workers
    first = sorted(workers_of(rt.client))[0]
    p = Program(rt, policy="cpu")
    _scatter_to(rt, p, "a", 1, first)
    assert p.call(WITH_PIECES, ins=["a"]) == 1
    pending = p.finished_later()
    assert pending.done()
    records, placements = pending.result()
    assert sorted(r["name"] for r in records) == ["piece", "piece", "with_pieces"]
    assert {r["worker"] for r in records} == {first}
    (call,) = [r for r in records if r["name"] == "with_pieces"]
    assert [d["key"] for d in placements] == [call["key"]]
    assert {r["included"] for r in records if r["name"] == "piece"} == {call["key"]}
    assert fetch_trace(rt.client, p.id, timeout=30) == ([], [])  # nothing left there
    p.close()


def test_a_program_with_dispatched_tasks_too_gets_every_record(two_workers):
    rt = two_workers
    first = sorted(workers_of(rt.client))[0]
    p = Program(rt, policy="cpu")
    _scatter_to(rt, p, "a", 1, first)
    assert p.call(WITH_PIECES, ins=["a"]) == 1
    p.submit(DOUBLE, ins=["a"], outs=["b"])
    assert p.get("b") == 2
    records, placements = p.finished(timeout=30)
    assert sorted(r["name"] for r in records) == ["double", "piece", "piece", "with_pieces"]
    assert sorted(d["key"].split("-")[0] for d in placements) == ["double", "with_pieces"]
    p.close()
