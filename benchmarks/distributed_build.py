"""A Kronecker graph built on the workers against one built on the client: time and memory.

Returns
    Prints one row per (scale, way of building): the wall time of the build call, the
    client process's peak RSS before the build and after it (and a first search), the
    workers' peak RSS, and the wall time of that first search (which places the graph).
    Ways:

    * ``client``: ``tb.kronecker(scale)`` builds the CSR here, then ``tb.bfs`` on a
      ``LocalCluster`` of 2 worker processes scatters its slices from here (today's path);
    * ``embedded``: ``tb.kronecker(scale, runtime=rt)`` on ``tb.Runtime()``, the embedded
      in-process cluster (the workers' memory is the client's);
    * ``processes``: ``tb.kronecker(scale, runtime=client)`` on a ``LocalCluster`` of 2
      worker processes: chunks generated, exchanged and built there.
Approach
    Each (scale, way) runs in a fresh subprocess (``--child``), so that ``ru_maxrss``, a
    process's lifetime peak, is that run's alone; a build and search of a scale-6 graph
    the same way first loads the compiled code in every process. The workers' peaks come
    from ``client.run``. Searches use the default T and ``dispatch="auto"``.

    PYTHONPATH=$PWD python benchmarks/distributed_build.py --scales 16 18 20 22
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

WAYS = ("client", "embedded", "processes")


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(scale: int, way: str) -> dict:
    from distributed import Client, LocalCluster

    import taskbfs as tb

    if way == "embedded":
        cluster, client, rt = None, None, tb.Runtime(dashboard_address=None)
    else:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address="127.0.0.1:0")
        client = Client(cluster, set_as_default=False)
        rt = tb.Runtime(client)
    where = None if way == "client" else rt
    tb.bfs(tb.kronecker(6, 16, seed=2, runtime=where), 0, runtime=rt)  # code loaded everywhere
    before = _peak_mib()
    start = time.perf_counter()
    graph = tb.kronecker(scale, 16, seed=1, runtime=where)
    build = time.perf_counter() - start
    start = time.perf_counter()
    result = tb.bfs(graph, 1, runtime=rt)
    search = time.perf_counter() - start
    reached = result.reached
    workers = [] if client is None else sorted(client.run(_peak_mib).values())
    row = {"scale": scale, "way": way, "build_s": build, "search_s": search,
           "client_before_mib": before, "client_peak_mib": _peak_mib(),
           "workers_peak_mib": workers, "edges": graph.num_edges, "reached": reached}
    rt.close()
    if client is not None:
        client.close()
        cluster.close()
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[16, 18, 20])
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("ROW " + json.dumps(child(int(args.child[0]), args.child[1])))
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; Kronecker edgefactor 16, seed 1; one fresh "
          "process per row; RSS peaks in MiB")
    print(f"{'scale':>5} {'way':>9} {'edges':>11} {'build s':>8} {'search s':>8} "
          f"{'client before':>13} {'client peak':>11} {'workers peak':>14}")
    for scale in args.scales:
        for way in args.ways:
            out = subprocess.run([sys.executable, __file__, "--child", str(scale), way],
                                 capture_output=True, text=True, check=True).stdout
            row = json.loads(next(line for line in out.splitlines() if line.startswith("ROW "))[4:])
            workers = "/".join(f"{m:.0f}" for m in row["workers_peak_mib"]) or "-"
            print(f"{scale:>5} {way:>9} {row['edges']:>11,} {row['build_s']:>8.2f} "
                  f"{row['search_s']:>8.2f} {row['client_before_mib']:>13.0f} "
                  f"{row['client_peak_mib']:>11.0f} {workers:>14}", flush=True)


if __name__ == "__main__":
    main()
