"""`RunRequest.stop_after_failure`: a program's run ends at its first definitive failure on a
correctness test, the tests it skips come back `not_run`, and nothing else changes: an
optimization test's failure stops nothing, a skipped test is never a success or inconclusive,
the jail a stopped run leaves (a test may have been sent ahead) never serves the next program,
and the option crosses the wire validated."""

from __future__ import annotations

import pytest

from sandbox_cluster.api import Limits, RunRequest, Status, TestCase, TestResult
from sandbox_cluster.protocol import RequestError, decode_run_request, encode_run_request
from tests.sandbox_cluster.test_pool import make_pool

LIMITS = Limits(time_s=1, memory_mb=256, output_mb=1)
# doubles its input; loops forever on "loop"
LOOPER = "x = input()\nwhile x == 'loop':\n    pass\nprint(int(x) * 2)"


@pytest.fixture(scope="module")
def pool():
    pool = make_pool(slots=1)
    yield pool
    pool.close()


def _tests(*inputs: str) -> list[TestCase]:
    return [TestCase(f"{x}\n", None if x == "loop" else f"{int(x) * 2}\n") for x in inputs]


def test_a_correctness_failure_skips_the_remaining_tests(pool) -> None:
    tests = _tests("1", "loop", "3", "loop", "4")
    kinds = ["T0", "T0", "T+", "TO", "T0"]
    stopped = pool.run(LOOPER, tests, LIMITS, test_kinds=kinds, stop_after_failure=True)
    assert [r.status for r in stopped] == [Status.SUCCESS, Status.TIMEOUT] + [Status.NOT_RUN] * 3
    assert all(r.duration_s == 0.0 and r.stdout in (None, b"") for r in stopped[2:])
    assert stopped[2].detail == "not run: test 1 ended timeout"
    # without the option every test runs (the same program, the same tests)
    full = pool.run(LOOPER, tests, LIMITS, test_kinds=kinds)
    assert [r.status for r in full] == [Status.SUCCESS, Status.TIMEOUT, Status.SUCCESS,
                                        Status.TIMEOUT, Status.SUCCESS]


def test_an_optimization_failure_or_a_wrong_answer_order_is_respected(pool) -> None:
    # a timeout on a TO test stops nothing (c_cor does not read it) ...
    results = pool.run(LOOPER, _tests("loop", "2"), LIMITS, test_kinds=["TO", "T0"],
                       stop_after_failure=True)
    assert [r.status for r in results] == [Status.TIMEOUT, Status.SUCCESS]
    # ... a wrong answer on a T+ test does, and the tests before it keep their verdicts
    wrong = [TestCase("1\n", "2\n"), TestCase("2\n", "5\n"), TestCase("3\n", "6\n")]
    results = pool.run(LOOPER, wrong, LIMITS, test_kinds=["T0", "T+", "T0"],
                       stop_after_failure=True)
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER, Status.NOT_RUN]


def test_repeats_stop_too_and_keep_the_first_rounds_verdicts(pool) -> None:
    wrong = [TestCase("1\n", "2\n"), TestCase("2\n", "5\n"), TestCase("3\n", "6\n")]
    results = pool.run(LOOPER, wrong, Limits(time_s=1, memory_mb=256, output_mb=1, repeats=3),
                       test_kinds=["T0", "T0", "T0"], stop_after_failure=True)
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER, Status.NOT_RUN]


def test_the_jail_of_a_stopped_run_never_serves_the_next_program(pool) -> None:
    """Test 2 (small) is sent ahead with test 1, which ends in a wrong answer: the stopped run
    leaves test 2 queued in the harness. A reused jail would hand its result to the next
    program."""
    wrong = [TestCase("1\n", "2\n"), TestCase("2\n", "5\n"), TestCase("3\n", "6\n")]
    first = pool.run(LOOPER, wrong, LIMITS, test_kinds=["T0"] * 3, stop_after_failure=True)
    assert first[2].status is Status.NOT_RUN
    lost = pool.stats()["harness_lost"]
    after = pool.run("print(int(input()) + 100)", [TestCase("5\n", "105\n")] * 2, LIMITS)
    assert [r.status for r in after] == [Status.SUCCESS] * 2
    assert [r.stdout for r in after] == [b"105\n"] * 2
    # a reused jail would answer the next program's load with test 2's result (a lost harness,
    # rescued by a second jail): the stopped jail must not be offered at all
    assert pool.stats()["harness_lost"] == lost


def test_the_option_is_validated_and_needs_test_kinds() -> None:
    with pytest.raises(ValueError, match=r"^stop_after_failure: needs test_kinds"):
        RunRequest("p", (TestCase("1"),), stop_after_failure=True)
    with pytest.raises(TypeError, match=r"^stop_after_failure: expected bool, got int"):
        RunRequest("p", (TestCase("1"),), test_kinds=("T0",), stop_after_failure=1)


def test_the_option_crosses_the_wire_and_bad_values_are_refused() -> None:
    request = RunRequest("p", (TestCase("1"), TestCase("2")), test_kinds=("T0", "TO"),
                         stop_after_failure=True, request_id="r1")
    body, blobs = encode_run_request(request, inline_limit=1000)
    assert body["stop_after_failure"] is True and body["test_kinds"] == ["T0", "TO"]
    assert decode_run_request(body, blobs.get, max_tests=10) == request
    for field, value, message in [
            ("stop_after_failure", "yes", r"^stop_after_failure: expected true or false"),
            ("test_kinds", "T0", r"^test_kinds: expected a list of strings or null"),
            ("test_kinds", ["T0"], r"^test_kinds: 1 kinds for 2 tests"),
            ("test_kinds", ["T0", "T9"], r"^test_kinds\[1\]: unknown kind 'T9'")]:
        with pytest.raises(RequestError, match=message):
            decode_run_request({**body, field: value}, blobs.get, max_tests=10)
    without = {k: v for k, v in body.items() if k != "test_kinds"}
    with pytest.raises(RequestError, match=r"^stop_after_failure: needs test_kinds"):
        decode_run_request(without, blobs.get, max_tests=10)


def test_not_run_is_a_conclusive_failure_without_a_measured_duration() -> None:
    from sandbox_cluster.client import _annotate

    result = _annotate(TestResult(Status.NOT_RUN, 0.0, detail="not run"), "embedded", 1)
    assert result.extra["timing"] == "none"
    assert Status.NOT_RUN.reward_class == "failure" and Status.NOT_RUN.is_conclusive
