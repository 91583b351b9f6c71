"""Verdicts: classification of raw runs, token comparison (against a slow reference and with
hypothesis), float tolerance, and the checker protocol (units and end to end in a jail)."""

from __future__ import annotations

import json
import math
import os
import signal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.checking import (
    CheckerReply,
    check_default,
    checker_input,
    checker_verdict,
    classify,
    compare_output,
    last_error_line,
    parse_checker_run,
)
from sandbox_cluster.jails import JailUnavailable
from sandbox_cluster.jails.session import RawRun
from sandbox_cluster.pool import LocalPool
from tests.sandbox_cluster.jail_required import no_jail

LIMITS = Limits(time_s=2.0, memory_mb=256, output_mb=1)


# --- classification -----------------------------------------------------------------------------

CLASSIFY_CASES = [
    (RawRun(exit_code=0, duration_s=0.1), None),
    (RawRun(exit_code=0, duration_s=2.0), Status.TIMEOUT),  # at the cap counts as over it
    (RawRun(timed_out=True, signal=9, duration_s=2.0), Status.TIMEOUT),
    # SIGXCPU is a timeout only once the child's CPU time reached the RLIMIT_CPU the harness
    # set: for a 2 s cap, 3 s (the cap rounded up to whole seconds, plus one). Sooner, the
    # program sent it to itself (a forged timeout would be tolerated by the gates).
    (RawRun(signal=signal.SIGXCPU, duration_s=1.5, child_cpu_s=3.0), Status.TIMEOUT),
    (RawRun(signal=signal.SIGXCPU, duration_s=0.002, child_cpu_s=0.001), Status.RUNTIME_ERROR),
    (RawRun(signal=signal.SIGXCPU, duration_s=1.9, child_cpu_s=1.9), Status.RUNTIME_ERROR),
    (RawRun(signal=signal.SIGXCPU, duration_s=1.5, child_cpu_s=2.999), Status.RUNTIME_ERROR),
    (RawRun(failure="watchdog", duration_s=2.0, timed_out=True), Status.TIMEOUT),
    (RawRun(signal=9, oom_killed=True, duration_s=0.3), Status.MEMORY_LIMIT),
    (RawRun(timed_out=True, oom_killed=True, duration_s=2.0), Status.MEMORY_LIMIT),
    # MemoryError is memory_limit only with the kernel's evidence (peak RSS near the cap):
    # printed at 10 MB it is the program's text, a runtime_error.
    (RawRun(exit_code=1, stderr=b"Traceback...\nMemoryError\n", max_rss_kb=250_000),
     Status.MEMORY_LIMIT),
    (RawRun(exit_code=1, stderr=b"Traceback...\nMemoryError\n", max_rss_kb=10_000),
     Status.RUNTIME_ERROR),
    (RawRun(exit_code=1, stderr=b"MemoryError\n"), Status.RUNTIME_ERROR),
    (RawRun(signal=signal.SIGXFSZ), Status.OUTPUT_LIMIT),
    (RawRun(exit_code=0, stdout_size=1 << 20), Status.OUTPUT_LIMIT),
    (RawRun(exit_code=1, stderr_size=1 << 20), Status.OUTPUT_LIMIT),
    (RawRun(signal=signal.SIGSEGV), Status.RUNTIME_ERROR),
    (RawRun(exit_code=3), Status.RUNTIME_ERROR),
    (RawRun(failure="harness_lost"), Status.RUNTIME_ERROR),
    (RawRun(failure="harness_lost", oom_killed=True), Status.MEMORY_LIMIT),
    (RawRun(failure="setup", exit_code=121), Status.INFRA_ERROR),
    (RawRun(failure="input"), Status.INFRA_ERROR),
]


@pytest.mark.parametrize(("raw", "status"), CLASSIFY_CASES)
def test_classify(raw: RawRun, status: Status | None) -> None:
    verdict = classify(raw, LIMITS)
    assert (verdict.status if verdict else None) is status
    if verdict is not None and status is Status.TIMEOUT:
        assert verdict.duration_s == LIMITS.time_s
    if verdict is not None:
        assert verdict.duration_s <= LIMITS.time_s


