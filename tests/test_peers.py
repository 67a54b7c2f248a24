"""benchmarks/peers.py: the plain numba loop and the peers' rows against scipy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import harness  # noqa: E402
import peers  # noqa: E402


def _scipy_distances(graph, key, directed):
    d = shortest_path(graph.to_scipy(), directed=directed, unweighted=True, indices=key)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up"])
def test_numba_loop_agrees_with_scipy_on_kronecker(threads, direction):
    import numba

    graph = tb.kronecker(10, edgefactor=8, seed=5)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    for key in tb.search_keys(graph, 3, seed=2).tolist():
        parents, distances, _ = peers.numba_bfs(graph, key, direction=direction)
        np.testing.assert_array_equal(distances, _scipy_distances(graph, key, False))
        tb.validate(graph, key, parents, levels=distances)


def test_numba_loop_switches_direction_on_kronecker():
    graph = tb.kronecker(12, seed=1)
    key = int(tb.search_keys(graph, 1)[0])
    _, _, directions = peers.numba_bfs(graph, key)
    assert "bottom-up" in directions and directions[0] == "top-down"


def test_numba_loop_on_a_directed_graph_follows_out_arcs():
    src, dst = tb.kronecker_edges(9, edgefactor=4, seed=3)
    graph = tb.Graph.from_edges(src, dst, num_vertices=512, directed=True)
    for key in tb.search_keys(graph, 3, seed=1).tolist():
        for direction in ("auto", "bottom-up", "top-down"):
            _, distances, _ = peers.numba_bfs(graph, key, direction=direction)
            np.testing.assert_array_equal(distances, _scipy_distances(graph, key, True))


def test_peers_use_no_taskbfs_internals():
    """The peers and the harness import taskbfs's public names only: no Dask, no
    ``taskbfs.<room>`` module."""
    for name in ("peers.py", "plain_gpu_loop.py", "harness.py"):
        text = (Path(peers.__file__).parent / name).read_text()
        code = [line.strip() for line in text.splitlines()
                if line.strip().startswith(("import ", "from "))]
        assert not any(line.startswith(("from taskbfs.", "import taskbfs.")) for line in code), name


def test_tree_depths_match_and_catch_broken_trees():
    graph = tb.kronecker(9, seed=4)
    key = int(tb.search_keys(graph, 1)[0])
    parents, distances, _ = peers.numba_bfs(graph, key)
    np.testing.assert_array_equal(peers.tree_depths(parents, key), distances)
    cycle = np.array([0, 2, 1, -1])
    assert (peers.tree_depths(cycle, 0) == -2).all()


def test_peers_agree_with_the_reference_and_missing_ones_say_why(monkeypatch):
    graph = tb.kronecker(9, seed=2)
    keys = harness.keys(graph, 3, seed=1)
    ref = harness.Reference(graph)
    for peer in peers.peers(["scipy", "numba"], threads=1):
        assert peer.why_not is None
        peer.prepare(graph)
        for key in keys:
            seconds, distances = peer.search(key)
            assert seconds > 0
            ref.check(key, distances, peer.name)
    monkeypatch.setenv("GAPBS_DIR", "/nonexistent")
    assert "not installed" in peers.GapPeer().why_not
    with pytest.raises(AssertionError, match="differ from scipy"):
        ref.check(keys[0], np.zeros(graph.num_vertices, dtype=np.int64), "made up")
