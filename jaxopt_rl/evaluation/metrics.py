"""Evaluation metrics: pass@k, pass@k(p_tau) and speed win rates (docs/design/rewards.md §8).

  pass@k(x)        = 1 - C(n - m, k) / C(n, k)   for n samples of which m pass
  pass@k(p_tau)(x) = the same with m = #{samples with c~ = 1 and q_QP <= tau / 100}
  WR               = wins / (wins + losses) over problems, comparing one statistic of each
                     side's passing samples (fastest: WR_b; median: WR_m)

pass@k is computed in product form, `C(n-m, k) / C(n, k) = prod_{i<k} (n-m-i) / (n-i)`, which
never forms a factorial and stays in [0, 1] for any n. Every function returns per-problem
values; the benchmark number is their mean over problems with samples.

Choices:
  * k > n: all n samples are drawn (k is clipped to n), so pass@k = 1 iff m > 0. n = 0 gives
    NaN (no samples, no estimate).
  * pass@k(p100) is pure correctness: `q_QP` is ignored at tau >= 100, so an unrankable sample
    (q_QP NaN) still counts there; below 100 an unrankable sample never counts.
  * win rates compare total duration over the problem's tests (docs/design/sandbox-timing.md §6
    prefers it to a per-test majority); the median passing sample is the lower median (an actual
    sample); draws are exact equality of the two statistics (optionally within `draw_tolerance_s`):
    on host inputs the totals are exact integer-nanosecond sums (float64 -> int64 ns per
    test), so equal durations in another order, or any two sets of durations with the same
    nanosecond total, draw whatever the summation order (under tracing, float32 sums);
    problems where either side has no passing sample are excluded and counted.

Dimension letters (`jaxopt_rl.dimensions`): P problems, G samples per problem (the model's and the
baseline's counts may differ), T tests.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

WIN_STATISTICS = ("best", "median")


def _check_k(k) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k={k!r}: must be a positive integer")


def pass_at_k(n_P: jax.typing.ArrayLike, m_P: jax.typing.ArrayLike, k: int) -> jax.Array:
    """Unbiased pass@k per problem from `n` samples with `m` passing: `[P]` in [0, 1].

    NaN where `n == 0` or `m` lies outside [0, n] (host inputs with such rows are refused).
    """
    _check_k(k)
    if not any(isinstance(x, jax.core.Tracer) for x in (n_P, m_P)):
        n, m = np.asarray(n_P), np.asarray(m_P)
        for name, counts in (("n", n), ("m", m)):
            fractional = np.flatnonzero(np.broadcast_to(np.asarray(counts, np.float64) % 1 != 0,
                                                        np.broadcast(n, m).shape))
            if fractional.size:
                i = int(fractional[0])
                raise ValueError(f"pass_at_k: problem {i} has a non-integer count {name} = "
                                 f"{np.broadcast_to(counts, np.broadcast(n, m).shape).flat[i]}")
        bad = np.flatnonzero(np.broadcast_to((m < 0) | (m > n), np.broadcast(n, m).shape))
        if bad.size:
            raise ValueError(f"pass_at_k: problem {int(bad[0])} has m outside [0, n]")
    return _pass_at_k(n_P, m_P, k=int(k))


@functools.partial(jax.jit, static_argnames=("k",))
def _pass_at_k(n_P, m_P, k):
    n_P = jnp.asarray(n_P, jnp.float32)
    m_P = jnp.asarray(m_P, jnp.float32)
    k_P = jnp.minimum(float(k), n_P)
    i_K = jnp.arange(k, dtype=jnp.float32)
    active_PK = i_K < k_P[..., None]
    numerator_PK = jnp.maximum(n_P[..., None] - m_P[..., None] - i_K, 0.0)
    denominator_PK = jnp.maximum(n_P[..., None] - i_K, 1.0)
    all_fail_P = jnp.prod(jnp.where(active_PK, numerator_PK / denominator_PK, 1.0), axis=-1)
    valid_P = (n_P > 0) & (m_P >= 0) & (m_P <= n_P)
    return jnp.where(valid_P, 1.0 - all_fail_P, jnp.nan)


def pass_at_k_p_tau(
    c_strict_PG: jax.typing.ArrayLike,
    q_qp_PG: jax.typing.ArrayLike,
    tau: float,
    k: int,
    sample_mask_PG: jax.typing.ArrayLike | None = None,
) -> jax.Array:
    """pass@k(p_tau) per problem: a sample counts iff c~ = 1 and q_QP <= tau / 100: `[P]`.

    `tau` is in percent (p30 -> 30); tau >= 100 ignores q_QP (pure correctness).
    """
    _check_k(k)
    if not 0 <= tau <= 100:
        raise ValueError(f"tau={tau!r}: must lie in [0, 100] (percent)")
    c_strict_PG = jnp.asarray(c_strict_PG, bool)
    if sample_mask_PG is None:
        sample_mask_PG = jnp.ones(c_strict_PG.shape, bool)
    sample_mask_PG = jnp.asarray(sample_mask_PG, bool)
    passing_PG = sample_mask_PG & c_strict_PG
    if tau < 100:
        # NaN <= x is false: an unrankable sample never meets a speed threshold
        passing_PG = passing_PG & (jnp.asarray(q_qp_PG, jnp.float32) <= tau / 100.0)
    n_P = jnp.sum(sample_mask_PG, axis=-1)
    m_P = jnp.sum(passing_PG, axis=-1)
    return _pass_at_k(n_P, m_P, k=int(k))


class WinRates(NamedTuple):
    """Outcome of a speed comparison of a model against a baseline on the same problems."""

    win_rate: jax.Array  # wins / (wins + losses); NaN when every compared problem is a draw
    wins: jax.Array
    losses: jax.Array
    draws: jax.Array
    excluded: jax.Array  # problems where a side has no passing sample
    outcome_P: jax.Array  # +1 model faster, -1 baseline faster, 0 draw, NaN excluded


def _statistic(total_PG, passing_PG, how):
    """The fastest or the lower-median total duration among the passing samples: `[P]`."""
    sorted_PG = jnp.sort(jnp.where(passing_PG, total_PG, jnp.inf), axis=-1)
    count_P = jnp.sum(passing_PG, axis=-1)
    position_P = jnp.zeros_like(count_P) if how == "best" else jnp.maximum(count_P - 1, 0) // 2
    value_P = jnp.take_along_axis(sorted_PG, position_P[:, None], axis=-1)[:, 0]
    return jnp.where(count_P > 0, value_P, jnp.nan)


def _totals(duration_PGT, test_mask_PT):
    mask_P1T = jnp.asarray(test_mask_PT, bool)[:, None, :]
    return jnp.sum(jnp.where(mask_P1T, jnp.asarray(duration_PGT, jnp.float32), 0.0), axis=-1)


def win_rates(
    model_duration_PGT: jax.typing.ArrayLike,
    model_pass_PG: jax.typing.ArrayLike,
    base_duration_PGT: jax.typing.ArrayLike,
    base_pass_PG: jax.typing.ArrayLike,
    test_mask_PT: jax.typing.ArrayLike,
    how: str = "median",
    draw_tolerance_s: float = 0.0,
) -> WinRates:
    """WR_m (`how="median"`) or WR_b (`how="best"`) of a model against a baseline.

    Padded samples must be marked not passing; a passing sample needs a finite duration on
    every test of `test_mask_PT` (checked on host inputs).
    """
    if how not in WIN_STATISTICS:
        raise ValueError(f"how={how!r}: expected one of {', '.join(WIN_STATISTICS)}")
    for side, duration, passing in (
        ("model", model_duration_PGT, model_pass_PG),
        ("base", base_duration_PGT, base_pass_PG),
    ):
        if any(isinstance(x, jax.core.Tracer) for x in (duration, passing, test_mask_PT)):
            continue
        finite_PG = np.all(
            np.isfinite(np.asarray(duration)) | ~np.asarray(test_mask_PT, bool)[:, None, :],
            axis=-1,
        )
        bad = np.argwhere(np.asarray(passing, bool) & ~finite_PG)
        if bad.size:
            p, n = (int(i) for i in bad[0])
            raise ValueError(f"win_rates: {side} sample [{p}, {n}] passes but has no duration")
    inputs = (model_duration_PGT, model_pass_PG, base_duration_PGT, base_pass_PG, test_mask_PT)
    if not any(isinstance(x, jax.core.Tracer) for x in inputs):
        return _win_rates_host(*inputs, how=how, draw_tolerance_s=draw_tolerance_s)
    return _win_rates(
        model_duration_PGT,
        model_pass_PG,
        base_duration_PGT,
        base_pass_PG,
        test_mask_PT,
        how=how,
        draw_tolerance_s=draw_tolerance_s,
    )


def _totals_ns(duration_PGT, test_mask_PT) -> np.ndarray:
    """Exact integer-nanosecond totals `[P, N]` (int64; order-independent)."""
    duration = np.asarray(duration_PGT, np.float64)
    mask = np.broadcast_to(np.asarray(test_mask_PT, bool)[:, None, :], duration.shape)
    ns = np.where(mask & np.isfinite(duration), np.rint(duration * 1e9), 0).astype(np.int64)
    return ns.sum(axis=-1)


def _statistic_host(total_PG, passing_PG, how) -> tuple[np.ndarray, np.ndarray]:
    big = np.iinfo(np.int64).max
    sorted_PG = np.sort(np.where(passing_PG, total_PG, big), axis=-1)
    count_P = passing_PG.sum(axis=-1)
    position_P = np.zeros_like(count_P) if how == "best" else np.maximum(count_P - 1, 0) // 2
    value_P = np.take_along_axis(sorted_PG, position_P[:, None], axis=-1)[:, 0]
    return value_P, count_P > 0


def _win_rates_host(model_duration_PGT, model_pass_PG, base_duration_PGT, base_pass_PG,
                    test_mask_PT, how, draw_tolerance_s) -> WinRates:
    model_P, model_ok = _statistic_host(_totals_ns(model_duration_PGT, test_mask_PT),
                                        np.asarray(model_pass_PG, bool), how)
    base_P, base_ok = _statistic_host(_totals_ns(base_duration_PGT, test_mask_PT),
                                      np.asarray(base_pass_PG, bool), how)
    compared_P = model_ok & base_ok
    tolerance_ns = round(draw_tolerance_s * 1e9)
    draw_P = compared_P & (np.abs(model_P - base_P) <= tolerance_ns)
    win_P = compared_P & ~draw_P & (model_P < base_P)
    loss_P = compared_P & ~draw_P & (model_P > base_P)
    wins, losses = int(win_P.sum()), int(loss_P.sum())
    outcome_P = np.where(win_P, 1.0, np.where(loss_P, -1.0, 0.0))
    return WinRates(
        win_rate=jnp.asarray(wins / (wins + losses) if wins + losses else np.nan, jnp.float32),
        wins=jnp.asarray(wins), losses=jnp.asarray(losses), draws=jnp.asarray(int(draw_P.sum())),
        excluded=jnp.asarray(int((~compared_P).sum())),
        outcome_P=jnp.asarray(np.where(compared_P, outcome_P, np.nan), jnp.float32),
    )


@functools.partial(jax.jit, static_argnames=("how",))
def _win_rates(
    model_duration_PGT, model_pass_PG, base_duration_PGT, base_pass_PG, test_mask_PT, how,
    draw_tolerance_s,
):
    model_P = _statistic(
        _totals(model_duration_PGT, test_mask_PT), jnp.asarray(model_pass_PG, bool), how
    )
    base_P = _statistic(
        _totals(base_duration_PGT, test_mask_PT), jnp.asarray(base_pass_PG, bool), how
    )
    compared_P = ~jnp.isnan(model_P) & ~jnp.isnan(base_P)
    draw_P = compared_P & (jnp.abs(model_P - base_P) <= draw_tolerance_s)
    win_P = compared_P & ~draw_P & (model_P < base_P)
    loss_P = compared_P & ~draw_P & (model_P > base_P)
    wins, losses = jnp.sum(win_P), jnp.sum(loss_P)
    decided = wins + losses
    outcome_P = jnp.where(win_P, 1.0, jnp.where(loss_P, -1.0, 0.0))
    return WinRates(
        win_rate=jnp.where(decided > 0, wins / jnp.maximum(decided, 1), jnp.nan),
        wins=wins,
        losses=losses,
        draws=jnp.sum(draw_P),
        excluded=jnp.sum(~compared_P),
        outcome_P=jnp.where(compared_P, outcome_P, jnp.nan),
    )
