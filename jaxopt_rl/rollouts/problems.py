"""What a rollout needs of a problem, read once from the data set and kept: the prompt, the
tests as the sandbox takes them, what a record keeps of each test, and the stored references.

`ProblemBank` is the host-side cache the rollout worker and the evaluation share: reading a
problem's tests (Parquet, possibly a materialised cache) costs milliseconds, and a training run
asks for the same few hundred problems thousands of times.

Choices: every test kind the data set has is run (T0, T+, TO): the environment decides which it
reads. The service cap is the environment's `service_cap_s`; the memory limit is the problem's
own (`ProblemRecord.memory_mb`).
"""

from __future__ import annotations

import dataclasses
import threading

from jaxopt_rl.data.execution_records import ReferenceDuration
from jaxopt_rl.data.store import Dataset
from jaxopt_rl.model.prompt import PromptTemplate, build_prompt
from jaxopt_rl.rollouts.execute import TestSpec
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


class ProblemBank:
    """`bank[problem_id]` -> `ProblemRun`, built on first use (thread-safe)."""

    def __init__(self, dataset: Dataset, service_cap_s: float,
                 template: PromptTemplate | None = None):
        self.dataset = dataset
        self.service_cap_s = float(service_cap_s)
        self.template = template or PromptTemplate()
        self._runs: dict[str, ProblemRun] = {}
        self._lock = threading.Lock()

    def __getitem__(self, problem_id: str) -> ProblemRun:
        with self._lock:
            run = self._runs.get(problem_id)
        if run is None:
            run = self._build(problem_id)
            with self._lock:
                self._runs.setdefault(problem_id, run)
        return run

    def _build(self, problem_id: str) -> ProblemRun:
        record = self.dataset.record(problem_id)
        tests = self.dataset.tests(problem_id)
        if not tests:
            raise ValueError(f"problem {problem_id!r} of {self.dataset.root} has no tests")
        cases = tuple(TestCase(input=t.input, expected=t.expected) for t in tests)
        specs = tuple(TestSpec(t.test_id, t.kind, len(t.input) + len(t.expected or ""))
                      for t in tests)
        references = tuple(
            ReferenceDuration(problem_id, row["test_id"], row["reference_id"], row["duration_s"])
            for row in self.dataset.reference_record_rows(problem_id))
        return ProblemRun(
            problem_id=problem_id,
            prompt=build_prompt(record.statement, self.template),
            tests=cases,
            specs=specs,
            test_kinds=tuple(t.kind for t in tests),
            limits=Limits(time_s=self.service_cap_s, memory_mb=int(record.memory_mb)),
            interface=record.interface,
            float_tolerance=record.float_tolerance,
            references=references,
            difficulty=record.difficulty,
        )
