"""The ``taskbfs run`` command: output, validation verdict, and clean errors with exit 2."""

from __future__ import annotations

import importlib
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
                      dashboard_address="127.0.0.1:0") as cluster:
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


# ----------------------------------------------------------------------------- checked first
@pytest.fixture
def nothing_expensive(monkeypatch):
    """Fail the test if a graph is generated or read, or a cluster started."""
    def boom(*args, **kwargs):
        raise AssertionError("expensive work started before the options were checked")

    for name in ("kronecker", "kronecker_edges", "read_graph", "Runtime"):
        monkeypatch.setattr(tb, name, boom)


def test_an_unreachable_scheduler_is_said_before_the_graph_is_made(capsys, monkeypatch,
                                                                     setting):
    def boom(*args, **kwargs):
        raise AssertionError("the graph was made before the scheduler was reached")

    for name in ("kronecker", "kronecker_edges", "read_graph"):
        monkeypatch.setattr(tb, name, boom)
    setting("runtime.connect-timeout", 2)
    status, out, err = run(capsys, "run", "--scheduler", "tcp://127.0.0.1:1")
    assert status == 2 and out == ""
    assert err.startswith("taskbfs: error: cannot reach a Dask scheduler at "
                          "'tcp://127.0.0.1:1'") and err.count("\n") == 1


def test_a_missing_file_says_so_in_one_line(capsys, nothing_expensive):
    status, out, err = run(capsys, "run", "--graph", "/nonexistent.mtx")
    assert status == 2 and err == "taskbfs: error: no such file: /nonexistent.mtx\n"


@pytest.mark.parametrize("argv, words", [
    (["run", "--tasks", "0"], "--tasks must be >= 1, got 0"),
    (["run", "--tasks", "-4"], "--tasks must be >= 1, got -4"),
    (["run", "--lam", "-1"], "--lam must be >= 0 (the threshold λ), got -1.0"),
    (["run", "--lam", "nan"], "--lam must be >= 0"),
    (["run", "--keys", "0"], "--keys must be >= 1, got 0"),
    (["run", "--scale", "0"], "--scale must be in 1..40, got 0"),
    (["run", "--scale", "41"], "--scale must be in 1..40, got 41"),
    (["run", "--edgefactor", "0"], "--edgefactor must be >= 1, got 0"),
    (["run", "--seed", "-1"], "--seed must be >= 0, got -1"),
    (["run", "--source", "-3"], "--source must be a vertex id >= 0, got -3"),
    (["run", "--scale", "6", "--source", "64"], "--source 64 is not a vertex of a scale-6 graph (0..63)"),
    (["run", "--scheduler", "foo://x:1"], "not a Dask scheduler address: 'foo://x:1'"),
    (["run", "--scheduler", "tcp://127.0.0.1:1", "--dashboard-address", ":0"],
     "--dashboard-address is for the embedded cluster"),
    (["run", "--graph", "/"], "/ is a directory, not a graph file"),
    (["run", "--trace", "out.xlsx"], "trace file 'out.xlsx': unknown suffix"),
    (["run", "--timeline", "out.txt"], "--timeline 'out.txt': unknown image suffix '.txt'"),
    (["run", "--timeline", "/nonexistent/d/x.png"],
     "--timeline '/nonexistent/d/x.png': no directory '/nonexistent/d'"),
    (["run", "--dashboard-address", "bogus:addr"],
     "dashboard address 'bogus:addr': expected [host]:port"),
    (["run", "--dashboard-address", "no-such-host.invalid:8787"],
     "host 'no-such-host.invalid' is not an address of this machine"),
    (["graph500", "--tasks", "0"], "--tasks must be >= 1, got 0"),
    (["graph500", "--scale", "6", "--tasks", "65"], "--tasks must be between 1 and the number of vertices"),
    (["graph500", "--keys", "0"], "--keys must be >= 1, got 0"),
    (["graph500", "--scheduler", "nowhere"], "not a Dask scheduler address"),
])
def test_bad_numbers_are_refused_before_any_work(capsys, nothing_expensive, argv, words):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("taskbfs: error: ") and words in err and err.count("\n") == 1


