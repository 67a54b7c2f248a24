"""CPU task wrappers ``run_top_down`` / ``run_bottom_up`` against a naive Python step.

The expectation is written here from plain adjacency lists (a dict of sorted neighbour
lists built from the raw edges), not from the kernels: top-down lists every
(unvisited neighbour, frontier vertex) pair in frontier order; bottom-up walks the own
vertices in order and stops at the first frontier in-neighbour.
"""

from __future__ import annotations

import numpy as np
import pytest

from taskbfs.graph import Graph
from taskbfs.kernels.bitmap import bitmap_from_vertices, count_bits, ids_of_words
from taskbfs.kernels.cpu import run_bottom_up, run_top_down


def _adjacency(src, dst, n, directed):
    """Sorted, duplicate- and self-loop-free neighbour lists from raw edges."""
    adj = [set() for _ in range(n)]
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        if u != v:
            adj[u].add(v)
            if not directed:
                adj[v].add(u)
    return [sorted(a) for a in adj]


def _naive_top_down(adj, frontier, visited):
    pairs, edges = [], 0
    for u in frontier:
        edges += len(adj[u])
        pairs += [(v, u) for v in adj[u] if v not in visited]
    return pairs, edges


def _naive_bottom_up(inward, lo, hi, visited, frontier):
    pairs, edges = [], 0
    for v in range(lo, hi):
        if v in visited:
            continue
        for u in inward[v]:
            edges += 1
            if u in frontier:
                pairs.append((v, u))
                break
    return pairs, edges


def _graphs():
    rng = np.random.default_rng(11)
    n = 60
    hub = np.zeros(40, dtype=np.int64), rng.integers(1, n, 40)
    noise = rng.integers(0, n, 120), rng.integers(0, n, 120)
    src = np.concatenate([hub[0], noise[0]])
    dst = np.concatenate([hub[1], noise[1]])
    yield "undirected", src, dst, n, False
    yield "directed", src, dst, n, True
    yield "isolated", np.array([0, 1, 2]), np.array([1, 2, 3]), 12, False


