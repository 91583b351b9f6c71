"""What a rollout needs of a problem, read once from the data set and kept: the prompt, the
tests as the sandbox takes them, what a record keeps of each test, and the stored references.

`ProblemBank` is the host-side cache the rollout worker and the evaluation share: reading a
problem's tests (Parquet, possibly a materialised cache) costs milliseconds, and a training run
asks for the same few hundred problems thousands of times.

Choices: every test kind the data set has is run (T0, T+, TO): the environment decides which it
reads; `tests` (fnmatch patterns over test ids, e.g. ``["T0/*", "TO/a01/c04"]``) keeps a subset,
the same for every problem (a small CPU run cannot afford sixty tests per program). The service
cap is the environment's `service_cap_s`; the memory limit is the problem's own
(`ProblemRecord.memory_mb`).

Reference durations are the data set's stored ones unless `retime_references` replaces them by
durations of the references measured on the sandbox that times the candidates (each reference
`runs` times, in one shuffled order, the mean kept where every run succeeded or timed out with a
rankable duration, read by the one rule of `data.execution_table`): stored durations come from the machine that built the data set, and a
candidate ranked against another machine's clock is ranked against the wrong leaderboard.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import threading
from collections.abc import Sequence

import numpy as np

from jaxopt_rl.data.execution_records import ReferenceDuration
from jaxopt_rl.data.execution_table import rankable, timed_duration, timing_code
from jaxopt_rl.data.store import Dataset
from jaxopt_rl.model.prompt import PromptTemplate, problem_prompt
from jaxopt_rl.rewards.records import STATUS_CODE
from jaxopt_rl.rollouts.execute import TestSpec
from jaxopt_rl.rollouts.timing_pass import Job, Outcome, run_jobs
from sandbox_cluster.api import Limits, TestCase


@dataclasses.dataclass(frozen=True)
class ProblemRun:
    """One problem as a rollout runs it."""

    problem_id: str
    prompt: str
    tests: tuple[TestCase, ...]
    specs: tuple[TestSpec, ...]
    test_kinds: tuple[str, ...]
    limits: Limits
    interface: str
    float_tolerance: float | None
    references: tuple[ReferenceDuration, ...]
    difficulty: str
    checker: str | None = None  # a score task's checker (`rollouts.score_tasks`)


def _rankable_seconds(outcome: Outcome, cap_s: float) -> list[float | None]:
    """A reference run's duration on each test where it can rank (the one rule,
    `execution_table.timed_duration`: a timeout at its cap, a fleet success at its duration;
    finite and >= 0), else None."""
    status_T = np.array([STATUS_CODE[s] for s in outcome.status], np.int8)
    timed_T = timed_duration(status_T, np.array(outcome.duration_s, float), cap_s,
                             np.array([timing_code(t) for t in outcome.timing], np.int8))
    return [float(s) if ok else None for s, ok in zip(timed_T, rankable(status_T, timed_T))]


class RunCache:
    """`cache[problem_id]` -> `ProblemRun`, made by `_build` on first use (thread-safe): the
    one cache behind `ProblemBank` and the score tasks' `rollouts.score_tasks.ScoreTaskBank`."""

    def __init__(self) -> None:
        self._runs: dict[str, ProblemRun] = {}
        self._lock = threading.Lock()

    def __getitem__(self, problem_id: str) -> ProblemRun:
        with self._lock:
            run = self._runs.get(problem_id)
        if run is None:
            run = self._build(problem_id)
            with self._lock:
                run = self._runs.setdefault(problem_id, run)
        return run

    def _build(self, problem_id: str) -> ProblemRun:
        raise NotImplementedError


