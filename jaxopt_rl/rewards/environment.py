"""Environments: execution records -> the signals `(c_cor, c~, g, q)` -> one reward per rollout.

This module owns the orchestration of spec rewards.md §1, §5 and §6 on top of the pure kernels
(calibration, filters, limits, percentiles, compose, river). One jitted function per
environment (the frozen `EnvConfig` is a static argument), in this order:

  1. sanitise + calibrate the stored reference durations `[P, T, H]` (eq. 10; never the
     candidate's durations);
  2. pre-execution filter -> used optimization tests, per problem `[P, T]`;
  3. intended limits lambda_t (optimization tests) and the correctness-test limit, then the
     post-filter: a success at or above its limit becomes a timeout;
  4. c_cor over correctness tests; c~ adds "success or timeout" over the used optimization tests;
     phi = timeout fraction over them; g_to = 1{phi <= rho}, q_to = phi;
  5. q_QAR / q_QP against the references (per-problem kernels: references stay `[P, T, H]`);
     g_dur = 1{q_dur <= p}; g = g_to * g_dur; q = 1 - (1 - q_to)(1 - q_dur), inactive gates 1,
     inactive scalars 0;
  6. the reward of the composition family (spec §6) or the naive raw-duration baseline (D.5).

Undefined rewards are NaN, never a program failure:
  * `inconclusive_B`: an `infra_error` on a test the environment needs (a correctness test or a
    used optimization test). The trainer drops the rollout (or re-executes it); it must never be
    scored as a failed program.
  * `ranking.if_unrankable: drop` and no used test has a usable reference duration.
The other signals of such a rollout are computed but carry no meaning.

Multitask (spec §6): `use_optimization_B` says which rollouts get the optimization-only reward.
The trainer passes its own per-group choice; by default problem row `p` of the batch is assigned
the optimization task iff `frac((p + 1) * golden_ratio) < multitask_share` (a low-discrepancy
rule: any run of consecutive problems splits close to the share, deterministically).

Score-based tasks (`kind: river`) take scores, not records: `river_rewards_from_scores`.

Dimension letters: B rollouts, P problems, T tests, H references, G solvers per group,
M hidden instances.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxopt_rl.rewards import filters, limits, percentiles
from jaxopt_rl.rewards.calibration import sanitize_reference_durations
from jaxopt_rl.rewards.compose import compose, multitask_rewards, naive_reward
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.records import (
    INCONCLUSIVE,
    SUCCESS,
    TEST_KIND_CODE,
    TIMEOUT,
    RecordBatch,
)
from jaxopt_rl.rewards.river import (
    instance_norm_rewards,
    rank_uniform_rewards,
    raw_binary_rewards,
    raw_grpo_rewards,
    river_rewards,
)

GOLDEN_RATIO = 0.6180339887498949


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Signals:
    """Everything an environment derives from a `RecordBatch` (all `[B]` unless `_BT`).

    c_cor_B, c_strict_B, g_B are bool; q_B, phi_B in [0, 1]. q_qar_B and q_qp_B are the raw
    ranked scalars (NaN when unrankable or not computed); q_B uses the environment's one.
    status_BT is the post-filtered status, limit_BT the intended limit (NaN: test not used,
    inf: no intended limit), used_test_mask_BT the used optimization tests.
    """

    c_cor_B: jax.Array
    c_strict_B: jax.Array
    g_B: jax.Array
    q_B: jax.Array
    phi_B: jax.Array
    g_to_B: jax.Array
    g_dur_B: jax.Array
    q_qar_B: jax.Array
    q_qp_B: jax.Array
    used_test_mask_BT: jax.Array
    limit_BT: jax.Array
    status_BT: jax.Array
    inconclusive_B: jax.Array
    undefined_B: jax.Array  # reward is NaN: inconclusive, or unrankable under `if_unrankable: drop`
    use_optimization_B: jax.Array  # multitask: this rollout got the optimization-only reward


def _kind_mask(kind_BT: jax.Array, kinds: tuple[str, ...]) -> jax.Array:
    mask_BT = jnp.zeros(kind_BT.shape, bool)
    for kind in kinds:
        mask_BT |= kind_BT == TEST_KIND_CODE[kind]
    return mask_BT


def _problem_rows(index_B: jax.Array, num_problems: int) -> tuple[jax.Array, jax.Array]:
    """One representative rollout per problem (`[P]`) and whether the problem has any.

    Per-test data (kind, io chars, cap) is the same for every rollout of a problem (the record
    layout guarantees it), so `x_BT[rollout_P]` is the problem's `[P, T]` view. A scatter of B
    scalars, where reducing the `[B, T]` arrays per problem would scatter B * T values.
    """
    rollout_P = jnp.zeros(num_problems, jnp.int32).at[index_B].set(
        jnp.arange(index_B.shape[0], dtype=jnp.int32))
    present_P = jnp.zeros(num_problems, bool).at[index_B].set(True)
    return rollout_P, present_P


def _used_tests_PT(records: RecordBatch, env: EnvConfig, ref_PTH, ref_mask_PTH, opt_BT):
    """Step 2: the pre-execution filter, per problem."""
    rollout_P, present_P = _problem_rows(records.problem_index_B, ref_PTH.shape[0])
    opt_PT = opt_BT[rollout_P] & present_P[:, None]
    spec = env.filter
    if spec.kind == "id":
        return filters.filter_identity(opt_PT)
    if spec.kind == "abs":
        return filters.filter_absolute(opt_PT, ref_PTH, ref_mask_PTH, spec.threshold_s,
                                       how=spec.aggregate)
    if spec.kind == "rel":
        return filters.filter_relative(opt_PT, ref_PTH, ref_mask_PTH, spec.drop_percent,
                                       how=spec.aggregate)
    io_chars_PT = jnp.asarray(records.io_chars_BT)[rollout_P]
    return filters.filter_length(opt_PT, io_chars_PT, spec.max_chars)


def _limits_BT(records: RecordBatch, env: EnvConfig, ref_PTH, ref_mask_PTH, used_PT, cor_BT):
    """Step 3: intended limit per test and the final used mask `[B, T]`."""
    index_B, spec = records.problem_index_B, env.limit
    cap_BT = jnp.asarray(records.cap_BT, jnp.float32)
    if spec.kind == "relative":
        limit_PT, used_PT = limits.relative_limit(ref_PTH, ref_mask_PTH, used_PT, spec.percentile)
        opt_limit_BT = limit_PT[index_B]
    elif spec.kind == "ranked":
        limit_PT, used_PT = limits.ranked_reference_limit(ref_PTH, ref_mask_PTH, used_PT,
                                                          spec.percentile, how=spec.aggregate)
        opt_limit_BT = limit_PT[index_B]
    elif spec.kind == "absolute":
        opt_limit_BT = jnp.full(cap_BT.shape, spec.limit_s, jnp.float32)
    elif spec.kind == "infinite":
        opt_limit_BT = jnp.full(cap_BT.shape, jnp.inf, jnp.float32)
    else:
        opt_limit_BT = cap_BT
    used_BT = used_PT[index_B] & jnp.asarray(records.test_mask_BT, bool)
    cor_limit_BT = cap_BT if env.correctness_limit_s is None else jnp.full(
        cap_BT.shape, env.correctness_limit_s, jnp.float32)
    limit_BT = jnp.where(used_BT, opt_limit_BT, jnp.where(cor_BT, cor_limit_BT, jnp.nan))
    return limit_BT, used_BT


def _multitask_default_B(index_B: jax.Array, share: float) -> jax.Array:
    position_B = (index_B.astype(jnp.float32) + 1.0) * GOLDEN_RATIO
    return (position_B - jnp.floor(position_B)) < share


def _signals_and_rewards(records: RecordBatch, env: EnvConfig, use_optimization_B,
                         all_rankings: bool) -> tuple[jax.Array, Signals]:
    index_B = jnp.asarray(records.problem_index_B, jnp.int32)
    test_mask_BT = jnp.asarray(records.test_mask_BT, bool)
    kind_BT = jnp.asarray(records.test_kind_BT)
    duration_BT = jnp.asarray(records.duration_BT, jnp.float32)
    alpha, beta_s = env.calibration.alpha_beta
    ref_PTH = sanitize_reference_durations(records.ref_duration_PTH, alpha, beta_s,
                                           env.service_cap_s)
    ref_mask_PTH = jnp.asarray(records.ref_mask_PTH, bool)
    cor_BT = test_mask_BT & _kind_mask(kind_BT, env.correctness_kinds)
    opt_BT = test_mask_BT & _kind_mask(kind_BT, env.optimization_kinds)

    used_PT = _used_tests_PT(records, env, ref_PTH, ref_mask_PTH, opt_BT)
    limit_BT, used_BT = _limits_BT(records, env, ref_PTH, ref_mask_PTH, used_PT, cor_BT)
    status_BT = limits.post_filter(records.status_BT, duration_BT, limit_BT)

    needed_BT = cor_BT | used_BT
    inconclusive_B = jnp.any(needed_BT & (status_BT == INCONCLUSIVE), axis=-1)
    c_cor_B = jnp.all(~cor_BT | (status_BT == SUCCESS), axis=-1)
    timeout_BT = used_BT & (status_BT == TIMEOUT)
    opt_ok_B = jnp.all(~used_BT | (status_BT == SUCCESS) | timeout_BT, axis=-1)
    c_strict_B = c_cor_B & opt_ok_B
    n_used_B = jnp.sum(used_BT, axis=-1)
    phi_B = jnp.sum(timeout_BT, axis=-1) / jnp.maximum(n_used_B, 1).astype(jnp.float32)
    g_to_B = phi_B <= env.gates.timeout_tolerance
    q_to_B = phi_B if env.limit.kind != "infinite" else jnp.zeros_like(phi_B)

    nan_B = jnp.full(phi_B.shape, jnp.nan, jnp.float32)
    rank_args = (duration_BT, ref_PTH, ref_mask_PTH, index_B, used_BT)
    ties = env.ranking.ties
    q_qar_B = q_qp_B = nan_B
    if env.optimization_kinds and (all_rankings or env.ranking.kind == "qar"):
        q_qar_B = percentiles.qar_by_problem(*rank_args, ties=ties)
    if env.optimization_kinds and (all_rankings or env.ranking.kind == "qp"):
        q_qp_B = percentiles.qp_by_problem(*rank_args, ties=ties)

    undefined_B = inconclusive_B
    if env.ranking.kind == "none":
        q_dur_B, g_dur_B = jnp.zeros_like(phi_B), jnp.ones(phi_B.shape, bool)
    else:
        raw_B = q_qar_B if env.ranking.kind == "qar" else q_qp_B
        rankable_B = ~jnp.isnan(raw_B)
        q_dur_B = jnp.where(rankable_B, raw_B, 0.0)
        g_dur_B = jnp.ones(phi_B.shape, bool)
        if env.gates.quality_threshold is not None:
            g_dur_B = ~rankable_B | (raw_B <= env.gates.quality_threshold)
        if env.ranking.if_unrankable == "drop":
            undefined_B = undefined_B | ~rankable_B
    g_B = g_to_B & g_dur_B
    q_B = 1.0 - (1.0 - q_to_B) * (1.0 - q_dur_B)

    comp = env.composition
    if use_optimization_B is None:
        share = comp.multitask_share if comp.family == "multitask" else 0.0
        use_optimization_B = _multitask_default_B(index_B, share)
    use_optimization_B = jnp.asarray(use_optimization_B, bool) & (comp.family == "multitask")
    if comp.family == "naive":
        source_BT = used_BT if comp.naive_source == "opt" else cor_BT & _kind_mask(kind_BT, ("T0",))
        # timeouts (and missing durations) count at the test's effective limit (D.5)
        naive_limit_BT = jnp.where(jnp.isfinite(limit_BT), limit_BT, records.cap_BT)
        reward_B = naive_reward(c_cor_B, duration_BT, source_BT, naive_limit_BT,
                                            map=comp.naive_map, status_BT=status_BT)
    elif comp.family == "multitask":
        reward_B = multitask_rewards(c_cor_B, c_strict_B, g_B, q_B,
                                                 use_optimization_B, mapping=comp.mapping)
    else:
        reward_B = compose(c_cor_B, c_strict_B, g_B, q_B, comp.family,
                                       mapping=comp.mapping)
    reward_B = jnp.where(undefined_B, jnp.nan, jnp.asarray(reward_B, jnp.float32))

    signals = Signals(
        c_cor_B=c_cor_B, c_strict_B=c_strict_B, g_B=g_B, q_B=q_B, phi_B=phi_B,
        g_to_B=g_to_B, g_dur_B=g_dur_B, q_qar_B=q_qar_B, q_qp_B=q_qp_B,
        used_test_mask_BT=used_BT, limit_BT=limit_BT, status_BT=status_BT,
        inconclusive_B=inconclusive_B, undefined_B=undefined_B,
        use_optimization_B=use_optimization_B,
    )
    return reward_B, signals


_signals_and_rewards_jit = jax.jit(_signals_and_rewards, static_argnames=("env", "all_rankings"))


def _check_execution_env(env: EnvConfig) -> None:
    if not isinstance(env, EnvConfig):
        raise TypeError(f"env must be an EnvConfig, got {type(env).__name__}")
    if env.kind != "execution":
        raise ValueError(f"environment {env.name!r} is kind={env.kind}: it scores instances, "
                         "use river_rewards_from_scores")


def rewards_and_signals(records: RecordBatch, env: EnvConfig, use_optimization_B=None, *,
                        all_rankings: bool = False) -> tuple[jax.Array, Signals]:
    """`(reward_B, Signals)` in one jitted call (compiled once per environment and shape).

    `all_rankings=True` also computes the ranked scalar the environment does not use (q_QAR or
    q_QP), for reports; otherwise that field is NaN.
    """
    _check_execution_env(env)
    if use_optimization_B is not None and env.composition.family != "multitask":
        raise ValueError(f"use_optimization_B only applies to family=multitask; environment "
                         f"{env.name!r} is family={env.composition.family}")
    return _signals_and_rewards_jit(records, env, use_optimization_B, all_rankings=all_rankings)


def signals(records: RecordBatch, env: EnvConfig, *, all_rankings: bool = False) -> Signals:
    """The reward-facing signals of spec §5 for every rollout."""
    return rewards_and_signals(records, env, all_rankings=all_rankings)[1]


def rewards(records: RecordBatch, env: EnvConfig, use_optimization_B=None) -> jax.Array:
    """`reward_B` in [-1, 1], NaN where undefined (see the module docstring)."""
    return rewards_and_signals(records, env, use_optimization_B)[0]


_RIVER_METHODS = {
    "river": river_rewards,
    "raw_grpo": raw_grpo_rewards,
    "raw_binary": raw_binary_rewards,
    "instance_norm": instance_norm_rewards,
    "rank_uniform": rank_uniform_rewards,
}


def river_rewards_from_scores(scores, valid, env: EnvConfig) -> jax.Array:
    """Rewards of a score-based environment: scores/valid `[G, M]` or `[P, G, M]` -> `[G]` or
    `[P, G]`. Larger scores are better unless `river.minimize`."""
    if env.kind != "river" or env.river is None:
        raise ValueError(f"environment {env.name!r} is kind={env.kind}; use rewards(records, env)")
    scores = jnp.asarray(scores, jnp.float32)
    if scores.ndim not in (2, 3) or jnp.shape(valid) != scores.shape:
        raise ValueError(f"scores must be [G, M] or [P, G, M] with valid of the same shape; got "
                         f"scores {scores.shape}, valid {jnp.shape(valid)}")
    if env.river.minimize:
        scores = -scores
    return _RIVER_METHODS[env.river.method](scores, jnp.asarray(valid, bool))


__all__ = [
    "Signals",
    "rewards",
    "rewards_and_signals",
    "river_rewards_from_scores",
    "signals",
]
