"""The one placement rule (taskbfs.runtime.policy.Placement): the policy's word for every
kind and for user policies, the same as the scheduler plugin's decision; the rent rule
that keeps a task where its data is; the numbers compiled code places by; and the
one-task search on a GPU worker with user policies (every path asks the rule; a policy
that gives no numbers gets no compiled levels)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from reference import naive_bfs
from shapes import path

import taskbfs as tb
from taskbfs import config
from taskbfs.runtime import CUDA, SMP, FunctionPolicy, Policy
from taskbfs.runtime.policy import Placement, Residence, checked_device, decide_device
from taskbfs.search.compiled_levels import cpu_sizes
from taskbfs.search.included import run_search
from taskbfs.search.state import SwitchRule
from taskbfs.search.warmup import _bundle

INF = float("inf")


def expected_device(kind: str, size: int, task_id: int, lam: float = 10,
                    gpu_tasks=frozenset({1})) -> str:
    """The paper's rules written out (Sec. V.A and V.B), a GPU present."""
    if kind == "hybrid":
        return CUDA if size > lam else SMP
    if kind == "fixed":
        return CUDA if task_id in gpu_tasks else SMP
    return {"cpu": SMP, "gpu": CUDA}[kind]


@pytest.mark.parametrize("kind", ["hybrid", "fixed", "cpu", "gpu"])
def test_the_rule_is_the_policy_and_the_plugins(kind):
    """Every built-in kind: the device the rule gives is the paper's, and the scheduler
    plugin's decision for a dispatched task of that size is the same one."""
    policy = Policy(kind, lam=10, gpu_tasks=frozenset({1}))
    placement = Placement(policy)
    for size in (0, 1, 9, 10, 11, 10**6):
        for task_id in (0, 1, 2):
            expected = expected_device(kind, size, task_id)
            assert placement.device(size, task_id) == expected
            mark = {"impls": [SMP, CUDA], "task": task_id}
            assert decide_device(policy, mark, size, {"GPU": 1}) == expected


@pytest.mark.parametrize("kind", ["hybrid", "fixed", "cpu", "gpu"])
def test_without_a_gpu_every_task_runs_on_the_cpu(kind):
    """Placed where no GPU is (a task on a CPU worker placing its pieces), every piece runs
    on the CPU, even for the gpu kind (it cannot raise there), and the number compiled code
    reads says so."""
    placement = Placement(Policy(kind, lam=10, gpu_tasks=frozenset({0})), gpu_present=False)
    assert {placement.device(size, 0) for size in (0, 11, 10**9)} == {SMP}
    assert placement.largest_cpu_size(0) == INF


@pytest.mark.parametrize("policy", [Policy("hybrid", lam=7), Policy("cpu"), Policy("gpu"),
                                    Policy("fixed", gpu_tasks=frozenset({2}))])
def test_the_number_compiled_code_reads_is_the_rule(policy):
    """``largest_cpu_size``: a size goes to the CPU exactly when it is at most that number."""
    placement = Placement(policy)
    for task_id in range(4):
        largest = placement.largest_cpu_size(task_id)
        for size in (0, 1, 6, 7, 8, 10**9):
            assert (placement.device(size, task_id) == SMP) == (size <= largest)


def test_compiled_numbers_come_from_the_rule_or_not_at_all():
    """The compiled loop's per-task numbers are the rule's; a user policy without
    ``largest_cpu_size`` gives none (no level is compiled), one with it gives its own."""
    one_third = SwitchRule("auto", 15.0, 18.0, 30, 2.0, (10, 10, 10))
    halves = SwitchRule("auto", 15.0, 18.0, 20, 2.0, (10, 10))
    # a task of a third of the vertices runs on the CPU up to a third of λ's vertices
    np.testing.assert_allclose(cpu_sizes(Placement(Policy("hybrid", lam=15)), one_third),
                               [5, 5, 5])
    np.testing.assert_array_equal(
        cpu_sizes(Placement(Policy("fixed", gpu_tasks=frozenset({1}))), one_third),
        [INF, -1, INF])
    user = FunctionPolicy(lambda size, task_id: SMP)
    assert cpu_sizes(Placement(user), one_third) is None
    np.testing.assert_array_equal(cpu_sizes(Placement(user, gpu_present=False), halves),
                                  [INF, INF])

    class WithNumbers:
        def decide(self, size, impls, gpu_present, task_id):
            return CUDA if size > 3 * task_id else SMP

        def largest_cpu_size(self, task_id):
            return 3 * task_id

    np.testing.assert_allclose(cpu_sizes(Placement(WithNumbers()), one_third), [0, 1, 2])


