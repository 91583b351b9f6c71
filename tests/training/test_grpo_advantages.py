"""GRPO advantages: token-weighted baseline written out, the zero-sum property, masks, RiVER."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.training.grpo import advantages

P, G = 5, 8
rewards = hnp.arrays(np.float32, (P, G), elements=st.floats(-1, 1, width=32))
lengths = hnp.arrays(np.int32, (P, G), elements=st.integers(0, 4000))
masks = hnp.arrays(bool, (P, G), elements=st.sampled_from([True, True, True, False]))


def advantages_loop(rewards_G, lengths_G, mask_G):
    real = [i for i in range(len(rewards_G)) if mask_G[i]]
    total = sum(float(lengths_G[i]) for i in real)
    if total > 0:
        baseline = sum(float(lengths_G[i]) * float(rewards_G[i]) for i in real) / total
    else:
        baseline = sum(float(rewards_G[i]) for i in real) / max(len(real), 1)
    return [float(rewards_G[i]) - baseline if mask_G[i] else 0.0 for i in range(len(rewards_G))]


@given(rewards, lengths, masks)
def test_matches_loop(r, lengths_, mask):
    got = np.asarray(advantages(r, lengths_, mask))
    want = [advantages_loop(r[p], lengths_[p], mask[p]) for p in range(P)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@given(rewards, lengths, masks)
def test_token_weighted_advantages_sum_to_zero(r, lengths_, mask):
    a = np.asarray(advantages(r, lengths_, mask), np.float64)
    weighted = np.sum(np.where(mask, lengths_ * a, 0.0), axis=-1)
    scale = np.maximum(np.sum(np.where(mask, lengths_, 0), axis=-1), 1)
    np.testing.assert_allclose(weighted / scale, 0.0, atol=1e-5)


@given(rewards, lengths, masks, st.data())
def test_padding_never_changes_an_advantage(r, lengths_, mask, data):
    junk_r = data.draw(hnp.arrays(np.float32, (P, G), elements=st.sampled_from([np.nan, 9e9])))
    junk_l = data.draw(hnp.arrays(np.int32, (P, G), elements=st.integers(0, 10**6)))
    a = np.asarray(advantages(r, lengths_, mask))
    b = np.asarray(advantages(np.where(mask, r, junk_r), np.where(mask, lengths_, junk_l), mask))
    np.testing.assert_array_equal(a, b)
    assert np.all(a[~mask] == 0.0)


def test_single_group_and_no_std_division():
    r = np.array([1.0, 0.0, -1.0], np.float32)
    a = np.asarray(advantages(r, np.array([10, 20, 30])))
    np.testing.assert_allclose(a, [4 / 3, 1 / 3, -2 / 3], rtol=1e-6)
    # scaling rewards scales advantages: no standard-deviation normalisation
    np.testing.assert_allclose(np.asarray(advantages(10 * r, np.array([10, 20, 30]))), 10 * a, rtol=1e-5)


def test_equal_rewards_give_zero_advantage_and_river_passes_through():
    np.testing.assert_array_equal(np.asarray(advantages(np.full(4, 0.5), np.arange(1, 5))), 0.0)
    shaped = np.array([[1.0, -0.5, 0.25, -1.0]], np.float32)
    mask = np.array([[True, True, True, False]])
    got = np.asarray(advantages(shaped, np.ones((1, 4)), mask, river=True))
    np.testing.assert_array_equal(got, [[1.0, -0.5, 0.25, 0.0]])
