"""``Runtime``: connecting to separately started schedulers, wrapping clients, closing.

The ``slow`` tests start real ``dask scheduler`` / ``dask worker`` processes (a few
seconds each) — by hand, and through ``deploy/start-local-cluster.sh`` — and check that
taskbfs runs there: the placement plugin is pickled to the scheduler process, placement
reaches a (fake) GPU worker, results match numpy.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import Client

import taskbfs as tb
from taskbfs.errors import InvalidParameterError, TaskBFSError
from taskbfs.runtime import CUDA, SMP, Policy, Program, Runtime, Task, fetch_placements
from taskbfs.runtime.plugin import workers_of

from programs import (  # isort: skip  (tests/programs.py)
    HOST_CHOLESKY,
    WORKER_PYTHONPATH,
    cholesky,
    summed_area_table,
)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "deploy" / "start-local-cluster.sh"
START_TIMEOUT = 60


def _taskbfs_plugins(client) -> list[str]:
    # a lambda is pickled by value, so the scheduler process need not import this module
    return client.run_on_scheduler(lambda dask_scheduler: sorted(
        name for name in dask_scheduler.plugins if name.startswith("taskbfs")))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nobody listens there once the socket is closed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by whoever adopted it) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _wait_for(path: Path, procs, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size):
        for p in procs:
            assert p.poll() is None, f"{p.args} exited with {p.returncode}"
        assert time.monotonic() < deadline, f"{path} not written in {timeout}s"
        time.sleep(0.1)


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def cli_cluster(tmp_path_factory):
    """``dask scheduler`` + a ``CPU=1`` and a (fake) ``GPU=1`` ``dask worker``, as processes."""
    tmp = tmp_path_factory.mktemp("cli-cluster")
    dask = [sys.executable, "-m", "dask"]
    procs = []
    logs = []

    env = dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH)  # the workers import tests/programs.py

    def spawn(name, args):
        log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 (closed in finally)
        logs.append(log)
        procs.append(subprocess.Popen(dask + args, stdout=log, stderr=subprocess.STDOUT, env=env))

    try:
        spawn("scheduler", ["scheduler", "--port", "0", "--no-dashboard",
                            "--scheduler-file", str(tmp / "scheduler.json")])
        _wait_for(tmp / "scheduler.json", procs)
        address = json.loads((tmp / "scheduler.json").read_text())["address"]
        spawn("cpu", ["worker", address, "--name", "cpu", "--nthreads", "1", "--resources", "CPU=1"])
        spawn("gpu", ["worker", address, "--name", "gpu", "--nthreads", "1", "--resources", "GPU=1"])
        with Client(address, timeout=START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
        yield address
    except BaseException:
        for log in logs:
            log.flush()
            print(Path(log.name).read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        _stop(procs[1:])  # workers first, so they do not wait for a vanished scheduler
        _stop(procs[:1])
        for log in logs:
            log.close()


def _workers_by_name(client) -> dict[str, str]:
    return {w["name"]: addr for addr, w in workers_of(client).items()}


# ---------------------------------------------------------------- separately started processes
@pytest.mark.slow
def test_connect_by_address_to_cli_cluster(cli_cluster):
    with Runtime(cli_cluster) as rt:
        assert rt.client.scheduler.address == cli_cluster
        # the plugin was pickled to the scheduler process and answers there
        assert "taskbfs-placement" in _taskbfs_plugins(rt.client)
        assert rt.resources() == {"CPU": 1, "GPU": 1, "workers": 2}
        addr = _workers_by_name(rt.client)

        # tile 4: only gemm (2 * 4**3 = 128 > λ) is sent to the GPU worker
        m = np.random.default_rng(7).standard_normal((12, 12))
        a = m @ m.T + 12 * np.eye(12)
        p = Program(rt, Policy("hybrid", lam=100))
        got = cholesky(p, a, tile=4, tasks=HOST_CHOLESKY)  # the GPU worker is fake: host code
        np.testing.assert_allclose(got, np.linalg.cholesky(a), atol=1e-10)
        decided = {d["key"]: d["device"] for d in fetch_placements(rt.client, p.id)}
        for r in p.records():
            want = CUDA if r["name"] == "gemm" else SMP
            assert decided[r["key"]] == r["device"] == want
            assert r["worker"] == addr["gpu" if want == CUDA else "cpu"]
        assert len(decided) == 3 + 3 + 3 + 1  # potrf, trsm, syrk, gemm on 3 x 3 tiles

        x = np.arange(36).reshape(6, 6)
        got = summed_area_table(Program(rt), x, tile=3, batch=False)
        np.testing.assert_array_equal(got, x.cumsum(0).cumsum(1))


@pytest.mark.slow
def test_wrapping_a_client_leaves_it_open(cli_cluster):
    with Client(cli_cluster, set_as_default=False) as client:
        before = _taskbfs_plugins(client)
        rt = Runtime(client)
        assert rt.client is client
        p = Program(rt)
        p.put("x", 20)
        p.submit(Task("neg", smp=np.negative), inouts=["x"])
        assert p.get("x") == -20
        rt.close()
        assert client.status == "running"
        assert client.submit(sum, [1, 2]).result() == 3
        # a second runtime on the same scheduler does not register the plugin again
        Runtime(client).close()
        assert _taskbfs_plugins(client) == before == sorted(set(before))


@pytest.mark.slow
def test_closing_an_address_runtime_closes_only_its_client(cli_cluster):
    rt = Runtime(cli_cluster)
    own = rt.client
    rt.close()
    assert own.status == "closed"
    with Runtime(cli_cluster) as again:  # the scheduler and workers are still there
        assert again.resources()["workers"] == 2


# ---------------------------------------------------------------- in-process, fast
def test_embedded_runtime_close_closes_its_cluster():
    rt = Runtime(threads=1, gpus=0, dashboard_address=None)
    cluster = rt.client.cluster
    assert rt.resources() == {"CPU": 1, "workers": 1}
    assert "Runtime('inproc://" in repr(rt)
    rt.close()
    assert rt.client.status == "closed"
    assert cluster.status.name == "closed"
    rt.close()  # idempotent


def test_bad_address_raises_quickly(setting, monkeypatch):
    setting("runtime.connect-timeout", 2)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(TaskBFSError, match=f"cannot reach a Dask scheduler at '{address}'"):
        Runtime(address)
    assert time.monotonic() - t0 < 8


@pytest.mark.parametrize("address", ["foo://scheduler:8786", "tcp://scheduler", "no address"])
def test_malformed_address_raises_at_once(address):
    t0 = time.monotonic()
    with pytest.raises(InvalidParameterError, match="not a Dask scheduler address"):
        Runtime(address)
    assert time.monotonic() - t0 < 1


@pytest.mark.parametrize("bad", [42, 3.5, object()])
def test_runtime_rejects_other_types(bad):
    with pytest.raises(InvalidParameterError, match="scheduler address, a distributed.Client, a Cluster"):
        Runtime(bad)


# ---------------------------------------------------------------- Cluster objects, dask-cuda, dashboard link
def _kronecker_like(scale: int = 9):
    from shapes import kronecker_like

    shape = kronecker_like(scale=scale, edgefactor=8, seed=3)
    return shape, tb.Graph.from_edges(shape.src, shape.dst, shape.num_vertices)


@pytest.mark.slow
def test_runtime_takes_a_cluster_object_and_leaves_it_up():
    from distributed import LocalCluster
    from reference import scipy_distances

    shape, graph = _kronecker_like()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster:
        with Runtime(cluster) as rt:
            assert rt.client.cluster is cluster and not rt.in_process
            assert rt.resources() == {"CPU": 2, "workers": 2}
            r = tb.bfs(graph, 0, tasks=4, runtime=rt)  # two processes: levels dispatched
            assert np.array_equal(r.distances, scipy_distances(graph, 0))
            tb.validate(graph, 0, r.parents, levels=r.distances)
            assert len(set(r.trace["worker"])) == 2
            client = rt.client
        assert client.status == "closed" and cluster.status.name == "running"

        class Deployed:  # what dask-jobqueue / dask-kubernetes clusters have in common
            scheduler_address = cluster.scheduler_address

        with Runtime(Deployed()) as rt:
            assert rt.client.scheduler.address == cluster.scheduler_address
            assert np.array_equal(tb.bfs(graph, 0, runtime=rt).distances, scipy_distances(graph, 0))


def test_resources_follow_the_workers_without_a_round_trip_per_search(monkeypatch):
    """The scheduler announces the totals when a worker joins or leaves; a runtime asks
    once, then answers from the announcements (two runtimes on one client both hear)."""
    from distributed import LocalCluster

    from taskbfs.runtime import cluster as cluster_module

    # in-process workers (inproc:// addresses); the HTTP server on 127.0.0.1
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        first, second = Runtime(client), Runtime(client)
        assert first.resources() == second.resources() == {"CPU": 1, "workers": 1}
        asked = []
        monkeypatch.setattr(cluster_module, "cluster_resources",
                            lambda *a, **k: asked.append(a) or {})

        def heard(totals):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if first.resources() == second.resources() == totals:
                    return True
                time.sleep(0.02)
            return False

        cluster.scale(2)
        client.wait_for_workers(2)
        assert heard({"CPU": 2, "workers": 2})
        cluster.scale(1)
        assert heard({"CPU": 1, "workers": 1})
        assert asked == []
        first.close()
        assert client.status == "running" and second.resources()["workers"] == 1
        second.close()
        assert "taskbfs-resources" not in getattr(client, "_event_handlers", {})


_DASK_CUDA_STUB = '''"""A stand-in for the dask_cuda package: one worker plugin, as dask-cuda installs
on each worker it starts (its RMM setup), and a preload that installs it."""
from distributed import WorkerPlugin


class RMMSetup(WorkerPlugin):
    name = "rmm-setup-stub"


async def dask_setup(worker):
    await worker.plugin_add(plugin=RMMSetup(), name=RMMSetup.name)
'''


@pytest.mark.slow
def test_dask_cuda_gpu_workers_are_recognised(tmp_path):
    """A dask-cuda worker (a worker running a plugin of the ``dask_cuda`` package, in a
    process that sees a CUDA device) gets GPU=1 and runs the GPU steps.

    Faked: the dask_cuda package (a stub with one worker plugin, installed by a preload
    as dask-cuda installs its own) and the device (the CUDA simulator). Both workers see
    the simulated GPU; only the one with dask-cuda's plugin is taken as a GPU worker.
    """
    from reference import scipy_distances

    (tmp_path / "dask_cuda").mkdir()
    (tmp_path / "dask_cuda" / "__init__.py").write_text("")
    (tmp_path / "dask_cuda" / "plugins.py").write_text(_DASK_CUDA_STUB)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(tmp_path), WORKER_PYTHONPATH]))
    dask = [sys.executable, "-m", "dask"]
    logs = [open(tmp_path / f"{n}.log", "wb") for n in ("scheduler", "cpu", "cuda")]  # noqa: SIM115
    procs = [subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file",
                                      str(tmp_path / "s.json")],
                              stdout=logs[0], stderr=subprocess.STDOUT, env=env)]
    try:
        _wait_for(tmp_path / "s.json", procs)
        address = json.loads((tmp_path / "s.json").read_text())["address"]
        worker = ["worker", address, "--host", "127.0.0.1", "--nthreads", "1"]
        procs.append(subprocess.Popen(dask + worker + ["--name", "cpu", "--resources", "CPU=1"],
                                      stdout=logs[1], stderr=subprocess.STDOUT, env=env))
        procs.append(subprocess.Popen(dask + worker + ["--name", "cuda", "--preload",
                                                       "dask_cuda.plugins"],
                                      stdout=logs[2], stderr=subprocess.STDOUT, env=env))
        with Client(address, timeout=START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
            assert "GPU" not in str(workers_of(client))  # as dask-cuda starts them
        _, graph = _kronecker_like(scale=6)  # its GPU steps run in the simulator
        with Runtime(address) as rt:
            assert rt.resources() == {"CPU": 1, "GPU": 1, "workers": 2}
            r = tb.bfs(graph, 0, tasks=2, strategy="gpu", runtime=rt)
            assert np.array_equal(r.distances, scipy_distances(graph, 0))
            tb.validate(graph, 0, r.parents, levels=r.distances)
            assert set(r.trace["device"]) == {CUDA}
            assert set(r.trace["worker"]) == {_workers_by_name(rt.client)["cuda"]}
    finally:
        _stop(procs[1:])
        _stop(procs[:1])
        for log in logs:
            log.close()


def test_dashboard_link_names_where_the_dashboard_listens(setting):
    import urllib.request

    with Runtime(threads=1, gpus=0) as rt:
        link = rt.dashboard_link
        assert link.startswith("http://127.0.0.1:") and link.endswith("/status")
        with urllib.request.urlopen(link, timeout=10) as reply:  # it answers there
            assert reply.status == 200
    with Runtime(threads=1, gpus=0, dashboard_address=None) as rt:
        assert rt.dashboard_link is None
    setting("runtime.dashboard-address", None)
    with Runtime(threads=1, gpus=0) as rt:
        assert rt.dashboard_link is None
    # an address it could not serve on: said before any cluster starts, not a failed start
    for bad, words in (("bogus:addr", "expected [host]:port"), (":70000", "0-65535"),
                       ("no-such-host.invalid:0", "not an address of this machine")):
        with pytest.raises(tb.InvalidParameterError, match=re.escape(words)):
            Runtime(threads=1, gpus=0, dashboard_address=bad)


def test_the_embedded_cluster_takes_one_gpu_worker_however_many_gpus(monkeypatch):
    """Its workers share this process, where numba gives every thread the same GPU: on a
    machine of several GPUs it starts one GPU worker (two used to share GPU 0, the others
    idle), and asking for more is refused, naming the way to use them."""
    from taskbfs.runtime import attach, embedded

    monkeypatch.setattr(attach, "WORKER_WARM_UP", ())  # no kernels for a GPU this machine lacks
    monkeypatch.setattr(embedded, "detect_gpus", lambda: 4)
    with Runtime(threads=1, dashboard_address=None) as rt:
        assert rt.resources()["GPU"] == 1
    for bad in (2, -1, 1.5, True):
        with pytest.raises(InvalidParameterError, match=r"gpus must be 0 or 1 .*"
                           r"deploy/start-local-cluster\.sh"):
            Runtime(threads=1, gpus=bad, dashboard_address=None)


# ---------------------------------------------------------------- deploy script
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_start_local_cluster_script(tmp_path, monkeypatch):
    env = dict(os.environ, PYTHON=sys.executable, TASKBFS_CLUSTER_DIR=str(tmp_path / "c"),
               PYTHONPATH=WORKER_PYTHONPATH,  # the workers import tests/programs.py
               TASKBFS_PORT="0", TASKBFS_DASHBOARD="none", TASKBFS_CPU_THREADS="1",
               TASKBFS_GPUS="1")  # one (fake) GPU worker: CUDA_VISIBLE_DEVICES=0, GPU=1

    def script(*args, check=True):
        return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True,
                              text=True, timeout=START_TIMEOUT + 30, check=check)

    state = tmp_path / "c"
    try:
        started = script("start")
        address = (state / "scheduler-address").read_text().strip()
        assert started.stdout.strip() == address and address.startswith("tcp://")
        pids = [int(f.read_text()) for f in sorted(state.glob("*.pid"))]
        assert sorted(f.stem for f in state.glob("*.pid")) == ["cpu-0", "gpu-0", "scheduler"]
        assert "running" in script("status").stdout
        assert script("start", check=False).returncode != 0  # refuses to start twice

        with Runtime(address) as rt:
            assert rt.resources() == {"CPU": 1, "GPU": 1, "workers": 2}
            addr = _workers_by_name(rt.client)
            p = Program(rt, Policy("hybrid", lam=0))  # every tile task (size 4) to the GPU
            x = np.arange(16.0).reshape(4, 4)
            np.testing.assert_array_equal(summed_area_table(p, x, tile=2), x.cumsum(0).cumsum(1))
            assert {(r["device"], r["worker"]) for r in p.records()} == {(CUDA, addr["gpu-0"])}
    finally:
        stopped = script("stop", check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert not list(state.glob("*.pid")) and not (state / "scheduler-address").exists()
    assert not [pid for pid in pids if _alive(pid)]
    status = script("status", check=False)  # nothing runs: says so, and exits non-zero
    assert "not running" in status.stdout and status.returncode != 0
    assert script("stop").returncode == 0  # stopping twice is harmless


def test_available_memory_is_read_at_most_once_a_second(monkeypatch):
    """The embedded runtime's memory check reads /proc/meminfo (through psutil) at most once
    per MEMORY_READING_SECONDS, not once per search."""
    import types

    import psutil

    from taskbfs.runtime import cluster as cluster_module

    reads = []

    def reading():
        reads.append(1)
        return types.SimpleNamespace(available=1000 * len(reads))

    monkeypatch.setattr(psutil, "virtual_memory", reading)
    monkeypatch.setattr(cluster_module, "_memory_reading", (float("-inf"), 0))
    assert cluster_module.available_memory() == cluster_module.available_memory() == 1000
    assert len(reads) == 1
    monkeypatch.setattr(cluster_module, "MEMORY_READING_SECONDS", 0.0)
    time.sleep(0.01)
    assert cluster_module.available_memory() == 2000
