"""Kronecker graphs kept as files between benchmark processes.

Returns
    :func:`kronecker`: ``tb.kronecker(scale, edgefactor, seed=seed)``, read from
    ``directory`` when a previous process saved it there (``tb.save_graph``, .npz), else
    generated and saved. A scale-24 graph takes minutes to generate on the device machine
    and seconds to read, so that paired runs of two versions in separate processes (old
    and new code) search the same graph without generating it twice.
"""

from __future__ import annotations

import os

import taskbfs as tb


def kronecker(scale: int, edgefactor: int = 16, seed: int = 1, directory: str | None = None):
    """The Graph500 Kronecker graph; from (or into) ``directory`` when one is given."""
    if directory is None:
        return tb.kronecker(scale, edgefactor=edgefactor, seed=seed)
    path = os.path.join(directory, f"kron_s{scale}_e{edgefactor}_seed{seed}.npz")
    if os.path.exists(path):
        return tb.read_graph(path)
    graph = tb.kronecker(scale, edgefactor=edgefactor, seed=seed)
    os.makedirs(directory, exist_ok=True)
    tb.save_graph(graph, path + ".part.npz")
    os.replace(path + ".part.npz", path)
    return graph
