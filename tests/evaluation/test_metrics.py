"""pass@k against exact binomials, pass@k(p_tau), and win rates against loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.evaluation.metrics import pass_at_k, pass_at_k_p_tau, win_rates
from tests.rewards import reference_impl as ref

P, N, T = 6, 5, 3


@st.composite
def counts(draw, max_n=40):
    n = draw(hnp.arrays(np.int32, (P,), elements=st.integers(0, max_n)))
    m = np.array([draw(st.integers(0, int(x))) for x in n], np.int32)
    return n, m


@pytest.mark.parametrize("k", [1, 5, 10, 64])
@given(counts())
def test_pass_at_k_matches_exact_binomials(k, nm):
    n, m = nm
    got = np.asarray(pass_at_k(n, m, k))
    want = [ref.to_float(ref.pass_at_k_one(int(n[p]), int(m[p]), k)) for p in range(P)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@given(counts(max_n=200))
def test_pass_at_k_is_monotone_in_k_and_m(nm):
    n, m = nm
    previous = np.asarray(pass_at_k(n, m, 1))
    for k in (2, 4, 8, 16, 32):
        current = np.asarray(pass_at_k(n, m, k))
        ok = ~np.isnan(current)
        assert np.all(current[ok] >= previous[ok] - 1e-6)
        previous = current
    more = np.minimum(m + 1, n)
    ok = n > 0
    assert np.all(np.asarray(pass_at_k(n, more, 5))[ok] >= np.asarray(pass_at_k(n, m, 5))[ok])


def test_pass_at_k_edges():
    np.testing.assert_allclose(
        np.asarray(pass_at_k(np.array([20, 20, 3, 3, 0]), np.array([0, 20, 1, 0, 0]), 5)),
        [0.0, 1.0, 1.0, 0.0, np.nan],
    )
    # pass@1 is the pass rate
    assert float(pass_at_k(np.array([20]), np.array([7]), 1)[0]) == pytest.approx(0.35)
    with pytest.raises(ValueError, match="k=0"):
        pass_at_k(np.array([3]), np.array([1]), 0)
    with pytest.raises(ValueError, match="problem 1 has m outside"):
        pass_at_k(np.array([3, 3]), np.array([1, 4]), 1)


@pytest.mark.parametrize("tau", [10, 30, 50, 100])
@given(
    hnp.arrays(bool, (P, N), elements=st.booleans()),
    hnp.arrays(np.float32, (P, N), elements=st.sampled_from([0.0, 0.1, 0.3, 0.31, 0.5, np.nan])),
    hnp.arrays(bool, (P, N), elements=st.booleans()),
)
def test_pass_at_k_p_tau_matches_loop(tau, c_strict, q, sample_mask):
    got = np.asarray(pass_at_k_p_tau(c_strict, q, tau, 2, sample_mask))
    for p in range(P):
        n = int(sample_mask[p].sum())
        m = sum(
            1
            for i in range(N)
            if sample_mask[p, i] and c_strict[p, i] and (tau >= 100 or q[p, i] <= tau / 100)
        )
        want = ref.pass_at_k_one(n, m, 2)
        np.testing.assert_allclose(got[p], ref.to_float(want), rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("how", ["best", "median"])
@given(
    hnp.arrays(np.float32, (P, N, T), elements=st.sampled_from([0.5, 1.0, 2.0])),
    hnp.arrays(bool, (P, N), elements=st.booleans()),
    hnp.arrays(np.float32, (P, N + 2, T), elements=st.sampled_from([0.5, 1.0, 2.0])),
    hnp.arrays(bool, (P, N + 2), elements=st.booleans()),
    hnp.arrays(bool, (P, T), elements=st.booleans()),
)
def test_win_rates_match_loop(how, model_d, model_pass, base_d, base_pass, test_mask):
    got = win_rates(model_d, model_pass, base_d, base_pass, test_mask, how)
    wins, losses, draws, excluded = ref.win_rate_ref(
        model_d, model_pass, base_d, base_pass, test_mask, how
    )
    assert (int(got.wins), int(got.losses), int(got.draws), int(got.excluded)) == (
        wins,
        losses,
        draws,
        excluded,
    )
    want_rate = wins / (wins + losses) if wins + losses else np.nan
    np.testing.assert_allclose(float(got.win_rate), want_rate, rtol=1e-6, equal_nan=True)
    outcome = np.asarray(got.outcome_P)
    assert int(np.sum(outcome == 1)) == wins and int(np.sum(np.isnan(outcome))) == excluded


def test_win_rates_example_and_bad_input():
    model = np.array([[[1.0], [3.0], [9.0]]], np.float32)  # totals 1, 3, 9
    base = np.array([[[2.0], [2.5], [4.0]]], np.float32)
    passing = np.array([[True, True, False]])
    mask = np.ones((1, 1), bool)
    assert float(win_rates(model, passing, base, passing, mask, "best").win_rate) == 1.0
    # lower median of two passing samples is the faster one: 1 vs 2 -> win
    assert int(win_rates(model, passing, base, passing, mask, "median").wins) == 1
    broken = model.copy()
    broken[0, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"model sample \[0, 1\] passes but has no duration"):
        win_rates(broken, passing, base, passing, mask)