class ProblemBank(RunCache):
    """`bank[problem_id]` -> `ProblemRun`, built on first use (thread-safe)."""

    def __init__(self, dataset: Dataset, service_cap_s: float,
                 template: PromptTemplate | None = None, tests: Sequence[str] = (),
                 repeats: int = 1):
        super().__init__()
        self.dataset = dataset
        self.service_cap_s = float(service_cap_s)
        self.repeats = int(repeats)  # Limits.repeats of every run (rollouts and references)
        self.template = template or PromptTemplate()
        self.test_patterns = tuple(tests)

    def prompt(self, problem_id: str) -> str:
        """The problem's prompt under the bank's template (needs no tests: evaluation samples
        before recipe tests are materialised)."""
        return problem_prompt(self.dataset.record(problem_id), self.template)

    def _build(self, problem_id: str) -> ProblemRun:
        record = self.dataset.record(problem_id)
        tests = self.dataset.tests(problem_id)
        if self.test_patterns:
            tests = tuple(t for t in tests
                          if any(fnmatch.fnmatchcase(t.test_id, p) for p in self.test_patterns))
        if not tests:
            raise ValueError(f"problem {problem_id!r} of {self.dataset.root} has no tests"
                             + (f" matching data.tests={list(self.test_patterns)}"
                                if self.test_patterns else ""))
        kept = {t.test_id for t in tests}
        cases = tuple(TestCase(input=t.input, expected=t.expected) for t in tests)
        specs = tuple(TestSpec(t.test_id, t.kind, len(t.input) + len(t.expected or ""))
                      for t in tests)
        references = tuple(
            ReferenceDuration(problem_id, row["test_id"], row["reference_id"], row["duration_s"])
            for row in self.dataset.reference_record_rows(problem_id) if row["test_id"] in kept)
        return ProblemRun(
            problem_id=problem_id,
            prompt=self.prompt(problem_id),
            tests=cases,
            specs=specs,
            test_kinds=tuple(t.kind for t in tests),
            limits=Limits(time_s=self.service_cap_s, memory_mb=int(record.memory_mb),
                          repeats=self.repeats),
            interface=record.interface,
            float_tolerance=record.float_tolerance,
            references=references,
            difficulty=record.difficulty,
        )

    def retime_references(self, sandbox, problem_ids: Sequence[str], runs: int = 1,
                          seed: int = 0) -> dict[str, int]:
        """Replace the stored reference durations of `problem_ids` by fresh ones measured on
        `sandbox` in one shuffled timing pass (`rollouts.timing_pass.run_jobs`, the module
        docstring); returns how many references per problem were timed."""
        if runs < 1:
            raise ValueError(f"reference_runs={runs}: must be >= 1")
        jobs = []
        for problem_id in problem_ids:
            run = self[problem_id]
            for solution in self.dataset.solutions(problem_id):
                if solution.label == "correct" and solution.verified_correct is not False:
                    jobs.extend(Job(key=(run.problem_id, solution.solution_id, r),
                                    program=solution.code, tests=run.tests, limits=run.limits,
                                    kinds=run.test_kinds, interface=run.interface,
                                    float_tolerance=run.float_tolerance)
                                for r in range(runs))
        outcomes, _ = run_jobs(sandbox, jobs, seed=seed, description="timing references")
        times: dict[tuple[str, str], list[list[float | None]]] = {}
        for job, outcome in zip(jobs, outcomes):  # a failed call ranks no test (infra_error)
            problem_id, reference_id, _ = job.key
            times.setdefault((problem_id, reference_id), []).append(
                _rankable_seconds(outcome, job.limits.time_s))
        counts: dict[str, int] = {}
        for problem_id in problem_ids:
            run = self[problem_id]
            fresh = []
            for (pid, reference_id), runs_T in times.items():
                if pid != problem_id:
                    continue
                counts[problem_id] = counts.get(problem_id, 0) + 1
                for t, spec in enumerate(run.specs):
                    values = [r[t] for r in runs_T]
                    if all(v is not None for v in values):
                        fresh.append(ReferenceDuration(problem_id, spec.test_id, reference_id,
                                                       float(np.mean(values))))
            with self._lock:
                self._runs[problem_id] = dataclasses.replace(run, references=tuple(fresh))
        return counts
