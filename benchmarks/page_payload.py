"""What the live page's payload of a finished search costs the client: each level summary
as ``LevelSummary.to_message`` made it (every field, T-sized arrays as lists) against the
part the page draws (``taskbfs.dashboard._drawn``), on a deep path (100,000 levels, the
page gets the first 4,096) searched with ``tb.bfs``; best of 5, and the pickled bytes.

    PYTHONPATH=$PWD python benchmarks/page_payload.py
"""

from __future__ import annotations

import importlib
import time

import numpy as np
from distributed.protocol.pickle import dumps

import taskbfs as tb
from taskbfs.dashboard import FINISHED_MAX_ROWS, _drawn

core = importlib.import_module("taskbfs.bfs.core")  # tb.bfs hides the module's name


def best(f, k: int = 5) -> float:
    times = []
    for _ in range(k):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    captured = []
    send = core.send_finished
    core.send_finished = lambda client, program, records, summaries, steps=None: (
        captured.append(summaries), send(client, program, records, summaries, steps))
    n = 100_000
    src = np.arange(n - 1)
    graph = tb.Graph.from_edges(src, src + 1, num_vertices=n)
    with tb.Runtime() as rt:
        tb.bfs(graph, 0, runtime=rt)
        time.sleep(1)
    summaries = captured[-1][:FINISHED_MAX_ROWS]
    for name, form in (("to_message", lambda s: s.to_message()), ("drawn", _drawn)):
        made = best(lambda form=form: [form(s) for s in summaries])
        payload = {"summaries": [form(s) for s in summaries]}
        pickled = best(lambda payload=payload: dumps(payload))
        print(f"{name:10s} {len(summaries)} summaries: made {made * 1e3:6.2f} ms, "
              f"pickled {pickled * 1e3:6.2f} ms, {len(dumps(payload)):,} bytes")


if __name__ == "__main__":
    main()
