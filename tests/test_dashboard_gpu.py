"""The live page with a GPU worker: GPU steps are drawn as GPU, also where they run inside
the search's one task (the default with one GPU worker: T = 1, every level included).

Without a GPU this module re-runs itself under numba's CUDA simulator
(``tests/gpu_support.py``)."""

from __future__ import annotations

import json
import time
import urllib.request

import numpy as np
import pytest
from gpu_support import run_module_under_simulator

import taskbfs as tb
from taskbfs.dashboard import DATA
from taskbfs.kernels.gpu import gpu_available

IN_PROCESS = gpu_available()
needs_gpu = pytest.mark.skipif(not IN_PROCESS, reason="numba.cuda is not usable in this process; "
                               "test_in_simulator_subprocess runs these under NUMBA_ENABLE_CUDASIM=1")


@pytest.mark.gpu
@pytest.mark.skipif(IN_PROCESS, reason="the GPU tests run in this process")
def test_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=600)


def _grid(n: int) -> tb.Graph:
    idx = np.arange(n * n).reshape(n, n)
    return tb.Graph.from_edges(np.concatenate([idx[:-1, :].ravel(), idx[:, :-1].ravel()]),
                               np.concatenate([idx[1:, :].ravel(), idx[:, 1:].ravel()]))


def _finished(base: str, program: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{base}{DATA}?program={program}", timeout=10) as response:
            snap = json.loads(response.read())
        if snap["timeline"]["rows"] or time.monotonic() > deadline:
            return snap
        time.sleep(0.05)


@needs_gpu
@pytest.mark.parametrize("strategy", ["gpu", "hybrid"])
def test_gpu_steps_of_a_one_task_search_are_drawn_as_gpu(strategy):
    graph = _grid(8)
    with tb.Runtime(threads=1, gpus=1) as rt:
        base = rt.dashboard_link.rsplit("/", 1)[0]
        result = tb.bfs(graph, 0, runtime=rt, strategy=strategy, lam=2)
        program = result.placements[0]["key"].split("-", 1)[1].rsplit("-", 1)[0]
        snap = _finished(base, program)
    levels = result.levels
    assert result.trace["included"].all() and levels["tasks_gpu"].sum() > 0
    assert snap["state"] == "done"
    assert snap["levels"]["level"] == levels["level"].tolist()
    assert snap["levels"]["gpu"] == levels["tasks_gpu"].tolist()
    assert snap["levels"]["cpu"] == levels["tasks_cpu"].tolist()
    line = snap["timeline"]
    steps = [(lv, d) for lv, d, n in zip(line["level"], line["device"], line["name"], strict=True)
             if n == "bfs_step"]
    on_gpu = set(levels.loc[levels["tasks_gpu"] > 0, "level"])
    assert {lv for lv, d in steps if d == "GPU"} == on_gpu  # never drawn as CPU
    assert all(d == "CPU" for lv, d in steps if lv not in on_gpu)
    assert any(label.startswith("GPU") for label in line["rows"])
    trace = result.trace  # r.trace too: each step on the device that ran it
    assert set(trace.loc[trace["device"] == "cuda", "level"]) == on_gpu
    assert set(trace.loc[trace["device"] == "smp", "level"]).isdisjoint(on_gpu)
    assert set(trace["level"]) == set(levels["level"][levels["frontier_size"] > 0])
