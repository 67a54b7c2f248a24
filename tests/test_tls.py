"""TLS: a scheduler and a worker that speak only TLS (``dask scheduler --protocol tls``,
127.0.0.1), with a CA and certificates made here by ``openssl``; a search through
``Runtime("tls://...", security=...)`` and through ``taskbfs run --tls-*``, and a clear
error, at once, when TLS is asked without credentials."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed.security import Security
from reference import scipy_distances

import taskbfs as tb
from taskbfs.cli import main
from taskbfs.errors import InvalidParameterError

from programs import WORKER_PYTHONPATH  # isort: skip  (tests/programs.py)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the test makes its certificates with openssl")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(tmp: Path) -> dict[str, str]:
    """A self-signed CA and one key and certificate it signed for 127.0.0.1 (scheduler,
    worker and client share them)."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=taskbfs test CA", "-keyout", "ca.key", "-out", "ca.pem", cwd=tmp)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout",
             "node.key", "-out", "node.csr", cwd=tmp)
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "san.ext", "-out", "node.pem", cwd=tmp)
    return {"ca": str(tmp / "ca.pem"), "cert": str(tmp / "node.pem"), "key": str(tmp / "node.key")}


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """(scheduler address, certificate files): a TLS scheduler and one worker, shared by
    the module's tests (none of them changes the cluster: each connects, searches or is
    refused)."""
    tmp_path = tmp_path_factory.mktemp("tls")
    files = make_certificates(tmp_path)
    tls = ["--tls-ca-file", files["ca"], "--tls-cert", files["cert"], "--tls-key", files["key"]]
    env = dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH)
    procs = []

    def spawn(name, args):
        log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append((subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                       stderr=subprocess.STDOUT, env=env), log))

    spawn("scheduler", ["scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                        "--no-dashboard", "--scheduler-file", str(tmp_path / "s.json"), *tls])
    try:
        deadline = time.monotonic() + 60
        while not ((tmp_path / "s.json").exists() and (tmp_path / "s.json").stat().st_size):
            assert procs[0][0].poll() is None, (tmp_path / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the TLS scheduler did not start"
            time.sleep(0.1)
        address = json.loads((tmp_path / "s.json").read_text())["address"]
        assert address.startswith("tls://127.0.0.1:")
        spawn("worker", ["worker", address, "--host", "127.0.0.1", "--no-dashboard",
                         "--no-nanny", "--nthreads", "1", "--resources", "CPU=1", *tls])
        yield address, files
    finally:
        for proc, log in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


def _security(files) -> Security:
    return Security(tls_ca_file=files["ca"], tls_client_cert=files["cert"],
                    tls_client_key=files["key"], require_encryption=True)


def test_search_through_a_tls_runtime(tls_cluster):
    address, files = tls_cluster
    with tb.Runtime(address, security=_security(files)) as rt:
        rt.client.wait_for_workers(1, timeout=60)
        assert rt.client.scheduler.address.startswith("tls://")
        graph = tb.kronecker(9, seed=3)
        result = tb.bfs(graph, 5, tasks=2, runtime=rt)
        assert (result.distances == scipy_distances(graph, 5)).all()
        tb.validate(graph, 5, result.parents, result.distances)


def test_search_through_the_cli_over_tls(tls_cluster, capsys):
    address, files = tls_cluster
    with tb.Runtime(address, security=_security(files)) as rt:
        rt.client.wait_for_workers(1, timeout=60)
    status = main(["run", "--scheduler", address, "--tls-ca-file", files["ca"], "--tls-cert",
                   files["cert"], "--tls-key", files["key"], "--scale", "8", "--tasks", "2",
                   "--validate"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "1 worker" in out and "valid" in out.lower()


def test_tls_without_credentials_is_a_clear_error(tls_cluster, capsys):
    address, files = tls_cluster
    start = time.perf_counter()
    with pytest.raises(InvalidParameterError, match="speaks TLS: give its CA"):
        tb.Runtime(address)
    with pytest.raises(InvalidParameterError, match="security must be a distributed.Security"):
        tb.Runtime(address, security={"tls_ca_file": files["ca"]})
    assert main(["run", "--scheduler", address, "--scale", "6"]) == 2
    assert main(["run", "--scheduler", address, "--scale", "6", "--tls-ca-file",
                 files["ca"] + ".missing", "--tls-cert", files["cert"]]) == 2
    assert main(["run", "--scheduler", "tcp://127.0.0.1:1", "--scale", "6", "--tls-ca-file",
                 files["ca"]]) == 2
    out, err = capsys.readouterr()
    assert time.perf_counter() - start < 10
    assert "Traceback" not in err and err.count("taskbfs: error:") == 3
    assert "speaks TLS" in err and "no such file" in err and "for a tls:// scheduler" in err


REPO = Path(__file__).resolve().parents[1]


def _readme_tls_blocks() -> tuple[list[str], str]:
    """The bash lines and the Python block of the README's "Over TLS" section."""
    section = (REPO / "README.md").read_text().split("### Over TLS", 1)[1].split("\n#", 1)[0]
    bash = section.split("```bash\n", 1)[1].split("```", 1)[0]
    python = section.split("```python\n", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].rstrip(" &") for line in bash.splitlines()], python


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readmes_tls_commands_run(tmp_path, monkeypatch, capsys):
    """The README's TLS section as written: make-certs.sh, a scheduler and a worker from
    its command lines, its ``taskbfs run`` line and its Python block (ports and scale
    changed); every port the scheduler and the worker listen on is on 127.0.0.1 (their
    dashboards were on every interface before: unauthenticated, TLS or not)."""
    import shlex

    import psutil

    lines, python = _readme_tls_blocks()
    port, dashboard = str(_free_port()), str(_free_port())
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH)
    commands = {shlex.split(line)[0 if not line.startswith("dask") else 1]: shlex.split(
        line.replace("8786", port).replace("8787", dashboard)) for line in lines if line}
    subprocess.run(["bash", str(REPO / commands["deploy/tls/make-certs.sh"][0]),
                    *commands["deploy/tls/make-certs.sh"][1:]], check=True, timeout=120)
    procs = [subprocess.Popen([sys.executable, "-m", *commands[name]], env=env,
                              stdout=open(tmp_path / f"{name}.log", "wb"),  # noqa: SIM115
                              stderr=subprocess.STDOUT)
             for name in ("scheduler", "worker")]
    try:
        security = Security(tls_ca_file="certs/ca.pem", tls_client_cert="certs/cluster.pem",
                            tls_client_key="certs/cluster-key.pem", require_encryption=True)
        deadline = time.monotonic() + 240  # a loaded machine: start and warm-up ~2 min
        while True:  # the scheduler's port opens
            try:
                with tb.Runtime(f"tls://127.0.0.1:{port}", security=security) as rt:
                    rt.client.wait_for_workers(1, timeout=240)
                break
            except (tb.TaskBFSError, TimeoutError):
                assert time.monotonic() < deadline and procs[0].poll() is None, \
                    (tmp_path / "worker.log").read_text()
                time.sleep(0.5)
        for name, proc in zip(("scheduler", "worker"), procs, strict=True):
            parent = psutil.Process(proc.pid)  # a worker runs in its nanny's child process
            listening = {(c.laddr.ip, c.laddr.port)
                         for p in [parent, *parent.children(recursive=True)]
                         for c in p.net_connections(kind="inet")
                         if c.status == psutil.CONN_LISTEN}
            assert len(listening) >= 2 and {ip for ip, _ in listening} == {"127.0.0.1"}, \
                (name, listening)  # its port and its dashboard's at least
        run = commands["taskbfs"]
        run[run.index("--scale") + 1] = "8"
        assert main(run[1:]) == 0, capsys.readouterr().err
        assert "valid" in capsys.readouterr().out.lower()
        scope = {}
        exec(python.replace("kronecker(16", "kronecker(8").replace("8786", port), scope)  # noqa: S102 (the README's)
        assert (scope["r"].distances == scipy_distances(tb.kronecker(8, seed=1), 0)).all()
    finally:
        for proc in procs[::-1]:
            proc.terminate()
            proc.wait(timeout=30)
