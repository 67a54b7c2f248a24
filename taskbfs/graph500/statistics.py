"""What the Graph500 benchmark measures: the search keys it samples, the edges a search
traversed, and the TEPS statistics block it prints.

Source
------
Graph500 specification, "Sampling 64 Search Keys" and "Computing and Outputting
Performance Information" (TEPS, output fields, harmonic mean and the Norris (1940)
standard error); ``octave/output.m`` and the C reference ``graph500.c`` (``statistics``)
for the output format.
"""

from __future__ import annotations

import numpy as np

from taskbfs.errors import InvalidParameterError

#: Search keys (roots) per run, as the specification says: "Sampling 64 Search Keys".
SEARCH_KEYS = 64


def traversed_edges(graph, parents) -> int:
    """Number of edges the search traversed, the ``m`` of ``TEPS = m / time``.

    The specification counts "the input edge tuples within the component traversed by
    the search, counting any multiple edges and self-loops". Our :class:`Graph` has
    already dropped self-loops and duplicates, so this counts edges of the cleaned
    graph: undirected, the edges of the traversed component = (sum of the degrees of
    the reached vertices) / 2; directed, the arcs leaving reached vertices = sum of
    their out-degrees. The count is meant for parent arrays that pass :func:`validate`
    (then every edge of a reached vertex has both ends reached).

    Parameters
    ----------
    graph : Graph
    parents : array_like of int, shape (num_vertices,)
        ``-1`` marks an unreached vertex.

    Returns
    -------
    int

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.graph500 import traversed_edges
    >>> g = tb.Graph.from_edges([0, 1, 3], [1, 2, 4])
    >>> traversed_edges(g, [0, 0, 1, -1, -1])
    2
    """
    reached = np.asarray(parents) >= 0
    if reached.shape != (graph.num_vertices,):
        raise InvalidParameterError(
            f"parents must have one entry per vertex ({graph.num_vertices}), "
            f"got shape {reached.shape}"
        )
    total = int(graph.degrees()[reached].sum())
    return total if graph.directed else total // 2


# ---------------------------------------------------------------------- search keys
def search_keys(graph, count: int = SEARCH_KEYS, seed: int = 1) -> np.ndarray:
    """Sample ``count`` distinct search roots among the vertices with degree >= 1.

    As the specification says ("Sampling 64 Search Keys"): roots are sampled at random,
    without replacement, only from vertices connected to some other vertex (degree,
    not counting self-loops, at least one; our graphs hold no self-loops). If fewer
    such vertices exist, all of them are returned, and fewer searches run. For a
    directed graph the degree is the out-degree, so no search is trivial.

    Parameters
    ----------
    graph : Graph
    count : int, default 64
    seed : int, default 1
        Seed of ``numpy.random.default_rng``; the same seed gives the same keys.

    Returns
    -------
    ndarray of int64, shape (min(count, candidates),)
        Distinct vertices in sampling order.

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.graph500 import search_keys
    >>> g = tb.Graph.from_edges([0, 1], [1, 2], num_vertices=5)
    >>> sorted(search_keys(g, count=64).tolist())
    [0, 1, 2]
    """
    try:
        count = int(count)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"count must be an integer, got {count!r}") from None
    if count < 0:
        raise InvalidParameterError(f"count must be >= 0, got {count}")
    candidates = np.flatnonzero(graph.degrees() > 0).astype(np.int64)
    rng = np.random.default_rng(seed)
    return rng.choice(candidates, size=min(count, candidates.size), replace=False)


# ---------------------------------------------------------------------- statistics
#: Output order and names of the statistics, as the reference ``graph500.c`` prints them.
_PLAIN_STATS = ("min", "firstquartile", "median", "thirdquartile", "max", "mean", "stddev")
_RATE_STATS = _PLAIN_STATS[:5] + ("harmonic_mean", "harmonic_stddev")


