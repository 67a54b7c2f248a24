"""Settings: read through ``dask.config`` (so an environment variable or a Dask config file
sets them), sent by a Runtime to worker processes, taken back on close; and every setting
of ``taskbfs/taskbfs.yaml`` has a test of a value other than its default (here, or in the
test file named in :data:`TESTED_ELSEWHERE`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from distributed import Client, LocalCluster, Worker
from scipy.sparse.csgraph import shortest_path

import taskbfs as tb
from taskbfs import config
from taskbfs.bfs.core import _default_for
from taskbfs.graph import partition
from taskbfs.graph500 import validate
from taskbfs.runtime import Policy

import shapes  # isort: skip  (tests/shapes.py)

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

#: Settings whose non-default value is tested in another file (``setting("<name>", ...)``).
TESTED_ELSEWHERE = {
    "dispatch": "test_bfs_gpu.py",
    "direction.alpha": "test_bfs_state.py",
    "search.compiled-level-edges": "test_included.py",
    "search.summary-interval": "test_included.py",
    "search.parallel-accept-min": "test_bfs_state.py",
    "runtime.stay-with-data-bytes": "test_runtime_placement.py",
    "search.whole-pieces-bytes": "test_distributed_search.py",
    "build.send-share-of-memory": "test_distributed_graph.py",
    "build.hold-share-of-memory": "test_distributed_graph.py",
    "build.progress-delay": "test_build_memory.py",
    "build.peak-over-csr": "test_build_memory.py",
    "gpu.pinned-pool-bytes": "test_pinned.py",
    "gpu.device-memory-budget": "test_device_data.py",
    "gpu.device-memory-fraction": "test_device_data.py",
    "gpu.device-bucket-min": "test_bfs_gpu.py",
    "gpu.small-level-arcs": "test_bfs_gpu.py",
    "gpu.rmm": "test_gpu_memory.py",
    "kronecker.chunk-edges": "test_kronecker.py",
    "files.read-bytes": "test_distributed_graph.py",
    "runtime.connect-timeout": "test_runtime_cluster.py",
    "runtime.dashboard-address": "test_runtime_cluster.py",
    "runtime.profile-gpu-workers": "test_runtime_placement.py",
    "runtime.worker-warm-up": "test_runtime_warmup.py",
    "runtime.exchange-timeout": "test_runtime_mailbox.py",
    "max-tasks": "test_faults.py",
    "search.timeout": "test_faults.py",
    "search.retries-on-worker-loss": "test_faults.py",
    "runtime.host": "test_faults.py",
}


def _graph(shape) -> tb.Graph:
    return tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices,
                               directed=shape.directed)


def _leaves(tree: dict, prefix: str = "") -> list[str]:
    names = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        names += _leaves(value, name + ".") if isinstance(value, dict) else [name]
    return names


def test_every_setting_has_a_test_of_a_value_other_than_its_default():
    with open(REPO / "taskbfs" / "taskbfs.yaml") as f:
        names = _leaves(yaml.safe_load(f)["taskbfs"])
    here = Path(__file__).read_text()
    untested = []
    for name in names:
        source = (TESTS / TESTED_ELSEWHERE[name]).read_text() if name in TESTED_ELSEWHERE else here
        if f'setting("{name}", ' not in source:
            untested.append(name)
    assert untested == []
    assert set(TESTED_ELSEWHERE) <= set(names)  # no stale entry


def test_documented_defaults_are_the_values_read():
    with open(REPO / "taskbfs" / "taskbfs.yaml") as f:
        defaults = yaml.safe_load(f)["taskbfs"]
    assert config.get("lambda") == defaults["lambda"] == Policy("hybrid").lam
    assert config.get("search.compiled-level-edges") == defaults["search"]["compiled-level-edges"]
    assert config.get("search.compiled_level_edges") == config.get("search.compiled-level-edges")


def test_dask_config_knows_the_defaults_once_taskbfs_is_imported():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    code = "import taskbfs, dask.config\nprint(dask.config.get('taskbfs.lambda'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    with open(REPO / "taskbfs" / "taskbfs.yaml") as f:
        assert out.stdout.split() == [str(yaml.safe_load(f)["taskbfs"]["lambda"])]


def test_an_environment_variable_sets_a_value():
    env = dict(os.environ, DASK_TASKBFS__LAMBDA="1234",
               DASK_TASKBFS__SEARCH__COMPILED_LEVEL_EDGES="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    code = ("import taskbfs as tb\n"
            "print(tb.config.get('lambda'), tb.config.get('search.compiled-level-edges'),"
            " tb.config.get('tasks'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1234", "0", "4"]


# ---------------------------------------------------------------- settings reach other processes
def _worker_setting(name):
    from taskbfs import config

    return config.get(name)


@pytest.fixture(scope="module")
def process_cluster():
    """One worker process (2 threads, ``CPU=2``) on 127.0.0.1: settings cross a process."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, resources={"CPU": 2},
                      host="127.0.0.1", dashboard_address="127.0.0.1:0", memory_limit=0) as cluster:
        with Client(cluster, set_as_default=False) as client:
            yield client


