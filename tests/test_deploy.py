"""The recipes of ``deploy/``: each one that can run here is run, the others are checked.

* ``start-local-cluster.sh`` from a fresh shell (no ``PYTHON``, another working directory):
  scheduler and worker on 127.0.0.1, a search against it equal to scipy's.
* ``tls/``: certificates from ``make-certs.sh``, a TLS scheduler and worker, a search
  through ``distributed.Security``; a client without a certificate is refused.
* ``slurm_cluster.py``: its CPU and GPU job scripts, and its way of putting GPU jobs beside
  the CPU jobs of one dask-jobqueue cluster, run with dask-jobqueue's local jobs.
* ``compose.yaml``: ``docker compose config`` where docker has compose; its services,
  commands, resources and 127.0.0.1 ports in any case. ``Dockerfile`` and the Kubernetes
  manifests: the images, commands and resources they name.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from distributed import Client

import taskbfs as tb
from taskbfs.runtime.plugin import workers_of

from reference import scipy_distances  # isort: skip  (tests/)

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
TIMEOUT = 120


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _search_matches_scipy(rt, scale: int = 9) -> None:
    g = tb.kronecker(scale=scale, edgefactor=8, seed=2)
    r = tb.bfs(g, 0, runtime=rt)
    np.testing.assert_array_equal(r.distances, scipy_distances(g, 0))
    tb.validate(g, 0, r.parents)


def _hosts(client) -> set[str]:
    info = client.scheduler_info()
    addresses = [info["address"], *info["workers"]]
    return {re.match(r"\w+://([^:]+):\d+$", a).group(1) for a in addresses}


# ---------------------------------------------------------------- start-local-cluster.sh
@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_local_script_from_a_fresh_shell(tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    # What a new shell has: HOME and a PATH with the environment taskbfs is installed in;
    # no PYTHON, no TASKBFS_CLUSTER_DIR. PYTHONPATH only points at this checkout, which a
    # developer's environment need not have installed (CI installs it).
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "PYTHONPATH": str(REPO), "TASKBFS_PORT": "0", "TASKBFS_DASHBOARD": "127.0.0.1:0",
           "TASKBFS_CPU_THREADS": "1"}

    def script(*args, check=True):
        return subprocess.run(["bash", "--noprofile", "--norc", str(DEPLOY / "start-local-cluster.sh"),
                               *args], env=env, cwd=elsewhere, capture_output=True, text=True,
                              timeout=TIMEOUT, check=check)

    state = home / ".local" / "state" / "taskbfs" / "cluster"
    try:
        address = script("start").stdout.strip()
        assert address == script("address").stdout.strip()
        assert address == (state / "scheduler-address").read_text().strip()
        assert address.startswith("tcp://127.0.0.1:")
        assert not list(elsewhere.iterdir())  # nothing written where it was started
        with tb.Runtime(address) as rt:
            assert _hosts(rt.client) == {"127.0.0.1"}
            assert rt.resources() == {"CPU": 1, "workers": 1}
            _search_matches_scipy(rt)
    finally:
        stopped = script("stop", check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert not list(state.glob("*.pid"))
    assert script("address", check=False).returncode != 0


# ---------------------------------------------------------------- TLS
@pytest.mark.skipif(shutil.which("openssl") is None, reason="make-certs.sh needs openssl")
def test_tls_cluster_with_security(tmp_path):
    tls = _load(DEPLOY / "tls" / "tls_cluster.py", "tls_cluster")
    certs = tmp_path / "certs"
    tls.make_certs(certs)
    assert (certs / "cluster-key.pem").stat().st_mode & 0o077 == 0  # the key is private
    with tls.tls_cluster(certs, tmp_path) as address:
        assert address.startswith("tls://127.0.0.1:")
        with Client(address, security=tls.security(certs), timeout=TIMEOUT) as client:
            client.wait_for_workers(1, timeout=TIMEOUT)
            assert _hosts(client) == {"127.0.0.1"}
            assert all(a.startswith("tls://") for a in workers_of(client))
            with tb.Runtime(client) as rt:
                _search_matches_scipy(rt)
        with pytest.raises(OSError):  # plain TCP: refused
            Client(address.replace("tls://", "tcp://"), timeout=5)
        tls.make_certs(tmp_path / "other")  # another CA
        with pytest.raises(OSError):  # TLS with a certificate of another CA: refused
            Client(address, security=tls.security(tmp_path / "other"), timeout=5)


# ---------------------------------------------------------------- SLURM (dask-jobqueue)
def _slurm():
    return _load(DEPLOY / "slurm_cluster.py", "slurm_cluster")


def test_slurm_example_parses():
    ast.parse((DEPLOY / "slurm_cluster.py").read_text())
    args = _slurm().parse_args(["--cores", "6", "--gpu-partition", "gpu"])
    cpu, gpu = _slurm().job_options(args)
    assert cpu["worker_extra_args"] == ["--resources", "CPU=6"] and cpu["cores"] == 6
    assert gpu["worker_extra_args"] == ["--resources", "GPU=1"] and gpu["cores"] == 1
    assert gpu["job_extra_directives"] == ["--gres=gpu:1"] and gpu["queue"] == "gpu"


def test_slurm_job_scripts():
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is optional (pip install dask-jobqueue)")
    scripts = _slurm().job_scripts(_slurm().parse_args(["--partition", "cpu", "--cores", "6"]))
    assert "#SBATCH -p cpu" in scripts["cpu"] and "#SBATCH --cpus-per-task=6" in scripts["cpu"]
    assert "--nthreads 6" in scripts["cpu"] and "--resources CPU=6" in scripts["cpu"]
    assert "#SBATCH --gres=gpu:1" in scripts["gpu"] and "#SBATCH -p cpu" in scripts["gpu"]
    assert "--nthreads 1" in scripts["gpu"] and "--resources GPU=1" in scripts["gpu"]
    assert "--gres" not in scripts["cpu"]


def test_slurm_gpu_jobs_join_the_cpu_jobs_scheduler():
    """``start_jobs`` with dask-jobqueue's local jobs (processes here instead of sbatch)."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is optional")
    from dask_jobqueue.local import LocalCluster, LocalJob

    local = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
    job = {"cores": 1, "processes": 1, "memory": "1GB"}
    with LocalCluster(**job, worker_extra_args=["--resources", "CPU=1", *local],
                      scheduler_options={"host": "127.0.0.1",
                                         "dashboard_address": "127.0.0.1:0"}) as cluster:
        gpu = dict(job, worker_extra_args=["--resources", "GPU=1", *local])
        _slurm().start_jobs(cluster, LocalJob, gpu, cpu_jobs=1, gpu_jobs=1)
        with tb.Runtime(cluster) as rt:
            rt.client.wait_for_workers(2, timeout=TIMEOUT)
            assert rt.resources() == {"CPU": 1, "GPU": 1, "workers": 2}
            assert _hosts(rt.client) == {"127.0.0.1"}
            g = tb.kronecker(scale=8, edgefactor=8, seed=2)
            r = tb.bfs(g, 0, runtime=rt, strategy="cpu")
            np.testing.assert_array_equal(r.distances, scipy_distances(g, 0))


