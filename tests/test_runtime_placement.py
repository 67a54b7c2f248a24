"""Placement: the scheduler plugin's decisions, and where each task then really ran.

A heterogeneous in-process cluster is built here by hand (not with the runtime's own
embedded-cluster code): one worker advertising ``CPU=2`` and one advertising ``GPU=1``.
The GPU is fake: a task's ``cuda`` implementation is plain Python that returns
``("cuda", value)``, so the result itself shows which implementation ran, and
``Program.records()`` shows on which worker.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster, Scheduler, SpecCluster, Worker

from taskbfs.errors import DeviceUnavailableError, InvalidParameterError
from taskbfs.runtime import CUDA, SMP, Policy, Program, Runtime, Task, fetch_placements, publish
from taskbfs.runtime.plugin import workers_of

from programs import CPU_ONLY, GPU_ONLY, HOST_CHOLESKY, PROBE, cholesky  # isort: skip  (tests/programs.py)


@pytest.fixture(scope="module")
def hetero():
    """One CPU worker (CPU=2, two threads) and one fake GPU worker (GPU=1, one thread)."""
    workers = {
        "cpu": {"cls": Worker, "options": {"nthreads": 2, "resources": {"CPU": 2}}},
        "gpu": {"cls": Worker, "options": {"nthreads": 1, "resources": {"GPU": 1}}},
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0"}}
    with SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.WARNING) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        with Runtime(client) as rt:
            yield rt


@pytest.fixture(scope="module")
def addresses(hetero):
    """Worker address by role, read from the scheduler (not from the runtime)."""
    info = workers_of(hetero.client)
    by_role = {}
    for addr, w in info.items():
        by_role[CUDA if "GPU" in w["resources"] else SMP] = addr
    assert set(by_role) == {SMP, CUDA}
    return by_role


@pytest.fixture(scope="module")
def plain():
    """A plain Dask cluster: its worker declares no resources at all."""
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0",
                      silence_logs=logging.WARNING) as cluster, Client(cluster) as client:
        with Runtime(client) as rt:
            yield rt


def run_probes(rt, policy, cases):
    """Submit one task per case ``(task, size, task_id)`` in one batch; return what happened.

    Returns a list of ``(decided, marker, ran, worker)``: the plugin's decision, the
    marker the task returned (which implementation ran), the device in the worker's
    record, and the worker's address.
    """
    p = Program(rt, policy)
    p.put("x", 7)
    keys = []
    with p.batch():
        for i, (task, size, task_id) in enumerate(cases):
            keys.append(p.submit(task, ins=["x"], outs=[f"y{i}"], size=size, task_id=task_id,
                                 tags={"case": i}))
    results = p.gather([f"y{i}" for i in range(len(cases))])
    decided = {d["key"]: d for d in fetch_placements(rt.client, p.id)}
    records = {r["key"]: r for r in p.records()}
    assert set(decided) == set(records) == set(keys)
    out = []
    for i, (key, (marker, value)) in enumerate(zip(keys, results, strict=True)):
        assert value == 7
        assert decided[key]["case"] == i and records[key]["case"] == i  # tags travel
        assert decided[key]["size"] == cases[i][1] and decided[key]["task"] == cases[i][2]
        out.append((decided[key]["device"], marker, records[key]["device"], records[key]["worker"]))
    return out


def check(outcomes, expected, addresses):
    for (decided, marker, ran, worker), want in zip(outcomes, expected, strict=True):
        assert (decided, marker, ran, worker) == (want, want, want, addresses[want])


def test_hetero_cluster_resources(hetero):
    assert hetero.resources() == {"CPU": 2, "GPU": 1, "workers": 2}
    assert hetero.has_gpu
    hetero.require_gpu("this test")  # no error


@pytest.mark.parametrize("lam", [10, 0, 2.5])
def test_hybrid_places_by_lambda(hetero, addresses, lam):
    sizes = [None, 0, 1, 2, 3, 10, 11, 10_000]
    expected = [CUDA if (s or 0) > lam else SMP for s in sizes]  # the paper's rule, by hand
    if lam == 10:
        assert expected == [SMP] * 6 + [CUDA] * 2
    outcomes = run_probes(hetero, Policy("hybrid", lam=lam), [(PROBE, s, i) for i, s in enumerate(sizes)])
    check(outcomes, expected, addresses)


def test_fixed_places_by_task_id(hetero, addresses):
    cases = [(PROBE, size, t) for t, size in enumerate([10**6, 0, 10**6, 0, 5])]
    outcomes = run_probes(hetero, Policy("fixed", gpu_tasks={1, 2}), cases)
    check(outcomes, [SMP, CUDA, CUDA, SMP, SMP], addresses)


@pytest.mark.parametrize("kind, want", [("cpu", SMP), ("gpu", CUDA)])
def test_cpu_and_gpu_policies(hetero, addresses, kind, want):
    cases = [(PROBE, size, i) for i, size in enumerate([0, 1, 10**9])]
    check(run_probes(hetero, Policy(kind, lam=0), cases), [want] * 3, addresses)


def test_implementations_bound_the_policy(hetero, addresses):
    # a task without a cuda implementation stays on the CPU under "gpu", and vice versa
    check(run_probes(hetero, Policy("gpu"), [(CPU_ONLY, 10**9, 0)]), [SMP], addresses)
    check(run_probes(hetero, Policy("cpu"), [(GPU_ONLY, 0, 0)]), [CUDA], addresses)


def test_multi_output_tasks_are_placed(hetero, addresses):
    # multi-output tasks add helper (getitem) tasks to the batch; placement must not trip on them
    split = Task("split", smp=lambda v: (SMP, v), cuda=lambda v: (CUDA, v))
    p = Program(hetero, Policy("hybrid", lam=5))
    p.put("x", 1)
    with p.batch():
        small = p.submit(split, ins=["x"], outs=["d0", "v0"], size=1)
        big = p.submit(split, ins=["x"], outs=["d1", "v1"], size=100)
    assert p.gather(["d0", "v0", "d1", "v1"]) == [SMP, 1, CUDA, 1]
    decided = {d["key"]: d["device"] for d in fetch_placements(hetero.client, p.id)}
    assert decided == {small: SMP, big: CUDA}
    workers = {r["key"]: r["worker"] for r in p.records()}
    assert workers == {small: addresses[SMP], big: addresses[CUDA]}


def _publish_sizes(v, *, label, sizes, delay=0.0):
    time.sleep(delay)  # the tasks it sizes are on the scheduler, waiting, meanwhile
    publish({"sized": label}, sizes=(label, sizes))
    return v


SIZER = Task("sizer", smp=_publish_sizes)


@pytest.mark.parametrize("sizes_first", [False, True], ids=["submitted-ahead", "sizes-known"])
def test_sizes_published_later_place_tasks_submitted_ahead(hetero, addresses, sizes_first):
    # Tasks submitted with size_from wait for a task they depend on to publish their sizes
    # (a BFS level submitted before the barrier that sizes it); the plugin then applies
    # the policy with the real sizes, whether they arrive after the tasks (provisional
    # placement overridden) or before.
    lam = 10
    sizes = [0, 50, 5, 1000, 11]
    expected = [CUDA if s > lam else SMP for s in sizes]
    assert expected == [SMP, CUDA, SMP, CUDA, CUDA]
    p = Program(hetero, Policy("hybrid", lam=lam))
    p.put("x", 7)
    with p.batch():
        p.submit(SIZER, ins=["x"], outs=["sized"],
                 kwargs={"label": "level/3", "sizes": sizes, "delay": 0.0 if sizes_first else 0.3})
        if sizes_first:
            p.flush()
    if sizes_first:
        assert p.next_message(watch=["sized"], timeout=30)["sized"] == "level/3"
    keys = []
    with p.batch():
        for t in range(len(sizes)):
            keys.append(p.submit(PROBE, ins=["sized"], outs=[f"y{t}"], task_id=t,
                                 size_from="level/3", tags={"case": t}))
    results = p.gather([f"y{t}" for t in range(len(sizes))])
    assert [marker for marker, _ in results] == expected
    decided = {d["key"]: d for d in fetch_placements(hetero.client, p.id)}
    records = {r["key"]: r for r in p.records()}
    for t, key in enumerate(keys):
        assert (decided[key]["size"], decided[key]["device"]) == (sizes[t], expected[t])
        assert (records[key]["device"], records[key]["worker"]) == (expected[t], addresses[expected[t]])
    if not sizes_first:
        assert p.next_message(timeout=30)["sized"] == "level/3"
    p.close()


def _merge(*values):
    return (SMP, [v for _marker, v in values])


MERGE = Task("merge", smp=_merge)  # a host task: no cuda implementation


def _plus_one(value):
    return value + 1


HOST = Task("plus_one", smp=_plus_one, cuda=_plus_one)


@pytest.mark.parametrize("sizes, want", [([50, 60, 70], CUDA), ([50, 0, 70], SMP), ([1, 2], SMP)],
                         ids=["all-on-gpu", "mixed", "all-on-cpu"])
def test_a_merge_follows_its_inputs_to_the_gpu_worker(hetero, addresses, sizes, want):
    # follow=: a host task reading GPU tasks' outputs runs on the GPU worker (its smp
    # implementation, on that worker's thread) when all of them were placed there
    p = Program(hetero, Policy("hybrid", lam=10))
    p.put("x", 7)
    with p.batch():
        keys = [p.submit(PROBE, ins=["x"], outs=[f"y{i}"], size=s, task_id=i)
                for i, s in enumerate(sizes)]
        merge = p.submit(MERGE, ins=[f"y{i}" for i in range(len(sizes))], outs=["m"], follow=keys)
    assert p.get("m") == (SMP, [7] * len(sizes))  # its only implementation ran
    decided = {d["key"]: d for d in fetch_placements(hetero.client, p.id)}
    records = {r["key"]: r for r in p.records()}
    assert decided[merge]["device"] == want and decided[merge].get("followed", False) == (want == CUDA)
    assert records[merge]["worker"] == addresses[want] and records[merge]["device"] == SMP
    p.close()


@pytest.mark.parametrize("where", [SMP, CUDA])
def test_a_pinned_task_runs_on_its_worker_whatever_the_policy(hetero, addresses, where):
    # worker=: the task runs where its data is kept (its smp implementation, even on the
    # GPU worker, whose only resource is GPU), the policy not asked; logged as smp
    p = Program(hetero, Policy("gpu"))
    p.put("x", 7)
    key = p.submit(HOST, ins=["x"], outs=["m"], worker=addresses[where], tags={"pinned": 1})
    assert p.get("m") == 8
    decided = {d["key"]: d for d in fetch_placements(hetero.client, p.id)}
    records = {r["key"]: r for r in p.records()}
    assert decided[key]["device"] == SMP and decided[key]["pinned"] == 1
    assert records[key]["worker"] == addresses[where] and records[key]["device"] == SMP
    p.close()


def test_a_merge_does_not_follow_tasks_still_waiting_for_their_sizes(hetero, addresses):
    # their placement is provisional until the sizes arrive: the merge stays on the CPU
    p = Program(hetero, Policy("hybrid", lam=10))
    p.put("x", 7)
    with p.batch():
        p.submit(SIZER, ins=["x"], outs=["sized"],
                 kwargs={"label": "level/1", "sizes": [50, 60], "delay": 0.2})
        keys = [p.submit(PROBE, ins=["sized"], outs=[f"y{t}"], task_id=t, size_from="level/1")
                for t in range(2)]
        merge = p.submit(MERGE, ins=["y0", "y1"], outs=["m"], follow=keys)
    assert p.get("m") == (SMP, [7, 7])
    records = {r["key"]: r for r in p.records()}
    assert [records[k]["worker"] for k in keys] == [addresses[CUDA]] * 2  # sized later: GPU
    assert records[merge]["worker"] == addresses[SMP]
    p.close()


def test_size_from_needs_a_task_id(hetero):
    p = Program(hetero)
    p.put("x", 1)
    with pytest.raises(InvalidParameterError, match="size_from needs a task_id"):
        p.submit(PROBE, ins=["x"], outs=["y"], size_from="level/1")


def test_cholesky_example_split_by_lambda(hetero, addresses):
    # tile 4: potrf 21, trsm/syrk 64, gemm 128 flops-ish; λ = 100 sends only gemm to the GPU
    rng = np.random.default_rng(3)
    m = rng.standard_normal((16, 16))
    a = m @ m.T + 16 * np.eye(16)
    p = Program(hetero, Policy("hybrid", lam=100))  # the GPU is fake: host code in the cuda slot
    np.testing.assert_allclose(cholesky(p, a, tile=4, tasks=HOST_CHOLESKY), np.linalg.cholesky(a),
                               atol=1e-10)
    seen = {}
    for r in p.records():
        seen.setdefault(r["name"], set()).add((r["device"], r["worker"]))
    assert seen == {
        "potrf": {(SMP, addresses[SMP])},
        "trsm": {(SMP, addresses[SMP])},
        "syrk": {(SMP, addresses[SMP])},
        "gemm": {(CUDA, addresses[CUDA])},
    }


def test_plain_cluster_runs_everything_on_cpu(plain):
    assert plain.resources() == {"workers": 1}
    assert not plain.has_gpu
    (worker,) = workers_of(plain.client)
    cases = [(PROBE, size, i) for i, size in enumerate([0, 10**9])]
    for policy in (Policy("hybrid", lam=0), Policy("fixed", gpu_tasks={0, 1})):
        for decided, marker, ran, where in run_probes(plain, policy, cases):
            assert (decided, marker, ran, where) == (SMP, SMP, SMP, worker)


def test_gpu_required_but_absent(plain):
    with pytest.raises(DeviceUnavailableError, match=r"strategy 'gpu' needs a GPU.*'GPU' resource"):
        plain.require_gpu("strategy 'gpu'")
    with pytest.raises(DeviceUnavailableError, match="GPU"):
        Policy("gpu").decide(size=1, gpu_present=False)
    # a program must refuse up front what would otherwise wait forever for a GPU worker
    with pytest.raises(DeviceUnavailableError, match="placement policy 'gpu'"):
        Program(plain, Policy("gpu"))
    p = Program(plain)
    p.put("x", 1)
    with pytest.raises(DeviceUnavailableError, match="'gpu_only'.*only a cuda implementation"):
        p.submit(GPU_ONLY, ins=["x"], outs=["y"])


def test_embedded_runtime_with_fake_gpu_worker():
    # the runtime's own embedded cluster: CPU=threads on one worker, one GPU=1 worker per GPU
    with Runtime(threads=2, gpus=1, dashboard_address=None) as rt:
        assert rt.resources() == {"CPU": 2, "GPU": 1, "workers": 2}
        p = Program(rt, Policy("hybrid", lam=1))
        p.put("x", 0)
        p.submit(PROBE, ins=["x"], outs=["small"], size=1)
        p.submit(PROBE, ins=["x"], outs=["big"], size=2)
        assert p.gather(["small", "big"]) == [(SMP, 0), (CUDA, 0)]


def test_embedded_gpu_workers_run_no_profiler():
    """distributed's statistical profiler stalls the GPU worker's task (it samples its stack
    holding the GIL): the embedded cluster starts its GPU workers without it (the CPU worker
    keeps it)."""
    with Runtime(threads=2, gpus=1, dashboard_address=None) as rt:
        profiling = rt.client.run(lambda dask_worker: (
            bool(dask_worker.state.total_resources.get("GPU")),
            "profile" in dask_worker.periodic_callbacks))
        assert sorted(profiling.values()) == [(False, True), (True, False)]


def test_default_tasks_one_per_gpu_for_the_strategies_that_use_it(hetero, plain):
    import taskbfs as tb

    # hybrid and gpu: one task per GPU worker (each GPU task costs the runtime most, and
    # the GPU worker runs them one at a time); cpu and fixed: one per CPU slot, at least
    # taskbfs.tasks (4: this cluster's 2 slots get 4)
    assert tb.default_tasks(hetero, "hybrid") == tb.default_tasks(hetero, "gpu") == 1
    assert tb.default_tasks(hetero, "cpu") == tb.default_tasks(hetero, "fixed") == 4
    # a plain cluster advertises no resources: the CPU rule's least, whatever the strategy
    assert tb.default_tasks(plain, "hybrid") == tb.config.get("tasks")
    with pytest.raises(InvalidParameterError, match="strategy"):
        tb.default_tasks(hetero, "fastest")
    g = tb.Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 4])
    assert tb.bfs(g, 0, strategy="cpu", runtime=hetero).num_tasks == 4


def _array(nbytes: int) -> np.ndarray:
    return np.ones(nbytes // 8)


def _length_smp(array) -> tuple:
    return SMP, array.size


def _length_cuda(array) -> tuple:
    return CUDA, array.size


MAKE_ARRAY = Task("make_array", smp=_array)
LENGTH = Task("length", smp=_length_smp, cuda=_length_cuda)


@pytest.mark.parametrize("nbytes, where", [(2**21, CUDA), (2**12, SMP)], ids=["large", "small"])
def test_a_cpu_task_runs_where_its_large_input_is(hetero, addresses, nbytes, where, monkeypatch):
    # a CPU task whose largest input only the GPU worker holds runs there (its smp
    # implementation) when that input is at least pins.STAY_WITH_DATA_BYTES
    # (read by this in-process scheduler); a smaller one is copied to the CPU worker
    from taskbfs.runtime import pins

    monkeypatch.setattr(pins, "STAY_WITH_DATA_BYTES", 2**20)
    p = Program(hetero, Policy("cpu"))
    p.submit(MAKE_ARRAY, outs=["data"], worker=addresses[CUDA], kwargs={"nbytes": nbytes})
    p.gather(["data"])  # held by the GPU worker before the task is placed
    key = p.submit(LENGTH, ins=["data"], outs=["n"])
    assert p.get("n") == (SMP, nbytes // 8)
    records = {r["key"]: r for r in p.records()}
    assert records[key]["worker"] == addresses[where] and records[key]["device"] == SMP
    p.close()
