"""RiVER rewards for score-based tasks without ground truth, its baselines, and feedback
resolution (docs/design/rewards.md §7; RiVER paper §4.3, §5.1, §6).

A group of `G` solvers runs on the same `M` hidden instances; `valid[g, m]` says the output was
feasible and `scores[g, m]` is its objective, larger is better (negate minimisation tasks).

  rank       mid-rank of each valid solver among the valid solvers of its instance, 1 best
             (a tie over positions i..i+k gives every tied solver i + k/2)
  shape      s = -1 if invalid; 1 if valid and r == 1; else clip((G-1-r) / max(G-3, 1), 0, 1) - 0.5
  reward     sbar_i = mean over instances of s; it is the GRPO advantage as is (no centring, no
             standard deviation), see `jaxopt_rl.training.grpo.advantages(..., river=True)`

So the unique best valid solver of an instance gets 1, tied best solvers get at most 0.5,
other valid solvers lie in [-0.5, 0.5] and invalid ones get -1.

Baselines (paper Table 1) return what the trainer uses as the advantage, except Raw-Binary:
  raw_grpo_rewards       mean raw score over instances, then (R - mean) / (std + eps) in the group
  raw_binary_rewards     1 for the highest mean raw score, 0 for the rest (a reward: centre it)
  instance_norm_rewards  z-score of the valid scores within each instance, invalid -1, mean
  rank_uniform_rewards   the same mid-ranks mapped uniformly onto [1, -1], invalid -1, mean

Choices:
  * `G` in the shaping is the number of solvers in the group (padded solvers excluded), not the
    number of valid ones, as in the paper's formula; ranks run over valid solvers only.
  * G <= 3 is allowed with the denominator max(G - 3, 1); a warning is raised on the host when
    the group size is known there (never inside jit).
  * Raw-GRPO / Raw-Binary: an invalid instance scores the worst valid score on that instance, or
    0 when no solver is valid there. Standard deviation over the group with ddof = 0, eps 1e-6.
    Raw-Binary gives 1 to every solver tied at the highest mean.
  * Instance-Norm: with fewer than two valid solvers or equal scores on an instance the z-score
    is 0 (the eps guard).
  * a valid score that is NaN is bad input: refused with an error naming the entry when the
    inputs are concrete; under tracing it yields NaN, never a silent rank.
  * feedback resolution compares feedback values for exact equality (scalar feedback only).
  * precision: the kernels run in float32, which merges distinct scores
    near 1e9 (AtCoder-style objectives: 1e9 and 1e9 + 1 are one float32). On the host, before
    any float32 cast, `_exact_scores` replaces what the kernels compare by exact stand-ins
    computed in float64: RiVER and Rank-uniform (ranks only) and feedback resolution
    (equality only) get each value's dense integer rank within its instance / group;
    Raw-GRPO, Raw-Binary and Instance-Norm (raw values; all invariant to a per-instance
    shift) get the scores minus the instance's lowest valid score. Under tracing the scores
    are used as given (the caller keeps them in a safe range).

Dimension letters: G solvers per group, M hidden instances; leading `...` dimensions (e.g. P
prompts) are batched.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

DEFAULT_EPS = 1e-6


def _masks(scores_GM, valid_GM, solver_mask_G, instance_mask_M):
    """Float scores and the boolean masks, broadcast to `[..., G, M]`; validity implies a real
    solver on a real instance."""
    scores_GM = jnp.asarray(scores_GM, jnp.float32)
    valid_GM = jnp.asarray(valid_GM, bool)
    if np.shape(valid_GM) != np.shape(scores_GM):
        raise ValueError(f"valid shape {np.shape(valid_GM)} differs from scores {scores_GM.shape}")
    if scores_GM.ndim < 2:
        raise ValueError(f"scores must be [..., G, M]; got shape {scores_GM.shape}")
    solver_G = (
        jnp.ones(scores_GM.shape[:-1], bool)
        if solver_mask_G is None
        else jnp.asarray(solver_mask_G, bool)
    )
    instance_M = (
        jnp.ones(scores_GM.shape[:-2] + scores_GM.shape[-1:], bool)
        if instance_mask_M is None
        else jnp.asarray(instance_mask_M, bool)
    )
    real_GM = solver_G[..., :, None] & instance_M[..., None, :]
    return scores_GM, valid_GM & real_GM, solver_G, instance_M


def _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, name: str) -> None:
    """Host-side checks, skipped under tracing: NaN valid scores, and the G <= 3 warning."""
    inputs = (scores_GM, valid_GM, solver_mask_G, instance_mask_M)
    if any(isinstance(x, jax.core.Tracer) for x in inputs):
        return
    scores = np.asarray(scores_GM, np.float32)
    valid = np.broadcast_to(np.asarray(valid_GM, bool), scores.shape)
    if solver_mask_G is not None:
        valid = valid & np.asarray(solver_mask_G, bool)[..., :, None]
    if instance_mask_M is not None:
        valid = valid & np.asarray(instance_mask_M, bool)[..., None, :]
    bad = np.argwhere(valid & np.isnan(scores))
    if bad.size:
        raise ValueError(f"{name}: scores{tuple(int(i) for i in bad[0])} is NaN but marked valid")
    if solver_mask_G is None:
        group_sizes = {scores.shape[-2]}
    else:
        group_sizes = set(np.sum(np.asarray(solver_mask_G, bool), axis=-1).ravel().tolist())
    small = sorted(g for g in group_sizes if 0 < g <= 3)
    if small:
        warnings.warn(
            f"{name}: group size(s) {small} <= 3; RiVER's shaping then uses the denominator "
            "max(G - 3, 1) and barely separates non-winners",
            stacklevel=3,
        )


def _concrete(*xs) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def _dense_ranks(values, axis: int) -> np.ndarray:
    """Dense integer rank (0 = smallest) of each float64 value among its `axis` neighbours;
    NaN stays NaN. Order and equality are exactly those of the float64 values."""
    x = np.moveaxis(np.asarray(values, np.float64), axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    sorted_ = np.take_along_axis(x, order, axis=-1)
    step = np.concatenate([np.zeros((*sorted_.shape[:-1], 1), bool),
                           sorted_[..., 1:] != sorted_[..., :-1]], axis=-1)
    dense_sorted = np.cumsum(step, axis=-1).astype(np.float64)
    dense = np.empty_like(dense_sorted)
    np.put_along_axis(dense, order, dense_sorted, axis=-1)
    dense = np.where(np.isnan(x), np.nan, dense)
    return np.moveaxis(dense, -1, axis).astype(np.float32)


def _exact_scores(scores_GM, valid_GM, how: str, solver_mask_G=None, instance_mask_M=None):
    """Stand-ins for the scores that float32 cannot merge (see the module docstring)."""
    if not _concrete(scores_GM, valid_GM, solver_mask_G, instance_mask_M):
        return scores_GM
    scores = np.asarray(scores_GM, np.float64)
    valid = np.broadcast_to(np.asarray(valid_GM, bool), scores.shape)
    if solver_mask_G is not None:
        valid = valid & np.asarray(solver_mask_G, bool)[..., :, None]
    if instance_mask_M is not None:
        valid = valid & np.asarray(instance_mask_M, bool)[..., None, :]
    if how == "rank":  # invalid entries never take part in a rank: give them the same rank
        return _dense_ranks(np.where(valid, scores, -np.inf), axis=-2)
    low_M = np.min(np.where(valid, scores, np.inf), axis=-2, keepdims=True)
    low_M = np.where(np.isfinite(low_M), low_M, 0.0)
    return (scores - low_M).astype(np.float32)


def _mid_ranks(scores_GM, valid_GM):
    """1-indexed mid-rank among the valid solvers of each instance (1 best); 0 where invalid."""
    s_i = scores_GM[..., :, None, :]  # [..., G, 1, M] the solver ranked
    s_j = scores_GM[..., None, :, :]  # [..., 1, G, M] the others
    v_j = valid_GM[..., None, :, :]
    better = jnp.sum(v_j & (s_j > s_i), axis=-2)
    tied = jnp.sum(v_j & (s_j == s_i), axis=-2) - 1  # minus itself
    rank_GM = 1.0 + better + 0.5 * tied
    nan_GM = valid_GM & jnp.isnan(scores_GM)
    return jnp.where(nan_GM, jnp.nan, jnp.where(valid_GM, rank_GM, 0.0))


def _group_size(solver_G):
    return jnp.sum(solver_G, axis=-1).astype(jnp.float32)[..., None, None]


def _instance_mean(value_GM, solver_G, instance_M):
    mask_GM = solver_G[..., :, None] & instance_M[..., None, :]
    count = jnp.sum(mask_GM, axis=-1)
    total = jnp.sum(jnp.where(mask_GM, value_GM, 0.0), axis=-1)
    return jnp.where(count > 0, total / jnp.maximum(count, 1), 0.0)


@jax.jit
def _river_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M):
    scores_GM, valid_GM, solver_G, instance_M = _masks(
        scores_GM, valid_GM, solver_mask_G, instance_mask_M
    )
    rank_GM = _mid_ranks(scores_GM, valid_GM)
    g = _group_size(solver_G)
    graded_GM = jnp.clip((g - 1.0 - rank_GM) / jnp.maximum(g - 3.0, 1.0), 0.0, 1.0) - 0.5
    shaped_GM = jnp.where(rank_GM == 1.0, 1.0, graded_GM)
    shaped_GM = jnp.where(valid_GM, shaped_GM, -1.0)
    return _instance_mean(shaped_GM, solver_G, instance_M)


def river_rewards(scores_GM, valid_GM, solver_mask_G=None, instance_mask_M=None) -> jax.Array:
    """RiVER's rank-induced winner-heavy reward `sbar` per solver: `[..., G]` in [-1, 1].

    Padded solvers (`solver_mask_G` False) get 0; padded instances are left out of the mean.
    """
    _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, "river_rewards")
    scores_GM = _exact_scores(scores_GM, valid_GM, "rank", solver_mask_G, instance_mask_M)
    return _river_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M)


def _mean_raw_score(scores_GM, valid_GM, solver_G, instance_M):
    """Mean score over instances, an invalid instance scoring the worst valid score there (0 if
    none is valid)."""
    worst_M = jnp.min(jnp.where(valid_GM, scores_GM, jnp.inf), axis=-2)
    fill_M = jnp.where(jnp.isfinite(worst_M), worst_M, 0.0)
    filled_GM = jnp.where(valid_GM, scores_GM, fill_M[..., None, :])
    return _instance_mean(filled_GM, solver_G, instance_M)


@jax.jit
def _raw_grpo_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M, eps):
    scores_GM, valid_GM, solver_G, instance_M = _masks(
        scores_GM, valid_GM, solver_mask_G, instance_mask_M
    )
    raw_G = _mean_raw_score(scores_GM, valid_GM, solver_G, instance_M)
    n = jnp.maximum(jnp.sum(solver_G, axis=-1, keepdims=True), 1)
    mean = jnp.sum(jnp.where(solver_G, raw_G, 0.0), axis=-1, keepdims=True) / n
    var = jnp.sum(jnp.where(solver_G, (raw_G - mean) ** 2, 0.0), axis=-1, keepdims=True) / n
    return jnp.where(solver_G, (raw_G - mean) / (jnp.sqrt(var) + eps), 0.0)


def raw_grpo_rewards(
    scores_GM, valid_GM, solver_mask_G=None, instance_mask_M=None, eps: float = DEFAULT_EPS
) -> jax.Array:
    """Raw-GRPO: group-normalised mean raw score, `[..., G]` (already an advantage)."""
    _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, "raw_grpo_rewards")
    scores_GM = _exact_scores(scores_GM, valid_GM, "shift", solver_mask_G, instance_mask_M)
    return _raw_grpo_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M, eps)


@jax.jit
def _raw_binary_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M):
    scores_GM, valid_GM, solver_G, instance_M = _masks(
        scores_GM, valid_GM, solver_mask_G, instance_mask_M
    )
    raw_G = _mean_raw_score(scores_GM, valid_GM, solver_G, instance_M)
    best = jnp.max(jnp.where(solver_G, raw_G, -jnp.inf), axis=-1, keepdims=True)
    return (solver_G & (raw_G == best)).astype(jnp.float32)


def raw_binary_rewards(scores_GM, valid_GM, solver_mask_G=None, instance_mask_M=None) -> jax.Array:
    """Raw-Binary: 1 for the highest mean raw score (all tied maxima), 0 otherwise: `[..., G]`."""
    _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, "raw_binary_rewards")
    scores_GM = _exact_scores(scores_GM, valid_GM, "shift", solver_mask_G, instance_mask_M)
    return _raw_binary_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M)


@jax.jit
def _instance_norm_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M, eps):
    scores_GM, valid_GM, solver_G, instance_M = _masks(
        scores_GM, valid_GM, solver_mask_G, instance_mask_M
    )
    n_M = jnp.maximum(jnp.sum(valid_GM, axis=-2, keepdims=True), 1)
    mean_M = jnp.sum(jnp.where(valid_GM, scores_GM, 0.0), axis=-2, keepdims=True) / n_M
    centred_GM = jnp.where(valid_GM, scores_GM - mean_M, 0.0)
    std_M = jnp.sqrt(jnp.sum(centred_GM**2, axis=-2, keepdims=True) / n_M)
    z_GM = jnp.where(valid_GM, centred_GM / (std_M + eps), -1.0)
    return _instance_mean(z_GM, solver_G, instance_M)


def instance_norm_rewards(
    scores_GM, valid_GM, solver_mask_G=None, instance_mask_M=None, eps: float = DEFAULT_EPS
) -> jax.Array:
    """Instance-Norm: per-instance z-scores of valid solvers, invalid -1, averaged: `[..., G]`."""
    _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, "instance_norm_rewards")
    scores_GM = _exact_scores(scores_GM, valid_GM, "shift", solver_mask_G, instance_mask_M)
    return _instance_norm_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M, eps)


@jax.jit
def _rank_uniform_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M):
    scores_GM, valid_GM, solver_G, instance_M = _masks(
        scores_GM, valid_GM, solver_mask_G, instance_mask_M
    )
    rank_GM = _mid_ranks(scores_GM, valid_GM)
    g = _group_size(solver_G)
    uniform_GM = 1.0 - 2.0 * (rank_GM - 1.0) / jnp.maximum(g - 1.0, 1.0)
    return _instance_mean(jnp.where(valid_GM, uniform_GM, -1.0), solver_G, instance_M)


def rank_uniform_rewards(
    scores_GM, valid_GM, solver_mask_G=None, instance_mask_M=None
) -> jax.Array:
    """Rank-uniform: mid-rank r -> 1 - 2 (r - 1) / (G - 1), invalid -1, averaged: `[..., G]`."""
    _check_host(scores_GM, valid_GM, solver_mask_G, instance_mask_M, "rank_uniform_rewards")
    scores_GM = _exact_scores(scores_GM, valid_GM, "rank", solver_mask_G, instance_mask_M)
    return _rank_uniform_jit(scores_GM, valid_GM, solver_mask_G, instance_mask_M)


def _exact_values(values_G):
    """Feedback values as dense ranks (exact equality classes) when concrete."""
    if not _concrete(values_G):
        return values_G
    return _dense_ranks(values_G, axis=-1)


@jax.jit
def _collision_log_probability(values_G, mask_G=None) -> jax.Array:
    """`log sum_z p_z^G`, the log-probability that a whole group lands on one feedback value,
    with `p_z` the empirical frequency of value `z` among the group's real members: `[...]`."""
    values_G = jnp.asarray(values_G, jnp.float32)
    mask_G = jnp.ones(values_G.shape, bool) if mask_G is None else jnp.asarray(mask_G, bool)
    g = jnp.sum(mask_G, axis=-1).astype(jnp.float32)
    same_GG = (values_G[..., :, None] == values_G[..., None, :]) & mask_G[..., None, :]
    n_G = jnp.maximum(jnp.sum(same_GG, axis=-1).astype(jnp.float32), 1.0)  # |{j: v_j == v_i}|
    g1 = jnp.maximum(g, 1.0)[..., None]
    # sum over values z of p_z^G = sum over members i of p_z(i)^G / n_z(i), in log space so
    # that (1/G)^G does not underflow for large groups
    log_terms_G = jnp.where(mask_G, g1 * jnp.log(n_G / g1) - jnp.log(n_G), -jnp.inf)
    return jnp.where(g > 0, jax.nn.logsumexp(log_terms_G, axis=-1), jnp.nan)


def group_feedback_resolution(values_G, mask_G=None) -> jax.Array:
    """GFR_G = -1/(G-1) log sum_z p_z^G (order-G Rényi entropy of the group's feedback): `[...]`.

    0 when every member got the same value; NaN for groups of fewer than two members.
    """
    return _feedback_resolution(_exact_values(values_G), mask_G)


@jax.jit
def _feedback_resolution(values_G, mask_G=None) -> jax.Array:
    log_collision = _collision_log_probability(values_G, mask_G)
    mask = jnp.ones(jnp.shape(values_G), bool) if mask_G is None else jnp.asarray(mask_G, bool)
    g = jnp.sum(mask, axis=-1).astype(jnp.float32)
    return jnp.where(g >= 2, -log_collision / jnp.maximum(g - 1.0, 1.0), jnp.nan)