@given(cap_ms=st.integers(1, 30_000), cpu_ms=st.integers(0, 40_000))
def test_sigxcpu_is_a_timeout_exactly_from_the_cpu_limit_set(cap_ms: int, cpu_ms: int) -> None:
    # The limit as documented (docs/design/sandbox-timing.md caps; harness `cpu_rlimit_s`): the cap
    # in whole seconds rounded up, plus one. Any signal before it is the program's own doing.
    cap = cap_ms / 1000
    limit_s = math.ceil(cap) + 1
    verdict = classify(RawRun(signal=signal.SIGXCPU, duration_s=min(cpu_ms / 1000, cap / 2),
                              child_cpu_s=cpu_ms / 1000), Limits(time_s=cap))
    expected = Status.TIMEOUT if cpu_ms >= 1000 * limit_s else Status.RUNTIME_ERROR
    assert verdict.status is expected, (cap, cpu_ms, verdict)
    if expected is Status.RUNTIME_ERROR:
        assert verdict.detail == "killed by SIGXCPU"


def test_sigxcpu_at_the_limit_within_rusage_resolution_is_a_timeout() -> None:
    # rusage reports CPU in microseconds, so a child stopped by the kernel at the limit may read
    # a tick short of it: reaching limit - resolution is reaching the limit, a tick less is not.
    from sandbox_cluster.checking import RUSAGE_RESOLUTION_S
    limit_s = math.ceil(LIMITS.time_s) + 1
    for cpu_s, status in ((limit_s - RUSAGE_RESOLUTION_S, Status.TIMEOUT),
                          (limit_s - RUSAGE_RESOLUTION_S - 1e-6, Status.RUNTIME_ERROR)):
        raw = RawRun(signal=signal.SIGXCPU, duration_s=1.0, child_cpu_s=cpu_s)
        assert classify(raw, LIMITS).status is status, cpu_s


def test_runtime_error_detail_names_the_exception_or_signal() -> None:
    crash = classify(RawRun(exit_code=1, stderr=b"Traceback\nValueError: bad\n\n"), LIMITS)
    assert crash.detail == "exit 1: ValueError: bad"
    assert classify(RawRun(signal=signal.SIGSEGV), LIMITS).detail == "killed by SIGSEGV"


# --- token comparison ---------------------------------------------------------------------------


def reference_compare(output: bytes, expected: bytes) -> bool:
    """Obviously correct: split on every ASCII whitespace run, compare the lists."""
    def tokens(data: bytes) -> list[bytes]:
        out, current = [], b""
        for byte in data:
            if chr(byte) in " \t\n\r\x0b\x0c":
                if current:
                    out.append(current)
                current = b""
            else:
                current += bytes([byte])
        return out + ([current] if current else [])

    return tokens(output) == tokens(expected)


token = st.text(alphabet="ab1-.e", min_size=1, max_size=4).map(str.encode)
whitespace = st.sampled_from([b" ", b"\n", b"\t", b"\r\n", b"  \n"])


@st.composite
def rendered(draw, tokens):
    parts = [draw(whitespace) if draw(st.booleans()) else b""]
    for tok in tokens:
        parts += [tok, draw(whitespace)]
    return b"".join(parts)


@given(data=st.data(), want=st.lists(token, max_size=6), got=st.lists(token, max_size=6))
def test_compare_output_matches_reference(data, want, got) -> None:
    output, expected = data.draw(rendered(got)), data.draw(rendered(want))
    ok, detail = compare_output(output, expected)
    assert ok == reference_compare(output, expected)
    assert ok == (detail == "")


@given(want=st.lists(token, min_size=1, max_size=6), data=st.data())
def test_whitespace_layout_never_matters(want, data) -> None:
    assert compare_output(data.draw(rendered(want)), data.draw(rendered(want)))[0]


@given(expected=st.floats(-1e6, 1e6), error=st.floats(-1, 1), tolerance=st.sampled_from(
    [1e-9, 1e-6, 1e-3]))
def test_float_tolerance_is_absolute_below_one_relative_above(expected, error, tolerance):
    got = expected + error * tolerance * max(1.0, abs(expected)) * 0.999
    ok, _ = compare_output(repr(got).encode(), repr(expected).encode(), tolerance)
    assert ok
    far = expected + math.copysign(3 * tolerance * max(1.0, abs(expected)), error or 1)
    assert not compare_output(repr(far).encode(), repr(expected).encode(), tolerance)[0]


