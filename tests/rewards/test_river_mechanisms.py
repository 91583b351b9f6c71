"""RiVER's two mechanism claims on constructed groups (docs/design/rewards.md §7; RiVER paper §3 and
its toy example), with the expected values worked out here from the page's formulas.

Scale dominance: Raw-GRPO averages raw scores over instances, so an instance whose scores span
a larger range decides the advantages; RiVER ranks per instance, so rescaling one instance
changes nothing.

Frequency dominance: under Raw-GRPO, many copies of a second-best solver together receive more
update mass (sum of advantages) than the single best solver; RiVER's winner-heavy shaping gives
the best solver more mass than all the copies together.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.rewards.river import raw_grpo_rewards, river_rewards


def _spec_river(scores_GM: np.ndarray) -> np.ndarray:
    """docs/design/rewards.md §7 written out for all-valid groups: mid-rank per instance (1 best), s
    = 1 for rank 1, else clip((G - 1 - r) / max(G - 3, 1), 0, 1) - 0.5; mean over instances."""
    g, m = scores_GM.shape
    s = np.zeros((g, m))
    for j in range(m):
        for i in range(g):
            better = np.sum(scores_GM[:, j] > scores_GM[i, j])
            tied = np.sum(scores_GM[:, j] == scores_GM[i, j])  # includes i
            r = better + (tied + 1) / 2
            s[i, j] = 1.0 if r == 1 else np.clip((g - 1 - r) / max(g - 3, 1), 0, 1) - 0.5
    return s.mean(axis=1)


def test_scaling_one_instance_moves_raw_grpo_and_not_river():
    # solver 0 wins instance 0 (scores within 0..1), solver 1 wins instance 1 (also 0..1)
    scores = np.array([[1.0, 0.2], [0.2, 1.0], [0.5, 0.5], [0.1, 0.1], [0.0, 0.3]])
    valid = np.ones_like(scores, bool)
    scaled = scores.copy()
    scaled[:, 1] *= 1000.0
    river, river_scaled = river_rewards(scores, valid), river_rewards(scaled, valid)
    np.testing.assert_array_equal(np.asarray(river), np.asarray(river_scaled))
    np.testing.assert_allclose(np.asarray(river), _spec_river(scores), atol=1e-6)
    raw, raw_scaled = np.asarray(raw_grpo_rewards(scores, valid)), np.asarray(
        raw_grpo_rewards(scaled, valid))
    assert raw[0] == pytest.approx(raw[1], abs=1e-6)  # symmetric before scaling
    assert raw_scaled[1] > raw_scaled[0] + 0.5  # the large-range instance now decides


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**31 - 1), st.floats(1e-3, 1e4))
def test_river_is_invariant_to_any_positive_rescaling_of_an_instance(m, seed, factor):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, size=(6, m)).astype(np.float64)  # ties included
    valid = rng.random((6, m)) > 0.2
    scaled = scores.copy()
    column = int(rng.integers(m))
    scaled[:, column] *= factor
    np.testing.assert_array_equal(np.asarray(river_rewards(scores, valid)),
                                  np.asarray(river_rewards(scaled, valid)))


def test_a_rare_best_solver_outweighs_its_frequent_runner_up_only_under_river():
    # G = 8 on 3 instances: one best solver, five copies of the second best, two poor ones
    scores = np.array([[10.0] * 3] + [[9.0] * 3] * 5 + [[1.0] * 3] * 2)
    valid = np.ones_like(scores, bool)
    river = np.asarray(river_rewards(scores, valid))
    # by hand: best r = 1 -> 1; copies share ranks 2..6, mid-rank 4 -> (7 - 4) / 5 - 0.5
    # = 0.1; the poor pair share 7..8, mid-rank 7.5 -> clip(-0.1) - 0.5 = -0.5
    np.testing.assert_allclose(river, [1.0] + [0.1] * 5 + [-0.5] * 2, atol=1e-6)
    assert river[0] > river[1:6].sum()  # 1.0 > 0.5
    raw = np.asarray(raw_grpo_rewards(scores, valid))
    # mean 57 / 8, population std ~3.551: best ~0.81, each copy ~0.53 (five: ~2.64)
    assert 0 < raw[0] < raw[1:6].sum()
    np.testing.assert_allclose(raw[:2], np.array([10.0 - 7.125, 9.0 - 7.125]) / np.sqrt(
        np.mean((scores[:, 0] - 7.125) ** 2)), rtol=1e-4)
