"""Sandbox results -> typed execution records: THE one place this conversion happens.

A `TestResult` (sandbox_cluster) knows its verdict, its duration and where that duration came
from (`extra`, set by the client on every result; see `sandbox_cluster.fallback`):

    extra["node"]    fleet node URL, "embedded" (in-process pool) or "local" (fallback rerun)
    extra["timing"]  a word of `sandbox_cluster.api.TIMINGS`: "fleet" (duration_s measured on
                     `node`), "cap" (the cap standing in for a timeout verdict), "none" (no
                     duration; duration_s is a placeholder); the old "measured" reads as "fleet"

The record (`jaxopt_rl.data.execution_records.ExecutionRecord`) keeps what the reward layer
needs beside the verdict: the test's kind and input size (`io_chars`, for the length filter),
the cap the test ran under (`limit_s`, the job's `Limits.time_s`), and the provenance of the
duration in the same vocabulary, `TIMINGS`, now settled against the node:

    fleet  measured on the timing fleet (a fleet node; or the embedded pool, unless the caller
           says `embedded_is_fleet=False`)
    cap    a timeout at the cap (a fleet timeout, or a fallback's converted local verdict)
    local  measured off the timing fleet (node "local": a fallback rerun)
    none   no duration (infra errors, tests not run, local verdicts without a duration)

What a provenance does to a duration is not decided here but by the one rule,
`jaxopt_rl.data.execution_table.timed_duration` (only `fleet` durations rank, timeouts count at
their cap). A result without provenance (straight from a pool, no client) is taken as measured
where it ran: `fleet`.

Choice: the embedded pool runs the same jails in the trainer's process; a development run has
nothing else, so it counts as the fleet by default. A run that must follow
docs/design/sandbox-timing.md §4 to the letter (no durations measured beside the training job)
passes `embedded_is_fleet=False`, which turns those durations into `local`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from jaxopt_rl.data.execution_records import ExecutionRecord
from sandbox_cluster.api import LEGACY_TIMINGS, Status, TestResult


@dataclasses.dataclass(frozen=True)
class TestSpec:
    """What a record keeps of the test a result belongs to."""

    __test__ = False

    test_id: str
    test_kind: str  # T0, T+ or TO
    io_chars: int  # len(input) + len(expected output)


def timing_of(result: TestResult, embedded_is_fleet: bool = True) -> str:
    """The provenance of `result.duration_s` (see the module docstring)."""
    extra = result.extra or {}
    node = extra.get("node")
    timing = extra.get("timing", "fleet")
    timing = LEGACY_TIMINGS.get(timing, timing)
    if timing == "cap" or (result.status is Status.TIMEOUT and timing != "none"):
        return "cap"
    if timing == "none" or result.status in (Status.INFRA_ERROR, Status.NOT_RUN):
        return "none"
    if node == "local" or extra.get("fallback"):
        return "local"
    if node == "embedded" and not embedded_is_fleet:
        return "local"
    return "fleet"


def execution_record(problem_id: str, rollout_id: str, test: TestSpec, result: TestResult,
                     limit_s: float, embedded_is_fleet: bool = True) -> ExecutionRecord:
    """One sandbox result of rollout `rollout_id` on `test`, run under the cap `limit_s`."""
    return ExecutionRecord(
        problem_id=problem_id, rollout_id=rollout_id, test_id=test.test_id,
        test_kind=test.test_kind, status=result.status, duration_s=float(result.duration_s),
        limit_s=float(limit_s), io_chars=int(test.io_chars), cpu_s=float(result.cpu_s),
        timing=timing_of(result, embedded_is_fleet))


def execution_records(problem_id: str, rollout_id: str, tests: Sequence[TestSpec],
                      results: Sequence[TestResult], limit_s: float,
                      embedded_is_fleet: bool = True) -> list[ExecutionRecord]:
    """The records of one program's run: `results[i]` is the result on `tests[i]`."""
    if len(tests) != len(results):
        raise ValueError(f"problem {problem_id!r}, rollout {rollout_id!r}: {len(results)} "
                         f"results for {len(tests)} tests")
    return [execution_record(problem_id, rollout_id, test, result, limit_s, embedded_is_fleet)
            for test, result in zip(tests, results)]


__all__ = ["TestSpec", "execution_record", "execution_records", "timing_of"]
