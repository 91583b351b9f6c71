"""Stage 4 campaigns: generate T+ / TO inputs, decide expected outputs by agreement, execute.

One campaign (docs/design/dataset-eval.md §2.1, Table 11) per problem:
1. `attempts` generator runs; attempt `a` uses `problem.generators[a % len]` and makes
   `rounds x schedule` calls (15 by default), call `j` seeded with
   `random.Random(f"{problem_id}/{campaign}/{a}/{method}/{j}")`. A crash, a non-string value or a
   timeout rejects the attempt.
2. The verification pool (up to `verification_pool` verified-correct solutions, a deterministic
   seeded choice) runs on the attempt's inputs.
3. Solutions whose *whole* output list agrees form groups (comparison by whitespace tokens; with a
   float tolerance, numeric tokens within `tol * max(1, |a|, |b|)`). The largest group must have
   `>= min_agree` members. **Choice** (UNSPECIFIED in the paper): two largest groups of equal size
   reject the attempt as ambiguous.
4. The consensus is the output of the group's first member (pool order), normalised (trailing
   spaces and blank trailing lines removed, one final newline). That member is re-run with the
   expected outputs through the sandbox's own checker; the attempt is kept only if it passes.
Accepted inputs become tests `T+/aAA/cCC` (or `TO/...`); an input equal to an earlier accepted
one is dropped when `dedupe_inputs`. The pool's verdicts are recorded so the execute stage only
runs the remaining solutions.

Problems whose campaign accepts nothing stay in the build with an empty kind and a summary in
`meta["campaigns"]`; the non-empty stage (6) removes them and names the reasons.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from typing import Any

from jaxopt_rl.data.builder.execution import (
    Run,
    generator_program,
    generator_request,
    outcome_code,
    stdout_text,
)
from jaxopt_rl.data.builder.pipeline import StageContext, StageResult
from jaxopt_rl.data.builder.validation import limits_for, record_outcomes, run_solutions
from jaxopt_rl.data.schema import (
    CAMPAIGN_KIND,
    GenInfo,
    Problem,
    ProblemTest,
    generated_test_id,
    generator_seed,
)
from sandbox_cluster.api import Status, TestCase


def normalise_output(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _token_equal(a: str, b: str, tolerance: float | None) -> bool:
    if a == b:
        return True
    if tolerance is None:
        return False
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= tolerance * max(1.0, abs(x), abs(y))


def outputs_agree(a: str, b: str, tolerance: float | None = None) -> bool:
    """Whitespace-token comparison (the sandbox's rule), numeric tokens within tolerance."""
    tokens_a, tokens_b = a.split(), b.split()
    return len(tokens_a) == len(tokens_b) and all(
        _token_equal(x, y, tolerance) for x, y in zip(tokens_a, tokens_b))


def consensus(outputs: list[list[str] | None], min_agree: int, tolerance: float | None
              ) -> tuple[int | None, str]:
    """Index of the representative of the largest agreeing group, or (None, why not).

    `outputs[i]` is solution i's whole output list, None if it failed on some input.
    """
    groups: list[list[int]] = []
    for i, out in enumerate(outputs):
        if out is None:
            continue
        for group in groups:
            ref = outputs[group[0]]
            if all(outputs_agree(x, y, tolerance) for x, y in zip(out, ref)):
                group.append(i)
                break
        else:
            groups.append([i])
    if not groups:
        return None, "no reference finished every input"
    sizes = sorted((len(g) for g in groups), reverse=True)
    if sizes[0] < min_agree:
        return None, f"references disagree (largest agreeing group {sizes[0]} < {min_agree})"
    if len(sizes) > 1 and sizes[1] == sizes[0]:
        return None, f"ambiguous: two agreeing groups of {sizes[0]}"
    best = max(groups, key=len)
    return best[0], ""


def _pool(problem: Problem, campaign: str, size: int):
    def rank(s):
        return hashlib.sha256(f"{problem.problem_id}/{campaign}/{s.solution_id}".encode()).hexdigest()

    return sorted(problem.verified_correct(), key=rank)[:size]


def _schedule(config) -> list[str]:
    return [method for _ in range(config.rounds) for method in config.schedule]


def generate(problem: Problem, context: StageContext, campaign: str) -> StageResult:
    """One campaign: generate -> agree -> re-verify -> accept (see the module docstring)."""
    config = getattr(context.config, f"{campaign}_campaign")
    kind = CAMPAIGN_KIND[campaign]
    stats: dict[str, Any] = {"attempts": config.attempts, "generator_ok": 0, "accepted": 0,
                             "tests": 0, "rejections": Counter()}
    base = dataclasses.replace(problem, tests=tuple(t for t in problem.tests if t.kind != kind))
    if not problem.generators:
        stats["rejections"]["no generator source"] = config.attempts
        return StageResult(_with_stats(base, campaign, stats))
    methods = _schedule(config)
    inputs = _run_generators(problem, context, campaign, config, methods, stats)
    pool = _pool(problem, campaign, config.verification_pool)
    candidates = _agree(problem, context, pool, inputs, config, stats)
    accepted = _reverify(problem, context, pool, inputs, candidates, stats)

    tests: list[ProblemTest] = []
    pool_codes: dict[str, list[str]] = {s.solution_id: [] for s in pool}
    seen: set[str] = set()
    for a in accepted:
        rep, expect, codes = candidates[a]
        for j, (method, text, out) in enumerate(zip(methods, inputs[a], expect)):
            if config.dedupe_inputs and text in seen:
                continue
            if config.max_test_chars is not None and len(text) + len(out) > config.max_test_chars:
                stats["rejections"]["test over max_test_chars"] += 1
                continue
            seen.add(text)
            seed = generator_seed(problem.problem_id, campaign, a, method, j)
            tests.append(ProblemTest(generated_test_id(kind, a, j), kind, "generated", text, out,
                                     GenInfo(campaign, a, method, j, seed, pool[rep].solution_id)))
            for s, row in zip(pool, codes):
                pool_codes[s.solution_id].append(row[j])
    stats["tests"] = len(tests)
    updated = dataclasses.replace(base, tests=base.tests + tuple(tests))
    meta = record_outcomes(updated, kind, tests, {k: "".join(v) for k, v in pool_codes.items()})
    return StageResult(_with_stats(dataclasses.replace(updated, meta=meta), campaign, stats))


def _run_generators(problem: Problem, context: StageContext, campaign: str, config,
                    methods: list[str], stats: dict[str, Any]) -> dict[int, list[str]]:
    """attempt -> its generated inputs, for attempts whose every call succeeded."""
    limits = limits_for(problem, context, time_s=config.generator_time_s)
    runs = [
        Run(generator_program(problem.generators[a % len(problem.generators)]),
            tuple(generator_request(m, generator_seed(problem.problem_id, campaign, a, m, j))
                  for j, m in enumerate(methods)),
            limits)
        for a in range(config.attempts)
    ]
    inputs: dict[int, list[str]] = {}
    for a, results in enumerate(context.executor.run_many(runs)):
        bad = next((r for r in results if r.status is not Status.SUCCESS), None)
        if bad is not None:
            tail = (bad.stderr or bad.detail or "").strip().splitlines()[-1:] or [bad.status.value]
            stats["rejections"][f"generator {bad.status.value}: {tail[0][:160]}"] += 1
            continue
        inputs[a] = [stdout_text(r) for r in results]
    stats["generator_ok"] = len(inputs)
    return inputs


def _agree(problem: Problem, context: StageContext, pool, inputs: dict[int, list[str]], config,
           stats: dict[str, Any]) -> dict[int, tuple[int, list[str], list[list[str]]]]:
    """attempt -> (representative, normalised expected outputs, pool verdicts per input)."""
    order = sorted(inputs)
    runs = [Run(s.code, tuple(TestCase(x, None) for x in inputs[a]), limits_for(problem, context),
                problem.float_tolerance, problem.interface)
            for a in order for s in pool]
    results = context.executor.run_many(runs) if runs else []
    candidates = {}
    for k, a in enumerate(order):
        rows = results[k * len(pool):(k + 1) * len(pool)]
        outputs = [[stdout_text(r) for r in rs] if all(r.status is Status.SUCCESS for r in rs)
                   else None for rs in rows]
        rep, why = consensus(outputs, config.min_agree, problem.float_tolerance)
        if rep is None:
            stats["rejections"][why] += 1
            continue
        judged = [[_judge(r, ref, problem.float_tolerance) for r, ref in zip(rs, outputs[rep])]
                  for rs in rows]
        candidates[a] = (rep, [normalise_output(o) for o in outputs[rep]], judged)
    return candidates


def _reverify(problem: Problem, context: StageContext, pool, inputs: dict[int, list[str]],
              candidates: dict, stats: dict[str, Any]) -> list[int]:
    """Attempts whose representative passes its own consensus through the sandbox checker."""
    order = sorted(candidates)
    runs = [Run(pool[candidates[a][0]].code,
                tuple(TestCase(x, y) for x, y in zip(inputs[a], candidates[a][1])),
                limits_for(problem, context), problem.float_tolerance, problem.interface)
            for a in order]
    accepted = []
    for a, results in zip(order, context.executor.run_many(runs) if runs else []):
        if any(r.status is not Status.SUCCESS for r in results):
            stats["rejections"]["re-verification failed"] += 1
            continue
        accepted.append(a)
    stats["accepted"] = len(accepted)
    return accepted


def _judge(result, expected: str, tolerance: float | None) -> str:
    """A pool member's verdict on one input against the consensus: S, W or its failure code."""
    code = outcome_code(result)
    if code != "S":
        return code
    return "S" if outputs_agree(stdout_text(result), expected, tolerance) else "W"


def _with_stats(problem: Problem, campaign: str, stats: dict[str, Any]) -> Problem:
    meta = dict(problem.meta)
    campaigns = dict(meta.get("campaigns", {}))
    stats = dict(stats, rejections=dict(sorted(stats["rejections"].items())))
    campaigns[campaign] = stats
    meta["campaigns"] = campaigns
    return dataclasses.replace(problem, meta=meta)


def execute(problem: Problem, context: StageContext, campaign: str) -> StageResult:
    """Run every solution not already judged on the campaign's tests (its outcome matrix)."""
    kind = CAMPAIGN_KIND[campaign]
    tests = problem.tests_of(kind)
    known = problem.meta.get("outcomes", {}).get(kind, {}).get("by_solution", {})
    todo = [s for s in problem.solutions if s.solution_id not in known]
    results = run_solutions(problem, context, todo, tests)
    by_solution = {s.solution_id: "".join(outcome_code(r) for r in rs)
                   for s, rs in zip(todo, results)}
    meta = record_outcomes(problem, kind, tests, by_solution)
    return StageResult(dataclasses.replace(problem, meta=meta))
