"""The Graph500 validation of a BFS result: the five rules, checked on a parent array.

What it returns
---------------
:func:`validate` returns the BFS level of every vertex (``-1`` = unreached), or raises
:class:`~taskbfs.errors.ValidationError` naming the rule and a witness;
:func:`row_witnesses` checks rules 3-5 on a block of rows (a graph kept on workers runs
it per range there) and :func:`compact_levels` gives the levels it reads.

Approach
--------
Validation checks rules, not one expected tree (there are many valid BFS trees). Levels
are the depths in the parent tree. When the BFS hands in its own depth array
(``levels=``) and every reached vertex there is one level below its parent with the
source alone at level 0, those levels are the tree's depths and rules 1 and 2 hold (one
pass on every core); otherwise they are found by one walk up the parent chains (numba;
each vertex is visited once, so cycles and chains that never reach the source are caught
on the way, and a reported level that differs from the tree's breaks rule 2). Rules 3
and 4 are one pass over the CSR arcs and rule 5 a binary search in a sorted row (of the
child's row for an undirected graph, else the parent's), numba on every core, in blocks
of rows of about equal arcs (:func:`row_witnesses`; a graph kept on workers runs it per
range there). Together the rules imply that the tree depths are the true hop distances:
a tree path is a real path (rules 1, 5), and no edge lets a vertex be reached sooner
(rules 3, 4).

Source
------
Graph500 specification ("Graph 500 Benchmarks 1 and 2", graph500/graph500
``Graph500.org``): "Validation" (rules 1-5, unchanged since v1.2), and its executable
Octave reference ``octave/validate.m``. Overview in Tesch's thesis (``papers/002_*.txt``,
Sec. 3.3).

Encoding
--------
``parents[v]`` is the BFS parent of ``v`` (any integer type); ``parents[source] ==
source``; ``-1`` marks an unreached vertex. Levels are int64, ``-1`` unreached. Directed
graphs are searched along out-edges, so rules 3-5 are read along arcs (see
:func:`validate`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from taskbfs.errors import InvalidParameterError, ValidationError

# Outcome codes of the numba parent-chain walk.
_OK, _CYCLE, _BROKEN = 0, 1, 2


def validate(graph, source, parents, levels=None) -> np.ndarray:
    """Check a BFS parent array against the five Graph500 validation rules.

    Rules (Graph500 specification, "Validation"), for an undirected graph:

    1. the BFS tree is a tree: ``parents[source] == source`` and every reached vertex's
       parent chain reaches the source without a cycle (a well-formed parent array is
       part of this rule: length ``num_vertices``, integers in ``-1 .. n-1``);
    2. each tree edge joins vertices whose levels differ by exactly one;
    3. every edge of the graph has endpoint levels differing by at most one, or both
       endpoints unreached;
    4. the tree spans exactly the source's connected component (no edge joins a reached
       and an unreached vertex);
    5. every vertex and its parent are joined by an edge of the graph.

    For a directed graph the search follows out-edges: rule 3 reads "for every arc
    ``u → v`` with ``u`` reached, ``level(v) <= level(u) + 1``"; rule 4 "the reached set
    is the set reachable from the source" (no arc from a reached to an unreached vertex);
    rule 5 "the arc ``parent → v`` exists".

    Several sources (a search of ``tb.bfs(g, [s1, s2, ...])``): the tree is a forest, one
    tree per source, and the rules read as for one search from a virtual vertex joined to
    every source (each source its own parent at level 0, every other reached vertex's
    parent a neighbour one level nearer the sources; the reached set is what the sources
    reach): :func:`validate` checks exactly that, on the graph with that vertex added (a
    copy of the graph: a :class:`~taskbfs.DistributedGraph` is refused, validate its
    gathered graph).

    Parameters
    ----------
    graph : Graph
    source : int, or several
        The search key(s), as given to :func:`taskbfs.search`.
    parents : array_like of int, shape (num_vertices,)
        Graph500 parent array: ``parents[s] == s`` for each source, ``-1`` unreached.
    levels : array_like of int, shape (num_vertices,), optional
        The depth array the BFS reports (e.g. ``BFSResult.distances``; the
        specification lets a kernel return one "to be used in validation"). When given,
        rule 2 checks it against the tree. Without it, levels are the tree depths and
        rule 2 holds by construction.

    Returns
    -------
    ndarray of int64, shape (num_vertices,)
        The BFS level of every vertex (``-1`` unreached), derived from the tree.

    Raises
    ------
    ValidationError
        A rule is broken; ``rule`` is its number and ``witness`` a vertex or an edge
        ``(u, v)`` that shows it, both also named in the message.
    InvalidVertexError
        ``source`` is not a vertex of the graph.

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.graph500 import validate
    >>> g = tb.Graph.from_edges([0, 1, 0], [1, 2, 3])
    >>> validate(g, 0, [0, 0, 1, 0]).tolist()
    [0, 1, 2, 1]
    >>> validate(g, 0, [0, 0, 0, 0])
    Traceback (most recent call last):
    ...
    taskbfs.errors.ValidationError: Graph500 rule 5 broken: vertex 2 has parent 0 but (0, 2) is not an edge of the graph
    """
    from taskbfs.search.sources import check_sources

    sources = check_sources(graph, source)  # labels, for a labelled graph
    if sources.size > 1:
        return _validate_several(graph, sources, parents, levels)
    source = int(sources[0])
    parents = _check_parent_array(parents, graph.num_vertices)
    tree_levels = _levels_if_the_trees(levels, parents, source)
    if tree_levels is not None:  # rules 1 and 2 hold
        levels = None
    else:
        tree_levels = _tree_levels_or_raise(parents, source)
    by_rows = getattr(graph, "row_witnesses", None)  # a graph kept in pieces on workers
    if by_rows is not None:
        witness = by_rows(tree_levels, parents, source)
    else:  # the whole graph as one range, on every core
        witness = row_witnesses(graph.indptr, graph.indices, 0, tree_levels, parents, source,
                                graph.directed, _cores(), own_parents=not graph.directed)
    _raise_witnesses(witness, graph.directed, levels, parents, tree_levels, source)
    return tree_levels


def _validate_several(graph, sources: np.ndarray, parents, levels) -> np.ndarray:
    """:func:`validate` of a search from several ``sources``: one search from a vertex
    ``n`` added to the graph, with an arc to every source (both ways when undirected)."""
    from taskbfs.graph import Graph

    if not isinstance(graph, Graph):
        raise InvalidParameterError("validate with several sources needs the graph in this "
                                    "process (a tb.Graph: validate g.gather())")
    n = graph.num_vertices
    parents = _check_parent_array(parents, n)
    wrong = sources[parents[sources] != sources]
    if wrong.size:
        v = int(wrong[0])
        raise ValidationError(1, f"source {v} has parent {int(parents[v])}, not itself", v)
    arcs = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
    joined = Graph.from_edges(np.concatenate([arcs, np.full(sources.size, n)]),
                              np.concatenate([graph.indices.astype(np.int64), sources]),
                              n + 1, directed=graph.directed, relabel=False)
    tree = np.append(parents.astype(np.int64), n)
    tree[sources] = n
    if levels is not None:
        lv = np.asarray(levels)
        if lv.ndim == 1 and lv.size == n and np.issubdtype(lv.dtype, np.integer):
            levels = np.append(np.where(lv >= 0, lv.astype(np.int64) + 1, -1), 0)
    try:
        depths = validate(joined, n, tree, levels)
    except ValidationError as exc:
        raise ValidationError(exc.rule, f"{str(exc).split(': ', 1)[1]} (vertex {n} stands "
                              f"for the sources: a virtual vertex at level 0 joined to each; levels here "
                              f"are distances + 1)",
                              exc.witness) from None
    return np.where(depths[:n] >= 1, depths[:n] - 1, -1)


def row_witnesses(indptr, indices, lo: int, levels: np.ndarray, parents: np.ndarray,
                  source: int, directed: bool, threads: int = 1,
                  own_parents: bool = False) -> dict:
    """Rules 3, 4 and 5 over the rows ``lo .. lo + len(indptr) - 2`` of a graph (a
    range's local CSR: ``indptr`` starts at 0, ``indices`` are global ids), given every
    vertex's tree level and parent: ``{3: (u, v) | None, 4: (u, v) | None, 5: v | None}``,
    each the first witness in row order (rule 5: the smallest vertex whose parent's row
    lies here and does not hold it). On ``threads`` threads, each over a block of the
    rows (of about equal arcs) and of the vertices.

    With ``own_parents`` (an undirected graph only), ``parents`` holds the parents of
    these rows' vertices alone, and rule 5's witness is the smallest of them whose own row
    does not hold its parent: in an undirected graph v's row holds p exactly when p's row
    holds v, so over all ranges the smallest witness is the same."""
    hi = lo + indptr.size - 1
    witness = _level_witnesses(indptr, indices, lo, levels, directed, threads)
    if own_parents:
        if directed:
            raise InvalidParameterError("own_parents needs an undirected graph")
        missing = _on_row_blocks(lambda first, stop: _first_row_without_its_parent(
            indptr[first : stop + 1], indices, lo + first, parents[first:stop], source),
            indptr, threads)
    else:
        missing = _on_blocks(lambda first, stop: _first_missing_parent_arc_in(
            indptr, indices, lo, hi, parents, source, first, stop), parents.size, threads)
    witness[5] = next((int(v) for v in missing if v >= 0), None)  # the first block's
    return witness


def _cores() -> int:
    """The threads a whole-graph check runs on: this host's cores."""
    return os.cpu_count() or 1


def _on_blocks(check, size: int, threads: int) -> list:
    """``check(first, stop)`` over ``threads`` equal blocks of ``range(size)``, side by
    side on a thread each (``check`` is numba code that releases the GIL); its answers in
    block order."""
    cuts = np.linspace(0, size, threads + 1).astype(np.int64)
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda b: check(cuts[b], cuts[b + 1]), range(threads)))


