"""The builder's duration stage stores durations as the one status-and-provenance rule reads
them (`data.builder.timing.stored_seconds`)."""

from __future__ import annotations

import pytest

from jaxopt_rl.data.builder.execution import InfraError
from jaxopt_rl.data.builder.timing import stored_seconds
from sandbox_cluster.api import Status, TestResult


def test_timeouts_at_the_cap_fleet_durations_kept_failures_without_one_at_zero():
    results = [TestResult(Status.SUCCESS, 0.25, extra={"timing": "fleet"}),
               TestResult(Status.SUCCESS, 0.5),  # no provenance: measured where it ran
               TestResult(Status.TIMEOUT, 0.01, extra={"timing": "fleet"}),
               TestResult(Status.WRONG_ANSWER, 0.125, extra={"timing": "fleet"}),
               TestResult(Status.WRONG_ANSWER, 0.0, extra={"timing": "none"})]
    assert stored_seconds(results, 4.0) == [0.25, 0.5, 4.0, 0.125, 0.0]


def test_a_success_without_a_fleet_duration_is_no_timing():
    local = TestResult(Status.SUCCESS, 0.01, extra={"timing": "none", "fallback": True})
    with pytest.raises(InfraError, match="without a duration measured on the timing fleet"):
        stored_seconds([local], 4.0)
