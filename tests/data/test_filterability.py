"""Robust CV and per-test aggregates against plain-Python loops, plus properties."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from jaxopt_rl.data.filterability import (
    is_filterable,
    length_correlation,
    per_test_aggregate,
    robust_cv,
)


def slow_quantile(values, q):
    """Linear interpolation between closest ranks (NumPy's default method), spelled out."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def slow_robust_cv(values):
    values = [v for v in values if math.isfinite(v)]
    if len(values) < 2:
        return math.nan
    median = slow_quantile(values, 0.5)
    if median <= 0:
        return math.nan
    return (slow_quantile(values, 0.75) - slow_quantile(values, 0.25)) / median


def slow_aggregate(duration, usable, aggregate):
    out = []
    for row, keep in zip(duration, usable):
        kept = [d for d, k in zip(row, keep) if k]
        if not kept:
            out.append(math.nan)
        else:
            out.append(statistics.fmean(kept) if aggregate == "mean" else statistics.median(kept))
    return out


durations = st.floats(0.001, 10.0, allow_nan=False)


@given(st.lists(durations, min_size=0, max_size=40))
def test_robust_cv_matches_loop(values):
    expected = slow_robust_cv(values)
    got = robust_cv(np.array(values))
    assert (math.isnan(expected) and math.isnan(got)) or math.isclose(got, expected, rel_tol=1e-9,
                                                                        abs_tol=1e-12)


@given(st.lists(durations, min_size=2, max_size=40), st.floats(0.01, 100.0))
def test_robust_cv_is_scale_invariant_not_shift_invariant(values, scale):
    base = robust_cv(np.array(values))
    assert math.isclose(robust_cv(np.array(values) * scale), base, rel_tol=1e-7, abs_tol=1e-9)
    if base > 1e-6:
        assert robust_cv(np.array(values) + 5.0) < base  # an additive offset shrinks it


@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 6)), elements=durations),
       st.data(), st.sampled_from(["mean", "median"]))
def test_per_test_aggregate_matches_loop(duration_TH, data, aggregate):
    usable_TH = data.draw(arrays(bool, duration_TH.shape))
    got = per_test_aggregate(duration_TH, usable_TH, aggregate)
    expected = slow_aggregate(duration_TH.tolist(), usable_TH.tolist(), aggregate)
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)


def test_known_profiles():
    flat = np.full(20, 0.1)
    ramp = np.linspace(0.05, 2.0, 20)
    assert robust_cv(flat) == 0.0 and not is_filterable(robust_cv(flat))
    assert is_filterable(robust_cv(ramp), 0.3)
    assert not is_filterable(float("nan"))
    # the gate is >= : exactly at the threshold counts
    assert is_filterable(0.3, 0.3)
    assert math.isnan(robust_cv(np.array([0.0, 0.0, 0.0])))  # median 0: undefined


def test_length_correlation():
    chars = np.arange(10.0)
    assert math.isclose(length_correlation(chars, 2 * chars + 1), 1.0)
    assert math.isnan(length_correlation(chars, np.ones(10)))
    assert math.isclose(length_correlation(np.array([1.0, 2, 3, np.nan]),
                                           np.array([1.0, 2, 3, 4])), 1.0)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="duration_TH"):
        per_test_aggregate(np.zeros((2, 3)), np.zeros((3, 2), dtype=bool))