def _compiled_blocks(r) -> bool:
    """Whether the path's levels ran in the compiled loop: its barrier takes a fraction of
    a microsecond a level (timed by the cycle counter, 0 where none is read), one run
    from Python tens of microseconds."""
    return float(np.median(r.levels["barrier_seconds"].to_numpy()[:-1])) < 5e-6


def test_a_search_sends_the_callers_settings_to_worker_processes(setting, process_cluster):
    """A path is searched as one task on the worker process; its small levels run in the
    compiled loop by default, and not with ``compiled-level-edges`` 0 set in this process
    only: the level table shows which ran there (:func:`_compiled_blocks`). Closing the
    runtime takes the setting back."""
    client = process_cluster
    g = _graph(shapes.path(300))
    default = client.run(_worker_setting, "search.compiled-level-edges")
    with tb.Runtime(client) as rt:
        r = tb.bfs(g, 0, strategy="cpu", runtime=rt)
        assert _compiled_blocks(r)
        setting("search.compiled-level-edges", 0)
        r = tb.bfs(g, 0, strategy="cpu", runtime=rt)
        assert not _compiled_blocks(r)
        assert np.array_equal(r.distances, shortest_path(g.to_scipy(), unweighted=True,
                                                         indices=0).astype(np.int64))
        assert set(client.run(_worker_setting, "search.compiled-level-edges").values()) == {0}
    assert client.run(_worker_setting, "search.compiled-level-edges") == default


# ---------------------------------------------------------------- each setting's other value
def test_tasks_and_tasks_per_gpu_set_the_default_t(setting):
    assert _default_for({"CPU": 16}, "cpu") == 16
    assert _default_for({"CPU": 2}, "cpu") == _default_for({}, "cpu") == 4
    setting("tasks", 3)
    assert _default_for({"CPU": 16}, "cpu") == 16
    assert _default_for({"CPU": 2}, "cpu") == 3
    assert _default_for({"CPU": 16, "GPU": 2}, "gpu") == 2
    setting("tasks-per-gpu", 4)
    assert _default_for({"CPU": 16, "GPU": 2}, "gpu") == 8
    assert _default_for({"CPU": 16, "GPU": 2}, "hybrid") == 8
    assert _default_for({"CPU": 16, "GPU": 2}, "cpu") == 16
    setting("tasks", 32)
    assert _default_for({"CPU": 16, "GPU": 2}, "fixed") == 32


