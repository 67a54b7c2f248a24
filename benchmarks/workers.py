"""What do several worker processes, or several GPUs, give a search of a graph built on them?

Returns
    One CSV row per (cluster, scale, strategy, dispatch): the workers (CPU worker processes,
    GPU workers), the build's wall seconds (``tb.kronecker(scale, runtime=rt)``: the graph
    generated on the workers, never in this process), the median wall ms around ``tb.bfs``
    over the keys and repeats, harmonic-mean MTEPS, ms per level, and the bytes the levels
    moved between workers (``r.exchange``, its ``*remote_bytes`` columns summed; 0 when a
    search ran as one task), and where the levels' time went on the owners (``<part>_ms``:
    :data:`PARTS`, the slowest owner's time in each part, summed over the levels), and
    ``assembly_ms``, the span of the tasks that wrote the result (``r.assembly_seconds``);
    ``lead_ms`` from the call's entry to its first level's start, ``tail_ms`` from its
    last level's end to the call's return (``r.levels``).
Approach
    ``--workers W ...``: a ``LocalCluster`` of W one-thread worker processes on 127.0.0.1.
    ``--gpus G ...``: a scheduler, one CPU worker and G GPU workers as ``dask`` CLI
    processes on 127.0.0.1 (deploy/README.md), each GPU worker pinned with
    ``CUDA_VISIBLE_DEVICES`` and ``--resources GPU=1`` (``--share``: every GPU worker on
    the first GPU, the code path of a multi-GPU node on one GPU; ``--simulate``: numba's CUDA
    simulator, a check of the path, not a measurement). ``--weak`` adds scale + log2(count)
    for each count above 1. Every search's parents pass ``tb.validate`` (run on the workers
    for a graph kept there); up to ``--check-scale`` its distances are also compared with
    scipy's on the same graph built here (the generator gives the same graph anywhere).

    python benchmarks/workers.py --workers 1 2 --scale 16
    python benchmarks/workers.py --gpus 1 2 4 --scale 26 --keys 8 --strategies gpu hybrid
"""

from __future__ import annotations

import contextlib
import os

import harness
import numpy as np

import taskbfs as tb

#: The parts of an owner's level that ``r.exchange`` times (the slowest owner's, summed
#: over the levels; median over the searches).
PARTS = ("queued", "opening", "steps", "pieces", "barrier", "least_waited")


@contextlib.contextmanager
def cpu_cluster(workers: int):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield client


def measure(out, client, label: dict, scale: int, args) -> None:
    import time

    with tb.Runtime(client) as rt:
        start = time.perf_counter()
        g = harness.graph(scale, args.edgefactor, args.seed, runtime=rt)
        build = time.perf_counter() - start
        keys = harness.keys(g, args.keys)
        ref = (harness.Reference(harness.graph(scale, args.edgefactor, args.seed))
               if scale <= args.check_scale else None)
        for strategy in args.strategies:
            if strategy in ("gpu",) and not label.get("gpu_workers"):
                continue
            for dispatch in args.dispatch:
                kw = dict(strategy=strategy, dispatch=dispatch, tasks=args.tasks, runtime=rt)
                harness.warm_up(g, keys[0], **kw)
                walls, edges, per_level, assembly, lead, tail, moved = [], [], [], [], [], [], 0
                parts = {phase: [] for phase in PARTS}
                for _ in range(args.repeats):
                    for key in keys:
                        s, r = harness.timed_bfs(g, key, **kw)
                        tb.validate(g, key, r.parents, levels=r.distances)
                        if ref is not None:
                            ref.check(key, r.distances, f"{strategy} {dispatch}")
                        walls.append(s)
                        edges.append(r.traversed_edges)
                        per_level.append(s / max(1, len(r.levels)))
                        assembly.append(r.assembly_seconds)
                        # levels' times are seconds since the call's start
                        lead.append(float(r.levels["start"].iloc[0]))
                        tail.append(s - float(r.levels["stop"].iloc[-1]))
                        ex = getattr(r, "exchange", None)
                        if ex is not None:
                            moved += int(sum(ex[c].sum() for c in ex.columns if c.endswith("remote_bytes")))
                            for phase in PARTS:
                                if f"{phase}_seconds" in ex.columns:
                                    parts[phase].append(ex[f"{phase}_seconds"].sum())
                out.add(**label, scale=scale, strategy=strategy, dispatch=dispatch,
                        tasks=r.num_tasks, keys=len(keys), build_s=build,
                        median_ms=1e3 * harness.median(walls),
                        mteps=harness.hmean_teps(edges, walls) / 1e6,
                        ms_per_level=1e3 * harness.median(per_level),
                        assembly_ms=1e3 * harness.median(assembly),
                        lead_ms=1e3 * harness.median(lead), tail_ms=1e3 * harness.median(tail),
                        bytes_moved_per_search=moved // max(1, len(walls)),
                        **{f"{phase}_ms": 1e3 * harness.median(v) for phase, v in parts.items() if v},
                        checked="scipy + rules" if ref is not None else "rules")


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(16,), keys=4, repeats=1)
    p.add_argument("--workers", type=int, nargs="*", default=None,
                   help="CPU worker process counts (default 1 2 without --gpus)")
    p.add_argument("--gpus", type=int, nargs="*", default=None, help="GPU worker counts")
    p.add_argument("--share", action="store_true", help="every GPU worker on the first GPU")
    p.add_argument("--simulate", action="store_true", help="GPU workers under the CUDA simulator")
    p.add_argument("--cpu-threads", type=int, default=None,
                   help="threads of the CPU worker beside GPU workers (default cores - GPUs)")
    p.add_argument("--weak", action="store_true", help="also scale + log2(count) per count")
    p.add_argument("--strategies", nargs="+", default=None,
                   help="default: cpu with --workers; gpu and hybrid with --gpus")
    p.add_argument("--dispatch", nargs="+", default=["auto", "tasks"], choices=("auto", "tasks"))
    p.add_argument("--tasks", type=int, default=None, help="T (default: taskbfs's default)")
    p.add_argument("--check-scale", type=int, default=20,
                   help="compare with scipy up to this scale (the graph built here too)")
    args = p.parse_args(argv)
    if args.gpus and not (args.share or args.simulate) and max(args.gpus) > harness.gpu_count():
        p.error(f"{max(args.gpus)} GPU workers asked, {harness.gpu_count()} GPUs found "
                "(--share or --simulate to run several on fewer)")
    out = harness.Results("workers", args)
    configs = []
    for w in args.workers if args.workers is not None else ([] if args.gpus else [1, 2]):
        configs.append(({"cpu_workers": w, "gpu_workers": 0}, lambda w=w: cpu_cluster(w), w))
    for gpus in args.gpus or []:
        threads = args.cpu_threads or max(1, (os.cpu_count() or 2) - gpus)
        label = {"cpu_workers": 1, "gpu_workers": gpus,
                 "gpu_mode": "simulated" if args.simulate else "shared" if args.share else ""}
        configs.append((label, lambda gpus=gpus, threads=threads: harness.cluster(
            gpus, threads, args.share, args.simulate), gpus))
    for label, start, count in configs:
        if args.strategies is None:
            args.strategies = ["gpu", "hybrid"] if args.gpus else ["cpu"]
        with start() as client:
            scales = list(args.scale)
            if args.weak and count > 1:
                scales += [s + int(np.log2(count)) for s in args.scale]
            for scale in scales:
                measure(out, client, label, scale, args)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
