"""Trust under faults (issue 44): every wait of a call is bounded, and each fault ends in
one clear error (or a retry that succeeds) rather than a hang or a raw traceback.

Faults are real: ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1
(tests/test_faults.py's :class:`ProcessCluster`) get SIGKILL, SIGSTOP and SIGCONT; the
embedded runtime's in-process workers are closed as a search starts. Results are compared
with scipy.
"""

from __future__ import annotations

import threading

import numpy as np
from reference import scipy_distances

import taskbfs as tb
from taskbfs.errors import WorkerLostError


def _check(graph, source, result) -> None:
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents, result.distances)


# ---------------------------------------------------------------------- embedded runtime
def test_a_worker_closing_as_a_search_starts_is_retried():
    """The embedded cluster's worker closed from another thread as each of 5 searches
    starts: each returns the scipy-checked result (a retry on the restarted worker) or
    raises WorkerLostError, never a TypeError from a resident call the closing worker
    answered with nothing (15 of 20 tries did before)."""
    with tb.Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        graph = tb.kronecker(9, seed=4)
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))
        for _ in range(5):
            cluster = rt._owned_cluster
            worker = next(iter(cluster.workers.values()))
            closing = threading.Thread(target=cluster.sync, args=(worker.close,))
            closing.start()
            try:
                result = tb.bfs(graph, 2, tasks=2, runtime=rt)
            except WorkerLostError:
                pass
            else:
                _check(graph, 2, result)
            finally:
                closing.join()
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))