def test_float_tolerance_edge_cases() -> None:
    assert compare_output(b"1.0000001 x", b"1.0 x", 1e-6)[0]
    assert not compare_output(b"1.0000001 x", b"1.0 y", 1e-6)[0]  # words stay exact
    assert not compare_output(b"1.0000001", b"1", None)[0]  # no tolerance: exact tokens
    assert compare_output(b"nan", b"nan ", 1e-6)[0]  # identical tokens match
    assert not compare_output(b"nan", b"1.0", 1e6)[0]
    assert not compare_output(b"inf", b"1e308", 1.0)[0]
    ok, detail = compare_output(b"1 2", b"1 2 3")
    assert not ok and detail == "2 tokens, expected 3"


def test_integer_answers_are_never_approximated_through_floats() -> None:
    # The red-team cases: a float computation of an integer answer (counts, sums modulo a
    # prime) must not pass on a problem that happens to declare a float tolerance.
    for got, want in ((b"123456789000", b"123456789012"), (b"999999999", b"1000000000"),
                      (b"9007199254740993", b"9007199254740992"),  # equal as doubles
                      (b"1.0000001", b"1"), (b"41.99999999", b"42")):
        for tolerance in (0.0, 1e-9, 1e-6, 1e-3, 0.5):
            assert not compare_output(got, want, tolerance)[0], (got, want, tolerance)
    for got in (b"7.0", b"7.000", b"7e0", b"0.7e1", b"+7", b"07"):  # the exact value 7
        assert compare_output(got, b"7", 1e-9)[0], got
    assert not compare_output(b"7.0", b"7", None)[0]  # without a tolerance: exact bytes


def test_only_plain_decimals_are_numbers() -> None:
    # Python's float() reads underscores, "infinity", "nan" and padding; an expected output
    # means none of them as a number.
    for got, want in ((b"1_000", b"1000"), (b"1_000.5", b"1000.5"), (b"1_0.0", b"10.0"),
                      (b"infinity", b"1e308"), (b"Infinity", b"inf"), (b"nan", b"NaN"),
                      (b"\xd9\xa1.0", b"1.0"), (b"0x10", b"16.0")):
        assert not compare_output(got, want, 1.0)[0], (got, want)


def _exact_value(token: bytes) -> Fraction | None:
    """Slow reference: the exact value of a token made only of digits, one sign, one point and
    one exponent, read character by character (no float, no regex)."""
    text = token.decode("ascii", "replace")
    mantissa, _, exponent = text.lower().partition("e")
    if "e" in text.lower() and not exponent.lstrip("+-").isdigit():
        return None
    sign = -1 if mantissa[:1] == "-" else 1
    mantissa = mantissa[1:] if mantissa[:1] in "+-" else mantissa
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    if not digits or not all(ch in "0123456789" for ch in digits) or mantissa.count(".") > 1:
        return None
    if not all(ch in "0123456789" for ch in exponent.lstrip("+-")):
        return None
    value = Fraction(int(digits), 10 ** len(fraction))
    return sign * value * Fraction(10) ** int(exponent or 0)


@given(want=st.integers(-10**30, 10**30), delta=st.integers(-10**6, 10**6),
       form=st.sampled_from(["{}", "{}.0", "{}.000", "{}e0", "{:_}", "{}.5"]),
       tolerance=st.sampled_from([0.0, 1e-12, 1e-6, 1e-2]))
def test_integer_expected_tokens_compare_by_exact_value(want, delta, form, tolerance) -> None:
    got = form.format(want + delta).encode()
    expected = _exact_value(got) == want if _exact_value(got) is not None else False
    assert compare_output(got, str(want).encode(), tolerance)[0] == (
        expected or got == str(want).encode())


