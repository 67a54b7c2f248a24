"""The embedded default cluster: in this process, one CPU worker whose threads are the
machine's cores (``CPU=<threads>``) and, when this process sees a GPU, one GPU worker
(``GPU=1``, one thread); its dashboard on this machine only unless asked otherwise.
"""

from __future__ import annotations

import gc
import logging
import numbers
import os

import dask
from distributed import LocalCluster, Worker

from taskbfs import config
from taskbfs.errors import InvalidParameterError
from taskbfs.runtime.connect import dashboard_sockets
from taskbfs.runtime.task import CPU_RESOURCE, GPU_RESOURCE


def detect_gpus() -> int:
    """Number of CUDA GPUs this process can use (1 under the CUDA simulator, 0 without CUDA)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return 1
    try:
        from numba import cuda

        if not cuda.is_available():
            return 0
        return len(cuda.gpus)
    except Exception:  # no numba-cuda, no driver, or a broken driver: no GPU for us
        return 0


def check_dashboard_address(address: str | None) -> None:
    """Refuse a dashboard address the embedded cluster could not serve on (before it
    starts): ``[host]:port`` or a port, the port 0-65535, the host one this machine can
    resolve; None is no dashboard.

    Raises
    ------
    InvalidParameterError
    """
    import socket

    if address is None:
        return
    host, _, port = str(address).rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidParameterError(f"dashboard address {address!r}: expected [host]:port with "
                                    f"a port in 0-65535 (':0': a free port), or 'none'")
    if host:
        try:
            socket.getaddrinfo(host.strip("[]"), None)
        except OSError as exc:
            raise InvalidParameterError(f"dashboard address {address!r}: host {host!r} is not "
                                        f"an address of this machine ({exc})") from None


def start_embedded_cluster(threads: int | None = None, gpus: int | None = None,
                           dashboard_address: str | None = "default") -> LocalCluster:
    """Start the in-process default cluster: one CPU worker plus a GPU worker when this
    process sees a GPU (one: see :class:`~taskbfs.runtime.Runtime`'s ``gpus``).

    Its workers talk to the scheduler in process (``inproc://``); the HTTP servers of its
    workers, and the scheduler's when it serves no dashboard, listen on the setting
    ``taskbfs.runtime.host`` (127.0.0.1: this machine only).
    """
    host = config.get("runtime.host")
    threads = int(threads or os.cpu_count() or 1)
    if threads < 1:
        raise InvalidParameterError(f"threads must be >= 1, got {threads}")
    gpus = min(detect_gpus(), 1) if gpus is None else _embedded_gpus(gpus)
    # Dask serves HTTP (health, metrics) even without a dashboard, by default on 8787:
    # with no dashboard wanted, keep that server off a fixed port too.
    if dashboard_address == "default":
        dashboard_address = config.get("runtime.dashboard-address")
    check_dashboard_address(dashboard_address)
    scheduler_kwargs = {"dashboard": False} if dashboard_address is None else {}
    cluster = EmbeddedCluster(
        n_workers=1,
        threads_per_worker=threads,
        processes=False,
        resources={CPU_RESOURCE: threads},
        dashboard_address=f"{host}:0" if dashboard_address is None else dashboard_address,
        worker_dashboard_address=f"{host}:0",
        scheduler_kwargs=scheduler_kwargs,
        memory_limit=0,
        silence_logs=logging.WARNING,
    )
    for i in range(gpus):
        cluster.worker_spec[f"gpu-{i}"] = {
            "cls": Worker,
            "options": {"nthreads": 1, "resources": {GPU_RESOURCE: 1}, "memory_limit": 0,
                        "name": f"gpu-{i}", "dashboard_address": f"{host}:0"},
        }
    if gpus:
        # no statistical profiler on the GPU workers: its samples hold the GIL, stalling a GPU task
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster.sync(cluster._correct_state)  # the GPU workers start here
        cluster.wait_for_workers(1 + gpus)
    return cluster


class EmbeddedCluster(LocalCluster):
    """The embedded LocalCluster, whose ``dashboard_link`` (what ``client.dashboard_link``
    and Jupyter show) names the interface its dashboard listens on.

    Its scheduler is ``inproc://<machine address>/...``, and LocalCluster takes the
    dashboard's host from that address, where nothing listens when the dashboard is on
    127.0.0.1 (``taskbfs.runtime.dashboard-address``). The link is still formatted by
    distributed's ``distributed.dashboard.link`` template, so a template the user sets
    (a proxy, JupyterHub) is honoured.
    """

    @property
    def dashboard_link(self):
        link = super().dashboard_link
        try:
            port = self.scheduler_info["services"]["dashboard"]
            hosts = {host for host, bound in dashboard_sockets(self.scheduler) if bound == port}
        except (AttributeError, KeyError, TypeError):  # no dashboard, or not started yet
            return link
        if len(hosts) != 1 or hosts & {"0.0.0.0", "::", ""}:
            return link  # every interface: the scheduler's host reaches it
        from distributed.utils import format_dashboard_link

        return format_dashboard_link(hosts.pop(), port)


def _embedded_gpus(gpus) -> int:
    """``gpus`` as the embedded cluster's GPU workers: 0 or 1, else a clear error."""
    if isinstance(gpus, bool) or not isinstance(gpus, numbers.Integral) or not 0 <= gpus <= 1:
        raise InvalidParameterError(
            f"gpus must be 0 or 1 for the embedded cluster, got {gpus!r}: its workers run in "
            "this process, where every GPU worker would use the same GPU; for several GPUs "
            "start one worker process per GPU (deploy/start-local-cluster.sh, or `dask "
            "worker --resources GPU=1` with CUDA_VISIBLE_DEVICES set) and pass its "
            "scheduler's address to tb.Runtime")
    return int(gpus)


def freeze_long_lived_objects() -> None:
    """Keep the objects alive now out of Python's later garbage collections (``gc.freeze``).

    The embedded cluster runs in this process, and distributed allocates many objects per
    task, so the cycle collector's full passes come every few searches; each one walks every
    object numba, pandas, distributed and the cluster hold, long enough to multiply the time
    of a search that meets one. Frozen, those long-lived objects are skipped; they are only
    never freed by the cycle collector (reference counting still frees them).
    """
    gc.freeze()
