"""Reward composition against the docs/design/rewards.md §6 table written out; range and NaN
behaviour; naive baselines against D.5."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import records
from jaxopt_rl.rewards.composition import (
    FAMILIES,
    MAPPINGS,
    QUALITY_MAPS,
    compose,
    duration_map_lin,
    duration_map_log,
    multitask_rewards,
    naive_reward,
    quality_bucket,
    quality_linear,
)
from tests.rewards import reference_impl as ref

B, T = 12, 5
bools = hnp.arrays(bool, (B,), elements=st.booleans())
# q on a grid that hits the bucket edges, plus arbitrary values in [0, 1]
qualities = hnp.arrays(
    np.float32,
    (B,),
    elements=st.one_of(
        st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9, 1.0, 1e-7]), st.floats(0, 1, width=32)
    ),
)
PAIRS = [
    (family, mapping)
    for family in FAMILIES
    for mapping in MAPPINGS
    if family != "correctness" or mapping == "binary"
]


@pytest.mark.parametrize(("family", "mapping"), PAIRS)
@given(bools, bools, bools, qualities)
def test_compose_matches_table(family, mapping, c_cor, c_strict, g, q):
    c_strict = c_strict & c_cor  # c~ implies c_cor
    got = np.asarray(compose(c_cor, c_strict, g, q, family, mapping))
    want = [
        ref.compose_one(c_cor[i], c_strict[i], g[i], float(q[i]), family, mapping)
        for i in range(B)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.all((got >= -1) & (got <= 1))


@pytest.mark.parametrize("mapping", ["binary", "bucket", "linear", "range_third", "range_half"])
@given(bools, bools, bools, qualities, bools)
def test_multitask_picks_per_rollout(mapping, c_cor, c_strict, g, q, use_opt):
    got = np.asarray(multitask_rewards(c_cor, c_strict, g, q, use_opt, mapping))
    correctness = np.asarray(compose(c_cor, c_strict, g, q, "correctness"))
    optimization = np.asarray(compose(c_cor, c_strict, g, q, "optimization", mapping))
    np.testing.assert_array_equal(got, np.where(use_opt, optimization, correctness))


def test_quality_maps_at_the_papers_anchor_points():
    # Table of D.4: m(0.5) is 0.5 (bucketed, linear), 0.67 (range 1/3), 0.75 (range 1/2)
    q = np.array([0.5], np.float32)
    assert quality_bucket(q)[0] == 0.5
    assert quality_linear(q)[0] == 0.5
    assert QUALITY_MAPS["range_third"](q)[0] == pytest.approx(2 / 3)
    assert QUALITY_MAPS["range_half"](q)[0] == 0.75
    edges = np.array([0.0, 0.05, 0.1, 0.1001, 0.95, 1.0], np.float32)
    np.testing.assert_allclose(
        np.asarray(quality_bucket(edges)), [1.0, 0.9, 0.9, 0.8, 0.0, 0.0], atol=1e-7
    )


def test_undefined_quality_is_nan_only_where_used():
    c = np.array([True, False])
    q = np.array([np.nan, np.nan], np.float32)
    collapsed = np.asarray(compose(c, c, c, q, "collapsed", "linear"))
    assert np.isnan(collapsed[0]) and collapsed[1] == -1.0
    binary = np.asarray(compose(c, c, c, q, "collapsed", "binary"))
    np.testing.assert_array_equal(binary, [1.0, -1.0])


def test_bad_family_or_mapping_is_named():
    x = np.ones(2, bool)
    with pytest.raises(ValueError, match="family='fancy'"):
        compose(x, x, x, x, "fancy")
    with pytest.raises(ValueError, match="mapping='cubic'"):
        compose(x, x, x, x, "collapsed", "cubic")
    with pytest.raises(ValueError, match="no graded form"):
        compose(x, x, x, x, "correctness", "linear")


NAIVE_DURATIONS = st.one_of(
    st.sampled_from([np.nan, np.inf, 0.0, -1.0, 10.0]), st.floats(0.0009765625, 12.0, width=32)
)


@pytest.mark.parametrize("duration_map", ["lin", "log"])
@given(
    bools,
    hnp.arrays(np.float32, (B, T), elements=NAIVE_DURATIONS),
    hnp.arrays(bool, (B, T), elements=st.booleans()),
    hnp.arrays(np.float32, (B, T), elements=st.sampled_from([10.0, 2.0, 0.5])),
    hnp.arrays(np.int8, (B, T), elements=st.sampled_from([0, 1, 2])),
)
def test_naive_reward_matches_d5(duration_map, c_cor, durations, mask, limit, status):
    got = np.asarray(
        naive_reward(c_cor, durations, mask, limit, duration_map, status_BT=status)
    )
    want = [
        ref.naive_one(c_cor[i], durations[i], limit[i], mask[i], duration_map, status[i])
        for i in range(B)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.all((got >= -1) & (got <= 1))


def test_naive_reward_paper_examples():
    # "a correct 10 s average solution receives 0, a correct 1 s linear solution receives 0.9"
    c = np.array([True, True, False])
    d = np.array([[10.0], [1.0], [0.001]], np.float32)
    mask = np.ones((3, 1), bool)
    np.testing.assert_allclose(
        np.asarray(naive_reward(c, d, mask, 10.0, "lin")), [0.0, 0.9, -0.0001], atol=1e-6
    )
    log = np.asarray(naive_reward(c, d, mask, 10.0, "log"))
    np.testing.assert_allclose(log, [0.0, 1 / 3, 0.0], atol=1e-6)
    # a timeout counts at the limit even when its recorded duration is short
    status = np.array([[records.TIMEOUT]] * 3, np.int8)
    timed = naive_reward(c, d, mask, 10.0, "lin", status_BT=status)
    np.testing.assert_allclose(np.asarray(timed), [0.0, 0.0, -1.0], atol=1e-6)
    # the default limit is the service's 10 s cap
    np.testing.assert_array_equal(np.asarray(naive_reward(c, d, mask, map="lin", status_BT=status)),
                                  np.asarray(timed))
    assert math.isclose(float(duration_map_log(np.float32(0.01))), 1.0, rel_tol=1e-6)


def test_duration_maps_follow_the_spec_at_their_ends():
    # docs/design/rewards.md §6: m_lin(d) = clip(1 - d/10, 0, 1); m_log(d) = clip((1 - log10(max(d,
    # 1e-6))) / 3, 0, 1)
    lin = duration_map_lin(np.float32([0.0, 2.5, 5.0, 10.0, 30.0]))
    np.testing.assert_allclose(np.asarray(lin), [1.0, 0.75, 0.5, 0.0, 0.0], atol=1e-7)
    log = duration_map_log(np.float32([0.0, 1e-9, 1.0, 10.0, 100.0]))
    np.testing.assert_allclose(np.asarray(log), [1.0, 1.0, 1 / 3, 0.0, 0.0], atol=1e-6)


def test_bucket_map_at_the_spec_shift():
    # m_bucket(q) = 1 if q == 0 else max(0, 0.9 - 0.1 * floor(10 * (q - 1e-6))): float32(1e-6)
    # lies below the real 1e-6, so its floor is -1 and its value 1.0
    assert float(quality_bucket(np.float32(1e-6))) == 1.0
    assert float(quality_bucket(np.float32(1.0))) == 0.0


def test_the_module_is_not_shadowed_by_the_function_it_exports():
    import jaxopt_rl.rewards.composition as module

    assert isinstance(module, types.ModuleType) and module.compose is compose
