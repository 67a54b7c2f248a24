"""A networkx dispatch backend: ``nx.bfs_edges(G, s, backend="taskbfs")`` runs on taskbfs.

Returns
    What networkx returns, in networkx's order: ``bfs_edges`` (the tree edges, as
    networkx's FIFO search yields them), ``bfs_tree``, ``bfs_layers`` (one source or several: one
    multi-source :func:`taskbfs.search`), ``single_source_shortest_path_length``. Other
    arguments than these functions take here (``sort_neighbors``) make :func:`can_run` say no, and networkx
    runs its own code (with ``nx.config.fallback_to_nx``) or says why not.
Approach
    :func:`convert_from_nx` keeps a :class:`taskbfs.Graph` of the networkx graph (its
    nodes as ``labels`` unless they are 0..n-1) and its arcs in networkx's adjacency order.
    A call runs one :func:`taskbfs.search` for the distances, then rebuilds networkx's tree
    and order from them, level by level, without a Python loop over vertices: a vertex
    at distance d + 1 is discovered by its neighbour at distance d that comes first in
    level d's order, through the first such arc in that neighbour's adjacency; sorting
    the level's candidate arcs by (order of their tail, adjacency position) gives level
    d + 1's order, and the first arc into each vertex its parent. That is what networkx's
    search does one vertex at a time.
Registration
    ``pyproject.toml``: entry point ``taskbfs = "taskbfs.nx_backend"`` (this module is the
    backend object networkx loads) in group
    ``networkx.backends`` and ``taskbfs = "taskbfs.nx_backend:get_info"`` in
    ``networkx.backend_info``. Settings: ``nx.config.backends.taskbfs.runtime`` (a
    :class:`taskbfs.Runtime`, Client or scheduler address; None: the embedded cluster)
    and ``.tasks`` (T; None: :func:`taskbfs.default_tasks`).
Source
    networkx's backend interface, "Backends" in the networkx reference (networkx >= 3.2).
"""

from __future__ import annotations

import inspect
import sys

import numpy as np

import taskbfs as tb

NAME = "taskbfs"
FUNCTIONS = ("bfs_edges", "bfs_tree", "bfs_layers", "single_source_shortest_path_length")


class NxGraph:
    """A networkx graph as this backend keeps it (what :func:`convert_from_nx` returns).

    Attributes
    ----------
    G : networkx.Graph
        The graph it was made from (read again only for a directed graph's predecessors).
    graph : taskbfs.Graph
    nodes : list
        ``nodes[v]`` is vertex ``v``'s node.
    """

    __networkx_backend__ = NAME

    def __init__(self, G):
        self.G = G
        self.graph = tb.Graph.from_networkx(G)
        labels = self.graph.labels
        self.nodes = list(range(self.graph.num_vertices)) if labels is None else labels.tolist()
        self._arcs: dict[bool, tuple[np.ndarray, np.ndarray]] = {}
        self._reversed: tb.Graph | None = None
        self.__networkx_cache__: dict = {}

    def __contains__(self, node) -> bool:
        return node in self.G

    def __len__(self) -> int:
        return self.graph.num_vertices

    def is_directed(self) -> bool:
        return self.graph.directed

    def arcs(self, reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Every arc ``u -> v`` the search follows (``v`` in ``G.adj[u]``, or ``G.pred[u]``
        when ``reverse``), as vertex numbers, in networkx's adjacency order."""
        reverse = reverse and self.graph.directed
        if reverse not in self._arcs:
            adj = self.G.pred if reverse else self.G.adj
            if self.graph.labels is None:  # the nodes are the vertex numbers
                pairs = [(u, v) for u in self.G for v in adj[u]]
            else:
                index = {node: i for i, node in enumerate(self.nodes)}
                pairs = [(index[u], index[v]) for u in self.G for v in adj[u]]
            arcs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
            self._arcs[reverse] = (arcs[:, 0].copy(), arcs[:, 1].copy())
        return self._arcs[reverse]

    def searched(self, reverse: bool = False) -> tb.Graph:
        """The taskbfs graph whose out-arcs the search follows."""
        if not (reverse and self.graph.directed):
            return self.graph
        if self._reversed is None:
            self._reversed = self.graph.transpose()
        return self._reversed


# ----------------------------------------------------------------------------- the interface
def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None) -> NxGraph:
    """networkx graph -> :class:`NxGraph` (attributes are not kept: BFS needs none)."""
    return G if isinstance(G, NxGraph) else NxGraph(G)


