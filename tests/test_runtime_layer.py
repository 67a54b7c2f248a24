"""The runtime as a reusable layer: what importing it pulls in, user placement policies,
listeners, and a runtime that leaves a user's cluster as it found it.

The cluster here is a real ``LocalCluster`` on 127.0.0.1 over TCP (so policies, listeners
and plugins really are pickled to the scheduler): one worker advertising ``CPU=2`` and one
advertising ``GPU=1``. The GPU is fake: a task's ``cuda`` implementation is plain Python
that returns ``("cuda", value)``, so the result shows which implementation ran, and
``Program.records()`` shows on which worker.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, Worker

from taskbfs.errors import DeviceUnavailableError, InvalidParameterError
from taskbfs.runtime import (
    CUDA,
    SMP,
    FunctionPolicy,
    PlacementPlugin,
    PlacementPolicy,
    Policy,
    Program,
    Runtime,
    Task,
    fetch_placements,
    on_threads,
    thread_pool,
    worker_cache,
)
from taskbfs.runtime.plugin import workers_of
from taskbfs.runtime.policy import as_policy

from programs import CPU_ONLY, PROBE  # isort: skip  (tests/programs.py)

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- what importing pulls in
def _python(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


HEAVY = ("taskbfs.search", "taskbfs.kernels", "numba", "pandas", "taskbfs.dashboard", "taskbfs.live_runs")


def test_importing_the_runtime_imports_no_bfs_numba_or_pandas():
    code = ("import sys, taskbfs.runtime\n"
            f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))")
    assert _python(code) == "[]"


def test_the_package_loads_its_rooms_on_first_use():
    code = (
        "import sys, taskbfs as tb\n"
        f"assert not [m for m in sys.modules if m.startswith({HEAVY!r})]\n"
        "assert set(tb.__all__) <= set(dir(tb)) and 'trace' in dir(tb)\n"
        "assert 'Contents' in tb.__doc__\n"
        "from taskbfs.search.core import bfs\n"  # importing the subpackage first ...
        "assert tb.bfs is bfs\n"  # ... leaves tb.bfs the search function
        "assert tb.Graph.__name__ == 'Graph' and tb.trace.__name__ == 'taskbfs.trace'\n"
        "assert tb.config.get('lambda') >= 0 and callable(tb.validate)\n"
        "assert all(getattr(tb, name) is not None for name in tb.__all__)\n"
        "try:\n    tb.no_such_name\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert _python(code) == "module 'taskbfs' has no attribute 'no_such_name'"


def test_the_package_lists_no_implementation_names():
    code = "import taskbfs as tb\nprint(sorted({'annotations', 'importlib', 'sys', 'types'} & set(dir(tb))))"
    assert _python(code) == "[]"


def test_work_on_threads_runs_each_share_once_this_thread_first():
    """``on_threads`` runs share 0 in the calling thread and the others on the process's
    pool of that size (one pool per size, kept); each share once."""
    seen = []
    lock = threading.Lock()

    def work(k):
        with lock:
            seen.append((k, threading.get_ident()))

    idents = on_threads(work, 3)
    assert sorted(k for k, _ in seen) == [0, 1, 2]
    assert idents == [ident for _, ident in sorted(seen)]
    assert idents[0] == threading.get_ident() and threading.get_ident() not in idents[1:]
    assert thread_pool(3) is thread_pool(3) and thread_pool(3) is not thread_pool(2)
    assert thread_pool(3)._max_workers == 3


# ---------------------------------------------------------------- policies, no cluster
class EvenOnGpu:
    """A user policy: the GPU for even task ids (where the task can run there)."""

    kind = "even-on-gpu"

    def decide(self, size=None, impls=(SMP, CUDA), gpu_present=True, task_id=None):
        if CUDA in impls and gpu_present and task_id is not None and task_id % 2 == 0:
            return CUDA
        return SMP


class Answers:
    """A broken user policy: answers what it is told to (a device or not), or raises."""

    def __init__(self, answer):
        self.answer = answer

    def decide(self, size=None, impls=(SMP, CUDA), gpu_present=True, task_id=None):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _big_on_gpu(size, task_id):
    return CUDA if (size or 0) >= 3 else SMP


def test_as_policy_accepts_kinds_policies_objects_and_functions():
    assert as_policy(None) == Policy()
    assert as_policy("cpu") == Policy("cpu")
    fixed = Policy("fixed", gpu_tasks={1})
    assert as_policy(fixed) is fixed
    even = EvenOnGpu()
    assert as_policy(even) is even and isinstance(even, PlacementPolicy)
    wrapped = as_policy(_big_on_gpu)
    assert isinstance(wrapped, FunctionPolicy) and wrapped.fn is _big_on_gpu
    with pytest.raises(InvalidParameterError, match="unknown placement policy 'fastest'"):
        as_policy("fastest")
    with pytest.raises(InvalidParameterError, match="decide"):
        as_policy(42)


def test_function_policy_keeps_the_rules_every_policy_must():
    policy = FunctionPolicy(lambda size, task_id: CUDA)
    assert policy.decide(size=1, impls=(SMP, CUDA), gpu_present=True, task_id=0) == CUDA
    assert policy.decide(size=1, impls=(SMP, CUDA), gpu_present=False, task_id=0) == SMP
    assert policy.decide(size=1, impls=(SMP,), gpu_present=True, task_id=0) == SMP
    cpu = FunctionPolicy(lambda size, task_id: SMP)
    assert cpu.decide(size=1, impls=(CUDA,), gpu_present=True, task_id=0) == CUDA
    with pytest.raises(DeviceUnavailableError):
        cpu.decide(size=1, impls=(CUDA,), gpu_present=False, task_id=0)


# ---------------------------------------------------------------- a real cluster
@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster on 127.0.0.1 (TCP): a CPU=2 worker and a fake GPU=1 worker."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, host="127.0.0.1",
                      protocol="tcp://", resources={"CPU": 2}, dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}, memory_limit=0,
                      silence_logs=logging.WARNING) as cl:
        cl.worker_spec["gpu"] = {"cls": Worker, "options": {
            "nthreads": 1, "resources": {"GPU": 1}, "memory_limit": 0, "name": "gpu"}}
        cl.sync(cl._correct_state)
        cl.wait_for_workers(2)
        yield cl


@pytest.fixture
def client(cluster):
    with Client(cluster, set_as_default=False) as c:
        yield c


def _roles(client) -> dict:
    return {CUDA if "GPU" in w["resources"] else SMP: addr
            for addr, w in workers_of(client).items()}


def _run(rt, policy, cases):
    """One task per ``(task, size, task_id)``; ``[(decision, marker, ran, worker)]``."""
    p = Program(rt, policy)
    p.put("x", 7)
    keys = [p.submit(task, ins=["x"], outs=[f"y{i}"], size=size, task_id=task_id)
            for i, (task, size, task_id) in enumerate(cases)]
    results = p.gather([f"y{i}" for i in range(len(cases))])
    decided = {d["key"]: d for d in fetch_placements(rt.client, p.id)}
    records = {r["key"]: r for r in p.records()}
    out = [(decided[k], marker, records[k]["device"], records[k]["worker"])
           for k, (marker, _) in zip(keys, results, strict=True)]
    return p, out


def _plugin_state(dask_scheduler):
    plugin = dask_scheduler.plugins.get("taskbfs-placement")
    if plugin is None:
        return None
    return {"users": len(plugin.users), "policies": sorted(plugin.policies),
            "listeners": sorted(plugin.listeners)}


def test_a_user_policy_places_tasks_as_it_says(client):
    where = _roles(client)
    with Runtime(client) as rt:
        p, outcomes = _run(rt, EvenOnGpu(), [(PROBE, 0, t) for t in range(6)])
        # the policy was sent once, with the program, and is kept for it
        assert client.run_on_scheduler(_plugin_state)["policies"] == [p.id]
        for t, (decision, marker, ran, worker) in enumerate(outcomes):
            want = CUDA if t % 2 == 0 else SMP
            assert (decision["device"], marker, ran, worker) == (want, want, want, where[want])
            assert decision["policy"] == "even-on-gpu" and decision["lam"] is None
        p.close()
        assert client.run_on_scheduler(_plugin_state)["policies"] == []


def test_a_plain_function_is_a_policy(client):
    where = _roles(client)
    with Runtime(client) as rt:
        cases = [(PROBE, 1, 0), (PROBE, 3, 1), (CPU_ONLY, 9, 2), (PROBE, None, 3)]
        _, outcomes = _run(rt, lambda size, task_id: _big_on_gpu(size, task_id), cases)
        want = [SMP, CUDA, SMP, SMP]  # a CPU-only task stays on the CPU whatever fn says
        assert [(d["device"], m, r, w) for d, m, r, w in outcomes] == [
            (x, x, x, where[x]) for x in want]
        assert {d["policy"] for d, *_ in outcomes} == {"function"}


@pytest.mark.parametrize("answer", ["tpu", None, ZeroDivisionError("oops")])
def test_a_broken_user_policy_runs_tasks_where_they_can_and_says_so(client, answer):
    where = _roles(client)
    with Runtime(client) as rt:
        _, outcomes = _run(rt, Answers(answer), [(PROBE, 5, 0)])
        ((decision, marker, ran, worker),) = outcomes
        assert (decision["device"], marker, ran, worker) == (SMP, SMP, SMP, where[SMP])
        assert ("ZeroDivisionError: oops" if isinstance(answer, Exception) else repr(answer)) \
            in decision["policy_error"]


def test_a_user_policy_must_be_picklable_and_may_need_a_gpu(client):
    class Unpicklable(EvenOnGpu):
        lock = None

        def __init__(self):
            self.lock = threading.Lock()

    class GpuOnly(EvenOnGpu):
        needs_gpu = True

    with Runtime(client) as rt:
        with pytest.raises(InvalidParameterError, match="must be picklable"):
            Program(rt, Unpicklable())
        Program(rt, GpuOnly()).close()  # the cluster has a GPU worker
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}, silence_logs=logging.WARNING) as cl, \
            Client(cl, set_as_default=False) as c, Runtime(c) as rt:
        with pytest.raises(DeviceUnavailableError, match="placement policy 'even-on-gpu'"):
            Program(rt, GpuOnly())


# ---------------------------------------------------------------- listeners
_heard: list = []


def _hear(program, decision):
    _heard.append((program, decision["device"]))


def _listener_setup(dask_scheduler):
    _heard.append("setup")
    return _hear


def _failing_setup(dask_scheduler):
    raise RuntimeError("no page today")


def test_listeners_are_added_by_name_once_and_go_with_the_runtime(client):
    _heard.clear()
    with Runtime(client) as rt:
        assert rt.add_listener("test-ear", _listener_setup)
        assert rt.add_listener("test-ear", _listener_setup)  # once: no second setup
        assert not rt.add_listener("test-broken", _failing_setup)  # logged, not raised
        p, _ = _run(rt, Policy("cpu"), [(PROBE, 1, 0)])
        assert _heard == ["setup", (p.id, SMP)]
        assert client.run_on_scheduler(_plugin_state)["listeners"] == ["test-ear"]
    assert client.run_on_scheduler(_plugin_state) is None


# ---------------------------------------------------------------- close() restores the cluster
def _scheduler_snapshot(dask_scheduler):
    streams = [*dask_scheduler.stream_comms.values(), *dask_scheduler.client_comms.values()]
    return {"plugins": sorted(n for n in dask_scheduler.plugins if n.startswith("taskbfs")),
            "worker_plugins": sorted(n for n in dask_scheduler.worker_plugins if "taskbfs" in n),
            "handlers": sorted(h for h in dask_scheduler.handlers if h.startswith("taskbfs")),
            "intervals": sorted(s.interval for s in streams)}


def _worker_snapshot(dask_worker):
    from taskbfs.runtime.worker import _caches

    return {"plugins": sorted(n for n in dask_worker.plugins if n.startswith("taskbfs")),
            "handlers": sorted(h for h in dask_worker.handlers if h.startswith("taskbfs")),
            "interval": dask_worker.batched_stream.interval, "cache": dask_worker in _caches}


def _snapshot(client):
    return (client.run_on_scheduler(_scheduler_snapshot), client.run(_worker_snapshot),
            client.scheduler_comm.interval)


def _fill_cache(v):
    worker_cache()["kept"] = v
    return v


def test_close_puts_back_everything_on_a_users_cluster(client):
    before = _snapshot(client)
    assert before[0]["plugins"] == [] and before[0]["intervals"]  # a fresh cluster
    rt = Runtime(client)
    p = Program(rt, EvenOnGpu())  # left open: close() closes it
    p.put("x", 1)
    with p.batch():
        p.submit(Task("fill", smp=_fill_cache, cuda=_fill_cache), inouts=["x"], task_id=0)
        p.submit(Task("fill", smp=_fill_cache, cuda=_fill_cache), inouts=["x"], task_id=1)
    assert p.get("x") == 1
    during = _snapshot(client)
    assert during[0]["plugins"] == ["taskbfs-placement"]
    assert during[0]["worker_plugins"] == ["taskbfs-latency", "taskbfs-warm-up"]
    assert set(during[0]["intervals"]) == {0.0} and during[2] == 0.0
    assert all(w["interval"] == 0.0 and w["cache"] for w in during[1].values())
    assert all(w["handlers"] == ["taskbfs_collect_records", "taskbfs_mailbox",
                                 "taskbfs_peek_records", "taskbfs_run_resident"]
               for w in during[1].values())  # trace records: at the end; exchanges between
    # running tasks (runtime.mailbox); live page: while running; resident calls (Program.call)

    rt.close()
    assert _snapshot(client) == before
    assert client.status == "running" and client.submit(sum, [1, 2]).result() == 3
    rt.close()  # idempotent


def test_the_last_runtime_to_close_puts_things_back(client, cluster):
    before = _snapshot(client)
    first, second = Runtime(client), Runtime(cluster.scheduler_address)
    first.close()  # the second still places its tasks
    _, outcomes = _run(second, EvenOnGpu(), [(PROBE, 0, 0), (PROBE, 0, 1)])
    assert [d["device"] for d, *_ in outcomes] == [CUDA, SMP]
    assert client.run_on_scheduler(_plugin_state)["users"] == 1
    second.close()
    assert second.client.status == "closed"  # the client it opened itself
    assert _snapshot(client) == before


def _register_users_plugin(dask_scheduler):
    plugin = PlacementPlugin()
    plugin.setup(dask_scheduler)
    dask_scheduler.add_plugin(plugin, name="taskbfs-placement")


def _remove_plugin(dask_scheduler):
    dask_scheduler.remove_plugin("taskbfs-placement")


def test_a_plugin_the_user_registered_stays(client):
    client.run_on_scheduler(_register_users_plugin)
    try:
        with Runtime(client) as rt:
            _run(rt, Policy("cpu"), [(PROBE, 0, 0)])
        state = client.run_on_scheduler(_scheduler_snapshot)
        assert state["plugins"] == ["taskbfs-placement"]  # not the runtime's to remove
        assert state["worker_plugins"] == []  # but the worker plugin it added goes
    finally:
        client.run_on_scheduler(_remove_plugin)