def compact_levels(levels: np.ndarray) -> np.ndarray:
    """``levels`` (-1 unreached) in the smallest signed integer type that holds them: what
    rules 3 and 4 read at random, so fewer bytes to send to the workers and to cache."""
    top = int(levels.max()) if levels.size else 0
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return levels.astype(dtype, copy=False)
    return levels


def _on_row_blocks(check, indptr, threads: int) -> list:
    """``check(first_row, stop_row)`` over ``threads`` blocks of the rows of a local CSR
    (``indptr``) of about equal arcs, side by side on a thread each; its answers in block
    order."""
    rows = np.searchsorted(indptr, np.linspace(0, indptr[-1], threads + 1)[1:-1])
    rows = np.concatenate([[0], rows, [indptr.size - 1]]).astype(np.int64)
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda b: check(rows[b], rows[b + 1]), range(threads)))


def _level_witnesses(indptr, indices, lo: int, levels: np.ndarray, directed: bool,
                     threads: int = 1) -> dict:
    """Rules 3 and 4 over the rows ``lo ..`` of a CSR (``indptr`` local, ``indices``
    global): ``{3: (u, v) | None, 4: (u, v) | None}``, each the first breaking arc in
    row order; on ``threads`` threads, each over a block of rows of about equal arcs."""
    lev = levels if levels.dtype.itemsize <= 4 else compact_levels(levels)
    breaks = _on_row_blocks(lambda first, stop: _first_level_breaks(
        indptr[first : stop + 1], indices, lo + first, lev, directed), indptr, threads)
    witness = {4: None, 3: None}
    for u4, v4, u3, v3 in breaks:  # the first block's witness is the first in row order
        if witness[4] is None and u4 >= 0:
            witness[4] = (int(u4), int(v4))
        if witness[3] is None and u3 >= 0:
            witness[3] = (int(u3), int(v3))
    return witness


