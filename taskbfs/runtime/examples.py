"""Two task programs that are not BFS, written on the runtime as one writes them in OmpSs.

What it returns
---------------
:func:`cholesky` returns the lower Cholesky factor ``L`` of a symmetric positive definite
matrix (``L @ L.T == a``); :func:`summed_area_table` returns the 2-D inclusive prefix sum
``np.cumsum(np.cumsum(a, 0), 1)``. Both are assembled from tiles gathered with
:meth:`Program.gather`.

Approach
--------
The matrix is cut into ``tile x tile`` blocks, each a datum named ``"A[i,j]"`` (or
``"S[i,j]"``) in the program's data directory. Tasks declare what they read (``ins``) and
update (``inouts``); the runtime derives the task graph from those declarations alone,
exactly as OmpSs does from ``#pragma omp task in(...) inout(...)``:

* tiled Cholesky (right-looking; the classic OmpSs/StarPU example): ``potrf`` on the
  diagonal tile, ``trsm`` below it, ``syrk``/``gemm`` on the trailing matrix;
* a wavefront (the dependency shape of Smith–Waterman or a Gauss–Seidel sweep): tile
  ``(i, j)`` is ``inout`` on itself and ``in`` on its north, west and north-west
  neighbours, so the anti-diagonals run in parallel. The borders are zero tiles named
  ``"S[-1,j]"`` / ``"S[i,-1]"``, which keeps every tile task the same shape.

Every task has an ``smp`` and a ``cuda`` implementation (the same numpy code: enough to
exercise placement on a cluster with a GPU worker); ``size`` is the task's work in
flops or elements, which the hybrid policy compares with λ.

Reference: Duran et al., "OmpSs: a proposal for programming heterogeneous multi-core
architectures" (2011); Buttari et al., "A class of parallel tiled linear algebra
algorithms for multicore architectures" (2009) for the tiled Cholesky.
"""

from __future__ import annotations

import contextlib

import numpy as np

from taskbfs.errors import InvalidParameterError
from taskbfs.runtime.task import Task


# ---------------------------------------------------------------- tile kernels (numpy only)
def _potrf(a_kk):
    return np.linalg.cholesky(a_kk)


def _trsm(l_kk, a_ik):
    # a_ik <- a_ik @ inv(l_kk).T, i.e. solve l_kk @ x.T = a_ik.T
    return np.linalg.solve(l_kk, a_ik.T).T


def _syrk(a_ik, a_ii):
    return a_ii - a_ik @ a_ik.T


def _gemm(a_ik, a_jk, a_ij):
    return a_ij - a_ik @ a_jk.T


def _sat_tile(north, west, north_west, tile):
    # north's last row / west's last column already hold the sums of everything above /
    # left of this tile; their overlap (north-west's corner) is counted twice.
    local = np.cumsum(np.cumsum(tile, axis=0), axis=1)
    return local + north[-1, :][None, :] + west[:, -1][:, None] - north_west[-1, -1]


POTRF = Task("potrf", smp=_potrf, cuda=_potrf)
TRSM = Task("trsm", smp=_trsm, cuda=_trsm)
SYRK = Task("syrk", smp=_syrk, cuda=_syrk)
GEMM = Task("gemm", smp=_gemm, cuda=_gemm)
SAT_TILE = Task("sat_tile", smp=_sat_tile, cuda=_sat_tile)


