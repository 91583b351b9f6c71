"""Stages 7a-7b: reference duration traces and duration filterability.

`durations` runs every verified-correct solution on the tests of `durations.kinds` (TO always)
through a separate, lower-concurrency executor (`resources["timing_executor"]`), with
`Limits.repeats` as configured, and stores `meta["durations"]`:

    {"campaign_id": str, "tests": [test_id...], "solutions": [solution_id...],
     "duration": [[seconds per test] per solution], "status": ["SSTW..." per solution]}

A duration is stored as the one status-and-provenance rule reads it (`stored_seconds`): a timeout
at the cap it ran under, a success at its fleet measurement. `filterability` computes the robust CV per category
from those traces (`jaxopt_rl.data.filterability`) and flags the problem; non-filterable problems
stay in the build (they become the "complement" pool) but are not counted in the stage's row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxopt_rl.data.builder.execution import InfraError, Run, outcome_code
from jaxopt_rl.data.builder.pipeline import StageContext, StageResult
from jaxopt_rl.data.builder.validation import limits_for
from jaxopt_rl.data.execution_table import timed_duration, timing_code
from jaxopt_rl.data.filterability import (
    is_filterable,
    length_correlation,
    per_test_aggregate,
    robust_cv,
)
from jaxopt_rl.data.schema import TEST_KINDS, Problem
from jaxopt_rl.rewards.records import STATUS_CODE
from sandbox_cluster.api import TestCase, TestResult


def durations(problem: Problem, context: StageContext) -> StageResult:
    config = context.config.durations
    executor = context.resources.get("timing_executor", context.executor)
    tests = [t for t in problem.tests if t.kind in config.kinds]
    references = problem.verified_correct()
    limits = limits_for(problem, context, repeats=config.repeats)
    cases = tuple(TestCase(t.input, t.expected) for t in tests)
    runs = [Run(s.code, cases, limits, problem.float_tolerance, problem.interface)
            for s in references]
    results = executor.run_many(runs) if tests else [[] for _ in references]
    trace = {
        "campaign_id": config.campaign_id,
        "time_cap_s": limits.time_s,
        "repeats": config.repeats,
        "tests": [t.test_id for t in tests],
        "solutions": [s.solution_id for s in references],
        "duration": [stored_seconds(rs, limits.time_s) for rs in results],
        "status": ["".join(outcome_code(r) for r in rs) for rs in results],
    }
    meta = dict(problem.meta, durations=trace)
    return StageResult(dataclasses.replace(problem, meta=meta))


def stored_seconds(results: Sequence[TestResult], cap_s: float) -> list[float]:
    """The stored durations of one solution's run, read by the one status-and-provenance rule
    (`data.execution_table.timed_duration`): a timeout at the cap, a fleet duration kept. A
    success the rule leaves without a duration (not measured on the timing fleet) is no timing:
    `InfraError`, so the problem stays pending; a failure's duration is never read (only
    successes and timeouts are usable) and keeps the 0 placeholder."""
    codes = [outcome_code(r) for r in results]  # raises on infra_error / not_run first
    timed = timed_duration(np.array([STATUS_CODE[r.status] for r in results], np.int8),
                           np.array([r.duration_s for r in results], float), cap_s,
                           np.array([timing_code((r.extra or {}).get("timing")) for r in results],
                                    np.int8))
    if any(c == "S" and np.isnan(t) for c, t in zip(codes, timed)):
        raise InfraError("a success without a duration measured on the timing fleet")
    return [0.0 if np.isnan(t) else float(t) for t in timed]


def trace_arrays(problem: Problem) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(test ids, duration_TH, usable_TH) of the stored trace; usable = success or timeout."""
    trace = problem.meta.get("durations")
    if not trace:
        return [], np.zeros((0, 0)), np.zeros((0, 0), dtype=bool)
    n_tests, n_refs = len(trace["tests"]), len(trace["solutions"])
    duration_TH = np.asarray(trace["duration"], dtype=np.float64).reshape(n_refs, n_tests).T
    usable_TH = np.array([[c in "ST" for c in row] for row in trace["status"]],
                         dtype=bool).reshape(n_refs, n_tests).T
    return trace["tests"], duration_TH, usable_TH


def filterability_metrics(problem: Problem, aggregate: str) -> dict[str, Any]:
    test_ids, duration_TH, usable_TH = trace_arrays(problem)
    by_id = {t.test_id: t for t in problem.tests}
    metrics: dict[str, Any] = {"robust_cv": {}, "length_r": {}, "n_tests": {}}
    for kind in TEST_KINDS:
        rows = [j for j, t in enumerate(test_ids) if by_id.get(t) and by_id[t].kind == kind]
        if not rows:
            continue
        dbar_T = per_test_aggregate(duration_TH[rows], usable_TH[rows], aggregate)
        char_len_T = np.array([by_id[test_ids[j]].char_len for j in rows])
        cv, r = robust_cv(dbar_T), length_correlation(char_len_T, dbar_T)
        metrics["robust_cv"][kind] = None if np.isnan(cv) else cv
        metrics["length_r"][kind] = None if np.isnan(r) else r
        metrics["n_tests"][kind] = len(rows)
    return metrics


def filterability(problem: Problem, context: StageContext) -> StageResult:
    config = context.config.filterability
    metrics = filterability_metrics(problem, config.aggregate)
    cv = metrics["robust_cv"].get("TO")
    metrics["threshold"] = config.threshold
    metrics["duration_filterable"] = is_filterable(float("nan") if cv is None else cv,
                                                   config.threshold)
    meta = dict(problem.meta, filterability=metrics)
    return StageResult(dataclasses.replace(problem, meta=meta))


def counted_if_filterable(problem: Problem) -> bool:
    return bool(problem.meta.get("filterability", {}).get("duration_filterable"))