def test_memory_and_output_evidence_thresholds_sit_exactly_at_their_caps() -> None:
    # MemoryError counts as memory_limit from a peak RSS of a quarter of the cap on (kB from
    # rusage, caps in MiB); output counts as output_limit from exactly output_mb MiB on.
    limits = Limits(time_s=2.0, memory_mb=100, output_mb=3)
    quarter_kb = 100 * 1024 // 4
    for rss_kb, status in ((quarter_kb, Status.MEMORY_LIMIT), (quarter_kb - 1,
                                                                Status.RUNTIME_ERROR)):
        raw = RawRun(exit_code=1, stderr=b"MemoryError\n", max_rss_kb=rss_kb)
        assert classify(raw, limits).status is status, rss_kb
    cap = 3 << 20
    assert classify(RawRun(exit_code=0, stdout_size=cap), limits).status is Status.OUTPUT_LIMIT
    assert classify(RawRun(exit_code=0, stdout_size=cap - 1), limits) is None
    assert classify(RawRun(exit_code=0, stderr_size=cap - 1), limits) is None


def test_an_infra_error_carries_no_duration() -> None:
    for failure in ("setup", "input"):
        verdict = classify(RawRun(failure=failure, duration_s=1.5, detail="why"), LIMITS)
        assert (verdict.status, verdict.duration_s, verdict.detail) == (
            Status.INFRA_ERROR, 0.0, "why")


def test_float_tolerance_includes_its_bound_and_details_quote_40_bytes() -> None:
    assert compare_output(b"1.5", b"1.0", 0.5)[0]  # |1.5 - 1.0| = 0.5 * max(1, 1.0): inside
    assert compare_output(b"3.0", b"2.0", 0.5)[0]  # relative above one: 1.0 = 0.5 * 2.0
    ok, detail = compare_output(b"x" * 50, b"y" * 50)
    assert not ok and detail == f"token 0: got {b'x' * 40!r}, expected {b'y' * 40!r}"


def test_memory_error_is_read_from_the_exception_name_of_the_last_line() -> None:
    evidence = 250_000  # kB: a quarter of LIMITS' 256 MB and more
    for last_line in (b"MemoryError", b"MemoryError: cannot allocate: 3 GiB",
                      b"builtins.MemoryError: cannot allocate: 3 GiB"):
        raw = RawRun(exit_code=1, stderr=b"Traceback...\n" + last_line + b"\n",
                     max_rss_kb=evidence)
        assert classify(raw, LIMITS).status is Status.MEMORY_LIMIT, last_line
    for last_line in (b"ValueError: MemoryError", b"MemoryError.extra: no"):
        raw = RawRun(exit_code=1, stderr=last_line + b"\n", max_rss_kb=evidence)
        assert classify(raw, LIMITS).status is Status.RUNTIME_ERROR, last_line
    assert last_error_line(b"x" * 400 + b"\n\n") == "x" * 300  # details stay short


def test_an_unknown_signal_number_is_named_as_a_number() -> None:
    verdict = classify(RawRun(signal=99), LIMITS)
    assert (verdict.status, verdict.detail) == (Status.RUNTIME_ERROR, "killed by signal 99")


def test_tokens_after_an_equal_one_are_still_compared() -> None:
    assert not compare_output(b"1 2", b"1 3")[0]
    assert not compare_output(b"a b c", b"a b d", 1e-6)[0]
    # absolute tolerance below 1, relative from 1 on: at 1.5 the bound is 0.5 * 1.5 = 0.75
    assert compare_output(b"2.25", b"1.5", 0.5)[0]
    assert not compare_output(b"2.4", b"1.5", 0.5)[0]


def test_expected_output_may_be_text_or_bytes() -> None:
    for expected in ("5", b"5"):
        assert check_default(RawRun(stdout=b"5\n"), expected, None).status is Status.SUCCESS
        assert check_default(RawRun(stdout=b"6\n"), expected, None).status is (
            Status.WRONG_ANSWER)


def test_a_verdict_is_a_value() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        classify(RawRun(exit_code=3), LIMITS).status = Status.SUCCESS
    with pytest.raises(dataclasses.FrozenInstanceError):
        CheckerReply("bool", True).value = False


# --- checker protocol ---------------------------------------------------------------------------


def reply_run(obj) -> RawRun:
    return RawRun(exit_code=0, stdout=json.dumps(obj).encode())


