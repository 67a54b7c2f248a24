"""benchmarks/peers.py and benchmarks/plain_loop.py: the no-Dask loop against scipy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import peers  # noqa: E402
from plain_loop import Slices, plain_bfs  # noqa: E402


def _scipy_distances(graph, key, directed):
    d = shortest_path(graph.to_scipy(), directed=directed, unweighted=True, indices=key)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


@pytest.mark.parametrize("tasks", [1, 3, 16])
@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
def test_plain_loop_agrees_with_scipy_on_kronecker(tasks, direction):
    graph = tb.kronecker(10, edgefactor=8, seed=5)
    slices = Slices(graph, tasks)
    for key in tb.search_keys(graph, 3, seed=2).tolist():
        for threads in (1, 2):
            r = plain_bfs(graph, key, slices=slices, threads=threads, direction=direction)
            np.testing.assert_array_equal(r.distances, _scipy_distances(graph, key, False))
            tb.validate(graph, key, r.parents, levels=r.distances)
            assert r.elapsed > 0


def test_plain_loop_switches_direction_on_kronecker():
    graph = tb.kronecker(12, seed=1)
    key = int(tb.search_keys(graph, 1)[0])
    r = plain_bfs(graph, key, tasks=8, threads=1)
    assert "bottom-up" in r.directions and r.directions[0] == "top-down"


def test_plain_loop_on_a_directed_graph_follows_out_arcs():
    src, dst = tb.kronecker_edges(9, edgefactor=4, seed=3)
    graph = tb.Graph.from_edges(src, dst, num_vertices=512, directed=True)
    for key in tb.search_keys(graph, 3, seed=1).tolist():
        for direction in ("auto", "bottom-up"):
            r = plain_bfs(graph, key, tasks=5, threads=1, direction=direction)
            np.testing.assert_array_equal(r.distances, _scipy_distances(graph, key, True))


def test_plain_loop_module_does_not_use_dask():
    """The peer reuses the steps', barrier's and assembly's own functions, but nothing that
    submits: no dask, no runtime, not the level loop of bfs/core.py."""
    text = (Path(peers.__file__).parent / "plain_loop.py").read_text()
    code = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert not any("dask" in line or "distributed" in line or "taskbfs.bfs.core" in line
                   or "taskbfs.runtime" in line or line.strip() == "import taskbfs"
                   for line in code)


def test_plain_loop_publishes_nothing(monkeypatch):
    from taskbfs.bfs import state

    sent = []
    monkeypatch.setattr(state, "publish", sent.append)
    graph = tb.kronecker(8, seed=2)
    plain_bfs(graph, int(tb.search_keys(graph, 1)[0]), tasks=3, threads=2)
    assert sent == []


def test_tree_depths_match_scipy_and_catch_broken_trees():
    graph = tb.kronecker(9, seed=4)
    key = int(tb.search_keys(graph, 1)[0])
    r = plain_bfs(graph, key, tasks=4, threads=1)
    np.testing.assert_array_equal(peers.parents_to_depths(r.parents, key), r.distances)
    cycle = np.array([0, 2, 1, -1])
    assert (peers.tree_depths(cycle, 0) == -2).all()


def test_peers_scipy_row_agrees_and_missing_peers_are_reported(monkeypatch):
    graph = tb.kronecker(9, seed=2)
    keys = tb.search_keys(graph, 3, seed=1).tolist()
    ref = peers.Reference()
    for key in keys:
        r = plain_bfs(graph, key, tasks=4, threads=1)
        ref.add(key, r.distances, tb.traversed_edges(graph, r.parents))
    row = peers.run_scipy(graph, keys, ref)
    assert row.status == "ok" and len(row.seconds) == len(keys) and row.mteps > 0
    monkeypatch.setitem(sys.modules, "igraph", None)  # import igraph -> ImportError
    assert peers.run_igraph(graph, keys, ref).status == "not installed"
    assert peers.run_networkx(graph, keys, ref, scale=20, max_scale=16).status.startswith("skipped")
    wrong = peers.Row("made up")
    ref.check(wrong, keys[0], np.zeros(graph.num_vertices, dtype=np.int64))
    assert wrong.status.startswith("DISAGREES")