@pytest.mark.parametrize("case", list(_graphs()), ids=lambda c: c[0])
def test_wrappers_match_naive_step(case):
    _, src, dst, n, directed = case
    graph = Graph.from_edges(src, dst, num_vertices=n, directed=directed)
    out_adj = _adjacency(src, dst, n, directed)
    in_adj = _adjacency(dst, src, n, directed) if directed else out_adj
    inward = graph.transpose()
    rng = np.random.default_rng(n)
    bounds = [0, n // 3, n // 2, n]
    for _ in range(4):
        visited = set(rng.choice(n, n // 3, replace=False).tolist())
        frontier_all = sorted(rng.choice(sorted(visited), len(visited) // 2, replace=False).tolist())
        vbits = bitmap_from_vertices(sorted(visited), n)
        fbits = bitmap_from_vertices(frontier_all, n)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            frontier = np.array([u for u in frontier_all if lo <= u < hi], dtype=np.int64)
            start, stop = graph.indptr[lo], graph.indptr[hi]
            vs, ps, edges = run_top_down(graph.indptr[lo : hi + 1] - start,
                                         graph.indices[start:stop], lo, frontier, vbits)
            want, want_edges = _naive_top_down(out_adj, frontier.tolist(), visited)
            assert list(zip(vs.tolist(), ps.tolist(), strict=True)) == want
            assert edges == want_edges
            assert vs.dtype == ps.dtype == np.int64

            start, stop = inward.indptr[lo], inward.indptr[hi]
            vs, ps, edges = run_bottom_up(inward.indptr[lo : hi + 1] - start,
                                          inward.indices[start:stop], lo, hi, vbits, fbits)
            want, want_edges = _naive_bottom_up(in_adj, lo, hi, visited, set(frontier_all))
            assert list(zip(vs.tolist(), ps.tolist(), strict=True)) == want
            assert edges == want_edges


def test_wrappers_on_empty_inputs():
    graph = Graph.from_edges([0], [1], num_vertices=3)
    vs, ps, edges = run_top_down(graph.indptr, graph.indices, 0, np.array([], dtype=np.int64),
                                 bitmap_from_vertices([], 3))
    assert vs.size == ps.size == edges == 0
    everyone = bitmap_from_vertices([0, 1, 2], 3)
    vs, ps, edges = run_bottom_up(graph.indptr, graph.indices, 0, 3, everyone, everyone)
    assert vs.size == ps.size == edges == 0


@pytest.mark.parametrize("case", list(_graphs()), ids=lambda c: c[0])
def test_unique_top_down_keeps_the_first_pair_of_each_vertex(case):
    from taskbfs.kernels.cpu import top_down_step_unique

    _, src, dst, n, directed = case
    graph = Graph.from_edges(src, dst, num_vertices=n, directed=directed)
    out_adj = _adjacency(src, dst, n, directed)
    rng = np.random.default_rng(7)
    visited = set(rng.choice(n, n // 4, replace=False).tolist())
    frontier = np.array(sorted(rng.choice(sorted(visited), len(visited) // 2, replace=False)),
                        dtype=np.int64)
    want, want_edges = _naive_top_down(out_adj, frontier.tolist(), visited)
    first = {}
    for v, u in want:
        first.setdefault(v, u)
    out_v = np.empty(max(want_edges, 1), dtype=np.int64)
    out_p = np.empty_like(out_v)
    seen = bitmap_from_vertices([], n)
    k, edges = top_down_step_unique(graph.indptr, graph.indices, 0, frontier,
                                    bitmap_from_vertices(sorted(visited), n), seen, out_v, out_p)
    assert edges == want_edges
    assert list(zip(out_v[:k].tolist(), out_p[:k].tolist(), strict=True)) == list(first.items())
    assert np.array_equal(seen, bitmap_from_vertices(sorted(first), n))


def _kron_with_isolated():
    from taskbfs.graph.kronecker import kronecker

    g = kronecker(8, edgefactor=4, seed=9)  # 256 vertices, many without edges
    coo = g.to_scipy().tocoo()
    return "kronecker", coo.row, coo.col, 300, False  # 44 more isolated at the end


@pytest.mark.parametrize("case", [*_graphs(), _kron_with_isolated()], ids=lambda c: c[0])
def test_word_bottom_up_matches_the_plain_one_and_the_naive_step(case):
    """``bottom_up_step_words`` looks only at unvisited vertices with an edge, 64 at a
    time: the same pairs in the same order and the same edge count as ``bottom_up_step``
    and the naive step, for ranges that start and end inside a word."""
    from taskbfs.kernels.cpu import bottom_up_step, bottom_up_step_words, searchable_bits

    _, src, dst, n, directed = case
    graph = Graph.from_edges(src, dst, num_vertices=n, directed=directed)
    inward = graph.transpose()
    in_adj = _adjacency(dst, src, n, directed) if directed else _adjacency(src, dst, n, False)
    rng = np.random.default_rng(n + 1)
    bounds = sorted({0, n, *rng.integers(1, n, 4).tolist()})
    for share in (0.1, 0.5, 0.95):
        visited = set(rng.choice(n, int(share * n), replace=False).tolist())
        frontier = sorted(rng.choice(sorted(visited), max(1, len(visited) // 3),
                                     replace=False).tolist())
        vbits, fbits = bitmap_from_vertices(sorted(visited), n), bitmap_from_vertices(frontier, n)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            start, stop = inward.indptr[lo], inward.indptr[hi]
            indptr, indices = inward.indptr[lo : hi + 1] - start, inward.indices[start:stop]
            words = searchable_bits(indptr, lo, hi)
            assert words.size == ((hi - 1) >> 6) + 1 - (lo >> 6)
            has_edge = [v for v in range(lo, hi) if in_adj[v]]
            set_bits = [v for v in range((lo >> 6) * 64, ((hi - 1) >> 6) * 64 + 64)
                        if (int(words[(v >> 6) - (lo >> 6)]) >> (v & 63)) & 1]
            assert set_bits == has_edge
            plain, fast = np.empty((2, hi - lo), np.int64), np.empty((2, hi - lo), np.int64)
            n1, e1 = bottom_up_step(indptr, indices, lo, hi, vbits, fbits, plain[0], plain[1])
            n2, e2 = bottom_up_step_words(indptr, indices, lo, hi, words, vbits, fbits,
                                          fast[0], fast[1])
            want, want_edges = _naive_bottom_up(in_adj, lo, hi, visited, set(frontier))
            assert list(zip(fast[0, :n2].tolist(), fast[1, :n2].tolist(), strict=True)) == want
            assert (n1, e1) == (n2, e2) and e2 == want_edges
            np.testing.assert_array_equal(plain[:, :n1], fast[:, :n2])


def test_ticks_become_wall_times_in_proportion_or_the_calls_entry():
    """A compiled level's cycle-counter ticks in seconds: placed between the call's wall
    entry and exit in proportion; every one at the entry where the counter did not move."""
    from taskbfs.kernels.levels import ticks_to_times

    ticks = np.array([[100, 150, 200], [200, 300, 400]], dtype=np.int64)
    clock = np.array([100, 500], dtype=np.int64)
    np.testing.assert_allclose(ticks_to_times(ticks, clock, 10.0, 14.0),
                               [[10.0, 10.5, 11.0], [11.0, 12.0, 13.0]])
    still = ticks_to_times(np.zeros((2, 3), np.int64), np.zeros(2, np.int64), 10.0, 14.0)
    np.testing.assert_array_equal(still, np.full((2, 3), 10.0))


@pytest.mark.parametrize("ids", [[], [0], [63], [64], [0, 1, 62, 63, 64, 127, 128, 4095],
                                 list(range(0, 4096, 3)), list(range(4096))])
@pytest.mark.parametrize("first_word", [0, 5])
def test_ids_of_words_lists_every_set_bit_once_in_order(ids, first_word):
    """The compiled decoder against Python's own reading of each bit, every bit of a word
    included (bit 63 is the sign bit of an int64)."""
    words = bitmap_from_vertices(ids, 4096)
    expected = [64 * w + b for w in range(words.size) for b in range(64)
                if (int(words[w]) >> b) & 1]
    assert expected == ids  # the bitmap holds what was put in
    got = ids_of_words(words, first_word)
    assert got.dtype == np.int64
    assert got.tolist() == [v + 64 * first_word for v in ids]
    assert count_bits(words) == len(ids)
