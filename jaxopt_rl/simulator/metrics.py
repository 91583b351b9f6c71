"""Diagnostics of simulated pass-rate curves (docs/design/simulator.md §2; paper Appendix E.2).

For a curve `c` sampled at steps `x` (n points) and its moving average `c~` over a window `w`
(`c~_i = mean(c_i .. c_{i+w-1})`, `m = n - w + 1` values):

  auc_raw     mean_i c_i                         density: low is sparse, high saturated
  auc_smooth  mean_i c~_i
  steepness   S = a / (1 + |a|) of the clipped-linear fit clip(a x + b, 0, 1) to (x_i, c_i)
  variance    V = (1/m) sum_i (c_{i+w-1} - c~_i)^2   wobble around the trend
  deviation   D = mean_i |c_i - x_i|             distance from the diagonal
  q_raw       spearman(x, c)                     quality correlation (monotonicity)
  q_smooth    spearman(x[:m], c~)                (only ranks matter: any increasing x)

Everything is NumPy float64 on the host, vectorised over a leading batch of curves (the exact
window sums are one `math.fsum` per window): a grid of 10,000 curves of 21 steps takes about a
second on one CPU core, most of it the clipped-linear fit.

Choices (the paper leaves them open):
  * Spearman is the Pearson correlation of average ranks (ties share their mean rank, as
    `scipy.stats.spearmanr`); it is 0, not NaN, when either side is constant (a flat curve
    orders nothing).
  * `c~` ranks by its exact value: windows equal in exact arithmetic tie, however float
    addition would have rounded them (0.1 + 0.2 + 0.3 and 0.2 + 0.3 + 0.1 differ in their last
    bit), and windows that differ keep their order even when their sums round to one float.
    Each window sum is `math.fsum` (the correctly rounded exact sum, so equal sums give equal
    floats and rounding never reverses an order); only windows whose rounded sums coincide are
    compared exactly (the sign of one `fsum` over both windows).
  * The clipped-linear fit is exact least squares, found by enumeration: at a minimum, the
    points strictly inside (0, 1) of the fit ("active") are a contiguous run in x order and the
    line is their least-squares line (the clipped points add nothing to the gradient). So the
    candidates are: the least-squares line of every contiguous run of >= 2 points; for every
    single point, the least steep line through it that clips its neighbours; for every gap
    between neighbours, the least steep step (through (x_{k-1}, 0) and (x_k, 1)); the
    constants 0, 1 and clip(mean c); each also mirrored (fit 1 - c, then a -> -a,
    b -> 1 - b) for falling curves. The fit is the candidate of least squared error; among
    candidates within 1e-9 (relative) of it, the one with the smallest |a|, then |b| (a flat
    explanation is preferred when a steeper one is no better, e.g. for an all-zero curve).
"""

from __future__ import annotations

import functools
import math

import numpy as np

NAMES = ("auc_raw", "auc_smooth", "steepness", "variance", "deviation", "q_raw", "q_smooth")
_CHUNK = 256  # curves per fit pass: [chunk, candidates, n] float64 stays ~50 MB at n = 21
_TIE_RTOL = 1e-9


def _curves(x, c) -> tuple[np.ndarray, np.ndarray, bool]:
    c_CX = np.asarray(c, np.float64)
    single = c_CX.ndim == 1
    if c_CX.ndim not in (1, 2):
        raise ValueError(f"c must be [n] or [C, n], got shape {c_CX.shape}")
    c_CX = np.atleast_2d(c_CX)
    x_CX = np.asarray(x, np.float64)
    if x_CX.ndim == 1:
        x_CX = np.broadcast_to(x_CX, c_CX.shape)
    if x_CX.shape != c_CX.shape:
        raise ValueError(f"x shape {np.shape(x)} does not match c shape {np.shape(c)}")
    if c_CX.shape[-1] < 2:
        raise ValueError(f"a curve needs at least 2 points, got {c_CX.shape[-1]}")
    if not (np.isfinite(c_CX).all() and np.isfinite(x_CX).all()):
        raise ValueError("x and c must be finite")
    return x_CX, c_CX, single


def _window_sums(c_CX: np.ndarray, window: int) -> np.ndarray:
    """The correctly rounded exact sum of every run of `window` points, `[C, n - w + 1]`.

    Summed with `math.fsum`, never in float order: an order-dependent sum splits windows that
    are equal in exact arithmetic (their last bit differs) and a difference of running sums
    loses a tiny value after a large one (1 + 1e-37 - 1 = 0); both change q_smooth's ranks."""
    n = c_CX.shape[-1]
    if not isinstance(window, int | np.integer) or not 1 <= window <= n:
        raise ValueError(f"window={window!r}: must be an integer in [1, {n}] (curve length)")
    m = n - window + 1
    rows = c_CX.tolist()
    return np.array([[math.fsum(row[i:i + window]) for i in range(m)] for row in rows],
                    np.float64).reshape(len(rows), m)


