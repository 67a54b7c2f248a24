"""taskbfs's ``.npz`` graph files: the CSR arrays written, and read back checked.

What it returns
---------------
:func:`_write_npz`; :func:`_npz_arrays` -> ``(indptr, indices, num_vertices, directed,
labels)``, arrays checked to obey the ``Graph`` invariants (sorted rows, no self-loops
or repeats, symmetric when undirected) in compiled passes with no temporary the size of
the arcs. No ``Graph`` is built here (:mod:`taskbfs.graph.io` builds it).

Encoding
--------
:func:`numpy.savez` of ``indptr``, ``indices``, ``num_vertices``, ``directed``,
``taskbfs_version`` (:data:`NPZ_VERSION`) and, when the graph has them, ``labels``
(strings or numbers of one kind: kept without pickling).
"""

from __future__ import annotations

import zipfile

import numpy as np
from numba import njit

from taskbfs.errors import GraphFormatError, InvalidParameterError
from taskbfs.graph import _threads
from taskbfs.graph._csr import index_dtype

#: Version of the .npz layout written by :func:`save_graph`.
NPZ_VERSION = 1
_NPZ_KEYS = ("taskbfs_version", "indptr", "indices", "num_vertices", "directed")


def _write_npz(graph, path: str) -> None:
    """Write ``graph`` (a :class:`~taskbfs.graph.Graph`) as a taskbfs ``.npz`` file."""
    extra = {} if graph.labels is None else {"labels": _plain_labels(graph.labels, path)}
    with open(path, "wb") as f:
        np.savez(
            f,
            taskbfs_version=np.int64(NPZ_VERSION),
            indptr=graph.indptr,
            indices=graph.indices,
            num_vertices=np.int64(graph.num_vertices),
            directed=np.bool_(graph.directed),
            **extra,
        )


def _plain_labels(labels: np.ndarray, path: str) -> np.ndarray:
    """Labels as an array .npz keeps without pickling (strings or numbers of one kind)."""
    if labels.dtype != object:
        return labels
    kinds = {type(x) for x in labels.tolist()}
    plain = np.asarray(labels.tolist()) if len(kinds) == 1 and kinds <= {str, int, float} else None
    if plain is None or plain.dtype == object or plain.shape != labels.shape:
        raise InvalidParameterError(
            f"{path}: .npz keeps labels that are all strings or all numbers; these are "
            f"{', '.join(sorted(k.__name__ for k in kinds))} (save graph.labels yourself)"
        )
    return plain


def _npz_arrays(path: str):
    """``(indptr, indices, num_vertices, directed, labels)`` of a taskbfs ``.npz`` file,
    checked (:func:`_check_csr`); a :class:`GraphFormatError` naming the file otherwise."""
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in _NPZ_KEYS if k not in z.files]
            if missing:
                raise GraphFormatError(
                    f"not a taskbfs graph file: missing array(s) {', '.join(missing)}", path
                )
            data = {k: z[k] for k in _NPZ_KEYS}
            labels = z["labels"] if "labels" in z.files else None
    except GraphFormatError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise GraphFormatError(f"cannot read as a taskbfs .npz file ({exc})", path) from None
    version = _npz_scalar(data, "taskbfs_version", path)
    if version != NPZ_VERSION:
        raise GraphFormatError(
            f"taskbfs .npz version {version} is not supported (this taskbfs reads version {NPZ_VERSION})",
            path,
        )
    n = _npz_scalar(data, "num_vertices", path)
    if data["directed"].shape != () or data["directed"].dtype != np.bool_:
        raise GraphFormatError("directed must be a boolean scalar", path)
    directed = bool(data["directed"])
    indptr, indices = _check_csr(data["indptr"], data["indices"], n, directed, path)
    if labels is not None and labels.shape != (n,):
        raise GraphFormatError(f"labels must hold one label per vertex ({n}), got shape {labels.shape}", path)
    return indptr, indices, n, directed, labels


def _npz_scalar(data: dict, key: str, path: str) -> int:
    value = data[key]
    if value.shape != () or not np.issubdtype(value.dtype, np.integer):
        raise GraphFormatError(f"{key} must be an integer scalar", path)
    return int(value)


