"""Duration filterability (docs/design/dataset-eval.md §3): robust CV of per-test mean reference
time.

Array letters: T tests of one category of one problem, H reference solutions.

    dbar_T    = A over usable references h of duration_TH[t, h]     (A = mean or median)
    robust_cv = IQR(dbar_T) / median(dbar_T)                          (over tests with a dbar)
    duration_filterable <=> robust_cv(TO) >= threshold (0.3)

Choices where the paper is silent: quantiles use linear interpolation (NumPy's default);
a timed-out run counts at the cap (the sandbox records it there), failed or missing runs are
excluded (`usable_TH` False); raw measured durations are used (no calibration); tests without
any usable duration are skipped; fewer than 2 tests or a median <= 0 gives NaN (not
filterable). Length filterability is Pearson r(char_len_T, dbar_T), NaN when either is constant.
"""

from __future__ import annotations

from typing import Literal

import numpy as np


def per_test_aggregate(duration_TH: np.ndarray, usable_TH: np.ndarray,
                       aggregate: Literal["mean", "median"] = "mean") -> np.ndarray:
    """`dbar_T`: the aggregate of usable durations per test; NaN for a test with none."""
    duration_TH = np.asarray(duration_TH, dtype=np.float64)
    usable_TH = np.asarray(usable_TH, dtype=bool)
    if duration_TH.shape != usable_TH.shape or duration_TH.ndim != 2:
        raise ValueError(f"duration_TH {duration_TH.shape} and usable_TH {usable_TH.shape} "
                         "must be equal 2-D shapes")
    masked = np.where(usable_TH, duration_TH, np.nan)
    has_any = usable_TH.any(axis=1)
    dbar_T = np.full(duration_TH.shape[0], np.nan)
    if has_any.any():
        reduce = np.nanmean if aggregate == "mean" else np.nanmedian
        dbar_T[has_any] = reduce(masked[has_any], axis=1)
    return dbar_T


def robust_cv(dbar_T: np.ndarray) -> float:
    values = np.asarray(dbar_T, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return float("nan")
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    if median <= 0:
        return float("nan")
    return float((q3 - q1) / median)


def length_correlation(char_len_T: np.ndarray, dbar_T: np.ndarray) -> float:
    x = np.asarray(char_len_T, dtype=np.float64)
    y = np.asarray(dbar_T, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def is_filterable(cv: float, threshold: float = 0.3) -> bool:
    return bool(np.isfinite(cv) and cv >= threshold)