def moving_average(c_CX: np.ndarray, window: int) -> np.ndarray:
    """`c~` `[C, n - w + 1]`: the mean of each run of `window` consecutive points."""
    return _window_sums(c_CX, window) / window


def _sums_are_exact(c_CX: np.ndarray, window: int) -> np.ndarray:
    """`[C]`: every window of the row sums without rounding in float64 (pass rates k / 2^j do),
    checked by the error term of each addition (Knuth's TwoSum, zero iff the addition is
    exact). There equal rounded sums are equal exact sums and need no exact comparison."""
    m = c_CX.shape[-1] - window + 1
    total_CM = c_CX[:, :m].copy()
    inexact_C = np.zeros(len(c_CX), bool)
    for offset in range(1, window):
        addend_CM = c_CX[:, offset:offset + m]
        new_CM = total_CM + addend_CM
        back_CM = new_CM - total_CM
        error_CM = (total_CM - (new_CM - back_CM)) + (addend_CM - back_CM)
        inexact_C |= (error_CM != 0).any(-1)
        total_CM = new_CM
    return ~inexact_C


def _exact_order_keys(c_CX: np.ndarray, window: int, sums_CM: np.ndarray) -> np.ndarray:
    """Keys `[C, m]` that order (and tie) the windows as their exact sums do.

    Correct rounding is monotone, so distinct rounded sums are already in exact order; only
    windows whose rounded sums coincide are compared exactly, by the sign of the correctly
    rounded difference (nonzero whenever the exact difference is: a sum of doubles is a
    multiple of the smallest subnormal)."""
    keys_CM = sums_CM.copy()
    sorted_CM = np.sort(sums_CM, axis=-1)
    tied_C = (np.diff(sorted_CM, axis=-1) == 0).any(-1)
    for r in np.flatnonzero(tied_C & ~_sums_are_exact(c_CX, window)):
        row, sums = c_CX[r].tolist(), sums_CM[r].tolist()

        def compare(i: int, j: int, row=row) -> int:
            diff = math.fsum(row[i:i + window] + [-v for v in row[j:j + window]])
            return (diff > 0) - (diff < 0)

        # walk the windows in rounded order; a run of equal rounded sums is put in exact order
        order = sorted(range(len(sums)), key=sums.__getitem__)
        key, start = 0, 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and sums[order[stop]] == sums[order[start]]:
                stop += 1
            run = order[start:stop]
            if len(run) > 1:
                run.sort(key=functools.cmp_to_key(compare))
            for position, member in enumerate(run):
                key += position > 0 and compare(member, run[position - 1]) != 0
                keys_CM[r, member] = key
            key, start = key + 1, stop
    return keys_CM


def _average_ranks(v_CX: np.ndarray) -> np.ndarray:
    below = (v_CX[:, None, :] < v_CX[:, :, None]).sum(-1)
    equal = (v_CX[:, None, :] == v_CX[:, :, None]).sum(-1)
    return below + (equal + 1) / 2.0


def spearman(x_CX: np.ndarray, y_CX: np.ndarray) -> np.ndarray:
    """Spearman correlation per row (average ranks); 0 where either row is constant."""
    rx, ry = _average_ranks(x_CX), _average_ranks(y_CX)
    rx = rx - rx.mean(-1, keepdims=True)
    ry = ry - ry.mean(-1, keepdims=True)
    norm = np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(-1) / norm
    return np.where(norm > 0, np.clip(rho, -1.0, 1.0), 0.0)


