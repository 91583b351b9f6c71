"""The simulator replays stored references through the online reward path, leave-one-out.

Expected values come from `rewards.rewards` on record batches built here (the online path),
from the pass rule of docs/design/simulator.md §1 step 3 written per family, and from slow NumPy
loops (quality scores, band weights, leave-one-out percentiles)."""

import dataclasses

import numpy as np
import pytest

from jaxopt_rl import rewards
from jaxopt_rl.data.mini import load_mini
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.simulator import (
    BandConfig,
    Simulator,
    drawn_references,
    leave_one_out_records,
    load_stored_runs,
    quality_scores,
)
from jaxopt_rl.simulator.bands import band_weights


def env(name, *sets):
    return load_env_config(name, list(sets))


# environment -> the pass rule of docs/design/simulator.md §1 step 3, written from its reward table
ENVS = {
    "abs_2s": (env("abs_2s", "limit.limit_s=0.01", "gates.timeout_tolerance=0.2"),
               lambda r: r == 1.0),
    "qp_p30": (env("qp_p30"), lambda r: r == 1.0),
    "rw_p50": (env("rw_p80", "limit.percentile=50", "gates.timeout_tolerance=0.05"),
               lambda r: r == 1.0),
    # two-gate graded bucket on the timeout fraction: correct-but-slowest gets m_bucket(1) = 0
    "rel_timeout": (env("rel_timeout_p50", "limit.percentile=30"), lambda r: r > 0.0),
    # collapsed graded linear on q_QP: correct-but-slowest gets s(1 - 1) = -1
    "qp_linear": (env("qp_p30", "composition.mapping=linear"), lambda r: r > -1.0),
    "affine_qar": (env("qar_p30", "calibration.kind=affine", "calibration.alpha=0.63",
                       "calibration.beta_s=0.05", "gates.quality_threshold=0.45"),
                   lambda r: r == 1.0),
}


@pytest.fixture(scope="module")
def runs():
    dataset = load_mini()
    return load_stored_runs(dataset, dataset.problem_ids()[:12])


@pytest.fixture(scope="module")
def simulator(runs):
    return Simulator(runs, BandConfig(steps=9), window=3)


def online_pass(runs, env, problem_B, reference_B):
    alpha, beta_s = env.calibration.alpha_beta
    records = leave_one_out_records(runs, problem_B, reference_B, alpha, beta_s,
                                    env.service_cap_s)
    return np.asarray(rewards.rewards(records, env))


@pytest.mark.slow
def test_pass_outcomes_are_the_online_rewards(runs, simulator):
    envs = [e for e, _ in ENVS.values()]
    result = simulator.run(envs)
    p_B, h_B = runs.pairs()
    assert result.num_structures == len(envs)
    for c, (name, (e, rule)) in enumerate(ENVS.items()):
        reward_B = online_pass(runs, e, p_B, h_B)
        assert not np.isnan(reward_B).any()
        np.testing.assert_array_equal(result.pass_CPH[c, p_B, h_B], rule(reward_B), err_msg=name)
        # the curve: band-weighted pass rate (slow loop)
        weight_XPH = simulator.weight_XPH
        for i in range(len(result.x_X)):
            num = sum(weight_XPH[i, p, h] * rule(r) for p, h, r in zip(p_B, h_B, reward_B))
            den = sum(weight_XPH[i, p, h] for p, h in zip(p_B, h_B))
            assert result.curve_CX[c, i] == pytest.approx(num / den, abs=1e-6), (name, i)


@pytest.mark.slow
def test_curve_point_for_point_equals_sampled_references_through_rewards(runs):
    """Draw mode: the references sampled at each step, pushed through `rewards.rewards`."""
    sim = Simulator(runs, BandConfig(steps=7, sampling="draw", draws=3, seed=5), window=3)
    # several numbers of one structure: the traced knobs must equal the static ones
    envs = [env("abs_2s", f"limit.limit_s={limit}", f"gates.timeout_tolerance={rho}")
            for limit, rho in ((0.005, 0.1), (0.01, 0.0), (0.02, 0.5))]
    envs += [env("qp_p30", f"gates.quality_threshold={p}") for p in (0.2, 0.6)]
    envs += [env("rel_timeout_p50", f"limit.percentile={p}") for p in (20, 70)]
    result = sim.run(envs)
    assert result.num_structures == 3
    for c, e in enumerate(envs):
        rule = (lambda r: r > 0.0) if e.composition.mapping == "bucket" else (lambda r: r == 1.0)
        for i in range(len(result.x_X)):
            p_B, h_B = drawn_references(sim.weight_XPH, i)
            assert len(p_B) == 3 * runs.shape[0]
            passed = rule(online_pass(runs, e, p_B, h_B))
            want = np.float32(passed.sum()) / np.float32(len(passed))
            assert np.float32(result.curve_CX[c, i]) == want, (e.name, i)