@njit(cache=True, nogil=True)
def _first_level_breaks(indptr, indices, lo, levels, directed):  # pragma: no cover
    """``(u4, v4, u3, v3)``: the first arc in row order breaking rule 4 and the first
    breaking rule 3 (-1 where none), over the rows of a local CSR whose first is ``lo``;
    the scan ends once both are found."""
    u4, v4, u3, v3 = -1, -1, -1, -1
    for r in range(indptr.size - 1):
        u = lo + r
        lu = levels[u]
        if directed and lu < 0:  # arcs from an unreached vertex are never examined
            continue
        for a in range(indptr[r], indptr[r + 1]):
            v = indices[a]
            lv = levels[v]
            if directed:
                breaks4, breaks3 = lv < 0, lv > lu + 1
            else:
                breaks4 = (lu >= 0) != (lv >= 0)
                breaks3 = lu >= 0 and lv >= 0 and abs(lu - lv) > 1
            if breaks4 and u4 < 0:
                u4, v4 = u, v
            if breaks3 and u3 < 0:
                u3, v3 = u, v
        if u4 >= 0 and u3 >= 0:
            break
    return u4, v4, u3, v3


def _raise_witnesses(witness: dict, directed: bool, levels, parents, tree_levels,
                     source: int) -> None:
    """Raise the rule a graph's :func:`row_witnesses` found broken, in the order
    :func:`validate` checks them."""
    if witness[5] is not None:
        _raise_rule5(witness[5], parents, directed)
    if levels is not None:
        _check_reported_levels(levels, parents, tree_levels, source)
    if witness[4] is not None:
        _raise_rule4(witness[4], tree_levels, directed)
    if witness[3] is not None:
        _raise_rule3(witness[3], tree_levels, directed)


