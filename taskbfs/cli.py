"""The ``taskbfs`` command.

``taskbfs run``  one BFS (or several keys) on a generated Kronecker graph or a graph file,
on the embedded default cluster or on a scheduler; prints graph size, levels, time, MTEPS
and the validation verdict.
``taskbfs graph500``  the Graph500 benchmark: timed generation and construction, search keys,
a validated BFS per key, the reference statistics block (``taskbfs/graph500_cli.py``).
Also ``python -m taskbfs``. Every option is checked before any graph is generated or read
and before any cluster starts; every taskbfs error ends the command with a one-line
message and exit status 2; nothing else is caught. ``--json`` writes one JSON document on
stdout (the text goes to stderr). Only this module, argparse and the settings are
imported for ``--help`` and ``--version``: numba, distributed and pandas come with the
first command that needs them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from taskbfs import __version__, config
from taskbfs.errors import InvalidParameterError, TaskBFSError

EXIT_USAGE = 2
#: Largest --scale accepted (the generator's limit).
MAX_SCALE = 40


def main(argv=None) -> int:
    """Entry point of the ``taskbfs`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.func(args)
    except TaskBFSError as exc:
        print(f"taskbfs: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("taskbfs: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taskbfs", description="Task-based heterogeneous (CPU + GPU) breadth-first "
        "search on Dask: run a search, or the Graph500 benchmark.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(title="commands")
    run = sub.add_parser("run", help="run BFS on a generated or given graph")
    _graph_options(run)
    run.add_argument("--source", type=int, default=None,
                     help="start vertex (default: a random vertex of degree >= 1)")
    run.add_argument("--keys", type=int, default=1, help="number of searches from random keys")
    cluster_options(run)
    run.add_argument("--validate", action="store_true", help="check each result with the Graph500 rules")
    run.add_argument("--progress", action="store_true", default=None,
                     help="show per-level progress (default: when stderr is a terminal)")
    run.add_argument("--trace", metavar="FILE", default=None,
                     help="write the task trace of every search: FILE.parquet or FILE.csv")
    run.add_argument("--timeline", metavar="FILE.png", default=None,
                     help="draw the last search's execution timeline (needs matplotlib)")
    run.add_argument("--json", action="store_true",
                     help="write the results as one JSON document on stdout (text to stderr)")
    run.set_defaults(func=cmd_run)
    from taskbfs import graph500_cli

    graph500_cli.add_parser(sub)
    return parser


def _graph_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("graph")
    g.add_argument("--graph", metavar="FILE", help="read a graph (.mtx, .txt/.el/.csv edge list, .npz)")
    g.add_argument("--directed", action="store_true", default=None, help="treat the file as directed")
    g.add_argument("--scale", type=int, default=16, help="Kronecker scale: 2**scale vertices (default 16)")
    g.add_argument("--edgefactor", type=int, default=16, help="Kronecker edges per vertex (default 16)")
    g.add_argument("--seed", type=int, default=1, help="generator and key seed (default 1)")


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
        from taskbfs.runtime.cluster import _check_address

        _check_address(args.scheduler)
        if any((args.tls_ca_file, args.tls_cert, args.tls_key)) and \
                not args.scheduler.startswith("tls://"):
            raise InvalidParameterError("--tls-ca-file, --tls-cert and --tls-key are for a "
                                        f"tls:// scheduler, not {args.scheduler!r}")
        if args.dashboard_address is not None:
            raise InvalidParameterError(
                "--dashboard-address is for the embedded cluster; a scheduler started "
                "separately serves its own (dask scheduler --dashboard-address)")
    elif args.dashboard_address is not None and args.dashboard_address.lower() != "none":
        from taskbfs.runtime.cluster import check_dashboard_address

        check_dashboard_address(args.dashboard_address)


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


def cluster_json(rt) -> dict:
    return {"address": rt.client.scheduler.address, "dashboard": rt.dashboard_link,
            **{k: int(v) for k, v in rt.resources().items()}}


def search_options(args) -> dict:
    """The ``tb.bfs`` keyword arguments that :func:`cluster_options` sets."""
    return {"tasks": args.tasks, "strategy": args.strategy, "lam": args.lam,
            "direction": args.direction, "dispatch": args.dispatch}


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


def load_graph(args, show_progress: bool = False):
    """The graph the options ask for, and a one-line description of it."""
    import taskbfs as tb

    if args.graph:
        t0 = time.perf_counter()
        with _ticker(f"reading {args.graph}", show_progress):
            graph = tb.read_graph(args.graph, directed=args.directed)
        return graph, f"{args.graph} (read in {time.perf_counter() - t0:.2f} s)"
    t0 = time.perf_counter()
    # the same graph as from the edge list kronecker_edges gives, made on every core
    graph = tb.kronecker(args.scale, args.edgefactor, args.seed, progress=show_progress)
    return graph, (f"Kronecker scale {args.scale}, edgefactor {args.edgefactor}, seed {args.seed} "
                   f"(generated in {time.perf_counter() - t0:.2f} s)")


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


class _ticker:
    """While the block runs, a line on stderr saying what runs and for how long."""

    def __init__(self, what: str, show: bool):
        self.what, self.show = what, show

    def __enter__(self):
        if self.show:
            import threading

            from tqdm import tqdm

            self.bar = tqdm(desc=self.what, bar_format="{desc}: {elapsed}", file=sys.stderr,
                            leave=False)
            self.done = threading.Event()
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()
        return self

    def _tick(self):
        while not self.done.wait(0.5):
            self.bar.refresh()

    def __exit__(self, *exc):
        if self.show:
            self.done.set()
            self.thread.join()
            self.bar.close()


def cmd_run(args) -> int:
    """``taskbfs run``."""
    import taskbfs as tb

    _check_run_options(args)
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    text = sys.stderr if args.json else sys.stdout  # --json: stdout is the document alone
    results, verdicts = [], []
    # A graph file is read first, so that a malformed one is said before a cluster starts;
    # a Kronecker graph is made after, so that an unreachable scheduler is said first.
    loaded = load_graph(args, show_progress) if args.graph else None
    with open_runtime(args, text) as rt:
        graph, origin = loaded if loaded is not None else load_graph(args, show_progress)
        print(f"graph: {origin}", file=text)
        print(f"       {graph.num_vertices:,} vertices, {graph.num_edges:,} edges, "
              f"{'directed' if graph.directed else 'undirected'}", file=text)
        if args.source is not None:
            sources = [graph.check_vertex(args.source, "--source")]
        else:
            sources = tb.search_keys(graph, args.keys, seed=args.seed).tolist()
            if not sources:
                raise tb.InvalidParameterError("the graph has no vertex of degree >= 1 to "
                                               "start from")
        print(f"cluster: {describe_cluster(rt)}", file=text)
        cluster = cluster_json(rt)
        _warm_up(tb, graph, sources[0], args, rt, text)
        for source in sources:
            result = _run_one(tb, graph, source, args, rt, show_progress)
            results.append(result)
            verdicts.append(_validation(tb, graph, source, result) if args.validate else None)
            shown = "" if verdicts[-1] is None else f"  validation: {verdicts[-1]}"
            print(f"source {source}: reached {result.reached:,} vertices in {result.num_levels} levels, "
                  f"{result.traversed_edges:,} edges, {result.elapsed:.4f} s, "
                  f"{result.mteps:,.1f} MTEPS{shown}", file=text)
    if len(results) > 1:
        print(summary_table(results), file=text)
    _write_reports(args, results, text)
    if args.json:
        json.dump(_run_document(graph, origin, cluster, results, verdicts), sys.stdout, indent=1)
        print()
    return 1 if any(v is not None and v != "passed" for v in verdicts) else 0


def _check_run_options(args) -> None:
    check_graph_options(args)
    check_cluster_options(args)
    if args.source is not None and args.source < 0:
        raise InvalidParameterError(f"--source must be a vertex id >= 0, got {args.source}")
    if args.keys < 1:
        raise InvalidParameterError(f"--keys must be >= 1, got {args.keys}")
    if args.graph is None and args.source is not None and args.source >= 1 << args.scale:
        raise InvalidParameterError(
            f"--source {args.source} is not a vertex of a scale-{args.scale} graph "
            f"(0..{(1 << args.scale) - 1})")
    _check_reports(args)


def _validation(tb, graph, source, result) -> str:
    try:
        tb.validate(graph, source, result.parents, levels=result.distances)
        return "passed"
    except tb.ValidationError as exc:
        return f"FAILED ({exc})"


def summary_table(results) -> str:
    """Time and MTEPS over several searches: min, median, max and (MTEPS) the harmonic
    mean, as Graph500 compares rates."""
    from taskbfs.graph500 import teps_statistics

    stats = teps_statistics([r.elapsed for r in results], [r.traversed_edges for r in results])
    head = f"summary over {len(results)} searches:"
    lines = [f"{head:<28}{'min':>10}{'median':>10}{'max':>10}{'harmonic mean':>15}",
             f"{'  time (s)':<28}{stats['min_time']:>10.4f}{stats['median_time']:>10.4f}"
             f"{stats['max_time']:>10.4f}",
             f"{'  MTEPS':<28}{stats['min_TEPS'] / 1e6:>10,.1f}{stats['median_TEPS'] / 1e6:>10,.1f}"
             f"{stats['max_TEPS'] / 1e6:>10,.1f}{stats['harmonic_mean_TEPS'] / 1e6:>15,.1f}"]
    return "\n".join(lines)


def _run_document(graph, origin, cluster, results, verdicts) -> dict:
    """What ``taskbfs run --json`` prints."""
    from taskbfs.graph500 import teps_statistics

    doc = {"taskbfs": __version__,
           "graph": {"origin": origin, "vertices": graph.num_vertices, "edges": graph.num_edges,
                     "directed": graph.directed},
           "cluster": cluster,
           "searches": [{"source": r.source, "reached": r.reached, "levels": r.num_levels,
                         "traversed_edges": r.traversed_edges, "seconds": r.elapsed,
                         "mteps": r.mteps, "tasks": r.num_tasks, "validation": v}
                        for r, v in zip(results, verdicts, strict=True)]}
    if results:
        stats = teps_statistics([r.elapsed for r in results], [r.traversed_edges for r in results])
        doc["summary"] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                          for k, v in stats.items()}
    return doc


def _warm_up(tb, graph, source, args, rt, text=sys.stdout) -> None:
    """One untimed search first: compiles the kernels (numba) and places the partitions,
    so that the figures printed afterwards time the traversal alone."""
    t0 = time.perf_counter()
    tb.bfs(graph, source, runtime=rt, **search_options(args))
    print(f"warm-up: one untimed search ({time.perf_counter() - t0:.2f} s: kernel "
          f"compilation and partition placement)", file=text)


def _check_reports(args) -> None:
    """Refuse a bad ``--trace`` / ``--timeline`` before any search runs."""
    if args.trace or args.timeline:
        from taskbfs import trace  # pandas: only when asked for

        if args.trace:
            trace.check_trace_path(args.trace)
        if args.timeline:
            trace.check_figure_path(args.timeline, "--timeline")


def _write_reports(args, results, text=sys.stdout) -> None:
    """``--trace`` and ``--timeline``."""
    from taskbfs import trace

    if args.trace:
        path = trace.write_trace(results, args.trace)
        print(f"trace: {path} ({sum(len(r.trace) for r in results):,} tasks)", file=text)
    if args.timeline and results:
        import matplotlib

        matplotlib.use("Agg")  # a file, never a window
        ax = trace.plot_timeline(results[-1])
        ax.figure.savefig(args.timeline, dpi=120, bbox_inches="tight")
        print(f"timeline: {args.timeline}", file=text)


def _run_one(tb, graph, source, args, rt, show_progress):
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(desc=f"BFS from {source}", unit=" level", file=sys.stderr, leave=False)

    def progress(summary):
        if bar is not None:
            bar.set_postfix(level=summary.level, frontier=summary.frontier_size, dir=summary.direction)
            bar.update(1)

    try:
        return tb.bfs(graph, source, runtime=rt, progress=progress, **search_options(args))
    finally:
        if bar is not None:
            bar.close()


if __name__ == "__main__":
    sys.exit(main())
