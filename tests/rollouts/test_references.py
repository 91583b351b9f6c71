"""Each problem's references prepared once per run (`rollouts.references.PreparedReferences`):
a sampler call's table stacked from per-problem tables gives the rewards and signals of a
table prepared for the call's whole reference block (the reward kernel's own cold path), bit
for bit, whatever the problems' widths; and a problem is prepared once, however many calls
score it."""

from __future__ import annotations

import numpy as np
import pytest

from jaxopt_rl.data.execution_records import ReferenceDuration
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rewards.environment import rewards_and_signals
from jaxopt_rl.rollouts.execution_table import results_batch
from jaxopt_rl.rollouts.references import PreparedReferences
from sandbox_cluster.api import Status, TestResult
from tests.rollouts.test_execution_table import run_of

# every way an environment reads references: QP and QAR ranks, a relative limit (quantile), a
# ranked-reference limit, abs and rel filters (aggregates), none at all
ENVS = ("qp_p30", "qar_p30", "rel_timeout_p50", "rw_p80", "rel_filter_p10", "abs_2s", "mc",
        "additive", "multitask")
SIGNALS = ("c_cor_B", "c_strict_B", "g_B", "q_B", "inconclusive_B", "undefined_B")


def scenario(seed: int, group_size: int):
    """Two to four problems of different widths (1-9 tests, 1-6 references, some references
    missing on some tests or lost), whose rollouts mostly succeed on the fleet (so rewards
    are defined and ranked), with some timeouts and wrong answers."""
    rng = np.random.default_rng(seed)
    runs, results_PG = [], []
    for p in range(int(rng.integers(2, 5))):
        num_tests, cap = int(rng.integers(1, 10)), float(rng.choice([2.0, 10.0]))
        references = [ReferenceDuration(f"p{p}", f"p{p}/t{t}", f"h{h}",
                                        None if rng.random() < 0.05 else
                                        float(rng.uniform(0.01, cap / 2)))
                      for h in range(int(rng.integers(1, 7))) for t in range(num_tests)
                      if rng.random() < 0.9]
        runs.append(run_of(f"p{p}", num_tests, cap, references))
        fleet = {"node": "http://n1", "timing": "fleet"}
        results_PG.append([[
            TestResult(Status.TIMEOUT, cap, extra=fleet) if u < 0.05 else
            TestResult(Status.WRONG_ANSWER, 0.1, extra=fleet) if u < 0.1 else
            TestResult(Status.SUCCESS, float(rng.uniform(0.01, cap / 2)), extra=fleet)
            for u in rng.random(num_tests)] for _ in range(group_size)])
    return runs, results_PG


def _bits(x) -> bytes:
    return np.asarray(x).tobytes()


@pytest.mark.parametrize("env_name", ENVS)
@pytest.mark.parametrize("seed", range(4))
def test_stacked_tables_score_like_the_whole_block(env_name, seed):
    env = load_env_config(env_name)
    group_size, pad_multiple = 2 + seed % 3, (1, 2, 4)[seed % 3]
    runs, results_PG = scenario(100 + seed, group_size)
    batch = results_batch(runs, results_PG, group_size, pad_multiple)
    prepared = PreparedReferences(env, pad_multiple)
    _, num_t, num_h = batch.ref_duration_PTH.shape
    table = prepared.table(runs, num_t, num_h)
    want_B, want = rewards_and_signals(batch, env)  # prepared from the batch itself
    got_B, got = rewards_and_signals(batch, env, references=table)
    assert np.isfinite(np.asarray(want_B)).mean() >= 0.25  # a scenario that ranks
    assert _bits(got_B) == _bits(want_B)
    for name in SIGNALS:
        assert _bits(getattr(got, name)) == _bits(getattr(want, name)), name


def test_widths_differ_between_problems_of_one_call():
    """The scenario above must exercise the padding: some call mixes problems whose own
    padded widths differ (tests or references)."""
    widths = set()
    for seed in range(6):
        runs, _ = scenario(100 + seed, 2)
        prepared = PreparedReferences(load_env_config("qp_p30"), 1)
        shapes = {prepared._one(run)[1] for run in runs}
        widths.add(len(shapes) > 1)
    assert True in widths


def test_a_problem_is_prepared_once_however_many_calls_score_it():
    runs, results_PG = scenario(7, 2)
    env = load_env_config("qp_p30")
    prepared = PreparedReferences(env, 4)
    for _ in range(3):
        batch = results_batch(runs, results_PG, 2, 4)
        prepared.table(runs, *batch.ref_duration_PTH.shape[1:])
    batch = results_batch(runs[::-1], results_PG[::-1], 2, 4)  # another call, another order
    prepared.table(runs[::-1], *batch.ref_duration_PTH.shape[1:])
    assert prepared.prepared == len({run.problem_id for run in runs})
