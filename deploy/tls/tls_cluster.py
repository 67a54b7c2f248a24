"""A taskbfs cluster over TLS: ``dask scheduler``/``dask worker`` with certificates of
``make-certs.sh``, and a client that connects with ``distributed.Security``.

    deploy/tls/make-certs.sh ~/taskbfs-tls                # CA + cluster certificate
    python deploy/tls/tls_cluster.py --certs ~/taskbfs-tls --scale 16

It starts a scheduler and one CPU worker on 127.0.0.1 (``tls://`` addresses; every
connection shows a certificate of the CA: clients and workers without one are refused),
runs a validated search through ``tb.Runtime(Client(address, security=...))`` and stops
them. The same flags (``--tls-ca-file --tls-cert --tls-key``) and the same ``Security`` work
for a cluster across hosts: list their names in ``make-certs.sh`` and give ``--host``.
Without ``--certs`` it makes throw-away certificates in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from distributed import Client
from distributed.security import Security

HERE = Path(__file__).resolve().parent


def security(certs: Path) -> Security:
    """The client's side: trust the cluster's CA, show the cluster certificate, no plain TCP."""
    return Security(tls_ca_file=str(certs / "ca.pem"), tls_client_cert=str(certs / "cluster.pem"),
                    tls_client_key=str(certs / "cluster-key.pem"), require_encryption=True)


def tls_flags(certs: Path) -> list[str]:
    """The flags that put ``dask scheduler`` and ``dask worker`` on TLS."""
    return ["--tls-ca-file", str(certs / "ca.pem"), "--tls-cert", str(certs / "cluster.pem"),
            "--tls-key", str(certs / "cluster-key.pem")]


def make_certs(certs: Path) -> None:
    """Run ``make-certs.sh`` for localhost / 127.0.0.1 into ``certs``."""
    subprocess.run(["bash", str(HERE / "make-certs.sh"), str(certs)], check=True)


@contextmanager
def tls_cluster(certs: Path, state: Path, threads: int = 1, timeout: float = 60):
    """Start a TLS scheduler and one CPU worker (``CPU=threads``) on 127.0.0.1; yield the
    scheduler address; stop both."""
    dask = [sys.executable, "-m", "dask"]
    scheduler_file = state / "scheduler.json"
    procs = [subprocess.Popen(dask + ["scheduler", "--protocol", "tls", "--host", "127.0.0.1",
                                      "--port", "0", "--dashboard-address", "127.0.0.1:0",
                                      "--scheduler-file", str(scheduler_file), *tls_flags(certs)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + timeout
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the TLS scheduler did not start")
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        procs.append(subprocess.Popen(
            dask + ["worker", address, "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0",
                    "--nthreads", str(threads), "--resources", f"CPU={threads}", *tls_flags(certs)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--certs", type=Path, help="folder of make-certs.sh (default: make new ones)")
    p.add_argument("--scale", type=int, default=14, help="Kronecker scale of the search")
    args = p.parse_args(argv)

    import taskbfs as tb

    with tempfile.TemporaryDirectory() as tmp:
        certs = args.certs
        if certs is None:
            certs = Path(tmp) / "certs"
            make_certs(certs)
        with tls_cluster(certs, Path(tmp)) as address:
            with Client(address, security=security(certs), timeout=60) as client:
                client.wait_for_workers(1, timeout=60)
                with tb.Runtime(client) as rt:
                    g = tb.kronecker(scale=args.scale, seed=1)
                    r = tb.bfs(g, 0, runtime=rt)
                    tb.validate(g, 0, r.parents)
                    print(f"{address}: {rt.resources()}; scale {args.scale} validated, "
                          f"{int((r.distances >= 0).sum())} vertices reached")


if __name__ == "__main__":
    main()
