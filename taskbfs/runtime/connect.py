"""Reaching a Dask scheduler: its address checked, and for a ``tls://`` one the TLS
credentials; a handshake that gives up after a timeout; a client of the runtime's own;
and where the scheduler's dashboard listens.
"""

from __future__ import annotations

from distributed import Client
from distributed.deploy import Cluster

from taskbfs import config
from taskbfs.errors import InvalidParameterError, TaskBFSError


def is_cluster_like(obj) -> bool:
    return isinstance(getattr(obj, "scheduler_address", None), str)


def connect(target, security=None) -> Client:
    """A Client of our own to a scheduler address, a Cluster, or a cluster-like object
    (over TLS with ``security``, a ``distributed.Security``)."""
    if not isinstance(target, Cluster):
        target = target if isinstance(target, str) else target.scheduler_address
        check_address(target)
        security = _check_security(target, security)
    kwargs = {} if security is None else {"security": security}
    timeout = config.get("runtime.connect-timeout")
    try:
        if isinstance(target, str):
            _answers(target, security, timeout)
        return Client(target, set_as_default=False, timeout=timeout, **kwargs)
    except (OSError, TimeoutError) as exc:
        where = target if isinstance(target, str) else getattr(target, "scheduler_address", target)
        raise TaskBFSError(f"cannot reach a Dask scheduler at {where!r}: {exc}") from None


def _answers(address: str, security, timeout: float) -> None:
    """Return once the scheduler at ``address`` answers a connection's handshake, within
    ``timeout`` seconds (else ``TimeoutError``; ``OSError`` when it cannot be reached).
    distributed's ``Client`` reads that handshake with no timeout: a stopped (SIGSTOP)
    scheduler, whose port still accepts connections, held it forever."""
    import asyncio
    import concurrent.futures

    from distributed.comm import connect

    args = {} if security is None else security.get_connection_args("client")

    async def probe():
        comm = await asyncio.wait_for(connect(address, timeout=timeout, **args), timeout)
        await comm.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # its own event loop: the
        # caller's thread may run one (a notebook's)
        try:
            pool.submit(asyncio.run, probe()).result()
        except asyncio.TimeoutError:
            raise TimeoutError(f"the scheduler did not answer within {timeout:g} s "
                               f"(runtime.connect-timeout; is it stopped or overloaded?)") from None


def _check_security(address: str, security):
    """The ``distributed.Security`` to reach ``address`` with: the one given, or for a
    ``tls://`` address the one Dask's settings describe (``distributed.comm.tls.*``);
    :class:`InvalidParameterError` when TLS is asked without a CA file, certificate and
    key (distributed would fail with a raw TypeError, or wait out its timeout)."""
    from distributed.security import Security

    if security is not None and not isinstance(security, Security):
        raise InvalidParameterError(f"security must be a distributed.Security, got "
                                    f"{type(security).__name__}")
    if not address.startswith("tls://"):
        return security
    security = Security() if security is None else security
    missing = [name for name in ("tls_ca_file", "tls_client_cert")
               if not getattr(security, name, None)]
    if missing:
        raise InvalidParameterError(
            f"the scheduler {address!r} speaks TLS: give its CA and a client certificate and "
            f"key (Runtime(address, security=distributed.Security(tls_ca_file=..., "
            f"tls_client_cert=..., tls_client_key=..., require_encryption=True)), or taskbfs "
            f"run --tls-ca-file --tls-cert --tls-key); missing: {', '.join(missing)}")
    return security


def check_address(address: str) -> None:
    """Reject a malformed address before ``Client`` sees it.

    ``Client`` raises a bare ValueError for those, and the half-built client then blocks
    for twice the connect timeout when it is garbage-collected.
    """
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        backend = get_backend(scheme)
        if scheme in ("tcp", "tls"):
            backend.get_address_host_port(location)
    except ValueError as exc:
        raise InvalidParameterError(f"not a Dask scheduler address: {address!r} ({exc})") from None


def dashboard_sockets(dask_scheduler=None) -> list:
    """(host, port) of every socket the scheduler's HTTP server (the dashboard) listens on."""
    server = getattr(dask_scheduler, "http_server", None)
    sockets = getattr(server, "_sockets", {}) if server is not None else {}
    return [list(sock.getsockname()[:2]) for sock in sockets.values()]


def dashboard_link(client: Client) -> str | None:
    """The dashboard's URL at an address its server listens on (see
    :attr:`~taskbfs.runtime.Runtime.dashboard_link`); None when the scheduler serves no dashboard."""
    from distributed.comm.addressing import get_address_host
    from distributed.utils import format_dashboard_link

    port = client.scheduler_info().get("services", {}).get("dashboard")
    if port is None:
        return None
    hosts = [host for host, bound in client.run_on_scheduler(dashboard_sockets) if bound == port]
    host = hosts[0] if hosts else ""
    if host in ("", "0.0.0.0", "::"):  # every interface: the scheduler's host reaches it
        host = get_address_host(client.scheduler.address)
    return format_dashboard_link(host, port)