# ---------------------------------------------------------------- containers
def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_compose_services():
    services = _compose()["services"]
    assert set(services) == {"scheduler", "cpu-worker", "gpu-worker"}
    for name, service in services.items():
        assert all(str(p).startswith("127.0.0.1:") for p in service.get("ports", [])), name
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
    assert services["scheduler"]["command"][:2] == ["dask", "scheduler"]
    assert [p.split(":")[1] for p in services["scheduler"]["ports"]] == ["8786", "8787"]
    cpu, gpu = services["cpu-worker"], services["gpu-worker"]
    assert cpu["command"][:3] == ["dask", "worker", "tcp://scheduler:8786"]
    assert _option(cpu["command"], "--resources") == f"CPU={_option(cpu['command'], '--nthreads')}"
    assert cpu["image"] == "taskbfs:cpu" and cpu["build"]["args"]["VARIANT"] == "cpu"
    assert gpu["command"][:3] == ["dask", "worker", "tcp://scheduler:8786"]
    assert _option(gpu["command"], "--resources") == "GPU=1"
    assert _option(gpu["command"], "--nthreads") == "1"
    assert gpu["image"] == "taskbfs:gpu" and gpu["build"]["args"]["VARIANT"] == "gpu"
    assert gpu["profiles"] == ["gpu"]
    device, = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]