@pytest.mark.parametrize(("stdout", "kind", "value"), [
    ({"kind": "bool", "value": True}, "bool", True),
    ({"kind": "score", "value": 12.5}, "score", 12.5),
    ({"kind": "str", "value": "invalid"}, "invalid", None),
    ({"kind": "str", "value": "ok"}, "failed", None),
    ({"kind": "other", "type": "NoneType"}, "failed", None),
])
def test_parse_checker_reply(stdout, kind, value) -> None:
    reply = parse_checker_run(reply_run(stdout), LIMITS)
    assert (reply.kind, reply.value) == (kind, value)


def test_parse_checker_reply_failures() -> None:
    assert parse_checker_run(RawRun(exit_code=0, stdout=b'{"kind": "score", "value": NaN}'),
                             LIMITS).kind == "failed"
    crashed = parse_checker_run(RawRun(exit_code=1, stderr=b"KeyError: 'x'\n"), LIMITS)
    assert (crashed.kind, crashed.error) == ("failed", "KeyError: 'x'")
    assert parse_checker_run(RawRun(timed_out=True, duration_s=2), LIMITS).kind == "failed"
    long_reply = b"T" * 150
    unreadable = parse_checker_run(RawRun(exit_code=0, stdout=long_reply), LIMITS)
    assert (unreadable.kind, unreadable.error) == (
        "failed", f"unreadable checker reply {long_reply[:100]!r}")
    for reply in (b'{"value": true}', b"[1]", b"3"):  # no kind / not an object
        assert parse_checker_run(RawRun(exit_code=0, stdout=reply), LIMITS).error.startswith(
            "unreadable checker reply"), reply
    other = parse_checker_run(reply_run({"kind": "other", "type": "NoneType"}), LIMITS)
    assert other.error == "check() returned 'NoneType', not True/False/float/'invalid'"


SANE, BROKEN = CheckerReply("bool", True), CheckerReply("bool", False)


@pytest.mark.parametrize(("reply", "self_check", "status"), [
    (CheckerReply("bool", True), None, Status.SUCCESS),
    (CheckerReply("bool", False), None, Status.WRONG_ANSWER),
    (CheckerReply("score", 3.0), None, Status.SUCCESS),
    (CheckerReply("invalid"), None, Status.WRONG_ANSWER),
    (CheckerReply("broken", error="checker does not compile"), None, Status.INFRA_ERROR),
    (CheckerReply("failed", error="IndexError: list index"), SANE, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="NameError: x"), SANE, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="IndexError: list index"), BROKEN, Status.INFRA_ERROR),
    (CheckerReply("failed", error="IndexError: x"), CheckerReply("failed"), Status.INFRA_ERROR),
    (CheckerReply("failed", error="ValueError: could not convert"), None, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="json.decoder.JSONDecodeError: x"), None,
     Status.WRONG_ANSWER),
    # Without an expected output, whatever the output made the checker do is its verdict.
    (CheckerReply("failed", error="NameError: name 'x'"), None, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="timeout: time limit 10s"), None, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="RecursionError: maximum recursion depth"), None,
     Status.WRONG_ANSWER),
    (CheckerReply("failed", error="MemoryError"), None, Status.WRONG_ANSWER),
    (CheckerReply("failed", error="memory_limit: memory cgroup OOM kill"), None,
     Status.WRONG_ANSWER),
    (CheckerReply("failed", error="runtime_error: killed by SIGSEGV"), None,
     Status.WRONG_ANSWER),
])
def test_checker_blame_rules(reply, self_check, status) -> None:
    verdict = checker_verdict(reply, 0.25, self_check)
    assert verdict.status is status
    assert verdict.duration_s == 0.25
    if reply.kind == "score":
        assert verdict.score == 3.0
    if reply.kind == "bool":  # a rejection says so; an acceptance says nothing
        assert verdict.detail == ("" if reply.value else "checker: rejected")


def test_checker_input_carries_bytes_and_none() -> None:
    data = json.loads(checker_input(b"\xff1 2", "3", None))
    assert data == {"test_input": "\udcff1 2", "program_output": "3", "expected_output": None}


# --- checkers end to end ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pool():
    try:
        pool = LocalPool(slots=1, cores=[max(os.sched_getaffinity(0))])
    except JailUnavailable as exc:
        no_jail(f"no jail here: {exc}")
    yield pool
    pool.close()


