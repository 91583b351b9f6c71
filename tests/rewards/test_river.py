"""RiVER and its baselines against loops over solvers and instances; the paper's properties;
feedback resolution."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import river
from tests.rewards import reference_impl as ref

P, G, M = 3, 6, 4
# few distinct scores so that ties (and ties at the top) are common
scores = hnp.arrays(np.float32, (P, G, M), elements=st.sampled_from([-2.0, 0.0, 1.0, 1.5, 7.0]))
validity = hnp.arrays(bool, (P, G, M), elements=st.sampled_from([True, True, True, False]))
METHODS = {
    "river_rewards": ref.river_one_group,
    "rank_uniform_rewards": ref.rank_uniform_one_group,
    "raw_grpo_rewards": ref.raw_grpo_one_group,
    "raw_binary_rewards": ref.raw_binary_one_group,
    "instance_norm_rewards": ref.instance_norm_one_group,
}


@pytest.mark.parametrize("name", list(METHODS))
@given(scores, validity)
def test_matches_loop(name, f, v):
    got = np.asarray(getattr(river, name)(f, v))
    want = np.array([METHODS[name](f[p], v[p]) for p in range(P)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@given(scores, validity)
def test_river_shaping_properties(f, v):
    """Per instance: the unique best valid solver gets 1, invalid -1, other valid in [-0.5, 0.5]."""
    for m in range(M):
        shaped = np.asarray(river.river_rewards(f[..., m : m + 1], v[..., m : m + 1]))
        for p in range(P):
            valid_scores = f[p, v[p, :, m], m]
            for g in range(G):
                if not v[p, g, m]:
                    assert shaped[p, g] == -1.0
                elif f[p, g, m] == valid_scores.max() and np.sum(valid_scores == f[p, g, m]) == 1:
                    assert shaped[p, g] == 1.0
                else:
                    assert -0.5 <= shaped[p, g] <= 0.5


@given(scores, validity, st.data())
def test_invariant_under_increasing_transform_per_instance(f, v, data):
    grid = np.array([-2.0, 0.0, 1.0, 1.5, 7.0], np.float32)
    new = f.copy()
    for m in range(M):
        steps = data.draw(st.lists(st.floats(0.01, 50.0), min_size=5, max_size=5))
        image = (np.cumsum(steps) - 100.0).astype(np.float32)
        for k, value in enumerate(grid):
            new[..., m][f[..., m] == value] = image[k]
    for name in ("river_rewards", "rank_uniform_rewards"):
        fn = getattr(river, name)
        np.testing.assert_array_equal(np.asarray(fn(f, v)), np.asarray(fn(new, v)))


@given(scores, validity, hnp.arrays(bool, (P, G), elements=st.booleans()), st.data())
def test_padded_solvers_and_instances_never_matter(f, v, solver_mask, data):
    instance_mask = np.array([True, True, False, True])
    junk_scores = data.draw(
        hnp.arrays(np.float32, (P, G, M), elements=st.sampled_from([np.nan, 1e9, -1e9]))
    )
    real = solver_mask[..., None] & instance_mask[None, None, :]
    garbage_f = np.where(real, f, junk_scores)
    garbage_v = np.where(real, v, data.draw(validity))
    for name in METHODS:
        fn = getattr(river, name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = np.asarray(fn(f, v & real, solver_mask, instance_mask))
            b = np.asarray(fn(garbage_f, garbage_v, solver_mask, instance_mask))
        np.testing.assert_array_equal(a, b)
        assert np.all(a[~solver_mask] == 0.0)
        # the same as running the loop on the real solvers and instances only
        for p in range(P):
            rows = np.flatnonzero(solver_mask[p])
            if rows.size:
                sub_f = f[p][np.ix_(rows, np.flatnonzero(instance_mask))]
                sub_v = v[p][np.ix_(rows, np.flatnonzero(instance_mask))]
                np.testing.assert_allclose(a[p, rows], METHODS[name](sub_f, sub_v), atol=1e-5)


def test_mid_rank_ties_at_the_top_get_no_winner_credit():
    f = np.array([[5.0], [5.0], [1.0], [0.0], [-1.0], [-2.0]], np.float32)  # G = 6
    v = np.ones((6, 1), bool)
    got = np.asarray(river.river_rewards(f, v))
    # tied top: rank 1.5 -> clip((5 - 1.5) / 3) - 0.5 = 0.5; ranks 3..6 -> 1/3 - .5 ... -0.5
    np.testing.assert_allclose(got, [0.5, 0.5, 2 / 3 - 0.5, 1 / 3 - 0.5, -0.5, -0.5], atol=1e-6)


def test_small_groups_warn_on_the_host_and_nan_scores_are_refused():
    f = np.array([[1.0], [2.0], [3.0]], np.float32)
    v = np.ones((3, 1), bool)
    with pytest.warns(UserWarning, match=r"group size\(s\) \[3\] <= 3"):
        got = np.asarray(river.river_rewards(f, v))
    np.testing.assert_allclose(got, [-0.5, -0.5, 1.0])  # rank 2: clip((3 - 1 - 2) / 1) - 0.5
    with pytest.raises(ValueError, match=r"scores\(1, 0\) is NaN but marked valid"):
        river.river_rewards(np.array([[1.0], [np.nan]] * 2, np.float32), np.ones((4, 1), bool))


@given(hnp.arrays(np.float32, (P, 8), elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
def test_feedback_resolution_matches_definition(values):
    gfr = np.asarray(river.group_feedback_resolution(values))
    for p in range(P):
        row = [float(x) for x in values[p]]
        assert gfr[p] == pytest.approx(ref.gfr_one(row), rel=1e-5, abs=1e-6)


def test_feedback_resolution_extremes_and_masks():
    same = np.zeros((1, 16), np.float32)
    distinct = np.arange(64, dtype=np.float32)[None]
    assert float(river.group_feedback_resolution(same)[0]) == 0.0
    # 64 distinct values: collision probability 64 * (1/64)^64 underflows float32, GFR does not
    assert float(river.group_feedback_resolution(distinct)[0]) == pytest.approx(math.log(64))
    mask = np.array([[True, True, False, False]])
    values = np.array([[1.0, 2.0, 1.0, 1.0]], np.float32)
    assert float(river.group_feedback_resolution(values, mask)[0]) == pytest.approx(math.log(2))
    assert np.isnan(river.group_feedback_resolution(np.ones((1, 1), np.float32))[0])
