"""Graphs from and to networkx, and tb.bfs taking a networkx graph directly: every search
compared with networkx itself, parents checked by Graph500 rules."""

from __future__ import annotations

import pytest

import taskbfs as tb
from taskbfs.errors import EmptyGraphError, InvalidVertexError
from taskbfs.graph import as_graph

nx = pytest.importorskip("networkx", reason="networkx is optional (the 'networkx' extra)")


def _nx_graphs():
    yield "path of strings", nx.relabel_nodes(nx.path_graph(30), {i: f"v{i}" for i in range(30)}), "v7"
    yield "grid of tuples", nx.grid_2d_graph(12, 9), (3, 4)
    yield "sparse integer ids", nx.relabel_nodes(nx.cycle_graph(20), lambda i: 10 * i + 5), 55
    yield "0..n-1 out of order", nx.Graph([(3, 1), (1, 0), (2, 4)]), 3
    yield "directed scale-free", nx.DiGraph(nx.scale_free_graph(300, seed=5)), 0
    yield "components", nx.disjoint_union(nx.complete_graph(8), nx.star_graph(15)), 9
    yield "multigraph with loops", nx.MultiGraph([(0, 1), (0, 1), (1, 1), (1, 2)]), 0


@pytest.mark.parametrize("name, G, source", list(_nx_graphs()), ids=[n for n, *_ in _nx_graphs()])
def test_bfs_takes_a_networkx_graph_as_networkx_searches_it(runtime, name, G, source):
    r = tb.bfs(G, source, tasks=4, runtime=runtime)
    assert r.distance_dict() == dict(nx.single_source_shortest_path_length(G, source))
    parents = r.parent_dict()
    assert parents[source] == source
    for v, p in parents.items():  # every tree edge is an edge of G, one level up
        if v != source:
            assert G.has_edge(p, v) and r.distance_dict()[v] == r.distance_dict()[p] + 1
    tb.validate(tb.Graph.from_networkx(G), source, r.parents, levels=r.distances)


def test_labels_of_a_networkx_graph():
    g = tb.Graph.from_networkx(nx.Graph([("a", "b"), ("b", "c")]))
    assert g.labels.tolist() == ["a", "b", "c"] and g.vertex("c") == 2
    assert tb.Graph.from_networkx(nx.path_graph(5)).labels is None  # ids kept as they are
    with pytest.raises(InvalidVertexError, match="'z' is not a vertex.*labelled: 'a', 'b', 'c'"):
        g.vertex("z", "source")
    with pytest.raises(EmptyGraphError):
        tb.Graph.from_networkx(nx.Graph())


@pytest.mark.parametrize("G", [nx.grid_2d_graph(4, 5), nx.gnp_random_graph(40, 0.1, seed=2, directed=True),
                               nx.path_graph(6)], ids=["tuples", "directed", "integers"])
def test_to_networkx_round_trip(G):
    back = tb.Graph.from_networkx(G).to_networkx()
    assert back.is_directed() == G.is_directed()
    assert list(back.nodes) == list(G.nodes)
    assert set(back.edges) == set(G.edges) or nx.utils.edges_equal(back.edges, G.edges)


def test_to_networkx_of_a_plain_graph_has_every_vertex():
    G = tb.Graph.from_edges([0, 1], [1, 2], num_vertices=5, directed=True).to_networkx()
    assert isinstance(G, nx.DiGraph) and sorted(G.nodes) == [0, 1, 2, 3, 4]
    assert sorted(G.edges) == [(0, 1), (1, 2)]


def test_a_networkx_graph_is_converted_once_until_it_changes(runtime):
    G = nx.path_graph(5)
    first = as_graph(G)
    assert as_graph(G) is first and G.__networkx_cache__["taskbfs"] is first
    assert tb.bfs(G, 0, runtime=runtime).distances.tolist() == [0, 1, 2, 3, 4]
    G.add_edge(0, 4)  # networkx empties the cache on a change through its methods
    assert as_graph(G) is not first
    assert tb.bfs(G, 0, runtime=runtime).distances.tolist() == [0, 1, 2, 2, 1]


