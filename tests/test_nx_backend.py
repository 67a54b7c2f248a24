"""The networkx backend (``taskbfs/nx_backend.py``) against plain networkx.

* In this process: each function of the backend, called directly, gives exactly what
  networkx gives (the same edges in the same order, the same dicts and layers) on the
  graphs of tests/shapes.py with their edges inserted in a shuffled order, on labelled
  graphs, directed ones reversed, with depth limits and cutoffs.
* Installed as networkx installs backends, through the entry points that pyproject.toml
  declares (written to a dist-info directory here): ``nx.bfs_edges(G, s,
  backend="taskbfs")`` dispatches to taskbfs; and networkx's own tests of these functions
  pass with the backend (``NETWORKX_TEST_BACKEND=taskbfs``, networkx's code for the
  arguments the backend refuses), counting the calls the backend served.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib
from shapes import shapes

nx = pytest.importorskip("networkx", reason="networkx is optional (the 'networkx' extra)")

from taskbfs import nx_backend  # noqa: E402  (needs networkx only when called)

REPO = Path(__file__).resolve().parents[1]
SHAPES = [s for s in shapes() if s.num_vertices <= 3000]


def _nx_graph(shape, seed: int = 0):
    """The shape as a networkx graph, nodes and edges added in a shuffled order (so that
    adjacency order is not vertex order)."""
    rng = np.random.default_rng(seed)
    G = nx.DiGraph() if shape.directed else nx.Graph()
    G.add_nodes_from(rng.permutation(shape.num_vertices).tolist())
    order = rng.permutation(shape.src.size)
    G.add_edges_from(zip(shape.src[order].tolist(), shape.dst[order].tolist(), strict=True))
    return G


def _assert_like_networkx(G, source, runtime):
    B = nx_backend.convert_from_nx(G)
    for limit in (None, 2):
        assert list(nx_backend.bfs_edges(B, source, depth_limit=limit)) == \
            list(nx.bfs_edges(G, source, depth_limit=limit))
    if G.is_directed():
        assert list(nx_backend.bfs_edges(B, source, reverse=True)) == \
            list(nx.bfs_edges(G, source, reverse=True))
    for cutoff in (None, 0, 3):
        ours = nx_backend.single_source_shortest_path_length(B, source, cutoff=cutoff)
        assert list(ours.items()) == list(
            nx.single_source_shortest_path_length(G, source, cutoff=cutoff).items())
    assert list(nx_backend.bfs_layers(B, source)) == list(nx.bfs_layers(G, source))
    ours, theirs = nx_backend.bfs_tree(B, source), nx.bfs_tree(G, source)
    assert list(ours.nodes) == list(theirs.nodes) and list(ours.edges) == list(theirs.edges)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_function_gives_what_networkx_gives(runtime, shape):
    G = _nx_graph(shape)
    for source in shape.sources:
        _assert_like_networkx(G, source, runtime)


@pytest.mark.parametrize("G, source", [
    (nx.grid_2d_graph(9, 7), (4, 3)),
    (nx.relabel_nodes(nx.gnp_random_graph(150, 0.04, seed=4, directed=True),
                      lambda i: f"n{i}"), "n0"),
    (nx.relabel_nodes(nx.barabasi_albert_graph(300, 3, seed=2), lambda i: 7 * i + 1), 8),
], ids=["tuples", "strings-directed", "sparse-ints"])
def test_labelled_graphs(runtime, G, source):
    _assert_like_networkx(G, source, runtime)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_bfs_layers_from_several_sources(runtime, shape):
    """One multi-source taskbfs search gives networkx's layers, in its order (a source
    named twice counts once)."""
    G = _nx_graph(shape)
    B = nx_backend.convert_from_nx(G)
    for sources in (shape.sources, shape.sources[::-1] + shape.sources[:1]):
        assert list(nx_backend.bfs_layers(B, sources)) == list(nx.bfs_layers(G, sources))


def test_errors_and_refusals_are_networkx_ones():
    G = nx.path_graph(4)
    B = nx_backend.convert_from_nx(G)
    with pytest.raises(nx.NetworkXError, match="The node 9 is not in the graph"):
        list(nx_backend.bfs_edges(B, 9))
    with pytest.raises(nx.NodeNotFound, match="Source 9 is not in G"):
        nx_backend.single_source_shortest_path_length(B, 9)
    with pytest.raises(nx.NetworkXError, match="The node 9 is not in the graph"):
        list(nx_backend.bfs_layers(B, [0, 9]))
    assert nx_backend.can_run("bfs_edges", (G, 0), {}) is True
    assert "sort_neighbors" in nx_backend.can_run("bfs_edges", (G, 0), {"sort_neighbors": sorted})
    assert nx_backend.can_run("bfs_layers", (G, [0, 3]), {}) is True
    assert "iterator" in nx_backend.can_run("bfs_layers", (G, iter([0, 3])), {})
    assert nx_backend.can_run("bfs_layers", (G, [2]), {}) is True
    assert "implements" in nx_backend.can_run("dfs_edges", (G, 0), {})
    assert nx_backend.convert_to_nx(B) is G


# ----------------------------------------------------------------------------- installed
@pytest.fixture(scope="module")
def registered(tmp_path_factory) -> dict:
    """An environment where networkx finds the backend through the entry points of
    pyproject.toml (as an installed taskbfs declares them), running this checkout."""
    tmp = tmp_path_factory.mktemp("nx-entry")
    points = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    info = tmp / "taskbfs_nx_entry_test-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: taskbfs-nx-entry-test\nVersion: 0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
        for group, entries in points.items() if group.startswith("networkx.")))
    path = os.pathsep.join([str(tmp), str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])
    return {"env": dict(os.environ, PYTHONPATH=path), "dir": tmp}


@pytest.mark.slow
def test_networkx_dispatches_to_taskbfs(registered):
    code = """