def test_a_replayed_reference_is_never_in_its_own_pool(runs):
    p_B, h_B = runs.pairs()
    records = leave_one_out_records(runs, p_B, h_B)
    mask_BTH = np.asarray(records.ref_mask_PTH)
    for b, (p, h) in enumerate(zip(p_B, h_B)):
        assert not mask_BTH[b, :, h].any()
        others = [k for k in range(runs.shape[2]) if k != h]
        np.testing.assert_array_equal(mask_BTH[b][:, others], runs.ref_mask_PTH[p][:, others])
    # behaviour: q_QAR of each replayed reference is its percentile among the others only
    signals = rewards.signals(records, env("qar_p30"))
    q_B = np.asarray(signals.q_qar_B)
    for b, (p, h) in enumerate(zip(p_B, h_B)):
        per_test = []
        for t in range(runs.shape[1]):
            if runs.test_kind_PT[p, t] != 2 or not runs.ref_mask_PTH[p, t, h]:
                continue
            others = [runs.duration_PTH[p, t, k] for k in range(runs.shape[2])
                      if k != h and runs.ref_mask_PTH[p, t, k]]
            mine = runs.duration_PTH[p, t, h]
            per_test.append(sum(d < mine for d in others) / len(others))
        # (with itself in the pool the denominator would count it: 1/6 steps, not 1/5)
        assert q_B[b] == pytest.approx(np.mean(per_test), abs=1e-6)


def test_quality_scores_slow_reference(runs):
    score_PH = quality_scores(runs)
    p, t_count, h_count = runs.shape
    for i in range(p):
        for h in range(h_count):
            if not runs.reference_PH[i, h]:
                assert np.isnan(score_PH[i, h])
                continue
            values = []
            for t in range(t_count):
                if runs.test_kind_PT[i, t] != 2 or not runs.ref_mask_PTH[i, t, h]:
                    continue
                others = [runs.duration_PTH[i, t, k] for k in range(h_count)
                          if k != h and runs.ref_mask_PTH[i, t, k]]
                if others:
                    values.append(sum(d < runs.duration_PTH[i, t, h] for d in others)
                                  / len(others))
            assert score_PH[i, h] == pytest.approx(np.mean(values), abs=1e-6)


def test_band_weights_slow_reference():
    score_PH = np.array([[0.9, 0.1, 0.5, np.nan], [0.2, 0.8, np.nan, np.nan]])
    weight_XPH = band_weights(score_PH, BandConfig(steps=5))
    for p in range(2):
        scored = [h for h in range(4) if not np.isnan(score_PH[p, h])]
        weakest_first = sorted(scored, key=lambda h: (-score_PH[p, h], h))
        for i, x in enumerate(np.linspace(0, 1, 5)):
            s = x * (len(scored) - 1)
            want = np.zeros(4)
            want[weakest_first[int(np.floor(s))]] += 1 - (s - np.floor(s))
            want[weakest_first[min(int(np.floor(s)) + 1, len(scored) - 1)]] += s - np.floor(s)
            np.testing.assert_allclose(weight_XPH[i, p], want, atol=1e-7)
    draws = band_weights(score_PH, BandConfig(steps=5, sampling="draw", draws=4))
    assert (draws.sum(-1) == 4).all() and (draws[:, np.isnan(score_PH)] == 0).all()


def test_grouping_keeps_order_and_values(runs, simulator):
    envs = [ENVS["qp_p30"][0], ENVS["abs_2s"][0],
            dataclasses.replace(ENVS["qp_p30"][0], name="other",
                                gates=dataclasses.replace(ENVS["qp_p30"][0].gates,
                                                          quality_threshold=0.7))]
    together = simulator.run(envs)
    for c, e in enumerate(envs):
        alone = simulator.run([e])
        np.testing.assert_array_equal(together.curve_CX[c], alone.curve_CX[0])
        np.testing.assert_array_equal(together.pass_CPH[c], alone.pass_CPH[0])
