"""Tiled Cholesky factorisation as a task program on the taskbfs runtime, CPU and GPU.

A second task program beside the BFS, written on :mod:`taskbfs.runtime` alone (it imports
nothing of the BFS) the way one writes it in OmpSs.

What it returns
---------------
:func:`cholesky` returns the lower Cholesky factor ``L`` of a symmetric positive definite
matrix (``L @ L.T == a``), assembled from tiles gathered with :meth:`Program.gather`.

Approach
--------
The matrix is cut into ``tile x tile`` blocks, each a datum named ``"A[i,j]"`` in the
program's data directory. Tasks declare what they read (``ins``) and update (``inouts``);
the runtime derives the task graph from those declarations alone, exactly as OmpSs does
from ``#pragma omp task in(...) inout(...)``. Right-looking tiled Cholesky (the classic
OmpSs / StarPU example): ``potrf`` on the diagonal tile, ``trsm`` below it, ``syrk`` /
``gemm`` on the trailing matrix. Each task's ``size`` is its work in flops (``b**3 / 3``
for potrf, ``b**3`` for trsm and syrk, ``2 b**3`` for gemm), which the hybrid policy
compares with λ: with ``Policy("hybrid", lam=...)`` between ``b**3`` and ``2 b**3`` only
the gemm updates go to the GPU.

Devices
-------
Every task has an ``smp`` implementation (numpy / LAPACK) and a ``cuda`` one (numba.cuda
kernels, below: a one-block in-place potrf, a row-per-thread triangular solve, a
thread-per-entry gemm that is also the syrk). A cuda implementation copies its tiles to
the device, runs its kernel and copies the result back: tiles live on the host between
tasks (the runtime's :func:`~taskbfs.runtime.worker_cache` is where a device cache would
go). numba.cuda is imported, and the kernels compiled, at a task's first GPU call;
importing this module needs neither. The kernels also run under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), which is how the tests run them without a GPU
(``tests/test_example_cholesky.py``).

Run it
------
``python examples/cholesky.py [--n 512] [--tile 64] [--lam LAMBDA]`` factorises a random
matrix on the embedded runtime (one GPU worker per GPU found) and prints where each kind
of task ran and the error against numpy.

References: Duran et al., "OmpSs: a proposal for programming heterogeneous multi-core
architectures" (2011); Buttari et al., "A class of parallel tiled linear algebra
algorithms for multicore architectures" (2009).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from taskbfs.errors import DeviceUnavailableError, InvalidParameterError
from taskbfs.runtime import Task

#: Threads per block edge (gemm / syrk are 2-D) and per block (trsm, potrf), at most.
GEMM_BLOCK = 16
ROW_BLOCK = 128


# ---------------------------------------------------------------- smp: numpy / LAPACK
def potrf_cpu(a_kk):
    """``L_kk``, the lower Cholesky factor of the diagonal tile."""
    return np.linalg.cholesky(a_kk)


def trsm_cpu(l_kk, a_ik):
    """``a_ik @ inv(L_kk).T``: solve ``L_kk @ x.T = a_ik.T``."""
    return np.linalg.solve(l_kk, a_ik.T).T


def syrk_cpu(a_ik, a_ii):
    """``a_ii - a_ik @ a_ik.T``."""
    return a_ii - a_ik @ a_ik.T


def gemm_cpu(a_ik, a_jk, a_ij):
    """``a_ij - a_ik @ a_jk.T``."""
    return a_ij - a_ik @ a_jk.T


# ---------------------------------------------------------------- cuda: numba.cuda kernels
#: numba.cuda, imported at the first GPU call. A module global, not a local: the kernels
#: must find it among their globals, where the CUDA simulator swaps in its own.
cuda = None
_kernels = None


def _gpu():
    """``(numba.cuda, kernels)``, compiled on first use in this process.

    Raises
    ------
    DeviceUnavailableError
        No usable CUDA device (and no simulator) here.
    """
    global cuda, _kernels
    if _kernels is None:
        try:
            from numba import cuda as numba_cuda

            usable = numba_cuda.is_available()
        except Exception:  # no numba-cuda, no driver
            usable = False
        if not usable:
            raise DeviceUnavailableError("a cuda tile task ran where no CUDA device (and no "
                                         "NUMBA_ENABLE_CUDASIM=1 simulator) is usable")
        cuda = numba_cuda
        _kernels = _compile()
    return cuda, _kernels


def _compile() -> dict:
    @cuda.jit
    def potrf(a):
        # in place, one block: column k is finished by thread 0 (diagonal) and the
        # threads' rows (below it), then each thread updates its rows of the trailing
        # lower triangle, which reads only column k
        n = a.shape[0]
        t = cuda.threadIdx.x
        step = cuda.blockDim.x
        for k in range(n):
            if t == 0:
                a[k, k] = math.sqrt(a[k, k])
            cuda.syncthreads()
            for i in range(k + 1 + t, n, step):
                a[i, k] /= a[k, k]
            cuda.syncthreads()
            for i in range(k + 1 + t, n, step):
                for j in range(k + 1, i + 1):
                    a[i, j] -= a[i, k] * a[j, k]
            cuda.syncthreads()
        for i in range(t, n, step):
            for j in range(i + 1, n):
                a[i, j] = 0.0

    @cuda.jit
    def trsm(low, a):
        # a <- a @ inv(low).T in place: row r solves low @ x = a[r] by forward substitution
        r = cuda.grid(1)
        if r < a.shape[0]:
            for j in range(a.shape[1]):
                s = a[r, j]
                for m in range(j):
                    s -= a[r, m] * low[j, m]
                a[r, j] = s / low[j, j]

    @cuda.jit
    def gemm(x, y, c):
        # c <- c - x @ y.T, one thread per entry (syrk: x is y)
        i, j = cuda.grid(2)
        if i < c.shape[0] and j < c.shape[1]:
            s = 0.0
            for k in range(x.shape[1]):
                s += x[i, k] * y[j, k]
            c[i, j] -= s

    return {"potrf": potrf, "trsm": trsm, "gemm": gemm}


def _to_device(cuda, tile):
    return cuda.to_device(np.ascontiguousarray(tile, dtype=np.float64))


def _launch_gemm(kernel, x, y, c):
    block = (min(GEMM_BLOCK, c.shape[0]), min(GEMM_BLOCK, c.shape[1]))
    grid = (-(-c.shape[0] // block[0]), -(-c.shape[1] // block[1]))
    kernel[grid, block](x, y, c)


def potrf_gpu(a_kk):
    """:func:`potrf_cpu` on the GPU."""
    cuda, k = _gpu()
    a = _to_device(cuda, a_kk)
    k["potrf"][1, max(1, min(ROW_BLOCK, a.shape[0]))](a)
    return a.copy_to_host()


def trsm_gpu(l_kk, a_ik):
    """:func:`trsm_cpu` on the GPU."""
    cuda, k = _gpu()
    low, a = _to_device(cuda, l_kk), _to_device(cuda, a_ik)
    block = max(1, min(ROW_BLOCK, a.shape[0]))
    k["trsm"][-(-a.shape[0] // block), block](low, a)
    return a.copy_to_host()


def syrk_gpu(a_ik, a_ii):
    """:func:`syrk_cpu` on the GPU."""
    cuda, k = _gpu()
    x, c = _to_device(cuda, a_ik), _to_device(cuda, a_ii)
    _launch_gemm(k["gemm"], x, x, c)
    return c.copy_to_host()


def gemm_gpu(a_ik, a_jk, a_ij):
    """:func:`gemm_cpu` on the GPU."""
    cuda, k = _gpu()
    x, y, c = _to_device(cuda, a_ik), _to_device(cuda, a_jk), _to_device(cuda, a_ij)
    _launch_gemm(k["gemm"], x, y, c)
    return c.copy_to_host()


#: The program's tasks, by name: numpy on the CPU, numba.cuda on the GPU.
TASKS = {
    "potrf": Task("potrf", smp=potrf_cpu, cuda=potrf_gpu),
    "trsm": Task("trsm", smp=trsm_cpu, cuda=trsm_gpu),
    "syrk": Task("syrk", smp=syrk_cpu, cuda=syrk_gpu),
    "gemm": Task("gemm", smp=gemm_cpu, cuda=gemm_gpu),
}


# ---------------------------------------------------------------- the program
def cholesky(program, a, tile: int, batch: bool = True, tasks: dict | None = None) -> np.ndarray:
    """Tiled Cholesky factorisation ``a = L @ L.T`` as a task program.

    Parameters
    ----------
    program : taskbfs.runtime.Program
        Where the tiles ``"A[i,j]"`` live and the tasks run; its policy places them.
    a : ndarray, shape (n, n)
        Symmetric positive definite; ``n`` must be a multiple of ``tile``.
    tile : int
        Tile size.
    batch : bool
        Send all tasks in one message (:meth:`Program.batch`) or one by one.
    tasks : dict, optional
        ``{"potrf", "trsm", "syrk", "gemm"}`` → :class:`~taskbfs.runtime.Task`; default
        :data:`TASKS`.

    Returns
    -------
    ndarray, shape (n, n)
        The lower-triangular factor ``L``.

    Raises
    ------
    InvalidParameterError
        ``a`` is not square, or ``tile`` does not divide it.

    Examples
    --------
    >>> from taskbfs.runtime import Program, Runtime               # doctest: +SKIP
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> with Runtime() as rt:                                      # doctest: +SKIP
    ...     cholesky(Program(rt), a, tile=1)
    array([[2., 0.],
           [1., 2.]])
    """
    tasks = TASKS if tasks is None else tasks
    a = np.asarray(a, dtype=float)
    nt = num_tiles(a, tile)
    b = tile
    name = "A[{},{}]".format
    for i in range(nt):
        for j in range(i + 1):
            program.put(name(i, j), a[i * b:(i + 1) * b, j * b:(j + 1) * b].copy())

    with program.batch() if batch else contextlib.nullcontext():
        for k in range(nt):
            program.submit(tasks["potrf"], inouts=[name(k, k)], size=b**3 // 3)
            for i in range(k + 1, nt):
                program.submit(tasks["trsm"], ins=[name(k, k)], inouts=[name(i, k)], size=b**3)
            for i in range(k + 1, nt):
                program.submit(tasks["syrk"], ins=[name(i, k)], inouts=[name(i, i)], size=b**3)
                for j in range(k + 1, i):
                    program.submit(tasks["gemm"], ins=[name(i, k), name(j, k)],
                                   inouts=[name(i, j)], size=2 * b**3)

    lower = [(i, j) for i in range(nt) for j in range(i + 1)]
    tiles = program.gather([name(i, j) for i, j in lower])
    out = np.zeros_like(a)
    for (i, j), t in zip(lower, tiles, strict=True):
        out[i * b:(i + 1) * b, j * b:(j + 1) * b] = t
    return out


def num_tiles(a: np.ndarray, tile: int, square: bool = True):
    """Tiles per dimension of ``a`` (a pair when not ``square``); checks the shapes."""
    if a.ndim != 2 or (square and a.shape[0] != a.shape[1]):
        raise InvalidParameterError(f"expected a {'square ' if square else ''}matrix, got shape {a.shape}")
    if int(tile) < 1 or a.shape[0] % tile or a.shape[1] % tile:
        raise InvalidParameterError(f"tile={tile!r} must be >= 1 and divide the shape {a.shape}")
    counts = (a.shape[0] // tile, a.shape[1] // tile)
    return counts[0] if square else counts


def random_spd(n: int, seed: int = 0) -> np.ndarray:
    """A random symmetric positive definite ``n x n`` matrix (well conditioned)."""
    m = np.random.default_rng(seed).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def main(argv=None) -> None:
    import argparse
    import time

    from taskbfs.runtime import Policy, Program, Runtime

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--tile", type=int, default=64)
    parser.add_argument("--lam", type=float, default=None,
                        help="hybrid λ in flops (default: between b**3 and 2 b**3: gemm on the GPU)")
    args = parser.parse_args(argv)
    a = random_spd(args.n)
    lam = 1.5 * args.tile**3 if args.lam is None else args.lam
    with Runtime(dashboard_address=None) as rt:
        program = Program(rt, Policy("hybrid", lam=lam), name="cholesky")
        t0 = time.perf_counter()
        lower = cholesky(program, a, args.tile)
        seconds = time.perf_counter() - t0
        where: dict = {}
        for r in program.records():
            where.setdefault(r["name"], {}).setdefault(r["device"], 0)
            where[r["name"]][r["device"]] += 1
        print(f"cluster {rt.resources()}; n={args.n} tile={args.tile} λ={lam:g}: {seconds:.3f} s")
        print("tasks by device:", where)
        print("max |L L^T - a| =", float(np.abs(lower @ lower.T - a).max()))


if __name__ == "__main__":
    main()
