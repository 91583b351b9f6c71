"""The score-task (RiVER) rollout path: sandbox results -> `[G, M]` scores, a group's RiVER
rewards against the slow loop reference of docs/design/rewards.md §7
(`tests.rewards.reference_impl`, never the kernel under test), inconclusive and program-less
solvers, the environment / bank pairing, and the shipped `tour` task's heuristics run for real
through the jail and its checker.
"""

from __future__ import annotations

import dataclasses
import math
import types
from concurrent.futures import Future

import numpy as np
import pytest

from jaxopt_rl.data.mini import load_mini, mini_score_tasks_dir
from jaxopt_rl.data.score_tasks import ScoreTask, read_score_task
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rollouts.problems import ProblemBank
from jaxopt_rl.rollouts.score_tasks import (
    ScoreTaskBank,
    ScoreTaskSet,
    in_sandbox,
    scores_from_results,
)
from jaxopt_rl.rollouts.worker import Prompt, RolloutConfig, RolloutWorker, Sampled
from sandbox_cluster.api import Status, TestResult
from tests.rewards import reference_impl as ref


@pytest.fixture(scope="module")
def real_sandbox():
    from sandbox_cluster import connect
    from sandbox_cluster.jails import JailUnavailable
    from tests.sandbox_cluster.jail_required import no_jail

    try:
        sandbox = connect()
    except JailUnavailable as exc:
        no_jail(f"no jail here: {exc}")
    yield sandbox
    sandbox.close()


CHECKER = "def check(test_input, program_output, expected_output):\n    return 0.0\n"


def _task(objective="maximize", task_id="t") -> ScoreTask:
    return ScoreTask(task_id=task_id, title="A task", statement="Solve it.", objective=objective,
                     signature="solve(x: int) -> list[str]", time_limit_s=10.0, memory_mb=256,
                     hidden_count=3, hidden_seed=0, generator="", checker=CHECKER, heuristics=())


def _scored(score):
    return TestResult(Status.SUCCESS, 0.01, score=score)


INVALID = TestResult(Status.WRONG_ANSWER, 0.01, detail="checker: invalid")
LOST = TestResult.infra_error("node died")


class TableSandbox:
    """`submit(program, ...)` answers from `table[program]`: one result per instance."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def submit(self, program, tests, limits, **options):
        self.calls.append((program, len(tests), options))
        future = Future()
        future.set_result(list(self.table[program]))
        return future


def _bank(objective="maximize", count=3):
    return ScoreTaskBank(ScoreTaskSet([_task(objective)]), 10.0,
                         lambda task: [f'{{"x": {m}}}' for m in range(count)])


def _group(bank, table, programs, env="river"):
    sandbox = TableSandbox(table)
    worker = RolloutWorker(RolloutConfig(group_size=len(programs)), Tokenizer.default(), bank,
                           sandbox, load_env_config(env))
    sampled = _sampled(bank, "t", programs)
    return _row(worker.score(sampled, worker.execute(sampled), 0.0)), sandbox


def _sampled(bank, task_id, programs):
    """One prompt's sampler output whose G completions run `programs`."""
    g = len(programs)
    return Sampled(prompts=[Prompt(task_id, position=0)], runs=[bank[task_id]],
                   prompt_tokens=[np.arange(4, dtype=np.int32)],
                   completion_tokens=[[np.arange(3, dtype=np.int32)] * g],
                   sampler_logprobs=[[np.zeros(3, np.float32)] * g],
                   finished_PG=np.ones((1, g), bool), programs=[list(programs)],
                   policy_version=0, sample_s=0.0)


def _row(batch):
    """The one group of a one-prompt batch."""
    return types.SimpleNamespace(rewards_G=batch.rewards_PG[0], counts=batch.counts,
                                 signals={k: v[0] for k, v in batch.signals.items()})


def test_results_become_oriented_scores_validity_and_inconclusive():
    rows = [[_scored(2.0), INVALID, _scored(None)],
            [_scored(float("nan")), _scored(-1.5), LOST]]
    scores, valid, inconclusive = scores_from_results(rows, "maximize")
    np.testing.assert_array_equal(valid, [[True, False, False], [False, True, False]])
    assert scores[0, 0] == 2.0 and scores[1, 1] == -1.5
    np.testing.assert_array_equal(inconclusive, [False, True])
    minimized, _, _ = scores_from_results(rows, "minimize")  # larger is better after negation
    assert minimized[0, 0] == -2.0 and minimized[1, 1] == 1.5
    with pytest.raises(ValueError, match="objective must be minimize or maximize"):
        scores_from_results(rows, "smallest")


