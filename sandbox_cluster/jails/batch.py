"""One program on one batch of tests in one slot: jails, repeats, checking, merged results.

`execute_batch` is what a pool slot does with a job. The program is compiled once per jail;
the tests run one at a time in that jail. If the jail is lost mid-batch (the program broke
the harness) that test is scored by `checking.classify` and a fresh jail takes the remaining
tests. A jail that cannot start is an infra_error for the tests it should have run. A checker
runs as a job of its own, in a jail from the same slot, after the program's runs.

Repeats (`Limits.repeats = k`): round 1 runs every test; rounds 2..k re-run, in the same
order, the tests whose first run succeeded, so a slow moment of
the machine is spread over tests rather than hitting all repeats of one test. A test's status
is the first non-success verdict over its runs (a program that is not reliably correct is not
correct); if all runs succeed its duration is the minimum over runs ("min", default: the
least-perturbed measurement of a deterministic program) or the median ("median"), and every
run's duration is kept in `TestResult.extra["durations_s"]`.

`stop_after_failure`: after the first definitive failure on a correctness test no further run
starts, in this round or later ones; the tests that never ran are `not_run`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import statistics
from typing import Protocol

from sandbox_cluster.api import Limits, RunRequest, Status, TestResult
from sandbox_cluster.checking import (
    CheckerReply,
    Verdict,
    check_default,
    checker_input,
    checker_verdict,
    classify,
    parse_checker_run,
)
from sandbox_cluster.jails.base import JailBackend, JailStartError
from sandbox_cluster.jails.session import MAX_SOURCE_BYTES, HarnessLost, JailSession, RawRun

log = logging.getLogger(__name__)
CHECKER_LIMITS = Limits(time_s=10.0, memory_mb=1024, output_mb=1)


# What a slot executes: the sandbox's one run request (its repeat_aggregate resolved by the
# pool); the name stays for callers of this module.
BatchJob = RunRequest


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


class JailSource(Protocol):
    """Where a batch gets its jails: a pool slot (its spare first, a fresh one otherwise)."""

    backend: JailBackend
    seccomp: bool  # load the seccomp filter in the jails' job processes

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
        # A harness lost while loading is retried once in a fresh jail before it counts as the
        # program's verdict: no program code has run yet, and a kept jail can be the one that
        # died (seen on bwrap: the jail kept across a checker job). A program whose source
        # kills the harness twice gets runtime_error, as before.
        for attempt in range(2):
            try:
                self.session = self.jails.take()
                error = self.session.load(self.source, self.interface, self.limits,
                                          self.jails.seccomp)
                break
            except JailStartError as exc:
                self.jails.count("jail_start_failures")
                self.fatal = Verdict(Status.INFRA_ERROR, 0.0, str(exc)[:2000])
                return self.fatal
            except HarnessLost as exc:
                self.jails.count("harness_lost")
                self.release()
                if attempt == 1:
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


class _OutputChecker:
    """Judges each run's output as soon as the run ends, so the supervisor holds at most the
    output it will report per test (the first run's, or the first failing one's) plus the
    one being judged: memory grows with tests x output size, never with repeats. A checker
    runs as a job of its own, in a second jail of the slot, started on first use; the program
    is idle meanwhile (no test is pipelined while a checker is in use). Identical outputs of
    one test are judged once."""

    def __init__(self, job: BatchJob, jails: JailSource) -> None:
        self.job, self.jails = job, jails
        self.checker: _ProgramJail | None = None
        self.replies: dict[tuple[int, bytes], tuple[CheckerReply, CheckerReply | None]] = {}

    def verdict(self, i: int, raw: RawRun) -> Verdict:
        job = self.job
        if job.checker is None:
            return check_default(raw, job.tests[i].expected, job.float_tolerance)
        try:
            output = raw.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return Verdict(Status.WRONG_ANSWER, raw.duration_s, "output is not UTF-8")
        key = (i, hashlib.sha256(raw.stdout).digest())
        if key not in self.replies:
            self.replies[key] = self._check(i, output)
        reply, self_check = self.replies[key]
        return checker_verdict(reply, raw.duration_s, self_check)

    def _check(self, i: int, output: str) -> tuple[CheckerReply, CheckerReply | None]:
        """(reply, self-check reply or None). The self-check runs only when a reply failed
        and an expected output exists."""
        expected = self.job.tests[i].expected
        reply = self._call(i, output, expected)
        self_check = None
        if reply.kind == "failed" and expected is not None:
            self_check = self._call(i, _as_bytes(expected).decode("utf-8", "replace"), expected)
        return reply, self_check

    def _call(self, i: int, output: str, expected) -> CheckerReply:
        if self.checker is None:
            source = self.job.checker.encode("utf-8", "surrogatepass")
            self.checker = _ProgramJail(self.jails, self.job, source, "checker", CHECKER_LIMITS)
        session = self.checker.acquire()
        if isinstance(session, Verdict):
            reason = session.detail.replace("compile error", "checker does not compile")
            return CheckerReply("broken", error=reason)
        data = checker_input(self.job.tests[i].input, output, expected)
        return parse_checker_run(session.run(i, data), CHECKER_LIMITS)

    def close(self) -> None:
        if self.checker is not None:
            self.checker.release()


def _run_program(job: BatchJob, jails: JailSource,
                 ) -> tuple[list[list[RawRun]], list[list[Verdict]]]:
    """Every run of every test and its verdict. A run's stdout is kept only while it may be
    the one reported (`_merge`: the first run's, or the first non-success)."""
    n = len(job.tests)
    runs: list[list[RawRun]] = [[] for _ in range(n)]
    verdicts: list[list[Verdict]] = [[] for _ in range(n)]
    early = None
    try:
        source = job.program.encode("utf-8")
    except UnicodeEncodeError as exc:
        source, early = b"", Verdict(Status.RUNTIME_ERROR, 0.0, f"source is not UTF-8: {exc}")
    if len(source) > MAX_SOURCE_BYTES:
        early = Verdict(Status.RUNTIME_ERROR, 0.0, f"program of {len(source)} bytes is too large")
    program = _ProgramJail(jails, job, source, job.interface, job.limits, early)
    checker = _OutputChecker(job, jails)
    stopped = ""  # why the remaining tests are not run (RunRequest.stop_after_failure)
    try:
        for round_index in range(job.limits.repeats):
            # Later rounds re-run only the tests whose first run ended normally.
            order = [i for i in range(n)
                     if round_index == 0 or verdicts[i][0].status is Status.SUCCESS]
            for k, i in enumerate(order):
                if stopped:
                    if not runs[i]:
                        runs[i].append(RawRun(failure="not_run"))
                        verdicts[i].append(Verdict(Status.NOT_RUN, 0.0, stopped))
                    continue
                session = program.acquire()
                if isinstance(session, Verdict):
                    runs[i].append(RawRun(failure="early"))
                    verdicts[i].append(session)
                    continue
                after = order[k + 1] if k + 1 < len(order) else None
                next_test = (None if after is None or job.checker is not None
                             else (after, _as_bytes(job.tests[after].input)))
                raw = session.run(i, _as_bytes(job.tests[i].input), next_test)
                if raw.failure == "harness_lost":
                    jails.count("harness_lost")
                verdict = classify(raw, job.limits) or checker.verdict(i, raw)
                reported = not runs[i] or (verdict.status is not Status.SUCCESS and all(
                    v.status is Status.SUCCESS for v in verdicts[i]))
                if runs[i] and not reported:
                    raw = dataclasses.replace(raw, stdout=b"")
                elif reported and runs[i] and verdicts[i][0].status is Status.SUCCESS:
                    runs[i][0] = dataclasses.replace(runs[i][0], stdout=b"")
                runs[i].append(raw)
                verdicts[i].append(verdict)
                if job.stops_at(i, verdict.status):
                    # a test sent ahead may be running: the jail is not reused (`reusable`)
                    stopped = f"not run: test {i} ended {verdict.status.value}"
    finally:
        program.release()
        checker.close()
    return runs, verdicts


def _merge(job: BatchJob, runs: list[RawRun], verdicts: list[Verdict], backend: str,
           ) -> TestResult:
    first_bad = next((k for k, v in enumerate(verdicts) if v.status is not Status.SUCCESS),
                     None)
    pick = first_bad if first_bad is not None else 0
    verdict, raw = verdicts[pick], runs[pick]
    duration = verdict.duration_s
    extra = {"backend": backend, "outside_wall_s": raw.outside_wall_s,
             "max_rss_kb": raw.max_rss_kb, "exit_code": raw.exit_code, "signal": raw.signal}
    # What the harness left out of the duration (the argument parse) and added to it (compile
    # time past the allowance); absent when no result came back from a harness.
    extra.update((key, raw.extra[key]) for key in ("parse_s", "compile_charge_s")
                 if key in raw.extra)
    if len(runs) > 1:
        durations = [v.duration_s for v in verdicts]
        extra["durations_s"] = durations
        if first_bad is None:
            duration = (min(durations) if job.repeat_aggregate in ("min", None)
                        else statistics.median(durations))
    return TestResult(status=verdict.status, duration_s=duration, cpu_s=raw.cpu_s,
                      stdout=raw.stdout, stderr=raw.stderr.decode("utf-8", "replace"),
                      score=verdict.score, detail=verdict.detail, extra=extra)


def execute_batch(job: BatchJob, jails: JailSource) -> list[TestResult]:
    """Run `job` with jails from `jails` (a pool slot); one TestResult per test, in order."""
    runs, verdicts = _run_program(job, jails)
    return [_merge(job, runs[i], verdicts[i], jails.backend.name) for i in range(len(job.tests))]
