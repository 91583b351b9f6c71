"""One program on one batch of tests in one slot: jails, repeats, checking, merged results.

`execute_batch` is what a pool slot does with a job. The program is compiled once per jail;
the tests run one at a time in that jail. If the jail is lost mid-batch (the program broke
the harness) that test is scored by `checking.classify` and a fresh jail takes the remaining
tests. A jail that cannot start is an infra_error for the tests it should have run. A checker
runs as a job of its own, in a jail from the same slot, after the program's runs.

Repeats (`Limits.repeats = k`): round 1 runs every test; rounds 2..k re-run, in the same
order, the tests whose first run ended normally (exit 0 within limits), so a slow moment of
the machine is spread over tests rather than hitting all repeats of one test. A test's status
is the first non-success verdict over its runs (a program that is not reliably correct is not
correct); if all runs succeed its duration is the minimum over runs ("min", default: the
least-perturbed measurement of a deterministic program) or the median ("median"), and every
run's duration is kept in `TestResult.extra["durations_s"]`.
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass
from typing import Protocol

from sandbox_cluster.api import Limits, Status, TestCase, TestResult
from sandbox_cluster.checking import (
    CheckerReply,
    Verdict,
    check_default,
    checker_input,
    checker_verdict,
    classify,
    parse_checker_run,
)
from sandbox_cluster.jails import JailBackend, JailStartError
from sandbox_cluster.jails.session import MAX_SOURCE_BYTES, HarnessLost, JailSession, RawRun

log = logging.getLogger(__name__)
REPEAT_AGGREGATES = ("min", "median")
CHECKER_LIMITS = Limits(time_s=10.0, memory_mb=1024, output_mb=1)


@dataclass(frozen=True)
class BatchJob:
    program: str
    tests: tuple[TestCase, ...]
    limits: Limits
    interface: str = "stdio"
    checker: str | None = None
    float_tolerance: float | None = None
    repeat_aggregate: str = "min"
    seccomp: bool = True


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


class JailSource(Protocol):
    """Where a batch gets its jails: a pool slot (its spare first, a fresh one otherwise)."""

    backend: JailBackend

    def take(self) -> JailSession:
        """A started jail with no program in flight; JailStartError if none can start."""

    def give_back(self, session: JailSession) -> None:
        """Return a jail after use: kept for the next program if still clean, else closed."""

    def count(self, event: str) -> None:
        """Note an event for the pool's stats ("jail_start_failures", "harness_lost")."""


class _ProgramJail:
    """The program's current jail, replaced when lost. `acquire` returns a loaded session,
    or a Verdict that then applies to every remaining test: a compile error or a harness lost
    while compiling (runtime_error), or a jail that would not start even after the slot's
    retry (infra_error)."""

    def __init__(self, jails: JailSource, job: BatchJob, source: bytes, interface: str,
                 limits: Limits, early: Verdict | None = None) -> None:
        self.jails, self.job, self.source = jails, job, source
        self.interface, self.limits = interface, limits
        self.session: JailSession | None = None
        self.fatal = early

    def acquire(self) -> JailSession | Verdict:
        if self.fatal is not None:
            return self.fatal
        if self.session is not None and self.session.usable():
            return self.session
        self.release()
        try:
            self.session = self.jails.take()
            error = self.session.load(self.source, self.interface, self.limits,
                                      self.job.seccomp)
        except JailStartError as exc:
            self.jails.count("jail_start_failures")
            self.fatal = Verdict(Status.INFRA_ERROR, 0.0, str(exc)[:2000])
            return self.fatal
        except HarnessLost as exc:
            self.jails.count("harness_lost")
            self.fatal = Verdict(Status.RUNTIME_ERROR, 0.0, str(exc))
            return self.fatal
        if error is not None:
            self.fatal = Verdict(Status.RUNTIME_ERROR, 0.0, f"compile error: {error}")
            return self.fatal
        return self.session

    def release(self) -> None:
        if self.session is not None:
            self.jails.give_back(self.session)
            self.session = None


