"""Environments: execution records -> the signals `(c_cor, c~, g, q)` -> one reward per rollout.

This module owns the orchestration of docs/design/rewards.md §1, §5 and §6 on top of the pure
kernels (calibration, filters, limits, percentiles, composition, river). One jitted function per
environment (the frozen `EnvConfig` is a static argument), in this order:

  1. references: sanitise + calibrate the stored durations `[P, T, H]` (eq. 10; never the
     candidate's durations), and rank them (QP ranks, mid-ranks for ranked limits). A training
     run does this once per problem set (`reference_table.prepare_references`) and passes the
     table as `references=`. Without one, `rewards_and_signals` prepares it from the batch in
     its own jitted call just before the step (the "cold" path), so both paths run the same
     compiled step on the same table. (Fusing the preparation into the step's program was
     slower on XLA CPU: 25 ms against 8 + 7 ms at P = 256, G = 16, T = 128, H = 64.);
  2. pre-execution filter -> used optimization tests, per problem `[P, T]`;
  3. intended limits lambda_t (optimization tests) and the correctness-test limit, then the
     post-filter: a success at or above its limit becomes a timeout;
  4. c_cor over correctness tests; c~ adds "success or timeout" over the used optimization tests;
     phi = timeout fraction over them; g_to = 1{phi <= rho}, q_to = phi;
  5. q_QAR / q_QP against the references (the grouped kernels: each problem's references are
     broadcast over its G rollouts, never copied per rollout);
     g_dur = 1{q_dur <= p}; g = g_to * g_dur; q = 1 - (1 - q_to)(1 - q_dur), inactive gates 1,
     inactive scalars 0;
  6. the reward of the composition family (docs/design/rewards.md §6) or the naive raw-duration
     baseline (D.5).

The batch is in the grouped layout of `records` (B = P * G, rows of a problem contiguous): the
step works on `[P, G, T]` views (a free reshape) and per-problem `[P, T]` views read through
the first rollout of each group; outputs are `[B]` / `[B, T]` in the batch's row order.

How a duration is read follows its status (`_read_durations`). The provenance was settled
before the batch existed, by the one status-and-provenance rule of the execution table
(`jaxopt_rl.data.execution_table.timed_duration`: a timeout at its cap, a fleet duration kept,
any other NaN); this layer does not know provenance and only reads the result: a timeout
counts at its cap, always (the simulator's calibrated replays and hand-built batches carry
other numbers there); a success's duration counts only when it is a measurement (finite, in
[0, cap]); other verdicts without one count at the cap.

Undefined rewards are NaN, never a program failure, and each cause is counted:
  * `inconclusive_B`: an `infra_error` on a test the environment reads (a correctness test, or
    a used optimization test unless the reward never reads them: `correctness`, naive `base`).
    The trainer drops the rollout (or re-executes it); it must never be scored as a failed
    program.
  * `untimed_B > 0`: a success whose duration is not a measurement (NaN, off the timing fleet,
    negative, beyond its cap) on a test whose duration the environment reads. Always
    undefined: such a duration never enters a ranking, a limit or a reward.
  * `unrankable_B` under `ranking.if_unrankable: drop` (the default): no used test has a
    measured reference duration, so the speed signal does not exist. A reference whose stored
    duration is lost (null, <= 0, not finite) is no measurement: eq. 10 reads it at the cap,
    which fills a hole in a measured leaderboard but cannot make one (every reference at the
    cap would rank any correct rollout first). `neutral`, chosen explicitly, treats the
    duration gate and scalar as inactive instead (g_dur = 1, q_dur = 0). q_QAR and q_QP of an
    unrankable rollout are NaN.
  * a padding rollout (`rollout_mask_B` False): NaN reward, `undefined_B` True, never
    inconclusive; `Signals.rollout_mask_B` carries the mask so that summaries skip them.
The other signals of such a rollout are computed but carry no meaning.

Lost reference durations on a rankable problem are counted, not hidden: `lost_tests_B` is the
number of the rollout's used tests whose every reference duration is lost (read at the cap
under `ranking.lost_references: cap`, eq. 10 (docs/design/rewards.md §1); left out of the ranking
under `drop`), for environments that read references (a ranking, an abs/rel filter, a
relative/ranked limit).

Multitask (docs/design/rewards.md §6): `use_optimization_B` says which rollouts get the
optimization-only reward. The trainer passes its own per-group choice; by default problem row `p` of
the batch is assigned the optimization task iff `frac((p + 1) * golden_ratio) < multitask_share` (a
low-discrepancy rule: any run of consecutive problems splits close to the share, deterministically).

Score-based tasks (`kind: river`) take scores, not records: `river_rewards_from_scores`.

`environment_step` is the same step unjitted, with the env's numbers optionally traced
(`env_numbers.EnvNumbers`): the offline simulator vmaps it over many environments of one
structure. Without traced numbers the step reads the env's Python constants, as compiled here.

Dimension letters: B rollouts, P problems, G rollouts (solvers) per problem, T tests,
H references, M hidden instances.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards import filters, limits, percentiles, reference_table
from jaxopt_rl.rewards.composition import compose, multitask_rewards, naive_reward
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.env_numbers import EnvNumbers, constants
from jaxopt_rl.rewards.records import (
    INCONCLUSIVE,
    SUCCESS,
    TEST_KIND_CODE,
    TIMEOUT,
    RecordBatch,
)
from jaxopt_rl.rewards.reductions import exact_divide, masked_quantile
from jaxopt_rl.rewards.reference_table import ReferenceTable, check_table, prepare_references
from jaxopt_rl.rewards.river import (
    instance_norm_rewards,
    rank_uniform_rewards,
    raw_binary_rewards,
    raw_grpo_rewards,
    river_rewards,
)

GOLDEN_RATIO = 0.6180339887498949
# g_dur = 1{q <= p + QUALITY_TOLERANCE}: the candidate's benefit at the threshold (spec: ties
# favour the candidate), as QP's tie tolerance; far below any real gap between ranked values
# (1 / (n_ref * n_tests) >= 1e-4 for 64 references and 128 tests)
QUALITY_TOLERANCE = 1e-6


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
    undefined_B: jax.Array  # reward is NaN: inconclusive, unrankable under `drop`, or padding
    use_optimization_B: jax.Array  # multitask: this rollout got the optimization-only reward
    rollout_mask_B: jax.Array  # a real rollout (False: padding of the grouped layout)
    untimed_B: jax.Array  # int32: successes on read tests whose duration is not a fleet timing
    unrankable_B: jax.Array  # no used test has a measured reference duration (ranking envs)
    lost_tests_B: jax.Array  # int32: used tests whose every reference duration is lost


def _kind_mask(kind_PT: jax.Array, kinds: tuple[str, ...]) -> jax.Array:
    mask_PT = jnp.zeros(kind_PT.shape, bool)
    for kind in kinds:
        mask_PT |= kind_PT == TEST_KIND_CODE[kind]
    return mask_PT


def _used_tests_PT(env: EnvConfig, references: ReferenceTable, opt_PT, io_chars_PT,
                   num: EnvNumbers):
    """Step 2: the pre-execution filter, per problem."""
    spec = env.filter
    ref_PTH, ref_mask_PTH = references.duration_PTH, references.mask_PTH
    if spec.kind == "id":
        return filters.filter_identity(opt_PT)
    if spec.kind == "abs":
        return filters.filter_absolute(opt_PT, ref_PTH, ref_mask_PTH, num.threshold_s,
                                       how=spec.aggregate,
                                       dbar_PT=references.dbar_for(spec.aggregate))
    if spec.kind == "rel":
        return filters.filter_relative(opt_PT, ref_PTH, ref_mask_PTH, num.drop_percent,
                                       how=spec.aggregate,
                                       dbar_PT=references.dbar_for(spec.aggregate))
    return filters.filter_length(opt_PT, io_chars_PT, num.max_chars)


def _limits_PT(env: EnvConfig, references: ReferenceTable, used_PT, cap_PT, test_mask_PT, cor_PT,
               num: EnvNumbers, traced: bool):
    """Step 3: intended limit per test and the final used mask, per problem `[P, T]`."""
    spec = env.limit
    ref_PTH, ref_mask_PTH = references.duration_PTH, references.mask_PTH
    if spec.kind == "relative":
        # traced numbers: the table's quantile is for its own percentile, compute this one's
        quantile_PT = (masked_quantile(ref_PTH, ref_mask_PTH, num.limit_quantile)
                       if traced else references.limit_quantile_for(spec.percentile))
        opt_limit_PT, used_PT = limits.relative_limit(
            ref_PTH, ref_mask_PTH, used_PT, num.percentile, quantile_PT=quantile_PT)
    elif spec.kind == "ranked":
        opt_limit_PT, used_PT = limits.ranked_reference_limit(
            ref_PTH, ref_mask_PTH, used_PT, num.percentile, how=spec.aggregate,
            mid_rank_PTH=references.mid_rank_PTH)
    elif spec.kind == "absolute":
        opt_limit_PT, used_PT = limits.absolute_limit(used_PT, num.limit_s)
    elif spec.kind == "infinite":
        opt_limit_PT = jnp.full(cap_PT.shape, jnp.inf, jnp.float32)
    else:
        opt_limit_PT, used_PT = limits.default_limit(cap_PT, used_PT)
    used_PT = used_PT & test_mask_PT
    cor_limit_PT = cap_PT if env.correctness_limit_s is None else jnp.full(
        cap_PT.shape, num.correctness_limit_s, jnp.float32)
    limit_PT = jnp.where(used_PT, opt_limit_PT, jnp.where(cor_PT, cor_limit_PT, jnp.nan))
    return limit_PT, used_PT


def _reads_optimization(env: EnvConfig) -> bool:
    """Whether the reward reads the used optimization tests at all (c~, phi, g, q or the naive
    opt source). `correctness` reads c_cor only, naive `base` c_cor and T0 durations: an infra
    error on a test they never read leaves their reward defined."""
    comp = env.composition
    if comp.family == "correctness":
        return False
    return not (comp.family == "naive" and comp.naive_source == "base")


def _read_durations(env: EnvConfig, status_PGT, duration_PGT, cap_PT, test_mask_PT, used_PT,
                    cor_PT, kind_PT):
    """How each record's status fixes the reading of its duration:

      * a timeout counts at its cap, always (whatever duration it carries); so does a success
        recorded beyond its cap, which is a timeout (the loader refuses such a record; this
        covers batches built by hand);
      * a success counts at its duration when that is a measurement: finite, in [0, cap]
        (the execution table's rule makes every duration not measured on the timing fleet
        NaN). Otherwise it
        is NaN, and where the environment reads it (`reads`: the used optimization tests when
        a ranking, an intended limit or the naive opt source reads durations there;
        correctness tests under `correctness_limit_s`; T0 for the naive base source) it is
        counted in `untimed` and the rollout's reward is undefined: a NaN, a local duration or
        an impossible one is never ranked and never becomes reward;
      * any other verdict (failure, infra error) without a measurement counts at the cap.

    Returns `(status_PGT, duration_PGT, untimed_PG)`."""
    cap_P1T = cap_PT[:, None]
    over_cap_PGT = (status_PGT == SUCCESS) & jnp.isfinite(duration_PGT) & (duration_PGT > cap_P1T)
    status_PGT = jnp.where(over_cap_PGT, jnp.asarray(TIMEOUT, status_PGT.dtype), status_PGT)
    valid_PGT = jnp.isfinite(duration_PGT) & (duration_PGT >= 0) & (duration_PGT <= cap_P1T)
    success_PGT = status_PGT == SUCCESS
    duration_PGT = jnp.where(status_PGT == TIMEOUT, cap_P1T,
                             jnp.where(valid_PGT, duration_PGT,
                                       jnp.where(success_PGT, jnp.nan, cap_P1T)))
    comp = env.composition
    reads_opt = (env.ranking.kind != "none" or env.limit.kind not in ("default", "infinite")
                 or (comp.family == "naive" and comp.naive_source == "opt"))
    reads_PT = used_PT & test_mask_PT if reads_opt else jnp.zeros(used_PT.shape, bool)
    if env.correctness_limit_s is not None:
        reads_PT = reads_PT | cor_PT
    if comp.family == "naive" and comp.naive_source == "base":
        reads_PT = reads_PT | (cor_PT & _kind_mask(kind_PT, ("T0",)))
    untimed_PG = jnp.sum(reads_PT[:, None] & success_PGT & ~valid_PGT, axis=-1).astype(jnp.int32)
    return status_PGT, duration_PGT, untimed_PG


def _multitask_default_P(num_problems: int, share: float) -> jax.Array:
    position_P = (jnp.arange(num_problems, dtype=jnp.float32) + 1.0) * GOLDEN_RATIO
    return (position_P - jnp.floor(position_P)) < share


def _signals_and_rewards(records: RecordBatch, env: EnvConfig, use_optimization_B,
                         references: ReferenceTable, all_rankings: bool,
                         numbers: EnvNumbers | None = None) -> tuple[jax.Array, Signals]:
    (b, t), p = records.status_BT.shape, records.ref_duration_PTH.shape[0]
    num = constants(env) if numbers is None else numbers
    g = b // p

    def grouped(x_BT, dtype=None):
        return jnp.asarray(x_BT, dtype).reshape(p, g, t)

    def per_problem(x_BT, dtype=None):  # the group shares it: read through its first rollout
        return grouped(x_BT, dtype)[:, 0]

    def flat(x_PGA):
        return jnp.broadcast_to(x_PGA, (p, g, *x_PGA.shape[2:])).reshape(b, *x_PGA.shape[2:])

    qp_ranks = reference_table.needs(env, all_rankings)[0]
    real_PG = jnp.asarray(records.rollout_mask_B, bool).reshape(p, g)
    test_mask_PT = per_problem(records.test_mask_BT, bool)
    kind_PT = per_problem(records.test_kind_BT)
    cap_PT = per_problem(records.cap_BT, jnp.float32)
    duration_PGT = grouped(records.duration_BT, jnp.float32)
    cor_PT = test_mask_PT & _kind_mask(kind_PT, env.correctness_kinds)
    opt_PT = test_mask_PT & _kind_mask(kind_PT, env.optimization_kinds)

    used_PT = _used_tests_PT(env, references, opt_PT, per_problem(records.io_chars_BT), num)
    limit_PT, used_PT = _limits_PT(env, references, used_PT, cap_PT, test_mask_PT, cor_PT, num,
                                   traced=numbers is not None)
    status_PGT, duration_PGT, untimed_PG = _read_durations(
        env, grouped(records.status_BT), duration_PGT, cap_PT, test_mask_PT, used_PT, cor_PT,
        kind_PT)
    status_PGT = limits.post_filter(status_PGT, duration_PGT, limit_PT[:, None])

    cor_P1T, used_P1T = cor_PT[:, None], used_PT[:, None]
    needed_P1T = cor_P1T | (used_P1T if _reads_optimization(env) else False)
    inconclusive_PG = jnp.any(needed_P1T & (status_PGT == INCONCLUSIVE), axis=-1) & real_PG
    c_cor_PG = jnp.all(~cor_P1T | (status_PGT == SUCCESS), axis=-1)
    timeout_PGT = used_P1T & (status_PGT == TIMEOUT)
    opt_ok_PG = jnp.all(~used_P1T | (status_PGT == SUCCESS) | timeout_PGT, axis=-1)
    c_strict_PG = c_cor_PG & opt_ok_PG
    n_used_P1 = jnp.sum(used_P1T, axis=-1)
    phi_PG = exact_divide(jnp.sum(timeout_PGT, axis=-1),
                          jnp.maximum(n_used_P1, 1).astype(jnp.float32))
    g_to_PG = phi_PG <= num.timeout_tolerance
    q_to_PG = phi_PG if env.limit.kind != "infinite" else jnp.zeros_like(phi_PG)

    nan_PG = jnp.full(phi_PG.shape, jnp.nan, jnp.float32)
    q_qar_PG = q_qp_PG = nan_PG
    if env.optimization_kinds and (all_rankings or env.ranking.kind == "qar"):
        q_qar_PG = percentiles.qar_grouped(duration_PGT, references.pool, used_P1T)
    if qp_ranks:
        q_qp_PG = percentiles.qp_grouped(duration_PGT, references.pool.with_ranks(), used_P1T)

    # a rollout is rankable when a used test has a measured reference duration (its own NaN
    # durations are not "unrankable": they are untimed, counted above, and never a reward);
    # references whose stored durations are all lost sit at the cap: no leaderboard at all
    rankable_P = jnp.any(used_PT & references.measured_PT, axis=-1)
    rankable_PG = jnp.broadcast_to(rankable_P[:, None], phi_PG.shape)
    undefined_PG = inconclusive_PG | ~real_PG | (untimed_PG > 0)
    unrankable_PG = jnp.zeros(phi_PG.shape, bool)
    reads_references = (env.ranking.kind != "none" or env.filter.kind in ("abs", "rel")
                        or env.limit.needs_references)
    lost_tests_P = jnp.sum(used_PT & references.lost_PT, axis=-1).astype(jnp.int32)
    if not reads_references:
        lost_tests_P = jnp.zeros_like(lost_tests_P)
    q_qar_PG = jnp.where(rankable_PG, q_qar_PG, jnp.nan)
    q_qp_PG = jnp.where(rankable_PG, q_qp_PG, jnp.nan)
    if env.ranking.kind == "none":
        q_dur_PG, g_dur_PG = jnp.zeros_like(phi_PG), jnp.ones(phi_PG.shape, bool)
    else:
        raw_PG = q_qar_PG if env.ranking.kind == "qar" else q_qp_PG
        q_dur_PG = jnp.where(rankable_PG, raw_PG, 0.0)
        g_dur_PG = jnp.ones(phi_PG.shape, bool)
        if env.gates.quality_threshold is not None:
            # q <= p with the candidate's benefit of QUALITY_TOLERANCE: a q equal to p in exact
            # arithmetic passes however float32 accumulated it (NaN never passes)
            passes_PG = raw_PG <= num.quality_threshold + QUALITY_TOLERANCE
            g_dur_PG = jnp.where(rankable_PG, passes_PG, True)
        unrankable_PG = ~rankable_PG & real_PG
        if env.ranking.if_unrankable == "drop":
            undefined_PG = undefined_PG | unrankable_PG
    g_PG = g_to_PG & g_dur_PG
    q_PG = 1.0 - (1.0 - q_to_PG) * (1.0 - q_dur_PG)

    comp = env.composition
    if use_optimization_B is None:
        share = num.multitask_share if comp.family == "multitask" else 0.0
        use_optimization_B = flat(_multitask_default_P(p, share)[:, None])
    use_optimization_B = jnp.asarray(use_optimization_B, bool) & (comp.family == "multitask")
    c_cor_B, c_strict_B, g_B, q_B = (x.reshape(b) for x in (c_cor_PG, c_strict_PG, g_PG, q_PG))
    limit_BT, used_BT = flat(limit_PT[:, None]), flat(used_P1T)
    status_BT = status_PGT.reshape(b, t)
    if comp.family == "naive":
        t0_PT = cor_PT & _kind_mask(kind_PT, ("T0",))
        source_BT = used_BT if comp.naive_source == "opt" else flat(t0_PT[:, None])
        # timeouts (and missing durations) count at the test's effective limit (D.5)
        naive_limit_BT = jnp.where(jnp.isfinite(limit_BT), limit_BT, records.cap_BT)
        reward_B = naive_reward(c_cor_B, duration_PGT.reshape(b, t), source_BT, naive_limit_BT,
                                map=comp.naive_map, status_BT=status_BT)
    elif comp.family == "multitask":
        reward_B = multitask_rewards(c_cor_B, c_strict_B, g_B, q_B, use_optimization_B,
                                     mapping=comp.mapping)
    else:
        reward_B = compose(c_cor_B, c_strict_B, g_B, q_B, comp.family, mapping=comp.mapping)
    undefined_B = undefined_PG.reshape(b)
    reward_B = jnp.where(undefined_B, jnp.nan, jnp.asarray(reward_B, jnp.float32))

    signals = Signals(
        c_cor_B=c_cor_B, c_strict_B=c_strict_B, g_B=g_B, q_B=q_B, phi_B=phi_PG.reshape(b),
        g_to_B=g_to_PG.reshape(b), g_dur_B=g_dur_PG.reshape(b), q_qar_B=q_qar_PG.reshape(b),
        q_qp_B=q_qp_PG.reshape(b), used_test_mask_BT=used_BT, limit_BT=limit_BT,
        status_BT=status_BT, inconclusive_B=inconclusive_PG.reshape(b), undefined_B=undefined_B,
        use_optimization_B=use_optimization_B, rollout_mask_B=real_PG.reshape(b),
        untimed_B=jnp.where(real_PG, untimed_PG, 0).reshape(b),
        unrankable_B=unrankable_PG.reshape(b),
        lost_tests_B=flat(jnp.where(real_PG, lost_tests_P[:, None], 0)),
    )
    return reward_B, signals


_signals_and_rewards_jit = jax.jit(_signals_and_rewards, static_argnames=("env", "all_rankings"))


def _check_execution_env(env: EnvConfig) -> None:
    if not isinstance(env, EnvConfig):
        raise TypeError(f"env must be an EnvConfig, got {type(env).__name__}")
    if env.kind != "execution":
        raise ValueError(f"environment {env.name!r} is kind={env.kind}: it scores instances, "
                         "use river_rewards_from_scores")


def _check_concrete_records(records: RecordBatch, env: EnvConfig) -> None:
    """Host checks of a concrete batch (skipped under tracing): rollouts of one problem share a
    test layout (`RecordBatch.validate`), and no test ran under a cap above the environment's
    `service_cap_s` (the reference durations are clamped to it: a candidate timed out at a
    higher cap would be ranked against a truncated scale)."""
    leaves = (records.status_BT, records.test_mask_BT, records.cap_BT)
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        return
    records.validate()
    cap_BT = np.asarray(records.cap_BT)
    mask_BT = np.asarray(records.test_mask_BT, bool)
    if mask_BT.any():
        highest = float(cap_BT[mask_BT].max())
        if highest > env.service_cap_s:
            raise ValueError(f"environment {env.name!r}: service_cap_s={env.service_cap_s:g} is "
                             f"below the cap {highest:g} s the records ran under; it must be at "
                             "least every test's cap (limit_s)")


def rewards_and_signals(records: RecordBatch, env: EnvConfig, use_optimization_B=None, *,
                        references: ReferenceTable | None = None,
                        all_rankings: bool = False) -> tuple[jax.Array, Signals]:
    """`(reward_B, Signals)` in one jitted call (compiled once per environment and shape).

    `references`: the batch's references prepared once for this environment
    (`reference_table.prepare_references(batch.ref_duration_PTH, batch.ref_mask_PTH, env)`);
    the training path. Without it they are prepared from the batch first (same numbers, the
    preparation's cost on every call). A table without the ranks a call needs (QP ranks for
    `all_rankings=True`, mid-ranks for a ranked limit) gets them computed in the step.
    `all_rankings=True` also computes the ranked scalar the environment does not use (q_QAR or
    q_QP), for reports; otherwise that field is NaN.
    """
    _check_execution_env(env)
    records.check_shapes()
    _check_concrete_records(records, env)
    if references is None:
        references = prepare_references(records.ref_duration_PTH, records.ref_mask_PTH, env,
                                        all_rankings=all_rankings)
    else:
        check_table(references, env, records)
    if use_optimization_B is not None and env.composition.family != "multitask":
        raise ValueError(f"use_optimization_B only applies to family=multitask; environment "
                         f"{env.name!r} is family={env.composition.family}")
    return _signals_and_rewards_jit(records, env, use_optimization_B, references,
                                    all_rankings=all_rankings)


def environment_step(records: RecordBatch, env: EnvConfig, references: ReferenceTable,
                     numbers: EnvNumbers | None = None, use_optimization_B=None, *,
                     all_rankings: bool = False) -> tuple[jax.Array, Signals]:
    """The step of `rewards_and_signals` itself, not jitted, for callers that trace it inside
    their own computation. `numbers` (`env_numbers.EnvNumbers`, possibly traced) replaces the
    env's numeric knobs, so that `jax.vmap` over `numbers` evaluates many environments of one
    structure in one program (the offline simulator); None reads them from `env`, which is
    what `rewards_and_signals` compiles. `references` must be prepared for `env`'s structure
    (`prepare_references`)."""
    _check_execution_env(env)
    check_table(references, env)
    return _signals_and_rewards(records, env, use_optimization_B, references, all_rankings,
                                numbers)


def signals(records: RecordBatch, env: EnvConfig, *, references: ReferenceTable | None = None,
            all_rankings: bool = False) -> Signals:
    """The reward-facing signals of docs/design/rewards.md §5 for every rollout."""
    return rewards_and_signals(records, env, references=references, all_rankings=all_rankings)[1]


def rewards(records: RecordBatch, env: EnvConfig, use_optimization_B=None, *,
            references: ReferenceTable | None = None) -> jax.Array:
    """`reward_B` in [-1, 1], NaN where undefined (see the module docstring)."""
    return rewards_and_signals(records, env, use_optimization_B, references=references)[0]


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
    # float64 on the host: the river kernels take exact stand-ins before any float32 cast
    traced = isinstance(scores, jax.core.Tracer)
    scores = jnp.asarray(scores, jnp.float32) if traced else np.asarray(scores, np.float64)
    if scores.ndim not in (2, 3) or jnp.shape(valid) != scores.shape:
        raise ValueError(f"scores must be [G, M] or [P, G, M] with valid of the same shape; got "
                         f"scores {scores.shape}, valid {jnp.shape(valid)}")
    if env.river.minimize:
        scores = -scores
    valid = valid if isinstance(valid, jax.core.Tracer) else np.asarray(valid, bool)
    return _RIVER_METHODS[env.river.method](scores, valid)


__all__ = [
    "Signals",
    "environment_step",
    "rewards",
    "rewards_and_signals",
    "river_rewards_from_scores",
    "signals",
]
