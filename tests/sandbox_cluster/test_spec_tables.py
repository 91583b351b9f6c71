"""The fixed tables of docs/design/sandbox-timing.md, stated here once more from that page,
never imported from the code under test: the statuses, their reward classes, the fallback's
early-stop set (§4.4: a definitive hard failure stops local reruns; a timeout alone does not)
and the service envelope (§1.2: 10 s wall, 1 GB memory).
"""

from __future__ import annotations

import pytest

from sandbox_cluster import fallback
from sandbox_cluster.api import Limits, Status, TestResult

# status value -> (reward class, stops local reruns when definitive)
SPEC = {
    "success": ("success", False),
    "timeout": ("timeout", False),  # §4.4: a timeout alone still reruns the inconclusive
    "wrong_answer": ("failure", True),
    "runtime_error": ("failure", True),
    "memory_limit": ("failure", True),
    "output_limit": ("failure", True),
    "infra_error": ("inconclusive", False),  # never a statement about the program
    # Our extension, not the design's: a test skipped because the program already failed a
    # correctness test (RunRequest.stop_after_failure). A failure, conclusive; it does not
    # itself stop reruns (the failure that caused it does, unless that was a timeout).
    "not_run": ("failure", False),
}


def test_the_statuses_are_exactly_the_specs_and_ours() -> None:
    assert sorted(s.value for s in Status) == sorted(SPEC)


@pytest.mark.parametrize("value", sorted(SPEC))
def test_reward_class_and_conclusiveness(value: str) -> None:
    status = Status(value)
    assert status.reward_class == SPEC[value][0]
    assert status.is_conclusive is (value != "infra_error")


@pytest.mark.parametrize("value", sorted(SPEC))
def test_fallback_early_stop_set(value: str) -> None:
    """One definitive result of `value` beside an inconclusive one."""
    results = [TestResult(Status(value), 0.1), TestResult(Status.INFRA_ERROR, 0.0)]
    stops = fallback.early_stop_reason(results) is not None
    assert stops is SPEC[value][1], value
    # and wherever it sits among successes and timeouts
    results = [TestResult(Status.SUCCESS, 0.1), TestResult(Status.TIMEOUT, 10.0),
               TestResult(Status.INFRA_ERROR, 0.0), TestResult(Status(value), 0.1)]
    assert (fallback.early_stop_reason(results) is not None) is SPEC[value][1], value


def test_service_envelope_defaults() -> None:
    limits = Limits()
    assert limits.time_s == 10.0  # §1.2: the 10 s hard wall cap, timeouts recorded at it
    assert limits.memory_mb == 1024  # §1.2: 1 GB
    assert limits.repeats == 1