def _check_parent_array(parents, n: int) -> np.ndarray:
    """Rule 1, well-formedness: one integer entry per vertex, each in -1 .. n-1."""
    arr = np.asarray(parents)
    if arr.ndim != 1 or arr.size != n:
        raise ValidationError(
            1,
            f"parents must be a 1-D array with one entry per vertex ({n}), "
            f"got shape {arr.shape}",
            arr.shape,
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(1, f"parents must hold integers, got dtype {arr.dtype}", None)
    if np.issubdtype(arr.dtype, np.unsignedinteger):  # no -1: every entry must be < n
        bad = np.flatnonzero(arr >= n)
        v = int(bad[0]) if bad.size else -1
    else:
        v = _first_outside(arr, n)
    if v >= 0:
        raise ValidationError(
            1, f"vertex {v} has parent {int(arr[v])}, outside -1..{n - 1}", v
        )
    # signed integers as they came (int32 from taskbfs: half the bytes to read and send)
    return arr if np.issubdtype(arr.dtype, np.signedinteger) else arr.astype(np.int64)


def _first_outside(parents: np.ndarray, n: int) -> int:
    """The first vertex whose parent is outside ``-1 .. n-1``, else -1; on every core."""
    found = _on_blocks(lambda first, stop: _first_outside_in(parents, n, first, stop),
                       parents.size, _cores())
    return next((int(v) for v in found if v >= 0), -1)


@njit(cache=True, nogil=True)
def _first_outside_in(parents, n, first, stop):  # pragma: no cover
    for v in range(first, stop):
        if parents[v] < -1 or parents[v] >= n:
            return v
    return -1


def _levels_if_the_trees(levels, parents: np.ndarray, source: int) -> np.ndarray | None:
    """The reported ``levels`` as the tree's depths (int64) when they prove rules 1 and 2
    at once, else None (then the parent chains are walked, and a broken rule named).

    They do when the source is its own parent at level 0, every other vertex with a
    parent is one level below it at a level >= 1, and every vertex without one is at -1:
    each chain then descends level by level to the only vertex at level 0, the source,
    so the parents form a tree whose depths are ``levels``. Checked on every core."""
    if levels is None:
        return None
    lv = np.asarray(levels)
    if lv.ndim != 1 or lv.size != parents.size or not np.issubdtype(lv.dtype, np.integer):
        return None
    hold = _on_blocks(lambda first, stop: _levels_are_the_trees(parents, lv, source, first,
                                                                stop), lv.size, _cores())
    return lv.astype(np.int64) if all(hold) else None


@njit(cache=True, nogil=True)
def _levels_are_the_trees(parents, levels, source, first, stop):  # pragma: no cover
    """Whether vertices ``first .. stop - 1`` meet :func:`_levels_if_the_trees`'s terms."""
    for v in range(first, stop):
        p, level = parents[v], levels[v]
        if v == source:
            if p != source or level != 0:
                return False
        elif p < 0:
            if level != -1:
                return False
        elif level < 1 or levels[p] != level - 1:
            return False
    return True


def _tree_levels_or_raise(parents: np.ndarray, source: int) -> np.ndarray:
    """Rule 1: depths in the parent tree, or a ValidationError for a malformed tree."""
    if parents[source] != source:
        raise ValidationError(
            1,
            f"the source vertex {source} has parent {int(parents[source])}; "
            f"parents[source] must be the source itself",
            source,
        )
    levels = np.full(parents.size, -1, dtype=np.int64)
    stack = np.empty(parents.size, dtype=np.int64)
    code, a, b = _walk_parent_chains(parents, source, levels, stack)
    if code == _CYCLE:
        raise ValidationError(
            1,
            f"the parent chain from vertex {a} runs into a cycle through vertex {b} "
            f"and never reaches the source {source}",
            b,
        )
    if code == _BROKEN:
        raise ValidationError(
            1,
            f"vertex {a} has parent {b}, but {b} is unreached (parents[{b}] == -1), "
            f"so the chain from {a} never reaches the source {source}",
            a,
        )
    return levels


@njit(cache=True)
def _walk_parent_chains(parents, source, levels, stack):  # pragma: no cover - numba
    """Fill ``levels`` with tree depths by walking each unlevelled parent chain upward.

    ``levels`` enters as -1 everywhere; -2 marks the chain being walked. Each vertex is
    pushed at most once over the whole run, so the walk is O(n). Returns
    ``(_OK, -1, -1)``, ``(_CYCLE, start, vertex on the cycle)`` or
    ``(_BROKEN, vertex, its unreached parent)``.
    """
    levels[source] = 0
    for v in range(parents.size):
        if parents[v] < 0 or levels[v] >= 0:
            continue
        top = 0
        u = v
        while levels[u] == -1:
            p = parents[u]
            if p < 0:
                return _BROKEN, stack[top - 1], u
            levels[u] = -2
            stack[top] = u
            top += 1
            u = p
        if levels[u] == -2:
            return _CYCLE, v, u
        depth = levels[u]
        while top > 0:
            top -= 1
            depth += 1
            levels[stack[top]] = depth
    return _OK, -1, -1


def _raise_rule5(v: int, parents: np.ndarray, directed: bool):
    p = int(parents[v])
    kind = "an arc" if directed else "an edge"
    raise ValidationError(5, f"vertex {v} has parent {p} but ({p}, {v}) is not {kind} of the graph", v)


@njit(cache=True, nogil=True)
def _first_missing_parent_arc_in(indptr, indices, lo, hi, parents, source, first,
                                 stop):  # pragma: no cover
    """The first of the vertices ``first .. stop - 1`` whose parent is in ``[lo, hi)``
    and whose parent's sorted row (rows local to the range) does not hold it, else -1: a
    binary search inside one row per vertex."""
    for v in range(first, stop):
        p = parents[v]
        if p < lo or p >= hi or v == source:
            continue
        row = indices[indptr[p - lo] : indptr[p - lo + 1]]
        k = np.searchsorted(row, v)
        if k == row.size or row[k] != v:
            return v
    return -1


@njit(cache=True, nogil=True)
def _first_row_without_its_parent(indptr, indices, lo, parents, source):  # pragma: no cover
    """The first vertex ``lo + r`` (a row of a local CSR whose ``parents[r]`` is given)
    whose sorted row does not hold its parent, else -1."""
    for r in range(indptr.size - 1):
        p = parents[r]
        if p < 0 or lo + r == source:
            continue
        row = indices[indptr[r] : indptr[r + 1]]
        k = np.searchsorted(row, p)
        if k == row.size or row[k] != p:
            return lo + r
    return -1


def _check_reported_levels(levels, parents, tree_levels, source: int) -> None:
    """Rule 2 on the depth array the BFS reported: it must be the tree's depths."""
    lv = np.asarray(levels)
    n = parents.size
    if lv.ndim != 1 or lv.size != n or not np.issubdtype(lv.dtype, np.integer):
        raise ValidationError(
            2,
            f"levels must be a 1-D integer array with one entry per vertex ({n}), "
            f"got shape {lv.shape} and dtype {lv.dtype}",
            lv.shape,
        )
    lv = lv.astype(np.int64, copy=False)
    if lv[source] != 0:
        raise ValidationError(
            2, f"the source vertex {source} has level {int(lv[source])}, not 0", source
        )
    reached = parents >= 0
    bad = np.flatnonzero(reached != (lv >= 0))
    if bad.size:
        v = int(bad[0])
        raise ValidationError(
            2,
            f"vertex {v} has parent {int(parents[v])} but level {int(lv[v])}: "
            f"reached and levelled vertices differ",
            v,
        )
    bad = np.flatnonzero(reached & (lv != tree_levels))
    if bad.size:
        # The first mismatch along a chain is a tree edge whose levels do not differ by 1.
        v = int(bad[np.argmin(tree_levels[bad])])
        p = int(parents[v])
        raise ValidationError(
            2,
            f"tree edge ({p}, {v}) joins level {int(lv[p])} to level {int(lv[v])}: "
            f"vertex {v} must be exactly one level below its parent {p}",
            v,
        )


def _raise_rule4(edge, levels, directed: bool):
    u, v = edge
    if directed:
        msg = (
            f"arc ({u}, {v}) leaves reached vertex {u} (level {int(levels[u])}) for "
            f"vertex {v}, which is unreached: the tree misses a reachable vertex"
        )
    else:
        r, x = (u, v) if levels[u] >= 0 else (v, u)
        msg = (
            f"edge ({u}, {v}) joins reached vertex {r} (level {int(levels[r])}) and "
            f"unreached vertex {x}: the tree does not span the connected component"
        )
    raise ValidationError(4, msg, edge)


def _raise_rule3(edge, levels, directed: bool):
    u, v = edge
    kind, bound = ("arc", "at most one deeper than") if directed else ("edge", "within one of")
    raise ValidationError(
        3,
        f"{kind} ({u}, {v}) joins level {int(levels[u])} to level {int(levels[v])}; "
        f"the level of {v} must be {bound} the level of {u}",
        edge,
    )
