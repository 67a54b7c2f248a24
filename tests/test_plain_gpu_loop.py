"""benchmarks/plain_gpu_loop.py: the plain GPU peer against scipy and a naive BFS.

The searches need CuPy and a CUDA GPU (they run on the device machine) and are skipped,
with that reason, elsewhere. The host loop (direction switch, frontier conversions) is
checked everywhere, with a scripted stand-in for the kernels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from reference import naive_bfs, scipy_distances, scipy_parents
from shapes import shape, shapes

import taskbfs as tb
from taskbfs.kernels.direction import switch_direction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import plain_gpu_loop as peer  # noqa: E402

NEEDS = "the plain GPU peer needs CuPy and a CUDA GPU (runs on the device machine)"
DIRECTIONS = ("auto", "top-down", "bottom-up")


@pytest.fixture(scope="module")
def cupy():
    """CuPy, when it and a CUDA GPU are usable; the test is skipped otherwise."""
    module = pytest.importorskip("cupy", reason=NEEDS)
    why = peer.cupy_status()
    if why is not None:
        pytest.skip(f"{NEEDS}: {why}")
    return module


def _graph(s) -> tb.Graph:
    return tb.Graph.from_edges(s.src, s.dst, num_vertices=s.num_vertices, directed=s.directed)


def _search(cupy, device_graph, source, direction, **kw):
    parents, levels = peer.plain_gpu_bfs(device_graph, source, direction=direction, **kw)
    assert parents.dtype == np.int32
    return cupy.asnumpy(parents).astype(np.int64), levels


def _check(graph, raw, source, parents, levels):
    """Graph500 rules, distances against scipy and the naive BFS, reached set against
    scipy's breadth_first_order, one level reported per BFS level."""
    depth = tb.validate(graph, source, parents)
    np.testing.assert_array_equal(depth, scipy_distances(graph, source))
    np.testing.assert_array_equal(depth, naive_bfs(raw.src, raw.dst, raw.num_vertices, source,
                                                   raw.directed))
    np.testing.assert_array_equal(parents >= 0, scipy_parents(graph, source) >= 0)
    assert len(levels) == depth.max() + 1


@pytest.mark.parametrize("chunk", [peer.CHUNK_EDGES, 8])
@pytest.mark.parametrize("name", [s.name for s in shapes()])
def test_plain_gpu_bfs_agrees_with_references_on_shapes(cupy, name, chunk):
    """Every shape (path, star, grid, components, directed ones, Kronecker-like ...), every
    suggested key, each direction; chunk 8 sends most vertices through the heavy path.
    Searches run one after another on the same device buffers."""
    raw = shape(name)
    graph = _graph(raw)
    device_graph = peer.upload_graph(graph, chunk=chunk)
    for direction in DIRECTIONS:
        for source in raw.sources:
            parents, levels = _search(cupy, device_graph, source, direction)
            _check(graph, raw, source, parents, levels)
            if direction != "auto":
                assert set(levels) == {direction}


def test_plain_gpu_bfs_on_kronecker_switches_direction(cupy):
    graph = tb.kronecker(14, edgefactor=16, seed=1)
    device_graph = peer.upload_graph(graph)
    for key in tb.search_keys(graph, 4, seed=2).tolist():
        parents, levels = _search(cupy, device_graph, key, "auto")
        depth = tb.validate(graph, key, parents)
        np.testing.assert_array_equal(depth, scipy_distances(graph, key))
        assert levels[0] == "top-down" and "bottom-up" in levels
        assert tb.traversed_edges(graph, parents) > 0


def test_plain_gpu_bfs_on_a_directed_kronecker_graph(cupy):
    src, dst = tb.kronecker_edges(11, edgefactor=8, seed=3)
    graph = tb.Graph.from_edges(src, dst, num_vertices=1 << 11, directed=True)
    device_graph = peer.upload_graph(graph, chunk=64)
    for key in tb.search_keys(graph, 3, seed=1).tolist():
        for direction in DIRECTIONS:
            parents, _ = _search(cupy, device_graph, key, direction)
            depth = tb.validate(graph, key, parents)
            np.testing.assert_array_equal(depth, scipy_distances(graph, key))


