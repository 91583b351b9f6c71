"""Slow, obviously-correct references for the reward kernels, plus random padded inputs.

Each function here restates one formula of spec/rewards.md as plain Python loops over one
problem or one rollout, with exact `Fraction` arithmetic wherever the kernel's result depends on
ties. Tests compare the jitted kernels against these on random padded inputs. Nothing here is
fast or vectorised on purpose: it must be readable next to the spec.

Conventions: a "row" is one rollout or problem; `None` stands for an undefined value (NaN in
the kernels). Durations come in as float32-representable numbers, which are exact in Python
floats and Fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import records

# ---- random padded inputs ---------------------------------------------------------------------

# A small grid of durations makes ties common, which is where the rules differ.
DURATION_GRID = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0)
GARBAGE = (np.nan, np.inf, -np.inf, -1.0, 1e30, 0.0)


def durations(shape):
    return hnp.arrays(np.float32, shape, elements=st.sampled_from(DURATION_GRID))


def masks(shape):
    """Boolean arrays, three quarters True on average (rows of all False do occur)."""
    return hnp.arrays(bool, shape, elements=st.sampled_from([True] * 3 + [False]))


def garbage(shape):
    return hnp.arrays(np.float32, shape, elements=st.sampled_from(GARBAGE))


def fill_padding(values, mask, junk):
    """Replace the masked-out entries of `values` by junk (NaN, inf, negative, huge)."""
    return np.where(mask, values, np.broadcast_to(junk, np.shape(values))).astype(values.dtype)


def to_float(value) -> float:
    return math.nan if value is None else float(value)


# ---- calibration --------------------------------------------------------------------------------


def sanitize_one(d: float, alpha: float = 1.0, beta: float = 0.0, cap: float = 10.0) -> float:
    psi = d if (math.isfinite(d) and d > 0) else cap
    return min(cap, max(0.0, alpha * psi + beta))


# ---- filters ----------------------------------------------------------------------------------


def usable_durations(ref_TH, mask_TH, t) -> list[float]:
    return [float(ref_TH[t][h]) for h in range(len(ref_TH[t])) if mask_TH[t][h]]


def quantile(values: list[float], q: float, interpolation: str = "linear") -> float | None:
    """Hyndman-Fan type 7 and its NumPy siblings, written out."""
    if not values:
        return None
    s = sorted(values)
    position = q * (len(s) - 1)
    low, high = math.floor(position), math.ceil(position)
    if interpolation == "lower":
        return s[low]
    if interpolation == "higher":
        return s[high]
    if interpolation == "midpoint":
        return (s[low] + s[high]) / 2
    return s[low] + (position - low) * (s[high] - s[low])


def aggregate(values: list[float], how: str) -> float | None:
    if not values:
        return None
    if how == "mean":
        return sum(values) / len(values)
    return quantile(values, 0.5)


def filter_absolute_row(opt_T, ref_TH, mask_TH, threshold, how) -> list[bool]:
    out = []
    for t in range(len(opt_T)):
        dbar = aggregate(usable_durations(ref_TH, mask_TH, t), how)
        out.append(bool(opt_T[t]) and dbar is not None and dbar < threshold)
    return out


def filter_relative_row(opt_T, ref_TH, mask_TH, drop_percent, how) -> list[bool]:
    dbar = [aggregate(usable_durations(ref_TH, mask_TH, t), how) for t in range(len(opt_T))]
    rankable = [t for t in range(len(opt_T)) if opt_T[t] and dbar[t] is not None]
    n_drop = math.floor(Fraction(drop_percent) * len(rankable) / 100)
    # slowest first; among equal dbar the higher test index goes first
    by_slowness = sorted(rankable, key=lambda t: (dbar[t], t), reverse=True)
    dropped = set(by_slowness[:n_drop])
    return [bool(opt_T[t]) and t not in dropped for t in range(len(opt_T))]


# ---- limits -----------------------------------------------------------------------------------


def reference_mean_rank_row(ref_TH, mask_TH, used_T) -> list[Fraction | None]:
    n_h = len(ref_TH[0])
    scores: list[list[Fraction]] = [[] for _ in range(n_h)]
    for t in range(len(used_T)):
        if not used_T[t]:
            continue
        pool = [h for h in range(n_h) if mask_TH[t][h]]
        for h in pool:
            d = ref_TH[t][h]
            faster = sum(1 for g in pool if ref_TH[t][g] < d)
            tied = sum(1 for g in pool if g != h and ref_TH[t][g] == d)
            scores[h].append((faster + Fraction(tied, 2)) / max(len(pool) - 1, 1))
    return [sum(s) / len(s) if s else None for s in scores]


def ranked_reference_limit_row(ref_TH, mask_TH, used_T, percentile, how):
    score = reference_mean_rank_row(ref_TH, mask_TH, used_T)
    ranked = [h for h in range(len(score)) if score[h] is not None]
    n_keep = max(1, math.ceil(Fraction(percentile) * len(ranked) / 100))
    kept = sorted(ranked, key=lambda h: (score[h], h))[:n_keep]
    limits, used = [], []
    for t in range(len(used_T)):
        values = [float(ref_TH[t][h]) for h in kept if mask_TH[t][h]]
        limit = None if not values else (max(values) if how == "max" else quantile(values, 0.5))
        limits.append(limit)
        used.append(bool(used_T[t]) and limit is not None)
    return limits, used


def post_filter_one(status: int, duration: float, limit: float | None) -> int:
    if status == records.SUCCESS and limit is not None and duration >= limit:
        return records.TIMEOUT
    return status


# ---- percentiles ------------------------------------------------------------------------------


def percentile_in_pool(value: float, others: list[float], ties: str) -> Fraction | None:
    """Percentile of `value` among `others ∪ {value}`: 0 fastest, 1 slowest."""
    if math.isnan(value):
        return None
    if not others:
        return None
    less = sum(1 for o in others if o < value)
    if ties == "min":
        return Fraction(less, len(others))
    tied = sum(1 for o in others if o == value)
    rank = 1 + less + Fraction(tied, 2)  # 1-indexed mid-rank in the pool
    return (rank - 1) / len(others)


def per_test_percentile_row(cand_T, ref_TH, mask_TH, ties) -> list[Fraction | None]:
    out = []
    for t in range(len(cand_T)):
        pool = usable_durations(ref_TH, mask_TH, t)
        out.append(percentile_in_pool(float(cand_T[t]), pool, ties) if pool else None)
    return out


def mean_percentiles_row(cand_T, ref_TH, mask_TH, test_mask_T, ties):
    """`a(y)` and `a(h)` for every reference, each reference ranked among the other usable
    references plus the candidate, on the used tests where it has a duration."""
    n_t, n_h = len(cand_T), len(ref_TH[0])
    cand_terms: list[Fraction | None] = []
    ref_terms: list[list[Fraction]] = [[] for _ in range(n_h)]
    for t in range(n_t):
        if not test_mask_T[t]:
            continue
        pool = [h for h in range(n_h) if mask_TH[t][h]]
        if not pool:
            continue
        delta = float(cand_T[t])
        cand_terms.append(percentile_in_pool(delta, [float(ref_TH[t][h]) for h in pool], ties))
        for h in pool:
            others = [float(ref_TH[t][g]) for g in pool if g != h] + [delta]
            ref_terms[h].append(percentile_in_pool(float(ref_TH[t][h]), others, ties))
    if not cand_terms or any(term is None for term in cand_terms):
        cand_score = None
    else:
        cand_score = sum(cand_terms) / len(cand_terms)
    ref_scores = [sum(terms) / len(terms) if terms else None for terms in ref_terms]
    return cand_score, ref_scores


def qp_row(cand_T, ref_TH, mask_TH, test_mask_T, ties, tie_tolerance=1e-6) -> float | None:
    cand_score, ref_scores = mean_percentiles_row(cand_T, ref_TH, mask_TH, test_mask_T, ties)
    if cand_score is None:
        return None
    ranked = [s for s in ref_scores if s is not None]
    faster = sum(1 for s in ranked if s < cand_score - Fraction(tie_tolerance))
    return faster / max(1, len(ranked))
