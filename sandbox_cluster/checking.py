"""From a raw run to a verdict: limits, exit status, output comparison, checker programs.

Order of the verdict for one run (`classify`, then `compare_output` or a checker):
1. infra: the child's setup failed before program code ran, or the test input is unusable
   (function programs: not a JSON object) -> infra_error;
2. memory_limit (cgroup): the slot's cgroup OOM-killed something during the test. It comes
   before timeout because a program whose children were OOM-killed often then waits out the
   clock, and "broke the memory envelope" is the truer verdict;
3. timeout: the limit was reached: killed at the wall cap, a measured duration >=
   `Limits.time_s`, or a death by SIGXCPU after the child's CPU time reached the RLIMIT_CPU
   the harness set (`harness.cpu_rlimit_s`: whole seconds, past the cap); the duration is
   recorded AT the cap (docs/design/sandbox-timing.md §1.7). A SIGXCPU below that limit was sent by
   the program itself (os.kill, signal.raise_signal, or a soft RLIMIT_CPU it lowered) and is a
   runtime_error like any other signal: a timeout is tolerated by the optimization gates and must
   not be forgeable. A harness that stops answering (watchdog) is a timeout too;
4. memory_limit: the program died of an uncaught MemoryError (its RLIMIT_AS) AND the kernel
   saw it hold at least `MEMORY_EVIDENCE_FRACTION` of `Limits.memory_mb` (peak RSS from
   wait4's rusage). The text alone is the program's to print: "MemoryError" printed at 10 MB
   is a runtime_error. RLIMIT_AS leaves no kernel record of a refused request, so a single
   allocation far above the cap (`[0] * 10**10`, small RSS) is a runtime_error too: either
   way a failure, and memory_limit always means the memory was really used;
5. output_limit: SIGXFSZ, or stdout or stderr reached `Limits.output_mb` (RLIMIT_FSIZE is that
   cap for every file the program writes; CPython ignores SIGXFSZ, so the write fails with
   EFBIG and the program usually dies of it: the file size is the reliable signal);
6. runtime_error: a non-zero exit, a death by signal, or a harness lost mid-test (the program
   is the only untrusted code running; see `jails.session`);
7. otherwise the output is checked: success or wrong_answer (or a checker's score).

Default comparison: whitespace-separated tokens (bytes.split), equal in number and value.
With `float_tolerance=t`, two tokens that are both plain decimal numbers (ASCII digits, an
optional sign, point and exponent: no underscores, no "inf"/"nan", which Python's float() would
read) match when |a - b| <= t * max(1, |b|) (absolute below 1, relative above; b is the
expected token), except that an expected token that looks like an integer is compared by exact
value: the tolerance exists for floating-point answers, and an integer answer (a count, a sum
modulo a prime) approximated through floats would otherwise pass ("123456789000" for
"123456789012" at 1e-6; every integer beyond 2**53 at any tolerance). "7.0" or "7e0" for "7"
still match: their exact value is 7. Other tokens must be identical. Without an expected output
(reference timing) exit 0 is success.

Checker protocol (problem authors write to it): a Python source defining
`check(test_input: str, program_output: str, expected_output: str | None)` returning True /
False (pass / wrong answer), a finite float score (success with `TestResult.score`), or the
string "invalid" (infeasible output: wrong_answer, detail "checker: invalid"). Checkers run in
a jail of their own (never in the program's), compiled once per batch, one fork per check.
Output that is not UTF-8 is a wrong answer before any checker sees it.

When a checker call fails (raises, crashes, runs out of time or memory, or returns anything
else), who is to blame? Anything a program's output makes the checker do is that output's
verdict, so a program can never escape its reward through the checker. With an expected
output the checker is re-run on (input, expected, expected): if it accepts its own reference
the failure came from the program's output -> wrong_answer; otherwise the checker is broken
-> infra_error. Without an expected output (score tasks) there is no reference to tell the
two apart, so every failure of check() on a program's output (RecursionError, MemoryError,
NameError, a crash, a checker timeout, ...) is wrong_answer (the program ran; its output is
not one the checker can accept), with the checker's error in the detail. A checker broken
for every output then fails every reference solution too, which the dataset build checks.
infra_error remains for a checker that does not compile or whose jail cannot start.
"""