def _rising_candidates(x_CX, c_CX) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (a, b) `[C, K]` for fits rising in x (x sorted ascending per row)."""
    n = x_CX.shape[-1]
    pad = ((0, 0), (1, 0))
    s1 = np.arange(n + 1, dtype=np.float64)
    sx = np.cumsum(np.pad(x_CX, pad), -1)
    sxx = np.cumsum(np.pad(x_CX * x_CX, pad), -1)
    sc = np.cumsum(np.pad(c_CX, pad), -1)
    sxc = np.cumsum(np.pad(x_CX * c_CX, pad), -1)
    lo, hi = np.triu_indices(n, k=1)  # runs [lo, hi] of >= 2 points
    k = s1[hi + 1] - s1[lo]
    mx, mxx = sx[:, hi + 1] - sx[:, lo], sxx[:, hi + 1] - sxx[:, lo]
    mc, mxc = sc[:, hi + 1] - sc[:, lo], sxc[:, hi + 1] - sxc[:, lo]
    denom = k * mxx - mx * mx
    with np.errstate(invalid="ignore", divide="ignore"):
        a_run = np.where(denom > 1e-12 * k * k, (k * mxc - mx * mc) / denom, np.nan)
        b_run = (mc - a_run * mx) / k
        gap = np.diff(x_CX, axis=-1)  # [C, n - 1]
        inf = np.full((len(x_CX), 1), np.inf)
        left = np.concatenate([inf, gap], -1)  # distance to the previous point
        right = np.concatenate([gap, inf], -1)
        target = np.clip(c_CX, 0.0, 1.0)
        a_one = np.maximum(target / left, (1.0 - target) / right)
        a_one = np.where(np.isfinite(a_one), a_one, np.nan)
        b_one = target - a_one * x_CX
        a_step = np.where(gap > 0, 1.0 / gap, np.nan)
        b_step = -a_step * x_CX[:, :-1]
    a_const = np.zeros((len(x_CX), 3))
    b_const = np.stack([np.zeros(len(c_CX)), np.ones(len(c_CX)),
                        np.clip(c_CX.mean(-1), 0.0, 1.0)], -1)
    return (np.concatenate([a_run, a_one, a_step, a_const], -1),
            np.concatenate([b_run, b_one, b_step, b_const], -1))


def clipped_linear_fit(x, c) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares `(a, b)` of `clip(a x + b, 0, 1)` to the curve(s) (see the module
    docstring for the procedure and tie rule). Floats for one curve, `[C]` arrays for a batch."""
    x_CX, c_CX, single = _curves(x, c)
    order = np.argsort(x_CX, axis=-1, kind="stable")
    x_CX, c_CX = np.take_along_axis(x_CX, order, -1), np.take_along_axis(c_CX, order, -1)
    a_C, b_C = np.empty(len(c_CX)), np.empty(len(c_CX))
    for start in range(0, len(c_CX), _CHUNK):
        rows = slice(start, start + _CHUNK)
        x, c = x_CX[rows], c_CX[rows]
        a_up, b_up = _rising_candidates(x, c)
        a_down, b_down = _rising_candidates(x, 1.0 - c)
        a_CK = np.concatenate([a_up, -a_down], -1)
        b_CK = np.concatenate([b_up, 1.0 - b_down], -1)
        fit_CKX = np.clip(a_CK[..., None] * x[:, None, :] + b_CK[..., None], 0.0, 1.0)
        loss_CK = ((fit_CKX - c[:, None, :]) ** 2).sum(-1)
        loss_CK = np.where(np.isnan(loss_CK), np.inf, loss_CK)
        best_C = loss_CK.min(-1, keepdims=True)
        near_CK = loss_CK <= best_C + _TIE_RTOL * (1.0 + best_C)
        slope_CK = np.where(near_CK, np.abs(a_CK), np.inf)
        flattest_CK = near_CK & (slope_CK <= slope_CK.min(-1, keepdims=True) + 1e-12)
        pick_C = np.argmin(np.where(flattest_CK, np.abs(b_CK), np.inf), -1)
        a_C[rows] = np.take_along_axis(a_CK, pick_C[:, None], -1)[:, 0]
        b_C[rows] = np.take_along_axis(b_CK, pick_C[:, None], -1)[:, 0]
    if single:
        return float(a_C[0]), float(b_C[0])
    return a_C, b_C


def diagnostics(x, c, window: int = 5) -> dict:
    """The diagnostics of one curve (`x`, `c` of shape `[n]`: a dict of floats) or of a batch
    (`c` `[C, n]`, `x` `[n]` or `[C, n]`: a dict of `[C]` arrays). Keys: `NAMES`."""
    x_CX, c_CX, single = _curves(x, c)
    sums_CM = _window_sums(c_CX, window)
    smooth_CM = sums_CM / window
    m = smooth_CM.shape[-1]
    a_C, _ = clipped_linear_fit(x_CX, c_CX)
    steps_CM = np.broadcast_to(np.arange(m, dtype=np.float64), smooth_CM.shape)
    out = {
        "auc_raw": c_CX.mean(-1),
        "auc_smooth": smooth_CM.mean(-1),
        "steepness": a_C / (1.0 + np.abs(a_C)),
        "variance": ((c_CX[:, window - 1:] - smooth_CM) ** 2).mean(-1),
        "deviation": np.abs(c_CX - x_CX).mean(-1),
        "q_raw": spearman(x_CX, c_CX),
        "q_smooth": spearman(steps_CM, _exact_order_keys(c_CX, window, sums_CM)),
    }
    if single:
        return {name: float(value[0]) for name, value in out.items()}
    return out


__all__ = ["NAMES", "clipped_linear_fit", "diagnostics", "moving_average", "spearman"]
