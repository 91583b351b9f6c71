"""Score-based (RiVER) tasks as a rollout runs them: the prompt, the hidden instances, the
checker, and the step from a group's sandbox results to its `[G, M]` scores.

A score task (`jaxopt_rl.data.score_tasks.ScoreTask`) has no expected outputs: a program
(`solve(**instance) -> list[str]`, the function interface) runs on each of the task's `M` hidden
instances and the task's checker scores its answer. `ScoreTaskSet` gives the tasks the record
view the prompt loader reads (`problem_id`, `title`, `statement`, ...); `ScoreTaskBank` builds a
`ProblemRun` per task, as `ProblemBank` does for execution problems, so the rollout worker
samples and executes both the same way. The hidden instances are generated in the sandbox
(the generator is code, and code runs in the jail), once per task, on first use.

`scores_from_results` is where a result becomes a RiVER input:

    valid[g, m]   the program succeeded on instance m and the checker returned a finite score
                  (an "invalid" answer is a wrong_answer; every failure is invalid)
    scores[g, m]  that score, oriented so that larger is better: a `minimize` task's scores
                  are negated here, so the environment's `river.minimize` must stay false
    inconclusive[g]  an infra_error on any instance: the sandbox reached no verdict, so the
                  solver is left out of its group's ranking and its reward is NaN (dropped and
                  counted by the trainer), never a made-up score

Choice: an inconclusive solver is removed from the group before ranking (the others are ranked
among the conclusive ones) rather than voiding the whole group.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from jaxopt_rl.data.score_tasks import ScoreTask, hidden_instances
from jaxopt_rl.model.prompt import PromptTemplate, problem_prompt
from jaxopt_rl.rollouts.execute import TestSpec
from jaxopt_rl.rollouts.problems import ProblemRun, RunCache
from sandbox_cluster.api import Limits, Status, TestCase, TestResult

SPLIT = "train"  # the score tasks are one set: no held-out split


@dataclasses.dataclass(frozen=True)
class ScoreTaskRecord:
    """The record view of a score task (the fields the prompt loader and templates read)."""

    problem_id: str
    title: str
    statement: str
    time_limit_s: float
    memory_mb: int
    signature: str
    objective: str
    difficulty: str = "unknown"
    interface: str = "function"


class ScoreTaskSet:
    """A list of score tasks behind the data set interface the trainer reads
    (`problem_ids(split)`, `record(id)`)."""

    def __init__(self, tasks: Sequence[ScoreTask], root: str = "score tasks"):
        if not tasks:
            raise ValueError(f"{root}: no score tasks")
        self.root = root
        self.tasks = {task.task_id: task for task in tasks}

    @classmethod
    def named(cls, name: str) -> ScoreTaskSet:
        """"mini" (the shipped score tasks of DMC-Optim-mini) or a folder of task folders
        (what a run's `data.dataset` names when its environment is `kind: river`)."""
        from pathlib import Path

        from jaxopt_rl.data.score_tasks import read_score_tasks

        if name == "mini":
            from jaxopt_rl.data.mini import load_score_tasks, mini_score_tasks_dir

            return cls(load_score_tasks(), str(mini_score_tasks_dir()))
        if not Path(name).is_dir():
            raise FileNotFoundError(f"data.dataset={name!r}: not 'mini' and not a folder of "
                                    "score tasks")
        return cls(read_score_tasks(name), name)

    def problem_ids(self, split: str = SPLIT) -> list[str]:
        if split != SPLIT:
            raise ValueError(f"data.split={split!r}: the score tasks have one split, {SPLIT!r}")
        return sorted(self.tasks)

    def task(self, task_id: str) -> ScoreTask:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise KeyError(f"score task {task_id!r} is not in {self.root} "
                           f"({', '.join(sorted(self.tasks))})") from None

    def record(self, task_id: str) -> ScoreTaskRecord:
        task = self.task(task_id)
        return ScoreTaskRecord(task.task_id, task.title, task.statement, task.time_limit_s,
                               task.memory_mb, task.signature, task.objective)


class ScoreTaskBank(RunCache):
    """`bank[task_id]` -> `ProblemRun` with the task's hidden instances and checker, built on
    first use (thread-safe); `objective(task_id)` says how its scores are oriented."""

    def __init__(self, tasks: ScoreTaskSet, service_cap_s: float,
                 instances: Callable[[ScoreTask], list[str]],
                 template: PromptTemplate | None = None):
        super().__init__()
        self.tasks = tasks
        self.service_cap_s = float(service_cap_s)
        self.instances = instances  # e.g. `in_sandbox(sandbox)`
        self.template = template or PromptTemplate()

    def objective(self, task_id: str) -> str:
        return self.tasks.task(task_id).objective

    def _build(self, task_id: str) -> ProblemRun:
        task = self.tasks.task(task_id)
        instances = list(self.instances(task))
        if not instances:
            raise ValueError(f"score task {task_id!r} has no hidden instances")
        return ProblemRun(
            problem_id=task_id,
            prompt=problem_prompt(self.tasks.record(task_id), self.template),
            tests=tuple(TestCase(input=instance) for instance in instances),
            specs=tuple(TestSpec(f"I{m}", "TO", len(instance))
                        for m, instance in enumerate(instances)),
            test_kinds=("optimization",) * len(instances),
            limits=Limits(time_s=self.service_cap_s, memory_mb=task.memory_mb),
            interface="function", float_tolerance=None, references=(), difficulty="unknown",
            checker=task.checker)


def in_sandbox(sandbox) -> Callable[[ScoreTask], list[str]]:
    """The hidden instances of a task, generated in `sandbox` (`data.score_tasks`)."""
    return lambda task: hidden_instances(task, sandbox)


def scores_from_results(results_GM: Sequence[Sequence[TestResult]], objective: str,
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(scores_GM float64, valid_GM bool, inconclusive_G bool)` of one group (module
    docstring); `objective` is the task's minimize | maximize."""
    if objective not in ("minimize", "maximize"):
        raise ValueError(f"objective must be minimize or maximize, got {objective!r}")
    g = len(results_GM)
    m = len(results_GM[0]) if g else 0
    if any(len(row) != m for row in results_GM):
        raise ValueError("every solver of a group must have one result per instance")
    scores = np.zeros((g, m), np.float64)
    valid = np.zeros((g, m), bool)
    inconclusive = np.zeros(g, bool)
    sign = -1.0 if objective == "minimize" else 1.0
    for i, row in enumerate(results_GM):
        for j, result in enumerate(row):
            if result.status is Status.INFRA_ERROR:
                inconclusive[i] = True
            elif (result.status is Status.SUCCESS and result.score is not None
                  and math.isfinite(result.score)):
                valid[i, j] = True
                scores[i, j] = sign * float(result.score)
    return scores, valid, inconclusive


__all__ = ["ScoreTaskBank", "ScoreTaskRecord", "ScoreTaskSet", "in_sandbox", "scores_from_results"]
