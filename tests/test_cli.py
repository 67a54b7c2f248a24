"""The ``taskbfs run`` command: output, validation verdict, and clean errors with exit 2."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import taskbfs as tb
from taskbfs.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_run_on_a_generated_graph(capsys):
    status, out, err = run(capsys, "run", "--scale", "9", "--keys", "3", "--tasks", "4", "--validate")
    assert status == 0, err
    assert "512 vertices" in out
    assert "warm-up" in out
    lines = [line for line in out.splitlines() if line.startswith("source ")]
    assert len(lines) == 3
    for line in lines:
        assert "validation: passed" in line
        assert re.search(r"in \d+ levels", line) and "MTEPS" in line


@pytest.mark.parametrize("extra, included", [
    ([], True),
    (["--dispatch", "tasks"], False),
    (["--dispatch", "auto"], True),
])
def test_dispatch_option_reaches_the_search(capsys, tmp_path, extra, included):
    """--dispatch changes how the levels run, not the result: with every step as a task
    no step in the trace ran inside another task; by default (one worker holds the
    graph) every step ran inside the search's one task."""
    import pandas as pd

    trace = tmp_path / "trace.csv"
    status, out, err = run(capsys, "run", "--scale", "9", "--tasks", "2", "--validate",
                           "--trace", str(trace), *extra)
    assert status == 0, err
    assert "validation: passed" in out
    assert pd.read_csv(trace)["included"].any() == included


def test_run_on_a_file_from_a_given_source(capsys, tmp_path):
    path = tmp_path / "chain.el"
    path.write_text("# a path 0-1-2-3 and an isolated pair\n0 1\n1 2\n2 3\n5 6\n")
    status, out, err = run(capsys, "run", "--graph", str(path), "--source", "1", "--tasks", "2",
                           "--validate", "--direction", "top-down", "--strategy", "cpu")
    assert status == 0, err
    assert "7 vertices" in out
    assert "reached 4 vertices in 3 levels" in out


def test_the_installed_command_runs():
    """The console script itself (what README's first command runs)."""
    proc = subprocess.run([sys.executable, "-m", "taskbfs.cli", "run", "--scale", "8", "--keys", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "MTEPS" in proc.stdout


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "--graph", "/nonexistent/graph.mtx"], "/nonexistent/graph.mtx"),
        (["run", "--scale", "6", "--source", "1000"], "--source"),
        (["run", "--scale", "6", "--tasks", "0"], "tasks"),
        (["run", "--scale", "6", "--lam", "-1"], "λ"),
        (["run", "--scale", "6", "--keys", "0"], "--keys"),
        (["run", "--scale", "0"], "scale"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(capsys, argv, words, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert err.startswith("taskbfs: error:") and words in err
    assert "Traceback" not in err


def test_gpu_strategy_on_a_cluster_without_gpu_exits_2(capsys):
    """On a CPU-only cluster (whatever this machine has), asking for the gpu strategy is a
    clear error, not a wait for a GPU worker that never comes."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, resources={"CPU": 1},
                      dashboard_address=":0") as cluster:
        status, _, err = run(capsys, "run", "--scale", "6", "--strategy", "gpu",
                             "--scheduler", cluster.scheduler_address)
    assert status == 2
    assert err.startswith("taskbfs: error:") and "GPU" in err
    assert "Traceback" not in err


def test_malformed_file_names_the_line(capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0 1\n1 2\n2 x\n")
    status, _, err = run(capsys, "run", "--graph", str(path))
    assert status == 2
    assert str(path) in err and "line 3" in err


def test_validation_failure_is_reported_with_status_1(capsys, monkeypatch):
    """A wrong parents array (planted) is caught by --validate and fails the command."""
    real_bfs = tb.bfs

    def corrupted(*args, **kwargs):
        result = real_bfs(*args, **kwargs)
        reached = np.flatnonzero(result.distances > 1)
        if reached.size:
            result.parents[reached[0]] = result.source  # a parent one level too high
        return result

    monkeypatch.setattr(tb, "bfs", corrupted)
    status, out, _ = run(capsys, "run", "--scale", "8", "--keys", "1", "--validate")
    assert status == 1
    assert "validation: FAILED" in out and "rule" in out