from __future__ import annotations

import json
import math
import re
import signal
from dataclasses import dataclass
from decimal import Decimal

from sandbox_cluster.api import Limits, Status
from sandbox_cluster.harness import cpu_rlimit_s
from sandbox_cluster.jails.session import RawRun


@dataclass(frozen=True)
class Verdict:
    """Status + recorded duration (+ a checker score) of one run, before repeats are merged."""

    status: Status
    duration_s: float
    detail: str = ""
    score: float | None = None


MEMORY_EVIDENCE_FRACTION = 0.25
# The kernel sends SIGXCPU once the child's CPU time reaches its soft RLIMIT_CPU (checked
# against the exact runtime); wait4 reports user and system time in whole microseconds each.
RUSAGE_RESOLUTION_S = 2e-6


def last_error_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _exception_name(line: str) -> str:
    return line.split(":", 1)[0].strip().rsplit(".", 1)[-1]


def classify(raw: RawRun, limits: Limits) -> Verdict | None:
    """The verdict of a run that did not finish normally, or None when the program exited 0
    within its limits and its output must be checked."""
    cap = limits.time_s
    if raw.failure in ("setup", "input"):
        return Verdict(Status.INFRA_ERROR, 0.0, raw.detail)
    if raw.failure == "watchdog":
        return Verdict(Status.TIMEOUT, cap, raw.detail)
    if raw.failure == "harness_lost":
        status = Status.MEMORY_LIMIT if raw.oom_killed else Status.RUNTIME_ERROR
        return Verdict(status, min(raw.outside_wall_s, cap), raw.detail)
    duration = min(raw.duration_s, cap)
    if raw.oom_killed:  # the jail's memory envelope broke: say so even if it also ran long
        return Verdict(Status.MEMORY_LIMIT, duration, "memory cgroup OOM kill")
    cpu_exhausted = (raw.signal == signal.SIGXCPU
                     and raw.child_cpu_s >= cpu_rlimit_s(cap) - RUSAGE_RESOLUTION_S)
    if raw.timed_out or cpu_exhausted or raw.duration_s >= cap:
        return Verdict(Status.TIMEOUT, cap, f"time limit {cap:g}s")
    error_line = last_error_line(raw.stderr)
    used_bytes = raw.max_rss_kb * 1024
    if (raw.exit_code and _exception_name(error_line) == "MemoryError"
            and used_bytes >= MEMORY_EVIDENCE_FRACTION * (limits.memory_mb << 20)):
        return Verdict(Status.MEMORY_LIMIT, duration, f"memory limit {limits.memory_mb} MB")
    output_cap = limits.output_mb << 20
    if (raw.signal == signal.SIGXFSZ or raw.stdout_size >= output_cap
            or raw.stderr_size >= output_cap):
        return Verdict(Status.OUTPUT_LIMIT, duration, f"output limit {limits.output_mb} MB")
    if raw.signal is not None:
        try:
            name = signal.Signals(raw.signal).name
        except ValueError:
            name = f"signal {raw.signal}"
        return Verdict(Status.RUNTIME_ERROR, duration, f"killed by {name}")
    if raw.exit_code != 0:
        return Verdict(Status.RUNTIME_ERROR, duration,
                       f"exit {raw.exit_code}" + (f": {error_line}" if error_line else ""))
    return None


# Plain decimal numbers only: float() also reads "1_000", "infinity", "nan" and surrounding
# whitespace, none of which an expected output means as a number.
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(rb"[+-]?[0-9]+")


def tokens_match(got: bytes, want: bytes, float_tolerance: float | None) -> bool:
    """One output token against its expected token (rules in the module docstring)."""
    if got == want:
        return True
    if float_tolerance is None or not (_DECIMAL.fullmatch(got) and _DECIMAL.fullmatch(want)):
        return False
    if _INTEGER.fullmatch(want):  # exact: Decimal reads any length without rounding
        return Decimal(got.decode("ascii")) == Decimal(want.decode("ascii"))
    x, y = float(got), float(want)
    return math.isfinite(x) and math.isfinite(y) and abs(x - y) <= float_tolerance * max(1, abs(y))


