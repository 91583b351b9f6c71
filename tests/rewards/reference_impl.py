"""Slow, obviously-correct references for the reward kernels, plus random padded inputs.

Each function here restates one formula of docs/design/rewards.md as plain Python loops over one
problem or one rollout, with exact `Fraction` arithmetic wherever the kernel's result depends on
ties. Tests compare the jitted kernels against these on random padded inputs. Nothing here is
fast or vectorised on purpose: it must be readable next to the design page.

Conventions: a "row" is one rollout or problem; `None` stands for an undefined value (NaN in
the kernels). Durations come in as float32-representable numbers, which are exact in Python
floats and Fractions.
"""

from __future__ import annotations

import math
import re
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


def record_batches(P: int, G: int, T: int, H: int, cap: float = 10.0):
    """Random padded `RecordBatch` fields (a dict) in the grouped layout: P problems x G rows,
    a random quarter of the rows padding rollouts (garbage inside, the test layout of their
    problem), ragged tests per problem, lost and missing references, garbage in padding."""
    S, TO, F, INC = records.SUCCESS, records.TIMEOUT, records.FAILURE, records.INCONCLUSIVE
    B = P * G

    @st.composite
    def draw_batch(draw):
        n_tests_P = np.array(draw(st.lists(st.integers(1, T), min_size=P, max_size=P)))
        test_mask_PT = np.arange(T)[None, :] < n_tests_P[:, None]
        index_B = np.repeat(np.arange(P), G)
        kind_PT = draw(hnp.arrays(np.int8, (P, T), elements=st.sampled_from([0, 1, 2, 2])))
        io_chars_PT = draw(hnp.arrays(np.int32, (P, T),
                                      elements=st.sampled_from([20, 10**3, 10**6])))
        cap_PT = draw(hnp.arrays(np.float32, (P, T), elements=st.sampled_from([cap, cap, 2.5])))
        ref_PTH = draw(durations((P, T, H)))
        lost_PTH = draw(hnp.arrays(bool, (P, T, H),
                                   elements=st.sampled_from([False] * 9 + [True])))
        ref_PTH = np.where(lost_PTH, np.float32(0.0), ref_PTH)  # eq. 10: becomes the cap
        ref_mask_PTH = draw(masks((P, T, H))) & test_mask_PT[..., None]
        status_BT = draw(hnp.arrays(np.int8, (B, T),
                                    elements=st.sampled_from([S] * 12 + [TO, TO, F, INC])))
        duration_BT = draw(durations((B, T)))
        test_mask_BT, cap_BT = test_mask_PT[index_B], cap_PT[index_B]
        duration_BT = np.where(status_BT == TO, cap_BT, duration_BT).astype(np.float32)
        junk = draw(garbage((B, T)))
        return {
            "status_BT": np.where(test_mask_BT, status_BT, np.int8(S)),
            "duration_BT": fill_padding(duration_BT, test_mask_BT, junk),
            "test_mask_BT": test_mask_BT,
            "test_kind_BT": np.where(test_mask_BT, kind_PT[index_B], 0),
            "io_chars_BT": io_chars_PT[index_B], "cap_BT": cap_BT,
            "rollout_mask_B": draw(masks((B,))),
            "ref_duration_PTH": fill_padding(ref_PTH, ref_mask_PTH, draw(garbage((P, T, H)))),
            "ref_mask_PTH": ref_mask_PTH,
        }

    return draw_batch()


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


# ---- composition ------------------------------------------------------------------------------


def quality_map_one(q: float, mapping: str) -> float:
    if mapping == "bucket":
        return 1.0 if q == 0 else max(0.0, 0.9 - 0.1 * math.floor(10 * (q - 1e-6)))
    if mapping == "linear":
        return 1 - q
    low = 1 / 3 if mapping == "range_third" else 1 / 2
    return low + (1 - low) * (1 - q)


def compose_one(c_cor: bool, c_strict: bool, g: bool, q: float, family: str, mapping: str):
    """One row of the docs/design/rewards.md §6 table, written as the table reads."""

    def s(z):
        return 2 * z - 1

    binary = mapping == "binary"
    m = None if binary else quality_map_one(q, mapping)
    if family == "correctness":
        return s(float(c_cor))
    if family == "optimization":
        return s(float(g)) if binary else s(m)
    if family == "collapsed":
        if binary:
            return 1.0 if (c_strict and g) else -1.0
        return s(m) if c_strict else -1.0
    if family == "two_gate":
        if not c_strict:
            return -1.0
        return (1.0 if g else 0.0) if binary else m
    return (s(float(c_cor)) + (s(float(g)) if binary else s(m))) / 2


def naive_one(c_cor, durations, limits, mask, duration_map, statuses=None, scale=10.0, empty=10.0):
    used = []
    for t in range(len(durations)):
        if not mask[t]:
            continue
        d = float(durations[t])
        timed_out = statuses is not None and statuses[t] == records.TIMEOUT
        used.append(float(limits[t]) if (timed_out or not math.isfinite(d) or d <= 0) else d)
    dbar = sum(used) / len(used) if used else empty
    if duration_map == "lin":
        m = min(1.0, max(0.0, 1 - dbar / scale))
    else:
        m = min(1.0, max(0.0, (1 - math.log10(max(dbar, 1e-6))) / 3))
    return float(c_cor) + m - 1


