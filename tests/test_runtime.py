"""The runtime's OmpSs semantics, checked against plain numpy and independent expectations.

Every dependency test runs twice: on the embedded in-process default (``Runtime``) and on
a two-process ``LocalCluster`` wrapped as ``Runtime(client)`` (values cross processes,
tasks and functions are pickled). Placement is in ``test_runtime_placement.py``; how
a runtime connects and closes is in ``test_runtime_cluster.py``.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import math
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import Client, LocalCluster

import taskbfs.runtime
from taskbfs.errors import (
    DeviceUnavailableError,
    InvalidParameterError,
    TaskBFSError,
    TaskExecutionError,
)
from taskbfs.runtime import CUDA, SMP, Policy, Program, Runtime, Task
from taskbfs.runtime.plugin import workers_of

from programs import (  # isort: skip  (tests/programs.py)
    cholesky,
    runtime_without_warm_up,
    summed_area_table,
)

SLOW = 0.6  # seconds a "slow" task sleeps; long against a task's ~ms overhead


# ---------------------------------------------------------------- task bodies (module level:
# picklable by reference for the process cluster)
def _add(a, b):
    return a + b


def _plus_one(v):
    return v + 1


def _times_ten(v):
    return v * 10


def _const(value):
    return value


def _slow_copy(v):
    time.sleep(SLOW)
    return np.array(v, copy=True)


def _copy(v):
    return np.array(v, copy=True)


def _slow_plus_one(v):
    time.sleep(SLOW)
    return v + 1


def _mutate_plus_one(v):
    v += 1  # in place: only legal with in_place=True
    return v


def _split(v):
    return v + 1, v * 2


def _ins_then_inouts(x, y, acc):
    return x - y, acc + x + y  # outs first, then inouts


def _divide_by_zero(v):
    return int(np.sum(v)) // 0


ADD = Task("add", smp=_add)
PLUS_ONE = Task("plus_one", smp=_plus_one)
TIMES_TEN = Task("times_ten", smp=_times_ten)
CONST = Task("const", smp=_const)
COPY = Task("copy", smp=_copy)
SLOW_COPY = Task("slow_copy", smp=_slow_copy)
SLOW_PLUS_ONE = Task("slow_plus_one", smp=_slow_plus_one)
MUTATE = Task("mutate_plus_one", smp=_mutate_plus_one)
SPLIT = Task("split", smp=_split)
INS_INOUTS = Task("ins_inouts", smp=_ins_then_inouts)
BOOM = Task("boom", smp=_divide_by_zero)


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def embedded():
    """The embedded default: one in-process CPU worker with two threads, no GPU worker."""
    with Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        yield rt


@pytest.fixture(scope="module")
def processes():
    """Two worker processes, one thread each, no declared resources (a plain Dask cluster);
    no search runs here, so its runtime skips the BFS warm-up."""
    with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0",
                      silence_logs=logging.WARNING) as cluster, Client(cluster) as client:
        with runtime_without_warm_up(client) as rt:
            yield rt


@pytest.fixture(params=["embedded", "processes"])
def rt(request):
    return request.getfixturevalue(request.param)


def _records_by_name(program):
    out = {}
    for r in program.records():
        out.setdefault(r["name"], []).append(r)
    return out


# ---------------------------------------------------------------- Task and Policy (no cluster)
def test_runtime_knows_nothing_of_bfs():
    # the runtime room must not import the BFS or kernel rooms (DESIGN.md): read its imports
    room = Path(taskbfs.runtime.__file__).parent
    for path in room.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith(("taskbfs.search", "taskbfs.kernels")), f"{path.name}: {name}"


def test_task_needs_an_implementation():
    with pytest.raises(InvalidParameterError, match="'empty'.*at least one implementation"):
        Task("empty")


def test_task_impls_and_implements():
    t = Task("t", smp=_plus_one)
    assert t.impls == (SMP,)
    both = t.implements(CUDA)(_times_ten)
    assert both.impls == (SMP, CUDA)
    assert both.implementation(CUDA) is _times_ten and t.cuda is None  # t unchanged
    assert Task("g", cuda=_plus_one).impls == (CUDA,)
    with pytest.raises(InvalidParameterError, match="unknown device 'opencl'"):
        t.implementation("opencl")


BOTH = (SMP, CUDA)


@pytest.mark.parametrize(
    "lam, size, expected",
    [(100, 0, SMP), (100, None, SMP), (100, 100, SMP), (100, 101, CUDA), (100, 10**9, CUDA),
     (0, 0, SMP), (0, None, SMP), (0, 1, CUDA), (2.5, 2, SMP), (2.5, 3, CUDA)],
)
def test_hybrid_policy_threshold(lam, size, expected):
    # the paper's rule: frontier > λ runs on the GPU
    assert Policy("hybrid", lam=lam).decide(size=size, impls=BOTH, gpu_present=True) == expected


def test_policies_decide():
    fixed = Policy("fixed", gpu_tasks={1, 3})
    assert [fixed.decide(size=10**9, impls=BOTH, task_id=t) for t in range(5)] == [
        SMP, CUDA, SMP, CUDA, SMP]
    assert fixed.decide(size=0, impls=BOTH, task_id=None) == SMP
    assert Policy("cpu").decide(size=10**9, impls=BOTH) == SMP
    assert Policy("gpu").decide(size=0, impls=BOTH) == CUDA
    # the implementations a task has override the policy
    assert Policy("gpu").decide(size=0, impls=(SMP,)) == SMP
    assert Policy("cpu").decide(size=0, impls=(CUDA,)) == CUDA
    # without a GPU worker, every policy that may fall back does
    for policy in (Policy("hybrid", lam=0), Policy("fixed", gpu_tasks={0}), Policy("cpu")):
        assert policy.decide(size=10**9, impls=BOTH, gpu_present=False, task_id=0) == SMP


def test_policy_without_gpu_raises():
    with pytest.raises(DeviceUnavailableError, match="GPU"):
        Policy("gpu").decide(size=1, impls=BOTH, gpu_present=False)
    with pytest.raises(DeviceUnavailableError, match="CUDA-only"):
        Policy("hybrid").decide(size=1, impls=(CUDA,), gpu_present=False)
    assert Policy("gpu").needs_gpu and not Policy("hybrid").needs_gpu


@pytest.mark.parametrize("lam", [-1, -0.5, math.nan, "many"])
def test_policy_rejects_bad_lambda(lam):
    with pytest.raises(InvalidParameterError, match="lam"):
        Policy("hybrid", lam=lam)


def test_policy_without_lambda_takes_the_setting():
    from taskbfs import config

    assert Policy("hybrid", lam=None).lam == float(config.get("lambda"))


def test_policy_rejects_unknown_kind():
    with pytest.raises(InvalidParameterError, match="unknown placement policy 'fastest'.*hybrid"):
        Policy("fastest")


def test_policy_normalises():
    p = Policy("fixed", lam=3, gpu_tasks=[2, np.int64(5)])
    assert p.lam == 3.0 and p.gpu_tasks == frozenset({2, 5})
    assert Policy("hybrid", lam=0).lam == 0.0


# ---------------------------------------------------------------- dependencies
@pytest.mark.parametrize("batch", [False, True])
def test_read_after_write(rt, batch):
    p = Program(rt)
    p.put("a", np.arange(5))
    p.put("b", np.full(5, 10))
    with p.batch() if batch else contextlib.nullcontext():
        p.submit(ADD, ins=["a", "b"], outs=["c"])
        p.submit(TIMES_TEN, ins=["c"], outs=["d"])
        p.submit(ADD, ins=["c", "d"], outs=["e"])
    c = np.arange(5) + 10
    got = p.gather(["c", "d", "e"])
    np.testing.assert_array_equal(got[0], c)
    np.testing.assert_array_equal(got[1], c * 10)
    np.testing.assert_array_equal(got[2], c * 11)
    np.testing.assert_array_equal(p.get("a"), np.arange(5))  # inputs untouched


@pytest.mark.parametrize("batch", [False, True])
def test_write_after_read_is_renamed(rt, batch):
    p = Program(rt)
    p.put("x", np.arange(4))
    with p.batch() if batch else contextlib.nullcontext():
        p.submit(SLOW_COPY, ins=["x"], outs=["seen"])  # slow reader of version 0
        p.submit(CONST, outs=["x"], kwargs={"value": np.full(4, -7)})  # later writer
        p.submit(TIMES_TEN, ins=["x"], outs=["after"])
    seen, x, after = p.gather(["seen", "x", "after"])
    np.testing.assert_array_equal(seen, np.arange(4))
    np.testing.assert_array_equal(x, np.full(4, -7))
    np.testing.assert_array_equal(after, np.full(4, -70))


def test_write_after_read_does_not_wait(embedded):
    # renaming means the writer need not wait for the slow reader (two threads: both run)
    p = Program(embedded)
    p.put("x", 1)
    with p.batch():
        p.submit(SLOW_COPY, ins=["x"], outs=["seen"])
        p.submit(PLUS_ONE, inouts=["x"])
    assert p.gather(["seen", "x"]) == [1, 2]
    rec = _records_by_name(p)
    assert rec["plus_one"][0]["stop"] < rec["slow_copy"][0]["stop"]


@pytest.mark.parametrize("batch", [False, True])
def test_write_after_write_last_wins(rt, batch):
    p = Program(rt)
    with p.batch() if batch else contextlib.nullcontext():
        p.submit(CONST, outs=["x"], kwargs={"value": "first"})
        p.submit(CONST, outs=["x"], kwargs={"value": "second"})
    assert p.get("x") == "second"
    # non-batch: keep each version and check they are distinct and both intact
    p.submit(CONST, outs=["y"], kwargs={"value": 1})
    v1 = p.future("y")
    p.submit(CONST, outs=["y"], kwargs={"value": 2})
    v2 = p.future("y")
    assert v1.key != v2.key
    assert (v1.result(), v2.result(), p.get("y")) == (1, 2, 2)


@pytest.mark.parametrize("batch", [False, True])
def test_inout_chain_and_snapshots(rt, batch):
    p = Program(rt)
    p.put("acc", np.zeros(3, dtype=np.int64))
    with p.batch() if batch else contextlib.nullcontext():
        for k in range(6):
            p.submit(PLUS_ONE, inouts=["acc"])
            p.submit(TIMES_TEN, ins=["acc"], outs=[f"snap{k}"])
    snaps = p.gather([f"snap{k}" for k in range(6)])
    for k, s in enumerate(snaps):
        np.testing.assert_array_equal(s, np.full(3, 10 * (k + 1)))
    np.testing.assert_array_equal(p.get("acc"), np.full(3, 6))


def test_multiple_results_and_argument_order(rt):
    p = Program(rt)
    p.put("v", 5)
    p.submit(SPLIT, ins=["v"], outs=["inc", "dbl"])
    assert p.gather(["inc", "dbl"]) == [6, 10]
    p.put("x", 10)
    p.put("y", 3)
    p.put("acc", 100)
    with p.batch():  # implementation gets ins then inouts, returns outs then inouts
        p.submit(INS_INOUTS, ins=["x", "y"], outs=["diff"], inouts=["acc"])
    assert p.gather(["diff", "acc", "x", "y"]) == [7, 113, 10, 3]


@pytest.mark.parametrize("batch", [False, True])
def test_the_producer_of_several_outputs_is_their_task(rt, batch):
    """``producer``: the task whose value a several-output task's outputs are split from
    (its value holds them all), the same for each of them and ended when its outputs can
    be read; for a one-output task, or data put, the version itself."""
    p = Program(rt)
    p.put("v", 5)
    with p.batch() if batch else contextlib.nullcontext():
        p.submit(SPLIT, ins=["v"], outs=["inc", "dbl"])
        p.submit(PLUS_ONE, ins=["inc"], outs=["one"])
    made = p.producer("inc")
    assert made.key == p.producer("dbl").key != p.future("inc").key
    assert made.result() == (6, 10) and p.gather(["inc", "dbl"]) == [6, 10]
    assert p.producer("one").key == p.future("one").key and p.producer("v").key == p.future("v").key
    p.submit(PLUS_ONE, ins=["v"], outs=["inc"])  # a new version from a one-output task
    assert p.producer("inc").key == p.future("inc").key and p.get("inc") == 6


@pytest.mark.parametrize("batch", [False, True])
def test_in_place_inout_waits_for_readers(rt, batch):
    old = np.arange(6, dtype=np.int64)
    p = Program(rt)
    p.put("x", old.copy())
    with p.batch() if batch else contextlib.nullcontext():
        p.submit(SLOW_COPY, ins=["x"], outs=["seen1"])
        p.submit(COPY, ins=["x"], outs=["seen2"])  # frees a thread at once for the writer
        p.submit(MUTATE, inouts=["x"], in_place=True)
        p.submit(PLUS_ONE, ins=["x"], outs=["later"])
    seen1, seen2, x, later = p.gather(["seen1", "seen2", "x", "later"])
    np.testing.assert_array_equal(seen1, old)  # the readers saw the value before the write
    np.testing.assert_array_equal(seen2, old)
    np.testing.assert_array_equal(x, old + 1)
    np.testing.assert_array_equal(later, old + 2)
    rec = _records_by_name(p)
    writer = rec["mutate_plus_one"][0]
    assert writer["start"] >= rec["slow_copy"][0]["stop"]
    assert writer["start"] >= rec["copy"][0]["stop"]


def test_in_place_waits_only_for_readers_of_current_version(embedded):
    # readers of an older version are no hazard for an in-place write of a newer one
    p = Program(embedded)
    p.put("x", np.zeros(2))
    p.submit(SLOW_COPY, ins=["x"], outs=["old_reader"])
    p.submit(PLUS_ONE, inouts=["x"])  # renamed: new version, readers reset
    p.submit(MUTATE, inouts=["x"], in_place=True)
    np.testing.assert_array_equal(p.get("x"), np.full(2, 2.0))
    np.testing.assert_array_equal(p.get("old_reader"), np.zeros(2))
    rec = _records_by_name(p)
    assert rec["mutate_plus_one"][0]["stop"] < rec["slow_copy"][0]["stop"]


def test_taskwait_all_and_names(rt, request):
    p = Program(rt)
    p.put("x", 1)
    p.submit(SLOW_PLUS_ONE, ins=["x"], outs=["slow"])
    p.submit(PLUS_ONE, ins=["x"], outs=["fast"])
    p.taskwait(["fast"])
    assert p.future("fast").done()
    if rt is request.getfixturevalue("embedded"):
        # two threads on one worker: both run at once, so "slow" is still running
        # (on the process cluster both may queue on the one-thread worker holding x)
        assert not p.future("slow").done()  # taskwait(names) waits only for those
    p.taskwait()
    assert p.future("slow").done() and p.get("slow") == 2
    with pytest.raises(InvalidParameterError, match="'nope'"):
        p.taskwait(["nope"])


def test_taskwait_inside_batch_sends_pending(embedded):
    p = Program(embedded)
    p.put("x", 1)
    with p.batch():
        p.submit(PLUS_ONE, inouts=["x"])
        p.taskwait(["x"])  # flushes what is pending so far
        assert p.get("x") == 2
        p.submit(PLUS_ONE, inouts=["x"])
    assert p.get("x") == 3


# ---------------------------------------------------------------- errors
def test_reading_a_name_without_version(embedded):
    p = Program(embedded)
    with pytest.raises(InvalidParameterError, match="'plus_one' reads 'ghost'.*no version"):
        p.submit(PLUS_ONE, ins=["ghost"], outs=["y"])
    with pytest.raises(InvalidParameterError, match="'ghost'"):
        p.submit(PLUS_ONE, inouts=["ghost"])
    with pytest.raises(InvalidParameterError, match="no datum named 'ghost'"):
        p.get("ghost")
    assert not p.has("ghost") and not p.has("y")


@pytest.mark.parametrize(
    "dirs",
    [{"ins": ["a", "a"]}, {"ins": ["a"], "outs": ["a"]}, {"ins": ["a"], "inouts": ["a"]},
     {"outs": ["a", "a"]}, {"outs": ["a"], "inouts": ["a"]}],
)
def test_name_twice_in_directions(embedded, dirs):
    p = Program(embedded)
    p.put("a", 1)
    with pytest.raises(InvalidParameterError, match="names 'a' twice"):
        p.submit(ADD, **dirs)


def test_data_names_must_be_str(embedded):
    p = Program(embedded)
    with pytest.raises(InvalidParameterError, match="must be str"):
        p.submit(CONST, outs=[("A", 0, 0)], kwargs={"value": 0})


def test_failing_task_raises_task_execution_error(rt):
    p = Program(rt)
    p.put("x", 3)
    p.submit(BOOM, ins=["x"], outs=["y"])
    p.submit(PLUS_ONE, ins=["y"], outs=["z"])  # depends on the failed task
    p.submit(PLUS_ONE, ins=["x"], outs=["ok"])
    for get in (lambda: p.get("y"), lambda: p.gather(["ok", "z"]), lambda: p.taskwait(["z"]),
                p.taskwait):
        with pytest.raises(TaskExecutionError, match=r"task 'boom'.*ZeroDivisionError") as info:
            get()
        assert isinstance(info.value, TaskBFSError)
    assert p.get("ok") == 4  # independent work is unaffected


def test_failing_task_in_batch(embedded):
    p = Program(embedded)
    p.put("x", np.ones(2))
    with p.batch():
        p.submit(BOOM, inouts=["x"])
    with pytest.raises(TaskExecutionError, match=r"'boom'.*ZeroDivisionError"):
        p.taskwait()


# ---------------------------------------------------------------- example programs
def _spd(n, seed):
    m = np.random.default_rng(seed).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("n, tile", [(12, 3), (8, 8), (10, 2)])
def test_cholesky_example(rt, batch, n, tile):
    a = _spd(n, seed=n)
    L = cholesky(Program(rt), a, tile=tile, batch=batch)
    np.testing.assert_allclose(L, np.linalg.cholesky(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(L @ L.T, a, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("shape, tile", [((8, 12), 4), ((6, 6), 1), ((5, 5), 5)])
def test_wavefront_example(rt, batch, shape, tile):
    a = np.random.default_rng(1).integers(-5, 10, size=shape)
    got = summed_area_table(Program(rt), a, tile=tile, batch=batch)
    np.testing.assert_array_equal(got, a.cumsum(axis=0).cumsum(axis=1))


def test_wavefront_runs_anti_diagonals_in_order(embedded):
    p = Program(embedded)
    summed_area_table(p, np.ones((12, 12)), tile=3)
    records = p.records()
    start = {(r["i"], r["j"]): r["start"] for r in records}
    stop = {(r["i"], r["j"]): r["stop"] for r in records}
    assert len(start) == 16
    for (i, j), t in start.items():  # a tile starts after its north and west neighbours
        assert i == 0 or t >= stop[i - 1, j]
        assert j == 0 or t >= stop[i, j - 1]


def test_examples_reject_bad_tiles(embedded):
    with pytest.raises(InvalidParameterError, match="tile=5"):
        cholesky(Program(embedded), np.eye(8), tile=5)
    with pytest.raises(InvalidParameterError, match="square"):
        cholesky(Program(embedded), np.ones((4, 6)), tile=2)


# ---------------------------------------------------------------- included tasks (OmpSs final)
def _double(v):
    return 2 * v


def _double_twice_inside(v):
    """A task that does two pieces of work itself, as included tasks."""
    once = taskbfs.runtime.include("double", _double, {"piece": 1}, v)
    return taskbfs.runtime.include("double", _double, {"piece": 2}, once)


DOUBLE_TWICE = Task("double_twice", smp=_double_twice_inside)


def test_included_work_runs_in_the_task_and_is_traced(rt):
    p = Program(rt)
    p.put("x", 3)
    key = p.submit(DOUBLE_TWICE, ins=["x"], outs=["y"], tags={"outer": True})
    assert p.get("y") == 12
    records = _records_by_name(p)
    (outer,) = records["double_twice"]
    inner = sorted(records["double"], key=lambda r: r["piece"])
    assert [r["piece"] for r in inner] == [1, 2]
    for r in inner:  # in the outer task's thread, within its time, marked with its key
        assert r["included"] == key == outer["key"] and "included" not in outer
        assert (r["worker"], r["thread"]) == (outer["worker"], outer["thread"])
        assert outer["start"] <= r["start"] <= r["stop"] <= outer["stop"]
        assert r["device"] == SMP and r["key"] != key
    assert inner[0]["stop"] <= inner[1]["start"]
    p.close()


def _wait_then_double(barrier, v):
    barrier.wait(timeout=10)  # returns only once every piece has started
    return 2 * v


def _double_each_on_threads(values):
    """A task that does its pieces side by side on a pool, as included tasks."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    barrier = threading.Barrier(len(values))
    with ThreadPoolExecutor(len(values)) as pool:
        calls = [({"piece": i}, (barrier, v)) for i, v in enumerate(values)]
        return taskbfs.runtime.include_each("double", _wait_then_double, calls, executor=pool)


