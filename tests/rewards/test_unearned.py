"""No unearned reward and timing provenance, tried as an adversary.

Every expected value here is stated from the design pages or by hand, never read from the code. Each
test failed on commit 86da0b0 (before the fixes) and passes after.
"""

import json
import math

import numpy as np
import pytest
import yaml

from jaxopt_rl.commands.rewards import compute, undefined_summary
from jaxopt_rl.config import ConfigError
from jaxopt_rl.data.execution_records import (
    ExecutionRecord,
    RecordFileError,
    ReferenceDuration,
    batch_from_records,
    load_record_batch,
)
from jaxopt_rl.evaluation import metrics as evaluation_metrics
from jaxopt_rl.rewards import limits, percentiles, records, river
from jaxopt_rl.rewards.env_config import _REPO_ENV_DIR, EnvConfig, load_env_config
from jaxopt_rl.rewards.environment import rewards, rewards_and_signals, river_rewards_from_scores
from sandbox_cluster.api import Status

# docs/design/rewards.md §1: 0 success, 1 timeout, 2 failure; 3 no verdict
S, TO, F, INC = 0, 1, 2, 3
CAP = 10.0


def batch(status, duration, refs=True, cap=CAP):
    """One problem, G rollouts: t0 (T0), o0, o1 (TO); references 0.2/0.4/0.6/0.8 s on o0 and
    2/3/4/5 s on o1 (none at all when `refs` is False)."""
    status = np.asarray(status, np.int8)
    g = status.shape[0]
    ref_PTH = np.zeros((1, 3, 4), np.float32)
    ref_PTH[0, 1], ref_PTH[0, 2] = (0.2, 0.4, 0.6, 0.8), (2.0, 3.0, 4.0, 5.0)
    ref_mask = np.zeros((1, 3, 4), bool)
    ref_mask[0, 1:] = refs
    return records.RecordBatch(
        status_BT=status, duration_BT=np.asarray(duration, np.float32),
        test_mask_BT=np.ones((g, 3), bool), test_kind_BT=np.array([[0, 2, 2]] * g, np.int8),
        io_chars_BT=np.full((g, 3), 10, np.int32), cap_BT=np.full((g, 3), cap, np.float32),
        rollout_mask_B=np.ones(g, bool), ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask)


# ---- item 7: a NaN candidate duration never opens the speed gate ----------------------------


@pytest.mark.parametrize("name", ["qp_p30", "qar_p30", "two_gate_linear", "additive"])
@pytest.mark.parametrize("overrides", [[], ["ranking.if_unrankable=neutral"]])
def test_nan_duration_on_a_used_test_is_undefined_and_counted(name, overrides):
    # rollout 0: correct, fast on o0, NaN on o1; rollout 1: correct and fast everywhere
    env = load_env_config(name, overrides)
    reward_B, sig = rewards_and_signals(batch([[S, S, S]] * 2, [[0.1, 0.1, np.nan],
                                                                 [0.1, 0.1, 1.0]]), env)
    assert math.isnan(float(reward_B[0])), "a NaN duration must never become reward"
    assert bool(sig.undefined_B[0]) and int(sig.untimed_B[0]) == 1
    assert float(reward_B[1]) == 1.0 and int(sig.untimed_B[1]) == 0


# ---- item 8: a timeout counts at its cap; a success beyond its limit is refused ------------


@pytest.mark.parametrize("name", ["qp_p30", "qar_p30"])
def test_timeouts_recorded_fast_rank_at_the_cap(name):
    # every optimization test timed out, recorded at 1 ms: slower than every reference
    reward_B, sig = rewards_and_signals(batch([[S, TO, TO]], [[0.1, 0.001, 0.001]]),
                                        load_env_config(name))
    assert float(reward_B[0]) == -1.0
    q = float(sig.q_qp_B[0] if name == "qp_p30" else sig.q_qar_B[0])
    assert q == 1.0  # at the 10 s cap: every reference (<= 5 s) is faster


def test_a_success_beyond_its_cap_is_a_timeout_in_a_hand_built_batch():
    reward_B, sig = rewards_and_signals(batch([[S, S, S]], [[0.1, 0.1, 12.0]]),
                                        load_env_config("mc_mo"))
    assert int(sig.status_BT[0, 2]) == TO and float(reward_B[0]) == -1.0


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def row(status="success", duration=0.1, **extra):
    out = {"row_type": "execution", "problem_id": "p", "rollout_id": "r0", "test_id": "o0",
           "test_kind": "TO", "status": status, "duration_s": duration, "limit_s": 10.0,
           "io_chars": 12}
    out.update(extra)
    return out