def test_balance_sets_how_the_vertices_are_cut(setting, runtime):
    g = _graph(shapes.star(999))
    assert partition(g, 4).bounds.tolist() != [0, 250, 500, 750, 1000]
    setting("balance", "vertices")
    assert partition(g, 4).bounds.tolist() == [0, 250, 500, 750, 1000]
    r = tb.bfs(g, 3, tasks=4, strategy="cpu", runtime=runtime)
    validate(g, 3, r.parents, r.distances)
    setting("balance", "sideways")
    with pytest.raises(tb.InvalidParameterError, match="balance"):
        tb.bfs(g, 3, tasks=4, strategy="cpu", runtime=runtime)


def test_lambda_is_the_policys_default_threshold(setting):
    setting("lambda", 10)
    policy = Policy("hybrid")
    assert policy.lam == 10.0
    assert policy.decide(11, impls=("smp", "cuda"), gpu_present=True) == "cuda"
    assert policy.decide(10, impls=("smp", "cuda"), gpu_present=True) == "smp"
    assert Policy("hybrid", lam=3).lam == 3.0  # an explicit λ wins


def test_gpu_share_zero_binds_no_task_of_the_fixed_strategy_to_the_gpu(setting, runtime):
    g = _graph(shapes.grid(20, 20))
    setting("gpu-share", 0.0)
    r = tb.bfs(g, 0, tasks=4, strategy="fixed", runtime=runtime)
    assert (r.trace["device"] == "smp").all()
    validate(g, 0, r.parents, r.distances)


def _directions(r) -> list[str]:
    return r.levels["direction"].tolist()


def test_beta_sets_when_a_search_goes_back_to_top_down(setting, runtime):
    """Bottom-up as soon as possible (huge α: m_f > m_u / α); then a huge β (n / β below any frontier)
    never goes back to top-down, and a tiny one goes back at once."""
    g = tb.kronecker(10, edgefactor=8, seed=3)
    source = int(np.argmax(g.degrees()))
    setting("direction.alpha", 1e12)
    setting("direction.beta", 1e12)
    stays = _directions(tb.bfs(g, source, strategy="cpu", runtime=runtime))
    setting("direction.beta", 1e-12)
    r = tb.bfs(g, source, strategy="cpu", runtime=runtime)
    back = _directions(r)
    validate(g, source, r.parents, r.distances)
    assert "bottom-up" in stays and stays[stays.index("bottom-up"):] == ["bottom-up"] * (
        len(stays) - stays.index("bottom-up"))
    assert stays != back and "top-down" in back[back.index("bottom-up"):]


# ---------------------------------------------------------------- batching intervals
def _worker_interval(dask_worker):
    return dask_worker.batched_stream.interval


def _scheduler_intervals(dask_scheduler):
    return sorted({s.interval for s in dask_scheduler.stream_comms.values()})


def test_batching_intervals_are_the_settings(setting):
    setting("runtime.client-batch-interval", 0.003)
    setting("runtime.scheduler-stream-interval", 0.004)
    setting("runtime.worker-stream-interval", 0.006)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster:
        assert all(isinstance(w, Worker) for w in cluster.workers.values())
        with Client(cluster, set_as_default=False) as client, tb.Runtime(client) as rt:
            r = tb.bfs(_graph(shapes.path(30)), 0, strategy="cpu", runtime=rt)
            assert r.distances[-1] == 29
            assert client.scheduler_comm.interval == pytest.approx(0.003)
            assert client.run_on_scheduler(_scheduler_intervals) == [pytest.approx(0.004)]
            assert list(client.run(_worker_interval).values()) == [pytest.approx(0.006)]


def test_setting_names_in_the_yaml_are_what_the_code_reads():
    """Every ``config.get("<name>")`` in the package names a documented setting."""
    with open(REPO / "taskbfs" / "taskbfs.yaml") as f:
        names = set(_leaves(yaml.safe_load(f)["taskbfs"]))
    read = set()
    for path in (REPO / "taskbfs").rglob("*.py"):
        if path.name == "config.py":  # reads dask.config itself
            continue
        read |= set(re.findall(r"config\.get\([\"']([\w.-]+)[\"']\)", path.read_text()))
    assert read and read <= names
