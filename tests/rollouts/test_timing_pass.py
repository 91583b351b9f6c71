"""The one shuffled timing pass (`rollouts.timing_pass.run_jobs`): every job runs once, outcomes
come back in job order with the executed order, a failed call is inconclusive, and a duration
the rule cannot rank (docs/design/sandbox-timing.md §4: NaN, negative) is never written as a
number."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from jaxopt_rl.rollouts.timing_pass import Job, run_jobs
from sandbox_cluster.api import Limits, Status, TestCase, TestResult

FLEET = {"timing": "fleet", "node": "http://n1"}


class ScriptedSandbox:
    """`program` names what every test returns: "ok" 10 ms, "neg" -1 s, "nan" NaN, "slow" a
    timeout, "boom" a failed call."""

    def __init__(self):
        self.submitted = []

    def submit(self, program, tests, limits, **options):
        self.submitted.append(program)
        future = Future()
        if program == "boom":
            future.set_exception(RuntimeError("node vanished"))
            return future
        result = {"ok": TestResult(Status.SUCCESS, 0.01, extra=FLEET),
                  "neg": TestResult(Status.SUCCESS, -1.0, extra=FLEET),
                  "nan": TestResult(Status.SUCCESS, float("nan"), extra=FLEET),
                  "slow": TestResult(Status.TIMEOUT, 2.5, extra=FLEET)}[program]
        future.set_result([result] * len(tests))
        return future


def _job(program, key):
    return Job(key=key, program=program, tests=(TestCase("1", "1"),) * 2,
               limits=Limits(time_s=2.0), kinds=("T0", "TO"))


def test_outcomes_in_job_order_and_every_job_once():
    sandbox = ScriptedSandbox()
    programs = ["ok", "slow", "boom", "ok", "neg", "nan"]
    outcomes, order = run_jobs(sandbox, [_job(p, i) for i, p in enumerate(programs)], seed=3)
    assert sorted(order) == list(range(6)) and sandbox.submitted == [programs[i] for i in order]
    assert outcomes[0].status == ["success"] * 2 and outcomes[0].duration_s == [0.01] * 2
    assert outcomes[0].timing == ["fleet"] * 2
    assert outcomes[1].duration_s == [2.0] * 2  # a timeout counts at its cap
    assert outcomes[2].status == ["infra_error"] * 2  # a failed call is never a verdict


def test_a_duration_that_cannot_rank_is_written_as_none():
    outcomes, _ = run_jobs(ScriptedSandbox(), [_job("neg", 0), _job("nan", 1)])
    for outcome in outcomes:
        assert outcome.status == ["success"] * 2
        assert outcome.timing == ["none"] * 2 and outcome.duration_s == [0.0] * 2
        assert np.all(np.isfinite(outcome.duration_s))