def _check_csr(indptr, indices, n: int, directed: bool, path: str):
    """Cheap O(arcs) checks that saved CSR arrays obey the Graph invariants."""

    def bad(message):
        return GraphFormatError(f"corrupt taskbfs .npz: {message}", path)

    if n < 1:
        raise bad(f"num_vertices = {n}")
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if arr.ndim != 1 or arr.dtype.kind != "i":
            raise bad(f"{name} must be a 1-D signed integer array")
    if indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        raise bad(f"indptr must have {n + 1} entries from 0 to len(indices) = {indices.size}")
    degrees = np.diff(indptr)
    if degrees.size and degrees.min() < 0:
        raise bad("indptr decreases")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise bad(f"indices name vertices outside 0..{n - 1}")
    blocks = _row_blocks(indptr)
    problem = next((p for p in _threads.run(lambda b: _row_problem(indptr, indices, *b), blocks,
                                            _threads.cores()) if p != _ROW_OK), _ROW_OK)
    if problem == _ROW_UNSORTED:
        raise bad("a row is unsorted or holds a duplicate")
    if problem == _ROW_SELF_LOOP:
        raise bad("self-loops are stored")
    if not directed and not all(_threads.run(lambda b: _symmetric_targets(indptr, indices, *b),
                                             _row_blocks(indptr, _threads.cores()),
                                             _threads.cores())):
        u = int(_asymmetric_arc(indptr, indices))  # which arc, once: the slow search
        v = int(indices[indptr[u]:indptr[u + 1]][~_has_arc_back(indptr, indices, u)][0])
        raise bad(f"undirected graph is not symmetric: arc {u}->{v} is stored, {v}->{u} is not")
    return indptr.astype(np.int64, copy=False), indices.astype(index_dtype(n), copy=False)


_ROW_OK, _ROW_UNSORTED, _ROW_SELF_LOOP = 0, 1, 2


def _row_blocks(indptr: np.ndarray, parts: int | None = None) -> list[tuple[int, int]]:
    """``parts`` (default four per core) blocks of rows of about equal arcs, in row order,
    for the checks on every core (:func:`taskbfs.graph._threads.run`)."""
    n = indptr.size - 1
    parts = 4 * _threads.cores() if parts is None else parts
    rows = np.unique(np.clip(np.searchsorted(indptr, _threads.cuts(int(indptr[-1]), parts)),
                             0, n))
    rows[0], rows[-1] = 0, n
    return [(int(a), int(b)) for a, b in zip(rows[:-1], rows[1:], strict=True)] or [(0, n)]


@njit(nogil=True, cache=True)
def _symmetric_targets(indptr, indices, lo, hi):  # pragma: no cover - numba
    """Whether the arcs into ``lo .. hi`` are exactly the reverses of those rows' arcs: rows
    are sorted, so the sources u of the arcs u->v, met in increasing order, must be row v's
    entries in order, and all of them. One pass over every arc, a cursor per row of the
    block; exact, with no temporary the size of the arcs."""
    cursor = indptr[lo:hi + 1].copy()
    for u in range(indptr.size - 1):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if lo <= v < hi:
                at = cursor[v - lo]
                if at >= indptr[v + 1] or indices[at] != u:
                    return False
                cursor[v - lo] = at + 1
    for v in range(lo, hi):
        if cursor[v - lo] != indptr[v + 1]:
            return False
    return True


@njit(nogil=True, cache=True)
def _asymmetric_arc(indptr, indices):  # pragma: no cover - numba
    """The first vertex u with an arc u->v whose reverse v->u is not stored, or -1; rows
    are sorted (checked before), so each reverse is a binary search."""
    for u in range(indptr.size - 1):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            j = np.searchsorted(indices[indptr[v]:indptr[v + 1]], u)
            if j >= indptr[v + 1] - indptr[v] or indices[indptr[v] + j] != u:
                return u
    return -1


def _has_arc_back(indptr, indices, u: int) -> np.ndarray:
    """For each arc u->v, whether v->u is stored (used once, to name a missing one)."""
    return np.array([u in indices[indptr[v]:indptr[v + 1]]
                     for v in indices[indptr[u]:indptr[u + 1]].tolist()], dtype=bool)


@njit(nogil=True, cache=True)
def _row_problem(indptr, indices, lo, hi):  # pragma: no cover - numba
    """Whether a row of ``lo .. hi`` of valid CSR arrays is unsorted or holds a repeat, or
    a self-loop, in one pass with no temporary (numpy's diff and repeat cost 9 bytes an
    arc, several times the CSR of a .npz being read)."""
    for v in range(lo, hi):
        for k in range(indptr[v], indptr[v + 1]):
            if k > indptr[v] and indices[k] <= indices[k - 1]:
                return _ROW_UNSORTED
            if indices[k] == v:
                return _ROW_SELF_LOOP
    return _ROW_OK
