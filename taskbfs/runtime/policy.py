"""Placement policies and the one placement rule: which device runs a task, from its size,
the policy and where its data is.

Kept free of Dask so that the scheduler plugin (which calls a policy's ``decide`` in the
scheduler's thread, for every task) and the tests share one small, cheap rule.

Built-in kinds (:class:`Policy`; :meth:`Policy.decide` is their one rule):

=========  ================================================================  ==============
kind       rule                                                              paper
=========  ================================================================  ==============
hybrid     GPU when the task's size (BFS: its work in vertices) exceeds λ        Sec. V.A
fixed      GPU for a fixed set of task ids for the whole run, CPU otherwise  Sec. V.B
cpu        always CPU                                                        baseline
gpu        always GPU                                                        baseline
=========  ================================================================  ==============

User policies
    Any object with a method ``decide(size, impls, gpu_present, task_id) -> "smp" | "cuda"``
    (the :class:`PlacementPolicy` protocol; called with those keywords) can be given to
    :class:`~taskbfs.runtime.Program` instead: ``size`` is the workload the task was
    submitted with (None if none; a task submitted with ``size_from`` is decided first
    with None, provisionally, then again with its size when that arrives), ``impls`` the devices the task has implementations for,
    ``gpu_present`` whether any worker advertises a GPU, ``task_id`` the id the task was
    submitted with (None if none). A plain function ``f(size, task_id) -> device`` is
    wrapped as a :class:`FunctionPolicy`, which applies the rules every policy must keep
    (a task runs where it has an implementation, and on the CPU when there is no GPU)
    before asking it. A user policy runs in the scheduler, for every task: it must be
    cheap, must not block, and must be picklable (it is sent to the scheduler once per
    program; a class or function defined in a module must be importable there, one
    defined in ``__main__`` or interactively travels by value). An optional attribute
    ``needs_gpu = True`` makes a program refuse to start on a cluster without a GPU
    worker; optional ``kind`` and ``lam`` attributes are shown in the placement log; an
    optional method ``largest_cpu_size(task_id) -> float`` (the largest size its ``decide``
    puts on the CPU) lets compiled code that cannot call ``decide`` place by a number.

The one rule (:class:`Placement`)
    Every device a task is given comes from :func:`checked_device`: the policy's word,
    made runnable (a user policy's error or impossible answer: the task runs where it
    can). The scheduler plugin applies it to each dispatched task
    (:func:`decide_device`); a task that runs its pieces inside
    itself (included tasks) asks a :class:`Placement`, which applies the same rule and
    also weighs where the pieces' data is: a :class:`Residence` records which device's
    memory holds it and the rent paid there, and a piece the policy puts elsewhere stays
    on that device while the rent paid is less than the price of moving the data (rent
    until the rent equals the price of buying: never more than twice the best choice made
    knowing the pieces to come). Compiled code reads the same rule as numbers
    (:meth:`Placement.largest_cpu_size`); where a user policy gives none, such code
    places nothing on the CPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from taskbfs import config
from taskbfs.errors import DeviceUnavailableError, InvalidParameterError
from taskbfs.runtime.task import CUDA, DEVICES, GPU_RESOURCE, SMP

logger = logging.getLogger(__name__)

POLICY_KINDS = ("hybrid", "fixed", "cpu", "gpu")


@runtime_checkable
class PlacementPolicy(Protocol):
    """What a placement policy is: anything with this ``decide`` (see the module docstring)."""

    def decide(self, size=None, impls=DEVICES, gpu_present=True, task_id=None) -> str:
        ...


@dataclass(frozen=True)
class Policy:
    """A placement policy.

    Parameters
    ----------
    kind : {"hybrid", "fixed", "cpu", "gpu"}
    lam : float, optional
        Threshold λ of the hybrid policy (tasks with size > λ go to the GPU); default the
        setting ``taskbfs.lambda``.
    gpu_tasks : frozenset of int
        Task ids bound to the GPU by the fixed policy.

    Examples
    --------
    >>> Policy("hybrid", lam=100).decide(size=500, impls=("smp", "cuda"), gpu_present=True)
    'cuda'
    >>> Policy("hybrid", lam=100).decide(size=500, impls=("smp", "cuda"), gpu_present=False)
    'smp'
    """

    kind: str = "hybrid"
    lam: float | None = None
    gpu_tasks: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        if self.kind not in POLICY_KINDS:
            raise InvalidParameterError(
                f"unknown placement policy {self.kind!r}; choose one of {', '.join(POLICY_KINDS)}"
            )
        try:
            lam = float(config.get("lambda") if self.lam is None else self.lam)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"lam (λ) must be a number, got {self.lam!r}") from None
        if not lam >= 0:  # also rejects NaN
            raise InvalidParameterError(f"lam (λ) must be >= 0, got {self.lam!r}")
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "gpu_tasks", frozenset(int(t) for t in self.gpu_tasks))

    @property
    def uses_gpu(self) -> bool:
        """True if this policy may send a task to a GPU worker."""
        return self.kind != "cpu" and (self.kind != "fixed" or bool(self.gpu_tasks))

    @property
    def needs_gpu(self) -> bool:
        """True if this policy cannot run without a GPU worker."""
        return self.kind == "gpu"

    def decide(self, size=None, impls=DEVICES, gpu_present=True, task_id=None) -> str:
        """Return ``"smp"`` or ``"cuda"`` for one task.

        Parameters
        ----------
        size : int, optional
            The task's workload (for BFS: :func:`taskbfs.search.state.step_sizes`, its
            frontier's work scaled to the whole graph). None counts as 0.
        impls : tuple of str
            Devices the task has an implementation for.
        gpu_present : bool
            Whether any worker of the cluster offers a GPU.
        task_id : int, optional
            The task's id within its program (used by the fixed policy).

        Raises
        ------
        DeviceUnavailableError
            The task can only run on a device that is not there.
        """
        forced = forced_device(impls, gpu_present, needs_gpu=self.kind == "gpu")
        if forced is not None:
            return forced
        return CUDA if (size or 0) > self.largest_cpu_size(task_id) else SMP

    def largest_cpu_size(self, task_id=None) -> float:
        """The largest size of a task (with both implementations, a GPU present) that this
        policy runs on the CPU: λ (hybrid), ∞ (cpu, and fixed's CPU tasks), -1 (gpu, and
        fixed's GPU tasks). :meth:`decide` is this rule; compiled code that cannot call
        it reads it as a number per task (:meth:`Placement.largest_cpu_size`)."""
        if self.kind == "cpu" or (self.kind == "fixed" and task_id not in self.gpu_tasks):
            return float("inf")
        if self.kind == "hybrid":
            return self.lam
        return -1.0


def forced_device(impls, gpu_present: bool, needs_gpu: bool = False) -> str | None:
    """The device a task must run on whatever the policy prefers, or None if it may choose.

    A task with one implementation runs there; without a GPU worker, on the CPU. A task
    that must have the GPU (``needs_gpu``, or a CUDA-only task) where there is none raises.

    Raises
    ------
    DeviceUnavailableError
        The task can only run on a device that is not there.
    """
    if CUDA not in impls:
        return SMP
    if SMP not in impls or needs_gpu:
        if not gpu_present:
            raise DeviceUnavailableError(
                "a task needs a GPU (strategy/policy 'gpu' or a CUDA-only task) but no "
                "worker of the cluster advertises the GPU resource"
            )
        return CUDA
    if not gpu_present:
        return SMP
    return None


@dataclass(frozen=True)
class FunctionPolicy:
    """A user policy from a plain function ``fn(size, task_id) -> "smp" | "cuda"``.

    :func:`forced_device` decides first (a task runs where it has an implementation, and on
    the CPU without a GPU worker); ``fn`` chooses among the rest.

    Examples
    --------
    >>> even_on_gpu = FunctionPolicy(lambda size, task_id: "cuda" if task_id % 2 == 0 else "smp")
    >>> even_on_gpu.decide(size=1, impls=("smp", "cuda"), gpu_present=True, task_id=4)
    'cuda'
    >>> even_on_gpu.decide(size=1, impls=("smp", "cuda"), gpu_present=False, task_id=4)
    'smp'
    """

    fn: Callable
    kind: str = "function"
    lam: float | None = None
    needs_gpu: bool = False

    def decide(self, size=None, impls=DEVICES, gpu_present=True, task_id=None) -> str:
        forced = forced_device(impls, gpu_present)
        return forced if forced is not None else self.fn(size, task_id)


def as_policy(policy) -> Policy | PlacementPolicy:
    """The policy a program uses for ``policy``: None → the default :class:`Policy`; a kind
    name → ``Policy(kind)``; a :class:`Policy` or any object with a ``decide`` method → as
    is; a plain callable → :class:`FunctionPolicy`.

    Raises
    ------
    InvalidParameterError
        Anything else (or an unknown kind name).
    """
    if policy is None:
        return Policy()
    if isinstance(policy, str):
        return Policy(policy)
    if callable(getattr(policy, "decide", None)):
        return policy
    if callable(policy):
        return FunctionPolicy(policy)
    raise InvalidParameterError(
        f"a placement policy must be one of {', '.join(POLICY_KINDS)}, a Policy, an object "
        f"with decide(size, impls, gpu_present, task_id), or a function (size, task_id) -> "
        f"device; got {policy!r}")


def policy_label(policy) -> tuple[str, float | None]:
    """``(kind, lam)`` of any policy, for the placement log: a user policy's optional
    ``kind`` (else its class name) and ``lam`` (else None)."""
    kind = getattr(policy, "kind", None)
    return (kind if isinstance(kind, str) else type(policy).__name__), getattr(policy, "lam", None)


def checked_device(policy, size=None, impls=DEVICES, gpu_present: bool = True,
                   task_id=None) -> tuple[str, str | None]:
    """The device ``policy`` gives a task, made runnable: ``(its answer, None)``, or, when a
    user policy raises or answers a device the task cannot run on, ``(the device the task
    can run on, what went wrong)``. Parameters as for :meth:`Policy.decide`.

    Raises
    ------
    DeviceUnavailableError
        The task can only run on a device that is not there.

    Examples
    --------
    >>> checked_device(Policy("hybrid", lam=100), size=500)
    ('cuda', None)
    >>> device, error = checked_device(FunctionPolicy(lambda size, task_id: "tpu"), size=500)
    >>> device, error.startswith("answered 'tpu'")
    ('smp', True)
    """
    try:
        device = policy.decide(size=size, impls=impls, gpu_present=gpu_present, task_id=task_id)
    except DeviceUnavailableError:
        raise
    except Exception as exc:  # a user policy's bug: the task still runs
        device = exc
    if device in impls and (device == SMP or gpu_present):
        return device, None
    error = (f"{type(device).__name__}: {device}" if isinstance(device, Exception)
             else f"answered {device!r} (devices: {DEVICES}; this task: {tuple(impls)}; "
                  f"GPU present: {gpu_present})")
    return (SMP if SMP in impls else CUDA), error


@dataclass
class Residence:
    """Where the data of a run of tasks (the pieces a task includes) is between runs, and
    the rent paid there: the state of :meth:`Placement.device`'s rent rule.

    Attributes
    ----------
    device : str or None
        The device whose memory holds the data now; None: the host's, its home (no rent
        is due there).
    rent : float
        Seconds of the runs kept on ``device`` against the policy's word, over the
        residence's life (so it rents at most one move's worth in all).
    renting : bool
        Whether the last decision kept a run on ``device`` against the policy's word.
    """

    device: str | None = None
    rent: float = 0.0
    renting: bool = False

    def pay(self, seconds: float) -> None:
        """Count ``seconds`` of the run the last decision placed as rent, if it rented."""
        if self.renting:
            self.rent += seconds


class Placement:
    """The one rule that gives a task (or an included piece of one) its device, as
    placed where its data is (see the module docstring).

    Parameters
    ----------
    policy : Policy or PlacementPolicy
    gpu_present : bool
        Whether the tasks it places can run on a GPU (False: on the CPU, whatever the
        policy's word; a task running on a CPU worker places its pieces so).

    Examples
    --------
    >>> placement = Placement(Policy("hybrid", lam=100))
    >>> placement.device(500), placement.device(50)
    ('cuda', 'smp')
    >>> on_gpu = Residence(device="cuda")  # the data is on the GPU; moving it costs 2 s
    >>> placement.device(50, residence=on_gpu, move_seconds=2.0)  # cheaper to rent
    'cuda'
    >>> on_gpu.pay(3.0)  # that run took 3 s: more than the move
    >>> placement.device(50, residence=on_gpu, move_seconds=2.0)
    'smp'
    """

    def __init__(self, policy, gpu_present: bool = True):
        self.policy = policy
        self.gpu_present = bool(gpu_present)
        # a task placed on a CPU worker: its pieces have only that worker's devices
        self._impls = DEVICES if self.gpu_present else (SMP,)
        self._largest = None  # (number of tasks, their largest_cpu_sizes) once asked

    def device(self, size=None, task_id=None, residence: Residence | None = None,
               move_seconds: float = 0.0) -> str:
        """The device of a task of ``size`` (its task id ``task_id``): the policy's word
        (:func:`checked_device`; a user policy's error is logged and the task runs where
        it can), except that where a ``residence`` says its data is on another device the
        task stays there while the rent paid is less than ``move_seconds`` (the price of
        moving the data home). The decision is recorded in ``residence`` (``renting``:
        the time of the run it places is rent, :meth:`Residence.pay`)."""
        preferred = self.preferred(size, task_id)
        if residence is None:
            return preferred
        held = residence.device
        residence.renting = (held is not None and held != preferred
                             and residence.rent < move_seconds)
        return held if residence.renting else preferred

    def preferred(self, size=None, task_id=None) -> str:
        """The policy's word for a task of ``size``, wherever its data is."""
        device, error = checked_device(self.policy, size, self._impls, self.gpu_present,
                                       task_id)
        if error is not None:
            logger.error("taskbfs: placement policy %r failed for task %s: %s", self.policy,
                         task_id, error)
        return device

    def largest_cpu_size(self, task_id=None) -> float | None:
        """The largest size of a task that :meth:`preferred` puts on the CPU, for compiled
        code that places by a number: ∞ without a GPU, else the policy's own
        ``largest_cpu_size`` (:meth:`Policy.largest_cpu_size`: λ, ∞ or -1), or None when
        a user policy does not say (such code must then place nothing on the CPU)."""
        if not self.gpu_present:
            return float("inf")
        largest = getattr(self.policy, "largest_cpu_size", None)
        return None if largest is None else float(largest(task_id))

    def largest_cpu_sizes(self, num_tasks: int):
        """:meth:`largest_cpu_size` of tasks ``0 .. num_tasks - 1`` as one float array
        (None when the policy does not say), asked once per number of tasks."""
        if self._largest is None or self._largest[0] != num_tasks:
            sizes = [self.largest_cpu_size(t) for t in range(num_tasks)]
            made = None if None in sizes else np.array(sizes, dtype=np.float64)
            self._largest = (num_tasks, made)
        return self._largest[1]


def policy_to_dict(policy, program: str | None = None) -> dict:
    """Plain-data form of a policy, for annotations: a built-in :class:`Policy` travels
    whole; any other policy as a reference to the one ``program`` registered
    (:func:`~taskbfs.runtime.plugin.register_policy`)."""
    if isinstance(policy, Policy):
        return {"kind": policy.kind, "lam": policy.lam, "gpu_tasks": sorted(policy.gpu_tasks)}
    return {"registered": program}


def policy_from_dict(data: dict | None) -> Policy:
    """Inverse of :func:`policy_to_dict` for built-in policies; None gives the default."""
    if not data:
        return Policy()
    return Policy(data["kind"], data["lam"], frozenset(data.get("gpu_tasks", ())))


def decide_device(policy, mark: dict, size, totals: dict) -> str:
    """The device ``policy`` gives a task (``mark``: its ``impls`` and ``task`` id) of ``size``
    on a cluster with resource ``totals``: the one rule
    (:func:`checked_device`, which a :class:`Placement` applies to included tasks) for the plugin
    and a resident call (:meth:`~taskbfs.runtime.Program.call`). A user policy's error or
    impossible answer is logged (and tagged in ``mark``) and the task runs where it can."""
    impls = tuple(mark.get("impls", DEVICES))
    try:
        device, error = checked_device(policy, size, impls, totals.get(GPU_RESOURCE, 0) > 0,
                                       mark.get("task"))
    except DeviceUnavailableError:
        return CUDA  # waits for a GPU worker; the client checks before submitting
    if error is not None:
        logger.error("taskbfs: placement policy %r failed for task %s of program %s: %s",
                     policy, mark.get("task"), mark.get("program"), error)
        mark.setdefault("tags", {})["policy_error"] = error
    return device


def decision_row(key, mark: dict, device: str, now: float, policy) -> dict:
    """One entry of the placement log: a task's ``key``, its ``mark`` (task id, size,
    tags), the ``device`` chosen, when, and by which policy."""
    kind, lam = (policy.kind, policy.lam) if isinstance(policy, Policy) else policy_label(policy)
    return {
        "key": key,
        "task": mark.get("task"),
        "size": mark.get("size"),
        "device": device,
        "time": now,
        "policy": kind,
        "lam": lam,
        **mark.get("tags", {}),
    }
