"""Which λ should the hybrid strategy use on this machine (frontier > λ → GPU)?

Returns
    CSV rows of three kinds: ``step``: per device and frontier-size bin (powers of two),
    the median duration of one step task over every step of ``--keys`` searches;
    ``crossover``: the smallest bin above which the GPU's steps are faster in every bin
    (the paper's λ, its Fig. 4), where there is a GPU; ``lambda``: per λ of ``--lams``, the
    hybrid strategy's median wall ms around ``tb.bfs``, MTEPS, and the share of its steps
    that ran on the GPU.
Approach
    The step durations come from the public trace (``r.trace``: one row per step, its
    frontier size, device, start and stop) of searches with ``dispatch="tasks"`` (every
    step a task of its own, so that its start and stop are its own), strategy cpu and
    strategy gpu, ``--tasks`` T so that the steps span many sizes. The λ sweep runs the
    default dispatch, λ values interleaved key by key, every answer checked against scipy.
    Without a GPU worker every step runs on the CPU and λ changes nothing: the rows say so.

    python benchmarks/lam.py --scale 18 --tasks 16
    python benchmarks/lam.py --scale 22 --tasks 64 --lams 300 1000 3000 10000   # a GPU machine
"""

from __future__ import annotations

import harness
import numpy as np
import pandas as pd


def step_times(g, keys, strategy, tasks, rt) -> pd.DataFrame:
    """Every step of a search per key: size, device, seconds (dispatched: its own span)."""
    frames = []
    harness.warm_up(g, keys[0], strategy=strategy, tasks=tasks, dispatch="tasks", runtime=rt)
    for key in keys:
        _, r = harness.timed_bfs(g, key, strategy=strategy, tasks=tasks, dispatch="tasks",
                                 runtime=rt)
        t = r.trace
        t = t[t["name"] == "bfs_step"]
        frames.append(pd.DataFrame({"size": t["size"], "device": t["device"],
                                    "seconds": t["stop"] - t["start"]}))
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(18,), keys=4, repeats=2)
    harness.add_runtime_options(p)
    p.add_argument("--tasks", type=int, default=16, help="T of every search here")
    p.add_argument("--lams", type=float, nargs="+", default=[100, 1000, 10000, 100000])
    args = p.parse_args(argv)
    out = harness.Results("lam", args)
    rt = harness.runtime(args)
    try:
        gpu = harness.has_gpu(rt)
        for scale in args.scale:
            g = harness.graph(scale, args.edgefactor, args.seed)
            keys = harness.keys(g, args.keys)
            ref = harness.Reference(g)
            steps = pd.concat([step_times(g, keys, s, args.tasks, rt)
                               for s in (["cpu", "gpu"] if gpu else ["cpu"])])
            steps = steps[steps["size"] > 0]
            steps["bin"] = (2 ** np.floor(np.log2(steps["size"]))).astype(int)
            medians = steps.groupby(["device", "bin"])["seconds"].agg(["median", "size"])
            for (device, lo), row in medians.iterrows():
                out.add(scale=scale, kind="step", device=device, size_lo=lo, size_hi=2 * lo - 1,
                        steps=int(row["size"]), median_ms=1e3 * row["median"], tasks=args.tasks)
            if gpu:
                out.add(scale=scale, kind="crossover", lam=_crossover(medians["median"]),
                        tasks=args.tasks)
            walls = {lam: [] for lam in args.lams}
            edges = {lam: [] for lam in args.lams}
            share = {lam: [] for lam in args.lams}
            for lam in args.lams:
                harness.warm_up(g, keys[0], strategy="hybrid", lam=lam, tasks=args.tasks, runtime=rt)
            for _ in range(args.repeats):
                for i, key in enumerate(keys):
                    for lam in (args.lams if i % 2 == 0 else args.lams[::-1]):
                        s, r = harness.timed_bfs(g, key, strategy="hybrid", lam=lam,
                                                 tasks=args.tasks, runtime=rt)
                        ref.check(key, r.distances, f"hybrid lam={lam:g}")
                        walls[lam].append(s)
                        edges[lam].append(r.traversed_edges)
                        devices = r.trace["device"]
                        share[lam].append(float((devices != "smp").mean()) if len(devices) else 0.0)
            for lam in args.lams:
                out.add(scale=scale, kind="lambda", lam=lam, tasks=args.tasks, keys=len(keys),
                        median_ms=1e3 * harness.median(walls[lam]),
                        mteps=harness.hmean_teps(edges[lam], walls[lam]) / 1e6,
                        gpu_share=float(np.mean(share[lam])),
                        note="" if gpu else "no GPU worker: every step on the CPU")
    finally:
        harness.close(rt)
    out.save()
    return out.rows


def _crossover(medians: pd.Series):
    """The smallest size bin from which the GPU's median step is below the CPU's in every
    bin both devices ran ('' when it never is)."""
    table = medians.unstack("device")
    cpu = next((c for c in table.columns if c == "smp"), None)
    gpus = [c for c in table.columns if c != "smp"]
    if cpu is None or not gpus:
        return ""
    both = table[[cpu, gpus[0]]].dropna()
    faster = (both[gpus[0]] < both[cpu]).to_numpy()
    for i in range(len(faster)):
        if faster[i:].all():
            return int(both.index[i])
    return ""


if __name__ == "__main__":
    main()
