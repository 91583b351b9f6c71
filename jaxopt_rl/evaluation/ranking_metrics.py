"""The 17 ranking metrics of the paper's Appendix D.3 (docs/design/rewards.md §4), for the metric
study and the simulator.

Each metric scores one candidate `y` (durations `cand_BT`) against the reference pool
(`ref_BTH`, `ref_mask_BTH`) over its tests `T` = tests in `test_mask_BT` with at least one usable
reference. All values are fractions in [0, 1] (multiply by 100 for the paper's percentile
points) and NaN where the metric is undefined. Per-test percentiles use the metric-sweep tie
rule by default (`ties="average"`, mid-rank), configurable like `percentiles.per_test_percentile`.

   #  name                              direction  definition
   1  mean_percentile                   lower      mean_t p_t (this is QAR)
   2  median_percentile                 lower      median_t p_t
   3  trimmed_mean_percentile           lower      mean after dropping m = max(1, floor(0.1|T|))
                                                   lowest and highest p_t; needs |T| >= 5
   4  log_mean_percentile               lower      mean_t p_t of log(max(d, 1e-6)) (rank-equivalent
                                                   to 1 except where the 1 µs floor creates ties)
   5  top25_share                       higher     mean_t 1{p_t < 0.25}
   6  top50_share                       higher     mean_t 1{p_t < 0.50}
   7  total_duration_percentile         lower      percentile of sum_t delta_t among the
                                                   references' totals over their usable tests of T
   8  slope_percentile                  lower      percentile of beta in delta_t = alpha + beta w_t
                                                   (least squares, w_t = median of D_t) among the
                                                   references' slopes
   9  zero_intercept_slope_percentile   lower      same with delta_t = beta w_t
  10  win_rate_mean                     higher     mean_t 1{delta_t < mean(D_t)}
  11  win_rate_median                   higher     mean_t 1{delta_t < median(D_t)}
  12  mean_percentile_drop_fastest10    lower      metric 1 after dropping the 10 % of tests with
  13  median_percentile_drop_fastest10  lower        the lowest mean reference duration (2 likewise)
  14  mean_percentile_drop_slowest25    lower      ... the 25 % with the highest
  15  median_percentile_drop_slowest25  lower
  16  mean_percentile_drop_slowest50    lower      ... the 50 % with the highest
  17  median_percentile_drop_slowest50  lower

Metrics 7-9 rank the candidate among per-reference values.

Choices:
  * filtered variants drop `max(1, floor(f * |T|))` tests (ties in mean reference duration are
    broken by test index) and are defined when at least one test remains.
  * a slope needs two tests with different `w_t` (with intercept) or a nonzero `sum w_t²`
    (without); a reference whose slope or total is undefined is left out of the ranking.
  * slopes and totals are compared with a relative tolerance of 1e-5: they are float32 sums
    whose rounding depends on summation order, so equal values must still tie.

Dimension letters: B rollouts, T tests, H references.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxopt_rl.rewards.checks import check_ties
from jaxopt_rl.rewards.reductions import masked_quantile

VALUE_RTOL = 1e-5


def _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT):
    cand_BT = jnp.asarray(cand_BT, jnp.float32)
    ref_BTH = jnp.asarray(ref_BTH, jnp.float32)
    usable_BTH = jnp.asarray(ref_mask_BTH, bool)
    tests_BT = jnp.asarray(test_mask_BT, bool) & jnp.any(usable_BTH, axis=-1)
    return cand_BT, ref_BTH, usable_BTH, tests_BT


def _guard(metric_B, cand_BT, tests_BT):
    """A NaN candidate duration on one of its tests makes the metric NaN, never a value."""
    return jnp.where(jnp.any(tests_BT & jnp.isnan(cand_BT), axis=-1), jnp.nan, metric_B)


def _percentiles(cand_BT, ref_BTH, usable_BTH, ties):
    """Per-test percentile of the candidate among the usable references, NaN where none."""
    n_BT = jnp.sum(usable_BTH, axis=-1)
    less_BT = jnp.sum(usable_BTH & (ref_BTH < cand_BT[..., None]), axis=-1).astype(jnp.float32)
    if ties == "average":
        tied_BT = jnp.sum(usable_BTH & (ref_BTH == cand_BT[..., None]), axis=-1)
        less_BT = less_BT + 0.5 * tied_BT
    return jnp.where(n_BT > 0, less_BT / jnp.maximum(n_BT, 1), jnp.nan)


def _masked_mean(values, mask, axis=-1):
    count = jnp.sum(mask, axis=axis)
    total = jnp.sum(jnp.where(mask, values, 0.0), axis=axis)
    return jnp.where(count > 0, total / jnp.maximum(count, 1), jnp.nan)


def _rank_among(value_B, others_BH, valid_BH, ties):
    """Percentile of `value` among the valid `others` (lower value = faster = 0)."""
    scale_BH = VALUE_RTOL * jnp.maximum(jnp.abs(value_B[:, None]), jnp.abs(others_BH))
    tied_BH = valid_BH & (jnp.abs(others_BH - value_B[:, None]) <= scale_BH)
    less_BH = valid_BH & ~tied_BH & (others_BH < value_B[:, None])
    count_B = jnp.sum(less_BH, axis=-1).astype(jnp.float32)
    if ties == "average":
        count_B = count_B + 0.5 * jnp.sum(tied_BH, axis=-1)
    n_B = jnp.sum(valid_BH, axis=-1)
    defined_B = (n_B > 0) & ~jnp.isnan(value_B)
    return jnp.where(defined_B, count_B / jnp.maximum(n_B, 1), jnp.nan)


# ---- percentile aggregations (metrics 1-6, 12-17) ------------------------------------------


@functools.partial(jax.jit, static_argnames=("ties",))
def mean_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
    cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT)
    p_BT = _percentiles(cand_BT, ref_BTH, usable_BTH, ties)
    return _guard(_masked_mean(p_BT, tests_BT), cand_BT, tests_BT)


@functools.partial(jax.jit, static_argnames=("ties",))
def median_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
    cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT)
    p_BT = _percentiles(cand_BT, ref_BTH, usable_BTH, ties)
    return _guard(masked_quantile(p_BT, tests_BT, 0.5), cand_BT, tests_BT)


@functools.partial(jax.jit, static_argnames=("ties",))
def trimmed_mean_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
    cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT)
    p_BT = _percentiles(cand_BT, ref_BTH, usable_BTH, ties)
    sorted_BT = jnp.sort(jnp.where(tests_BT, p_BT, jnp.inf), axis=-1)
    n_B = jnp.sum(tests_BT, axis=-1)
    m_B = jnp.maximum(1, n_B // 10)  # floor(0.1 n) for integers
    position_T = jnp.arange(p_BT.shape[-1])
    kept_BT = (position_T >= m_B[:, None]) & (position_T < (n_B - m_B)[:, None])
    trimmed_B = jnp.where(n_B >= 5, _masked_mean(sorted_BT, kept_BT), jnp.nan)
    return _guard(trimmed_B, cand_BT, tests_BT)


@functools.partial(jax.jit, static_argnames=("ties",))
def log_mean_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
    cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT)
    log_cand_BT = jnp.log(jnp.maximum(cand_BT, 1e-6))
    log_ref_BTH = jnp.log(jnp.maximum(ref_BTH, 1e-6))
    p_BT = _percentiles(log_cand_BT, log_ref_BTH, usable_BTH, ties)
    return _guard(_masked_mean(p_BT, tests_BT), cand_BT, tests_BT)


def _top_share(k: float):
    @functools.partial(jax.jit, static_argnames=("ties",))
    def top_share(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
        cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(
            cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT
        )
        p_BT = _percentiles(cand_BT, ref_BTH, usable_BTH, ties)
        share_B = _masked_mean((p_BT < k).astype(jnp.float32), tests_BT)
        return _guard(share_B, cand_BT, tests_BT)

    return top_share


top25_share = _top_share(0.25)
top50_share = _top_share(0.50)


def _filtered(fraction: float, drop: str, aggregate: str):
    """Metric 1 or 2 after dropping the fastest or slowest `fraction` of tests by mean
    reference duration."""

    @functools.partial(jax.jit, static_argnames=("ties",))
    def filtered(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
        cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(
            cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT
        )
        dbar_BT = _masked_mean(ref_BTH, usable_BTH)
        order_BT = jnp.argsort(jnp.where(tests_BT, dbar_BT, jnp.inf), axis=-1, stable=True)
        rank_BT = jnp.argsort(order_BT, axis=-1)  # 0 = fastest test
        n_B = jnp.sum(tests_BT, axis=-1)
        n_drop_B = jnp.maximum(1, jnp.floor(fraction * n_B).astype(jnp.int32))
        if drop == "fastest":
            kept_BT = tests_BT & (rank_BT >= n_drop_B[:, None])
        else:
            kept_BT = tests_BT & (rank_BT < (n_B - n_drop_B)[:, None])
        p_BT = _percentiles(cand_BT, ref_BTH, usable_BTH, ties)
        if aggregate == "mean":
            return _guard(_masked_mean(p_BT, kept_BT), cand_BT, tests_BT)
        return _guard(masked_quantile(p_BT, kept_BT, 0.5), cand_BT, tests_BT)

    return filtered


# ---- duration-level metrics (7-11) ---------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("ties",))
def total_duration_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
    cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT)
    counted_BTH = usable_BTH & tests_BT[..., None]
    cand_total_B = jnp.sum(jnp.where(tests_BT, cand_BT, 0.0), axis=-1)
    cand_total_B = jnp.where(jnp.any(tests_BT, axis=-1), cand_total_B, jnp.nan)
    ref_total_BH = jnp.sum(jnp.where(counted_BTH, ref_BTH, 0.0), axis=-2)
    return _rank_among(cand_total_B, ref_total_BH, jnp.any(counted_BTH, axis=-2), ties)


def _difficulty(ref_BTH, usable_BTH):
    """`w_t`: the median usable reference duration of each test."""
    return masked_quantile(ref_BTH, usable_BTH, 0.5)


def _slope(d_BAT, w_BT, mask_BAT, intercept: bool):
    """Least-squares slope of durations on `w` over the masked tests, NaN where undefined.

    `A` is any middle axis (1 for the candidate, H for the references)."""
    w_BAT = jnp.broadcast_to(w_BT[:, None, :], d_BAT.shape)
    n = jnp.sum(mask_BAT, axis=-1)
    if intercept:
        w_mean = _masked_mean(w_BAT, mask_BAT)
        d_mean = _masked_mean(d_BAT, mask_BAT)
        dw = jnp.where(mask_BAT, w_BAT - w_mean[..., None], 0.0)
        dd = jnp.where(mask_BAT, d_BAT - d_mean[..., None], 0.0)
        sxx = jnp.sum(dw * dw, axis=-1)
        sxy = jnp.sum(dw * dd, axis=-1)
        defined = (n >= 2) & (sxx > 0)
    else:
        ww = jnp.where(mask_BAT, w_BAT, 0.0)
        sxx = jnp.sum(ww * ww, axis=-1)
        sxy = jnp.sum(ww * jnp.where(mask_BAT, d_BAT, 0.0), axis=-1)
        defined = (n >= 1) & (sxx > 0)
    return jnp.where(defined, sxy / jnp.where(defined, sxx, 1.0), jnp.nan)


def _slope_metric(intercept: bool):
    @functools.partial(jax.jit, static_argnames=("ties",))
    def slope_percentile(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
        cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(
            cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT
        )
        w_BT = _difficulty(ref_BTH, usable_BTH)
        cand_slope_B = _slope(cand_BT[:, None, :], w_BT, tests_BT[:, None, :], intercept)[:, 0]
        ref_mask_BHT = jnp.swapaxes(usable_BTH & tests_BT[..., None], 1, 2)
        ref_slope_BH = _slope(jnp.swapaxes(ref_BTH, 1, 2), w_BT, ref_mask_BHT, intercept)
        return _rank_among(cand_slope_B, ref_slope_BH, ~jnp.isnan(ref_slope_BH), ties)

    return slope_percentile


slope_percentile = _slope_metric(intercept=True)
zero_intercept_slope_percentile = _slope_metric(intercept=False)


def _win_rate(how: str):
    @functools.partial(jax.jit, static_argnames=("ties",))
    def win_rate(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties="average"):
        del ties  # a win is strict; no rank is involved
        cand_BT, ref_BTH, usable_BTH, tests_BT = _prepare(
            cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT
        )
        if how == "mean":
            summary_BT = _masked_mean(ref_BTH, usable_BTH)
        else:
            summary_BT = masked_quantile(ref_BTH, usable_BTH, 0.5)
        wins_B = _masked_mean((cand_BT < summary_BT).astype(jnp.float32), tests_BT)
        return _guard(wins_B, cand_BT, tests_BT)

    return win_rate


win_rate_mean = _win_rate("mean")
win_rate_median = _win_rate("median")


# ---- registry ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RankingMetric:
    """One metric: `metric(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties=...) -> [B]`."""

    name: str
    fn: Callable[..., jax.Array]
    higher_is_better: bool
    description: str

    def __call__(self, cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties: str = "average"):
        check_ties(ties)
        return self.fn(cand_BT, ref_BTH, ref_mask_BTH, test_mask_BT, ties=ties)


# (name, metric, higher is better, description): one row a metric, in the docstring's order
_TABLE = [
    ("mean_percentile", mean_percentile, False, "mean per-test percentile (QAR)"),
    ("median_percentile", median_percentile, False, "median per-test percentile"),
    ("trimmed_mean_percentile", trimmed_mean_percentile, False,
     "mean percentile without the lowest and highest 10 % of tests (|T| >= 5)"),
    ("log_mean_percentile", log_mean_percentile, False, "mean percentile of log durations"),
    ("top25_share", top25_share, True, "share of tests in the fastest quarter"),
    ("top50_share", top50_share, True, "share of tests in the fastest half"),
    ("total_duration_percentile", total_duration_percentile, False,
     "percentile of the total duration among the references' totals"),
    ("slope_percentile", slope_percentile, False,
     "percentile of the least-squares slope on reference difficulty (with intercept)"),
    ("zero_intercept_slope_percentile", zero_intercept_slope_percentile, False,
     "percentile of the zero-intercept slope on reference difficulty"),
    ("win_rate_mean", win_rate_mean, True, "share of tests faster than mean(D_t)"),
    ("win_rate_median", win_rate_median, True, "share of tests faster than median(D_t)"),
] + [
    (f"{aggregate}_percentile_drop_{drop}{round(fraction * 100)}",
     _filtered(fraction, drop, aggregate), False,
     f"{aggregate} percentile without the {drop} {round(fraction * 100)} % of tests")
    for fraction, drop in ((0.10, "fastest"), (0.25, "slowest"), (0.50, "slowest"))
    for aggregate in ("mean", "median")
]
RANKING_METRICS: dict[str, RankingMetric] = {
    name: RankingMetric(name, fn, higher_is_better, description)
    for name, fn, higher_is_better, description in _TABLE
}
