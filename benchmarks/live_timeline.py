"""What watching a search on the dashboard costs it: wall time, watched against unwatched.

The /taskbfs page's timeline grows while a search runs: while a page (or a reader of its
``data.json``) watches, the scheduler pulls the workers' new execution records every
``taskbfs.dashboard.LIVE_PULL_S``; while no one watches, nothing is pulled. This runs the
same searches unwatched, watched (a thread reading ``data.json`` every 0.25 s, the page's
refresh) and "read only" (watched, with the board's pulls switched off: what watching
cost before the live timeline), in rotating rounds in one process on one embedded
runtime, so that machine noise hits them alike, and prints the median wall per round and
the ratio watched / read only: the live timeline's cost.

Workloads: ``kronecker`` (Graph500 graph, ``--keys`` keys, T = ``--tasks``, the default
path: the search in one task) and, with ``--dispatch tasks``, every level as Dask tasks;
``path`` (a ``--path``-vertex path with ``taskbfs.search.compiled-level-edges`` = 0: one
level after another, ~2 records per level, the most records per second a search makes).

    python benchmarks/live_timeline.py --scale 18 --keys 8 --tasks 4 --repeats 5 \
        [--dispatch auto tasks] [--path 20000]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request

import dask
import numpy as np

import taskbfs as tb
from taskbfs import dashboard


class Watcher:
    """Reads ``data.json`` every ``every`` seconds in a thread while in a ``with`` block."""

    def __init__(self, url: str, every: float = 0.25):
        self.url, self.every = url, every
        self.reads = 0
        self.live_bars = 0  # the most bars a running search's timeline showed
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            with urllib.request.urlopen(self.url, timeout=30) as response:
                snap = json.loads(response.read())
            self.reads += 1
            if snap["state"] == "running" and snap["timeline"].get("live"):
                self.live_bars = max(self.live_bars, len(snap["timeline"]["start"]))
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def one_round(searches) -> float:
    """Wall seconds of the searches ``searches`` (callables), one after another."""
    start = time.perf_counter()
    for search in searches:
        search()
    return time.perf_counter() - start


MODES = ("unwatched", "watched", "read only")


def _watched_round(searches, url: str, pull: bool) -> tuple[float, int]:
    """A round read by a :class:`Watcher`; without ``pull`` the board pulls no records
    (what watching cost before the live timeline: serving data.json only)."""
    follow = dashboard.LiveRuns.follow
    if not pull:
        dashboard.LiveRuns.follow = lambda self, scheduler, program=None: None
    try:
        with Watcher(url) as watcher:
            return one_round(searches), watcher.live_bars
    finally:
        dashboard.LiveRuns.follow = follow


def measure(name: str, searches, url: str, repeats: int) -> dict:
    """Median wall of a round in each of :data:`MODES` (the embedded cluster's board is
    in this process), rounds rotating the modes' order."""
    one_round(searches)  # warm-up
    walls = {mode: [] for mode in MODES}
    live_bars = 0
    for i in range(repeats):
        for mode in MODES[i % 3:] + MODES[:i % 3]:
            if mode == "unwatched":
                walls[mode].append(one_round(searches))
            else:
                wall, bars = _watched_round(searches, url, pull=mode == "watched")
                walls[mode].append(wall)
                live_bars = max(live_bars, bars)
    med = {mode: float(np.median(v)) for mode, v in walls.items()}
    ratios = [w / r for w, r in zip(walls["watched"], walls["read only"], strict=True)]
    return {"workload": name, **{f"{m}_s": med[m] for m in MODES},
            "ratio": med["watched"] / med["read only"], "ratio_min": min(ratios),
            "ratio_max": max(ratios), "live_bars": live_bars}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--dispatch", nargs="+", default=["auto"], choices=["auto", "tasks"])
    parser.add_argument("--path", type=int, default=0, help="also a path of this many vertices")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    graph = tb.kronecker(args.scale, seed=1)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=1)]
    rows = []
    with tb.Runtime() as rt:
        url = rt.dashboard_link.rsplit("/", 1)[0] + "/taskbfs/data.json"
        for dispatch in args.dispatch:
            searches = [lambda k=k, d=dispatch: tb.bfs(graph, k, tasks=args.tasks, runtime=rt,
                                                       dispatch=d) for k in keys]
            rows.append(measure(f"kronecker {args.scale}, {args.keys} keys, T={args.tasks}, "
                                f"dispatch={dispatch}", searches, url, args.repeats))
        if args.path:
            path = tb.Graph.from_edges(np.arange(args.path - 1), np.arange(1, args.path))
            with dask.config.set({"taskbfs.search.compiled-level-edges": 0}):
                rows.append(measure(f"path {args.path}, T={args.tasks}, level by level",
                                    [lambda: tb.bfs(path, 0, tasks=args.tasks, runtime=rt)],
                                    url, args.repeats))
    print("| workload | unwatched s | read only s | watched s | watched / read only "
          "(min..max of rounds) | live bars |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['unwatched_s']:.3f} | {r['read only_s']:.3f} | "
              f"{r['watched_s']:.3f} | {r['ratio']:.3f} ({r['ratio_min']:.2f}..{r['ratio_max']:.2f}) "
              f"| {r['live_bars']} |")


if __name__ == "__main__":
    main()
