"""``KeptResult``: a search's distances and parents left on the workers, in pieces over vertex ranges."""

from __future__ import annotations

from concurrent.futures import CancelledError

import numpy as np

from taskbfs import config
from taskbfs.errors import SearchTimeoutError, WorkerLostError
from taskbfs.kernels.assembly import result_dtype
from taskbfs.runtime.plugin import stranded
from taskbfs.runtime.task import GPU_RESOURCE


class KeptResult:
    """A search's distances and parents left on the workers, in pieces over vertex
    ranges: ``pieces[i]`` is a future of the ``(distances, parents)`` of vertices
    ``bounds[i] .. bounds[i + 1] - 1``."""

    def __init__(self, client, pieces: list, bounds: np.ndarray, on_device: bool = False):
        self.client = client
        self._pieces = pieces
        self.bounds = np.asarray(bounds, dtype=np.int64)
        #: The pieces are CuPy arrays in a GPU worker's memory (``bfs(device_result=True)``).
        self.on_device = on_device
        self._here = None  # (distances, parents) made by a worker of this process

    @classmethod
    def in_this_process(cls, client, arrays: tuple, bounds: np.ndarray) -> KeptResult:
        """The ``(distances, parents)`` CuPy ``arrays`` a GPU worker of this process left in
        its GPU's memory, as they are: they become Dask data (a piece per range, no copy)
        only when read as dask collections."""
        kept = cls(client, None, bounds, on_device=True)
        kept._here = arrays
        return kept

    @property
    def pieces(self) -> list:
        """A future of ``(distances, parents)`` per range."""
        if self._pieces is None:
            d, p = self._here
            ranges = [(d[lo:hi], p[lo:hi]) for lo, hi in zip(self.bounds[:-1].tolist(),
                                                             self.bounds[1:].tolist(), strict=True)]
            self._pieces = self.client.scatter(ranges, hash=False)
        return self._pieces

    def to_device(self) -> KeptResult:
        """The pieces as CuPy arrays on a GPU worker (no copy where they are already
        there; one host to device copy for a piece made on the host)."""
        pieces = [self.client.submit(_piece_to_device, p, resources={GPU_RESOURCE: 1})
                  for p in self.pieces]
        return KeptResult(self.client, pieces, self.bounds, on_device=True)


    def to_dask(self):
        """``(distances, parents)`` as dask arrays, one chunk per piece."""
        import dask.array as da

        sizes = np.diff(self.bounds).tolist()
        dtype = result_dtype(int(self.bounds[-1]))
        meta = {}
        if self.on_device:  # chunks of CuPy arrays
            import cupy

            meta = {"meta": cupy.empty(0, dtype=dtype)}
        out = []
        for field in (0, 1):
            parts = [da.from_delayed(self.client.submit(_field, p, field), shape=(size,),
                                     dtype=dtype, **meta)
                     for p, size in zip(self.pieces, sizes, strict=True)]
            out.append(da.concatenate(parts) if len(parts) > 1 else parts[0])
        return tuple(out)

    def to_dask_dataframe(self, frame):
        """The reached vertices as a dask DataFrame, one partition per piece, each made by
        ``frame(distances, parents, lo)`` on the worker that holds its piece."""
        import dask.dataframe as dd

        parts = [self.client.submit(_piece_frame, p, int(lo), frame, self.on_device)
                 for p, lo in zip(self.pieces, self.bounds[:-1], strict=True)]
        dtype = _result_dtype_of(self.bounds)
        meta = frame(np.empty(0, dtype), np.empty(0, dtype), 0)
        return dd.from_delayed(parts, meta=meta, verify_meta=False)

    def gather(self):
        """``(distances, parents)`` as two numpy arrays on the client (pieces on a GPU
        copied to their worker's host first).

        Raises
        ------
        WorkerLostError
            A piece was lost with its worker and cannot be made again (it was written by
            owner tasks pinned to that worker: Dask would wait for it forever); seen
            within :data:`LOST_CHECK_SECONDS` of the wait. Pieces Dask can recompute
            elsewhere are waited for.
        SearchTimeoutError
            The scheduler did not answer that check within ``runtime.connect-timeout``.
        """
        if self._here is not None:
            return _piece_to_host(self._here)
        self._wait()
        on_host = ([self.client.submit(_piece_to_host, p) for p in self.pieces]
                   if self.on_device else self.pieces)
        try:
            pieces = self.client.gather(on_host)
        except CancelledError:  # a piece's data was lost and cannot be recomputed
            raise self._lost(()) from None
        return _joined(pieces, np)

    def gather_device(self):
        """``(distances, parents)`` of pieces on a GPU as two CuPy arrays in this process
        (the worker's own arrays when it runs in this process; else sent by Dask)."""
        import cupy

        if self._here is not None:
            return self._here
        return _joined(self.client.gather(self.pieces), cupy)


    def _wait(self) -> None:
        """Wait until every piece is computed, checking every
        :data:`LOST_CHECK_SECONDS` that none waits for a worker that left."""
        from distributed import wait

        while True:
            try:
                with self.client.as_current():  # ``wait`` uses the current client
                    wait(self.pieces, timeout=LOST_CHECK_SECONDS)
                return
            except TimeoutError:
                pass
            limit = config.get("runtime.connect-timeout")
            try:
                gone = stranded(self.client, self.pieces, timeout=limit)
            except TimeoutError:
                raise SearchTimeoutError(
                    f"the search's result could not be read from the workers: the scheduler "
                    f"did not answer within {limit:g} s (runtime.connect-timeout)") from None
            if gone:
                raise self._lost(gone)

    @staticmethod
    def _lost(workers) -> WorkerLostError:
        who = (f"worker {', '.join(workers)}, which left the cluster" if workers else
               "a worker that left the cluster")
        return WorkerLostError(
            f"the search's result (distances and parents) was kept on {who}, and is lost "
            f"with it (the owner tasks that wrote it cannot run elsewhere): search again",
            workers)


#: Seconds between the checks of :meth:`KeptResult.gather` that no piece waits for a
#: worker that left (a scheduler round trip each, while the pieces are not all there).
LOST_CHECK_SECONDS = 1.0


def _field(piece, field: int) -> np.ndarray:
    return piece[field]


def _joined(pieces: list, xp):
    """``(distances, parents)`` of the pieces in vertex order, as arrays of ``xp``."""
    if len(pieces) == 1:
        return tuple(pieces[0])
    return (xp.concatenate([d for d, _ in pieces]), xp.concatenate([p for _, p in pieces]))


def _piece_to_device(piece):
    import cupy

    return tuple(cupy.asarray(x) for x in piece)


def _result_dtype_of(bounds) -> np.dtype:
    return result_dtype(int(bounds[-1]))


def _piece_frame(piece, lo: int, frame, on_device: bool):
    distances, parents = _piece_to_host(piece) if on_device else piece
    return frame(distances, parents, lo)


def _piece_to_host(piece):
    return tuple(x if isinstance(x, np.ndarray) else x.get() for x in piece)
