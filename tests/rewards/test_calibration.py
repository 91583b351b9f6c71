"""`sanitize_reference_durations` against eq. 10 written out, on values that include garbage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards.calibration import sanitize_reference_durations
from tests.rewards import reference_impl as ref

SHAPE = (4, 6)
RAW = st.one_of(
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -3.0, 1e30]),
    st.floats(0.0001220703125, 20.0, width=32),
)


@given(
    hnp.arrays(np.float32, SHAPE, elements=RAW),
    st.sampled_from([(1.0, 0.0), (0.6306, 0.0529), (1.3, -0.2), (0.5, 0.7)]),
    st.sampled_from([10.0, 2.0]),
)
def test_matches_eq10_loop(raw, affine, cap):
    alpha, beta = affine
    got = np.asarray(sanitize_reference_durations(raw, alpha, beta, cap))
    want = np.vectorize(lambda d: ref.sanitize_one(float(d), alpha, beta, cap))(raw)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.all((got >= 0) & (got <= cap))


@given(hnp.arrays(np.float32, SHAPE, elements=st.floats(0.0009765625, 9.9375, width=32)))
def test_identity_correction_leaves_valid_durations_alone(raw):
    np.testing.assert_array_equal(np.asarray(sanitize_reference_durations(raw)), raw)


def test_invalid_stored_values_become_the_cap():
    raw = np.array([np.nan, -1.0, 0.0, np.inf], np.float32)
    np.testing.assert_array_equal(np.asarray(sanitize_reference_durations(raw)), [10.0] * 4)
    # the affine map applies to psi(d) = cap, then the clamp: 0.6306 * 10 + 0.0529
    got = np.asarray(sanitize_reference_durations(raw, 0.6306, 0.0529))
    np.testing.assert_allclose(got, [6.3589] * 4, rtol=1e-6)


def test_per_test_cap_broadcasts():
    raw = np.array([[0.0, 3.0], [np.nan, 30.0]], np.float32)
    cap = np.array([[2.0], [5.0]], np.float32)
    got = np.asarray(sanitize_reference_durations(raw, cap_s=cap))
    np.testing.assert_array_equal(got, [[2.0, 2.0], [5.0, 5.0]])


@pytest.mark.parametrize("beta", [-0.5, -100.0])
def test_negative_results_clamp_to_zero(beta):
    got = np.asarray(sanitize_reference_durations(np.array([0.1], np.float32), 1.0, beta))
    assert got[0] == 0.0
