"""How long does a search take on a deep graph: a long path, a wide grid?

Returns
    One CSV row per graph: its vertices and levels, taskbfs's median wall ms around
    ``tb.bfs`` over ``--repeats`` warm calls, scipy's ``breadth_first_order`` median on the
    same CSR, their ratio, and the T that ran.
Approach
    A path of n vertices has n levels of one vertex each; a k x k grid has 2k - 1 levels of
    up to k vertices: the level loop's fixed cost per level, not the kernels, sets the
    time. The source is vertex 0 (an end of the path, a corner of the grid); the graph is
    placed by an untimed first search; taskbfs's distances are checked against scipy's and
    its parents against the Graph500 rules (``tb.validate``).

    python benchmarks/deep_graphs.py --paths 100000 1000000 --grids 1000
"""

from __future__ import annotations

import harness
import numpy as np
import peers

import taskbfs as tb


def path_graph(n: int) -> tb.Graph:
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n), num_vertices=n)


def grid_graph(k: int) -> tb.Graph:
    ids = np.arange(k * k).reshape(k, k)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return tb.Graph.from_edges(src, dst, num_vertices=k * k)


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, repeats=3)
    harness.add_runtime_options(p)
    p.add_argument("--paths", type=int, nargs="*", default=[10_000, 100_000])
    p.add_argument("--grids", type=int, nargs="*", default=[300])
    p.add_argument("--tasks", type=int, default=None, help="T (default: taskbfs's default)")
    args = p.parse_args(argv)  # --scale/--keys/--edgefactor do not apply here
    out = harness.Results("deep_graphs", args)
    rt = harness.runtime(args)
    graphs = [(f"path {n:,}", lambda n=n: path_graph(n)) for n in args.paths]
    graphs += [(f"grid {k}x{k}", lambda k=k: grid_graph(k)) for k in args.grids]
    try:
        for name, make in graphs:
            g = make()
            ref = harness.Reference(g)
            scipy = peers.ScipyPeer()
            scipy.prepare(g)
            harness.warm_up(g, 0, tasks=args.tasks, runtime=rt)
            walls, scipy_walls = [], []
            for _ in range(args.repeats):
                s, r = harness.timed_bfs(g, 0, tasks=args.tasks, runtime=rt)
                walls.append(s)
                scipy_walls.append(scipy.search(0)[0])
            ref.check(0, r.distances, name)
            tb.validate(g, 0, r.parents, levels=r.distances)
            w, sw = harness.median(walls), harness.median(scipy_walls)
            out.add(graph=name, vertices=g.num_vertices, levels=r.num_levels, tasks=r.num_tasks,
                    median_ms=1e3 * w, scipy_ms=1e3 * sw, vs_scipy=sw / w)
    finally:
        harness.close(rt)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
