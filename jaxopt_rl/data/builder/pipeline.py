"""The staged, resumable build driver: problems flow through the stages, one checkpoint each.

A `Stage` is a pure-ish function `(Problem, StageContext) -> StageResult`; the driver owns
everything else:

* **Checkpoints.** After stage k a problem's outcome is written to
  `<work_dir>/stages/<NN_name>/<problem_id>.json` with a key = hash(stage name, stage config,
  stage code version, input problem fingerprint). A rerun loads every checkpoint whose key still
  matches, so an interrupted build continues where it stopped, and changing one threshold only
  recomputes the stages from that one on.
* **Failure isolation.** Bad data (a crashing generator, disagreeing references, a missing field)
  is a drop with a reason, decided inside the stage and checkpointed. An *unexpected* exception is
  recorded as an `error` for that problem (not checkpointed, so a rerun retries it) and the build
  goes on. `InfraError` (the sandbox could not reach a verdict) leaves the problem `pending`.
  Only a `BaseException` such as Ctrl-C stops the build; finished checkpoints stay.
* **Parallelism and memory.** `problem_workers` threads each push one problem through all
  stages; sandbox runs from all threads share the executor's in-flight bound. The source is
  consumed lazily (at most 2 x `problem_workers` problems in memory) and kept problems are read
  back from their last checkpoint at export, so a corpus of thousands of problems streams.
* **Funnel.** Every problem leaves a trace; the funnel table (the paper's Table 10: stage |
  operation | problems | correct sols | incorrect sols) is computed from the traces.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxopt_rl.config import to_dict
from jaxopt_rl.data.builder.execution import Executor, InfraError
from jaxopt_rl.data.schema import Problem


@dataclass(frozen=True)
class StageResult:
    problem: Problem | None  # None: dropped at this stage
    reason: str = ""  # why it was dropped (empty when kept)


@dataclass(frozen=True)
class StageContext:
    executor: Executor | None
    config: Any  # BuildConfig
    resources: dict[str, Any] = field(default_factory=dict)  # e.g. the decontamination index


@dataclass(frozen=True)
class Stage:
    name: str  # directory-safe, e.g. "03_validate"
    operation: str  # one line for the funnel table
    run: Callable[[Problem, StageContext], StageResult]
    config: Any = None  # the config section(s) that change this stage's output (hashed)
    version: int = 1  # bump when the stage's code changes what it produces
    # Funnel count of a kept problem (default: every kept problem counts).
    counts: Callable[[Problem], bool] = lambda problem: True


@dataclass
class ProblemTrace:
    """What happened to one problem: the stages it passed and how it ended."""

    problem_id: str
    passed: list[str] = field(default_factory=list)
    outcome: str = "kept"  # kept | dropped | error | pending
    stage: str = ""  # where it was dropped / failed
    reason: str = ""
    counts: dict[str, tuple[int, int, bool]] = field(default_factory=dict)  # stage -> (c, i, counted)
    # A kept problem's final state is not held in memory (it carries every test): it is read back
    # from the last stage's checkpoint at export time, under this key.
    final_stage: str = ""
    final_key: str = ""
    counted: bool = False  # the last stage's `counts` verdict (e.g. duration-filterable)
    loaded_from_checkpoint: int = 0


class Checkpoints:
    """Per-stage, per-problem JSON files, written atomically."""

    # Test texts above this size are stored once, content-addressed, under <work_dir>/blobs:
    # every stage's checkpoint of a problem repeats its tests, and TO inputs can be megabytes.
    BLOB_MIN_CHARS = 2048

    def __init__(self, work_dir: str | Path):
        self.root = Path(work_dir) / "stages"
        self.blobs = Path(work_dir) / "blobs"

    def path(self, stage: Stage, problem_id: str) -> Path:
        return self.root / stage.name / f"{problem_id}.json"

    def load(self, stage: Stage, problem_id: str, key: str) -> StageResult | None:
        path = self.path(stage, problem_id)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            if data.get("key") != key:
                return None
            problem_json = data.get("problem")
            if problem_json:
                for test in problem_json["tests"]:
                    for name in ("input", "expected"):
                        if isinstance(test[name], dict):
                            test[name] = (self.blobs / test[name]["blob"]).read_text()
            problem = Problem.from_json(problem_json) if problem_json else None
        except (OSError, ValueError, KeyError, TypeError):
            # A torn write or lost blob from a killed run, or a checkpoint from an older schema:
            # recompute (JSONDecodeError and SchemaError are ValueErrors).
            return None
        return StageResult(problem=problem, reason=data.get("reason", ""))

    def load_problem(self, stage_name: str, problem_id: str, key: str) -> Problem:
        """A kept problem's state after `stage_name` (export reads final states this way)."""
        result = self.load(Stage(stage_name, "", _never), problem_id, key)
        if result is None or result.problem is None:
            raise FileNotFoundError(f"checkpoint {self.root / stage_name / problem_id}.json is "
                                    "missing or stale; rerun the build")
        return result.problem

    def save(self, stage: Stage, problem_id: str, key: str, result: StageResult) -> None:
        path = self.path(stage, problem_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        problem_json = result.problem.to_json() if result.problem is not None else None
        if problem_json:
            for test in problem_json["tests"]:
                for name in ("input", "expected"):
                    if isinstance(test[name], str) and len(test[name]) >= self.BLOB_MIN_CHARS:
                        test[name] = {"blob": self._put_blob(test[name])}
        payload = {
            "stage": stage.name,
            "key": key,
            "kept": result.problem is not None,
            "reason": result.reason,
            "problem": problem_json,
        }
        _write_atomic(path, json.dumps(payload, ensure_ascii=False))

    def _put_blob(self, text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()
        path = self.blobs / digest
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, text)
        return digest


def _never(problem: Problem, context: StageContext) -> StageResult:
    raise AssertionError("a checkpoint reader never runs a stage")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return to_dict(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def stage_key(stage: Stage, problem: Problem) -> str:
    blob = json.dumps([stage.name, stage.version, _plain(stage.config), problem.fingerprint()],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _count(problem: Problem, stage: Stage) -> tuple[int, int, bool]:
    correct = sum(1 for s in problem.solutions if s.label == "correct" and s.verified_correct is not False)
    incorrect = sum(1 for s in problem.solutions if s.label == "incorrect" and s.negative_control is not False)
    return correct, incorrect, bool(stage.counts(problem))


def run_problem(problem: Problem, stages: Sequence[Stage], context: StageContext,
                checkpoints: Checkpoints, on_stage: Callable[[str], None] | None = None,
                stop: threading.Event | None = None) -> ProblemTrace:
    """Push one problem through the stages, reusing matching checkpoints; `stop` set by the
    driver ends the problem (as pending) before its next stage."""
    trace = ProblemTrace(problem.problem_id)
    current = problem
    for stage in stages:
        if stop is not None and stop.is_set():
            trace.outcome, trace.stage, trace.reason = "pending", stage.name, "build interrupted"
            return trace
        key = stage_key(stage, current)
        result = checkpoints.load(stage, problem.problem_id, key)
        if result is not None:
            trace.loaded_from_checkpoint += 1
        else:
            try:
                result = stage.run(current, context)
            except InfraError as err:
                trace.outcome, trace.stage, trace.reason = "pending", stage.name, str(err)
                return trace
            except Exception as err:  # a bug or an unforeseen input: report, keep building
                last = traceback.extract_tb(err.__traceback__)[-1]
                where = f"{Path(last.filename).name}:{last.lineno}"
                trace.outcome, trace.stage = "error", stage.name
                trace.reason = f"{type(err).__name__}: {err} (at {where})"
                return trace
            checkpoints.save(stage, problem.problem_id, key, result)
        if on_stage is not None:
            on_stage(stage.name)
        if result.problem is None:
            trace.outcome, trace.stage, trace.reason = "dropped", stage.name, result.reason
            return trace
        current = result.problem
        trace.passed.append(stage.name)
        trace.counts[stage.name] = _count(current, stage)
        trace.final_stage, trace.final_key = stage.name, key
        trace.counted = trace.counts[stage.name][2]
    return trace


def run_stages(problems: Iterable[Problem], stages: Sequence[Stage], context: StageContext,
               work_dir: str | Path, workers: int = 1, progress: Any = None) -> list[ProblemTrace]:
    """Run every problem through the stages on `workers` threads; traces in input order.

    `problems` is consumed lazily (at most 2 x `workers` problems in memory), so a source of
    thousands of problems streams. `progress` is an optional object with `advance(stage_name)`
    and `done()` (see `commands.data`).
    """
    checkpoints = Checkpoints(work_dir)
    on_stage = progress.advance if progress is not None else None
    traces: list[ProblemTrace] = []
    window = max(1, workers) * 2
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="build")
    stop = threading.Event()
    running: dict[Future, int] = {}

    def collect(block_until_below: int) -> None:
        while len(running) >= block_until_below and running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                index = running.pop(future)
                traces[index] = future.result()  # re-raises BaseException (Ctrl-C, interrupts)
                if progress is not None:
                    progress.done()

    try:
        for problem in problems:
            collect(window)
            traces.append(ProblemTrace(problem.problem_id, outcome="pending", reason="not run"))
            future = pool.submit(run_problem, problem, stages, context, checkpoints, on_stage, stop)
            running[future] = len(traces) - 1
        collect(1)
    except BaseException:
        # Stop promptly: queued problems never start; running ones finish their current stage
        # (their checkpoints stay valid) and the exception propagates.
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return traces


@dataclass(frozen=True)
class FunnelRow:
    stage: str
    operation: str
    problems: int
    correct: int
    incorrect: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def funnel(loaded: int, loaded_correct: int, loaded_incorrect: int, stages: Sequence[Stage],
           traces: Sequence[ProblemTrace], load_operation: str) -> list[FunnelRow]:
    """One count row per stage: problems kept (and counted) and their solution counts."""
    rows = [FunnelRow("00_load", load_operation, loaded, loaded_correct, loaded_incorrect)]
    for stage in stages:
        n = c = i = 0
        for trace in traces:
            if stage.name in trace.counts:
                correct, incorrect, counted = trace.counts[stage.name]
                if counted:
                    n, c, i = n + 1, c + correct, i + incorrect
        rows.append(FunnelRow(stage.name, stage.operation, n, c, i))
    return rows
