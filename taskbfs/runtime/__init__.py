"""The OmpSs emulation on Dask; knows nothing of BFS.

A reusable layer: importing it imports no BFS, no numba and no pandas; any task program
runs on it (``examples/cholesky.py`` is one, with numba.cuda implementations).

==================  ===============================================================
``Task``            a task with per-device implementations (``smp``, ``cuda``)
``Program``         the data directory: in / out / inout, renaming, ``taskwait``;
                    ``call``: a task run now where its inputs are (a resident call)
``Policy``          built-in placement rules: hybrid (λ), fixed, cpu, gpu
``PlacementPolicy`` what a user policy is: ``decide(size, impls, gpu_present, task_id)``
``FunctionPolicy``  a user policy from a plain ``f(size, task_id) -> device``
``Placement``       the one placement rule: the policy's word, and where the data is
                    (``Residence``: the rent rule of pieces kept on a device)
``PlacementPlugin`` the scheduler plugin that applies the policy per task; named listeners
``Runtime``         connect to a scheduler, wrap a Client, or start the embedded default;
                    ``close()`` puts back what it changed on a cluster not its own
``DeviceData``      the OmpSs device cache: named data on a device, budget, LRU eviction
``device_data``     this worker's DeviceData (made with the caller's allocator)
``worker_cache``    per-worker store (the device-data service lives there)
``publish``         a task sends a small message to its program (``Program.next_message``)
``Exchange``        tasks running at once on several workers trade messages, worker to
                    worker (``abort_channel`` ends a channel's waits from the client)
``communicator``    collectives between tasks on several workers (allgather, allreduce):
                    NCCL between GPU workers, set up through Dask; Dask's comms elsewhere
``include``         run work now inside the running task (OmpSs ``final``), traced as a task
``include_each``    several such pieces, side by side on a thread pool
``record_included`` records of included pieces that compiled code ran and timed
``thread_pool``     this process's thread pool for work a task spreads over threads
``on_threads``      ``work(k)`` on k threads at once, this one among them
``threads_for``     how many threads an amount of work is worth
==================  ===============================================================
"""

from taskbfs.runtime.cluster import Runtime
from taskbfs.runtime.collective import Collective, Communicator, communicator
from taskbfs.runtime.device_data import DeviceData, device_data
from taskbfs.runtime.embedded import detect_gpus
from taskbfs.runtime.mailbox import Exchange, ExchangeAborted, abort_channel
from taskbfs.runtime.plugin import PlacementPlugin, fetch_placements
from taskbfs.runtime.policy import (
    POLICY_KINDS,
    FunctionPolicy,
    Placement,
    PlacementPolicy,
    Policy,
    Residence,
)
from taskbfs.runtime.program import Program
from taskbfs.runtime.task import CUDA, SMP, Task
from taskbfs.runtime.worker import (
    current_device,
    include,
    include_each,
    on_threads,
    publish,
    record_included,
    thread_pool,
    threads_for,
    worker_cache,
    worker_threads,
)

__all__ = [
    "CUDA",
    "Collective",
    "Communicator",
    "DeviceData",
    "Exchange",
    "ExchangeAborted",
    "POLICY_KINDS",
    "FunctionPolicy",
    "Placement",
    "PlacementPlugin",
    "PlacementPolicy",
    "Policy",
    "Program",
    "Residence",
    "Runtime",
    "SMP",
    "Task",
    "abort_channel",
    "communicator",
    "current_device",
    "detect_gpus",
    "device_data",
    "fetch_placements",
    "include",
    "include_each",
    "on_threads",
    "threads_for",
    "publish",
    "record_included",
    "thread_pool",
    "worker_cache",
    "worker_threads",
]
