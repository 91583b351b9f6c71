"""The status -> reward-class map of the record layer, pinned from the design (success /
timeout / failure, infra_error inconclusive), not from `records.STATUS_CODE` itself; and the
service cap the reward layer assumes equals the sandbox's (spec: 10 s)."""

from __future__ import annotations

from jaxopt_rl.rewards import records
from jaxopt_rl.rewards.env_config import EnvConfig
from sandbox_cluster.api import Limits, Status

SPEC_CLASS = {"success": "success", "timeout": "timeout", "wrong_answer": "failure",
              "runtime_error": "failure", "memory_limit": "failure", "output_limit": "failure",
              "infra_error": "inconclusive",
              # our extension (sandbox_cluster.api.Status): a test skipped after the program
              # failed a correctness test is a failure, never inconclusive
              "not_run": "failure"}


def test_status_code_follows_the_spec_classes() -> None:
    codes = {"success": records.SUCCESS, "timeout": records.TIMEOUT,
             "failure": records.FAILURE, "inconclusive": records.INCONCLUSIVE}
    assert len(set(codes.values())) == 4
    assert set(records.STATUS_CODE) == {Status(v) for v in SPEC_CLASS}
    for value, klass in SPEC_CLASS.items():
        assert records.STATUS_CODE[Status(value)] == codes[klass], value


def test_reward_cap_is_the_sandbox_cap() -> None:
    assert EnvConfig(name="spec").service_cap_s == 10.0 == Limits().time_s