# ---------------------------------------------------------------- programs
def cholesky(program, a, tile: int, batch: bool = True) -> np.ndarray:
    """Tiled Cholesky factorisation ``a = L @ L.T`` as a task program.

    Parameters
    ----------
    program : Program
        Where the tiles ``"A[i,j]"`` live and the tasks run.
    a : ndarray, shape (n, n)
        Symmetric positive definite; ``n`` must be a multiple of ``tile``.
    tile : int
        Tile size.
    batch : bool
        Send all tasks in one message (:meth:`Program.batch`) or one by one.

    Returns
    -------
    ndarray, shape (n, n)
        The lower-triangular factor ``L``.

    Examples
    --------
    >>> from taskbfs.runtime import Program, Runtime               # doctest: +SKIP
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> with Runtime() as rt:                                      # doctest: +SKIP
    ...     cholesky(Program(rt), a, tile=1)
    array([[2., 0.],
           [1., 2.]])
    """
    a = np.asarray(a, dtype=float)
    nt = _num_tiles(a, tile)
    b = tile
    blk = lambda i, j: a[i * b:(i + 1) * b, j * b:(j + 1) * b]  # noqa: E731
    name = "A[{},{}]".format
    for i in range(nt):
        for j in range(i + 1):
            program.put(name(i, j), blk(i, j).copy())

    with program.batch() if batch else contextlib.nullcontext():
        for k in range(nt):
            program.submit(POTRF, inouts=[name(k, k)], size=b**3 // 3)
            for i in range(k + 1, nt):
                program.submit(TRSM, ins=[name(k, k)], inouts=[name(i, k)], size=b**3)
            for i in range(k + 1, nt):
                program.submit(SYRK, ins=[name(i, k)], inouts=[name(i, i)], size=b**3)
                for j in range(k + 1, i):
                    program.submit(GEMM, ins=[name(i, k), name(j, k)], inouts=[name(i, j)],
                                   size=2 * b**3)

    lower = [(i, j) for i in range(nt) for j in range(i + 1)]
    tiles = program.gather([name(i, j) for i, j in lower])
    out = np.zeros_like(a)
    for (i, j), t in zip(lower, tiles, strict=True):
        out[i * b:(i + 1) * b, j * b:(j + 1) * b] = t
    return out


def summed_area_table(program, a, tile: int, batch: bool = True) -> np.ndarray:
    """Wavefront over tiles: the 2-D inclusive prefix sum of ``a``.

    Parameters
    ----------
    program : Program
        Where the tiles ``"S[i,j]"`` live and the tasks run.
    a : ndarray, shape (m, n)
        Both dimensions must be multiples of ``tile``.
    tile : int
        Tile size.
    batch : bool
        Send all tasks in one message (:meth:`Program.batch`) or one by one.

    Returns
    -------
    ndarray, shape (m, n)
        ``np.cumsum(np.cumsum(a, 0), 1)``.

    Examples
    --------
    >>> from taskbfs.runtime import Program, Runtime               # doctest: +SKIP
    >>> with Runtime() as rt:                                      # doctest: +SKIP
    ...     summed_area_table(Program(rt), np.ones((4, 4)), tile=2)[-1, -1]
    16.0
    """
    a = np.asarray(a)
    mt, nt = _num_tiles(a, tile, square=False)
    b = tile
    name = "S[{},{}]".format
    zero = np.zeros((b, b), dtype=a.dtype)
    for i in range(-1, mt):
        program.put(name(i, -1), zero)
    for j in range(nt):
        program.put(name(-1, j), zero)
    for i in range(mt):
        for j in range(nt):
            program.put(name(i, j), a[i * b:(i + 1) * b, j * b:(j + 1) * b].copy())

    with program.batch() if batch else contextlib.nullcontext():
        for i in range(mt):
            for j in range(nt):
                program.submit(SAT_TILE, ins=[name(i - 1, j), name(i, j - 1), name(i - 1, j - 1)],
                               inouts=[name(i, j)], size=b * b, tags={"i": i, "j": j})

    tiles = program.gather([name(i, j) for i in range(mt) for j in range(nt)])
    return np.block([tiles[i * nt:(i + 1) * nt] for i in range(mt)])


def _num_tiles(a: np.ndarray, tile: int, square: bool = True):
    if a.ndim != 2 or (square and a.shape[0] != a.shape[1]):
        raise InvalidParameterError(f"expected a {'square ' if square else ''}matrix, got shape {a.shape}")
    if int(tile) < 1 or a.shape[0] % tile or a.shape[1] % tile:
        raise InvalidParameterError(f"tile={tile!r} must be >= 1 and divide the shape {a.shape}")
    counts = (a.shape[0] // tile, a.shape[1] // tile)
    return counts[0] if square else counts
