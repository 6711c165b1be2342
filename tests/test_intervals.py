"""The interval sweeps every analysis is made of, on intervals worked out by hand."""

from __future__ import annotations

import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xpu_profiler.core import compiled
from xpu_profiler.core.intervals import (
    _nested,
    containing,
    covered_in_windows,
    distinct_rows,
    group_ids,
    lanes,
    merged_intervals,
    top_level,
    union_length,
    within_union,
)
from xpu_profiler.core.ordering import lexsort


def a(*v):
    return np.array(v, np.int64)


def test_group_ids_are_dense_and_follow_the_rows_order():
    rows, inv = distinct_rows(a(3, 1, 3, 1, 2), a(9, 9, 9, 5, 0))
    assert rows.tolist() == [[1, 5], [1, 9], [2, 0], [3, 9]]
    assert inv.tolist() == [3, 1, 3, 0, 2]
    assert group_ids(a(7, 7, 8)).tolist() == [0, 0, 1]
    assert group_ids(a()).tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2**40), st.integers(1, 30)), max_size=60),
    st.sampled_from([np.int8, np.int32, np.int64, np.uint32]),
    st.booleans(),
)
def test_distinct_rows_match_numpy_unique(runs, dtype, wide):
    """Runs of equal rows (the fast path), rows in any order (the sort) and keys too wide to
    pack (numpy's lexsort): the same sorted rows and dense ids as ``np.unique`` gives."""
    first = np.array([r for r, _, k in runs for _ in range(k)], np.int64)
    second = np.array([t if wide else t % 5 for _, t, k in runs for _ in range(k)], np.int64)
    if dtype is not np.int64:
        first = (first % 3).astype(dtype)
        second = (second % 7).astype(dtype)
    if wide and dtype is np.int64 and len(second):
        second[0] = np.iinfo(np.int64).max  # no packing
    rows, inv = distinct_rows(first, second)
    ref, ref_inv = np.unique(np.stack([first, second], axis=1), axis=0, return_inverse=True)
    assert rows.tolist() == ref.tolist() and rows.dtype == ref.dtype
    assert inv.tolist() == ref_inv.ravel().tolist() and inv.dtype == np.int64
    shuffled = np.random.default_rng(len(first)).permutation(len(first))
    rows2, inv2 = distinct_rows(first[shuffled], second[shuffled])
    assert rows2.tolist() == ref.tolist() and inv2.tolist() == ref_inv.ravel()[shuffled].tolist()


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 5)), min_size=1, max_size=30),
    st.integers(0, 6),
)
def test_the_compiled_nesting_walk_answers_as_the_sweep(pairs, max_depth):
    """``core/_nest.c`` against the numpy sweep, on small times (ties everywhere: equal
    starts, equal ends, zero-length intervals, an end at another's start) and depth limits."""
    _nest = pytest.importorskip("xpu_profiler.core._nest")
    start = np.array([s for s, _ in pairs], np.int64)
    end = start + np.array([d for _, d in pairs], np.int64)
    with mock.patch.dict(os.environ, {compiled.PURE_ENV: "1"}):
        sweep = _nested(start, end, max_depth)
    order = lexsort((-end, start))
    assert _nest.nested(start, end, order, max_depth) is sweep
    assert _nested(start, end, max_depth) is sweep  # and through the switch


def test_top_level_per_group():
    # group 0: [0,10) holds [2,5) and [5,10); [10,12) touches it; group 1: [3,4) alone
    gid, s, e = a(0, 0, 0, 0, 1), a(0, 2, 5, 10, 3), a(10, 5, 10, 12, 4)
    assert top_level(gid, s, e).tolist() == [True, False, False, True, True]


def test_containing_finds_the_holder_of_its_group():
    cand = (a(0, 0, 1), a(0, 100, 0), a(50, 200, 500))
    got = containing(*cand, a(0, 0, 0, 1, 2), a(10, 60, 150, 10, 10), a(20, 70, 210, 20, 20))
    # inside the first; in the gap; sticks out of the second; another group's; no candidate
    assert got.tolist() == [0, -1, -1, 2, -1]


def test_union_length_and_merged_runs():
    gid, s, e = a(0, 0, 0, 1, 1), a(0, 5, 20, 0, 0), a(10, 12, 30, 5, 5)
    assert union_length(gid, s, e, 2).tolist() == [22, 5]  # [0,12) ∪ [20,30); two equal ones
    g, rs, re = merged_intervals(gid, s, e)
    assert (g.tolist(), rs.tolist(), re.tolist()) == ([0, 0, 1], [0, 20, 0], [12, 30, 5])


def test_covered_in_windows():
    gid, s, e = a(0, 0, 1), a(0, 20, 0), a(10, 30, 100)
    got = covered_in_windows(gid, s, e, a(0, 0, 0, 1, 2), a(5, 0, 10, 50, 0), a(25, 100, 20, 60, 100))
    assert got.tolist() == [10, 20, 0, 10, 0]  # [5,10)+[20,25); all; a gap; group 1; no intervals


def test_within_union_includes_the_ends():
    # steps of rank 0: [0,10) and [5,20) overlap, [30,40); rank 1 has none
    gid, s, e = a(0, 0, 0), a(0, 5, 30), a(10, 20, 40)
    q = within_union(gid, s, e, a(0, 0, 0, 0, 0, 1), a(0, 20, 25, 30, 41, 5))
    assert q.tolist() == [True, True, False, True, False, False]


def test_lanes_keep_partial_overlaps_apart():
    # disjoint: one lane
    assert lanes(a(0, 10, 20), a(10, 20, 30), 500).tolist() == [0, 0, 0]
    # [0,10) and [5,15) overlap partly; [12,14) fits lane 0 again once [0,10) ended
    assert lanes(a(0, 5, 12, 20), a(10, 15, 14, 25), 500).tolist() == [0, 1, 0, 0]
    # nesting deeper than allowed goes to a new lane
    assert lanes(a(0, 1, 2), a(10, 9, 8), 2).tolist() == [0, 0, 1]
