"""``taskbfs graph500``: the Graph500 BFS benchmark (Benchmark 1) as its specification runs it.

Returns
    Exit status 0 when every search validated, 1 when any failed validation (2 for a bad
    option, from :func:`taskbfs.cli.main`). Prints the reference output block.
Approach
    The specification's steps, each timed on its own: generate the Kronecker edge list
    ("graph_generation"), build the CSR graph ("construction_time"), sample the search
    keys among the vertices of degree >= 1, then for each key one :func:`taskbfs.search`
    (its ``elapsed`` is the kernel time) and one :func:`taskbfs.validate` (timed apart,
    not part of TEPS). One untimed warm-up search runs first, so that numba compilation
    and the placement of the graph's partitions on the workers are not charged to the
    first key; the output says so. Statistics by :func:`taskbfs.graph500.teps_statistics`.
Source
    Graph500 specification, "Benchmark 1 (Search)" and "Computing and Outputting Performance
    Information"; the reference ``graph500.c`` for the field names and their order. The
    reference's ``num_mpi_processes`` is printed as the number of Dask workers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from taskbfs.cli_options import (
    check_cluster_options,
    check_graph_options,
    cluster_options,
    describe_cluster,
    json_ready,
    kronecker_edges,
    kronecker_options,
    open_runtime,
    search_options,
)
from taskbfs.errors import InvalidParameterError

#: The specification's number of search keys (``taskbfs.graph500.SEARCH_KEYS``, which a
#: test compares; not imported here: ``taskbfs --help`` must not load numba).
SEARCH_KEYS = 64


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``taskbfs graph500`` on the ``taskbfs`` command's subparsers."""
    p = subparsers.add_parser(
        "graph500",
        help="the Graph500 BFS benchmark: generate, build, search keys, validate, statistics",
        description=__doc__.splitlines()[0],
    )
    g = p.add_argument_group("graph")
    kronecker_options(g)
    g.add_argument("--keys", type=int, default=SEARCH_KEYS,
                   help=f"number of search keys, i.e. searches (default {SEARCH_KEYS})")
    cluster_options(p)
    p.add_argument("--no-validate", dest="validate", action="store_false",
                   help="skip the validation of each search (the specification requires it)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress of generation and keys on stderr (default: when stderr is a terminal)")
    p.add_argument("--json", action="store_true",
                   help="write the statistics as one JSON document on stdout (text to stderr)")
    p.set_defaults(func=cmd_graph500)
    return p


def _check_options(args) -> None:
    check_graph_options(args)
    check_cluster_options(args)
    if args.keys < 1:
        raise InvalidParameterError(f"--keys must be >= 1, got {args.keys}")
    if args.tasks is not None and args.tasks > (1 << args.scale):
        raise InvalidParameterError(
            f"--tasks must be between 1 and the number of vertices (2**{args.scale} = "
            f"{1 << args.scale}), got {args.tasks}"
        )


def cmd_graph500(args) -> int:
    """``taskbfs graph500``; returns the exit status."""
    import taskbfs as tb
    from taskbfs.graph500 import format_statistics, teps_statistics

    _check_options(args)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    text = sys.stderr if args.json else sys.stdout  # --json: stdout is the document alone
    t0 = time.perf_counter()
    src, dst = kronecker_edges(args.scale, args.edgefactor, args.seed, show)
    generation = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = tb.Graph.from_edges(src, dst, num_vertices=1 << args.scale, directed=False)
    construction = time.perf_counter() - t0
    del src, dst
    keys = tb.search_keys(graph, args.keys, seed=args.seed).tolist()
    if not keys:
        raise tb.InvalidParameterError("the graph has no vertex of degree >= 1 to search from")
    print(f"graph: Kronecker scale {args.scale}, edgefactor {args.edgefactor}, seed {args.seed}: "
          f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges (self-loops and duplicates dropped)",
          file=text)
    if len(keys) < args.keys:
        print(f"keys: only {len(keys)} vertices have degree >= 1, so {len(keys)} searches instead "
              f"of {args.keys}", file=text)

    with open_runtime(args, text) as rt:
        resources = rt.resources()
        print(f"cluster: {describe_cluster(rt)}", file=text)
        default_t = tb.default_tasks(rt, args.strategy)

        def search(key):
            return tb.bfs(graph, key, runtime=rt, **search_options(args))

        t0 = time.perf_counter()
        search(keys[0])
        print(f"warm-up: one untimed search from key {keys[0]} ({time.perf_counter() - t0:.2f} s: "
              f"numba compilation, partition placement); not in the statistics", file=text)
        times, edges, failures, validation = _run_keys(tb, graph, keys, search, args, show)

    print(_validation_line(args.validate, failures, len(keys), validation), file=text)
    tasks = min(args.tasks or default_t, graph.num_vertices)
    print(f"searches: tasks T = {tasks}, strategy {args.strategy}, direction {args.direction}; "
          f"num_mpi_processes below is the number of Dask workers", file=text)
    stats = teps_statistics(times, edges)
    stats.pop("nbfs")
    header = {
        "SCALE": args.scale,
        "edgefactor": args.edgefactor,
        "NBFS": len(keys),
        "graph_generation": generation,
        "num_mpi_processes": int(resources.get("workers", 1)),
        "construction_time": construction,
    }
    print(format_statistics({**header, **stats}), file=text)
    if args.json:
        document = {**header, **stats, "tasks": tasks, "strategy": args.strategy,
                    "validation": "skipped" if not args.validate else
                    ("failed" if failures else "passed"), "failed_keys": failures}
        json.dump(json_ready(document), sys.stdout, indent=1)
        print()
    return 1 if failures else 0


def _run_keys(tb, graph, keys, search, args, show: bool):
    """One timed search (and, unless disabled, one validation) per key."""
    times, edges, failures, validation = [], [], [], 0.0
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=len(keys), desc="graph500", unit=" key", file=sys.stderr, leave=False)
    try:
        for key in keys:
            result = search(key)
            times.append(result.elapsed)
            edges.append(result.traversed_edges)
            if args.validate:
                t0 = time.perf_counter()
                try:
                    tb.validate(graph, key, result.parents, levels=result.distances)
                except tb.ValidationError as exc:
                    failures.append(key)
                    print(f"validation FAILED for key {key}: {exc}", file=sys.stderr)
                validation += time.perf_counter() - t0
            if bar is not None:
                bar.set_postfix(key=key, MTEPS=f"{result.mteps:.1f}")
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return times, edges, failures, validation


def _validation_line(validate: bool, failures: list, nbfs: int, seconds: float) -> str:
    if not validate:
        return "validation: skipped (--no-validate); the specification requires it for a valid run"
    if failures:
        return (f"validation: FAILED for {len(failures)} of {nbfs} searches (keys {failures}); "
                f"{seconds:.3f} s, not part of TEPS")
    return f"validation: passed for {nbfs} of {nbfs} searches ({seconds:.3f} s, not part of TEPS)"