@pytest.mark.parametrize("objective", ["maximize", "minimize"])
def test_group_rewards_follow_the_spec_reference(objective):
    # ties at the top (A, B on instance 0), an invalid answer, a solver without a program
    table = {"A": [_scored(5.0), _scored(1.0), _scored(3.0)],
             "B": [_scored(5.0), _scored(2.0), INVALID],
             "C": [_scored(1.0), _scored(4.0), _scored(3.0)],
             "D": [_scored(0.5), _scored(0.5), _scored(9.0)],
             "E": [INVALID, _scored(7.0), _scored(2.0)]}
    programs = ["A", "B", "C", "D", "E", None]
    group, sandbox = _group(_bank(objective), table, programs)
    sign = -1.0 if objective == "minimize" else 1.0
    scores = [[sign * (r.score or 0.0) for r in table[p]] if p else [0.0] * 3 for p in programs]
    valid = [[r.status is Status.SUCCESS for r in table[p]] if p else [False] * 3
             for p in programs]
    np.testing.assert_allclose(group.rewards_G, ref.river_one_group(scores, valid), atol=1e-6)
    assert group.rewards_G[-1] == -1.0  # no program: invalid on every instance
    np.testing.assert_array_equal(group.signals["c_cor"], [True, False, True, True, False,
                                                           False])
    # the function interface and the task's checker reach the sandbox
    assert all(o["interface"] == "function" and o["checker"] == CHECKER
               for _, _, o in sandbox.calls)


def test_an_inconclusive_solver_is_dropped_and_the_others_ranked_among_themselves():
    table = {"A": [_scored(3.0), _scored(1.0)], "B": [_scored(2.0), LOST],
             "C": [_scored(1.0), _scored(2.0)], "D": [INVALID, _scored(3.0)]}
    group, _ = _group(_bank(count=2), table, ["A", "B", "C", "D"])
    assert math.isnan(group.rewards_G[1]) and group.signals["inconclusive"][1]
    kept = ["A", "C", "D"]
    want = ref.river_one_group([[r.score or 0.0 for r in table[p]] for p in kept],
                               [[r.status is Status.SUCCESS for r in table[p]] for p in kept])
    np.testing.assert_allclose(group.rewards_G[[0, 2, 3]], want, atol=1e-6)
    assert group.counts["infra_error"] == 1


def test_environment_and_bank_must_match():
    tok = Tokenizer.default()
    with pytest.raises(ValueError, match=r"scores score tasks: data\.dataset must name"):
        RolloutWorker(RolloutConfig(), tok, ProblemBank(load_mini(), 10.0), TableSandbox({}),
                      load_env_config("river"))
    with pytest.raises(ValueError, match=r"only a kind=river environment scores"):
        RolloutWorker(RolloutConfig(), tok, _bank(), TableSandbox({}), load_env_config("qp_p30"))
    with pytest.raises(ValueError, match="no correctness tests to stop at"):
        RolloutWorker(RolloutConfig(stop_after_failure=True), tok, _bank(), TableSandbox({}),
                      load_env_config("river"))
    minimizing = load_env_config("river", ["river.minimize=true"])
    with pytest.raises(ValueError, match=r"river\.minimize must be false"):
        RolloutWorker(RolloutConfig(), tok, _bank(), TableSandbox({}), minimizing)


def test_task_set_has_one_split_and_names_unknown_tasks():
    tasks = ScoreTaskSet([_task(task_id="b"), _task(task_id="a")])
    assert tasks.problem_ids("train") == ["a", "b"]
    with pytest.raises(ValueError, match=r"data\.split='test': the score tasks have one split"):
        tasks.problem_ids("test")
    with pytest.raises(KeyError, match="score task 'zz' is not in"):
        tasks.record("zz")
    record = tasks.record("a")
    assert (record.problem_id, record.interface, record.title) == ("a", "function", "A task")


def test_shipped_tour_heuristics_rank_through_the_jail(real_sandbox):
    """Two hidden instances of `tour`, its four heuristics as the group's programs: every
    answer is valid, the rewards are the RiVER ranks of the checker's (negated) lengths, and
    the declared best heuristic earns the most."""
    task = dataclasses.replace(read_score_task(mini_score_tasks_dir() / "tour"), hidden_count=2)
    bank = ScoreTaskBank(ScoreTaskSet([task]), 10.0, in_sandbox(real_sandbox))
    worker = RolloutWorker(RolloutConfig(group_size=len(task.heuristics)), Tokenizer.default(),
                           bank, real_sandbox, load_env_config("river"))
    g = len(task.heuristics)
    sampled = _sampled(bank, "tour", [h.code for h in task.heuristics])
    futures = worker.execute(sampled)
    results = [f.result() for f in futures[0]]
    group = _row(worker.score(sampled, futures, 0.0))
    assert all(r.status is Status.SUCCESS and r.score > 0 for row in results for r in row)
    lengths = [[r.score for r in row] for row in results]
    want = ref.river_one_group([[-x for x in row] for row in lengths], [[True] * 2] * g)
    np.testing.assert_allclose(group.rewards_G, want, atol=1e-6)
    best = [h.expected_rank for h in task.heuristics].index(1)
    assert group.rewards_G[best] == group.rewards_G.max()