import json, networkx as nx
nx.config.warnings_to_ignore.add("cache")
G = nx.gnp_random_graph(300, 0.02, seed=3)
out = {"installed": sorted(nx.utils.backends.backends),
       "edges": list(nx.bfs_edges(G, 5, backend="taskbfs")) == list(nx.bfs_edges(G, 5)),
       "lengths": nx.single_source_shortest_path_length(G, 5, backend="taskbfs")
                  == nx.single_source_shortest_path_length(G, 5),
       "layers": list(nx.bfs_layers(G, 5, backend="taskbfs")) == list(nx.bfs_layers(G, 5)),
       "tree": list(nx.bfs_tree(G, 5, backend="taskbfs").edges) == list(nx.bfs_tree(G, 5).edges)}
import taskbfs.runtime.cluster as c
out["ran_on_taskbfs"] = c._default is not None  # the searches started the embedded cluster
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], env=registered["env"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out == {"installed": ["taskbfs"], "edges": True, "lengths": True, "layers": True,
                   "tree": True, "ran_on_taskbfs": True}


_COUNTER = '''
"""pytest plugin: count the calls the taskbfs backend served (written at the end)."""
import functools, json, os
from collections import Counter

from taskbfs import nx_backend

calls = Counter()
for name in nx_backend.FUNCTIONS:
    def count(f, name=name):
        @functools.wraps(f)  # can_run reads the signature
        def counted(*args, **kwargs):
            calls[name] += 1
            return f(*args, **kwargs)
        return counted
    setattr(nx_backend, name, count(getattr(nx_backend, name)))


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["TASKBFS_NX_CALLS"], "w") as f:
        json.dump(calls, f)
'''


@pytest.mark.slow
def test_networkx_own_tests_pass_with_the_backend(registered):
    (registered["dir"] / "taskbfs_nx_counter.py").write_text(_COUNTER)
    calls = registered["dir"] / "calls.json"
    env = dict(registered["env"], NETWORKX_TEST_BACKEND="taskbfs", NETWORKX_FALLBACK_TO_NX="True",
               TASKBFS_NX_CALLS=str(calls))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "taskbfs_nx_counter",
         "--pyargs", "networkx.algorithms.traversal.tests.test_bfs",
         "networkx.algorithms.shortest_paths.tests.test_unweighted"],
        cwd=registered["dir"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " failed" not in proc.stdout and " passed" in proc.stdout
    served = json.loads(calls.read_text())
    assert all(served.get(name, 0) > 0 for name in nx_backend.FUNCTIONS), served


def test_should_run_says_no_for_a_tiny_graph_without_a_cluster(monkeypatch):
    import networkx as nx

    from taskbfs import nx_backend
    from taskbfs.runtime import cluster

    monkeypatch.setattr(cluster, "_default", None)  # as in a fresh process
    tiny, big = nx.path_graph(10), nx.path_graph(nx_backend.SHOULD_RUN_MIN_EDGES + 1)
    assert isinstance(nx_backend.should_run("bfs_edges", (tiny, 0), {}), str)
    assert nx_backend.should_run("bfs_edges", (big, 0), {}) is True
