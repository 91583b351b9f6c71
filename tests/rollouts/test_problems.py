"""`ProblemBank`: which tests a rollout runs, what the prompt shows, and the reference
leaderboard re-timed on the run's own sandbox (`retime_references`)."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest

from jaxopt_rl.data.mini import load_mini
from jaxopt_rl.model.prompt import PromptTemplate
from jaxopt_rl.rollouts.problems import ProblemBank
from sandbox_cluster.api import Status, TestResult

PROBLEM = "mini-011"  # all tests stored inline
MEASURED = {"timing": "measured", "node": "embedded"}


@pytest.fixture(scope="module")
def dataset():
    return load_mini()


def test_test_patterns_keep_matching_tests_and_their_references_only(dataset):
    bank = ProblemBank(dataset, 10.0, tests=("T0/*", "TO/a01/c04"))
    run = bank[PROBLEM]
    every = [t.test_id for t in dataset.tests(PROBLEM)]
    expected = [t for t in every if t.startswith("T0/") or t == "TO/a01/c04"]
    assert [s.test_id for s in run.specs] == expected
    assert len(run.tests) == len(run.test_kinds) == len(expected)
    assert {r.test_id for r in run.references} == set(expected)
    with pytest.raises(ValueError, match=r"matching data.tests=\['T9/\*'\]"):
        ProblemBank(dataset, 10.0, tests=("T9/*",))[PROBLEM]


def test_title_prompts_show_the_title_not_the_statement(dataset):
    record = dataset.record(PROBLEM)
    titled = ProblemBank(dataset, 10.0, PromptTemplate(problem_text="title"))[PROBLEM].prompt
    full = ProblemBank(dataset, 10.0)[PROBLEM].prompt
    assert record.title in titled and record.statement.strip()[:60] not in titled
    assert record.statement.strip()[:60] in full


def test_a_prompt_needs_no_tests(dataset):
    """Evaluation samples before recipe tests are materialised: `prompt` reads the record only,
    and gives the prompt the problem's run shows."""

    class RecipesOnly:
        def __getattr__(self, name):
            return getattr(dataset, name)

        def tests(self, problem_id):
            raise FileNotFoundError(f"{problem_id}: tests stored as recipes")

    template = PromptTemplate(problem_text="title")
    bank = ProblemBank(RecipesOnly(), 10.0, template)
    assert bank.prompt(PROBLEM) == ProblemBank(dataset, 10.0, template)[PROBLEM].prompt
    with pytest.raises(FileNotFoundError):
        bank[PROBLEM]


class CodeKeyedSandbox:
    """Each reference's program runs in `seconds[code]` per test, shifted by +1 ms per run; one
    program answers wrong on its second test, one gets an infra error there."""

    def __init__(self, seconds, wrong_on_second, infra_on_second):
        self.seconds, self.wrong, self.infra = seconds, wrong_on_second, infra_on_second
        self.runs: dict[str, int] = {}
        self.order: list[str] = []

    def submit(self, program, tests, limits, **options):
        run = self.runs.get(program, 0)
        self.runs[program] = run + 1
        self.order.append(program)
        results = []
        for t in range(len(tests)):
            if t == 1 and program == self.wrong:
                results.append(TestResult(Status.WRONG_ANSWER, 0.001, extra=MEASURED))
            elif t == 1 and program == self.infra:
                results.append(TestResult.infra_error("node died"))
            else:
                results.append(TestResult(Status.SUCCESS, self.seconds[program] + 1e-3 * run,
                                          extra=MEASURED))
        future = Future()
        future.set_result(results)
        return future


def test_retimed_references_are_the_mean_of_runs_with_failures_left_out(dataset):
    bank = ProblemBank(dataset, 10.0, tests=("T0/00[0-2]",))
    solutions = [s for s in dataset.solutions(PROBLEM)
                 if s.label == "correct" and s.verified_correct is not False]
    seconds = {s.code: 0.01 * (i + 1) for i, s in enumerate(solutions)}
    wrong, infra = solutions[0], solutions[1]
    sandbox = CodeKeyedSandbox(seconds, wrong.code, infra.code)
    counts = bank.retime_references(sandbox, [PROBLEM], runs=3, seed=1)
    assert counts == {PROBLEM: len(solutions)}
    assert all(sandbox.runs[s.code] == 3 for s in solutions)
    assert sandbox.order != [s.code for s in solutions for _ in range(3)]  # shuffled
    got = {(r.reference_id, r.test_id): r.duration_s for r in bank[PROBLEM].references}
    tests = [s.test_id for s in bank[PROBLEM].specs]
    expected = {}
    for s in solutions:
        for t, test_id in enumerate(tests):
            if t == 1 and s.solution_id in (wrong.solution_id, infra.solution_id):
                continue  # a failed or unmeasured run never ranks the reference on that test
            expected[(s.solution_id, test_id)] = seconds[s.code] + 1e-3  # mean of +0, +1, +2 ms
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9)
    # the leaderboard is this sandbox's: none of the stored durations is left
    stored = {(r["reference_id"], r["test_id"]): r["duration_s"]
              for r in dataset.reference_record_rows(PROBLEM)}
    assert all(not np.isclose(got[k], stored.get(k, -1.0)) for k in got)


def test_retiming_needs_a_run(dataset):
    with pytest.raises(ValueError, match="reference_runs=0"):
        ProblemBank(dataset, 10.0).retime_references(CodeKeyedSandbox({}, "", ""), [PROBLEM], 0)


class HostileSandbox:
    """One reference's call fails outright, one reports NaN, one a negative duration, one runs
    on a fallback (local) machine; the rest succeed in 10 ms."""

    def __init__(self, codes):
        self.raise_, self.nan, self.negative, self.local = codes[:4]

    def submit(self, program, tests, limits, **options):
        future = Future()
        if program == self.raise_:
            future.set_exception(RuntimeError("node vanished"))
            return future
        seconds = {self.nan: float("nan"), self.negative: -1.0}.get(program, 0.01)
        extra = ({"timing": "measured", "node": "local", "fallback": True}
                 if program == self.local else MEASURED)
        future.set_result([TestResult(Status.SUCCESS, seconds, extra=extra)] * len(tests))
        return future


def test_retimed_leaderboard_never_holds_an_unmeasured_or_impossible_duration(dataset):
    """A reference whose run crashed, read NaN or negative, or ran off the timing fleet must not
    stand on the leaderboard (a candidate would be ranked against a made-up clock)."""
    bank = ProblemBank(dataset, 10.0, tests=("T0/00[0-1]",))
    solutions = [s for s in dataset.solutions(PROBLEM)
                 if s.label == "correct" and s.verified_correct is not False]
    bad = solutions[:4]
    bank.retime_references(HostileSandbox([s.code for s in bad]), [PROBLEM], runs=1)
    kept = {r.reference_id for r in bank[PROBLEM].references}
    assert kept == {s.solution_id for s in solutions[4:]}
    assert all(r.duration_s == pytest.approx(0.01) for r in bank[PROBLEM].references)
