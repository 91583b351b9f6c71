"""Fallback rules of docs/design/sandbox-timing.md §4 / §8 property 14: pure rules, then end to end
through a fleet client whose node leaves some tests inconclusive."""

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_cluster import Limits, Status, TestCase, TestResult, connect
from sandbox_cluster import fallback as rules
from sandbox_cluster.server import SandboxServer, ServerConfig
from sandbox_cluster.testing import FakePool, ScriptedPool

LIMITS = Limits(time_s=10.0)
FAST = {"health_interval_s": 0.1, "retry_budget": 1}
ALL_STATUSES = list(Status)


def result(status: Status, duration: float = 0.25, **extra) -> TestResult:
    if status is Status.INFRA_ERROR:
        return TestResult(status, 0.0, detail="node lost", extra=extra)
    return TestResult(status, duration, cpu_s=duration, stdout=b"out", extra=extra)


# -- the rules, one by one -------------------------------------------------------------------------
def test_kinds_accept_paper_names_and_default_to_optimization():
    assert rules.normalize_test_kinds(["T0", "T+", "TO", "correctness", "optimization"], 5) == (
        "correctness", "correctness", "optimization", "correctness", "optimization")
    assert rules.normalize_test_kinds(None, 2) == ("optimization", "optimization")
    with pytest.raises(TypeError, match="got a string"):
        rules.normalize_test_kinds("TO", 2)


def test_local_success_on_an_optimization_test_is_a_timeout_at_the_cap():
    local = result(Status.SUCCESS, 0.01)
    converted = rules.convert_local(local, "optimization", LIMITS, attempts=3)
    assert converted.status is Status.TIMEOUT and converted.duration_s == 10.0
    assert converted.extra == {"node": "local", "attempts": 3, "fallback": True,
                               "local_status": "success", "timing": "cap"}


def test_local_success_on_a_correctness_test_keeps_the_verdict_without_duration():
    converted = rules.convert_local(result(Status.SUCCESS, 0.01), "correctness", LIMITS, 2)
    assert converted.status is Status.SUCCESS
    assert converted.duration_s == 0.0 and converted.cpu_s == 0.0
    assert converted.extra["timing"] == "none" and converted.extra["node"] == "local"


@pytest.mark.parametrize("kind", ["correctness", "optimization"])
@pytest.mark.parametrize("status", sorted(rules.HARD_FAILURES))
def test_local_failures_keep_the_verdict_and_import_no_duration(kind, status):
    converted = rules.convert_local(result(status, 0.3), kind, LIMITS, 2)
    assert converted.status is status and converted.duration_s == 0.0
    assert converted.extra["timing"] == "none"


@pytest.mark.parametrize("kind", ["correctness", "optimization"])
def test_local_timeout_and_infra_error(kind):
    timeout = rules.convert_local(result(Status.TIMEOUT, 10.0), kind, LIMITS, 2)
    assert (timeout.status, timeout.duration_s, timeout.extra["timing"]) == (
        Status.TIMEOUT, 10.0, "cap")
    infra = rules.convert_local(result(Status.INFRA_ERROR), kind, LIMITS, 2)
    assert infra.status is Status.INFRA_ERROR and "local fallback inconclusive" in infra.detail


def test_early_stop_on_hard_failure_but_not_on_timeout():
    assert rules.early_stop_reason([result(Status.TIMEOUT), result(Status.INFRA_ERROR)]) is None
    reason = rules.early_stop_reason([result(Status.SUCCESS), result(Status.INFRA_ERROR),
                                      result(Status.RUNTIME_ERROR)])
    assert reason == "test 2 is a definitive runtime_error"


def test_definitive_fleet_results_can_never_be_overwritten():
    with pytest.raises(ValueError, match="must not be overwritten"):
        rules.merge([result(Status.TIMEOUT)], {0: result(Status.SUCCESS)}, ["correctness"],
                    LIMITS)


def test_attempts_count_the_fleet_execution_of_a_result_without_provenance():
    # fallback's provenance table: attempts = executions that returned something (1 + immediate
    # retries, + 1 local); a result straight from a pool carries no count but was one execution.
    merged = rules.merge([result(Status.INFRA_ERROR)], {0: result(Status.SUCCESS)},
                         ["correctness"], LIMITS)
    assert merged[0].extra["attempts"] == 2
    merged = rules.merge([result(Status.INFRA_ERROR, attempts=3)], {0: result(Status.SUCCESS)},
                         ["correctness"], LIMITS)
    assert merged[0].extra["attempts"] == 4


@given(st.lists(st.tuples(st.sampled_from(ALL_STATUSES), st.sampled_from(ALL_STATUSES),
                          st.sampled_from(["T0", "T+", "TO"])), min_size=1, max_size=30))