def teps_statistics(times, edges) -> dict:
    """The Graph500 output statistics of a set of searches.

    For the search times (``*_time``), the traversed edges (``*_nedge``) and the rates
    ``TEPS = nedge / time`` (``*_TEPS``): min, first quartile, median, third quartile,
    max; mean and standard deviation for times and edges; harmonic mean and its
    standard deviation for TEPS ("because TEPS is a rate, the rates are compared using
    harmonic means" -- specification, "Output").

    Definitions follow the specification's executable reference ``octave/output.m``:

    - quartiles: Octave ``statistics`` = ``quantile(x, [.25 .5 .75], 7)``, i.e. linear
      interpolation between order statistics, numpy's default ``np.quantile`` method.
      (The C reference ``graph500.c`` hand-codes the (n+1)p rule with a 0-based index,
      one element off and out of bounds for n < 3; we follow the Octave text.)
    - ``stddev``: sample standard deviation (divisor n - 1).
    - ``harmonic_mean = n / sum(1 / TEPS)``.
    - ``harmonic_stddev = sqrt(sum((1/TEPS - 1/harmonic_mean)**2)) / (n - 1)
      * harmonic_mean**2`` (Norris 1940, as in ``output.m`` and ``graph500.c``), which
      equals ``std(1/TEPS, ddof=1) / (mean(1/TEPS)**2 * sqrt(n - 1))``.

    With a single search the standard deviations are undefined and reported as NaN. A
    zero TEPS (a search that traversed no edge) makes the harmonic mean 0 and its
    standard deviation NaN, as in ``output.m``.

    Parameters
    ----------
    times : array_like of float, shape (nbfs,)
        Search times in seconds, all > 0.
    edges : array_like of int, shape (nbfs,)
        Traversed edges of each search (:func:`traversed_edges`), all >= 0.

    Returns
    -------
    dict
        ``nbfs`` then ``min_time`` ... ``stddev_time``, ``min_nedge`` ...
        ``stddev_nedge``, ``min_TEPS`` ... ``max_TEPS``, ``harmonic_mean_TEPS``,
        ``harmonic_stddev_TEPS`` (floats), in the reference output order.

    Examples
    --------
    >>> from taskbfs.graph500 import teps_statistics
    >>> s = teps_statistics([1.0, 2.0, 4.0], [8, 8, 8])
    >>> s["median_TEPS"], round(s["harmonic_mean_TEPS"], 6)
    (4.0, 3.428571)
    """
    times, edges = _check_runs(times, edges)
    teps = edges / times
    stats: dict = {"nbfs": int(times.size)}
    for label, data, names in (
        ("time", times, _PLAIN_STATS),
        ("nedge", edges, _PLAIN_STATS),
        ("TEPS", teps, _RATE_STATS),
    ):
        values = _order_stats(data) + (
            _harmonic_stats(data) if names is _RATE_STATS else _moment_stats(data)
        )
        stats.update({f"{name}_{label}": float(x) for name, x in zip(names, values, strict=True)})
    return stats


def _check_runs(times, edges):
    times = np.asarray(times, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    if times.ndim != 1 or times.shape != edges.shape or times.size == 0:
        raise InvalidParameterError(
            f"times and edges must be 1-D, non-empty and the same length, "
            f"got shapes {times.shape} and {edges.shape}"
        )
    if not np.all(np.isfinite(times) & (times > 0)):
        raise InvalidParameterError(f"every time must be finite and > 0, got {times.tolist()}")
    if not np.all(np.isfinite(edges) & (edges >= 0)):
        raise InvalidParameterError(f"every edge count must be >= 0, got {edges.tolist()}")
    return times, edges


def _order_stats(x: np.ndarray) -> tuple:
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])  # method="linear" = Octave method 7
    return (x.min(), q1, med, q3, x.max())


def _moment_stats(x: np.ndarray) -> tuple:
    std = x.std(ddof=1) if x.size > 1 else np.nan
    return (x.mean(), std)


def _harmonic_stats(teps: np.ndarray) -> tuple:
    n = teps.size
    if np.any(teps == 0):
        return (0.0, np.nan)
    inv = 1.0 / teps
    hmean = n / inv.sum()
    if n < 2:
        return (hmean, np.nan)
    hstd = np.sqrt(np.sum((inv - 1.0 / hmean) ** 2)) / (n - 1) * hmean**2
    return (hmean, hstd)


def format_statistics(stats: dict) -> str:
    """The statistics as the reference code prints them, one ``name: value`` per line.

    Values use the reference's ``%20.17e`` format; ``nbfs`` is an integer.

    Examples
    --------
    >>> from taskbfs.graph500 import format_statistics, teps_statistics
    >>> print(format_statistics(teps_statistics([2.0], [4])).splitlines()[1])
    min_time: 2.00000000000000000e+00
    """
    lines = []
    for name, value in stats.items():
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            lines.append(f"{name}: {int(value)}")
        else:
            lines.append(f"{name}: {float(value):20.17e}")
    return "\n".join(lines)
