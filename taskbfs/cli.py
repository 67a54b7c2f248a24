"""The ``taskbfs`` command.

``taskbfs run``  one BFS (or several keys) on a generated Kronecker graph or a graph file,
on the embedded default cluster or on a scheduler; prints graph size, levels, time, MTEPS
and the validation verdict.
``taskbfs graph500``  the Graph500 benchmark: timed generation and construction, search keys,
a validated BFS per key, the reference statistics block (``taskbfs/graph500_cli.py``).
Every taskbfs error ends the command with a one-line message
and exit status 2; nothing else is caught.
"""

from __future__ import annotations

import argparse
import sys
import time

from taskbfs import config
from taskbfs.errors import TaskBFSError

EXIT_USAGE = 2


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
    parser = argparse.ArgumentParser(prog="taskbfs", description=__doc__.splitlines()[0])
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
    c.add_argument("--tasks", type=int, default=None, help=f"number of tasks T (default: one per CPU thread of the cluster, at most {config.get('tasks')})")
    c.add_argument("--strategy", default="hybrid", choices=["hybrid", "fixed", "cpu", "gpu"])
    c.add_argument("--lam", type=float, default=None, help=f"hybrid threshold λ (default {config.get('lambda')})")
    c.add_argument("--direction", default="auto", choices=["auto", "top-down", "bottom-up"])
    c.add_argument("--dispatch", default=None, choices=["auto", "tasks"],
                   help=f"(default {config.get('dispatch')}) auto: one task runs the whole search on the worker that holds the "
                        "graph when there is one; tasks: every step and barrier as a Dask task")
    c.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler address (default: start the embedded cluster)")


def search_options(args) -> dict:
    """The ``tb.bfs`` keyword arguments that :func:`cluster_options` sets."""
    return {"tasks": args.tasks, "strategy": args.strategy, "lam": args.lam,
            "direction": args.direction, "dispatch": args.dispatch}


def load_graph(args):
    """The graph the options ask for, and a one-line description of it."""
    import taskbfs as tb

    if args.graph:
        t0 = time.perf_counter()
        graph = tb.read_graph(args.graph, directed=args.directed)
        return graph, f"{args.graph} (read in {time.perf_counter() - t0:.2f} s)"
    t0 = time.perf_counter()
    graph = tb.kronecker(args.scale, edgefactor=args.edgefactor, seed=args.seed)
    return graph, (f"Kronecker scale {args.scale}, edgefactor {args.edgefactor}, seed {args.seed} "
                   f"(generated in {time.perf_counter() - t0:.2f} s)")


def cmd_run(args) -> int:
    """``taskbfs run``."""
    import taskbfs as tb

    _check_reports(args)
    graph, origin = load_graph(args)
    print(f"graph: {origin}")
    print(f"       {graph.num_vertices:,} vertices, {graph.num_edges:,} edges, "
          f"{'directed' if graph.directed else 'undirected'}")
    if args.source is not None:
        sources = [graph.check_vertex(args.source, "--source")]
    else:
        if args.keys < 1:
            raise tb.InvalidParameterError(f"--keys must be >= 1, got {args.keys}")
        sources = tb.search_keys(graph, args.keys, seed=args.seed).tolist()
        if not sources:
            raise tb.InvalidParameterError("the graph has no vertex of degree >= 1 to start from")
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    results = []
    with tb.Runtime(args.scheduler) as rt:
        print(f"cluster: {rt.resources()}  dashboard: {rt.dashboard_link}")
        _warm_up(tb, graph, sources[0], args, rt)
        failures = 0
        for source in sources:
            result = _run_one(tb, graph, source, args, rt, show_progress)
            results.append(result)
            verdict = ""
            if args.validate:
                try:
                    tb.validate(graph, source, result.parents, levels=result.distances)
                    verdict = "  validation: passed"
                except tb.ValidationError as exc:
                    verdict = f"  validation: FAILED ({exc})"
                    failures += 1
            print(f"source {source}: reached {result.reached:,} vertices in {result.num_levels} levels, "
                  f"{result.traversed_edges:,} edges, {result.elapsed:.4f} s, "
                  f"{result.mteps:,.1f} MTEPS{verdict}")
    _write_reports(args, results)
    return 1 if failures else 0


def _warm_up(tb, graph, source, args, rt) -> None:
    """One untimed search first: compiles the kernels (numba) and places the partitions,
    so that the figures printed afterwards time the traversal alone."""
    t0 = time.perf_counter()
    tb.bfs(graph, source, runtime=rt, **search_options(args))
    print(f"warm-up: one untimed search ({time.perf_counter() - t0:.2f} s: kernel "
          f"compilation and partition placement)")


def _check_reports(args) -> None:
    """Refuse a bad ``--trace`` / ``--timeline`` before any search runs."""
    from taskbfs import trace

    if args.trace:
        trace.check_trace_path(args.trace)
    if args.timeline:
        trace.check_plotting("--timeline")


def _write_reports(args, results) -> None:
    """``--trace`` and ``--timeline``."""
    from taskbfs import trace

    if args.trace:
        path = trace.write_trace(results, args.trace)
        print(f"trace: {path} ({sum(len(r.trace) for r in results):,} tasks)")
    if args.timeline and results:
        import matplotlib

        matplotlib.use("Agg")  # a file, never a window
        ax = trace.plot_timeline(results[-1])
        ax.figure.savefig(args.timeline, dpi=120, bbox_inches="tight")
        print(f"timeline: {args.timeline}")


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
