"""The rollout path: sampled completions -> programs -> sandbox -> records -> rewards ->
`RolloutBatch` (one row per prompt).

The sandbox here is a double keyed on the program text, so each rollout's verdict is known
and the expected reward follows from the composition table of docs/design/rewards.md §6, not
from the code under test: under `qp_p30` (collapsed, binary, gate q_QP <= 0.30) a correct program
faster than every reference earns +1, a correct one slower than every reference -1, a wrong
one -1; under `standard_rlvr` (c~ = c_cor on T0) a correct program earns +1 however slow.
"""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest

from jaxopt_rl.data.mini import load_mini
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rollouts.problems import ProblemBank
from jaxopt_rl.rollouts.worker import Prompt, RolloutConfig, RolloutWorker, Sampled
from sandbox_cluster.api import Status, TestResult

PROBLEM = "mini-011"  # all tests stored inline: no materialising needed


class ProgramKeyedSandbox:
    """`submit(program, tests, ...)`: FAST / SLOW succeed at 1 us / 9 s a test, WRONG fails,
    FLAKY is an infra error on its first test (the sandbox reached no verdict there)."""

    def __init__(self):
        self.calls = []

    def submit(self, program, tests, limits, **options):
        self.calls.append((program, len(tests), options))
        verdicts = {
            "FAST": TestResult(Status.SUCCESS, 1e-6, extra={"timing": "measured", "node": "embedded"}),
            "SLOW": TestResult(Status.SUCCESS, 9.0, extra={"timing": "measured", "node": "embedded"}),
            "WRONG": TestResult(Status.WRONG_ANSWER, 0.01, extra={"timing": "measured", "node": "embedded"}),
        }
        if program == "FLAKY":
            results = [TestResult.infra_error("node died")] + [verdicts["FAST"]] * (len(tests) - 1)
        else:
            results = [verdicts[program]] * len(tests)
        future = Future()
        future.set_result(results)
        return future


@pytest.fixture(scope="module")
def bank():
    return ProblemBank(load_mini(), service_cap_s=10.0)


def _sampled(bank, *programs_P, problems=(PROBLEM,)):
    """One sampler call's output: prompt p (loader position 7 + p) with completions of
    3, 4, ... tokens running `programs_P[p]`."""
    g = len(programs_P[0])
    return Sampled(prompts=[Prompt(pid, position=7 + p) for p, pid in enumerate(problems)],
                   runs=[bank[pid] for pid in problems],
                   prompt_tokens=[np.arange(5, dtype=np.int32)] * len(problems),
                   completion_tokens=[[np.arange(3 + i, dtype=np.int32) for i in range(g)]
                                      for _ in problems],
                   sampler_logprobs=[[np.full(3 + i, -0.5, np.float32) for i in range(g)]
                                     for _ in problems],
                   finished_PG=np.ones((len(problems), g), bool),
                   programs=[list(programs) for programs in programs_P], policy_version=4,
                   sample_s=0.0)


def _score(bank, env_name, programs):
    env = load_env_config(env_name)
    sandbox = ProgramKeyedSandbox()
    worker = RolloutWorker(RolloutConfig(group_size=len(programs)), Tokenizer.default(), bank,
                           sandbox, env)
    sampled = _sampled(bank, programs)
    group = worker.score(sampled, worker.execute(sampled), 0.0)
    return group, sandbox


def test_qp_p30_rewards_follow_the_composition_table(bank):
    group, sandbox = _score(bank, "qp_p30", ["FAST", "SLOW", "WRONG", None])
    np.testing.assert_array_equal(group.rewards_PG[0], [1.0, -1.0, -1.0, -1.0])
    # a completion without a program never reaches the sandbox
    assert [c[0] for c in sandbox.calls] == ["FAST", "SLOW", "WRONG"]
    assert group.counts["no_program"] == 1
    assert group.counts["tests"] == 4 * len(bank[PROBLEM].tests)
    # the group keeps what the trainer needs, untouched
    assert group.policy_version == 4 and group.positions_P.tolist() == [7]
    np.testing.assert_array_equal(group.lengths_PG[0], [3, 4, 5, 6])
    np.testing.assert_array_equal(group.signals["c_cor"][0], [True, True, False, False])


