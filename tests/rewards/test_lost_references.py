"""Lost reference durations: a reference that ran but whose stored duration is null, <= 0 or
not finite (a failed re-timing, a flaky node, a bad data row).

Eq. 10 (docs/design/rewards.md §1) reads such a duration at the cap: psi(d) = d if d > 0 else
cap. The project's rule on top of it (docs/guides/rewards.md): a problem with no measured reference duration has no speed
signal, its rollouts are dropped and counted (unrankable). Every expected value is worked out by
hand from those two rules, never read from the code.
"""

import json
import math

import numpy as np
import pytest

from jaxopt_rl.commands.rewards import compute, undefined_summary
from jaxopt_rl.config import ConfigError
from jaxopt_rl.data.execution_records import ExecutionRecord, ReferenceDuration, batch_from_records
from jaxopt_rl.rewards import records
from jaxopt_rl.rewards.env_config import EnvConfig, load_env_config
from jaxopt_rl.rewards.environment import rewards_and_signals
from jaxopt_rl.rewards.reference_table import check_table, prepare_references
from sandbox_cluster.api import Status

S = records.SUCCESS
REFS_O0 = (0.2, 0.4, 0.6, 0.8)
REFS_O1 = (2.0, 3.0, 4.0, 5.0)


def batch(duration_BT, o0=REFS_O0, o1=REFS_O1):
    """One problem, G correct rollouts on t0 (T0), o0, o1 (TO), four references per TO test."""
    duration_BT = np.asarray(duration_BT, np.float32)
    g = duration_BT.shape[0]
    ref_PTH = np.zeros((1, 3, 4), np.float32)
    ref_PTH[0, 1], ref_PTH[0, 2] = o0, o1
    ref_mask = np.zeros((1, 3, 4), bool)
    ref_mask[0, 1:] = True
    return records.RecordBatch(
        status_BT=np.full((g, 3), S, np.int8), duration_BT=duration_BT,
        test_mask_BT=np.ones((g, 3), bool), test_kind_BT=np.array([[0, 2, 2]] * g, np.int8),
        io_chars_BT=np.full((g, 3), 10, np.int32), cap_BT=np.full((g, 3), 10.0, np.float32),
        rollout_mask_B=np.ones(g, bool), ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask)


LOST = (np.nan, 0.0, -1.0, np.inf)  # null (NaN in the arrays), zero, negative, infinite


@pytest.mark.parametrize("lost", LOST)
@pytest.mark.parametrize("name", ["qp_p30", "qar_p30", "rw_p80", "two_gate_linear"])
def test_a_problem_whose_references_are_all_lost_is_unrankable(name, lost):
    # rollout 0 is slower than every real reference on both tests (0.9 s > 0.8 s, 5.5 s > 5 s):
    # before the loss its reward was -1 under qp_p30; with every duration lost the references
    # sit at the 10 s cap, and ranking against them would hand it +1
    env = load_env_config(name)
    slow = [[0.1, 0.9, 5.5]]
    before, _ = rewards_and_signals(batch(slow), load_env_config("qp_p30"))
    assert float(before[0]) == -1.0
    reward_B, sig = rewards_and_signals(batch(slow, o0=(lost,) * 4, o1=(lost,) * 4), env)
    if env.ranking.kind == "none":  # rw_p80 ranks nothing; its limit has no leaderboard either
        assert not bool(sig.unrankable_B[0])
    else:
        assert bool(sig.unrankable_B[0]) and bool(sig.undefined_B[0])
        assert math.isnan(float(reward_B[0]))
        assert math.isnan(float(sig.q_qp_B[0])) and math.isnan(float(sig.q_qar_B[0]))
    assert int(sig.lost_tests_B[0]) == 2  # both optimization tests lost every duration


def test_neutral_stays_an_explicit_choice_for_a_lost_problem():
    env = load_env_config("qp_p30", ["ranking.if_unrankable=neutral"])
    reward_B, sig = rewards_and_signals(batch([[0.1, 0.9, 5.5]], o0=(0.0,) * 4, o1=(0.0,) * 4),
                                        env)
    assert bool(sig.unrankable_B[0]) and float(reward_B[0]) == 1.0


def test_one_measured_reference_keeps_the_problem_rankable():
    # o1 lost every duration; o0 keeps one measured reference (0.8 s) next to three lost ones,
    # which eq. 10 reads at the cap: the rollout at 0.9 s is beaten by one of four on o0
    env = load_env_config("qar_p30")
    reward_B, sig = rewards_and_signals(
        batch([[0.1, 0.9, 5.5]], o0=(0.0, 0.0, 0.0, 0.8), o1=(0.0,) * 4), env)
    assert not bool(sig.unrankable_B[0])
    # QAR = mean(p_o0, p_o1) = mean(1/4, 0/4): o1's references all sit at 10 s
    assert float(sig.q_qar_B[0]) == pytest.approx(0.125, abs=1e-6)
    assert int(sig.lost_tests_B[0]) == 1 and float(reward_B[0]) == 1.0  # 0.125 <= 0.3