def test_a_gpu_workers_level_places_each_task_by_the_one_rule():
    """The GPU worker's levels (``GpuLevels.devices``): each task with work by the policy's
    word for its size and id; with the state on the device and no task wanting the GPU,
    the level stays there while its rent is below the move's price, then leaves."""
    from types import SimpleNamespace

    from taskbfs.search.device_levels import GpuLevels

    def devices(policy, sizes, on_device=False, move=0.0):
        levels = GpuLevels([()] * len(sizes), Placement(policy), np.ones(8, np.int64), 0,
                           np.linspace(0, 8, len(sizes) + 1).astype(np.int64), None)
        if on_device:
            levels.residence.device = CUDA
            levels.levels = SimpleNamespace(leave_seconds=move)
        return levels, levels.devices(np.asarray(sizes, dtype=np.int64)).tolist()

    assert devices(Policy("hybrid", lam=5), [0, 3, 10])[1] == [0, 0, 1]
    assert devices(Policy("gpu"), [0, 3, 10])[1] == [0, 1, 1]
    assert devices(Policy("fixed", gpu_tasks=frozenset({0, 1})), [4, 4, 4])[1] == [1, 1, 0]
    user = FunctionPolicy(lambda size, task_id: CUDA if task_id == 2 else SMP)
    assert devices(user, [4, 4, 4])[1] == [0, 0, 1]
    levels, placed = devices(Policy("hybrid", lam=5), [0, 3, 2], on_device=True, move=1.0)
    assert placed == [0, 1, 1]  # cheaper to rent than to move the state home
    levels.residence.pay(2.0)
    assert levels.devices(np.array([0, 3, 2])).tolist() == [0, 0, 0]


def test_a_user_policy_that_fails_runs_the_task_where_it_can(caplog):
    """A user policy that raises or answers a device the task cannot use: the task runs
    where it can, logged; the plugin's decision and the rule's agree."""
    def broken(size, task_id):
        raise RuntimeError("no idea")

    for policy in (FunctionPolicy(broken), FunctionPolicy(lambda size, task_id: "tpu")):
        with caplog.at_level(logging.ERROR):
            assert Placement(policy).device(5, 0) == SMP
        assert "failed for task 0" in caplog.text
        assert decide_device(policy, {"impls": [SMP, CUDA], "task": 0}, 5, {"GPU": 1}) == SMP
        caplog.clear()

    class Raises:
        def decide(self, size, impls, gpu_present, task_id):
            raise RuntimeError("no idea")

    device, error = checked_device(Raises(), 5, (CUDA,), True, 0)  # a CUDA-only task
    assert device == CUDA and "no idea" in error
    assert checked_device(Policy("hybrid", lam=1), 5) == (CUDA, None)


def _levels_kept(costs, sizes, move_seconds: float, lam: float = 10) -> list[str]:
    """Place a run of levels whose data starts on the GPU (as the GPU levels do): each
    level's device by the rule, the residence moved home when a level leaves the GPU and
    back when one runs there again, each level's ``costs`` seconds paid."""
    placement, residence = Placement(Policy("hybrid", lam=lam)), Residence(device=CUDA)
    devices = []
    for size, cost in zip(sizes, costs, strict=True):
        device = placement.device(size, 0, residence, move_seconds)
        residence.device = CUDA if device == CUDA else None
        residence.pay(cost)
        devices.append(device)
    return devices