# ---- RiVER --------------------------------------------------------------------------------------


def mid_ranks_one_instance(scores: list[float], valid: list[bool]) -> list[float | None]:
    """1-indexed mid-rank among valid solvers, larger score better; None for invalid."""
    out = []
    for i in range(len(scores)):
        if not valid[i]:
            out.append(None)
            continue
        better = sum(1 for j in range(len(scores)) if valid[j] and scores[j] > scores[i])
        tied = sum(1 for j in range(len(scores)) if valid[j] and scores[j] == scores[i])
        out.append(better + (tied + 1) / 2)  # positions better+1 .. better+tied, averaged
    return out


def _columns(scores_GM, valid_GM):
    g_count, m_count = len(scores_GM), len(scores_GM[0])
    for m in range(m_count):
        yield (
            [float(scores_GM[g][m]) for g in range(g_count)],
            [bool(valid_GM[g][m]) for g in range(g_count)],
        )


def river_one_group(scores_GM, valid_GM) -> list[float]:
    g_count = len(scores_GM)
    shaped = [[] for _ in range(g_count)]
    for scores, valid in _columns(scores_GM, valid_GM):
        ranks = mid_ranks_one_instance(scores, valid)
        for i, r in enumerate(ranks):
            if r is None:
                shaped[i].append(-1.0)
            elif r == 1:
                shaped[i].append(1.0)
            else:
                graded = (g_count - 1 - r) / max(g_count - 3, 1)
                shaped[i].append(min(1.0, max(0.0, graded)) - 0.5)
    return [sum(s) / len(s) for s in shaped]


def rank_uniform_one_group(scores_GM, valid_GM) -> list[float]:
    g_count = len(scores_GM)
    shaped = [[] for _ in range(g_count)]
    for scores, valid in _columns(scores_GM, valid_GM):
        for i, r in enumerate(mid_ranks_one_instance(scores, valid)):
            shaped[i].append(-1.0 if r is None else 1 - 2 * (r - 1) / max(g_count - 1, 1))
    return [sum(s) / len(s) for s in shaped]


def mean_raw_scores(scores_GM, valid_GM) -> list[float]:
    g_count = len(scores_GM)
    filled = [[] for _ in range(g_count)]
    for scores, valid in _columns(scores_GM, valid_GM):
        valid_scores = [s for s, v in zip(scores, valid) if v]
        worst = min(valid_scores) if valid_scores else 0.0
        for i in range(g_count):
            filled[i].append(scores[i] if valid[i] else worst)
    return [sum(f) / len(f) for f in filled]


def raw_grpo_one_group(scores_GM, valid_GM, eps=1e-6) -> list[float]:
    raw = mean_raw_scores(scores_GM, valid_GM)
    mean = sum(raw) / len(raw)
    std = math.sqrt(sum((r - mean) ** 2 for r in raw) / len(raw))
    return [(r - mean) / (std + eps) for r in raw]


def raw_binary_one_group(scores_GM, valid_GM) -> list[float]:
    raw = mean_raw_scores(scores_GM, valid_GM)
    return [1.0 if r == max(raw) else 0.0 for r in raw]


def instance_norm_one_group(scores_GM, valid_GM, eps=1e-6) -> list[float]:
    g_count = len(scores_GM)
    z = [[] for _ in range(g_count)]
    for scores, valid in _columns(scores_GM, valid_GM):
        valid_scores = [s for s, v in zip(scores, valid) if v]
        mean = sum(valid_scores) / len(valid_scores) if valid_scores else 0.0
        var = sum((s - mean) ** 2 for s in valid_scores) / max(len(valid_scores), 1)
        for i in range(g_count):
            z[i].append((scores[i] - mean) / (math.sqrt(var) + eps) if valid[i] else -1.0)
    return [sum(v) / len(v) for v in z]


def collision_probability_one(values: list[float]) -> float:
    g_count = len(values)
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sum((c / g_count) ** g_count for c in counts.values())


