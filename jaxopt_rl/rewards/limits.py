"""Intra-execution limits: the intended per-test limit `lambda_t` and post-filtering
(docs/design/rewards.md §3).

Execution always runs under the service cap (10 s by default). An environment may then impose a
tighter intended limit `lambda_t` per optimization test, applied after the fact: a `success`
with `duration >= lambda_t` becomes a `timeout` (`post_filter`).

  default           lambda_t = tau_t, the test's own cap
  absolute(l)       lambda_t = l
  relative(p)       lambda_t = the p-th percentile of D_t
  ranked(p, B)      rank references by their mean per-test rank on the used tests, keep the best
                    p percent H_p, lambda_t = B({d~_{t,h} : h in H_p}), B = max or median

Every limit function returns `(limit_PT, used_PT)`: the limit (NaN where none exists) and the
used-test mask with the tests that need `D_t` but have none removed.

Choices:
  * percentiles `p` are given in percent, like the paper's grid {10, ..., 90}.
  * relative: the quantile interpolation is NumPy's default "linear" (type 7), configurable
    through `interpolation` ("lower", "higher", "midpoint" also accepted).
  * ranked: a reference's per-test rank is its mid-rank among the usable references on that
    test, normalised to `(rank - 1) / max(n_t - 1, 1)` so that tests with more references do
    not weigh more (a lone reference on a test scores 0). Its score is the mean over the used
    tests where it has a duration; a reference with none is not ranked. `H_p` keeps
    `max(1, ceil(p / 100 * n_ranked))` references; ties at the cut go to the lower index.
    Mean ranks within `RANK_TOLERANCE` (1e-6) of each other are ties: float32 sums of equal
    fractions in different orders differ in the last bits, which must not decide the cut.
  * post-filtering changes the status only; the measured duration is kept (ranking
    environments use infinite limits, so durations they see are never rewritten).

Dimension letters: P problems (or B rollouts), T tests, H references.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards import records
from jaxopt_rl.rewards.checks import check_choice, check_range
from jaxopt_rl.rewards.pool import reference_ranks
from jaxopt_rl.rewards.reductions import masked_quantile

RANKED_AGGREGATES = ("max", "median")
# mean normalised ranks closer than this are a tie (resolved by the lower index); real gaps
# between distinct mean ranks are >= 1 / (2 * (n_t - 1) * n_tests), about 6e-5 at 64 x 128
RANK_TOLERANCE = 1e-6


@jax.jit
def default_limit(
    cap_PT: jax.typing.ArrayLike, used_PT: jax.typing.ArrayLike
) -> tuple[jax.Array, jax.Array]:
    """`lambda_t = tau_t`: the intended limit is the cap the test ran under."""
    return jnp.asarray(cap_PT, jnp.float32), jnp.asarray(used_PT, bool)


@jax.jit
def absolute_limit(
    used_PT: jax.typing.ArrayLike, limit_s: jax.typing.ArrayLike
) -> tuple[jax.Array, jax.Array]:
    """`lambda_t = l` seconds on every test."""
    used_PT = jnp.asarray(used_PT, bool)
    return jnp.full(used_PT.shape, limit_s, jnp.float32), used_PT


def relative_limit(
    ref_duration_PTH: jax.typing.ArrayLike,
    ref_mask_PTH: jax.typing.ArrayLike,
    used_PT: jax.typing.ArrayLike,
    percentile: jax.typing.ArrayLike,
    interpolation: str = "linear",
    quantile_PT: jax.typing.ArrayLike | None = None,
) -> tuple[jax.Array, jax.Array]:
    """`lambda_t = quantile(D_t, p / 100)`; tests without usable references leave the used set.

    `quantile_PT` (optional): that quantile computed ahead (an environment's `ReferenceTable`
    holds it: it depends on the references only); by default computed here (a sort over H)."""
    check_range(percentile, 0.0, 100.0, "percentile")
    check_choice(interpolation, ("linear", "lower", "higher", "midpoint"), "interpolation")
    return _relative_limit(
        ref_duration_PTH, ref_mask_PTH, used_PT, percentile, quantile_PT,
        interpolation=interpolation,
    )


@functools.partial(jax.jit, static_argnames=("interpolation",))
def _relative_limit(ref_duration_PTH, ref_mask_PTH, used_PT, percentile, quantile_PT,
                    interpolation):
    if quantile_PT is None:
        quantile = jnp.asarray(percentile, jnp.float32) / 100.0
        quantile_PT = masked_quantile(ref_duration_PTH, ref_mask_PTH, quantile, interpolation)
    limit_PT = jnp.asarray(quantile_PT, jnp.float32)
    used_PT = jnp.asarray(used_PT, bool) & ~jnp.isnan(limit_PT)
    return limit_PT, used_PT


def reference_mean_rank(
    ref_duration_PTH: jax.typing.ArrayLike,
    ref_mask_PTH: jax.typing.ArrayLike,
    used_PT: jax.typing.ArrayLike,
    mid_rank_PTH: jax.typing.ArrayLike | None = None,
) -> jax.Array:
    """Mean normalised per-test mid-rank of each reference on the used tests: `[P, H]`.

    0 is fastest. NaN for a reference without a usable duration on any used test.
    `mid_rank_PTH` (optional) is `pool.reference_ranks(ref_duration_PTH, ref_mask_PTH,
    "average")` computed ahead (the environment's `ReferenceTable` holds it); by default it is
    computed here, in H loop passes over `[P, T, H]` (no `[P, T, H, H]` pairwise tensor).
    """
    if mid_rank_PTH is not None and np.shape(mid_rank_PTH) != np.shape(ref_duration_PTH):
        raise ValueError(f"mid_rank shape {np.shape(mid_rank_PTH)}, expected "
                         f"{np.shape(ref_duration_PTH)}")
    return _reference_mean_rank(ref_duration_PTH, ref_mask_PTH, used_PT, mid_rank_PTH)


@jax.jit
def _reference_mean_rank(ref_duration_PTH, ref_mask_PTH, used_PT, mid_rank_PTH):
    ref_mask_PTH = jnp.asarray(ref_mask_PTH, bool)
    usable_PTH = ref_mask_PTH & jnp.asarray(used_PT, bool)[..., None]
    if mid_rank_PTH is None:
        # a test is used or not as a whole, so ranks among the references usable on the test
        # are the ranks among the usable ones on the used tests
        mid_rank_PTH = reference_ranks(ref_duration_PTH, ref_mask_PTH, "average")
    n_PT = jnp.sum(usable_PTH, axis=-1)
    rank_PTH = jnp.asarray(mid_rank_PTH, jnp.float32) / jnp.maximum(n_PT - 1, 1)[..., None]
    count_PH = jnp.sum(usable_PTH, axis=-2)
    total_PH = jnp.sum(jnp.where(usable_PTH, rank_PTH, 0.0), axis=-2)
    return jnp.where(count_PH > 0, total_PH / jnp.maximum(count_PH, 1), jnp.nan)


def ranked_reference_limit(
    ref_duration_PTH: jax.typing.ArrayLike,
    ref_mask_PTH: jax.typing.ArrayLike,
    used_PT: jax.typing.ArrayLike,
    percentile: jax.typing.ArrayLike,
    how: str = "max",
    mid_rank_PTH: jax.typing.ArrayLike | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Ranked-reference limit: `B` (max or median) of the best `p` percent of references.

    `mid_rank_PTH`: optional precomputed ranks, as in `reference_mean_rank`."""
    check_range(percentile, 0.0, 100.0, "percentile")
    check_choice(how, RANKED_AGGREGATES, "how")
    return _ranked_reference_limit(ref_duration_PTH, ref_mask_PTH, used_PT, percentile,
                                   mid_rank_PTH, how=how)


@functools.partial(jax.jit, static_argnames=("how",))
def _ranked_reference_limit(ref_duration_PTH, ref_mask_PTH, used_PT, percentile, mid_rank_PTH,
                            how):
    ref_duration_PTH = jnp.asarray(ref_duration_PTH, jnp.float32)
    ref_mask_PTH = jnp.asarray(ref_mask_PTH, bool)
    used_PT = jnp.asarray(used_PT, bool)
    score_PH = reference_mean_rank(ref_duration_PTH, ref_mask_PTH, used_PT, mid_rank_PTH)
    ranked_PH = ~jnp.isnan(score_PH)
    n_ranked_P = jnp.sum(ranked_PH, axis=-1).astype(jnp.float32)
    n_keep_P = jnp.maximum(1.0, jnp.ceil(jnp.asarray(percentile, jnp.float32) * n_ranked_P / 100))
    # position = references strictly better, plus tied ones (within RANK_TOLERANCE: equal in
    # exact arithmetic, whatever float32 summation order made of them) of lower index
    key_PH = jnp.where(ranked_PH, score_PH, jnp.inf)
    mine_PH1, other_P1H = key_PH[..., :, None], key_PH[..., None, :]
    tied_PHH = jnp.abs(other_P1H - mine_PH1) <= RANK_TOLERANCE
    lower_HH = jnp.arange(key_PH.shape[-1])[None, :] < jnp.arange(key_PH.shape[-1])[:, None]
    before_PHH = (other_P1H < mine_PH1 - RANK_TOLERANCE) | (tied_PHH & lower_HH)
    position_PH = jnp.sum(before_PHH, axis=-1)
    kept_PH = ranked_PH & (position_PH < n_keep_P[..., None])
    kept_PTH = ref_mask_PTH & kept_PH[..., None, :]
    if how == "max":
        has_PT = jnp.any(kept_PTH, axis=-1)
        best_PT = jnp.max(jnp.where(kept_PTH, ref_duration_PTH, -jnp.inf), axis=-1)
        limit_PT = jnp.where(has_PT, best_PT, jnp.nan)
    else:
        limit_PT = masked_quantile(ref_duration_PTH, kept_PTH, 0.5)
    return limit_PT, used_PT & ~jnp.isnan(limit_PT)


@jax.jit
def post_filter(
    status_BT: jax.typing.ArrayLike,
    duration_BT: jax.typing.ArrayLike,
    limit_BT: jax.typing.ArrayLike,
) -> jax.Array:
    """Turn `success` with `duration >= limit` into `timeout`; other statuses pass unchanged.

    A NaN limit (no intended limit) never converts anything. The dtype of `status_BT` is kept.
    """
    status_BT = jnp.asarray(status_BT)
    over_BT = jnp.asarray(duration_BT, jnp.float32) >= jnp.asarray(limit_BT, jnp.float32)
    converted_BT = (status_BT == records.SUCCESS) & over_BT
    return jnp.where(converted_BT, jnp.asarray(records.TIMEOUT, status_BT.dtype), status_BT)
