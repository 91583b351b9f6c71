"""Pre-execution filters and the masked quantile, against loops; padding never matters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import filters, reductions
from tests.rewards import reference_impl as ref

P, T, H = 4, 6, 5
HOW = pytest.mark.parametrize("how", ["mean", "median"])


@st.composite
def pools(draw):
    refs = draw(ref.durations((P, T, H)))
    mask = draw(ref.masks((P, T, H)))
    refs = ref.fill_padding(refs, mask, draw(ref.garbage((P, T, H))))
    opt = draw(ref.masks((P, T)))
    return opt, refs, mask


@pytest.mark.parametrize("interpolation", reductions.QUANTILE_INTERPOLATIONS)
@given(
    hnp.arrays(np.float32, (P, H), elements=st.floats(0, 10, width=32)),
    ref.masks((P, H)),
    st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.0]),
)
def test_masked_quantile_matches_numpy(interpolation, values, mask, q):
    got = np.asarray(reductions.masked_quantile(values, mask, q, interpolation))
    for p in range(P):
        if not mask[p].any():
            assert np.isnan(got[p])
            continue
        want = np.quantile(values[p][mask[p]].astype(np.float64), q, method=interpolation)
        np.testing.assert_allclose(got[p], want, rtol=1e-6, atol=1e-6)


@HOW
@given(pools())
def test_aggregate_matches_loop(how, pool):
    _, refs, mask = pool
    got = np.asarray(filters.aggregate_reference_duration(refs, mask, how))
    for p in range(P):
        for t in range(T):
            want = ref.aggregate(ref.usable_durations(refs[p], mask[p], t), how)
            np.testing.assert_allclose(got[p, t], ref.to_float(want), rtol=1e-6, equal_nan=True)


@HOW
@given(pools(), st.sampled_from([0.1, 0.5, 1.0, 2.0, 5.0]))
def test_absolute_filter_matches_loop(how, pool, threshold):
    opt, refs, mask = pool
    got = np.asarray(filters.filter_absolute(opt, refs, mask, threshold, how))
    want = [ref.filter_absolute_row(opt[p], refs[p], mask[p], threshold, how) for p in range(P)]
    np.testing.assert_array_equal(got, want)


@HOW
@given(pools(), st.sampled_from([0, 10, 20, 30, 50, 90, 100]))
def test_relative_filter_matches_loop(how, pool, drop_percent):
    opt, refs, mask = pool
    got = np.asarray(filters.filter_relative(opt, refs, mask, drop_percent, how))
    want = [ref.filter_relative_row(opt[p], refs[p], mask[p], drop_percent, how) for p in range(P)]
    np.testing.assert_array_equal(got, want)


@given(pools(), hnp.arrays(np.int32, (P, T), elements=st.integers(0, 2000)), st.integers(0, 2000))
def test_length_filter(pool, io_chars, max_chars):
    opt, _, _ = pool
    got = np.asarray(filters.filter_length(opt, io_chars, max_chars))
    np.testing.assert_array_equal(got, opt & (io_chars <= max_chars))


@given(pools(), st.data())
def test_padding_never_changes_a_filter(pool, data):
    opt, refs, mask = pool
    other = ref.fill_padding(refs, mask, data.draw(ref.garbage((P, T, H))))
    for fn, arg in ((filters.filter_absolute, 2.0), (filters.filter_relative, 50)):
        for how in ("mean", "median"):
            np.testing.assert_array_equal(
                np.asarray(fn(opt, refs, mask, arg, how)), np.asarray(fn(opt, other, mask, arg, how))
            )


@given(pools())
def test_filters_only_remove_tests(pool):
    opt, refs, mask = pool
    assert np.array_equal(np.asarray(filters.filter_identity(opt)), opt)
    for used in (
        filters.filter_absolute(opt, refs, mask, 1.0),
        filters.filter_relative(opt, refs, mask, 30),
    ):
        assert not np.any(np.asarray(used) & ~opt)


def test_relative_filter_edges():
    refs = np.array([[[1.0], [3.0], [2.0], [4.0]]], np.float32)
    mask = np.array([[[True], [True], [True], [False]]])
    opt = np.ones((1, 4), bool)
    # no drop keeps all; r = 100 drops every rankable test but keeps the one without references
    assert np.asarray(filters.filter_relative(opt, refs, mask, 0)).all()
    np.testing.assert_array_equal(
        np.asarray(filters.filter_relative(opt, refs, mask, 100)), [[False, False, False, True]]
    )
    # 3 rankable tests, r = 34 -> floor(1.02) = 1: the slowest (3 s) goes
    np.testing.assert_array_equal(
        np.asarray(filters.filter_relative(opt, refs, mask, 34)), [[True, False, True, True]]
    )


def test_bad_arguments_are_named():
    opt, refs, mask = np.ones((1, 2), bool), np.ones((1, 2, 2), np.float32), np.ones((1, 2, 2), bool)
    with pytest.raises(ValueError, match="how='max'"):
        filters.filter_absolute(opt, refs, mask, 1.0, "max")
    with pytest.raises(ValueError, match="drop_percent=120"):
        filters.filter_relative(opt, refs, mask, 120)
    with pytest.raises(ValueError, match="threshold_s=-1"):
        filters.filter_absolute(opt, refs, mask, -1.0)
