"""Searches across worker processes: memory, strong and weak scaling, bytes per level.

Returns
    Prints one row per run (and a JSON line ``ROW {...}`` for each):

    * ``--what memory``: per scale, the graph searched two ways on a LocalCluster of
      ``--workers`` worker processes: ``in-client`` (``tb.kronecker(scale)`` built here,
      its slices scattered from here) and ``distributed`` (``tb.kronecker(scale,
      runtime=client)`` built on the workers), both searched with the barrier split per
      owner (``bfs.owners``; the distributed one keeps its result there): wall time,
      peak RSS of the client and of each worker, whether the parents pass the Graph500
      rules (checked range by range on the workers for the distributed graph);
    * ``--what scaling``: strong scaling (one scale over 1, 2, 4 worker processes) and
      weak scaling (scale + 1 per doubling) of distributed searches: median wall time
      around ``tb.bfs`` over ``--repeat`` searches from the graph's highest-degree vertex
      (after one warm-up search), and the bytes the levels moved between workers
      (``BFSResult.exchange``, summed; the per-level table of the last search with
      ``--levels``).
Approach
    Every row runs in a fresh subprocess (``--child``) so that ``ru_maxrss`` is that run's
    alone; a scale-8 search the same way first loads the compiled code everywhere. Ranges
    T = ``--tasks`` (>= the workers). Every search is validated.

    PYTHONPATH=$PWD python benchmarks/distributed_search.py --what memory --scales 16 18 20
    PYTHONPATH=$PWD python benchmarks/distributed_search.py --what scaling --scale 18 --levels
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cluster(workers: int):
    from distributed import Client, LocalCluster

    import taskbfs as tb

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = Client(cluster, set_as_default=False)
    return cluster, client, tb.Runtime(client)


def _exchange_totals(result) -> dict:
    ex = getattr(result, "exchange", None)  # none when the search ran as one task
    if ex is None:
        return {}
    cols = ["pieces_remote_bytes", "pieces_local_bytes", "bitmap_remote_bytes",
            "frontier_remote_bytes"]
    return {c: int(ex[c].sum()) for c in cols}


def memory_child(scale: int, way: str, workers: int, tasks: int) -> dict:
    import numpy as np

    import taskbfs as tb

    cluster, client, rt = _cluster(workers)
    where = rt if way == "distributed" else None
    warm = tb.kronecker(8, 16, seed=2, runtime=where)
    tb.bfs(warm, 0, runtime=rt, tasks=tasks)
    before = _peak_mib()
    graph = tb.kronecker(scale, 16, seed=1, runtime=where)
    source = int(np.argmax(graph.degrees()))
    start = time.perf_counter()
    result = tb.bfs(graph, source, runtime=rt, tasks=tasks)
    search = time.perf_counter() - start
    tb.validate(graph, source, result.parents, levels=result.distances)
    row = {"scale": scale, "way": way, "workers": workers, "tasks": tasks, "search_s": search,
           "client_before_mib": before, "client_peak_mib": _peak_mib(),
           "workers_peak_mib": sorted(client.run(_peak_mib).values()),
           "edges": graph.num_edges, "reached": result.reached, "valid": True}
    if way == "distributed":
        row.update(_exchange_totals(result))
    rt.close()
    client.close()
    cluster.close()
    return row


def scaling_child(scale: int, workers: int, tasks: int, repeat: int, levels: bool,
                  dispatch: str) -> dict:
    import numpy as np

    import taskbfs as tb

    cluster, client, rt = _cluster(workers)
    tb.bfs(tb.kronecker(8, 16, seed=2, runtime=rt), 0, runtime=rt, tasks=tasks)
    graph = tb.kronecker(scale, 16, seed=1, runtime=rt, ranges=tasks)
    source = int(np.argmax(graph.degrees()))
    tb.bfs(graph, source, runtime=rt, tasks=tasks, dispatch=dispatch)  # the ranges' first use
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = tb.bfs(graph, source, runtime=rt, tasks=tasks, dispatch=dispatch)
        walls.append(time.perf_counter() - start)
        tb.validate(graph, source, result.parents, levels=result.distances)
    row = {"scale": scale, "workers": workers, "tasks": tasks, "dispatch": dispatch,
           "walls_s": walls,
           "median_s": float(np.median(walls)), "edges": graph.num_edges,
           "vertices": graph.num_vertices, "levels": len(result.levels),
           "workers_peak_mib": sorted(client.run(_peak_mib).values()),
           **_exchange_totals(result)}
    if levels and "pieces_remote_bytes" in row:
        row["per_level"] = result.exchange.to_dict("list")
        row["per_level"]["edges_examined"] = result.levels["edges_examined"].tolist()
        row["per_level"]["frontier_size"] = result.levels["frontier_size"].tolist()
    rt.close()
    client.close()
    cluster.close()
    return row


def _run(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode:
        errors = [line for line in out.stderr.splitlines() if "Error" in line] or ["?"]
        return {"error": errors[-1]}
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("ROW "))[4:])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("memory", "scaling"), default="scaling")
    parser.add_argument("--scales", type=int, nargs="+", default=[16, 18])
    parser.add_argument("--scale", type=int, default=16, help="strong scaling's scale; weak "
                        "scaling starts there with one worker")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--levels", action="store_true")
    parser.add_argument("--dispatch", nargs="+", default=["auto", "tasks"],
                        help="auto: what a user gets (one worker: the search as one task); "
                        "tasks: levels dispatched, the owner barrier on any W")
    parser.add_argument("--child", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "memory":
            row = memory_child(int(rest[0]), rest[1], int(rest[2]), int(rest[3]))
        else:
            row = scaling_child(int(rest[0]), int(rest[1]), int(rest[2]), int(rest[3]),
                                rest[4] == "1", rest[5])
        print("ROW " + json.dumps(row))
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; Kronecker edgefactor 16, seed 1; one fresh "
          f"process per row; T = {args.tasks}; RSS in MiB")
    if args.what == "memory":
        for scale in args.scales:
            for way in ("in-client", "distributed"):
                row = _run(["--child", "memory", str(scale), way, str(max(args.workers)),
                            str(args.tasks)])
                print(f"{scale:>3} {way:>12} " + json.dumps(row), flush=True)
        return
    runs = [("strong", args.scale, w) for w in args.workers]
    runs += [("weak", args.scale + w.bit_length() - 1, w) for w in args.workers if w > 1]
    for kind, scale, workers in runs:
        for dispatch in args.dispatch:
            row = _run(["--child", "scaling", str(scale), str(workers), str(args.tasks),
                        str(args.repeat), "1" if args.levels else "0", dispatch])
            print(f"{kind:>6} scale {scale} W {workers} {dispatch}: " + json.dumps(row),
                  flush=True)


if __name__ == "__main__":
    main()
