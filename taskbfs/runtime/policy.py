"""Placement policies: which device runs a task, from its size and the policy.

Kept free of Dask so that the scheduler plugin (which calls :meth:`Policy.decide` in the
scheduler's thread, for every task) and the tests share one small, cheap rule.

=========  ================================================================  ==============
kind       rule                                                              paper
=========  ================================================================  ==============
hybrid     GPU when the task's size (frontier vertices) exceeds λ            Sec. V.A
fixed      GPU for a fixed set of task ids for the whole run, CPU otherwise  Sec. V.B
cpu        always CPU                                                        baseline
gpu        always GPU                                                        baseline
=========  ================================================================  ==============
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taskbfs import config
from taskbfs.errors import DeviceUnavailableError, InvalidParameterError
from taskbfs.runtime.task import CUDA, SMP

POLICY_KINDS = ("hybrid", "fixed", "cpu", "gpu")


@dataclass(frozen=True)
class Policy:
    """A placement policy.

    Parameters
    ----------
    kind : {"hybrid", "fixed", "cpu", "gpu"}
    lam : float
        Threshold λ of the hybrid policy (tasks with size > λ go to the GPU).
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
    lam: float = config.DEFAULT_LAMBDA
    gpu_tasks: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        if self.kind not in POLICY_KINDS:
            raise InvalidParameterError(
                f"unknown placement policy {self.kind!r}; choose one of {', '.join(POLICY_KINDS)}"
            )
        try:
            lam = float(self.lam)
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

    def decide(self, size=None, impls=(SMP, CUDA), gpu_present=True, task_id=None) -> str:
        """Return ``"smp"`` or ``"cuda"`` for one task.

        Parameters
        ----------
        size : int, optional
            The task's workload (for BFS: its frontier vertices). None counts as 0.
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
        if CUDA not in impls:
            return SMP
        if SMP not in impls or self.kind == "gpu":
            if not gpu_present:
                raise DeviceUnavailableError(
                    "a task needs a GPU (strategy/policy 'gpu' or a CUDA-only task) but no "
                    "worker of the cluster advertises the GPU resource"
                )
            return CUDA
        if not gpu_present or self.kind == "cpu":
            return SMP
        if self.kind == "fixed":
            return CUDA if task_id in self.gpu_tasks else SMP
        return CUDA if (size or 0) > self.lam else SMP
