"""A catalogue of named test graphs, as raw edge lists.

What it returns
---------------
``shapes()`` -> list of :class:`Shape` ``(name, src, dst, num_vertices, directed)``
(int64 edge arrays, as given to ``Graph.from_edges``; self-loops and duplicates are
left in where a shape is about them). ``shape.sources`` suggests search keys for it
(e.g. vertex 0, a middle vertex, a leaf, an isolated or unreachable vertex).

Approach
--------
Edge lists, not ``Graph`` objects, so a test can build both the ``Graph`` under test and
an independent reference (``tests/reference.py``) from the same raw edges. Every shape
is deterministic (random ones use fixed seeds); the skewed "Kronecker-like" graph is an
R-MAT made here with numpy alone, so it does not depend on the generator under test.

Source: the shapes stress what BFS gets wrong: depth (path), width (star, clique), many
components, isolated vertices, self-loops, duplicates, directed reachability, and the
Graph500 R-MAT initiator (A, B, C) = (0.57, 0.19, 0.19) for skew.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Shape(NamedTuple):
    """One test graph as a raw edge list; ``sources`` lists suggested search keys."""

    name: str
    src: np.ndarray
    dst: np.ndarray
    num_vertices: int
    directed: bool

    @property
    def sources(self) -> list[int]:
        """Suggested search keys for this shape (distinct, in range)."""
        return _SOURCES[self.name]


_SOURCES: dict[str, list[int]] = {}


def _shape(name, src, dst, num_vertices, directed=False, sources=(0,)) -> Shape:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    ok = sorted({int(s) for s in sources if 0 <= s < num_vertices})
    _SOURCES[name] = ok
    return Shape(name, src, dst, int(num_vertices), bool(directed))


def shapes() -> list[Shape]:
    """All shapes of the catalogue (a fresh list; arrays are new each call)."""
    return [
        path(3000),
        star(2000),
        grid(40, 40),
        components(),
        isolated_vertices(),
        self_loops(),
        duplicate_edges(),
        directed_cycle(100),
        directed_dag(),
        complete(50),
        binary_tree(10),
        random_sparse(500, 1000, seed=7),
        random_directed(400, 1200, seed=11),
        single_vertex(),
        kronecker_like(scale=10, edgefactor=8, seed=3),
    ]


def shape(name: str) -> Shape:
    """The shape called ``name``."""
    for s in shapes():
        if s.name == name:
            return s
    raise KeyError(name)


# ---------------------------------------------------------------------- the shapes
def path(n: int) -> Shape:
    """0 - 1 - ... - (n-1): depth n - 1 from an end."""
    v = np.arange(n - 1)
    return _shape(f"path_{n}", v, v + 1, n, sources=(0, n // 2, n - 1))


def star(leaves: int) -> Shape:
    """Centre 0 joined to leaves 1..leaves: one very wide level; a leaf as source too."""
    leaf = np.arange(1, leaves + 1)
    return _shape(f"star_{leaves}", np.zeros(leaves, dtype=np.int64), leaf, leaves + 1,
                  sources=(0, 1, leaves))


def grid(rows: int, cols: int) -> Shape:
    """2-D grid, vertex ``r * cols + c``, 4-neighbour edges."""
    ids = np.arange(rows * cols).reshape(rows, cols)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    middle = (rows // 2) * cols + cols // 2
    return _shape(f"grid_{rows}x{cols}", src, dst, rows * cols,
                  sources=(0, middle, rows * cols - 1))


def components() -> Shape:
    """Four components: a path 0..9, a cycle 10..16, a clique 17..21, a star 22..30."""
    p = np.arange(9)
    cyc = np.arange(10, 17)
    qi, qj = np.triu_indices(5, k=1)
    src = np.concatenate([p, cyc, qi + 17, np.full(8, 22)])
    dst = np.concatenate([p + 1, np.roll(cyc, -1), qj + 17, np.arange(23, 31)])
    return _shape("components", src, dst, 31, sources=(0, 5, 13, 19, 22, 30))


def isolated_vertices() -> Shape:
    """A small connected graph on 0..9 plus isolated vertices 10..19 (n > max id + 1)."""
    src = [0, 1, 2, 3, 4, 5, 6, 7, 8, 0]
    dst = [1, 2, 3, 4, 5, 6, 7, 8, 9, 5]
    return _shape("isolated_vertices", src, dst, 20, sources=(0, 9, 10, 19))


def self_loops() -> Shape:
    """A path 0..5 with self-loops on 0, 3, 5, and vertex 6 that only has a self-loop."""
    src = [0, 1, 2, 3, 4, 0, 3, 5, 6]
    dst = [1, 2, 3, 4, 5, 0, 3, 5, 6]
    return _shape("self_loops", src, dst, 7, sources=(0, 3, 6))


def duplicate_edges() -> Shape:
    """A 6-cycle whose edges appear several times and in both orientations."""
    src = [0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 5, 0, 5]
    dst = [1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 0, 5, 0]
    return _shape("duplicate_edges", src, dst, 6, sources=(0, 3))


def directed_cycle(n: int) -> Shape:
    """Arcs i -> i+1 (mod n): BFS must go all the way round."""
    v = np.arange(n)
    return _shape(f"directed_cycle_{n}", v, (v + 1) % n, n, directed=True,
                  sources=(0, n // 2, n - 1))


def directed_dag() -> Shape:
    """A layered DAG with parts the source cannot reach.

    Layers 0 -> {1, 2} -> {3, 4, 5} -> 6; vertices 7 and 8 point into it (7 -> 3,
    8 -> 7) but nothing reaches them; 9 is isolated; 10 -> 11 is a separate arc.
    """
    src = [0, 0, 1, 1, 2, 2, 3, 4, 5, 7, 8, 10, 1]
    dst = [1, 2, 3, 4, 4, 5, 6, 6, 6, 3, 7, 11, 6]
    return _shape("directed_dag", src, dst, 12, directed=True, sources=(0, 2, 6, 8, 9, 10))


def complete(n: int) -> Shape:
    """K_n: one level holds every other vertex."""
    i, j = np.triu_indices(n, k=1)
    return _shape(f"complete_{n}", i, j, n, sources=(0, n - 1))


def binary_tree(depth: int) -> Shape:
    """Complete binary tree with 2**depth - 1 vertices, parent (v - 1) // 2."""
    n = 2**depth - 1
    child = np.arange(1, n)
    return _shape(f"binary_tree_{depth}", (child - 1) // 2, child, n,
                  sources=(0, 5, n // 2, n - 1))


def random_sparse(n: int, m: int, seed: int) -> Shape:
    """``m`` uniform random edges on ``n`` vertices (self-loops and duplicates possible)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, size=(2, m))
    return _shape(f"random_sparse_{n}_{m}", src, dst, n, sources=(0, n // 2, n - 1))


def random_directed(n: int, m: int, seed: int) -> Shape:
    """``m`` uniform random arcs on ``n`` vertices, directed."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, size=(2, m))
    return _shape(f"random_directed_{n}_{m}", src, dst, n, directed=True,
                  sources=(0, n // 2, n - 1))


def single_vertex() -> Shape:
    """One vertex, no edges."""
    empty = np.zeros(0, dtype=np.int64)
    return _shape("single_vertex", empty, empty, 1, sources=(0,))


def kronecker_like(scale: int, edgefactor: int, seed: int) -> Shape:
    """Skewed R-MAT graph made with numpy alone (not the generator under test).

    Each of the ``edgefactor * 2**scale`` edges picks, bit by bit, one quadrant of the
    adjacency matrix with probabilities A, B, C, D = 0.57, 0.19, 0.19, 0.05; vertex
    labels are then shuffled. Many vertices stay isolated, a few have high degree.
    """
    a, b, c = 0.57, 0.19, 0.19
    n, m = 1 << scale, edgefactor << scale
    rng = np.random.default_rng(seed)
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        down = rng.random(m) > a + b  # lower half (C or D)
        p_right = np.where(down, (1 - a - b - c) / (1 - a - b), b / (a + b))
        right = rng.random(m) < p_right
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    perm = rng.permutation(n)
    src, dst = perm[src], perm[dst]
    deg = np.bincount(np.concatenate([src, dst]), minlength=n)
    hub = int(np.argmax(deg))
    low = int(np.flatnonzero(deg == 1)[0]) if np.any(deg == 1) else 0
    lonely = int(np.flatnonzero(deg == 0)[0]) if np.any(deg == 0) else 0
    return _shape(f"kronecker_like_{scale}_{edgefactor}", src, dst, n,
                  sources=(0, hub, low, lonely))
