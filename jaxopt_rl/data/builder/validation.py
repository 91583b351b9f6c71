"""Stage 3: re-execute every retained solution on the original tests T0 (docs/design/dataset-eval.md
§2 stage 3).

A correct-labelled solution that fails any T0 test leaves the pool (its id is kept in
`meta["removed_solutions"]`); incorrect solutions all stay as negative controls (the filtering
rounds decide later whether they still fail). The problem needs `min_verified_correct` verified
solutions and `min_incorrect` negatives (the 6,706 -> 3,928 rule is UNSPECIFIED in the paper;
this is the implied one). When every correct solution fails the same T0 test, the reason names
that test: the usual cause is a wrong expected output in the source.

Also home of `run_solutions`, the `[solutions x tests]` execution every later stage uses, and of
`outcomes` bookkeeping in `meta["outcomes"][kind] = {"tests": [...], "by_solution": {id: "SSTW"}}`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from jaxopt_rl.data.builder.execution import Run, outcome_code
from jaxopt_rl.data.builder.pipeline import StageContext, StageResult
from jaxopt_rl.data.schema import Problem, ProblemTest, Solution
from sandbox_cluster.api import Limits, TestCase, TestResult


def limits_for(problem: Problem, context: StageContext, time_s: float | None = None,
               repeats: int = 1) -> Limits:
    sandbox = context.config.sandbox
    return Limits(time_s=min(time_s or problem.time_limit_s, sandbox.time_cap_s),
                  memory_mb=min(problem.memory_mb, sandbox.memory_mb), repeats=repeats)


def run_solutions(problem: Problem, context: StageContext, solutions: Sequence[Solution],
                  tests: Sequence[ProblemTest], repeats: int = 1) -> list[list[TestResult]]:
    """Results `[solution][test]`, each solution run once on all tests with expected outputs."""
    if not solutions or not tests:
        return [[] for _ in solutions]
    cases = tuple(TestCase(t.input, t.expected) for t in tests)
    limits = limits_for(problem, context, repeats=repeats)
    runs = [Run(s.code, cases, limits, problem.float_tolerance, problem.interface)
            for s in solutions]
    return context.executor.run_many(runs)


def record_outcomes(problem: Problem, kind: str, tests: Sequence[ProblemTest],
                    by_solution: dict[str, str]) -> dict[str, Any]:
    """`problem.meta` with the outcome matrix of `kind` merged in (existing rows kept)."""
    meta = dict(problem.meta)
    outcomes = dict(meta.get("outcomes", {}))
    previous = outcomes.get(kind, {})
    if previous and previous.get("tests") != [t.test_id for t in tests]:
        previous = {}
    merged = dict(previous.get("by_solution", {}))
    merged.update(by_solution)
    outcomes[kind] = {"tests": [t.test_id for t in tests], "by_solution": merged}
    meta["outcomes"] = outcomes
    return meta


def remove_solutions(problem: Problem, removed: Sequence[str], stage: str,
                     meta: dict[str, Any] | None = None) -> Problem:
    meta = dict(problem.meta if meta is None else meta)
    log = dict(meta.get("removed_solutions", {}))
    log[stage] = sorted(removed)
    meta["removed_solutions"] = log
    gone = set(removed)
    return dataclasses.replace(
        problem, solutions=tuple(s for s in problem.solutions if s.solution_id not in gone),
        meta=meta)


def validate(problem: Problem, context: StageContext) -> StageResult:
    config = context.config.validation
    t0 = problem.tests_of("T0")
    if not t0:
        return StageResult(None, "validate: no T0 tests")
    missing = [t.test_id for t in t0 if t.expected is None]
    if missing:
        return StageResult(None, f"validate: T0 tests without expected output: {missing[:5]}")
    results = run_solutions(problem, context, problem.solutions, t0)
    by_solution = {s.solution_id: "".join(outcome_code(r) for r in rs)
                   for s, rs in zip(problem.solutions, results)}
    failed_correct = [s.solution_id for s in problem.solutions
                      if s.label == "correct" and set(by_solution[s.solution_id]) != {"S"}]
    meta = record_outcomes(problem, "T0", t0, by_solution)
    incorrect = problem.solutions_of("incorrect")
    meta["false_positive_t0"] = (
        sum(set(by_solution[s.solution_id]) == {"S"} for s in incorrect) / len(incorrect)
        if incorrect else 0.0)
    kept = remove_solutions(problem, failed_correct, "03_validate", meta)
    kept = dataclasses.replace(kept, solutions=tuple(
        dataclasses.replace(s, verified_correct=True) if s.label == "correct"
        else dataclasses.replace(s, negative_control=True) for s in kept.solutions))
    n_correct = len(kept.solutions_of("correct"))
    if n_correct < config.min_verified_correct:
        correct_rows = [by_solution[s.solution_id] for s in problem.solutions_of("correct")]
        reason = (f"validate: {n_correct} verified-correct solution(s) "
                  f"< {config.min_verified_correct} ({len(correct_rows)} labelled correct)")
        if correct_rows:
            all_fail = [t.test_id for j, t in enumerate(t0)
                        if all(row[j] != "S" for row in correct_rows)]
            if all_fail:
                first = correct_rows[0][[t.test_id for t in t0].index(all_fail[0])]
                reason += (f"; every correct solution fails {all_fail[:3]} "
                           f"(first outcome {first!r}: check the expected output)")
        return StageResult(None, reason)
    if len(kept.solutions_of("incorrect")) < config.min_incorrect:
        return StageResult(None, f"validate: fewer than {config.min_incorrect} incorrect solutions")
    return StageResult(kept)
