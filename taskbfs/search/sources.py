"""The vertices a search starts from, as the user names them: one vertex or several, ids
or labels, checked against the graph (:func:`check_sources`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from taskbfs.errors import InvalidParameterError, InvalidVertexError
from taskbfs.search.state import as_sources


def check_sources(graph, source) -> np.ndarray:
    """``source`` (one vertex or several, ids or labels) as the sorted distinct int64 ids
    a search starts from; :class:`~taskbfs.errors.InvalidVertexError` naming a source
    that is not a vertex of ``graph``, :class:`InvalidParameterError` for an empty list
    or one that is not flat."""
    if not several_sources(graph, source):
        return np.array([graph.vertex(source, "source")], dtype=np.int64)
    values = list(source) if isinstance(source, (set, frozenset, range, tuple)) else source
    if graph.labels is not None:  # labels (a networkx grid's are tuples): one by one
        values = list(values)
        if not values:
            raise InvalidParameterError("source is an empty list: give at least one vertex")
        return as_sources([graph.vertex(v, "source") for v in values])
    array = np.asarray(values) if not isinstance(values, list) or _flat(values) else None
    if array is None or array.ndim != 1:
        raise InvalidParameterError(f"source must be a vertex or a flat list of vertices, got "
                                    f"{_shown(source)}")
    if array.size == 0:
        raise InvalidParameterError("source is an empty list: give at least one vertex")
    if array.dtype.kind not in "iu":  # floats, bools, strings: named one by one
        return as_sources([graph.vertex(v, "source") for v in array.tolist()])
    outside = array[(array < 0) | (array >= graph.num_vertices)]
    if outside.size:
        graph.vertex(outside[0].item(), "source")  # raises, naming it
    return as_sources(array)


def several_sources(graph, source) -> bool:
    """Whether ``source`` names several vertices: a list, set, range or array of them (a
    tuple too, unless it is one label of a labelled graph: a networkx grid's node)."""
    if isinstance(source, tuple):
        if graph.labels is None:
            return True
        try:
            graph.vertex(source, "source")
            return False
        except InvalidVertexError:
            return True
    return (isinstance(source, (list, set, frozenset, range))
            or (isinstance(source, np.ndarray) and source.ndim > 0)
            or isinstance(source, pd.Series))


def _flat(values: list) -> bool:
    """Whether none of ``values`` is itself a sequence of vertices (a tuple may be a label)."""
    return not any(isinstance(v, (list, set, frozenset, np.ndarray)) for v in values)


def _shown(value, most: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."