def _compose_command() -> list[str] | None:
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) and subprocess.run(
                [*command, "version"], capture_output=True, timeout=60).returncode == 0:
            return command
    return None


def test_compose_config_validates():
    command = _compose_command()
    if command is None:
        pytest.skip("no docker CLI with compose (docker compose / docker-compose) here")
    proc = subprocess.run([*command, "-f", str(DEPLOY / "compose.yaml"), "--profile", "gpu",
                           "config"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    resolved = yaml.safe_load(proc.stdout)["services"]
    assert set(resolved) == {"scheduler", "cpu-worker", "gpu-worker"}


def test_dockerfile_variants_and_context():
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG VARIANT=cpu$", text, re.M)
    assert re.search(r"cpu\) pip install \. ;;", text)
    assert re.search(r"gpu\) pip install \"\.\[gpu\]\"", text)
    copied = [w for line in re.findall(r"^COPY (.+) \S+$", text, re.M) for w in line.split()]
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    for path in copied:  # each file the image copies exists and is let into the context
        assert (REPO / path).exists(), path
        assert f"!{path}" in ignore or f"!{path}/" in ignore, path
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    assert cmd[:2] == ["dask", "scheduler"]


# ---------------------------------------------------------------- Kubernetes
def test_kubernetes_manifests():
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text()))
    by_kind = {d["kind"]: d for d in docs}
    assert set(by_kind) == {"DaskCluster", "DaskWorkerGroup"}
    assert {d["apiVersion"] for d in docs} == {"kubernetes.dask.org/v1"}
    cluster, group = by_kind["DaskCluster"], by_kind["DaskWorkerGroup"]
    name = cluster["metadata"]["name"]
    assert group["spec"]["cluster"] == name
    scheduler = cluster["spec"]["scheduler"]
    assert scheduler["service"]["type"] == "ClusterIP"
    assert scheduler["service"]["selector"]["dask.org/cluster-name"] == name
    container, = scheduler["spec"]["containers"]
    assert container["image"] == "taskbfs:cpu" and container["args"][:2] == ["dask", "scheduler"]

    cpu, = cluster["spec"]["worker"]["spec"]["containers"]
    assert cpu["image"] == "taskbfs:cpu" and cpu["args"][:2] == ["dask", "worker"]
    threads = _option(cpu["args"], "--nthreads")
    assert _option(cpu["args"], "--resources") == f"CPU={threads}"
    assert cpu["resources"]["limits"]["cpu"] == threads
    gpu, = group["spec"]["worker"]["spec"]["containers"]
    assert gpu["image"] == "taskbfs:gpu" and gpu["args"][:2] == ["dask", "worker"]
    assert _option(gpu["args"], "--resources") == "GPU=1" and _option(gpu["args"], "--nthreads") == "1"
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_deploy_readme_names_every_recipe():
    readme = (DEPLOY / "README.md").read_text()
    recipes = [p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*")
               if p.is_file() and p.name not in {"README.md", "Dockerfile.dockerignore"}
               and "__pycache__" not in p.parts]
    assert recipes
    for recipe in recipes:
        assert recipe in readme, f"deploy/README.md does not explain {recipe}"


def test_scripts_executable_and_local_by_default():
    script = (DEPLOY / "start-local-cluster.sh").read_text()
    assert "HOST=${TASKBFS_HOST:-127.0.0.1}" in script
    assert os.access(DEPLOY / "start-local-cluster.sh", os.X_OK)
    assert os.access(DEPLOY / "tls" / "make-certs.sh", os.X_OK)


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_local_script_status_fails_when_nothing_runs(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "TASKBFS_CLUSTER_DIR": str(tmp_path / "cluster")}
    done = subprocess.run(["bash", "--noprofile", "--norc", str(DEPLOY / "start-local-cluster.sh"),
                           "status"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode != 0 and "not running" in done.stdout