DOUBLE_EACH = Task("double_each", smp=_double_each_on_threads)


def test_included_pieces_run_side_by_side_and_are_traced_on_their_threads(rt):
    p = Program(rt)
    p.put("x", [1, 2, 3])
    key = p.submit(DOUBLE_EACH, ins=["x"], outs=["y"])
    assert p.get("y") == [2, 4, 6]  # in the order of the calls
    records = _records_by_name(p)
    (outer,) = records["double_each"]
    inner = sorted(records["double"], key=lambda r: r["piece"])
    assert [r["piece"] for r in inner] == [0, 1, 2]
    assert len({r["thread"] for r in inner} | {outer["thread"]}) == 4  # each on its own
    for r in inner:
        assert r["included"] == key and r["worker"] == outer["worker"]
        assert outer["start"] <= r["start"] <= r["stop"] <= outer["stop"]
    assert max(r["start"] for r in inner) <= min(r["stop"] for r in inner)  # overlapping
    p.close()


def test_include_outside_a_task_is_a_plain_call():
    assert taskbfs.runtime.include("double", _double, {}, 5) == 10
    calls = [({}, (1,)), ({}, (2,), {})]
    assert taskbfs.runtime.include_each("double", _double, calls) == [2, 4]


def test_holds_together(embedded, processes):
    """In-process workers share memory; across processes one worker must hold every datum."""
    assert embedded.holds_together([embedded.client.scatter(1), embedded.client.scatter(2)])
    client = processes.client
    a, b = sorted(workers_of(client))
    def put(size, where):
        return client.scatter(np.arange(size), workers=[where], hash=False)

    apart, together = [put(3, a), put(4, b)], [put(3, a), put(4, a)]
    assert not processes.holds_together(apart)
    assert processes.holds_together(together)
