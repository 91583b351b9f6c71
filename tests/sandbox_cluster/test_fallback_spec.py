"""The fallback's early-stop set stated from the design, not read from
`fallback.HARD_FAILURES`: docs/design/sandbox-timing.md §8 property 14, "a definitive hard failure
skips local reruns; a definitive timeout alone does not", with the hard failures of
docs/design/rewards.md §1 (wrong answer, crash, memory, output limit)."""

import pytest

from sandbox_cluster.api import Status, TestResult
from sandbox_cluster.fallback import early_stop_reason

SPEC_HARD_FAILURES = ("wrong_answer", "runtime_error", "memory_limit", "output_limit")


@pytest.mark.parametrize("status", SPEC_HARD_FAILURES)
def test_a_definitive_hard_failure_skips_local_reruns(status):
    results = [TestResult(Status.SUCCESS, 0.1), TestResult(Status(status), 0.2),
               TestResult(Status.INFRA_ERROR, 0.0)]
    assert early_stop_reason(results) is not None


def test_a_timeout_or_success_alone_does_not_skip_them():
    results = [TestResult(Status.SUCCESS, 0.1), TestResult(Status.TIMEOUT, 10.0),
               TestResult(Status.INFRA_ERROR, 0.0)]
    assert early_stop_reason(results) is None


def test_the_spec_table_covers_every_verdict():
    # not_run is ours (a test skipped after a correctness failure): it stops nothing itself
    others = {"success", "timeout", "infra_error", "not_run"}
    assert set(SPEC_HARD_FAILURES) | others == {s.value for s in Status}
