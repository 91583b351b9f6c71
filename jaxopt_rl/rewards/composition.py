"""Reward composition: the signals `(c_cor, c~, g, q)` -> one reward in [-1, 1]
(docs/design/rewards.md §6).

Quality maps turn the lower-is-better scalar `q` in [0, 1] into higher-is-better credit:

  bucket       m(q) = 1 if q == 0 else max(0, 0.9 - 0.1 * floor(10 * (q - 1e-6)))
  linear       m(q) = 1 - q
  range_third  m(q) = 1/3 + (2/3)(1 - q)
  range_half   m(q) = 1/2 + (1/2)(1 - q)

and `s(z) = 2z - 1` moves a [0, 1] signal to signed reward units. Families (`mapping="binary"`
uses the gate `g`; a graded mapping uses `m(q)` in its place):

  family        binary                          graded
  correctness   s(c_cor)                        (none)
  optimization  s(g)                            s(m(q))
  collapsed     +1 if c~ and g else -1          s(m(q)) if c~ else -1
  two_gate      -1 if not c~ else (1 if g else 0)   -1 if not c~ else m(q)
  additive      (s(c_cor) + s(g)) / 2           (s(c_cor) + s(m(q))) / 2
  multitask     per group: the correctness or the optimization reward (`multitask_rewards`)

The naive raw-duration baselines of the paper's D.5 (`naive_reward`) add a duration map to the
correctness reward: `R = c_cor + m(dbar) - 1`.

Choices:
  * a graded family with an undefined `q` (NaN) yields NaN exactly where `q` is used (correct
    solutions under collapsed / two-gate, every rollout under optimization / additive): an
    undefined quality is never silently turned into credit. The environment decides first
    what an unrankable rollout gets (e.g. `q_dur = 0` when ranking is inactive).
  * `correctness` with a graded mapping is refused (§6 defines no such reward).
  * naive: the duration normaliser of `m_lin` is `scale_s` (10 s, the paper's cap) and a source
    with no tests uses `empty_limit_s` (10 s), as the paper does.

Dimension letters: B rollouts, T tests.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards import records

FAMILIES = ("correctness", "optimization", "collapsed", "two_gate", "additive")
MAPPINGS = ("binary", "bucket", "linear", "range_third", "range_half")
NAIVE_MAPS = ("lin", "log")


# float32(1e-6) lies below the bucket map's shift 1e-6, so every float32 q <= it has q - 1e-6 < 0
# exactly (bin -1), although q - float32(1e-6) rounds to 0 at q = float32(1e-6)
_BUCKET_SHIFT = float(np.float32(1e-6))


def quality_bucket(q: jax.typing.ArrayLike) -> jax.Array:
    """Ten-bin map: 1 at q == 0, then 0.9, 0.8, ... for each further tenth of q."""
    q = jnp.asarray(q, jnp.float32)
    bin_ = jnp.where(q <= _BUCKET_SHIFT, -1.0, jnp.floor(10.0 * (q - _BUCKET_SHIFT)))
    # (9 - bin) / 10 rather than 0.9 - 0.1 * bin: exact at the bin edges (m(0.5) == 0.5)
    binned = jnp.maximum(0.0, (9.0 - bin_) / 10.0)
    return jnp.where(q == 0, 1.0, binned)


def quality_linear(q: jax.typing.ArrayLike) -> jax.Array:
    return 1.0 - jnp.asarray(q, jnp.float32)


def quality_range(q: jax.typing.ArrayLike, low: float) -> jax.Array:
    """Range-compressed map onto [low, 1]: the worst passing solution still gets `low`."""
    return low + (1.0 - low) * (1.0 - jnp.asarray(q, jnp.float32))


QUALITY_MAPS = {
    "bucket": quality_bucket,
    "linear": quality_linear,
    "range_third": functools.partial(quality_range, low=1.0 / 3.0),
    "range_half": functools.partial(quality_range, low=0.5),
}


def signed(z: jax.typing.ArrayLike) -> jax.Array:
    """`s(z) = 2z - 1`: a [0, 1] signal in signed reward units."""
    return 2.0 * jnp.asarray(z, jnp.float32) - 1.0


def _check(value: str, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(allowed)}")


@functools.partial(jax.jit, static_argnames=("family", "mapping"))
def compose(
    c_cor_B: jax.typing.ArrayLike,
    c_strict_B: jax.typing.ArrayLike,
    g_B: jax.typing.ArrayLike,
    q_B: jax.typing.ArrayLike,
    family: str,
    mapping: str = "binary",
) -> jax.Array:
    """The reward of one composition family for every rollout: `[B]` in [-1, 1].

    `c_cor_B`, `c_strict_B` (c~) and `g_B` are booleans (or 0/1), `q_B` a quality in [0, 1],
    0 best. `mapping="binary"` uses `g`; the graded mappings use `m(q)`.
    """
    _check(family, FAMILIES, "family")
    _check(mapping, MAPPINGS, "mapping")
    if family == "correctness" and mapping != "binary":
        raise ValueError(f"family='correctness' has no graded form; got mapping={mapping!r}")
    c_cor = jnp.asarray(c_cor_B, bool)
    c_strict = jnp.asarray(c_strict_B, bool)
    # `credit` in [0, 1]: the optimization-side signal, binary gate or mapped quality
    if mapping == "binary":
        credit = jnp.asarray(g_B, bool).astype(jnp.float32)
    else:
        credit = QUALITY_MAPS[mapping](q_B)
    if family == "correctness":
        reward = signed(c_cor)
    elif family == "optimization":
        reward = signed(credit)
    elif family == "collapsed":
        # binary: +1 iff c~ and g; graded: s(m(q)) under the correctness gate
        reward = jnp.where(c_strict, signed(credit), -1.0)
    elif family == "two_gate":
        reward = jnp.where(c_strict, credit, -1.0)
    else:
        reward = 0.5 * (signed(c_cor) + signed(credit))
    return reward.astype(jnp.float32)


@functools.partial(jax.jit, static_argnames=("mapping",))
def multitask_rewards(
    c_cor_B: jax.typing.ArrayLike,
    c_strict_B: jax.typing.ArrayLike,
    g_B: jax.typing.ArrayLike,
    q_B: jax.typing.ArrayLike,
    use_optimization_B: jax.typing.ArrayLike,
    mapping: str = "binary",
) -> jax.Array:
    """Multitask: rollouts whose group is assigned the optimization task get the
    optimization-only reward, the others the correctness-only reward. The caller broadcasts a
    per-group choice `[G]` to its rollouts (`use_optimization_G[group_of_B]`)."""
    correctness = compose(c_cor_B, c_strict_B, g_B, q_B, "correctness")
    optimization = compose(c_cor_B, c_strict_B, g_B, q_B, "optimization", mapping)
    return jnp.where(jnp.asarray(use_optimization_B, bool), optimization, correctness)


def duration_map_lin(d: jax.typing.ArrayLike, scale_s: float = 10.0) -> jax.Array:
    """`m_lin(d) = clip(1 - d / scale, 0, 1)`: 1 for an instant program, 0 at the cap."""
    return jnp.clip(1.0 - jnp.asarray(d, jnp.float32) / scale_s, 0.0, 1.0)


def duration_map_log(d: jax.typing.ArrayLike) -> jax.Array:
    """`m_log(d) = clip((1 - log10(max(d, 1e-6))) / 3, 0, 1)`: 1 at or below 10 ms, 0 at 10 s."""
    d = jnp.maximum(jnp.asarray(d, jnp.float32), 1e-6)
    return jnp.clip((1.0 - jnp.log10(d)) / 3.0, 0.0, 1.0)


@functools.partial(jax.jit, static_argnames=("map",))
def naive_reward(
    c_cor_B: jax.typing.ArrayLike,
    duration_BT: jax.typing.ArrayLike,
    test_mask_BT: jax.typing.ArrayLike,
    limit: jax.typing.ArrayLike = 10.0,
    map: str = "lin",  # the paper's name for the duration map ("lin" or "log")
    *,
    status_BT: jax.typing.ArrayLike | None = None,
    scale_s: float = 10.0,
    empty_limit_s: float = 10.0,
) -> jax.Array:
    """Naive raw-duration reward `c_cor + m(dbar) - 1` over the tests of one source (D.5).

    `limit` is the effective limit per test (`[B, T]`, e.g. `cap_BT`) or one number of seconds.
    Durations that are missing (NaN), non-finite or non-positive are replaced by the limit
    before averaging; so are timeouts when `status_BT` is given (otherwise the caller records
    them at the limit). A rollout with no test in `test_mask_BT` gets `dbar = empty_limit_s`.
    """
    _check(map, NAIVE_MAPS, "map")
    duration_BT = jnp.asarray(duration_BT, jnp.float32)
    mask_BT = jnp.asarray(test_mask_BT, bool)
    limit_BT = jnp.broadcast_to(jnp.asarray(limit, jnp.float32), duration_BT.shape)
    usable_BT = jnp.isfinite(duration_BT) & (duration_BT > 0)
    if status_BT is not None:
        usable_BT = usable_BT & (jnp.asarray(status_BT) != records.TIMEOUT)
    effective_BT = jnp.where(usable_BT, duration_BT, limit_BT)
    count_B = jnp.sum(mask_BT, axis=-1)
    total_B = jnp.sum(jnp.where(mask_BT, effective_BT, 0.0), axis=-1)
    dbar_B = jnp.where(count_B > 0, total_B / jnp.maximum(count_B, 1), empty_limit_s)
    credit_B = duration_map_lin(dbar_B, scale_s) if map == "lin" else duration_map_log(dbar_B)
    return jnp.asarray(c_cor_B, bool).astype(jnp.float32) + credit_B - 1.0
