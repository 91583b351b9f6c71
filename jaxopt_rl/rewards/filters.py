"""Pre-execution filters: which optimization tests are used (docs/design/rewards.md §2).

A filter maps the raw optimization pool `T^O` of a problem to the used set `T^O_used`. Every
function here takes the pool as a boolean mask (`opt_mask_PT`: the test exists and is an
optimization test) and returns a mask that is a subset of it. Leading dimensions are free: the
natural call is per problem (`[P, T]`, with references `[P, T, H]`), but the same code runs on
rollouts (`[B, T]`, `[B, T, H]`).

  F_id       keep the whole pool
  F_abs(a)   keep t iff the aggregate reference duration dbar_t is defined and dbar_t < a seconds
  F_len(L)   keep t iff len(input) + len(expected output) <= L characters
  F_rel(r)   keep tests without a usable dbar_t; among the others drop the slowest r percent

Reference durations are expected already sanitised (`calibration.sanitize_reference_durations`).

Choices:
  * aggregate `A` is "mean" or "median"; the median of an even count is the mean of the two
    middle values (the linear quantile at 0.5).
  * F_rel drops `floor(r / 100 * n_rankable)` tests (spec), `r` given in percent. Tests tied on
    dbar_t at the cut are dropped in order of decreasing test index, so the result is
    deterministic and independent of padding.

Dimension letters: P problems (or B rollouts), T tests, H references, A any axis (a generic reduction).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxopt_rl.rewards.checks import check_choice, check_range
from jaxopt_rl.rewards.reductions import masked_quantile

AGGREGATES = ("mean", "median")


@functools.partial(jax.jit, static_argnames=("how",))
def aggregate_reference_duration(
    ref_duration_PTH: jax.Array, ref_mask_PTH: jax.Array, how: str = "mean"
) -> jax.Array:
    """`dbar_t = A(D_t)` over the usable references of each test: `[..., T]`, NaN if none."""
    check_choice(how, AGGREGATES, "how")
    ref_duration_PTH = jnp.asarray(ref_duration_PTH, jnp.float32)
    ref_mask_PTH = jnp.asarray(ref_mask_PTH, bool)
    if how == "median":
        return masked_quantile(ref_duration_PTH, ref_mask_PTH, 0.5)
    count_PT = jnp.sum(ref_mask_PTH, axis=-1)
    total_PT = jnp.sum(jnp.where(ref_mask_PTH, ref_duration_PTH, 0.0), axis=-1)
    return jnp.where(count_PT > 0, total_PT / jnp.maximum(count_PT, 1), jnp.nan)


def filter_identity(opt_mask_PT: jax.typing.ArrayLike) -> jax.Array:
    """F_id: the whole optimization pool is used."""
    return jnp.asarray(opt_mask_PT, bool)


def filter_absolute(
    opt_mask_PT: jax.typing.ArrayLike,
    ref_duration_PTH: jax.typing.ArrayLike,
    ref_mask_PTH: jax.typing.ArrayLike,
    threshold_s: jax.typing.ArrayLike,
    how: str = "mean",
    dbar_PT: jax.typing.ArrayLike | None = None,
) -> jax.Array:
    """F_abs(a): keep tests whose aggregate reference duration is defined and `< threshold_s`.

    `dbar_PT` (optional): `aggregate_reference_duration(ref_duration_PTH, ref_mask_PTH, how)`
    computed ahead (an environment's `ReferenceTable` holds it); by default computed here."""
    check_range(threshold_s, 0.0, float("inf"), "threshold_s")
    return _filter_absolute(opt_mask_PT, ref_duration_PTH, ref_mask_PTH, threshold_s, dbar_PT,
                            how=how)


@functools.partial(jax.jit, static_argnames=("how",))
def _filter_absolute(opt_mask_PT, ref_duration_PTH, ref_mask_PTH, threshold_s, dbar_PT, how):
    if dbar_PT is None:
        dbar_PT = aggregate_reference_duration(ref_duration_PTH, ref_mask_PTH, how=how)
    # NaN < a is false: tests without usable references are dropped, as §2 requires
    return jnp.asarray(opt_mask_PT, bool) & (dbar_PT < threshold_s)


@jax.jit
def filter_length(
    opt_mask_PT: jax.typing.ArrayLike,
    io_chars_PT: jax.typing.ArrayLike,
    max_chars: jax.typing.ArrayLike,
) -> jax.Array:
    """F_len(L): keep tests whose input + expected output have at most `max_chars` characters."""
    io_chars_PT = jnp.asarray(io_chars_PT)
    return jnp.asarray(opt_mask_PT, bool) & (io_chars_PT <= max_chars)


def filter_relative(
    opt_mask_PT: jax.typing.ArrayLike,
    ref_duration_PTH: jax.typing.ArrayLike,
    ref_mask_PTH: jax.typing.ArrayLike,
    drop_percent: jax.typing.ArrayLike,
    how: str = "mean",
    dbar_PT: jax.typing.ArrayLike | None = None,
) -> jax.Array:
    """F_rel(r): drop the slowest `floor(r/100 * n_rankable)` rankable tests, keep the rest.

    A test is rankable when it is in the pool and has a defined aggregate `dbar_t`; tests of
    the pool without one are always kept. `dbar_PT`: optional, as in `filter_absolute`.
    """
    check_range(drop_percent, 0.0, 100.0, "drop_percent")
    return _filter_relative(opt_mask_PT, ref_duration_PTH, ref_mask_PTH, drop_percent, dbar_PT,
                            how=how)


@functools.partial(jax.jit, static_argnames=("how",))
def _filter_relative(opt_mask_PT, ref_duration_PTH, ref_mask_PTH, drop_percent, dbar_PT, how):
    opt_mask_PT = jnp.asarray(opt_mask_PT, bool)
    if dbar_PT is None:
        dbar_PT = aggregate_reference_duration(ref_duration_PTH, ref_mask_PTH, how=how)
    rankable_PT = opt_mask_PT & ~jnp.isnan(dbar_PT)
    n_rankable_P = jnp.sum(rankable_PT, axis=-1)
    # r * n first, then / 100: exact for integer r, so r = 10 of n = 10 drops exactly one test
    n_drop_P = jnp.floor(
        jnp.asarray(drop_percent, jnp.float32) * n_rankable_P.astype(jnp.float32) / 100.0
    ).astype(jnp.int32)
    # stable ascending sort: among equal dbar_t, a higher test index sorts later and goes first
    order_PT = jnp.argsort(jnp.where(rankable_PT, dbar_PT, jnp.inf), axis=-1, stable=True)
    rank_PT = jnp.argsort(order_PT, axis=-1)
    dropped_PT = rankable_PT & (rank_PT >= (n_rankable_P - n_drop_P)[..., None])
    return opt_mask_PT & ~dropped_PT
