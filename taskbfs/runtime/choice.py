"""Which runtime a call uses: the one given, the user's current client, or the embedded cluster."""

from __future__ import annotations

import weakref

from taskbfs.errors import InvalidParameterError
from taskbfs.runtime.cluster import Runtime, default_runtime, runtime_of


def resolve_runtime(runtime) -> Runtime:
    """The Runtime a call given ``runtime`` uses: a Runtime as is (an embedded cluster's
    stopped workers started again); a Client or a scheduler address wrapped once and
    kept for later calls; None the user's current client (a ``with`` block's Runtime, or
    their Client), else the embedded default cluster.

    Raises
    ------
    InvalidParameterError
        ``runtime`` is none of these.
    """
    from distributed import Client

    if runtime is None:
        current = _current_client()
        if current is None:
            runtime = default_runtime()
        else:  # the user's Runtime of a with block, else their Client
            runtime = runtime_of(current) or _wrapped_runtime(current)
    elif not isinstance(runtime, Runtime):
        if not isinstance(runtime, (str, Client)):
            raise InvalidParameterError(
                f"runtime must be a tb.Runtime, a distributed.Client, a scheduler address "
                f"or None (the embedded cluster), got {runtime!r}")
        runtime = _wrapped_runtime(runtime)
    else:
        runtime.heal()  # an embedded cluster's stopped workers start again
    return runtime


def _current_client():
    """The user's current ``distributed.Client`` (``Client.current()``: the one of an
    ``as_current`` block, else the default client), used as dask collections use it; None
    when there is none or it is closed, and the embedded cluster is started instead."""
    from distributed import Client

    try:
        client = Client.current(allow_global=True)
    except ValueError:  # no client in this process
        return None
    return client if client.status in ("running", "connecting") else None


_wrapped_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_wrapped_addresses: dict = {}


def _wrapped_runtime(client_or_address):
    """A Runtime around a Client or address given to bfs(), kept for reuse across calls
    (its placed partitions with it); dropped with the Client."""
    cache = _wrapped_addresses if isinstance(client_or_address, str) else _wrapped_clients
    rt = cache.get(client_or_address)
    if rt is None or rt.client.status not in ("running", "connecting"):
        rt = cache[client_or_address] = Runtime(client_or_address)
    return rt