# ----------------------------------------------------------------------------- what it prints
def test_version_and_python_m_taskbfs(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"taskbfs {tb.__version__}\n"
    proc = subprocess.run([sys.executable, "-m", "taskbfs", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"taskbfs {tb.__version__}\n"


def test_help_imports_nothing_heavy():
    code = ("import sys\nfrom taskbfs.cli import main\n"
            "for argv in (['--help'], ['run', '--help'], ['graph500', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('numba', 'distributed', 'pandas', 'scipy')"
            " if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
    from taskbfs import graph500, graph500_cli

    assert graph500_cli.SEARCH_KEYS == graph500.SEARCH_KEYS


def test_keys_summary_cluster_line_and_json(capsys):
    import json

    from reference import scipy_distances

    status, out, err = run(capsys, "run", "--scale", "8", "--keys", "3", "--tasks", "2",
                           "--validate", "--json")
    assert status == 0, err
    doc = json.loads(out)  # stdout is the document alone; the text went to stderr
    assert "cluster: 2 workers" in err or "cluster: 1 worker" in err
    line = next(line for line in err.splitlines() if line.startswith("cluster:"))
    assert "{" not in line and re.search(r", ready in \d+\.\d s; dashboard: ", line)
    # said before the embedded cluster starts (the first run compiles the kernels)
    assert err.index("starting the embedded cluster") < err.index("cluster: ")
    assert "dashboard: http://127.0.0.1:" in err
    graph = tb.kronecker(8, seed=1)
    assert doc["graph"]["vertices"] == 256 and doc["graph"]["edges"] == graph.num_edges
    assert len(doc["searches"]) == 3
    for search in doc["searches"]:  # the numbers are those of an independent search
        d = scipy_distances(graph, search["source"])
        assert search["reached"] == int((d >= 0).sum()) and search["levels"] == int(d.max()) + 1
        assert search["validation"] == "passed"
        assert search["mteps"] == pytest.approx(search["traversed_edges"] / search["seconds"] / 1e6)
    # the summary table over the keys agrees with the per-key lines
    table = err.split("summary over 3 searches:", 1)[1].splitlines()
    mteps = [float(x.replace(",", "")) for x in table[2].split()[1:]]
    per_key = sorted(s["mteps"] for s in doc["searches"])
    assert mteps[0] == pytest.approx(per_key[0], abs=0.06)
    assert mteps[1] == pytest.approx(per_key[1], abs=0.06)
    assert mteps[2] == pytest.approx(per_key[2], abs=0.06)
    harmonic = 3 / sum(1 / m for m in per_key)
    assert mteps[3] == pytest.approx(harmonic, abs=0.06)
    assert doc["summary"]["harmonic_mean_TEPS"] / 1e6 == pytest.approx(harmonic)


def test_dashboard_address_none(capsys):
    status, out, err = run(capsys, "run", "--scale", "6", "--dashboard-address", "none")
    assert status == 0, err
    assert "dashboard: none" in out


def test_progress_of_generation_and_reading(capsys, monkeypatch, tmp_path):
    from taskbfs import cli_options

    monkeypatch.setattr(importlib.import_module("taskbfs.graph.kronecker"), "_CHUNK_EDGES",
                        1 << 10)  # scale 9: 8 chunks
    src, dst = cli_options.kronecker_edges(9, 16, 4, show_progress=True)
    whole = tb.kronecker_edges(9, 16, seed=4)
    assert np.array_equal(src, whole[0]) and np.array_equal(dst, whole[1])
    assert "generating edges" in capsys.readouterr().err
    path = tmp_path / "g.el"
    path.write_text("0 1\n1 2\n")
    status, out, err = run(capsys, "run", "--graph", str(path), "--progress", "--tasks", "1")
    assert status == 0 and f"reading {path}" in err


def test_graph500_json(capsys):
    import json

    status = main(["graph500", "--scale", "7", "--keys", "3", "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = json.loads(out)
    assert doc["SCALE"] == 7 and doc["NBFS"] == 3 and doc["validation"] == "passed"
    assert doc["min_TEPS"] <= doc["harmonic_mean_TEPS"] <= doc["max_TEPS"]
    assert "SCALE: 7" in err  # the specification's block, on stderr


def test_a_malformed_graph_file_is_said_before_a_cluster_starts(tmp_path, capsys):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\nx y\n")
    # nothing listens on port 9: reading the file first is the only way to name it
    code = main(["run", "--graph", str(bad), "--scheduler", "tcp://127.0.0.1:9"])
    assert code != 0 and "bad.mtx, line 4" in capsys.readouterr().err


def test_tasks_help_says_at_least():
    from taskbfs.cli import _parser

    run = _parser()._subparsers._group_actions[0].choices["run"]
    assert "at least" in run.format_help() and "at most" not in run.format_help()