def test_a_sampler_call_is_one_batch_with_a_row_per_prompt(bank):
    """Rows keep their prompt's order, rewards, signals and loader position; counts add up."""
    worker = RolloutWorker(RolloutConfig(group_size=2), Tokenizer.default(), bank,
                           ProgramKeyedSandbox(), load_env_config("qp_p30"))
    sampled = _sampled(bank, ["FAST", "WRONG"], ["SLOW", None], problems=(PROBLEM, "mini-012"))
    batch = worker.score(sampled, worker.execute(sampled), 0.0)
    assert batch.problem_ids == (PROBLEM, "mini-012") and batch.positions_P.tolist() == [7, 8]
    np.testing.assert_array_equal(batch.rewards_PG, [[1.0, -1.0], [-1.0, -1.0]])
    np.testing.assert_array_equal(batch.signals["c_cor"], [[True, False], [True, False]])
    assert batch.counts["no_program"] == 1 and batch.counts["executed"] == 3
    assert batch.counts["tests"] == 2 * len(bank[PROBLEM].tests) + 2 * len(bank["mini-012"].tests)


def test_references_are_prepared_once_per_run_not_once_per_call(bank):
    worker = RolloutWorker(RolloutConfig(group_size=2), Tokenizer.default(), bank,
                           ProgramKeyedSandbox(), load_env_config("qp_p30"))
    for programs in (["FAST", "SLOW"], ["SLOW", "WRONG"], ["FAST", "FAST"]):
        sampled = _sampled(bank, programs, programs, problems=(PROBLEM, "mini-012"))
        worker.score(sampled, worker.execute(sampled), 0.0)
    assert worker.references.prepared == 2  # two problems, three calls


def test_lost_references_are_counted_for_the_metrics(bank):
    """Eq. 10 (docs/design/rewards.md §1): a problem whose every stored reference duration is
    lost cannot be ranked; the batch counts its rollouts and its used optimization tests (TO under
    qp_p30) that lost every reference."""
    import dataclasses

    worker = RolloutWorker(RolloutConfig(group_size=2), Tokenizer.default(), bank,
                           ProgramKeyedSandbox(), load_env_config("qp_p30"))
    sampled = _sampled(bank, ["FAST", "SLOW"])
    run = sampled.runs[0]
    sampled.runs = [dataclasses.replace(run, problem_id="lost", references=tuple(
        dataclasses.replace(ref, problem_id="lost", duration_s=None) for ref in run.references))]
    batch = worker.score(sampled, worker.execute(sampled), 0.0)
    assert np.isnan(batch.rewards_PG).all()
    assert batch.counts["unrankable"] == 2
    assert batch.counts["lost_tests"] == 2 * run.test_kinds.count("TO")
    fine = worker.score(_sampled(bank, ["FAST", "SLOW"]), worker.execute(sampled), 0.0)
    assert (fine.counts["unrankable"], fine.counts["lost_tests"]) == (0, 0)


def test_correctness_only_environment_ignores_speed(bank):
    group, _ = _score(bank, "standard_rlvr", ["FAST", "SLOW", "WRONG", None])
    np.testing.assert_array_equal(group.rewards_PG[0], [1.0, 1.0, -1.0, -1.0])


def test_an_inconclusive_rollout_has_no_reward(bank):
    group, _ = _score(bank, "qp_p30", ["FLAKY", "FAST"])
    assert np.isnan(group.rewards_PG[0][0]) and group.rewards_PG[0][1] == 1.0
    assert group.signals["inconclusive"][0, 0] and not group.signals["inconclusive"][0, 1]
    assert group.counts["infra_error"] == 1


