"""Constants and tables the design fixes (docs/design/rewards.md), stated here again from it,
never read from the code under test; and the `*_by_problem` kernels given indices that are not
grouped."""

import math

import numpy as np
import pytest

from jaxopt_rl.data.execution_records import ExecutionRecord, ReferenceDuration, batch_from_records
from jaxopt_rl.rewards import percentiles
from jaxopt_rl.rewards.env_config import EnvConfig, load_env_config
from jaxopt_rl.rewards.environment import rewards
from sandbox_cluster.api import Limits, Status
from tests.rewards import reference_impl as ref

# docs/design/rewards.md §1: 0 success, 1 timeout, 2 failure (a wrong answer, a crash, a memory
# or output limit are all failure); infra errors are never a program verdict (a fourth code)
SPEC_CLASSES = {
    "success": 0,
    "timeout": 1,
    "wrong_answer": 2,
    "runtime_error": 2,
    "memory_limit": 2,
    "output_limit": 2,
    "infra_error": 3,
    "not_run": 2,  # ours, not the design's: skipped after a correctness failure (Status docstring)
}
SPEC_SERVICE_CAP_S = 10.0  # docs/design/sandbox-timing.md §1.2: a 10 s wall-clock cap


def test_every_sandbox_status_is_in_the_spec_table():
    assert sorted(s.value for s in Status) == sorted(SPEC_CLASSES)


@pytest.mark.parametrize("status", sorted(SPEC_CLASSES))
def test_status_to_reward_class_follows_the_spec(status):
    record = ExecutionRecord("p", "r", "t0", "T0", Status(status), 0.5, 10.0, 3)
    batch, _ = batch_from_records([record], [])
    assert int(batch.status_BT[0, 0]) == SPEC_CLASSES[status]
    # and as an environment reads it: only a success passes a correctness test
    reward = float(rewards(batch, load_env_config("standard_rlvr"))[0])
    if status == "infra_error":
        assert math.isnan(reward)
    else:
        assert reward == (1.0 if status == "success" else -1.0)


def test_the_service_cap_is_the_spec_s_10_s_everywhere():
    assert EnvConfig(name="x").service_cap_s == SPEC_SERVICE_CAP_S
    assert Limits().time_s == SPEC_SERVICE_CAP_S
    assert Limits().time_s == EnvConfig(name="x").service_cap_s
    for name in ("qp_p30", "mc_mo", "rw_p80"):
        assert load_env_config(name).service_cap_s == SPEC_SERVICE_CAP_S


# ---- the by-problem kernels on indices that are not `repeat(arange(P), G)` ------------------


def problem_set(seed: int, p: int = 3, t: int = 5, h: int = 4):
    rng = np.random.default_rng(seed)
    grid = np.array([0.25, 0.5, 1.0, 1.5, 2.0], np.float32)
    ref_PTH = rng.choice(grid, size=(p, t, h)).astype(np.float32)
    ref_mask_PTH = rng.uniform(size=(p, t, h)) < 0.8
    return ref_PTH, ref_mask_PTH


INDICES = {
    "permuted": [2, 0, 1, 1, 0, 2],  # every problem twice, in no grouped order
    "grouped_but_unequal": [0, 0, 0, 1, 2, 2],  # looks grouped, groups of unequal size
    "one_problem_missing": [0, 2, 0, 2, 0, 2],
    "reversed_groups": [2, 2, 1, 1, 0, 0],
}


@pytest.mark.parametrize("ties", ["min", "average"])
@pytest.mark.parametrize("name", sorted(INDICES))
def test_by_problem_kernels_on_any_index_match_the_slow_rows(name, ties):
    ref_PTH, ref_mask_PTH = problem_set(sorted(INDICES).index(name))
    index_B = np.array(INDICES[name])
    b, t = len(index_B), ref_PTH.shape[1]
    rng = np.random.default_rng(7)
    cand_BT = rng.choice(np.array([0.25, 0.5, 1.0, 1.5, 2.0, 3.0], np.float32), size=(b, t))
    test_mask_BT = rng.uniform(size=(b, t)) < 0.8
    pct = percentiles.per_test_percentile_by_problem(cand_BT, ref_PTH, ref_mask_PTH, index_B,
                                                     ties)
    qar = percentiles.qar_by_problem(cand_BT, ref_PTH, ref_mask_PTH, index_B, test_mask_BT, ties)
    qp = percentiles.qp_by_problem(cand_BT, ref_PTH, ref_mask_PTH, index_B, test_mask_BT, ties)
    a_y, a_h = percentiles.mean_percentiles_by_problem(cand_BT, ref_PTH, ref_mask_PTH, index_B,
                                                       test_mask_BT, ties)
    for row in range(b):
        p = index_B[row]
        ref_TH, mask_TH = ref_PTH[p].tolist(), ref_mask_PTH[p].tolist()
        want_pct = ref.per_test_percentile_row(cand_BT[row], ref_TH, mask_TH, ties)
        np.testing.assert_allclose(np.asarray(pct)[row], [ref.to_float(x) for x in want_pct],
                                   atol=1e-6)
        want_a_y, want_a_h = ref.mean_percentiles_row(cand_BT[row], ref_TH, mask_TH,
                                                      test_mask_BT[row], ties)
        np.testing.assert_allclose(float(qar[row]), ref.to_float(want_a_y), atol=1e-6)
        np.testing.assert_allclose(float(a_y[row]), ref.to_float(want_a_y), atol=1e-6)
        np.testing.assert_allclose(np.asarray(a_h)[row], [ref.to_float(x) for x in want_a_h],
                                   atol=1e-6)
        want_qp = ref.qp_row(cand_BT[row], ref_TH, mask_TH, test_mask_BT[row], ties)
        np.testing.assert_allclose(float(qp[row]), ref.to_float(want_qp), atol=1e-6)


def test_mean_percentiles_by_problem_on_the_grouped_index_matches_the_slow_rows():
    ref_PTH, ref_mask_PTH = problem_set(11)
    index_B = np.repeat(np.arange(3), 2)
    cand_BT = np.tile(np.array([0.3, 0.5, 1.2, 2.0, 0.25], np.float32), (6, 1))
    cand_BT[1::2] *= 2
    test_mask_BT = np.ones(cand_BT.shape, bool)
    a_y, a_h = percentiles.mean_percentiles_by_problem(cand_BT, ref_PTH, ref_mask_PTH, index_B,
                                                       test_mask_BT)
    assert np.shape(a_h) == (6, 4)
    for row, p in enumerate(index_B):
        want_a_y, want_a_h = ref.mean_percentiles_row(cand_BT[row], ref_PTH[p].tolist(),
                                                      ref_mask_PTH[p].tolist(), test_mask_BT[row],
                                                      "min")
        np.testing.assert_allclose(float(a_y[row]), ref.to_float(want_a_y), atol=1e-6)
        np.testing.assert_allclose(np.asarray(a_h)[row], [ref.to_float(x) for x in want_a_h],
                                   atol=1e-6)


def test_reference_durations_of_in_memory_records_land_under_their_tests():
    executions = [ExecutionRecord("p", "r", t, "TO", Status.SUCCESS, 0.5, 10.0, 3)
                  for t in ("b", "a")]
    refs = [ReferenceDuration("p", "a", "h", 0.25), ReferenceDuration("p", "b", "h", 0.75)]
    batch, index = batch_from_records(executions, refs)
    assert index.test_ids == (("b", "a"),)  # first appearance in the execution records
    assert np.asarray(batch.ref_duration_PTH)[0, :, 0].tolist() == [0.75, 0.25]
