"""Tests of taskbfs.graph500: validation rules, traversed edges, search keys, statistics.

References come from ``tests/reference.py`` (naive queue BFS over the raw edge list,
scipy) and shapes from ``tests/shapes.py``. ``tests/`` is not a package: pytest's default
``prepend`` import mode puts this directory on ``sys.path``, so they import by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import naive_bfs, naive_bfs_parents, scipy_distances, scipy_parents
from shapes import shapes

from taskbfs import Graph
from taskbfs.errors import InvalidParameterError, InvalidVertexError, ValidationError
from taskbfs.graph500 import (
    compact_levels,
    format_statistics,
    search_keys,
    teps_statistics,
    traversed_edges,
    validate,
)

SHAPES = shapes()


def build(shape) -> Graph:
    return Graph.from_edges(shape.src, shape.dst, shape.num_vertices, shape.directed)


def expect_rule(rule, graph, source, parents, **kwargs) -> ValidationError:
    """validate must raise ValidationError for ``rule``; the witness is in the message."""
    with pytest.raises(ValidationError) as info:
        validate(graph, source, parents, **kwargs)
    err = info.value
    assert err.rule == rule, str(err)
    assert f"rule {rule}" in str(err)
    return err


def witness_in_message(err: ValidationError) -> bool:
    w = err.witness
    text = str(err)
    if isinstance(w, tuple) and len(w) == 2:
        return f"({w[0]}, {w[1]})" in text
    return f"vertex {w}" in text


# ------------------------------------------------------------------ accepts references
@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_validate_accepts_naive_parents(shape):
    g = build(shape)
    for source in shape.sources:
        dist, parents = naive_bfs_parents(
            shape.src, shape.dst, shape.num_vertices, source, shape.directed
        )
        levels = validate(g, source, parents)
        assert levels.dtype == np.int64
        np.testing.assert_array_equal(levels, dist)
        np.testing.assert_array_equal(validate(g, source, parents, levels=dist), dist)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_validate_accepts_scipy_parents(shape):
    g = build(shape)
    for source in shape.sources:
        levels = validate(g, source, scipy_parents(g, source))
        np.testing.assert_array_equal(levels, scipy_distances(g, source))


def test_parents_dtype_int32_accepted():
    g = Graph.from_edges([0, 1], [1, 2])
    np.testing.assert_array_equal(validate(g, 0, np.array([0, 0, 1], np.int32)), [0, 1, 2])


def test_source_not_a_vertex():
    g = Graph.from_edges([0, 1], [1, 2])
    with pytest.raises(InvalidVertexError):
        validate(g, 3, [0, 0, 1])
    with pytest.raises(InvalidVertexError):
        validate(g, -1, [0, 0, 1])


# ------------------------------------------------------------------ rule 1: a tree
def test_rule1_cycle():
    # 0 - 1, triangle 1 - 2 - 3; corrupt 1's parent to 3: 1 -> 3 -> 1.
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 1])
    err = expect_rule(1, g, 0, [0, 3, 1, 1])
    assert err.witness in (1, 3)
    assert "cycle" in str(err) and witness_in_message(err)


def test_rule1_self_parent():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(1, g, 0, [0, 0, 2])
    assert err.witness == 2 and witness_in_message(err)


def test_rule1_source_parent_not_source():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(1, g, 0, [1, 0, 1])
    assert err.witness == 0 and witness_in_message(err)
    expect_rule(1, g, 0, [-1, 0, 1])


def test_rule1_chain_reaches_unreached_vertex():
    # 0 - 1 - 2 and a separate edge 3 - 4; 4 claims parent 3, which is unreached.
    g = Graph.from_edges([0, 1, 3], [1, 2, 4])
    err = expect_rule(1, g, 0, [0, 0, 1, -1, 3])
    assert err.witness == 4 and witness_in_message(err)


def test_rule1_wrong_length():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(1, g, 0, [0, 0])
    assert "(2,)" in str(err)
    expect_rule(1, g, 0, [0, 0, 1, 1])
    expect_rule(1, g, 0, [[0, 0, 1]])


def test_rule1_out_of_range_value():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(1, g, 0, [0, 0, 7])
    assert err.witness == 2 and witness_in_message(err) and "7" in str(err)
    err = expect_rule(1, g, 0, [0, -2, 1])
    assert err.witness == 1 and witness_in_message(err)
    for dtype in (np.int8, np.int32, np.uint16, np.uint64):  # any integer type, as given
        err = expect_rule(1, g, 0, np.array([0, 0, 7], dtype=dtype))
        assert err.witness == 2 and "7" in str(err)
        assert validate(g, 0, np.array([0, 0, 1], dtype=dtype)).tolist() == [0, 1, 2]


def test_rule1_not_integers():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(1, g, 0, np.array([0.0, 0.0, 1.0]))
    assert "float64" in str(err)


# ------------------------------------------------------------------ rule 2: tree levels
def test_rule2_wrong_level_tree_edge():
    g = Graph.from_edges([0, 1, 2], [1, 2, 3])
    parents = [0, 0, 1, 2]
    err = expect_rule(2, g, 0, parents, levels=[0, 1, 3, 4])
    assert err.witness == 2 and "tree edge (1, 2)" in str(err) and witness_in_message(err)


def test_rule2_source_level_not_zero():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(2, g, 0, [0, 0, 1], levels=[1, 2, 3])
    assert err.witness == 0 and witness_in_message(err)


def test_rule2_reached_without_level():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(2, g, 0, [0, 0, 1], levels=[0, 1, -1])
    assert err.witness == 2 and witness_in_message(err)


def test_rule2_holds_by_construction_without_levels():
    # With tree depths, a tree edge that skips a BFS level is caught by rule 3 instead.
    g = Graph.from_edges([0, 1, 0], [1, 2, 2])
    expect_rule(3, g, 0, [0, 0, 1])


# ------------------------------------------------------------------ rule 3: edge levels
def test_rule3_edge_skips_a_level():
    # Triangle 0 - 1 - 2 - 0 with 2 hung below 1: edge (0, 2) spans levels 0 and 2.
    g = Graph.from_edges([0, 1, 0], [1, 2, 2])
    err = expect_rule(3, g, 0, [0, 0, 1])
    assert set(err.witness) == {0, 2} and witness_in_message(err)


def test_rule3_directed_arc_skips_a_level():
    g = Graph.from_edges([0, 1, 0], [1, 2, 2], directed=True)
    err = expect_rule(3, g, 0, [0, 0, 1])
    assert err.witness == (0, 2) and witness_in_message(err)


def test_rule3_directed_back_arc_is_fine():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], directed=True)
    np.testing.assert_array_equal(validate(g, 0, [0, 0, 1]), [0, 1, 2])


# ------------------------------------------------------------------ rule 4: spanning
def test_rule4_unreached_vertex_next_to_reached():
    g = Graph.from_edges([0, 1], [1, 2])
    err = expect_rule(4, g, 0, [0, 0, -1])
    assert set(err.witness) == {1, 2} and witness_in_message(err)
    assert "unreached vertex 2" in str(err)


def test_rule4_directed_reachable_but_unreached():
    g = Graph.from_edges([0, 1], [1, 2], directed=True)
    err = expect_rule(4, g, 0, [0, 0, -1])
    assert err.witness == (1, 2) and witness_in_message(err)


def test_rule4_directed_vertex_pointing_in_may_stay_unreached():
    # 3 -> 0: 3 reaches the source but is not reachable from it.
    g = Graph.from_edges([0, 1, 3], [1, 2, 0], directed=True)
    np.testing.assert_array_equal(validate(g, 0, [0, 0, 1, -1]), [0, 1, 2, -1])


def test_tree_reaching_another_component_breaks_rule5():
    # A tree that also "reaches" another component through a non-edge is caught by rule 5.
    g = Graph.from_edges([0, 2], [1, 3])
    expect_rule(5, g, 0, [0, 0, 0, 2])


# ------------------------------------------------------------------ rule 5: parent edges
def test_rule5_parent_not_a_neighbour():
    # 0 - 1, 0 - 2, 1 - 3; give 3 the parent 2 (same level as 1, but no edge 2 - 3).
    g = Graph.from_edges([0, 0, 1], [1, 2, 3])
    err = expect_rule(5, g, 0, [0, 0, 0, 2])
    assert err.witness == 3 and witness_in_message(err)
    assert "vertex 3 has parent 2 but (2, 3) is not an edge" in str(err)


def test_rule5_directed_needs_parent_to_child_arc():
    # 0->1, 0->2, 1->3, 3->2: parent 2 of 3 is joined only by the arc 3 -> 2.
    g = Graph.from_edges([0, 0, 1, 3], [1, 2, 3, 2], directed=True)
    np.testing.assert_array_equal(validate(g, 0, [0, 0, 0, 1]), [0, 1, 1, 2])
    err = expect_rule(5, g, 0, [0, 0, 0, 2])
    assert err.witness == 3 and "(2, 3) is not an arc" in str(err)


# ------------------------------------------------------------------ properties
def is_valid_bfs_tree(src, dst, n, directed, source, parents) -> bool:
    """Independent characterisation: parents[source] == source; a vertex is reached iff
    its true distance is finite; each reached non-source vertex's parent is an in-
    neighbour (raw edge list, no self-loop) one hop closer to the source."""
    dist = naive_bfs(src, dst, n, source, directed)
    arcs = set(zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), strict=True))
    if not directed:
        arcs |= {(v, u) for u, v in arcs}
    if parents[source] != source:
        return False
    for v in range(n):
        p = int(parents[v])
        if (p >= 0) != (dist[v] >= 0):
            return False
        if v == source or p < 0:
            continue
        if p == v or (p, v) not in arcs or dist[p] != dist[v] - 1:
            return False
    return True


@st.composite
def small_graphs(draw):
    n = draw(st.integers(1, 12))
    m = draw(st.integers(0, 30))
    vertex = st.integers(0, n - 1)
    edges = draw(st.lists(st.tuples(vertex, vertex), min_size=m, max_size=m))
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    directed = draw(st.booleans())
    source = draw(vertex)
    return src, dst, n, directed, source


def check_against_characterisation(src, dst, n, directed, source, parents):
    g = Graph.from_edges(src, dst, n, directed)
    expected = is_valid_bfs_tree(src, dst, n, directed, source, parents)
    try:
        levels = validate(g, source, parents)
    except ValidationError:
        assert not expected, f"rejected a valid tree {parents.tolist()}"
    else:
        assert expected, f"accepted an invalid tree {parents.tolist()}"
        np.testing.assert_array_equal(levels, naive_bfs(src, dst, n, source, directed))


@settings(max_examples=300, deadline=None)
@given(small_graphs())
def test_property_reference_parents_validate(graph):
    src, dst, n, directed, source = graph
    dist, parents = naive_bfs_parents(src, dst, n, source, directed)
    g = Graph.from_edges(src, dst, n, directed)
    np.testing.assert_array_equal(validate(g, source, parents), dist)
    np.testing.assert_array_equal(scipy_distances(g, source), dist)


@settings(max_examples=500, deadline=None)
@given(small_graphs(), st.data())
def test_property_single_corruption(graph, data):
    src, dst, n, directed, source = graph
    _, parents = naive_bfs_parents(src, dst, n, source, directed)
    v = data.draw(st.integers(0, n - 1))
    parents[v] = data.draw(st.integers(-1, n - 1))
    check_against_characterisation(src, dst, n, directed, source, parents)


@settings(max_examples=300, deadline=None)
@given(small_graphs(), st.data())
def test_property_arbitrary_parents(graph, data):
    src, dst, n, directed, source = graph
    parents = np.array(data.draw(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n)))
    check_against_characterisation(src, dst, n, directed, source, parents)


@pytest.mark.slow
def test_validate_large_random_graph():
    n, m = 1 << 16, 1 << 19
    rng = np.random.default_rng(5)
    g = Graph.from_edges(*rng.integers(0, n, size=(2, m)), num_vertices=n)
    levels = validate(g, 0, scipy_parents(g, 0))
    np.testing.assert_array_equal(levels, scipy_distances(g, 0))


# ------------------------------------------------------------------ traversed edges
def test_traversed_edges_undirected_component():
    g = Graph.from_edges([0, 1, 3], [1, 2, 4])  # 0-1-2 and 3-4
    assert traversed_edges(g, [0, 0, 1, -1, -1]) == 2
    assert traversed_edges(g, [-1, -1, -1, 3, 3]) == 1


def test_traversed_edges_counts_cleaned_graph():
    # Duplicates, both orientations and a self-loop collapse to edges 0-1 and 1-2.
    g = Graph.from_edges([0, 1, 1, 0, 1, 2], [1, 0, 1, 1, 2, 2])
    assert traversed_edges(g, [0, 0, 1]) == 2


def test_traversed_edges_directed_counts_out_arcs_of_reached():
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 0], directed=True)
    assert traversed_edges(g, [0, 0, 1, -1]) == 3  # 3 -> 0 leaves an unreached vertex


def test_traversed_edges_isolated_source_and_star():
    g = Graph.from_edges([0, 0, 0], [1, 2, 3], num_vertices=5)
    assert traversed_edges(g, [-1, -1, -1, -1, 4]) == 0
    assert traversed_edges(g, [1, 1, 0, 0, -1]) == 3


def test_traversed_edges_bad_length():
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidParameterError):
        traversed_edges(g, [0])


# ------------------------------------------------------------------ search keys
def kron_graph():
    s = next(s for s in SHAPES if s.name.startswith("kronecker_like"))
    return build(s)


def test_search_keys_deterministic_distinct_connected():
    g = kron_graph()
    keys = search_keys(g, count=64, seed=3)
    assert keys.shape == (64,) and keys.dtype == np.int64
    np.testing.assert_array_equal(keys, search_keys(g, count=64, seed=3))
    assert len(set(keys.tolist())) == 64
    assert np.all(g.degrees()[keys] >= 1)
    assert not np.array_equal(keys, search_keys(g, count=64, seed=4))


def test_search_keys_default_count_is_64():
    assert search_keys(kron_graph()).size == 64


def test_search_keys_fewer_candidates_returns_all():
    g = Graph.from_edges([0, 3], [1, 3], num_vertices=6)  # 3 has only a self-loop
    keys = search_keys(g, count=64, seed=1)
    assert sorted(keys.tolist()) == [0, 1]
    assert search_keys(g, count=0).size == 0


def test_search_keys_bad_count():
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidParameterError):
        search_keys(g, count=-1)


# ------------------------------------------------------------------ statistics
def test_teps_statistics_hand_computed():
    # times 1, 2, 4 s; 8 edges each -> TEPS 8, 4, 2.
    s = teps_statistics([1.0, 2.0, 4.0], [8, 8, 8])
    assert s["nbfs"] == 3
    expected = {
        "min_time": 1.0, "firstquartile_time": 1.5, "median_time": 2.0,
        "thirdquartile_time": 3.0, "max_time": 4.0, "mean_time": 7 / 3,
        "stddev_time": math.sqrt(7 / 3),
        "min_nedge": 8.0, "median_nedge": 8.0, "mean_nedge": 8.0, "stddev_nedge": 0.0,
        "min_TEPS": 2.0, "firstquartile_TEPS": 3.0, "median_TEPS": 4.0,
        "thirdquartile_TEPS": 6.0, "max_TEPS": 8.0,
        # 1/TEPS = 1/8, 1/4, 1/2: mean 7/24, so the harmonic mean is 24/7; deviations
        # -4/24, -1/24, 5/24 -> sqrt(42)/24 / (n-1) * (24/7)**2 = 12 sqrt(42) / 49.
        "harmonic_mean_TEPS": 24 / 7,
        "harmonic_stddev_TEPS": 12 * math.sqrt(42) / 49,
    }
    for key, value in expected.items():
        assert s[key] == pytest.approx(value, rel=1e-12), key
    assert "mean_TEPS" not in s and "stddev_TEPS" not in s


def test_harmonic_stddev_matches_norris_form():
    rng = np.random.default_rng(0)
    times, edges = rng.uniform(0.5, 2.0, 64), rng.integers(10**6, 10**7, 64)
    s = teps_statistics(times, edges)
    inv = times / edges
    assert s["harmonic_mean_TEPS"] == pytest.approx(1 / inv.mean())
    norris = inv.std(ddof=1) / (inv.mean() ** 2 * math.sqrt(63))
    assert s["harmonic_stddev_TEPS"] == pytest.approx(norris)


def test_teps_statistics_single_run_and_zero_edges():
    s = teps_statistics([2.0], [4])
    assert s["median_time"] == 2.0 and s["harmonic_mean_TEPS"] == 2.0
    assert math.isnan(s["stddev_time"]) and math.isnan(s["harmonic_stddev_TEPS"])
    s = teps_statistics([1.0, 1.0], [0, 4])
    assert s["harmonic_mean_TEPS"] == 0.0


@pytest.mark.parametrize(
    "times, edges",
    [([], []), ([1.0], [1, 2]), ([0.0], [1]), ([-1.0], [1]), ([1.0], [-1]), ([np.nan], [1])],
)
def test_teps_statistics_bad_input(times, edges):
    with pytest.raises(InvalidParameterError):
        teps_statistics(times, edges)


def test_format_statistics_block():
    text = format_statistics(teps_statistics([1.0, 2.0, 4.0], [8, 8, 8]))
    lines = text.splitlines()
    assert lines[0] == "nbfs: 3"
    assert "min_time: 1.00000000000000000e+00" in lines
    assert "harmonic_mean_TEPS: 3.42857142857142838e+00" in lines
    names = [line.split(":")[0] for line in lines]
    assert names[-2:] == ["harmonic_mean_TEPS", "harmonic_stddev_TEPS"]
    assert len(names) == 1 + 7 * 3


def _naive_row_witnesses(g, lo, hi, levels, parents, source):
    """Rules 3, 4 and 5 over rows lo..hi-1, by Python loops over the arcs."""
    out = {3: None, 4: None, 5: None}
    for u in range(lo, hi):
        if g.directed and levels[u] < 0:
            continue
        for v in g.indices[g.indptr[u]:g.indptr[u + 1]]:
            lu, lv = int(levels[u]), int(levels[v])
            if g.directed:
                b4, b3 = lv < 0, lv > lu + 1
            else:
                b4, b3 = (lu >= 0) != (lv >= 0), lu >= 0 and lv >= 0 and abs(lu - lv) > 1
            if b4 and out[4] is None:
                out[4] = (u, int(v))
            if b3 and out[3] is None:
                out[3] = (u, int(v))
    for v in range(parents.size):
        p = parents[v]
        if lo <= p < hi and v != source and v not in set(g.indices[g.indptr[p]:g.indptr[p + 1]]):
            out[5] = v
            break
    return out


@pytest.mark.parametrize("s", [s for s in shapes() if 30 <= s.num_vertices <= 2000],
                         ids=lambda s: s.name)
def test_row_witnesses_on_threads_are_the_first_in_row_order(s):
    """Each rule's witness over a range of rows, found on 1 to 4 threads, is the one a
    loop over the rows in order finds first (levels and parents broken at random)."""
    from taskbfs.graph500 import row_witnesses

    g = Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    rng = np.random.default_rng(7)
    levels = scipy_distances(g, s.sources[0]).astype(np.int64)
    parents = scipy_parents(g, s.sources[0]).astype(np.int64)
    for k in range(3):
        bad_levels, bad_parents = levels.copy(), parents.copy()
        picked = rng.choice(g.num_vertices, size=k * 3, replace=False)
        bad_levels[picked] = rng.integers(-1, 5, size=picked.size)
        bad_parents[picked] = rng.integers(0, g.num_vertices, size=picked.size)
        for lo, hi in [(0, g.num_vertices), (g.num_vertices // 3, g.num_vertices - 5)]:
            expected = _naive_row_witnesses(g, lo, hi, bad_levels, bad_parents, s.sources[0])
            indptr = g.indptr[lo:hi + 1] - g.indptr[lo]
            indices = g.indices[g.indptr[lo]:g.indptr[hi]]
            for threads in (1, 3, 4):
                got = row_witnesses(indptr, indices, lo, bad_levels, bad_parents,
                                    s.sources[0], g.directed, threads)
                assert got == expected, (lo, hi, threads)
                # the levels as the distributed check sends them: same witnesses
                small = compact_levels(bad_levels)
                assert small.dtype.itemsize < bad_levels.dtype.itemsize
                assert row_witnesses(indptr, indices, lo, small, bad_parents, s.sources[0],
                                     g.directed, threads) == expected


@pytest.mark.parametrize("s", [s for s in shapes() if 30 <= s.num_vertices <= 2000
                               and not s.directed], ids=lambda s: s.name)
def test_rule_5_from_the_childs_row_finds_the_same_smallest_witness(s):
    """Undirected: each range given only its own vertices' parents (``own_parents``), the
    smallest rule-5 witness over the ranges is the one the whole-parents check finds, on
    any number of threads; none when the parents are a BFS's."""
    from taskbfs.graph500 import row_witnesses

    g = Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    rng = np.random.default_rng(11)
    source = s.sources[0]
    levels = scipy_distances(g, source).astype(np.int64)
    parents = scipy_parents(g, source).astype(np.int64)
    cuts = [0, g.num_vertices // 3, g.num_vertices // 2 + 1, g.num_vertices]
    for k in range(4):
        bad = parents.copy()
        picked = rng.choice(g.num_vertices, size=k * 2, replace=False)
        bad[picked] = rng.integers(-1, g.num_vertices, size=picked.size)
        whole = _naive_row_witnesses(g, 0, g.num_vertices, levels, bad, source)[5]
        for threads in (1, 3):
            found = []
            for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
                indptr = g.indptr[lo:hi + 1] - g.indptr[lo]
                indices = g.indices[g.indptr[lo]:g.indptr[hi]]
                w = row_witnesses(indptr, indices, lo, levels, bad[lo:hi], source, False,
                                  threads, own_parents=True)[5]
                if w is not None:
                    found.append(w)
            assert (min(found) if found else None) == whole, (k, threads)
            if k == 0:
                assert whole is None


def test_rule_5_from_the_childs_row_is_refused_for_a_directed_graph():
    from taskbfs.graph500 import row_witnesses

    with pytest.raises(InvalidParameterError, match="undirected"):
        row_witnesses(np.array([0, 1]), np.array([0]), 0, np.zeros(1, np.int64),
                      np.zeros(1, np.int64), 0, True, own_parents=True)


@pytest.mark.parametrize("s", [s for s in shapes() if 30 <= s.num_vertices <= 2000],
                         ids=lambda s: s.name)
def test_reported_levels_stand_for_the_tree_walk_only_when_they_prove_it(s):
    """A BFS's levels are the tree's depths as the walk of the parent chains finds them;
    levels that break rule 1 or 2 anywhere (one vertex changed) are not taken, and
    validate then names the broken rule as before."""
    from taskbfs.graph500.validation import _levels_if_the_trees, _tree_levels_or_raise

    g = Graph.from_edges(s.src, s.dst, s.num_vertices, s.directed)
    source = s.sources[0]
    levels = scipy_distances(g, source).astype(np.int32)
    parents = scipy_parents(g, source).astype(np.int64)
    walked = _tree_levels_or_raise(parents, source)
    np.testing.assert_array_equal(_levels_if_the_trees(levels, parents, source), walked)
    # taskbfs's int32 parents are read as they are, by both
    small = parents.astype(np.int32)
    np.testing.assert_array_equal(_tree_levels_or_raise(small, source), walked)
    np.testing.assert_array_equal(_levels_if_the_trees(levels, small, source), walked)
    np.testing.assert_array_equal(validate(g, source, small), walked)
    rng = np.random.default_rng(3)
    reached = np.flatnonzero((parents >= 0) & (np.arange(g.num_vertices) != source))
    for v in rng.choice(reached, size=min(5, reached.size), replace=False).tolist():
        for change in (1, -1, -int(levels[v]) - 1):  # deeper, shallower, unreached
            bad = levels.copy()
            bad[v] += change
            assert _levels_if_the_trees(bad, parents, source) is None
            with pytest.raises(ValidationError) as info:
                validate(g, source, parents, levels=bad)
            assert info.value.rule == 2
    unreached = np.flatnonzero(parents < 0)
    if unreached.size:
        bad = levels.copy()
        bad[unreached[0]] = 0  # an unreached vertex with a level
        assert _levels_if_the_trees(bad, parents, source) is None
    bad = parents.copy()
    bad[source] = reached[0] if reached.size else source
    if bad[source] != source:
        assert _levels_if_the_trees(levels, bad, source) is None
