"""References prepared once (`prepare_references`) against the environment's in-step path: the
same signals bit for bit, for every environment class; tables prepared for another calibration,
tie rule or problem set are refused."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.rewards import records
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rewards.environment import rewards, rewards_and_signals
from jaxopt_rl.rewards.reference_table import check_table, prepare_references
from tests.rewards import reference_impl as ref
from tests.rewards.test_environment import ENVS, G, H, P, T

AFFINE = ["calibration.kind=affine", "calibration.alpha=0.6306", "calibration.beta_s=0.0529"]
TABLE_ENVS = {
    **ENVS,
    "qp_affine_average": load_env_config("qp_p30", [*AFFINE, "ranking.ties=average"]),
    "rw_affine_qp_min": load_env_config("rw_p80", [*AFFINE, "ranking.kind=qp",
                                                   "gates.quality_threshold=0.5"]),
    "rw_average_ties": load_env_config("rw_p80", ["ranking.ties=average"]),
}


def assert_same(got, want):
    leaves_got, leaves_want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(leaves_got) == len(leaves_want)
    for a, b in zip(leaves_got, leaves_want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", TABLE_ENVS)
@settings(max_examples=6)
@given(batch=ref.record_batches(P, G, T, H), all_rankings=st.booleans())
def test_prepared_references_give_the_in_step_signals(name, batch, all_rankings):
    env = TABLE_ENVS[name]
    records_ = records.RecordBatch(**batch)
    table = prepare_references(batch["ref_duration_PTH"], batch["ref_mask_PTH"], env,
                               all_rankings=all_rankings)
    check_table(table, env, records_, recompute=True)
    assert_same(rewards_and_signals(records_, env, references=table, all_rankings=all_rankings),
                rewards_and_signals(records_, env, all_rankings=all_rankings))


@settings(max_examples=10)
@given(batch=ref.record_batches(P, G, T, H))
def test_missing_ranks_are_computed_in_the_step(batch):
    """A table prepared for another environment (same calibration and ties) lacks ranks this
    call needs: the step computes them, with the same numbers."""
    records_ = records.RecordBatch(**batch)
    rw, qp = TABLE_ENVS["rw_p80"], TABLE_ENVS["qp_p30"]
    rw_table = prepare_references(batch["ref_duration_PTH"], batch["ref_mask_PTH"], rw)
    assert rw_table.pool.rank_PTH is None and rw_table.mid_rank_PTH is not None
    assert_same(rewards_and_signals(records_, rw, references=rw_table, all_rankings=True),
                rewards_and_signals(records_, rw, all_rankings=True))
    qp_table = prepare_references(batch["ref_duration_PTH"], batch["ref_mask_PTH"], qp)
    assert qp_table.pool.rank_PTH is not None and qp_table.mid_rank_PTH is None
    assert_same(rewards_and_signals(records_, rw, references=qp_table),
                rewards_and_signals(records_, rw))


def test_one_table_serves_many_steps_and_subsets():
    """Prepared for a data set once; each step scores new rollouts of some of its problems."""
    env = load_env_config("qp_p30", AFFINE)
    rng = np.random.default_rng(0)
    n_problems = 5
    ref_duration = rng.choice(ref.DURATION_GRID, (n_problems, T, H)).astype(np.float32)
    ref_mask = rng.uniform(size=ref_duration.shape) > 0.2
    table = prepare_references(ref_duration, ref_mask, env)
    for rows in ([4, 1, 0], [2, 2, 3]):
        rows = np.array(rows)
        duration = rng.choice(ref.DURATION_GRID, (P * G, T)).astype(np.float32)
        batch = records.RecordBatch(
            status_BT=np.zeros((P * G, T), np.int8), duration_BT=duration,
            test_mask_BT=np.ones((P * G, T), bool),
            test_kind_BT=np.full((P * G, T), records.TEST_KIND_CODE["TO"], np.int8),
            io_chars_BT=np.ones((P * G, T), np.int32), cap_BT=np.full((P * G, T), 10.0),
            rollout_mask_B=np.ones(P * G, bool), ref_duration_PTH=ref_duration[rows],
            ref_mask_PTH=ref_mask[rows])
        step_table = table.take(rows)
        check_table(step_table, env, batch, recompute=True)
        np.testing.assert_array_equal(np.asarray(rewards(batch, env, references=step_table)),
                                      np.asarray(rewards(batch, env)))


def small_batch() -> records.RecordBatch:
    return records.RecordBatch(
        status_BT=np.zeros((2, 2), np.int8), duration_BT=np.ones((2, 2), np.float32),
        test_mask_BT=np.ones((2, 2), bool), test_kind_BT=np.full((2, 2), 2, np.int8),
        io_chars_BT=np.ones((2, 2), np.int32), cap_BT=np.full((2, 2), 10.0, np.float32),
        rollout_mask_B=np.ones(2, bool), ref_duration_PTH=np.array([[[1.0, 2.0], [3.0, 0.5]]]),
        ref_mask_PTH=np.ones((1, 2, 2), bool))


@pytest.mark.parametrize(
    ("prepared_for", "message"),
    [
        (["ranking.ties=average"], "prepared with ranking.ties='average'"),
        (AFFINE, "prepared with calibration alpha=0.6306"),
        (["service_cap_s=5"], "prepared with service_cap_s=5.0"),
    ],
)
def test_a_table_for_another_environment_is_refused(prepared_for, message):
    batch = small_batch()
    table = prepare_references(batch.ref_duration_PTH, batch.ref_mask_PTH,
                               load_env_config("qp_p30", prepared_for))
    with pytest.raises(ValueError, match=message):
        rewards(batch, load_env_config("qp_p30"), references=table)


def test_a_table_of_other_references_is_named():
    batch, env = small_batch(), load_env_config("qp_p30")
    wider = prepare_references(np.ones((1, 2, 3)), np.ones((1, 2, 3), bool), env)
    with pytest.raises(ValueError, match=r"shape \(1, 2, 3\) differs from the batch's"):
        rewards(batch, env, references=wider)
    other = prepare_references(np.array([[[1.0, 2.0], [3.0, 0.7]]]), batch.ref_mask_PTH, env)
    rewards(batch, env, references=other)  # the step cannot tell; the start-up check can:
    with pytest.raises(ValueError, match=r"durations\[0, 1, 1\] = 0.7.* give 0.5"):
        check_table(other, env, batch, recompute=True)
    with pytest.raises(TypeError, match="ReferenceTable"):
        rewards(batch, env, references=(batch.ref_duration_PTH, batch.ref_mask_PTH))


@settings(max_examples=10)
@given(batch=ref.record_batches(P, G, T, H))
def test_prepared_filter_aggregates_and_limit_quantiles_serve_only_their_own_setting(batch):
    """The table holds the filter's dbar_t and the relative limit's quantile for the setting it
    was prepared for; an environment with another aggregate or percentile computes its own."""
    records_ = records.RecordBatch(**batch)
    median_rel = load_env_config("rel_filter_p10", ["filter.aggregate=median"])
    mean_rel = load_env_config("rel_filter_p10", ["filter.aggregate=mean"])
    table = prepare_references(batch["ref_duration_PTH"], batch["ref_mask_PTH"], median_rel)
    assert table.dbar_for("median") is not None and table.dbar_for("mean") is None
    duration_PTH, mask_PTH = np.asarray(table.duration_PTH), np.asarray(table.mask_PTH)
    want_PT = np.full((P, T), np.nan)
    for p in range(P):
        for t in range(T):
            median = ref.aggregate(ref.usable_durations(duration_PTH[p], mask_PTH[p], t), "median")
            want_PT[p, t] = np.nan if median is None else median
    np.testing.assert_allclose(np.asarray(table.dbar_PT), want_PT, rtol=1e-6)
    assert_same(rewards_and_signals(records_, mean_rel, references=table),
                rewards_and_signals(records_, mean_rel))
    p50 = TABLE_ENVS["rel_timeout_p50"]
    p80 = load_env_config("rel_timeout_p50", ["limit.percentile=80"])
    table = prepare_references(batch["ref_duration_PTH"], batch["ref_mask_PTH"], p50)
    assert table.limit_quantile_for(50.0) is not None and table.limit_quantile_for(80.0) is None
    assert_same(rewards_and_signals(records_, p80, references=table),
                rewards_and_signals(records_, p80))
