"""What a scipy or networkx user pays: tb.bfs on a scipy matrix or networkx graph, and the
networkx backend against networkx itself.

For a Kronecker graph of the given scale, on the embedded default cluster, wall time
around each public call, paired per key (median over the keys):

* ``tb.bfs(A)`` with ``A`` a scipy CSR matrix: the first call (conversion, placement), and
  later calls (the converted graph is kept with the matrix: a CRC-32 of its arrays per call)
  against ``tb.bfs(g)`` on the converted Graph;
* the same for a networkx graph (``tb.bfs(G)``; kept in ``G.__networkx_cache__``);
* ``nx.bfs_edges(G, s)`` and ``nx.single_source_shortest_path_length(G, s)`` with and
  without ``backend="taskbfs"`` (the backend must be installed: ``pip install -e .``
  registers its entry point), results compared.

    python benchmarks/pydata_inputs.py --scale 16 --keys 8
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--no-networkx", action="store_true")
    args = parser.parse_args()

    graph = tb.kronecker(args.scale, seed=1)
    keys = tb.search_keys(graph, args.keys, seed=2).tolist()
    A = graph.to_scipy()
    rt = tb.Runtime()
    tb.bfs(graph, keys[0], runtime=rt)  # warm-up: kernels
    _, first = timed(lambda: tb.bfs(A, keys[0], runtime=rt))
    converted = tb.graph.as_graph(A)
    rows = {"tb.bfs(scipy A)": [], "tb.bfs(Graph of A)": []}
    for k in keys:
        rows["tb.bfs(scipy A)"].append(timed(lambda k=k: tb.bfs(A, k, runtime=rt))[1])
        rows["tb.bfs(Graph of A)"].append(timed(lambda k=k: tb.bfs(converted, k, runtime=rt))[1])
    print(f"scale {args.scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges, "
          f"{args.keys} keys; wall ms, median")
    print(f"  tb.bfs(scipy A), first call (conversion + placement): {first * 1e3:9.1f}")
    for name, times in rows.items():
        print(f"  {name:<52}{np.median(times) * 1e3:9.1f}")
    if args.no_networkx:
        return
    import networkx as nx

    nx.config.warnings_to_ignore.add("cache")
    G, build = timed(lambda: nx.from_scipy_sparse_array(A))
    _, nx_first = timed(lambda: tb.bfs(G, keys[0], runtime=rt))
    print(f"  nx.from_scipy_sparse_array (not timed below): {build * 1e3:9.1f}")
    print(f"  tb.bfs(networkx G), first call (conversion + placement): {nx_first * 1e3:9.1f}")
    nx.config.backends.taskbfs.runtime = rt
    list(nx.bfs_edges(G, keys[0], backend="taskbfs"))  # converts once (networkx's cache)
    pairs = {"tb.bfs(networkx G)": [], "nx.bfs_edges": [], "nx.bfs_edges, backend=taskbfs": [],
             "nx.sssp_length": [], "nx.sssp_length, backend=taskbfs": []}
    for k in keys:
        pairs["tb.bfs(networkx G)"].append(timed(lambda k=k: tb.bfs(G, k, runtime=rt))[1])
        theirs, t = timed(lambda k=k: list(nx.bfs_edges(G, k)))
        pairs["nx.bfs_edges"].append(t)
        ours, t = timed(lambda k=k: list(nx.bfs_edges(G, k, backend="taskbfs")))
        pairs["nx.bfs_edges, backend=taskbfs"].append(t)
        assert ours == theirs
        theirs, t = timed(lambda k=k: nx.single_source_shortest_path_length(G, k))
        pairs["nx.sssp_length"].append(t)
        ours, t = timed(lambda k=k: nx.single_source_shortest_path_length(G, k, backend="taskbfs"))
        pairs["nx.sssp_length, backend=taskbfs"].append(t)
        assert ours == theirs
    for name, times in pairs.items():
        print(f"  {name:<52}{np.median(times) * 1e3:9.1f}")
    rt.close()


if __name__ == "__main__":
    main()
