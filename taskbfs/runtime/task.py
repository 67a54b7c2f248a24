"""Task declarations: one logical task, one implementation per device.

The OmpSs equivalent is a function with ``#pragma omp target device(smp)`` plus a twin
with ``target device(cuda) implements(f)``; here that is ``Task(name, smp=f, cuda=g)``.
Data directions (in / out / inout) are given per call, at :meth:`Program.submit`, because
the same task runs on different data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from taskbfs.errors import InvalidParameterError

#: Device names, as OmpSs spells them.
SMP = "smp"
CUDA = "cuda"
DEVICES = (SMP, CUDA)
#: The worker resources that offer them: a GPU worker advertises ``GPU=1``, a CPU worker
#: ``CPU=<threads>`` (a plain Dask cluster's workers declare none, and run CPU tasks).
GPU_RESOURCE = "GPU"
CPU_RESOURCE = "CPU"
#: The annotation under which every runtime task carries its mark for the scheduler
#: plugin (program, size, implementations, task id).
TASK_ANNOTATION = "taskbfs"


@dataclass(frozen=True)
class Task:
    """A task with an implementation per device.

    Parameters
    ----------
    name : str
        Shown in traces and on the dashboard.
    smp : callable, optional
        The CPU implementation.
    cuda : callable, optional
        The GPU implementation, with the same arguments and results as ``smp``.

    Examples
    --------
    >>> add = Task("add", smp=lambda a, b: a + b)
    >>> add.impls
    ('smp',)
    """

    name: str
    smp: Callable | None = None
    cuda: Callable | None = None

    def __post_init__(self):
        if self.smp is None and self.cuda is None:
            raise InvalidParameterError(f"task {self.name!r} needs at least one implementation")

    @property
    def impls(self) -> tuple[str, ...]:
        """The devices this task can run on."""
        return tuple(d for d in DEVICES if self.implementation(d) is not None)

    def implementation(self, device: str) -> Callable | None:
        """The implementation for ``device`` (``"smp"`` or ``"cuda"``), or None."""
        if device not in DEVICES:
            raise InvalidParameterError(f"unknown device {device!r}; known: {DEVICES}")
        return self.smp if device == SMP else self.cuda

    def implements(self, device: str) -> Callable[[Callable], Task]:
        """Decorator adding an implementation: ``@t.implements("cuda")`` returns a new Task."""

        def add(fn: Callable) -> Task:
            self.implementation(device)  # validates the device name
            return Task(self.name, **{**{d: self.implementation(d) for d in DEVICES}, device: fn})

        return add
