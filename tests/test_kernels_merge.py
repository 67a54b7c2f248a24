"""The barrier's kernels (taskbfs/kernels/merge.py) against naive Python versions."""

from __future__ import annotations

import numpy as np
import pytest

from taskbfs.kernels.bitmap import bitmap_from_vertices, empty_bitmap
from taskbfs.kernels.bitmap import test_bit as is_set
from taskbfs.kernels.merge import (
    accept_candidates,
    bucket_by_owner,
    bucket_vertices,
    owned_bits,
    record_pairs,
    word_span,
)

BOUNDS = [
    np.array([0, 200], dtype=np.int64),
    np.array([0, 1, 2, 3, 200], dtype=np.int64),
    np.array([0, 63, 64, 65, 130, 200], dtype=np.int64),  # ranges sharing bitmap words
]


def _owner(bounds, v):
    return int(np.searchsorted(bounds, v, side="right") - 1)


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bucket_by_owner_is_a_stable_sort_by_owner(bounds, dtype):
    rng = np.random.default_rng(1)
    vertices = rng.integers(0, 200, 500).astype(dtype)
    parents = rng.integers(0, 200, 500).astype(dtype)
    out_v, out_p = np.empty_like(vertices), np.empty_like(parents)
    offsets = np.empty(bounds.size, dtype=np.int64)
    bucket_by_owner(vertices, parents, bounds, out_v, out_p, offsets)
    expected = sorted(zip(vertices.tolist(), parents.tolist(), strict=True),
                      key=lambda pair: _owner(bounds, pair[0]))  # sorted() is stable
    assert list(zip(out_v.tolist(), out_p.tolist(), strict=True)) == expected
    for t in range(bounds.size - 1):
        mine = out_v[offsets[t]:offsets[t + 1]]
        assert np.all((bounds[t] <= mine) & (mine < bounds[t + 1]))
    assert offsets[0] == 0 and offsets[-1] == vertices.size


@pytest.mark.parametrize("bounds", BOUNDS)
def test_bucket_vertices_is_the_same_sort_without_parents(bounds):
    rng = np.random.default_rng(2)
    vertices = rng.integers(0, 200, 500)
    expected = sorted(vertices.tolist(), key=lambda v: _owner(bounds, v))  # stable
    out, offsets = np.empty_like(vertices), np.empty(bounds.size, dtype=np.int64)
    bucket_vertices(vertices, bounds, out, offsets)
    assert out.tolist() == expected
    counts = np.bincount([_owner(bounds, v) for v in vertices], minlength=bounds.size - 1)
    assert offsets.tolist() == [0, *np.cumsum(counts).tolist()]


def test_bucket_by_owner_of_nothing():
    bounds = BOUNDS[2]
    empty = np.empty(0, dtype=np.int64)
    offsets = np.full(bounds.size, 7, dtype=np.int64)
    bucket_by_owner(empty, empty, bounds, empty.copy(), empty.copy(), offsets)
    assert offsets.tolist() == [0] * bounds.size


@pytest.mark.parametrize("lo,hi", [(0, 200), (63, 64), (65, 130), (64, 65), (130, 200)])
def test_owned_bits_sets_the_vertices_in_the_ranges_words(lo, hi):
    rng = np.random.default_rng(lo)
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 9, hi - lo))]).astype(np.int64)
    vertices = np.sort(rng.choice(np.arange(lo, hi), size=min(10, hi - lo), replace=False))
    first, stop = word_span(lo, hi)
    words = np.zeros(stop - first, dtype=np.uint64)
    edges = owned_bits(vertices, lo, indptr, words)
    assert edges == sum(indptr[v - lo + 1] - indptr[v - lo] for v in vertices)
    whole = empty_bitmap(200)
    whole[first:stop] = words
    assert np.array_equal(whole, bitmap_from_vertices(vertices, 200))


def test_word_span_covers_exactly_the_words_of_the_range():
    assert word_span(0, 64) == (0, 1)
    assert word_span(0, 65) == (0, 2)
    assert word_span(63, 64) == (0, 1)
    assert word_span(64, 65) == (1, 2)
    assert word_span(65, 200) == (1, 4)


def _naive_accept(steps, bounds, visited, degrees):
    """Owner by owner, step by step: keep a candidate if not visited yet."""
    visited = set(visited)
    frontier, offsets, edges = [], [0], []
    for t in range(bounds.size - 1):
        e = 0
        for vertices, step_offsets in steps:
            for v in vertices[step_offsets[t]:step_offsets[t + 1]].tolist():
                if v not in visited:
                    visited.add(v)
                    frontier.append(v)
                    e += int(degrees[v])
        offsets.append(len(frontier))
        edges.append(e)
    return frontier, offsets, edges, visited


@pytest.mark.parametrize("bounds", BOUNDS)
def test_accept_candidates_keeps_first_unvisited_per_owner(bounds):
    rng = np.random.default_rng(3)
    degrees = rng.integers(0, 50, 200).astype(np.int64)
    already = rng.choice(200, 40, replace=False)
    steps = []
    for _ in range(3):
        raw = rng.integers(0, 200, 120).astype(np.int32)
        out_v, out_p = np.empty_like(raw), np.empty_like(raw)
        offsets = np.empty(bounds.size, dtype=np.int64)
        bucket_by_owner(raw, raw, bounds, out_v, out_p, offsets)
        steps.append((out_v, offsets))
    candidates = np.concatenate([v for v, _ in steps])
    joined_offsets = np.stack([o + 120 * s for s, (_, o) in enumerate(steps)])
    visited = bitmap_from_vertices(already, 200)
    out = np.empty(candidates.size, dtype=np.int64)
    out_offsets = np.empty(bounds.size, dtype=np.int64)
    out_edges = np.empty(bounds.size - 1, dtype=np.int64)
    n_new = accept_candidates(candidates, joined_offsets, visited, degrees, out, out_offsets, out_edges)

    frontier, offsets, edges, now_visited = _naive_accept(steps, bounds, already.tolist(), degrees)
    assert out[:n_new].tolist() == frontier
    assert out_offsets.tolist() == offsets
    assert out_edges.tolist() == edges
    assert {v for v in range(200) if is_set(visited, v)} == now_visited


def test_record_pairs_writes_only_the_given_slice_and_range():
    vertices = np.array([10, 11, 12, 13, 16], dtype=np.int64)
    parents_of = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    parents = np.full(5, -1, dtype=np.int64)
    distances = np.full(5, -1, dtype=np.int64)
    record_pairs(vertices, parents_of, 1, 5, 10, 13, 7, parents, distances)
    assert parents.tolist() == [-1, 2, 3, -1, -1]
    assert distances.tolist() == [-1, 7, 7, -1, -1]