def compare_output(output: bytes, expected: bytes, float_tolerance: float | None = None,
                   ) -> tuple[bool, str]:
    """Whitespace-token comparison; (match, detail naming the first difference)."""
    got, want = output.split(), expected.split()
    for index, (a, b) in enumerate(zip(got, want)):
        if not tokens_match(a, b, float_tolerance):
            return False, f"token {index}: got {a[:40]!r}, expected {b[:40]!r}"
    if len(got) != len(want):
        return False, f"{len(got)} tokens, expected {len(want)}"
    return True, ""


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


def check_default(raw: RawRun, expected: str | bytes | None,
                  float_tolerance: float | None) -> Verdict:
    if expected is None:
        return Verdict(Status.SUCCESS, raw.duration_s)
    ok, detail = compare_output(raw.stdout, _as_bytes(expected), float_tolerance)
    return Verdict(Status.SUCCESS if ok else Status.WRONG_ANSWER, raw.duration_s, detail)


# --- checker programs -----------------------------------------------------------------------


@dataclass(frozen=True)
class CheckerReply:
    """What one call of check() produced: "bool", "score", "invalid", "failed" (the call
    raised, crashed or returned something else) or "broken" (no checker could be run)."""

    kind: str
    value: bool | float | None = None
    error: str = ""


def parse_checker_run(raw: RawRun, checker_limits: Limits) -> CheckerReply:
    """Read the checker child's reply (its harness writes a small JSON object)."""
    outcome = classify(raw, checker_limits)
    if outcome is not None:
        error = last_error_line(raw.stderr) if outcome.status is Status.RUNTIME_ERROR else ""
        return CheckerReply("failed", error=error or f"{outcome.status}: {outcome.detail}")
    try:
        reply = json.loads(raw.stdout)
        kind, value = reply["kind"], reply.get("value")
    except (ValueError, KeyError, TypeError):
        return CheckerReply("failed", error=f"unreadable checker reply {raw.stdout[:100]!r}")
    if kind == "bool":
        return CheckerReply("bool", bool(value))
    if kind == "score" and isinstance(value, (int, float)) and math.isfinite(value):
        return CheckerReply("score", float(value))
    if kind == "str" and value == "invalid":
        return CheckerReply("invalid")
    return CheckerReply("failed", error=f"check() returned {reply.get('type') or value!r}, "
                                        "not True/False/float/'invalid'")


def checker_verdict(reply: CheckerReply, duration_s: float,
                    self_check: CheckerReply | None) -> Verdict:
    """The test's verdict from the checker's reply; `self_check` is the reply on the expected
    output (None when there is no expected output), consulted only when the checker failed."""
    if reply.kind == "bool":
        status = Status.SUCCESS if reply.value else Status.WRONG_ANSWER
        return Verdict(status, duration_s, "" if reply.value else "checker: rejected")
    if reply.kind == "score":
        return Verdict(Status.SUCCESS, duration_s, score=float(reply.value))
    if reply.kind == "invalid":
        return Verdict(Status.WRONG_ANSWER, duration_s, "checker: invalid")
    if reply.kind == "broken":  # the checker did not compile or its jail did not start
        return Verdict(Status.INFRA_ERROR, duration_s, reply.error)
    if self_check is not None:
        sane = self_check.kind == "score" or (self_check.kind == "bool" and self_check.value)
        if sane:
            return Verdict(Status.WRONG_ANSWER, duration_s,
                           f"checker failed on this output: {reply.error}")
        return Verdict(Status.INFRA_ERROR, duration_s,
                       f"checker broken (fails on the expected output too): {reply.error}")
    return Verdict(Status.WRONG_ANSWER, duration_s,
                   f"checker failed on this output: {reply.error}")


def checker_input(test_input: str | bytes, output: str, expected: str | bytes | None) -> bytes:
    """The JSON object the harness hands to check() as its three arguments."""
    def text(value: str | bytes) -> str:
        return value if isinstance(value, str) else value.decode("utf-8", "surrogateescape")

    return json.dumps({"test_input": text(test_input), "program_output": output,
                       "expected_output": None if expected is None else text(expected)}
                      ).encode("utf-8", "surrogatepass")