def convert_to_nx(obj, *, name=None):
    """A result back to networkx: results are networkx objects already; a graph of this
    backend becomes the networkx graph it came from."""
    return obj.G if isinstance(obj, NxGraph) else obj


def can_run(name, args, kwargs):
    """True, or why this backend cannot run ``name`` with these arguments."""
    if name not in FUNCTIONS:
        return f"taskbfs implements {', '.join(FUNCTIONS)} only"
    bound = inspect.signature(globals()[name]).bind(*args, **kwargs)
    if bound.arguments.get("sort_neighbors") is not None:
        return "sort_neighbors is not supported (taskbfs follows the adjacency order)"
    if name == "bfs_layers":
        G, sources = bound.arguments["G"], bound.arguments["sources"]
        if not (_is_node(G, sources) or isinstance(sources, (list, tuple, set, frozenset))):
            return "sources must be a node or a collection of nodes (not an iterator)"
    return True


#: Edges below which :func:`should_run` says no while no taskbfs cluster is running:
#: networkx's own search of so few edges costs less than starting the embedded cluster.
SHOULD_RUN_MIN_EDGES = 10_000


def should_run(name, args, kwargs):
    """True, or why networkx's own code is better here: a graph of fewer than
    :data:`SHOULD_RUN_MIN_EDGES` edges while no taskbfs runtime is configured or running
    (starting a cluster would cost seconds). ``backend="taskbfs"`` still runs here."""
    G = args[0] if args else kwargs.get("G")
    edges = (G.num_edges if isinstance(G, tb.Graph) else
             G.number_of_edges() if hasattr(G, "number_of_edges") else None)
    if edges is None or edges >= SHOULD_RUN_MIN_EDGES or _runtime_ready():
        return True
    return (f"a graph of {edges} edges (< {SHOULD_RUN_MIN_EDGES}) is searched faster by "
            "networkx than a taskbfs cluster starts")


def _runtime_ready() -> bool:
    """Whether a search would start no cluster: a runtime is configured, or the embedded
    one is running."""
    from taskbfs.runtime import cluster

    if _search_options()["runtime"] is not None:
        return True
    default = cluster._default
    return default is not None and default.client.status == "running"


def get_info() -> dict:
    """What networkx shows of this backend (the ``networkx.backend_info`` entry point)."""
    return {
        "backend_name": NAME,
        "project": "taskbfs",
        "package": "taskbfs",
        "short_summary": "Task-based heterogeneous (CPU + GPU) BFS on Dask.",
        "functions": {name: {"additional_docs": "Distances by taskbfs.search on the configured "
                                                "runtime; networkx's tree and order rebuilt from them."}
                      for name in FUNCTIONS},
        "default_config": {"runtime": None, "tasks": None},
    }


