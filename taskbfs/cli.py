"""The ``taskbfs`` command.

``taskbfs run``  one BFS (or several keys) on a generated Kronecker graph or a graph file,
on the embedded default cluster or on a scheduler; prints graph size, levels, time, MTEPS
and the validation verdict.
``taskbfs graph500``  the Graph500 benchmark: timed generation and construction, search keys,
a validated BFS per key, the reference statistics block (``taskbfs/graph500_cli.py``);
the options both share are in ``taskbfs/cli_options.py``.
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
import sys
import time

from taskbfs import __version__, graph500_cli
from taskbfs.cli_options import (
    check_cluster_options,
    check_graph_options,
    cluster_options,
    describe_cluster,
    json_ready,
    kronecker_options,
    open_runtime,
    search_options,
)
from taskbfs.errors import InvalidParameterError, TaskBFSError

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
    graph500_cli.add_parser(sub)
    return parser


def _graph_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("graph")
    g.add_argument("--graph", metavar="FILE", help="read a graph (.mtx, .txt/.el/.csv edge list, .npz)")
    g.add_argument("--directed", action="store_true", default=None, help="treat the file as directed")
    kronecker_options(g)


def cluster_json(rt) -> dict:
    return {"address": rt.client.scheduler.address, "dashboard": rt.dashboard_link,
            **{k: int(v) for k, v in rt.resources().items()}}


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
        doc["summary"] = json_ready(stats)
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