def test_remote_only_counts_rollouts_the_fleet_resolved_alone(bank):
    """docs/design/sandbox-timing.md §1.12: the fleet-only ("CES-only") rate counts rollouts fully
    resolved by the fleet with no local fallback; an inconclusive rollout is not resolved, a
    missing program never reached the sandbox."""
    local = TestResult(Status.SUCCESS, 0.01, extra={"timing": "measured", "node": "local",
                                                     "fallback": True})

    class WithFallback(ProgramKeyedSandbox):
        def submit(self, program, tests, limits, **options):
            if program != "LOCAL":
                return super().submit(program, tests, limits, **options)
            future = Future()
            future.set_result([local] + [TestResult(
                Status.SUCCESS, 1e-6, extra={"timing": "measured", "node": "embedded"})]
                * (len(tests) - 1))
            return future

    worker = RolloutWorker(RolloutConfig(group_size=4), Tokenizer.default(), bank,
                           WithFallback(), load_env_config("qp_p30"))
    sampled = _sampled(bank, ["FAST", "FLAKY", "LOCAL", None])
    group = worker.score(sampled, worker.execute(sampled), 0.0)
    assert (group.counts["executed"], group.counts["remote_only"]) == (3, 1)
    assert group.counts["fallback"] == 1


def test_tests_run_with_the_problem_envelope(bank):
    _, sandbox = _score(bank, "qp_p30", ["FAST", "FAST"])
    run = bank[PROBLEM]
    assert run.limits.time_s == 10.0
    assert sandbox.calls[0][2]["test_kinds"] == list(run.test_kinds)
    assert set(run.test_kinds) <= {"T0", "T+", "TO"}


def test_timing_repeats_reach_every_run_of_the_bank():
    bank = ProblemBank(load_mini(), service_cap_s=10.0, repeats=3)
    assert bank[PROBLEM].limits.repeats == 3
    assert ProblemBank(load_mini(), service_cap_s=10.0)[PROBLEM].limits.repeats == 1


def test_a_bank_with_another_cap_than_the_environment_is_refused(bank):
    with pytest.raises(ValueError, match=r"caps tests at 10\.0 s but the problem bank runs them at 5\.0 s"):
        RolloutWorker(RolloutConfig(), Tokenizer.default(), ProblemBank(load_mini(), 5.0),
                      ProgramKeyedSandbox(), load_env_config("qp_p30"))


def test_sample_phase_keeps_tokens_and_raw_model_logprobs(bank):
    from flax import nnx

    from jaxopt_rl.config import load_config
    from jaxopt_rl.model import ModelConfig, init_model

    model = init_model(load_config(ModelConfig, "configs/model/tiny.yaml"))
    graphdef, params = nnx.split(model)
    worker = RolloutWorker(RolloutConfig(group_size=2, max_new_tokens=8), Tokenizer.default(),
                           bank, ProgramKeyedSandbox(), load_env_config("qp_p30"))
    sampled = worker.sample(graphdef, params, [Prompt(PROBLEM, 0), Prompt("mini-012", 1)],
                            seed=3, policy_version=0)
    assert [p.problem_id for p in sampled.prompts] == [PROBLEM, "mini-012"]
    for tokens_G, logps_G in zip(sampled.completion_tokens, sampled.sampler_logprobs):
        assert len(tokens_G) == 2
        for tokens, logp in zip(tokens_G, logps_G):
            assert 1 <= len(tokens) <= 8 and tokens.shape == logp.shape
            assert np.all(logp <= 0) and np.all(np.isfinite(logp))


def test_every_sampler_draws_the_same_groups(bank):
    """The three `rollout.sampler` choices differ in cost, not in what they draw for a seed."""
    from flax import nnx

    from jaxopt_rl.model import init_model
    from jaxopt_rl.model.testing import tiny_test_config

    model = init_model(tiny_test_config(vocab_size=4096, eos_token_ids=(4, 2)), seed=1)
    eos = Tokenizer.default().eos_ids[0]
    embedding = model.embed_tokens.embedding
    embedding[...] = embedding[...].at[eos].multiply(3.0)  # rows stop at many lengths
    graphdef, params = nnx.split(model)
    prompts = [Prompt(PROBLEM, 0), Prompt("mini-012", 1)]
    drawn = {}
    for sampler in ("static", "compact", "slots"):
        config = RolloutConfig(group_size=3, max_new_tokens=140, sampler=sampler, slots=2,
                               cache_segments=2)
        worker = RolloutWorker(config, Tokenizer.default(), bank, ProgramKeyedSandbox(),
                               load_env_config("qp_p30"))
        sampled = worker.sample(graphdef, params, prompts, seed=5, policy_version=0)
        drawn[sampler] = [[t.tolist() for t in row] for row in sampled.completion_tokens]
        lengths = [len(t) for row in sampled.completion_tokens for t in row]
        assert min(lengths) < 70 < max(lengths) < 140  # rows stop in both cache segments
        logps = [np.concatenate(row) for row in sampled.sampler_logprobs]
        drawn[sampler + " logp"] = np.concatenate(logps)
    assert drawn["compact"] == drawn["static"] and drawn["slots"] == drawn["static"]
    np.testing.assert_allclose(drawn["compact logp"], drawn["static logp"], atol=1e-5)
    np.testing.assert_allclose(drawn["slots logp"], drawn["static logp"], atol=1e-5)