TOUR_CHECKER = '''
def check(test_input, program_output, expected_output):
    n = int(test_input)
    tour = [int(x) for x in program_output.split()]
    if sorted(tour) != list(range(n)):
        return "invalid"
    return float(sum(abs(a - b) for a, b in zip(tour, tour[1:])))
'''


def test_checker_scores_and_rejects(pool: LocalPool) -> None:
    program = "n = int(input())\nprint(*(range(n) if n != 3 else [0, 0, 1]))"
    tests = [TestCase("4"), TestCase("3"), TestCase("2")]
    results = pool.run(program, tests, LIMITS, checker=TOUR_CHECKER)
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER, Status.SUCCESS]
    assert [r.score for r in results] == [3.0, None, 1.0]
    assert results[1].detail == "checker: invalid"


def test_checker_blame_end_to_end(pool: LocalPool) -> None:
    # Parses the output as an int: raises on "abc" but accepts its own expected output.
    parsing = "def check(i, o, e):\n    return int(o) == int(e)\n"
    results = pool.run("print(input())", [TestCase("7", "7"), TestCase("abc", "7"),
                                          TestCase("abc", None)], LIMITS, checker=parsing)
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER,
                                           Status.WRONG_ANSWER]
    assert "checker failed on this output" in results[1].detail
    broken = "def check(i, o, e):\n    return undefined_name\n"
    results = pool.run("print(1)", [TestCase("", "1"), TestCase("", None)], LIMITS,
                       checker=broken)
    # fails on its expected output too: broken (infra); without one, the output's verdict
    assert [r.status for r in results] == [Status.INFRA_ERROR, Status.WRONG_ANSWER]
    uncompilable = pool.run("print(1)", [TestCase("", "1")], LIMITS, checker="def check(:")
    assert uncompilable[0].status is Status.INFRA_ERROR
    assert "checker does not compile" in uncompilable[0].detail


# A score checker (no expected output) that recurses over the output's brackets, allocates
# what the output says, or exits.
SCORE_CHECKER = """
import sys
def depth(s, i=0):
    return 0 if i >= len(s) or s[i] != "(" else 1 + depth(s, i + 1)
def check(test_input, program_output, expected_output):
    kind, _, arg = program_output.strip().partition(" ")
    if kind == "nest":
        return float(depth(arg))
    if kind == "alloc":
        return float(len(bytearray(int(arg))))
    if kind == "exit":
        sys.exit(3)
    return float(len(arg))
"""


def test_score_checker_failures_forced_by_the_output_are_the_programs_verdict(
        pool: LocalPool) -> None:
    program = "print(input())"
    outputs = ["nest " + "(" * 100_000, f"alloc {1 << 40}", "exit", "ok abc"]
    limits = Limits(time_s=2, memory_mb=256)
    results = pool.run(program, [TestCase(text) for text in outputs], limits,
                       checker=SCORE_CHECKER)
    statuses = [r.status for r in results]
    assert statuses == [Status.WRONG_ANSWER] * 3 + [Status.SUCCESS], [
        (r.status, r.detail) for r in results]
    assert "RecursionError" in results[0].detail and "memory" in results[1].detail.lower()
    assert results[3].score == 3.0


def test_checker_never_sees_non_utf8_or_failed_runs(pool: LocalPool) -> None:
    counting = "def check(i, o, e):\n    return True\n"
    program = ("import sys\nx = input()\nif x == 'bytes':\n    sys.stdout.buffer.write(b'\\xff')\n"
               "elif x == 'crash':\n    raise SystemExit(2)\nelse:\n    print('fine')")
    results = pool.run(program, [TestCase("bytes"), TestCase("crash"), TestCase("ok")], LIMITS,
                       checker=counting)
    assert [r.status for r in results] == [Status.WRONG_ANSWER, Status.RUNTIME_ERROR,
                                           Status.SUCCESS]
    assert results[0].detail == "output is not UTF-8"


def test_float_tolerance_end_to_end(pool: LocalPool) -> None:
    tests = [TestCase("", "0.3333333"), TestCase("", "0.34")]
    results = pool.run("print(1 / 3)", tests, LIMITS, float_tolerance=1e-6)
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER]
