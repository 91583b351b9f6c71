"""Post-execution ranking against reference durations: per-test percentiles, QAR and QP
(docs/design/rewards.md §4).

For one rollout `y` and a test `t` with usable reference durations `D_t` (`n_ref = |D_t|`):

  ties="min"      p_t(y) = #{h : d_th < delta_t} / n_ref               (ties favour the candidate;
                                                                        the environment rule)
  ties="average"  p_t(y) = (rbar - 1) / n_ref, rbar the 1-indexed mid-rank of delta_t in
                  D_t ∪ {delta_t}                                      (the metric-sweep rule)

  a(y)   = mean of p_t(y) over the used tests that have usable references
  q_QAR  = a(y)
  q_QP   = b(y) / max(1, N_rank - 1),  b(y) = #{h : a(h) < a(y)},  N_rank = #{h : a(h) defined} + 1

where `a(h)` ranks reference `h` on each test inside the same pool (the other usable references
plus the candidate) under the same tie rule. All quantities are lower-is-better, in [0, 1], and
NaN when the candidate has no rankable test.

Choices (spec: "(choice)" / left open):
  * a reference missing a duration on some used test is scored on the used tests where it has
    one (mean over its own usable tests); a reference with none is not ranked.
  * `b(y)` counts a reference as faster only when `a(h) < a(y) - tie_tolerance` (default 1e-6 on
    the [0, 1] scale). The candidate and every reference are summed over tests in the same
    order, so equal per-test percentiles give bit-equal means; the tolerance also absorbs
    last-bit differences between unequal-looking sums, resolving ties in the candidate's favour
    as the tie rule of §4 asks.
  * a NaN candidate duration on a used test makes that test's percentile, and so QAR and QP,
    NaN (never a silently "fastest" value). Padded entries may hold anything.

Layout. GRPO batches come in groups: G rollouts of each of P problems. The kernels work on that
grouped layout, `cand_PGT` against references `[P, T, H]` that are never copied per rollout:
  * `pool.reference_pool` prepares a problem set's references once (NaN-keyed
    durations, an `[H, T, P]` copy, `1 / n_ref`, and the reference ranks: the O(P·T·H²) part
    of QP).
  * `*_grouped(cand_PGT, pool, test_mask_PGT)` compare each candidate with each reference of its
    problem, O(P·G·T·H), which gives both the candidate's count and the "+1" of each reference
    the candidate beats. `test_mask` may be `[P, 1, T]` when a group shares its used tests (the
    environment's case), which makes the per-reference test counts per problem.
  * `qp`, `qar`, ... take references per rollout (`[B, T, H]`): the same code with one problem
    per rollout (G = 1).
  * `*_by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B, ...)` accept any rollout ->
    problem index. A concrete grouped index (`repeat(arange(P), G)`) is reshaped onto the
    grouped kernels; any other index (or a traced one) is the general, slower path that gathers
    the prepared references per rollout (`[B, T, H]`) and runs the G = 1 kernels. Both give
    identical numbers.

Speed (XLA CPU, jax 0.10, P = 256, G = 16, T = 128, H = 64; measured). Every count is a
`fori_loop` of fused elementwise passes (`reductions.sum_over`) that broadcast a problem's `[P, T]` or
`[P, H]` slice over its G rollouts: no gather in any loop (gathering `[B, H]` rows by problem
index at every step cost ~20 ms here), no reduction over a `[P, G, T, H]` intermediate (40-55 ms)
and no reduction inside a loop step (10-20 ms); no sort (`jnp.sort` of `[P, T, H]` takes ~175 ms).
The candidate loop runs over references (reading the `[H, T, P]` copy, so each step reads one
contiguous `[T, P]` slice), the reference loop over tests. Means divide by per-problem counts
through `exact_divide`, so the grouped and per-rollout layouts round alike.

Dimension letters: B rollouts, P problems, G rollouts per problem, T tests, H references;
A is G or 1 (a mask shared by a group; `jaxopt_rl.dimensions`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards.checks import TIE_RULES, check_ties
from jaxopt_rl.rewards.pool import (
    DEFAULT_TIE_TOLERANCE,
    ReferencePool,
    build_pool,
    check_references,
    reference_pool,
    reference_ranks,
)
from jaxopt_rl.rewards.reductions import exact_divide, sum_over

# ---- the grouped core ------------------------------------------------------------------------


def _candidate_counts(cand_TPG, pool: ReferencePool) -> jax.Array:
    """How many usable references beat each candidate on each test (ties halved): `[T, P, G]`."""

    def beats_candidate(h):
        key_TP1 = pool.key_HTP[h][:, :, None]
        count_TPG = (key_TP1 < cand_TPG).astype(jnp.float32)
        if pool.ties == "average":
            count_TPG = count_TPG + 0.5 * (key_TP1 == cand_TPG)
        return count_TPG

    return sum_over(pool.key_HTP.shape[0], beats_candidate, cand_TPG.shape)


def _candidate_percentile(cand_PGT, pool: ReferencePool) -> jax.Array:
    inv_n_P1T = pool.inv_n_PT[:, None, :]
    count_PGT = jnp.moveaxis(_candidate_counts(jnp.moveaxis(cand_PGT, 2, 0), pool), 0, 2)
    return jnp.where((inv_n_P1T > 0) & ~jnp.isnan(cand_PGT), count_PGT * inv_n_P1T, jnp.nan)


def _scores(cand_PGT, pool: ReferencePool, test_mask_PAT, with_references: bool):
    """`a(y) [P, G]` and (when asked) `a(h) [P, G, H]` on the used tests (test mask and at least
    one usable reference)."""
    p, g, t = cand_PGT.shape
    h = pool.key_PTH.shape[-1]
    inv_n_P1T = pool.inv_n_PT[:, None, :]
    used_PAT = test_mask_PAT & (inv_n_P1T > 0)
    weight_PAT = jnp.where(used_PAT, inv_n_P1T, 0.0)
    # T-major copies: the loops over tests read one contiguous slice per step
    weight_TPA = jnp.moveaxis(weight_PAT, 2, 0)
    cand_TPG = jnp.moveaxis(cand_PGT, 2, 0)
    count_TPG = _candidate_counts(cand_TPG, pool)
    cand_total_PG = sum_over(t, lambda i: weight_TPA[i] * count_TPG[i], (p, g))
    n_used_PA = jnp.sum(used_PAT, axis=-1)
    # a NaN candidate duration on a used test must poison a(y), never read as "fastest"
    cand_nan_PG = jnp.any(used_PAT & jnp.isnan(cand_PGT), axis=-1)
    cand_score_PG = jnp.where(
        (n_used_PA > 0) & ~cand_nan_PG,
        exact_divide(cand_total_PG, jnp.maximum(n_used_PA, 1).astype(jnp.float32)),
        jnp.nan,
    )
    if not with_references:
        return cand_score_PG, None
    if pool.rank_PTH is None:
        raise ValueError("this ReferencePool was prepared with ranks=False; QP and the "
                         "reference scores need reference_pool(..., ranks=True)")
    used_TPA = jnp.moveaxis(used_PAT, 2, 0).astype(jnp.float32)
    x = used_PAT.shape[1]

    def reference_count(i):
        # the other references this one loses to, plus the candidate where it is strictly
        # faster (one half where they tie, average rule); NaN keys (padding) compare false
        key_P1H = jax.lax.dynamic_index_in_dim(pool.key_PTH, i, axis=1)
        rank_P1H = jax.lax.dynamic_index_in_dim(pool.rank_PTH, i, axis=1)
        delta_PG1 = cand_TPG[i][:, :, None]
        count_PGH = rank_P1H + (delta_PG1 < key_P1H)
        if pool.ties == "average":
            count_PGH = count_PGH + 0.5 * (delta_PG1 == key_P1H)
        return weight_TPA[i][:, :, None] * count_PGH

    def reference_used(i):
        key_P1H = jax.lax.dynamic_index_in_dim(pool.key_PTH, i, axis=1)
        return jnp.where(key_P1H == key_P1H, used_TPA[i][:, :, None], 0.0)

    ref_total_PGH = sum_over(t, reference_count, (p, g, h))
    ref_n_PAH = sum_over(t, reference_used, (p, x, h))
    ref_score_PGH = jnp.where(
        ref_n_PAH > 0, exact_divide(ref_total_PGH, jnp.maximum(ref_n_PAH, 1.0)), jnp.nan
    )
    return cand_score_PG, ref_score_PGH


def _leaderboard_percentile(cand_score_PG, ref_score_PGH, tie_tolerance):
    ranked_PGH = ~jnp.isnan(ref_score_PGH)
    faster_PGH = ranked_PGH & (ref_score_PGH < cand_score_PG[..., None] - tie_tolerance)
    n_faster_PG = jnp.sum(faster_PGH, axis=-1).astype(jnp.float32)
    n_ranked_PG = jnp.sum(ranked_PGH, axis=-1).astype(jnp.float32)
    q_PG = n_faster_PG / jnp.maximum(1.0, n_ranked_PG)  # N_rank - 1 = number of ranked references
    return jnp.where(jnp.isnan(cand_score_PG), jnp.nan, q_PG)


@jax.jit
def _per_test_percentile_jit(cand_PGT, pool):
    return _candidate_percentile(jnp.asarray(cand_PGT, jnp.float32), pool)


@functools.partial(jax.jit, static_argnames=("with_references",))
def _scores_jit(cand_PGT, pool, test_mask_PAT, with_references):
    cand_PGT = jnp.asarray(cand_PGT, jnp.float32)
    return _scores(cand_PGT, pool, jnp.asarray(test_mask_PAT, bool), with_references)


@jax.jit
def _qp_jit(cand_PGT, pool, test_mask_PAT, tie_tolerance):
    return _leaderboard_percentile(*_scores_jit(cand_PGT, pool, test_mask_PAT, True),
                                   tie_tolerance)


def _check_grouped(cand_PGT, pool: ReferencePool, test_mask_PAT=None) -> None:
    if not isinstance(pool, ReferencePool):
        raise TypeError(f"expected a ReferencePool (see reference_pool), got {type(pool).__name__}")
    p, t_ref, _ = np.shape(pool.key_PTH)
    if np.ndim(cand_PGT) != 3:
        raise ValueError(f"candidate durations must be [P, G, T], got shape {np.shape(cand_PGT)}")
    p_cand, g, t = np.shape(cand_PGT)
    if p_cand != p:
        raise ValueError(f"candidates cover {p_cand} problems, the reference pool {p}")
    if t_ref != t:
        raise ValueError(f"references have {t_ref} tests, candidate durations have {t}")
    if test_mask_PAT is not None and np.shape(test_mask_PAT) not in ((p, g, t), (p, 1, t)):
        raise ValueError(
            f"test_mask shape {np.shape(test_mask_PAT)}, expected ({p}, {g}, {t}) or ({p}, 1, {t})"
        )


def per_test_percentile_grouped(cand_PGT, pool: ReferencePool) -> jax.Array:
    """`p_t(y)` for every rollout and test: `[P, G, T]` in [0, 1], NaN where no usable reference."""
    _check_grouped(cand_PGT, pool)
    return _per_test_percentile_jit(cand_PGT, pool)


def mean_percentiles_grouped(
    cand_PGT, pool: ReferencePool, test_mask_PGT
) -> tuple[jax.Array, jax.Array]:
    """The leaderboard scores `(a(y) [P, G], a(h) [P, G, H])`, each reference ranked in the pool
    that includes that rollout. NaN where undefined. The pool must carry ranks."""
    _check_grouped(cand_PGT, pool, test_mask_PGT)
    return _scores_jit(cand_PGT, pool, test_mask_PGT, with_references=True)


def qar_grouped(cand_PGT, pool: ReferencePool, test_mask_PGT) -> jax.Array:
    """`q_QAR = a(y)`: `[P, G]`, NaN when no used test has a usable reference."""
    _check_grouped(cand_PGT, pool, test_mask_PGT)
    return _scores_jit(cand_PGT, pool, test_mask_PGT, with_references=False)[0]


def qp_grouped(
    cand_PGT, pool: ReferencePool, test_mask_PGT, tie_tolerance: float = DEFAULT_TIE_TOLERANCE
) -> jax.Array:
    """`q_QP = b(y) / max(1, N_rank - 1)`: `[P, G]`, NaN when no used test has a usable
    reference. The pool must carry ranks."""
    _check_grouped(cand_PGT, pool, test_mask_PGT)
    return _qp_jit(cand_PGT, pool, test_mask_PGT, tie_tolerance)


# ---- rollouts pointing at their problem: any index ---------------------------------------------


def _check_index(cand_BT, ref_PTH, problem_index_B, test_mask_BT=None) -> None:
    """Shape checks at trace time; a range check of `problem_index_B` when it is concrete."""
    if np.ndim(cand_BT) != 2:
        raise ValueError(f"candidate durations must be [B, T], got shape {np.shape(cand_BT)}")
    b, t = np.shape(cand_BT)
    p, t_ref, _ = np.shape(ref_PTH)
    if t_ref != t:
        raise ValueError(f"references have {t_ref} tests, candidate durations have {t}")
    if np.shape(problem_index_B) != (b,):
        raise ValueError(f"problem_index shape {np.shape(problem_index_B)}, expected ({b},)")
    if test_mask_BT is not None and np.shape(test_mask_BT) != (b, t):
        raise ValueError(f"test_mask shape {np.shape(test_mask_BT)}, expected ({b}, {t})")
    if not isinstance(problem_index_B, jax.core.Tracer):
        index = np.asarray(problem_index_B)
        if index.size and (index.min() < 0 or index.max() >= p):
            bad = int(np.flatnonzero((index < 0) | (index >= p))[0])
            raise ValueError(
                f"problem_index[{bad}] = {int(index[bad])} outside [0, {p}) (rows of references)"
            )


def _group_size(problem_index_B, num_problems: int) -> int | None:
    """G when `problem_index_B` is concrete and equals `repeat(arange(P), G)`, else None."""
    if isinstance(problem_index_B, jax.core.Tracer):
        return None
    index = np.asarray(problem_index_B)
    if num_problems == 0 or index.size % num_problems:
        return None
    group = index.size // num_problems
    return group if np.array_equal(index, np.repeat(np.arange(num_problems), group)) else None


def _by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B, test_mask_BT, ties, ranks,
                ref_rank_PTH=None):
    """`(cand_PGT, pool, test_mask_PGT, G)` for any rollout -> problem index (see the module
    docstring: a grouped index is reshaped, any other gathers references per rollout)."""
    check_ties(ties)
    check_references(ref_PTH, ref_mask_PTH, ref_rank_PTH)
    _check_index(cand_BT, ref_PTH, problem_index_B, test_mask_BT)
    pool = build_pool(ref_PTH, ref_mask_PTH, ref_rank_PTH, ties=ties, ranks=ranks)
    t = np.shape(cand_BT)[1]
    group = _group_size(problem_index_B, pool.num_problems)
    if group is None:
        pool, group = pool.take(problem_index_B), 1
    p = pool.num_problems
    cand_PGT = jnp.reshape(jnp.asarray(cand_BT, jnp.float32), (p, group, t))
    test_mask_PGT = None
    if test_mask_BT is not None:
        test_mask_PGT = jnp.reshape(jnp.asarray(test_mask_BT, bool), (p, group, t))
    return cand_PGT, pool, test_mask_PGT


def per_test_percentile_by_problem(
    cand_BT, ref_PTH, ref_mask_PTH, problem_index_B, ties: str = "min"
) -> jax.Array:
    """`p_t(y)` for every rollout and test: `[B, T]` in [0, 1], NaN where no usable reference."""
    cand_PGT, pool, _ = _by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B, None, ties,
                                    ranks=False)
    return _per_test_percentile_jit(cand_PGT, pool).reshape(np.shape(cand_BT))


def mean_percentiles_by_problem(
    cand_BT,
    ref_PTH,
    ref_mask_PTH,
    problem_index_B,
    test_mask_BT,
    ties: str = "min",
    ref_rank_PTH=None,
) -> tuple[jax.Array, jax.Array]:
    """The leaderboard scores `(a(y) [B], a(h) [B, H])`, each reference ranked in the pool that
    includes that rollout. NaN where undefined. `ref_rank_PTH`: see `reference_ranks`."""
    cand_PGT, pool, mask_PGT = _by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B,
                                           test_mask_BT, ties, ranks=True,
                                           ref_rank_PTH=ref_rank_PTH)
    cand_score_PG, ref_score_PGH = _scores_jit(cand_PGT, pool, mask_PGT, with_references=True)
    b = np.shape(cand_BT)[0]
    return cand_score_PG.reshape(b), ref_score_PGH.reshape(b, -1)


def qar_by_problem(
    cand_BT, ref_PTH, ref_mask_PTH, problem_index_B, test_mask_BT, ties: str = "min"
) -> jax.Array:
    """`q_QAR = a(y)`: `[B]`, NaN when no used test has a usable reference."""
    cand_PGT, pool, mask_PGT = _by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B,
                                           test_mask_BT, ties, ranks=False)
    return _scores_jit(cand_PGT, pool, mask_PGT, with_references=False)[0].reshape(-1)


def qp_by_problem(
    cand_BT,
    ref_PTH,
    ref_mask_PTH,
    problem_index_B,
    test_mask_BT,
    ties: str = "min",
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    ref_rank_PTH=None,
) -> jax.Array:
    """`q_QP = b(y) / max(1, N_rank - 1)`: `[B]`, NaN when no used test has a usable reference.

    `ref_rank_PTH` (optional) is `reference_ranks(ref_PTH, ref_mask_PTH, ties)` computed ahead;
    by default it is computed here."""
    cand_PGT, pool, mask_PGT = _by_problem(cand_BT, ref_PTH, ref_mask_PTH, problem_index_B,
                                           test_mask_BT, ties, ranks=True,
                                           ref_rank_PTH=ref_rank_PTH)
    return _qp_jit(cand_PGT, pool, mask_PGT, tie_tolerance).reshape(-1)


# ---- references given per rollout `[B, T, H]`: the grouped code with G = 1 --------------------


def _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, ranks):
    check_ties(ties)
    check_references(ref_BTH, ref_mask_BTH)
    if np.ndim(cand_BT) != 2:
        raise ValueError(f"candidate durations must be [B, T], got shape {np.shape(cand_BT)}")
    (b, t), (b_ref, t_ref, _) = np.shape(cand_BT), np.shape(ref_BTH)
    if t_ref != t:
        raise ValueError(f"references have {t_ref} tests, candidate durations have {t}")
    if b_ref != b:
        raise ValueError(f"{b} candidates but references for {b_ref} rollouts")
    if test_mask_BT is not None and np.shape(test_mask_BT) != (b, t):
        raise ValueError(f"test_mask shape {np.shape(test_mask_BT)}, expected ({b}, {t})")
    pool = build_pool(ref_BTH, ref_mask_BTH, None, ties=ties, ranks=ranks)
    cand_PGT = jnp.asarray(cand_BT, jnp.float32)[:, None, :]
    test_mask_PGT = None if test_mask_BT is None else jnp.asarray(test_mask_BT, bool)[:, None, :]
    _check_grouped(cand_PGT, pool, test_mask_PGT)
    return cand_PGT, pool, test_mask_PGT


def per_test_percentile(cand_BT, ref_BTH, ref_mask_BTH, ties: str = "min") -> jax.Array:
    """`p_t(y)`: `[B, T]` in [0, 1], NaN where the test has no usable reference."""
    cand_PGT, pool, _ = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, None, ties,
                                                 ranks=False)
    return _per_test_percentile_jit(cand_PGT, pool)[:, 0]


def mean_percentiles(
    cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties: str = "min"
) -> tuple[jax.Array, jax.Array]:
    """`(a(y) [B], a(h) [B, H])` with references given per rollout."""
    args = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, True)
    cand_score_PG, ref_score_PGH = _scores_jit(*args, with_references=True)
    return cand_score_PG[:, 0], ref_score_PGH[:, 0]


def qar(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties: str = "min") -> jax.Array:
    """`q_QAR`: mean per-test percentile over used tests with usable references, `[B]`."""
    args = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, False)
    return _scores_jit(*args, with_references=False)[0][:, 0]


def qp(
    cand_BT,
    ref_BTH,
    ref_mask_BTH,
    test_mask_BT,
    ties: str = "min",
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> jax.Array:
    """`q_QP`: the candidate's leaderboard percentile among the references, `[B]`."""
    args = _one_problem_per_rollout(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties, True)
    return _qp_jit(*args, tie_tolerance)[:, 0]


__all__ = [
    "DEFAULT_TIE_TOLERANCE",
    "TIE_RULES",
    "ReferencePool",
    "mean_percentiles",
    "mean_percentiles_by_problem",
    "mean_percentiles_grouped",
    "per_test_percentile",
    "per_test_percentile_by_problem",
    "per_test_percentile_grouped",
    "qar",
    "qar_by_problem",
    "qar_grouped",
    "qp",
    "qp_by_problem",
    "qp_grouped",
    "reference_pool",
    "reference_ranks",
]
