"""The BFS state functions on their own (no cluster): the client's level-0 summary agrees
with the worker's, for every direction mode."""

from __future__ import annotations

import numpy as np
import pytest

import taskbfs as tb
from taskbfs.bfs.state import AUTO, BOTTOM_UP, TOP_DOWN, first_frontier, first_summary

FIELDS = ("level", "direction", "frontier_size", "frontier_edges")
ARRAYS = ("frontier_counts", "edges_examined", "found")


@pytest.mark.parametrize("mode", [AUTO, TOP_DOWN, BOTTOM_UP])
@pytest.mark.parametrize("bounds", [[0, 300], [0, 1, 2, 300], [0, 64, 65, 200, 300]])
def test_first_summary_equals_the_workers(mode, bounds):
    graph = tb.Graph.from_edges(np.r_[np.zeros(250, int), np.arange(1, 299)],
                                np.r_[np.arange(1, 251), np.arange(2, 300)])
    degrees = graph.degrees()
    bounds = np.array(bounds, dtype=np.int64)
    # a hub (switches to bottom-up under auto), a low-degree vertex, the last vertex
    for source in (0, 1, 299):
        _, worker = first_frontier(degrees, bounds, source, mode, alpha=10.0)
        client = first_summary(bounds, source, graph.degree(source), graph.num_arcs, mode, alpha=10.0)
        for name in FIELDS:
            assert getattr(client, name) == getattr(worker, name), (name, source)
        for name in ARRAYS:
            np.testing.assert_array_equal(getattr(client, name), getattr(worker, name))
    hub = first_summary(bounds, 0, graph.degree(0), graph.num_arcs, mode, alpha=10.0)
    assert hub.direction == (TOP_DOWN if mode == TOP_DOWN else BOTTOM_UP)  # both branches covered
