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
Validation checks rules, not one expected tree (there are many valid BFS trees): how, in
:mod:`~taskbfs.graph500.validation`; the figures as the specification defines them, in
:mod:`~taskbfs.graph500.statistics`.

Source
------
Graph500 specification ("Graph 500 Benchmarks 1 and 2", graph500/graph500
``Graph500.org``): "Sampling 64 Search Keys", "Validation" (rules 1-5, unchanged since
v1.2), "Computing and Outputting Performance Information" (TEPS, output fields, harmonic
mean and the Norris (1940) standard error), and its executable Octave reference
(``octave/validate.m``, ``octave/output.m``); the C reference ``graph500.c``
(``statistics``) for the output format. Overview in Tesch's thesis
(``papers/002_*.txt``, Sec. 3.3).

Encoding: as :mod:`~taskbfs.graph500.validation` says (``parents[source] == source``,
``-1`` unreached).

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
