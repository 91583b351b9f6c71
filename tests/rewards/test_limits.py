"""Intended limits and post-filtering against loops; padding never matters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import limits, percentiles, records
from tests.rewards import jaxprs
from tests.rewards import reference_impl as ref

P, T, H = 4, 6, 5


@st.composite
def pools(draw):
    refs = draw(ref.durations((P, T, H)))
    mask = draw(ref.masks((P, T, H)))
    refs = ref.fill_padding(refs, mask, draw(ref.garbage((P, T, H))))
    used = draw(ref.masks((P, T)))
    return used, refs, mask


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint"])
@given(pools(), st.sampled_from([10, 20, 50, 80, 90]))
def test_relative_limit_matches_loop(interpolation, pool, percentile):
    used, refs, mask = pool
    limit, new_used = map(
        np.asarray, limits.relative_limit(refs, mask, used, percentile, interpolation)
    )
    for p in range(P):
        for t in range(T):
            values = ref.usable_durations(refs[p], mask[p], t)
            want = ref.quantile(values, percentile / 100, interpolation)
            np.testing.assert_allclose(limit[p, t], ref.to_float(want), rtol=1e-6, equal_nan=True)
            assert new_used[p, t] == (used[p, t] and want is not None)


@pytest.mark.parametrize("how", ["max", "median"])
@given(pools(), st.sampled_from([10, 30, 50, 80, 100]))
def test_ranked_reference_limit_matches_loop(how, pool, percentile):
    used, refs, mask = pool
    limit, new_used = map(np.asarray, limits.ranked_reference_limit(refs, mask, used, percentile, how))
    for p in range(P):
        want_limit, want_used = ref.ranked_reference_limit_row(
            refs[p], mask[p], used[p], percentile, how
        )
        np.testing.assert_allclose(
            limit[p], [ref.to_float(v) for v in want_limit], rtol=1e-6, equal_nan=True
        )
        np.testing.assert_array_equal(new_used[p], want_used)


@given(pools())
def test_reference_mean_rank_matches_loop(pool):
    used, refs, mask = pool
    got = np.asarray(limits.reference_mean_rank(refs, mask, used))
    for p in range(P):
        want = [ref.to_float(v) for v in ref.reference_mean_rank_row(refs[p], mask[p], used[p])]
        np.testing.assert_allclose(got[p], want, rtol=1e-6, equal_nan=True)


@given(pools())
def test_precomputed_mid_ranks_change_nothing(pool):
    used, refs, mask = pool
    mid_rank = percentiles.reference_ranks(refs, mask, "average")
    np.testing.assert_array_equal(
        np.asarray(limits.reference_mean_rank(refs, mask, used)),
        np.asarray(limits.reference_mean_rank(refs, mask, used, mid_rank)),
    )
    for how in ("max", "median"):
        for a, b in zip(limits.ranked_reference_limit(refs, mask, used, 80, how),
                        limits.ranked_reference_limit(refs, mask, used, 80, how, mid_rank)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_reference_ranks_build_no_pairwise_tensor():
    """The ranked limit compares references in a loop: nothing `[P, T, H, H]` is ever built."""
    refs, mask, used = np.ones((P, T, H), np.float32), np.ones((P, T, H), bool), np.ones((P, T), bool)
    assert jaxprs.max_rank(limits.reference_mean_rank, refs, mask, used) == 3
    assert jaxprs.max_rank(lambda *a: limits.ranked_reference_limit(*a, 80), refs, mask, used) == 3


@given(pools(), st.data())
def test_padding_never_changes_a_limit(pool, data):
    used, refs, mask = pool
    other = ref.fill_padding(refs, mask, data.draw(ref.garbage((P, T, H))))
    for fn, args in (
        (limits.relative_limit, (50,)),
        (limits.ranked_reference_limit, (80, "max")),
        (limits.ranked_reference_limit, (80, "median")),
    ):
        for a, b in zip(fn(refs, mask, used, *args), fn(other, mask, used, *args)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@given(
    hnp.arrays(np.int8, (P, T), elements=st.sampled_from([0, 1, 2, 3])),
    ref.durations((P, T)),
    hnp.arrays(np.float32, (P, T), elements=st.sampled_from([0.5, 1.0, 2.0, np.inf, np.nan])),
)
def test_post_filter_matches_loop(status, duration, limit):
    got = np.asarray(limits.post_filter(status, duration, limit))
    assert got.dtype == np.int8
    for p in range(P):
        for t in range(T):
            lim = None if np.isnan(limit[p, t]) else float(limit[p, t])
            assert got[p, t] == ref.post_filter_one(int(status[p, t]), float(duration[p, t]), lim)


def test_post_filter_boundary_is_inclusive():
    status = np.full((1, 3), records.SUCCESS, np.int8)
    duration = np.array([[0.49, 0.5, 0.51]], np.float32)
    got = np.asarray(limits.post_filter(status, duration, np.full((1, 3), 0.5, np.float32)))
    np.testing.assert_array_equal(got, [[records.SUCCESS, records.TIMEOUT, records.TIMEOUT]])


def test_default_and_absolute_limits():
    cap = np.array([[10.0, 5.0]], np.float32)
    used = np.array([[True, False]])
    limit, kept = limits.default_limit(cap, used)
    np.testing.assert_array_equal(np.asarray(limit), cap)
    np.testing.assert_array_equal(np.asarray(kept), used)
    limit, kept = limits.absolute_limit(used, 0.5)
    np.testing.assert_array_equal(np.asarray(limit), [[0.5, 0.5]])
    np.testing.assert_array_equal(np.asarray(kept), used)


def test_ranked_reference_keeps_the_best_references():
    # reference 0 is fastest everywhere, 2 slowest; p = 50 of 3 ranked keeps ceil(1.5) = 2
    refs = np.array([[[1.0, 2.0, 9.0], [1.0, 3.0, 9.0]]], np.float32)
    mask = np.ones((1, 2, 3), bool)
    used = np.ones((1, 2), bool)
    limit, _ = limits.ranked_reference_limit(refs, mask, used, 50, "max")
    np.testing.assert_array_equal(np.asarray(limit), [[2.0, 3.0]])
    limit, _ = limits.ranked_reference_limit(refs, mask, used, 10, "max")
    np.testing.assert_array_equal(np.asarray(limit), [[1.0, 1.0]])
    # p = 33.5 of 3: 1.005 references, rounded up to 2
    limit, _ = limits.ranked_reference_limit(refs, mask, used, 33.5, "max")
    np.testing.assert_array_equal(np.asarray(limit), [[2.0, 3.0]])
    # p = 0 still keeps one reference, the best (ceil(0) = 0 would leave the set empty)
    limit, _ = limits.ranked_reference_limit(refs, mask, used, 0, "max")
    np.testing.assert_array_equal(np.asarray(limit), [[1.0, 1.0]])


def test_bad_arguments_are_named():
    refs, mask, used = np.ones((1, 2, 2), np.float32), np.ones((1, 2, 2), bool), np.ones((1, 2), bool)
    with pytest.raises(ValueError, match="percentile=150"):
        limits.relative_limit(refs, mask, used, 150)
    with pytest.raises(ValueError, match="how='mean'"):
        limits.ranked_reference_limit(refs, mask, used, 50, "mean")


@pytest.mark.parametrize("limit_fn", [limits.relative_limit, limits.ranked_reference_limit])
def test_percentiles_are_accepted_exactly_on_0_to_100(limit_fn):
    # spec: p in [0, 100] (a percentile of the reference durations), both ends included
    refs, mask, used = np.ones((1, 2, 2), np.float32), np.ones((1, 2, 2), bool), np.ones((1, 2), bool)
    for percentile in (0.0, 0.5, 99.5, 100.0):
        limit_fn(refs, mask, used, percentile)
    for percentile in (-0.5, 100.5):
        with pytest.raises(ValueError, match="percentile"):
            limit_fn(refs, mask, used, percentile)
