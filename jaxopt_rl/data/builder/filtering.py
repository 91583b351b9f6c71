"""Generated-test filtering rounds (docs/design/dataset-eval.md §2.2, Table 13) and the stage-5/6
set rules.

`filter_round` is a pure function of one problem's outcome matrix on its generated tests of one
round; the stages around it read the matrices from `meta["outcomes"]`:

(a) test removal, denominators = correct solutions entering the round:
    timeout filter: remove tests where MORE than `timeout_fraction` of them time out, worst first
    (ties by test id), at most floor(`timeout_cap` x #generated tests); then the failure filter on
    what is left: more than `failure_fraction` fail (wrong answer / runtime error / memory /
    output limit; syntax errors excluded), at most floor(`failure_cap` x #remaining).
(b) reclassification on the filtered suite (prior suites + surviving tests): a correct solution
    stays iff it passes (a timeout passes when `timeout_is_success`); an incorrect one stays a
    negative control iff it still fails somewhere.
(c) gates: >= `min_correct` correct left, <= `max_correct_drop` of the entering correct pool
    lost, false-positive rate (share of the ENTERING incorrect pool passing the filtered suite)
    `< max_false_positive` (None: off), >= `min_incorrect` negatives left.
T0 is never touched; only generated tests of the round's kind are removed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from jaxopt_rl.data.builder.config import FilterConfig
from jaxopt_rl.data.builder.execution import FAILURE_OUTCOMES
from jaxopt_rl.data.builder.pipeline import StageContext, StageResult
from jaxopt_rl.data.builder.validation import remove_solutions
from jaxopt_rl.data.schema import CAMPAIGN_KIND, Problem


@dataclass(frozen=True)
class FilterDecision:
    removed_timeout: tuple[str, ...]
    removed_failure: tuple[str, ...]
    kept_tests: tuple[str, ...]
    correct_lost: tuple[str, ...]
    incorrect_lost: tuple[str, ...]  # now pass the filtered suite: unreliable negatives
    false_positive_rate: float
    correct_drop: float
    gate: str  # "" when the problem passes every gate, else the first failed gate


def _remove_worst(test_ids, fraction, threshold, cap):
    offending = [(-fraction[t], t) for t in test_ids if fraction[t] > threshold]
    return tuple(t for _, t in sorted(offending)[:cap])


def filter_round(test_ids: list[str], correct: dict[str, str], incorrect: dict[str, str],
                 prior_pass: dict[str, bool], config: FilterConfig) -> FilterDecision:
    """Decide one round. Rows are outcome codes aligned with `test_ids`; `prior_pass[id]` says
    whether the solution passes the suites fixed before this round (T0, earlier rounds)."""
    column = {t: j for j, t in enumerate(test_ids)}
    n_correct = max(1, len(correct))

    def share(t: str, codes: frozenset[str]) -> float:
        return sum(row[column[t]] in codes for row in correct.values()) / n_correct

    timeout_share = {t: share(t, frozenset("T")) for t in test_ids}
    removed_timeout = _remove_worst(test_ids, timeout_share, config.timeout_fraction,
                                    math.floor(config.timeout_cap * len(test_ids)))
    remaining = [t for t in test_ids if t not in set(removed_timeout)]
    failure_share = {t: share(t, FAILURE_OUTCOMES) for t in remaining}
    removed_failure = _remove_worst(remaining, failure_share, config.failure_fraction,
                                    math.floor(config.failure_cap * len(remaining)))
    kept = tuple(t for t in remaining if t not in set(removed_failure))
    passing = frozenset("ST") if config.timeout_is_success else frozenset("S")

    def passes(solution_id: str, row: str) -> bool:
        return prior_pass.get(solution_id, False) and all(row[column[t]] in passing for t in kept)

    correct_lost = tuple(sorted(s for s, row in correct.items() if not passes(s, row)))
    incorrect_passing = tuple(sorted(s for s, row in incorrect.items() if passes(s, row)))
    fp_rate = len(incorrect_passing) / len(incorrect) if incorrect else 0.0
    drop = len(correct_lost) / len(correct) if correct else 1.0
    n_left = len(correct) - len(correct_lost)
    gate = ""
    if n_left < config.min_correct:
        gate = f"{n_left} correct solution(s) left < {config.min_correct}"
    elif drop > config.max_correct_drop:
        gate = f"lost {drop:.0%} of correct solutions > {config.max_correct_drop:.0%}"
    elif config.max_false_positive is not None and not fp_rate < config.max_false_positive:
        gate = f"false-positive rate {fp_rate:.1%} >= {config.max_false_positive:.1%}"
    elif len(incorrect) - len(incorrect_passing) < config.min_incorrect:
        gate = f"{len(incorrect) - len(incorrect_passing)} negative control(s) left < {config.min_incorrect}"
    return FilterDecision(removed_timeout, removed_failure, kept, correct_lost, incorrect_passing,
                          fp_rate, drop, gate)


def _passes_kind(problem: Problem, kind: str, solution_id: str, passing: frozenset[str]) -> bool:
    row = problem.meta.get("outcomes", {}).get(kind, {}).get("by_solution", {}).get(solution_id)
    tests = {t.test_id for t in problem.tests_of(kind)}
    ids = problem.meta.get("outcomes", {}).get(kind, {}).get("tests", [])
    if row is None:
        return not tests  # never ran: passes only an empty suite
    return all(code in passing for code, t in zip(row, ids) if t in tests)


def filter_stage(problem: Problem, context: StageContext, campaign: str) -> StageResult:
    config: FilterConfig = getattr(context.config, f"{campaign}_filter")
    kind = CAMPAIGN_KIND[campaign]
    matrix = problem.meta.get("outcomes", {}).get(kind, {"tests": [], "by_solution": {}})
    current = {t.test_id for t in problem.tests_of(kind)}
    test_ids = [t for t in matrix["tests"] if t in current]
    keep_cols = [j for j, t in enumerate(matrix["tests"]) if t in current]

    def row(solution_id: str) -> str:
        full = matrix["by_solution"].get(solution_id)
        if full is None:
            raise KeyError(f"no {kind} outcomes for solution {solution_id!r} (execute stage missing?)")
        return "".join(full[j] for j in keep_cols)

    correct = {s.solution_id: row(s.solution_id) for s in problem.solutions_of("correct")}
    incorrect = {s.solution_id: row(s.solution_id) for s in problem.solutions_of("incorrect")}
    prior_kinds = ["T0"] + (["T+"] if kind == "TO" else [])
    prior = {s.solution_id: all(_passes_kind(problem, k, s.solution_id, frozenset("S"))
                                for k in prior_kinds)
             for s in problem.solutions}
    decision = filter_round(test_ids, correct, incorrect, prior, config)
    # The raw augmented suite (no test removed) for the before/after diagnostics of
    # docs/design/dataset-eval.md §2.3.
    raw = filter_round(test_ids, correct, incorrect, prior,
                       dataclasses.replace(config, timeout_cap=0.0, failure_cap=0.0))
    removed = set(decision.removed_timeout) | set(decision.removed_failure)
    meta = dict(problem.meta)
    rounds = dict(meta.get("filters", {}))
    rounds[campaign] = {
        "removed_timeout": list(decision.removed_timeout),
        "removed_failure": list(decision.removed_failure),
        "tests_kept": len(decision.kept_tests),
        "correct_before": len(correct),
        "correct_lost": list(decision.correct_lost),
        "incorrect_before": len(incorrect),
        "incorrect_lost": list(decision.incorrect_lost),
        "false_positive_rate": decision.false_positive_rate,
        "correct_drop": decision.correct_drop,
        "raw_false_positive_rate": raw.false_positive_rate,
        "raw_correct_pass_rate": 1.0 - raw.correct_drop if correct else 0.0,
        "gate": decision.gate,
    }
    meta["filters"] = rounds
    if decision.gate:
        reason = f"{campaign} filter: {decision.gate}"
        if not test_ids:
            reason += f" with no {kind} tests" + _campaign_summary(problem, campaign)
        return StageResult(None, reason)
    filtered = dataclasses.replace(
        problem, tests=tuple(t for t in problem.tests if t.test_id not in removed))
    stage = f"filter_{campaign}"
    return StageResult(remove_solutions(filtered, decision.correct_lost + decision.incorrect_lost,
                                        stage, meta))


def _campaign_summary(problem: Problem, campaign: str) -> str:
    stats = problem.meta.get("campaigns", {}).get(campaign, {})
    why = "; ".join(f"{n}x {r}" for r, n in stats.get("rejections", {}).items())
    return f" ({campaign} campaign: {why})" if why else ""


def intersect(problem: Problem, context: StageContext) -> StageResult:
    """Stage 5: kept by every filtering pass, and still enough correct solutions overall."""
    filters = problem.meta.get("filters", {})
    missing = [c for c in ("correctness", "optimization") if c not in filters]
    if missing:
        return StageResult(None, f"intersection: no {', '.join(missing)} filter pass recorded")
    failed = [c for c, f in filters.items() if f.get("gate")]
    if failed:
        return StageResult(None, f"intersection: rejected by the {', '.join(failed)} pass")
    if not problem.solutions_of("correct"):
        return StageResult(None, "intersection: no correct solution kept by every pass")
    return StageResult(problem)


def non_empty(problem: Problem, context: StageContext) -> StageResult:
    """Stage 6: T+ and TO must both be non-empty after filtering."""
    for kind, campaign in (("T+", "correctness"), ("TO", "optimization")):
        if not problem.tests_of(kind):
            return StageResult(None, f"non-empty: no {kind} tests left"
                                     + _campaign_summary(problem, campaign))
    return StageResult(problem)
