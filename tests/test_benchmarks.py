"""benchmarks/: every question script runs at a tiny scale, writes its CSV rows, and
report.py builds the results page from them.

Each script runs in this process (its ``main(argv)``) on the embedded default cluster,
except where the script itself starts processes (build.py and first_search.py measure in
fresh ones; workers.py and soak.py --external start clusters of processes).
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import report  # noqa: E402

#: script -> (its tiny arguments, columns every row has, a check of its rows)
TINY = {
    "compare": (["--scale", "10", "--keys", "2", "--repeats", "1", "--peers", "scipy", "gap"],
                ["impl", "status"],
                lambda rows: {"taskbfs", "scipy"} <= {r["impl"] for r in rows if r["status"] == "ok"}),
    "granularity": (["--scale", "10", "--keys", "2", "--repeats", "1", "--tasks", "1", "4", "16"],
                    ["tasks", "mteps", "vs_one_task"],
                    lambda rows: sorted(int(r["tasks"]) for r in rows) == [1, 4, 16]),
    "lam": (["--scale", "10", "--keys", "2", "--repeats", "1", "--lams", "10", "1000"],
            ["kind"],
            lambda rows: {"step", "lambda"} <= {r["kind"] for r in rows}),
    "deep_graphs": (["--paths", "300", "--grids", "10", "--repeats", "1"],
                    ["graph", "levels", "median_ms"],
                    lambda rows: [int(r["levels"]) for r in rows] == [300, 19]),
    "workers": (["--workers", "2", "--scale", "9", "--keys", "2", "--dispatch", "auto"],
                ["cpu_workers", "median_ms", "checked"],
                lambda rows: rows[0]["checked"] == "scipy + rules"),
    "build": (["--scale", "9", "--repeats", "1", "--builders", "kronecker", "read_npz"],
              ["builder", "seconds"],
              lambda rows: [r["builder"] for r in rows] == ["kronecker", "read_npz"]),
    "dispatch": (["--scale", "10", "--keys", "2", "--repeats", "1", "--tasks", "4"],
                 ["kind", "median_ms"],
                 lambda rows: float(next(r for r in rows if r["kind"] == "per_task")["steps"]) > 0),
    "soak": (["--searches", "20", "--warm", "5", "--every", "10", "--scale", "8"],
             ["process", "kib_per_search"],
             lambda rows: rows[0]["process"] == "process"),
    "first_search": (["--scale", "9", "--strategies", "cpu", "--calls", "4", "--keys", "2"],
                     ["first_ms", "steady_ms"],
                     lambda rows: len(rows) == 1),
    "timeline": (["--scale", "10", "--keys", "3", "--strategy", "cpu"],
                 ["kind"],
                 lambda rows: rows[0]["kind"] == "call" and len(rows) > 2),
}


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.mark.parametrize("name", list(TINY))
def test_question_script_writes_its_rows(name, results):
    argv, columns, check = TINY[name]
    module = __import__(name)
    path = results / f"{name}.csv"
    module.main([*argv, "--csv", str(path)])
    rows = _rows(path)
    assert rows, name
    for row in rows:
        assert row["question"] == name and row["source"] == "run"
        assert row["cores"] and row["date"] and row["commit"] and row["command"].startswith("python")
        assert all(c in row for c in columns), (name, columns, list(row))
    assert check(rows), rows


def test_build_says_why_not_where_gap_is_not_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("GAPBS_DIR", str(tmp_path))  # no bfs binary there
    rows = __import__("build").main(["--scale", "9", "--builders", "gap", "--no-csv"])
    assert [(r["builder"], r["status"][:13]) for r in rows] == [("gap", "not installed")]


def test_build_sets_the_readers_and_writers_against_scipy():
    """read_mtx against scipy.io.mmread and save_mtx against mmwrite, in the same run."""
    rows = __import__("build").main(["--scale", "9", "--repeats", "1", "--builders", "read_mtx",
                                     "mmread", "save_mtx", "mmwrite", "--no-csv"])
    ratio = {r["builder"]: r.get("vs_scipy") for r in rows}
    assert set(ratio) == {"read_mtx", "mmread", "save_mtx", "mmwrite"}
    assert ratio["read_mtx"] > 0 and ratio["save_mtx"] > 0
    assert ratio["mmread"] is None and ratio["mmwrite"] is None


@pytest.mark.skipif(not os.environ.get("GAPBS_DIR"), reason="GAPBS_DIR unset: no built gapbs to run")
def test_build_times_gaps_generate_and_build():
    rows = __import__("build").main(["--scale", "9", "--repeats", "1", "--builders", "gap",
                                     "--no-csv"])
    assert [r["builder"] for r in rows] == ["gap"] and rows[0]["seconds"] > 0


def test_report_builds_a_short_page_from_the_rows(results, tmp_path):
    out = report.main(["--results", str(results), "--out", str(tmp_path / "RESULTS.md")])
    text = out.read_text()
    assert len(text.splitlines()) <= report.MAX_LINES
    for script, title in report.QUESTIONS.values():
        assert f"## {title}" in text and f"`benchmarks/{script}`" in text
    assert "No results yet." not in text  # every question ran above
    if (results / "compare.png").exists():
        assert "![compare](results/compare.png)" in text


def test_rows_keep_the_columns_of_earlier_runs(tmp_path):
    first = harness.Results("x", None)
    first.path = tmp_path / "x.csv"
    first.add(a=1)
    first.save()
    second = harness.Results("x", None)
    second.path = first.path
    second.add(b=2.5)
    second.save()
    rows = _rows(first.path)
    assert [(r["a"], r["b"]) for r in rows] == [("1", ""), ("", "2.5")]


def test_every_question_script_has_help_and_uses_the_public_api():
    scripts = [BENCH / f"{name}.py" for name in TINY]
    assert len(scripts) <= 10 and all(p.exists() for p in scripts)
    assert set(TINY) == set(report.QUESTIONS)
    for path in [*scripts, BENCH / "harness.py", BENCH / "peers.py", BENCH / "report.py"]:
        text = path.read_text()
        imports = [line.strip() for line in text.splitlines()
                   if line.strip().startswith(("import ", "from "))]
        assert not any(line.startswith(("from taskbfs.", "import taskbfs.")) for line in imports), path
        assert text.startswith('"""'), path  # the docstring --help prints
