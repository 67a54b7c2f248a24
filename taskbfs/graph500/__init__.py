"""Graph500 benchmark pieces: validation of a BFS result, traversed-edge counts, search
keys and the TEPS statistics block.

What it returns
---------------
- :func:`validate` checks a parent array against the five Graph500 validation rules and
  returns the BFS level of every vertex (``-1`` = unreached), or raises
  :class:`~taskbfs.errors.ValidationError` naming the rule and a witness.
- :func:`traversed_edges` gives the edge count ``m`` that TEPS divides by.
- :func:`search_keys` samples the search roots.
- :func:`teps_statistics` / :func:`format_statistics` compute and print the output block.

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
``Graph500.org``): "Sampling 64 Search Keys", "Validation" (rules 1-5, unchanged since
v1.2), "Computing and Outputting Performance Information" (TEPS, output fields, harmonic
mean and the Norris (1940) standard error), and its executable Octave reference
(``octave/validate.m``, ``octave/output.m``); the C reference ``graph500.c``
(``statistics``) for the output format. Overview in Tesch's thesis
(``papers/002_*.txt``, Sec. 3.3).

Encoding
--------
``parents[v]`` is the BFS parent of ``v`` (any integer type); ``parents[source] ==
source``; ``-1`` marks an unreached vertex. Levels are int64, ``-1`` unreached. Directed
graphs are searched along out-edges, so rules 3-5 are read along arcs (see
:func:`validate`).

Modules: :mod:`~taskbfs.graph500.validation` (the five rules) and
:mod:`~taskbfs.graph500.statistics` (keys, traversed edges, TEPS); every name below is
importable from here.
"""

from taskbfs.graph500.statistics import (
    SEARCH_KEYS,
    format_statistics,
    search_keys,
    teps_statistics,
    traversed_edges,
)
from taskbfs.graph500.validation import compact_levels, row_witnesses, validate

__all__ = [
    "validate",
    "traversed_edges",
    "search_keys",
    "teps_statistics",
    "format_statistics",
    "SEARCH_KEYS",
    "row_witnesses",
    "compact_levels",
]