def _run_program(job: BatchJob, jails: JailSource,
                 ) -> tuple[list[list[RawRun]], list[list[Verdict | None]]]:
    """Every run of every test: raw runs and their verdicts (None: exited normally, output
    still to be checked)."""
    n = len(job.tests)
    runs: list[list[RawRun]] = [[] for _ in range(n)]
    verdicts: list[list[Verdict | None]] = [[] for _ in range(n)]
    early = None
    try:
        source = job.program.encode("utf-8")
    except UnicodeEncodeError as exc:
        source, early = b"", Verdict(Status.RUNTIME_ERROR, 0.0, f"source is not UTF-8: {exc}")
    if len(source) > MAX_SOURCE_BYTES:
        early = Verdict(Status.RUNTIME_ERROR, 0.0, f"program of {len(source)} bytes is too large")
    program = _ProgramJail(jails, job, source, job.interface, job.limits, early)
    try:
        for round_index in range(job.limits.repeats):
            # Later rounds re-run only the tests whose first run ended normally.
            order = [i for i in range(n) if round_index == 0 or verdicts[i][0] is None]
            for k, i in enumerate(order):
                session = program.acquire()
                if isinstance(session, Verdict):
                    runs[i].append(RawRun(failure="early"))
                    verdicts[i].append(session)
                    continue
                after = order[k + 1] if k + 1 < len(order) else None
                next_test = None if after is None else (after, _as_bytes(job.tests[after].input))
                raw = session.run(i, _as_bytes(job.tests[i].input), next_test)
                if raw.failure == "harness_lost":
                    jails.count("harness_lost")
                runs[i].append(raw)
                verdicts[i].append(classify(raw, job.limits))
    finally:
        program.release()
    return runs, verdicts


def _check_outputs(job: BatchJob, runs, verdicts, jails: JailSource) -> None:
    """Fill in the verdicts left None: default comparison, or the checker (a job of its own
    in a jail from the same slot; the program's outputs are its inputs)."""
    pending = [(i, r) for i, vs in enumerate(verdicts) for r, v in enumerate(vs) if v is None]
    if job.checker is None:
        for i, r in pending:
            verdicts[i][r] = check_default(runs[i][r], job.tests[i].expected, job.float_tolerance)
        return
    items: dict[tuple[int, bytes], list[int]] = {}
    for i, r in pending:
        try:
            runs[i][r].stdout.decode("utf-8")
        except UnicodeDecodeError:
            verdicts[i][r] = Verdict(Status.WRONG_ANSWER, runs[i][r].duration_s,
                                     "output is not UTF-8")
            continue
        items.setdefault((i, runs[i][r].stdout), []).append(r)
    keys = list(items)
    for (i, output), (reply, self_check) in zip(keys, run_checker(job, keys, jails)):
        for r in items[(i, output)]:
            verdicts[i][r] = checker_verdict(reply, runs[i][r].duration_s, self_check)


def run_checker(job: BatchJob, items: list[tuple[int, bytes]], jails: JailSource,
                ) -> list[tuple[CheckerReply, CheckerReply | None]]:
    """(reply, self-check reply or None) per (test index, output). The self-check runs only
    when a reply failed and an expected output exists."""
    source = job.checker.encode("utf-8", "surrogatepass")
    checker = _ProgramJail(jails, job, source, "checker", CHECKER_LIMITS)

    def call(i: int, output: str, expected) -> CheckerReply:
        session = checker.acquire()
        if isinstance(session, Verdict):
            reason = session.detail.replace("compile error", "checker does not compile")
            return CheckerReply("broken", error=reason)
        data = checker_input(job.tests[i].input, output, expected)
        return parse_checker_run(session.run(i, data), CHECKER_LIMITS)

    results = []
    try:
        for i, stdout in items:
            expected = job.tests[i].expected
            reply = call(i, stdout.decode("utf-8"), expected)
            self_check = None
            if reply.kind == "failed" and expected is not None:
                self_check = call(i, _as_bytes(expected).decode("utf-8", "replace"), expected)
            results.append((reply, self_check))
    finally:
        checker.release()
    return results


def _merge(job: BatchJob, runs: list[RawRun], verdicts: list[Verdict], backend: str,
           ) -> TestResult:
    first_bad = next((k for k, v in enumerate(verdicts) if v.status is not Status.SUCCESS),
                     None)
    pick = first_bad if first_bad is not None else 0
    verdict, raw = verdicts[pick], runs[pick]
    duration = verdict.duration_s
    extra = {"backend": backend, "outside_wall_s": raw.outside_wall_s,
             "max_rss_kb": raw.max_rss_kb, "exit_code": raw.exit_code, "signal": raw.signal}
    if len(runs) > 1:
        durations = [v.duration_s for v in verdicts]
        extra["durations_s"] = durations
        if first_bad is None:
            duration = (min(durations) if job.repeat_aggregate == "min"
                        else statistics.median(durations))
    return TestResult(status=verdict.status, duration_s=duration, cpu_s=raw.cpu_s,
                      stdout=raw.stdout, stderr=raw.stderr.decode("utf-8", "replace"),
                      score=verdict.score, detail=verdict.detail, extra=extra)


def execute_batch(job: BatchJob, jails: JailSource) -> list[TestResult]:
    """Run `job` with jails from `jails` (a pool slot); one TestResult per test, in order."""
    runs, verdicts = _run_program(job, jails)
    _check_outputs(job, runs, verdicts, jails)
    return [_merge(job, runs[i], verdicts[i], jails.backend.name) for i in range(len(job.tests))]
