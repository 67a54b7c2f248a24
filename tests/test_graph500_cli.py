"""``taskbfs graph500``: the statistics block, its consistency, validation, bad options."""

from __future__ import annotations

import math

import numpy as np
import pytest

from taskbfs import cli

HEADER = ("SCALE", "edgefactor", "NBFS", "graph_generation", "num_mpi_processes", "construction_time")
ORDER = ("min", "firstquartile", "median", "thirdquartile", "max")
FIELDS = HEADER + tuple(
    f"{name}_{kind}"
    for kind, names in (
        ("time", ORDER + ("mean", "stddev")),
        ("nedge", ORDER + ("mean", "stddev")),
        ("TEPS", ORDER + ("harmonic_mean", "harmonic_stddev")),
    )
    for name in names
)


def _block(out: str) -> dict:
    """The ``name: value`` lines of the statistics block, from SCALE on."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("SCALE: "))
    values = {}
    for line in lines[start:]:
        name, _, value = line.partition(": ")
        values[name] = float(value)
    return values


def test_graph500_prints_a_consistent_statistics_block(monkeypatch, capsys):
    import taskbfs.graph500 as g500

    seen = {}
    real = g500.teps_statistics

    def spy(times, edges):
        seen["times"], seen["edges"] = np.asarray(times), np.asarray(edges)
        return real(times, edges)

    monkeypatch.setattr(g500, "teps_statistics", spy)
    status = cli.main(["graph500", "--scale", "8", "--keys", "4", "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0
    assert "warm-up: one untimed search" in out
    assert "validation: passed for 4 of 4 searches" in out

    s = _block(out)
    assert tuple(s) == FIELDS
    assert (s["SCALE"], s["edgefactor"], s["NBFS"]) == (8, 16, 4)
    assert s["num_mpi_processes"] >= 1
    assert s["graph_generation"] > 0 and s["construction_time"] > 0
    for kind in ("time", "nedge", "TEPS"):
        values = [s[f"{name}_{kind}"] for name in ORDER]
        assert values == sorted(values), kind
        assert all(math.isfinite(v) for v in values), kind
    assert 0 < s["min_time"] <= s["mean_time"] <= s["max_time"]
    assert s["min_nedge"] <= s["mean_nedge"] <= s["max_nedge"] <= 16 * 256
    assert s["min_TEPS"] <= s["harmonic_mean_TEPS"] <= s["max_TEPS"]
    assert s["stddev_time"] >= 0 and s["harmonic_stddev_TEPS"] >= 0

    # The printed block is the statistics of the four timed searches (not of the warm-up).
    times, edges = seen["times"], seen["edges"]
    assert times.size == 4
    assert s["median_time"] == pytest.approx(np.median(times))
    assert s["mean_nedge"] == pytest.approx(edges.mean())
    teps = edges / times
    assert s["harmonic_mean_TEPS"] == pytest.approx(len(teps) / np.sum(1 / teps))
    assert s["harmonic_mean_TEPS"] <= teps.mean() * (1 + 1e-12)


def test_validation_failure_gives_exit_status_1(monkeypatch, capsys):
    import taskbfs as tb

    def broken(graph, source, parents, levels=None):
        raise tb.ValidationError(5, "made up for the test", source)

    monkeypatch.setattr(tb, "validate", broken)
    status = cli.main(["graph500", "--scale", "6", "--keys", "2", "--no-progress"])
    captured = capsys.readouterr()
    assert status == 1
    assert "validation: FAILED for 2 of 2 searches" in captured.out
    assert "made up for the test" in captured.err
    assert "harmonic_mean_TEPS" in captured.out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--keys", "0"], "--keys must be >= 1, got 0"),
        (["--scale", "-1"], "--scale must be in 1..40, got -1"),
        (["--scale", "41"], "--scale must be in 1..40, got 41"),
        (["--edgefactor", "0"], "--edgefactor must be >= 1, got 0"),
        (["--scale", "4", "--tasks", "17"], "--tasks must be between 1 and the number of vertices"),
        (["--lam", "-1"], "--lam must be >= 0"),
    ],
)
def test_bad_options_exit_2_with_one_line(options, message, capsys):
    status = cli.main(["graph500", *options])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.startswith("taskbfs: error: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err