@pytest.mark.parametrize(("rows", "message"), [
    ([row(duration=12.5)],
     r"line 1 \(problem 'p'\): column 'duration_s': a success must finish within its limit_s"),
    ([row(duration=1e300)], r"line 1 \(problem 'p'\): column 'duration_s': must be <= 1e\+06"),
    ([row(status="timeout", duration=1e300)], r"column 'duration_s': must be <= 1e\+06"),
    ([row(io_chars=2**31)], r"line 1 \(problem 'p'\): column 'io_chars': must be < 2\*\*31"),
    ([row(io_chars=2**70)], r"column 'io_chars': must be < 2\*\*31"),
    ([row(limit_s=1e300)], r"column 'limit_s': must be <= 1e\+06"),
    ([row(), {"row_type": "reference", "problem_id": "p", "test_id": "o0",
              "reference_id": "h", "duration_s": 1e300}],
     r"line 2 \(problem 'p'\): column 'duration_s': must be <= 1e\+06"),
    ([row(reference_id="h0")],
     r"line 1 \(problem 'p'\): column 'reference_id' does not apply to row_type 'execution'"),
    ([row(), {"row_type": "reference", "problem_id": "p", "test_id": "o0",
              "reference_id": "h", "duration_s": 0.2, "status": "success"}],
     r"line 2 \(problem 'p'\): column 'status' does not apply to row_type 'reference'"),
    ([row(timing="laptop")], r"column 'timing': unknown value 'laptop'"),
])
def test_record_file_values_are_refused_with_one_line(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(RecordFileError, match=message) as err:
        load_record_batch(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_non_utf8_file_names_the_file(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(row()).encode() + b"\n" + b'{"problem_id": "\xe9"}\n')
    with pytest.raises(RecordFileError, match=r"line 2: not valid UTF-8") as err:
        load_record_batch(path)
    assert str(path) in str(err.value)


def test_a_timeout_in_a_file_sits_at_its_cap_whatever_it_carries(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [row(status="timeout", duration=0.001, limit_s=4.0)])
    batch_, _ = load_record_batch(path)
    assert float(batch_.duration_BT[0, 0]) == 4.0


# ---- item 9: no usable reference durations -> undefined by default, counted ---------------


def test_unrankable_is_dropped_by_default_and_neutral_only_by_choice():
    assert EnvConfig(name="x").ranking.if_unrankable == "drop"
    no_refs = batch([[S, S, S]], [[0.1, 9.0, 9.0]], refs=False)  # slow, but nothing to rank by
    reward_B, sig = rewards_and_signals(no_refs, load_env_config("qp_p30"))
    assert math.isnan(float(reward_B[0])) and bool(sig.unrankable_B[0])
    neutral = load_env_config("qp_p30", ["ranking.if_unrankable=neutral"])
    assert float(rewards(no_refs, neutral)[0]) == 1.0  # the explicit choice: full speed credit


def test_the_cli_counts_unrankable_and_untimed_rollouts(tmp_path):
    rows = [row(test_id="t0", test_kind="T0"), row(test_id="o0"),
            row(rollout_id="r1", test_id="t0", test_kind="T0"),
            row(rollout_id="r1", test_id="o0", timing="local")]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    results = compute(path, load_env_config("qp_p30"))
    assert results["undefined"].tolist() == [True, True]
    line = undefined_summary(load_env_config("qp_p30"), results)
    assert "2 rollout(s) without a defined reward" in line
    assert "1 untimed" in line and "1 unrankable" in line


# ---- item 10: ranking precision cannot merge distinct scores --------------------------------


def test_river_baselines_and_gfr_keep_scores_near_1e9_distinct():
    scores = np.array([[1e9], [1e9 + 1], [1e9 + 2], [1e9 + 3]])
    valid = np.ones(scores.shape, bool)
    # G = 4: ranks 4, 3, 2, 1 -> clip((G - 1 - r) / max(G - 3, 1), 0, 1) - 0.5, winner 1
    np.testing.assert_array_equal(river.river_rewards(scores, valid), [-0.5, -0.5, 0.5, 1.0])
    np.testing.assert_allclose(river.rank_uniform_rewards(scores, valid),
                               [-1, -1 / 3, 1 / 3, 1], atol=1e-6)
    np.testing.assert_array_equal(river.raw_binary_rewards(scores, valid), [0, 0, 0, 1])
    z = np.array([-1.5, -0.5, 0.5, 1.5]) / math.sqrt(1.25)
    np.testing.assert_allclose(river.instance_norm_rewards(scores, valid), z, rtol=1e-5)
    np.testing.assert_allclose(river.raw_grpo_rewards(scores, valid), z, rtol=1e-5)
    # four distinct values: sum_z p_z^G = 4 (1/4)^4 -> GFR = -log(4^-3) / 3 = log 4
    values = np.array([1e9, 1e9 + 1, 1e9 + 2, 1e9 + 3])
    assert float(river.group_feedback_resolution(values)) == pytest.approx(math.log(4), rel=1e-6)
    env = load_env_config("river")
    np.testing.assert_array_equal(river_rewards_from_scores(scores, valid, env),
                                  [-0.5, -0.5, 0.5, 1.0])


# ---- item 11: the smaller ones ---------------------------------------------------------------


# per-test counts of faster references (n references per test) whose mean is exactly p, while
# float32 accumulation gives a QAR just above float32(p) (found by search on 86da0b0)
EXACT_THRESHOLD_CASES = [
    (0.5, 7, [3, 2, 5, 2, 4, 5]),
    (0.7, 7, [7, 3, 2, 5, 4, 3, 7, 5, 7, 6]),
    (0.9, 20, [16, 19, 19]),
]


@pytest.mark.parametrize(("p", "n", "counts"), EXACT_THRESHOLD_CASES)
def test_qar_equal_to_its_threshold_passes_the_gate(p, n, counts):
    t = len(counts)
    assert sum(counts) == round(p * n * t)  # exactly p
    ref_PTH = np.tile(np.arange(1, n + 1, dtype=np.float32), (1, t + 1, 1))
    ref_mask = np.ones(ref_PTH.shape, bool)
    ref_mask[0, 0] = False  # test 0 is the T0 test
    duration = np.concatenate([[0.1], np.asarray(counts) + 0.5]).astype(np.float32)[None]
    kinds = np.array([[0] + [2] * t], np.int8)
    b = records.RecordBatch(
        status_BT=np.zeros((1, t + 1), np.int8), duration_BT=duration,
        test_mask_BT=np.ones((1, t + 1), bool), test_kind_BT=kinds,
        io_chars_BT=np.ones((1, t + 1), np.int32), cap_BT=np.full((1, t + 1), 100.0, np.float32),
        rollout_mask_B=np.ones(1, bool), ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask)
    env = load_env_config("qar_p30", [f"gates.quality_threshold={p}", "service_cap_s=100"])
    assert float(rewards(b, env)[0]) == 1.0


def test_an_exact_tie_at_the_ranked_cut_goes_to_the_lower_index():
    # found by search on 86da0b0. Exact mean normalised ranks (by hand, as Fractions):
    # h0 17/24, h1 5/16, h2 17/24, h3 25/72, h4 25/72, h5 37/72: h1 is best, then h3 and h4
    # tie exactly (their float32 sums differ in the last bit). p = 20 of 6 ranked keeps
    # ceil(1.2) = 2 references: h1 and, by the lower index, h3 (not h4).
    d = np.array([[[3.0, 3.0, 3.0, 3.0, 2.0, 1.5], [1.5, 0.5, 2.0, 1.5, 1.0, 0.5],
                   [3.0, 1.5, 1.5, 0.5, 0.5, 2.0], [2.0, 0.5, 1.5, 1.0, 3.0, 3.0]]], np.float32)
    m = np.array([[[1, 1, 1, 1, 0, 1], [1, 0, 1, 0, 1, 0], [1, 0, 0, 1, 1, 1],
                   [0, 1, 1, 1, 1, 1]]], bool)
    limit_PT, used_PT = limits.ranked_reference_limit(d, m, np.ones((1, 4), bool), 20.0, "max")
    # max over {h1, h3} where usable: t0 max(3, 3); t1 neither usable; t2 h3 only; t3 max(.5, 1)
    np.testing.assert_array_equal(np.asarray(limit_PT)[0], [3.0, np.nan, 0.5, 1.0])
    assert np.asarray(used_PT)[0].tolist() == [True, False, True, True]


def test_naive_base_ignores_an_infra_error_on_a_test_it_never_reads():
    # infra_error on o0 (an optimization test); naive base reads c_cor and T0 durations only
    reward = float(rewards(batch([[S, INC, S]], [[0.5, 0.0, 1.0]]),
                           load_env_config("naive_base_lin"))[0])
    assert reward == pytest.approx(1 - 0.5 / 10)  # c_cor + m_lin(0.5 s) - 1


def test_win_rate_draws_do_not_depend_on_summation_order():
    a = np.array([[[2.015, 1.945, 1.85]]], np.float32)  # float32 sums differ in these orders
    b = a[..., ::-1].copy()
    yes, mask = np.ones((1, 1), bool), np.ones((1, 3), bool)
    for how in ("best", "median"):
        result = evaluation_metrics.win_rates(a, yes, b, yes, mask, how=how)
        assert (int(result.draws), int(result.wins), int(result.losses)) == (1, 0, 0)


def test_pass_at_k_refuses_a_non_integer_count():
    with pytest.raises(ValueError, match="non-integer count m"):
        evaluation_metrics.pass_at_k(np.array([10]), np.array([2.5]), 1)
    with pytest.raises(ValueError, match="non-integer count n"):
        evaluation_metrics.pass_at_k(np.array([10.5]), np.array([2]), 1)


def test_the_reward_path_refuses_rollouts_of_one_problem_with_different_test_layouts():
    b = batch([[S, S, S]] * 2, [[0.1, 0.1, 1.0]] * 2)
    kinds = np.asarray(b.test_kind_BT).copy()
    kinds[1, 2] = 0  # rollout 1 reads o1 as a correctness test
    import dataclasses

    with pytest.raises(ValueError, match="share their test layout"):
        rewards(dataclasses.replace(b, test_kind_BT=kinds), load_env_config("qp_p30"))


def test_a_service_cap_below_the_records_cap_is_refused():
    with pytest.raises(ValueError, match="service_cap_s=5 is below the cap 10 s"):
        rewards(batch([[S, S, S]], [[0.1, 0.1, 1.0]]),
                load_env_config("qp_p30", ["service_cap_s=5"]))


# ---- item 12: every shipped environment names its calibration -------------------------------


def test_every_shipped_execution_config_states_its_calibration():
    for path in sorted(_REPO_ENV_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data.get("kind", "execution") != "execution":
            continue
        assert data.get("calibration", {}).get("kind") in ("identity", "affine"), path.name


def test_a_config_without_a_calibration_is_refused(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\n")
    with pytest.raises(ConfigError, match="calibration: required"):
        load_env_config(path)
    assert load_env_config(path, ["calibration.kind=identity"]).calibration.kind == "identity"


# ---- a duration not measured on the timing fleet never enters ranking ----------------------


def provenance_records(local_duration: float, timing: str):
    executions = []
    for r, (o0, o1) in enumerate([(0.1, 1.0), (0.3, 2.5), (0.5, 4.5)]):
        executions += [
            ExecutionRecord("p", f"r{r}", "t0", "T0", Status.SUCCESS, 0.01, CAP, 5),
            ExecutionRecord("p", f"r{r}", "o0", "TO", Status.SUCCESS, o0, CAP, 5),
            ExecutionRecord("p", f"r{r}", "o1", "TO", Status.SUCCESS,
                            local_duration if r == 0 else o1, CAP, 5,
                            timing=timing if r == 0 else "fleet"),
        ]
    references = [ReferenceDuration("p", t, f"h{h}", d) for t, ds in
                  (("o0", (0.2, 0.4, 0.6, 0.8)), ("o1", (2.0, 3.0, 4.0, 5.0)))
                  for h, d in enumerate(ds)]
    return batch_from_records(executions, references)[0]


@pytest.mark.parametrize("timing", ["local", "none"])
@pytest.mark.parametrize("name", ["qp_p30", "qar_p30", "rw_p80", "naive_opt_log"])
def test_an_off_fleet_duration_never_changes_a_percentile_or_a_score_and_is_counted(name,
                                                                                    timing):
    env = load_env_config(name)
    outcomes = []
    for local in (0.0, 0.001, 3.0, 9.99):  # from "instant" to "slowest": all the same
        b = provenance_records(local, timing)
        assert np.isnan(float(b.duration_BT[0, 2])), "an off-fleet duration is not laid out"
        pct = percentiles.per_test_percentile(b.duration_BT, b.ref_duration_PTH[b.problem_index_B],
                                              b.ref_mask_PTH[b.problem_index_B])
        reward_B, sig = rewards_and_signals(b, env, all_rankings=True)
        assert int(sig.untimed_B[0]) == 1 and bool(sig.undefined_B[0])
        assert math.isnan(float(reward_B[0]))
        outcomes.append([np.asarray(x).tolist() for x in (pct, sig.q_qp_B, sig.q_qar_B,
                                                           reward_B)])
    assert all(json.dumps(o) == json.dumps(outcomes[0]) for o in outcomes)
    assert math.isnan(outcomes[0][0][0][2])  # the untimed cell has no percentile
