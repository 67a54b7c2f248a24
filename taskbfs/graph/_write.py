"""A graph written to a file in any format: :func:`write_graph` (``Graph.save`` and
:func:`taskbfs.graph.save_graph` call it).

Each format module writes its own (``_npz``, ``_mtx``, ``_edgelist``); this one picks the
format and refuses what it cannot hold. No ``Graph`` is imported: the writers read a
graph's arrays, its size, ``directed`` and ``labels``.
"""

from __future__ import annotations

import os

from taskbfs.errors import InvalidParameterError
from taskbfs.graph._edgelist import _write_edgelist
from taskbfs.graph._files import _resolve_format
from taskbfs.graph._mtx import _write_mtx
from taskbfs.graph._npz import _write_npz

__all__ = ["write_graph"]


def write_graph(graph, path, format: str | None = None) -> None:
    """Write ``graph`` to ``path`` in ``format`` (default: from the suffix); a text format
    refuses a labelled graph (see :func:`taskbfs.graph.save_graph`)."""
    path = os.fspath(path)
    fmt = _resolve_format(path, format)
    if graph.labels is not None and fmt != "npz":
        raise InvalidParameterError(
            f"{path}: a {fmt} file has integer vertex ids only, and this graph's vertices are "
            "labelled (Graph.labels); save it as .npz, which keeps the labels"
        )
    if fmt == "npz":
        _write_npz(graph, path)
    elif fmt == "mtx":
        _write_mtx(graph, path)
    else:
        _write_edgelist(graph, path)