def test_rent_keeps_a_cheap_tail_on_the_gpu():
    """Small levels after the state reached the GPU stay there while the ones kept so far
    cost less than moving the state to the host: a tail of three 0.25 s levels against a
    1 s move stays."""
    assert _levels_kept([0.25] * 4, [100, 5, 5, 5], move_seconds=1.0) == [CUDA] * 4


def test_rent_leaves_for_a_long_tail():
    """A long tail of small levels leaves once the rent paid reaches the price of the move
    (four 0.25 s levels against 1 s), and never comes back for small levels (the rent is
    paid once over the residence's life); a large level still goes to the GPU."""
    devices = _levels_kept([0.25] * 9, [100] + [5] * 6 + [100, 5], move_seconds=1.0)
    assert devices == [CUDA] * 5 + [SMP] * 2 + [CUDA, SMP]


def test_no_rent_without_a_price_or_off_the_device():
    """With no price for the move, or with the data at home (on the host), each level goes
    where the policy puts it; rent is paid only for a run kept against the policy's word."""
    assert _levels_kept([0.25] * 3, [100, 5, 100], move_seconds=0.0) == [CUDA, SMP, CUDA]
    placement, home = Placement(Policy("hybrid", lam=10)), Residence()
    assert placement.device(5, 0, home, move_seconds=1e9) == SMP
    assert placement.device(100, 0, home, move_seconds=1e9) == CUDA
    home.pay(5.0)
    assert home.rent == 0.0
    on_gpu = Residence(device=CUDA)
    assert placement.device(100, 0, on_gpu, move_seconds=1e9) == CUDA and not on_gpu.renting
    on_gpu.pay(5.0)
    assert on_gpu.rent == 0.0


# ---------------------------------------------------------------- the search, user policies
class CpuByKeywords:
    """A user policy class whose ``decide`` has no defaults (called by keywords only) and
    no ``largest_cpu_size``: every step on the CPU."""

    def decide(self, size, impls, gpu_present, task_id):
        return SMP


def _search_on(graph, tasks: int, policy, device: str):
    bundle, bounds = _bundle(graph, tasks)
    init = {"bounds": bounds, "sources": np.zeros(1, dtype=np.int64), "direction_mode": "auto",
            "total_edges": graph.num_arcs, "alpha": config.get("direction.alpha"),
            "beta": config.get("direction.beta")}
    return run_search(bundle, graph.degrees(), init=init, policy=policy, device=device)


@pytest.mark.parametrize("policy", [CpuByKeywords(), FunctionPolicy(lambda size, task_id: SMP)],
                         ids=["class", "function"])
@pytest.mark.parametrize("tasks", [1, 3])
def test_a_user_policy_places_the_one_task_search_on_a_gpu_worker(policy, tasks):
    """The search task as the GPU worker runs it, with a user policy that puts every step
    on the CPU (so no GPU is needed): the right distances, and no compiled level (the
    compiled loop places by numbers such a policy does not give); on a CPU worker the same
    policy's deep levels are compiled (every step runs on the CPU there)."""
    shape = path(300)
    graph = tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices)
    expected = naive_bfs(shape.src, shape.dst, shape.num_vertices, 0)
    on_gpu_worker = _search_on(graph, tasks, policy, CUDA)
    np.testing.assert_array_equal(on_gpu_worker.distances, expected)
    assert len(on_gpu_worker.summaries) == 301 and not on_gpu_worker.summaries.blocks
    assert not any(s.gpu_steps.any() for s in on_gpu_worker.summaries)
    on_cpu_worker = _search_on(graph, tasks, policy, SMP)
    np.testing.assert_array_equal(on_cpu_worker.distances, expected)
    assert on_cpu_worker.summaries.blocks
    # a built-in policy that puts these steps on the CPU gets them compiled on the GPU worker
    assert _search_on(graph, tasks, Policy("hybrid", lam=10**6), CUDA).summaries.blocks