def test_alpha_decides_when_auto_goes_bottom_up(cupy):
    graph = tb.kronecker(12, seed=4)
    device_graph = peer.upload_graph(graph)
    key = int(tb.search_keys(graph, 1, seed=1)[0])
    _, never = _search(cupy, device_graph, key, "auto", alpha=1e-6)
    parents, early = _search(cupy, device_graph, key, "auto", alpha=1e12)
    assert set(never) == {"top-down"}
    assert early[0] == "bottom-up"  # the first frontier is growing: bottom-up at once
    tb.validate(graph, key, parents)


def test_plain_gpu_bfs_rejects_a_bad_source_and_direction(cupy):
    device_graph = peer.upload_graph(_graph(shape("path_3000")))
    with pytest.raises(tb.InvalidVertexError):
        peer.plain_gpu_bfs(device_graph, 3000)
    with pytest.raises(ValueError, match="direction"):
        peer.plain_gpu_bfs(device_graph, 0, direction="sideways")


class ScriptedLevels:
    """Stands in for the kernels: each level returns the next (vertices, out-arcs) of a
    script, and every call is recorded."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = []

    def to_queue(self, level):
        self.calls.append(("to_queue", level))

    def to_bitmap(self, level, size, arcs):
        self.calls.append(("to_bitmap", level))

    def top_down(self, level, size, arcs):
        self.calls.append(("top_down", level))
        return self.script[level]

    def bottom_up(self, level, size, arcs):
        self.calls.append(("bottom_up", level))
        return self.script[level]


def test_level_loop_switches_as_taskbfs_and_converts_only_at_switches():
    n, arcs, degree = 1000, 20_000, 10
    script = [(9, 200), (300, 9000), (600, 10_000), (40, 600), (5, 50), (0, 0)]
    ops = ScriptedLevels(script)
    levels = peer.level_loop(ops, degree, arcs, n, "auto", peer.ALPHA, peer.BETA)
    expected, direction, size, unexplored = [], "top-down", 1, arcs - degree
    direction = switch_direction("auto", "top-down", 1, degree, unexplored, n, peer.ALPHA,
                                 peer.BETA)
    for new_size, new_arcs in script:
        expected.append(direction)
        unexplored -= new_arcs
        direction = switch_direction("auto", direction, new_size, new_arcs, unexplored, n,
                                     peer.ALPHA, peer.BETA, previous_size=size)
        size = new_size
    assert levels == expected
    assert levels == ["top-down", "top-down", "bottom-up", "bottom-up", "top-down", "top-down"]
    assert ops.calls == [("top_down", 0), ("top_down", 1), ("to_bitmap", 2), ("bottom_up", 2),
                         ("bottom_up", 3), ("to_queue", 4), ("top_down", 4), ("top_down", 5)]


def test_level_loop_fixed_directions_and_a_lone_source():
    ops = ScriptedLevels([(3, 30), (0, 0)])
    assert peer.level_loop(ops, 3, 60, 10, "bottom-up", peer.ALPHA, peer.BETA) == ["bottom-up"] * 2
    assert ops.calls[0] == ("to_bitmap", 0)
    ops = ScriptedLevels([(0, 0)])
    assert peer.level_loop(ops, 0, 60, 10, "auto", peer.ALPHA, peer.BETA) == ["top-down"]


def test_plain_gpu_loop_module_does_not_use_dask_or_the_runtime():
    text = Path(peer.__file__).read_text()
    imports = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert not any(word in line for line in imports
                   for word in ("dask", "distributed", "taskbfs.search", "taskbfs.runtime", "numba"))
    assert "import taskbfs\n" not in text
