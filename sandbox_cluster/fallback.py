"""The paper's fallback rules (docs/design/sandbox-timing.md §4, §8 property 14) as pure functions.

After the fleet's immediate retries, some tests of a program may still be inconclusive
(infra_error). Local fallback may recover their *verdicts* on the worker, never their timing:

1. Definitive fleet results are kept exactly as returned (status, duration, everything).
2. Early stop: if the fleet returned a definitive *hard failure* (wrong answer, runtime error,
   memory or output limit) on any test, the reward is negative anyway: no local reruns. A
   definitive *timeout* alone does not stop them (an unresolved test could still reveal a
   failure, which some rewards penalise more than a timeout).
3. Per-category conversion of a local verdict:
   * optimization test, local success -> `timeout` with duration = the service cap
     (`Limits.time_s`): local speed is never read as fleet success or as timing;
   * correctness test -> the local verdict only, no duration imported;
   * a local timeout stays a timeout at the cap (either category);
   * a local infra_error stays inconclusive.

Provenance (in `TestResult.extra`, set by the client on every result):
    node     fleet node URL, "embedded" (in-process pool) or "local" (fallback rerun)
    attempts executions of this test that returned something (1 + immediate retries, +1 local)
    timing   a word of `api.TIMINGS`: "fleet": duration_s was measured on `node`;
             "cap": duration_s is the time cap standing in for a verdict (timeout);
             "none": no duration exists; duration_s is a 0.0 placeholder that must not be
             read as timing (local verdicts, infra errors)
    fallback present (True) on results that came from a local rerun, with `local_status`.
The reward layer reads `node`/`timing` to refuse mixing local and fleet durations
(docs/design/sandbox-timing.md §1.15).

Choice: results whose test kind is unknown (`test_kinds=None`) are treated as optimization
tests, the conservative side: a local success then becomes a timeout at the cap, which can only
lower a reward, never raise it on the strength of an untimed local run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sandbox_cluster.api import TEST_KINDS, Limits, Status, TestResult

CORRECTNESS = "correctness"
OPTIMIZATION = "optimization"
KIND_ALIASES = {"correctness": CORRECTNESS, "optimization": OPTIMIZATION,
                **dict(zip(TEST_KINDS, (CORRECTNESS, CORRECTNESS, OPTIMIZATION), strict=True))}
HARD_FAILURES = frozenset({Status.WRONG_ANSWER, Status.RUNTIME_ERROR, Status.MEMORY_LIMIT,
                           Status.OUTPUT_LIMIT})


def normalize_test_kinds(test_kinds: Sequence[str] | None, n_tests: int) -> tuple[str, ...]:
    """Map T0/T+/TO or correctness/optimization to the two categories (None: optimization)."""
    if test_kinds is None:
        return (OPTIMIZATION,) * n_tests
    if isinstance(test_kinds, str):
        raise TypeError("test_kinds: expected a list with one kind per test, got a string")
    kinds = list(test_kinds)
    if len(kinds) != n_tests:
        raise ValueError(f"test_kinds: {len(kinds)} kinds for {n_tests} tests")
    out = []
    for i, kind in enumerate(kinds):
        if kind not in KIND_ALIASES:
            raise ValueError(f"test_kinds[{i}]: unknown kind {kind!r} "
                             f"(one of {', '.join(KIND_ALIASES)})")
        out.append(KIND_ALIASES[kind])
    return tuple(out)


def inconclusive_indices(results: Sequence[TestResult]) -> list[int]:
    return [i for i, r in enumerate(results) if not r.status.is_conclusive]


def early_stop_reason(results: Sequence[TestResult]) -> str | None:
    """Why local reruns are skipped (a definitive hard failure), or None if they may run."""
    for i, result in enumerate(results):
        if result.status in HARD_FAILURES:
            return f"test {i} is a definitive {result.status.value}"
    return None


def convert_local(local: TestResult, kind: str, limits: Limits, attempts: int) -> TestResult:
    """A local fallback result as it may enter rewards: verdict only, never local timing."""
    provenance = {"node": "local", "attempts": attempts, "fallback": True,
                  "local_status": local.status.value}
    if local.status is Status.INFRA_ERROR:
        return TestResult(Status.INFRA_ERROR, 0.0, detail=f"local fallback inconclusive: "
                          f"{local.detail}", extra={**provenance, "timing": "none"})
    if local.status is Status.SUCCESS and kind == OPTIMIZATION:
        return TestResult(Status.TIMEOUT, limits.time_s,
                          detail="fallback: local success on an optimization test counts as "
                                 "a timeout at the cap",
                          extra={**provenance, "timing": "cap"})
    if local.status is Status.TIMEOUT:
        return TestResult(Status.TIMEOUT, limits.time_s, detail="fallback: local timeout",
                          extra={**provenance, "timing": "cap"})
    return dataclasses.replace(local, duration_s=0.0, cpu_s=0.0,
                               detail=f"fallback: local verdict only; {local.detail}".rstrip(
                                   "; "),
                               extra={**local.extra, **provenance, "timing": "none"})


def skipped(result: TestResult, reason: str) -> TestResult:
    """An inconclusive result whose local rerun was skipped by the early-stop rule."""
    return dataclasses.replace(result, detail=f"{result.detail}; fallback skipped: {reason}"
                               .lstrip("; "), extra={**result.extra, "fallback_skipped": reason})


def merge(remote: Sequence[TestResult], local: dict[int, TestResult],
          kinds: Sequence[str], limits: Limits) -> list[TestResult]:
    """Combine fleet results with local reruns of (some of) their inconclusive tests.

    `local[i]` must only exist for inconclusive `remote[i]`; definitive fleet results are
    returned unchanged (the same objects).
    """
    merged = list(remote)
    for i, result in local.items():
        if remote[i].status.is_conclusive:
            raise ValueError(f"test {i}: a definitive fleet result ({remote[i].status.value}) "
                             "must not be overwritten by a local rerun")
        # A result without provenance (straight from a pool) was still one execution.
        attempts = int(remote[i].extra.get("attempts", 1)) + 1
        merged[i] = convert_local(result, kinds[i], limits, attempts)
    return merged
