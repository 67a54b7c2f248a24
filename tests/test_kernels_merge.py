"""The barrier's kernels (taskbfs/kernels/merge.py) against naive Python versions."""

from __future__ import annotations

import numpy as np
import pytest

from taskbfs.kernels.merge import (
    bucket_by_owner,
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


def test_bucket_by_owner_of_nothing():
    bounds = BOUNDS[2]
    empty = np.empty(0, dtype=np.int64)
    offsets = np.full(bounds.size, 7, dtype=np.int64)
    bucket_by_owner(empty, empty, bounds, empty.copy(), empty.copy(), offsets)
    assert offsets.tolist() == [0] * bounds.size


def test_word_span_covers_exactly_the_words_of_the_range():
    assert word_span(0, 64) == (0, 1)
    assert word_span(0, 65) == (0, 2)
    assert word_span(63, 64) == (0, 1)
    assert word_span(64, 65) == (1, 2)
    assert word_span(65, 200) == (1, 4)


def test_record_pairs_writes_only_the_given_slice_and_range():
    vertices = np.array([10, 11, 12, 13, 16], dtype=np.int64)
    parents_of = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    parents = np.full(5, -1, dtype=np.int64)
    distances = np.full(5, -1, dtype=np.int64)
    record_pairs(vertices, parents_of, 1, 5, 10, 13, 7, parents, distances)
    assert parents.tolist() == [-1, 2, 3, -1, -1]
    assert distances.tolist() == [-1, 7, 7, -1, -1]
