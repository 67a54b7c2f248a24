"""How fast is taskbfs against its peers, at each scale and strategy?

Returns
    One CSV row per (scale, implementation): taskbfs with each ``--strategies`` (at
    ``--tasks``, default taskbfs's own T) and each peer of ``peers.py`` (scipy, the plain
    numba direction-optimizing loop, the plain GPU loop, GAP; a peer that cannot run here
    gets a row saying why): median wall ms per search, harmonic-mean MTEPS (Graph500
    traversed edges / seconds) and the ratio to scipy's.
Approach
    One Kronecker graph per scale and one set of search keys for everyone; every
    implementation warmed up once (untimed), then ``--repeats`` rounds in which each key is
    searched by every implementation in turn (the order rotating from key to key), so that
    a shared machine's noise hits them alike. taskbfs is timed around ``tb.bfs`` on the
    embedded runtime (what a user gets); a peer around its own search call, its structures
    built before. Every answer is checked against scipy's distances (GAP: its verifier).

    python benchmarks/compare.py --scale 16 18 20
    python benchmarks/compare.py --scale 22 24 --strategies gpu hybrid cpu   # a GPU machine
"""

from __future__ import annotations

import harness
import peers as peer_module

import taskbfs as tb


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(16, 18), keys=4, repeats=2)
    harness.add_runtime_options(p)
    p.add_argument("--strategies", nargs="+", default=None,
                   help="taskbfs strategies (default: cpu and hybrid; gpu too with a GPU)")
    p.add_argument("--tasks", type=int, default=None, help="T (default: taskbfs's default)")
    p.add_argument("--device-result", action="store_true",
                   help="also time each GPU-using strategy with device_result=True (the "
                        "result left on the GPU, checked after the clock stops)")
    p.add_argument("--peers", nargs="*", default=["scipy", "numba", "gpu loop", "gap"],
                   help="peers to time beside taskbfs")
    args = p.parse_args(argv)
    out = harness.Results("compare", args)
    rt = harness.runtime(args)
    try:
        gpu = harness.has_gpu(rt)
        strategies = args.strategies or (["cpu", "hybrid", "gpu"] if gpu else ["cpu", "hybrid"])
        for scale in args.scale:
            g = harness.graph(scale, args.edgefactor, args.seed)
            keys = harness.keys(g, args.keys)
            ref = harness.Reference(g)
            runners, ran = {}, {}
            for s in strategies:
                if s == "gpu" and not gpu:
                    out.add(scale=scale, impl="taskbfs", strategy=s, status="no GPU worker")
                    continue
                kw = dict(strategy=s, tasks=args.tasks, runtime=rt)
                harness.warm_up(g, keys[0], **kw)
                runners[f"taskbfs {s}"] = _taskbfs(g, kw, ran)
                if args.device_result and s != "cpu":
                    kw = dict(kw, device_result=True)
                    harness.warm_up(g, keys[0], **kw)
                    runners[f"taskbfs {s}+device_result"] = _taskbfs(g, kw, ran)
            for peer in peer_module.peers(args.peers):
                if peer.why_not:
                    out.add(scale=scale, impl=peer.name, status=peer.why_not)
                    continue
                peer.prepare(g)
                runners[peer.name] = peer.search
            seconds = {name: [] for name in runners}
            edges = {name: [] for name in runners}
            traversed = {}
            names = list(runners)
            for _ in range(args.repeats):
                for i, key in enumerate(keys):
                    for name in names[i % len(names):] + names[:i % len(names)]:
                        s, distances = runners[name](key)
                        if distances is not None:
                            ref.check(key, distances, name)
                        if key not in traversed:
                            traversed[key] = tb.traversed_edges(g, ref.distances(key))  # -1: unreached
                        seconds[name].append(s)
                        edges[name].append(traversed[key])
            base = harness.hmean_teps(edges.get("scipy", []), seconds.get("scipy", []))
            for name in names:
                impl, _, strategy = name.partition(" ") if name.startswith("taskbfs") else (name, "", "")
                mteps = harness.hmean_teps(edges[name], seconds[name]) / 1e6
                out.add(scale=scale, impl=impl, strategy=strategy,
                        tasks=ran.get(name, ""),
                        keys=len(keys), median_ms=1e3 * harness.median(seconds[name]),
                        mteps=mteps, vs_scipy=mteps * 1e6 / base if base == base else "",
                        status="ok")
    finally:
        harness.close(rt)
    out.save()
    return out.rows


def _taskbfs(g, kw, ran):
    name = f"taskbfs {kw['strategy']}" + ("+device_result" if kw.get("device_result") else "")

    def search(key):
        s, r = harness.timed_bfs(g, key, **kw)
        ran[name] = r.num_tasks  # the T that ran
        # a result left on the GPU is copied to the host for the check, after the clock
        return s, (r.to_cupy()[0].get() if kw.get("device_result") else r.distances)
    return search


if __name__ == "__main__":
    main()
