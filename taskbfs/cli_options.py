"""What the ``taskbfs`` commands share: their graph and cluster options with the checks
that refuse bad ones, the runtime those options name, the cluster's one-line description,
and the Kronecker edge list made chunk by chunk under a progress bar.

:mod:`taskbfs.cli` (``taskbfs run``) and :mod:`taskbfs.graph500_cli` (``taskbfs
graph500``) import this module; it imports neither. Like them it imports only argparse
and the settings at its top, so that ``--help`` loads no numba, distributed or pandas.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from taskbfs import config
from taskbfs.errors import InvalidParameterError

#: Largest --scale accepted (the generator's limit).
MAX_SCALE = 40


def kronecker_options(g) -> None:
    """Add ``--scale``, ``--edgefactor`` and ``--seed`` (a Kronecker graph) to the group ``g``."""
    g.add_argument("--scale", type=int, default=16, help="Kronecker scale: 2**scale vertices (default 16)")
    g.add_argument("--edgefactor", type=int, default=16, help="Kronecker edges per vertex (default 16)")
    g.add_argument("--seed", type=int, default=1, help="generator and search-key seed (default 1)")


def cluster_options(p: argparse.ArgumentParser) -> None:
    """The task and cluster options every command shares (--tasks, --strategy, --lam, ...)."""
    c = p.add_argument_group("tasks and cluster")
    c.add_argument("--tasks", type=int, default=None, help=f"number of tasks T (default: one per CPU thread of the cluster, at least {config.get('tasks')})")
    c.add_argument("--strategy", default="hybrid", choices=["hybrid", "fixed", "cpu", "gpu"])
    c.add_argument("--lam", type=float, default=None, help=f"hybrid threshold λ (default {config.get('lambda')})")
    c.add_argument("--direction", default="auto", choices=["auto", "top-down", "bottom-up"])
    c.add_argument("--dispatch", default=None, choices=["auto", "tasks"],
                   help=f"(default {config.get('dispatch')}) auto: one task runs the whole search on the worker that holds the "
                        "graph when there is one; tasks: every step and barrier as a Dask task")
    c.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler address (default: start the embedded cluster)")
    c.add_argument("--tls-ca-file", metavar="FILE", default=None,
                   help="CA certificate of a tls:// scheduler (with --tls-cert and --tls-key)")
    c.add_argument("--tls-cert", metavar="FILE", default=None,
                   help="client certificate for a tls:// scheduler")
    c.add_argument("--tls-key", metavar="FILE", default=None,
                   help="private key of --tls-cert (omit when the certificate file holds it)")
    c.add_argument("--dashboard-address", metavar="ADDRESS", default=None,
                   help=f"embedded cluster: where to serve the dashboard (default "
                        f"{config.get('runtime.dashboard-address')}: this machine, a free port; "
                        f"'none': no dashboard)")


def check_cluster_options(args) -> None:
    """Refuse bad task and cluster options (before any graph or cluster exists)."""
    if args.tasks is not None and args.tasks < 1:
        raise InvalidParameterError(f"--tasks must be >= 1, got {args.tasks}")
    if args.lam is not None and not (math.isfinite(args.lam) and args.lam >= 0):
        raise InvalidParameterError(f"--lam must be >= 0 (the threshold λ), got {args.lam}")
    if args.scheduler is not None:
        from taskbfs.runtime.connect import check_address

        check_address(args.scheduler)
        if any((args.tls_ca_file, args.tls_cert, args.tls_key)) and \
                not args.scheduler.startswith("tls://"):
            raise InvalidParameterError("--tls-ca-file, --tls-cert and --tls-key are for a "
                                        f"tls:// scheduler, not {args.scheduler!r}")
        if args.dashboard_address is not None:
            raise InvalidParameterError(
                "--dashboard-address is for the embedded cluster; a scheduler started "
                "separately serves its own (dask scheduler --dashboard-address)")
    elif args.dashboard_address is not None and args.dashboard_address.lower() != "none":
        from taskbfs.runtime.embedded import check_dashboard_address

        check_dashboard_address(args.dashboard_address)


def check_graph_options(args) -> None:
    """Refuse bad graph options: a file that is not there, numbers out of range."""
    path = getattr(args, "graph", None)
    if path:
        if not os.path.exists(path):
            raise InvalidParameterError(f"no such file: {path}")
        if os.path.isdir(path):
            raise InvalidParameterError(f"{path} is a directory, not a graph file")
        return
    if not 1 <= args.scale <= MAX_SCALE:
        raise InvalidParameterError(f"--scale must be in 1..{MAX_SCALE}, got {args.scale}")
    if args.edgefactor < 1:
        raise InvalidParameterError(f"--edgefactor must be >= 1, got {args.edgefactor}")
    if args.seed < 0:
        raise InvalidParameterError(f"--seed must be >= 0, got {args.seed}")


def open_runtime(args, text=None):
    """The runtime the options name: ``--scheduler``, or the embedded cluster (said first
    on ``text`` when given: its start can take a while)."""
    import taskbfs as tb

    if text is not None and args.scheduler is None:
        print("starting the embedded cluster (its workers load the search kernels: the first "
              "run after an install compiles them, then numba's cache has them)", file=text,
              flush=True)
    if args.scheduler is not None:
        return tb.Runtime(args.scheduler, security=_security(args))
    address = args.dashboard_address
    if address is None:
        return tb.Runtime(None)  # the setting taskbfs.runtime.dashboard-address
    return tb.Runtime(None, dashboard_address=None if address.lower() == "none" else address)


def _security(args):
    """A ``distributed.Security`` from the ``--tls-*`` options (None when none is given)."""
    files = {"--tls-ca-file": args.tls_ca_file, "--tls-cert": args.tls_cert,
             "--tls-key": args.tls_key}
    if not any(files.values()):
        return None
    for option, path in files.items():
        if path is not None and not os.path.isfile(path):
            raise InvalidParameterError(f"{option} {path}: no such file")
    from distributed.security import Security

    return Security(tls_ca_file=args.tls_ca_file, tls_client_cert=args.tls_cert,
                    tls_client_key=args.tls_key, require_encryption=True)


def describe_cluster(rt) -> str:
    """One line on the cluster: workers, CPU threads, GPU workers, how long it took to be
    ready, dashboard."""
    res = rt.resources()
    workers = int(res.get("workers", 0))
    parts = [f"{workers} worker{'s' if workers != 1 else ''}"]
    if "CPU" in res:
        parts.append(f"{int(res['CPU'])} CPU threads")
    parts.append(f"{int(res.get('GPU', 0))} GPU{'s' if res.get('GPU', 0) != 1 else ''}")
    parts.append(f"ready in {rt.start_seconds:.1f} s")
    return f"{', '.join(parts)}; dashboard: {rt.dashboard_link or 'none'}"


def search_options(args) -> dict:
    """The ``tb.bfs`` keyword arguments that :func:`cluster_options` sets."""
    return {"tasks": args.tasks, "strategy": args.strategy, "lam": args.lam,
            "direction": args.direction, "dispatch": args.dispatch}


def kronecker_edges(scale: int, edgefactor: int, seed: int, show_progress: bool):
    """The Kronecker edge list, chunk by chunk with a progress bar on stderr when asked
    (the same list as :func:`taskbfs.kronecker_edges` makes at once)."""
    import numpy as np

    import taskbfs as tb
    from taskbfs.graph import num_chunks

    chunks = num_chunks(scale, edgefactor)
    if not show_progress or chunks == 1:
        return tb.kronecker_edges(scale, edgefactor, seed=seed)
    from tqdm import tqdm

    pieces = [tb.kronecker_edges(scale, edgefactor, seed=seed, chunk=i)
              for i in tqdm(range(chunks), desc="generating edges", unit=" chunk",
                            file=sys.stderr, leave=False)]
    return np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])


def json_ready(document: dict) -> dict:
    """``document`` with its NaN figures as None (JSON has no NaN)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in document.items()}