def gfr_one(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return -math.log(collision_probability_one(values)) / (len(values) - 1)


# ---- ranking metrics --------------------------------------------------------------------------


def _median(values):
    return quantile(values, 0.5)


def _test_rows(cand_T, ref_TH, mask_TH, test_mask_T):
    """The metric's tests: in the mask and with at least one usable reference."""
    return [t for t in range(len(cand_T)) if test_mask_T[t] and any(mask_TH[t])]


def _percentile_values(cand_T, ref_TH, mask_TH, tests, ties, transform=float):
    out = []
    for t in tests:
        pool = [transform(float(ref_TH[t][h])) for h in range(len(ref_TH[t])) if mask_TH[t][h]]
        out.append(float(percentile_in_pool(transform(float(cand_T[t])), pool, ties)))
    return out


def _rank_value(value, others, ties, rtol=1e-5):
    """Percentile of `value` among `others` with the kernels' relative tie tolerance."""
    if value is None or not others:
        return None
    tied = [o for o in others if abs(o - value) <= rtol * max(abs(o), abs(value))]
    less = [o for o in others if o < value and o not in tied]
    count = len(less) + (len(tied) / 2 if ties == "average" else 0)
    return count / len(others)


def _slope_fit(points, intercept):
    """Least-squares slope of d on w; None when undefined."""
    if intercept:
        if len(points) < 2:
            return None
        w_mean = sum(w for w, _ in points) / len(points)
        d_mean = sum(d for _, d in points) / len(points)
        sxx = sum((w - w_mean) ** 2 for w, _ in points)
        sxy = sum((w - w_mean) * (d - d_mean) for w, d in points)
    else:
        if not points:
            return None
        sxx = sum(w * w for w, _ in points)
        sxy = sum(w * d for w, d in points)
    return None if sxx <= 0 else sxy / sxx


def ranking_metric_row(name, cand_T, ref_TH, mask_TH, test_mask_T, ties="average"):
    tests = _test_rows(cand_T, ref_TH, mask_TH, test_mask_T)
    if not tests:
        return None
    n_h = len(ref_TH[0])
    if name in ("total_duration_percentile", "slope_percentile", "zero_intercept_slope_percentile"):
        if name == "total_duration_percentile":
            cand_value = sum(float(cand_T[t]) for t in tests)
            others = []
            for h in range(n_h):
                own = [float(ref_TH[t][h]) for t in tests if mask_TH[t][h]]
                if own:
                    others.append(sum(own))
        else:
            intercept = name == "slope_percentile"
            w = {t: _median(usable_durations(ref_TH, mask_TH, t)) for t in tests}
            cand_value = _slope_fit([(w[t], float(cand_T[t])) for t in tests], intercept)
            others = []
            for h in range(n_h):
                points = [(w[t], float(ref_TH[t][h])) for t in tests if mask_TH[t][h]]
                slope = _slope_fit(points, intercept)
                if slope is not None:
                    others.append(slope)
        return _rank_value(cand_value, others, ties)
    if name.startswith("win_rate"):
        summary = (lambda v: sum(v) / len(v)) if name == "win_rate_mean" else _median
        wins = [
            float(cand_T[t]) < summary(usable_durations(ref_TH, mask_TH, t)) for t in tests
        ]
        return sum(wins) / len(wins)
    filtered = re.fullmatch(r"(mean|median)_percentile_drop_(fastest|slowest)(\d+)", name)
    if filtered:
        aggregate, drop, fraction = filtered[1], filtered[2], int(filtered[3]) / 100
        dbar = {t: sum(usable_durations(ref_TH, mask_TH, t)) / sum(mask_TH[t]) for t in tests}
        order = sorted(tests, key=lambda t: (dbar[t], t))
        n_drop = max(1, math.floor(fraction * len(tests)))
        kept = order[n_drop:] if drop == "fastest" else order[: len(order) - n_drop]
        if not kept:
            return None
        p = _percentile_values(cand_T, ref_TH, mask_TH, kept, ties)
        return sum(p) / len(p) if aggregate == "mean" else _median(p)
    transform = (lambda d: math.log(max(d, 1e-6))) if name == "log_mean_percentile" else float
    p = _percentile_values(cand_T, ref_TH, mask_TH, tests, ties, transform)
    if name in ("mean_percentile", "log_mean_percentile"):
        return sum(p) / len(p)
    if name == "median_percentile":
        return _median(p)
    if name == "trimmed_mean_percentile":
        if len(p) < 5:
            return None
        m = max(1, math.floor(0.1 * len(p)))
        kept = sorted(p)[m : len(p) - m]
        return sum(kept) / len(kept)
    k = 0.25 if name == "top25_share" else 0.50
    return sum(1 for v in p if v < k) / len(p)


# ---- evaluation -------------------------------------------------------------------------------


def pass_at_k_one(n: int, m: int, k: int) -> float | None:
    if n == 0:
        return None
    k = min(k, n)
    return 1 - math.comb(n - m, k) / math.comb(n, k)


def win_rate_ref(model_d, model_pass, base_d, base_pass, test_mask, how):
    """Returns (wins, losses, draws, excluded)."""
    wins = losses = draws = excluded = 0
    for p in range(len(test_mask)):
        stats = []
        for d, passing in ((model_d, model_pass), (base_d, base_pass)):
            totals = sorted(
                sum(float(d[p][n][t]) for t in range(len(test_mask[p])) if test_mask[p][t])
                for n in range(len(passing[p]))
                if passing[p][n]
            )
            if not totals:
                stats.append(None)
            else:
                stats.append(totals[0] if how == "best" else totals[(len(totals) - 1) // 2])
        if None in stats:
            excluded += 1
        elif stats[0] < stats[1]:
            wins += 1
        elif stats[0] > stats[1]:
            losses += 1
        else:
            draws += 1
    return wins, losses, draws, excluded
