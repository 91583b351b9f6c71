"""The RiVER demo's held-out measures, as pure functions of arrays (`jaxopt-rl demo river`).

A program's held-out result on one task is `(valid_M, score_M)`: per held-out instance, whether
it ran and the checker scored it, and the checker's score (the task's own orientation). Every
measure of the report is built from these and the task's reference heuristics' results:

    normalised score q   per instance: 1 = the task's best reference heuristic there, 0 = its
                         worst, linear between (above 1: better than every reference). An
                         invalid answer, a failed run or a completion without a program
                         scores 0, the worst reference (choice: the feasibility rate is
                         reported beside it, so a policy that breaks is seen, not hidden).
                         Scale-free by construction: instances whose objectives differ by
                         orders of magnitude weigh the same.
    program score        the mean of q over the held-out instances
    best so far          per task, the best program score among the programs sampled up to
                         each training step (the paper's Figure 2 measure, on held-out instances)
    heuristic of         which reference heuristic a program is (exact code, up to blank lines
                         and trailing spaces), or None

Dimension letters (`jaxopt_rl.dimensions`): A the runs of one method (one per seed: the
generic helpers' any-axis letter), G samples per task, M held-out instances, H reference
heuristics, P tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np


def normalised_scores(score_M, valid_M, reference_score_HM, reference_valid_HM,
                      objective: str) -> np.ndarray:
    """q per instance (module docstring): float64 `[M]`."""
    if objective not in ("minimize", "maximize"):
        raise ValueError(f"objective must be minimize or maximize, got {objective!r}")
    sign = -1.0 if objective == "minimize" else 1.0
    score_M = sign * np.asarray(score_M, np.float64)
    valid_M = np.asarray(valid_M, bool)
    reference_HM = sign * np.asarray(reference_score_HM, np.float64)
    reference_valid_HM = np.asarray(reference_valid_HM, bool)
    if not reference_valid_HM.all(axis=0).all():
        bad = np.flatnonzero(~reference_valid_HM.all(axis=0)).tolist()
        raise ValueError(f"a reference heuristic failed on held-out instance(s) {bad}: the "
                         "scale of those instances is undefined")
    best_M, worst_M = reference_HM.max(axis=0), reference_HM.min(axis=0)
    span_M = best_M - worst_M
    with np.errstate(divide="ignore", invalid="ignore"):
        linear_M = np.where(span_M > 0, (score_M - worst_M) / np.where(span_M > 0, span_M, 1.0),
                            np.where(score_M >= best_M, 1.0, 0.0))
    return np.where(valid_M & np.isfinite(score_M), linear_M, 0.0)


def program_key(code: str) -> str:
    """The key of a program's held-out results: its exact text, hashed."""
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def canonical_code(code: str) -> str:
    """A program as compared with the reference heuristics: blank lines and trailing spaces
    dropped."""
    return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())


def heuristic_of(program: str | None, heuristics: Mapping[str, str]) -> str | None:
    """The slug of the reference heuristic `program` is a copy of, or None."""
    if program is None:
        return None
    code = canonical_code(program)
    return next((slug for slug, ref in heuristics.items() if canonical_code(ref) == code), None)


def best_so_far(step_scores: Sequence[tuple[int, float]], steps: int) -> np.ndarray:
    """`[steps]`: at step t (1..steps) the best score among those sampled at steps <= t; NaN before
    the first. `step_scores` are (step, program score) pairs."""
    best = np.full(steps, -np.inf)
    for step, score in step_scores:
        if not 1 <= step <= steps:
            raise ValueError(f"step {step} outside 1..{steps}")
        best[step - 1] = max(best[step - 1], score)
    best = np.maximum.accumulate(best)
    return np.where(np.isfinite(best), best, np.nan)


def bootstrap_mean(q_AGM, resamples: int, seed: int) -> tuple[float, float, float]:
    """(mean, 2.5 %, 97.5 %) of the mean of `q[A, G, M]`, seeds and instances resampled with
    replacement (the samples of a run are kept whole: they share its policy)."""
    q_AGM = np.asarray(q_AGM, np.float64)
    if q_AGM.ndim != 3 or 0 in q_AGM.shape:
        raise ValueError(f"q must be a non-empty [A, G, M] array, got shape {q_AGM.shape}")
    s, _, i = q_AGM.shape
    rng = np.random.default_rng(seed)
    per_AM = q_AGM.mean(axis=1)
    means = np.empty(resamples)
    for b in range(resamples):
        means[b] = per_AM[np.ix_(rng.integers(s, size=s), rng.integers(i, size=i))].mean()
    low, high = np.percentile(means, [2.5, 97.5])
    return float(per_AM.mean()), float(low), float(high)


def bootstrap_difference(a_AGM, b_AGM, resamples: int, seed: int) -> tuple[float, float, float]:
    """(mean, 2.5 %, 97.5 %) of mean(a) - mean(b), the same seeds and instances drawn for both
    (a and b are runs of the same seeds on the same instances)."""
    a_AM = np.asarray(a_AGM, np.float64).mean(axis=1)
    b_AM = np.asarray(b_AGM, np.float64).mean(axis=1)
    if a_AM.shape != b_AM.shape or 0 in a_AM.shape:
        raise ValueError(f"paired arrays must share a non-empty [A, M] shape: {a_AM.shape} "
                         f"and {b_AM.shape}")
    s, i = a_AM.shape
    rng = np.random.default_rng(seed)
    diffs = np.empty(resamples)
    for b in range(resamples):
        index = np.ix_(rng.integers(s, size=s), rng.integers(i, size=i))
        diffs[b] = a_AM[index].mean() - b_AM[index].mean()
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(a_AM.mean() - b_AM.mean()), float(low), float(high)


def verdict(low: float, high: float) -> str:
    """A claim 'A beats B' from the interval of A - B: held, did not hold, or inconclusive."""
    if low > 0:
        return "held"
    if high < 0:
        return "did not hold (the opposite held)"
    return "inconclusive (the interval contains 0)"