def test_merge_properties(rows):
    remote = [result(r, 0.5, node="http://n1", attempts=1, timing="fleet")
              for r, _, _ in rows]
    kinds = rules.normalize_test_kinds([k for _, _, k in rows], len(rows))
    local = {i: result(loc, 0.01) for i, (r, loc, _) in enumerate(rows)
             if r is Status.INFRA_ERROR}
    merged = rules.merge(remote, local, kinds, LIMITS)
    assert len(merged) == len(remote)
    for i, (out, (remote_status, local_status, _)) in enumerate(zip(merged, rows)):
        if remote_status is not Status.INFRA_ERROR:
            assert out is remote[i]  # kept exactly as returned
            continue
        assert out.extra["node"] == "local" and out.extra["attempts"] == 2
        assert out.extra["timing"] in ("cap", "none")  # local time never poses as timing
        assert out.duration_s in (0.0, LIMITS.time_s)
        if local_status is Status.SUCCESS:
            expected = Status.TIMEOUT if kinds[i] == "optimization" else Status.SUCCESS
            assert out.status is expected
        else:
            assert out.status is local_status


# -- end to end through a fleet client -----------------------------------------------------------
@contextlib.contextmanager
def node():
    pool = FakePool()
    server = SandboxServer(pool, ServerConfig(port=0)).start()
    try:
        yield server.url
    finally:
        server.close()
        pool.close()


LOCAL = ScriptedPool({
    "infra_error": result(Status.SUCCESS, 0.002),
    "infra_error#2": result(Status.SUCCESS, 0.002),
    "infra_error#wa": result(Status.WRONG_ANSWER, 0.002),
    "infra_error#infra": result(Status.INFRA_ERROR),
})


def run_with_fallback(inputs, kinds, local=None, **options):
    local = local or ScriptedPool(LOCAL.script)
    with node() as url, connect([url], fallback="local", fallback_pool=local, **FAST,
                                **options) as sb:
        results = sb.run("by_input", [TestCase(i) for i in inputs], LIMITS, test_kinds=kinds)
        return results, local, sb.stats()


def persistent(tag=""):
    """An input the fleet never resolves; the '#tag' (ignored by FakePool) picks the scripted
    local verdict."""
    return "infra_error" + tag


def test_fallback_recovers_verdicts_per_category():
    inputs = ["success:0.4", persistent(), persistent("#2"), "timeout"]
    results, local, stats = run_with_fallback(inputs, ["TO", "TO", "T0", "TO"])
    assert local.ran == [persistent(), persistent("#2")]  # only the inconclusive tests
    assert results[0].status is Status.SUCCESS and results[0].duration_s == 0.4
    assert results[0].extra["timing"] == "fleet" and results[0].extra["node"].startswith(
        "http://")
    assert results[1].status is Status.TIMEOUT and results[1].duration_s == 10.0
    assert results[1].extra["timing"] == "cap" and results[1].extra["attempts"] == 3
    assert results[2].status is Status.SUCCESS and results[2].duration_s == 0.0
    assert results[2].extra == {**results[2].extra, "node": "local", "timing": "none"}
    assert results[3].status is Status.TIMEOUT and results[3].extra["node"].startswith("http")
    assert stats["requests_with_fallback"] == 1 and stats["tests_fallback"] == 2
    assert stats["requests_remote_only"] == 0


def test_definitive_hard_failure_skips_local_reruns():
    results, local, stats = run_with_fallback(["wrong_answer", persistent()], ["T0", "T0"])
    assert local.ran == []
    assert results[0].status is Status.WRONG_ANSWER
    assert results[1].status is Status.INFRA_ERROR
    assert "fallback skipped: test 0 is a definitive wrong_answer" in results[1].detail
    assert stats["tests_fallback_skipped"] == 1 and stats["requests_inconclusive"] == 1


def test_a_definitive_timeout_alone_does_not_skip_local_reruns():
    results, local, _ = run_with_fallback(["timeout", persistent("#wa")], ["TO", "T+"])
    assert local.ran == [persistent("#wa")]
    assert results[1].status is Status.WRONG_ANSWER and results[1].extra["node"] == "local"


def test_still_inconclusive_after_fallback_stays_inconclusive():
    results, _, stats = run_with_fallback([persistent("#infra")], ["T0"])
    assert results[0].status is Status.INFRA_ERROR
    assert stats["requests_inconclusive"] == 1 and stats["tests_inconclusive"] == 1


def test_without_fallback_nothing_runs_locally():
    local = ScriptedPool(LOCAL.script)
    with node() as url, connect([url], fallback_pool=local, **FAST) as sb:
        results = sb.run("by_input", [TestCase(persistent())], LIMITS)
    assert local.ran == [] and results[0].status is Status.INFRA_ERROR


def test_unknown_kinds_are_treated_conservatively():
    results, _, _ = run_with_fallback([persistent()], None)
    assert results[0].status is Status.TIMEOUT and results[0].duration_s == LIMITS.time_s


def test_a_broken_local_pool_keeps_the_fleet_results():
    class Broken(ScriptedPool):
        def run(self, *args, **kwargs):
            raise RuntimeError("no jail backend here")

    results, _, stats = run_with_fallback(["success:0.2", persistent()], ["TO", "T0"],
                                          local=Broken({}))
    assert results[0].status is Status.SUCCESS and results[0].duration_s == 0.2
    assert results[1].status is Status.INFRA_ERROR
    assert "local pool error" in results[1].detail and results[1].extra["node"] == "local"
    assert stats["requests_inconclusive"] == 1