# ----------------------------------------------------------------------------- the functions
def bfs_edges(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    """networkx's ``bfs_edges`` on taskbfs (a generator, as networkx's)."""
    G = convert_from_nx(G)
    _require(G, source, reverse)
    limit = len(G) if depth_limit is None else depth_limit
    for parents, children in _tree_levels(G, source, reverse, limit):
        yield from zip((G.nodes[p] for p in parents.tolist()),
                       (G.nodes[c] for c in children.tolist()), strict=True)


def bfs_tree(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    """networkx's ``bfs_tree`` on taskbfs: a DiGraph of the tree edges."""
    import networkx as nx

    T = nx.DiGraph()
    T.add_node(source)
    T.add_edges_from(bfs_edges(G, source, reverse=reverse, depth_limit=depth_limit))
    return T


def bfs_layers(G, sources):
    """networkx's ``bfs_layers`` on taskbfs, from one source or several (a generator;
    the first layer is the set of ``sources`` as networkx lists it)."""
    G = convert_from_nx(G)
    if _is_node(G, sources):
        sources = [sources]
    first = list(set(sources))  # networkx's first layer, in its order
    for source in first:
        if source not in G:
            import networkx as nx

            raise nx.NetworkXError(f"The node {source} is not in the graph.")
    if not first:
        return
    yield first
    for _, children in _tree_levels(G, first, False, len(G)):
        yield [G.nodes[c] for c in children.tolist()]


def single_source_shortest_path_length(G, source, cutoff=None):
    """networkx's ``single_source_shortest_path_length`` on taskbfs (a dict in BFS order)."""
    G = convert_from_nx(G)
    if source not in G:
        import networkx as nx

        raise nx.NodeNotFound(f"Source {source} is not in G")
    out = {source: 0}
    if cutoff is None or cutoff > 0:
        limit = len(G) if cutoff is None else cutoff
        for level, (_, children) in enumerate(_tree_levels(G, source, False, limit), start=1):
            out.update((G.nodes[c], level) for c in children.tolist())
    return out


# ----------------------------------------------------------------------------- networkx's order
def _tree_levels(G: NxGraph, source, reverse: bool, limit):
    """Per level d + 1 <= ``limit``: (parents, children) vertex arrays in networkx's order;
    ``source`` one node or a list of them (level 0's order: the list's)."""
    several = isinstance(source, list)
    ids = np.array([G.graph.vertex(x) for x in (source if several else [source])], dtype=np.int64)
    depth = int(limit) if isinstance(limit, (int, np.integer)) and 0 <= limit < len(G) else None
    result = tb.bfs(G.searched(reverse), source, depth_limit=depth,  # labels, if labelled
                    **_search_options())
    dist = result.distances
    src, dst = G.arcs(reverse)
    tree = (dist[src] >= 0) & (dist[dst] == dist[src] + 1)
    arc = np.flatnonzero(tree)  # arc positions: the adjacency order
    level = dist[src[arc]]
    arc = arc[np.argsort(level, kind="stable")]
    bounds = np.searchsorted(np.sort(level), np.arange(level.max(initial=-1) + 2))
    rank = np.zeros(dist.size, dtype=np.int64)  # order of each vertex within its level
    _, first = np.unique(ids, return_index=True)  # a source named twice: its first place
    rank[ids[first]] = first
    for d in range(bounds.size - 1):
        if d + 1 > limit:
            return
        pieces = arc[bounds[d]:bounds[d + 1]]
        tails, heads = src[pieces], dst[pieces]
        order = np.lexsort((pieces, rank[tails]))  # by the tail's order, then adjacency order
        heads, tails = heads[order], tails[order]
        _, first = np.unique(heads, return_index=True)
        first.sort()  # first arcs into each vertex, in discovery order
        children = heads[first]
        rank[children] = np.arange(children.size)
        yield tails[first], children


def _require(G: NxGraph, source, reverse: bool) -> None:
    """networkx's error for a source that is not in G."""
    if source not in G:
        import networkx as nx

        kind = "digraph" if G.is_directed() else "graph"
        raise nx.NetworkXError(f"The node {source} is not in the {kind}.")


def _is_node(G, sources) -> bool:
    """Whether ``sources`` is one node of G (as networkx's ``sources in G`` asks)."""
    try:
        return sources in G
    except TypeError:  # an unhashable list of sources
        return False


def _search_options() -> dict:
    """``runtime`` and ``tasks`` from ``nx.config.backends.taskbfs``."""
    nx = sys.modules.get("networkx")
    config = getattr(getattr(getattr(nx, "config", None), "backends", None), NAME, None)
    return {"runtime": getattr(config, "runtime", None), "tasks": getattr(config, "tasks", None)}