def test_an_unknown_sampler_is_refused_by_name():
    with pytest.raises(ValueError, match="sampler"):
        RolloutConfig(sampler="paged")
    with pytest.raises(ValueError, match="slots"):
        RolloutConfig(slots=0)


class StoppingSandbox(ProgramKeyedSandbox):
    """A sandbox that honours `stop_after_failure` as the pool does: WRONG fails its first test
    and the rest come back `not_run` (no duration); SKIP_TIMING passes every test but the last
    (the timing test), which a broken or hostile sandbox reports `not_run`."""

    def submit(self, program, tests, limits, **options):
        if program not in ("WRONG", "SKIP_TIMING"):
            return super().submit(program, tests, limits, **options)
        self.calls.append((program, len(tests), options))
        not_run = TestResult(Status.NOT_RUN, 0.0, detail="not run: test 0 ended wrong_answer",
                             extra={"timing": "none", "node": "embedded"})
        ok = TestResult(Status.SUCCESS, 1e-6, extra={"timing": "measured", "node": "embedded"})
        if program == "WRONG":
            results = [TestResult(Status.WRONG_ANSWER, 0.01,
                                  extra={"timing": "measured", "node": "embedded"})]
            results += [not_run] * (len(tests) - 1)
        else:
            results = [ok] * (len(tests) - 1) + [not_run]
        future = Future()
        future.set_result(results)
        return future


def _score_stopping(bank, env_name, programs):
    env = load_env_config(env_name)
    sandbox = StoppingSandbox()
    worker = RolloutWorker(RolloutConfig(group_size=len(programs), stop_after_failure=True),
                           Tokenizer.default(), bank, sandbox, env)
    sampled = _sampled(bank, programs)
    return worker.score(sampled, worker.execute(sampled), 0.0), sandbox


def test_a_run_stopped_after_a_failure_earns_the_failure_reward(bank):
    """docs/design/rewards.md §6: collapsed binary gives -1 whenever c~ is false; a skipped test
    adds nothing."""
    assert bank[PROBLEM].test_kinds[-1] == "TO"
    group, sandbox = _score_stopping(bank, "qp_p30", ["FAST", "WRONG", "SKIP_TIMING"])
    np.testing.assert_array_equal(group.rewards_PG[0], [1.0, -1.0, -1.0])
    assert all(options["stop_after_failure"] is True for _, _, options in sandbox.calls)
    n_tests = len(bank[PROBLEM].tests)
    assert group.counts["not_run"] == (n_tests - 1) + 1
    # not_run is never inconclusive: the rollout keeps its (negative) reward
    assert not group.signals["inconclusive"].any()


def test_a_skipped_correctness_test_fails_the_correctness_reward(bank):
    """Correctness only (docs/design/rewards.md §6: s(c_cor)), where a skipped T0/T+ test is not a
    success."""
    group, _ = _score_stopping(bank, "mc", ["FAST", "WRONG"])
    np.testing.assert_array_equal(group.rewards_PG[0], [1.0, -1.0])


def test_stop_after_failure_is_refused_where_a_failed_program_still_earns(bank):
    env = load_env_config("additive")
    with pytest.raises(ValueError, match=r"^rollout.stop_after_failure: environment "):
        RolloutWorker(RolloutConfig(stop_after_failure=True), Tokenizer.default(), bank,
                      ProgramKeyedSandbox(), env)