@pytest.mark.parametrize(("choice", "q_qar"), [
    ("cap", 0.5),  # eq. 10: p_o0 = 4/4 (all four faster), p_o1 = 0/4 (all at 10 s)
    ("drop", 1.0),  # o1 has no usable reference: only o0 ranks, p_o0 = 4/4
])
def test_a_partial_loss_is_counted_and_contributes_per_the_choice(choice, q_qar):
    env = load_env_config("qar_p30", [f"ranking.lost_references={choice}"])
    reward_B, sig = rewards_and_signals(batch([[0.1, 0.9, 4.5]], o1=(np.nan,) * 4), env)
    assert not bool(sig.unrankable_B[0])
    assert float(sig.q_qar_B[0]) == pytest.approx(q_qar, abs=1e-6)
    assert int(sig.lost_tests_B[0]) == 1
    assert float(reward_B[0]) == -1.0  # 0.5 and 1.0 both miss p = 0.3


def test_the_default_follows_eq_10_and_the_choice_is_checked():
    assert EnvConfig(name="x").ranking.lost_references == "cap"
    with pytest.raises(ConfigError, match="lost_references"):
        load_env_config("qp_p30", ["ranking.lost_references=zero"])
    env = load_env_config("qp_p30")
    table = prepare_references(np.ones((1, 3, 4), np.float32), np.ones((1, 3, 4), bool), env)
    dropping = load_env_config("qp_p30", ["ranking.lost_references=drop"])
    with pytest.raises(ValueError, match=r"ranking\.lost_references='cap'"):
        check_table(table, dropping)


def test_mc_reads_no_reference_and_counts_no_lost_test():
    _, sig = rewards_and_signals(batch([[0.1, 0.9, 5.5]], o1=(0.0,) * 4), load_env_config("mc"))
    assert int(sig.lost_tests_B[0]) == 0 and not bool(sig.unrankable_B[0])


# ---- the two ways in: the rewards command and the trainer's reward path ---------------------


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def execution_rows(rollout, d_o0, d_o1):
    return [{"row_type": "execution", "problem_id": "p", "rollout_id": rollout, "test_id": test,
             "test_kind": kind, "status": "success", "duration_s": d, "limit_s": 10.0,
             "io_chars": 12} for test, kind, d in (("t0", "T0", 0.1), ("o0", "TO", d_o0),
                                                   ("o1", "TO", d_o1))]


def reference_rows(o0, o1):
    return [{"row_type": "reference", "problem_id": "p", "test_id": test,
             "reference_id": f"h{h}", "duration_s": d}
            for test, values in (("o0", o0), ("o1", o1)) for h, d in enumerate(values)]


@pytest.mark.parametrize("lost", [None, 0.0, -0.5])
def test_the_rewards_command_drops_and_counts_a_lost_problem(tmp_path, lost):
    rows = (execution_rows("r0", 0.9, 5.5) + execution_rows("r1", 0.1, 1.0)
            + reference_rows([lost] * 4, [lost] * 4))
    env = load_env_config("qp_p30")
    results = compute(write_jsonl(tmp_path / "r.jsonl", rows), env)
    assert results["undefined"].tolist() == [True, True]
    assert results["unrankable"].tolist() == [True, True]
    assert np.isnan(results["reward"]).all()
    line = undefined_summary(env, results)
    assert "2 unrankable" in line
    assert "8 lost reference duration(s)" in line and "p: o0, o1" in line


def test_the_rewards_command_names_a_partially_lost_test(tmp_path):
    rows = (execution_rows("r0", 0.9, 4.5) + reference_rows(list(REFS_O0), [None] * 4))
    env = load_env_config("qar_p30")
    results = compute(write_jsonl(tmp_path / "r.jsonl", rows), env)
    assert results["undefined"].tolist() == [False]
    assert results["lost_tests"].tolist() == [1]
    assert results["lost_references"] == {"tests": {"p": ["o1"]}, "durations": 4}
    assert results["q_qar"][0] == pytest.approx(0.5, abs=1e-6)  # as in the kernel test above
    line = undefined_summary(env, results)
    assert "4 lost reference duration(s)" in line and "p: o1" in line
    assert "1 rankable rollout(s) use such a test" in line


def test_the_trainers_reward_path_drops_a_lost_problem():
    # the worker's score phase: typed records -> batch_from_records -> rewards_and_signals
    # (rollouts.worker.RolloutWorker._execution_rewards), with and without a prepared table
    executions = [ExecutionRecord("p", f"r{g}", test, kind, Status.SUCCESS, d, 10.0, 12)
                  for g in range(2)
                  for test, kind, d in (("t0", "T0", 0.1), ("o0", "TO", 0.9), ("o1", "TO", 5.5))]
    references = [ReferenceDuration("p", test, f"h{h}", None) for test in ("o0", "o1")
                  for h in range(4)]
    built, _ = batch_from_records(executions, references, pad_multiple=4, group_size=4)
    env = load_env_config("qp_p30")
    table = prepare_references(built.ref_duration_PTH, built.ref_mask_PTH, env)
    for prepared in (None, table):
        reward_B, sig = rewards_and_signals(built, env, references=prepared)
        assert np.isnan(np.asarray(reward_B)).all()  # two real rollouts, two padding rows
        assert np.asarray(sig.unrankable_B).tolist() == [True, True, False, False]
        assert np.asarray(sig.lost_tests_B).tolist() == [2, 2, 0, 0]
