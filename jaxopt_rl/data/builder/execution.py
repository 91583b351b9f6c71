"""How the builder talks to the sandbox: batched runs, retries, outcome codes, generator driver.

Every program the builder executes (human solutions, input generators) goes through
`Executor.run_many`, which puts many `(program, tests)` runs in flight at once through the
sandbox's `submit` (an embedded pool or a fleet from `sandbox_cluster.connect`), bounded by one
semaphore shared by all problem threads. A run whose results contain `infra_error` is retried a
few times; if the sandbox still cannot reach a verdict, `InfraError` is raised: the problem is then
left *pending* (not checkpointed, not dropped) so a rerun of the build picks it up again.

Outcomes are stored as one character per test so an `[solutions x tests]` matrix of a problem is
a list of short strings in the checkpoints:
  S success  T timeout  W wrong answer  R runtime error  Y syntax error (excluded from the
  failure filter)  M memory limit  O output limit
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sandbox_cluster.api import Limits, Status, TestCase, TestResult

OUTCOME_OF_STATUS = {
    Status.SUCCESS: "S",
    Status.TIMEOUT: "T",
    Status.WRONG_ANSWER: "W",
    Status.RUNTIME_ERROR: "R",
    Status.MEMORY_LIMIT: "M",
    Status.OUTPUT_LIMIT: "O",
}
FAILURE_OUTCOMES = frozenset("WRMO")  # counted by the exception/failure filter (not Y)


class InfraError(RuntimeError):
    """The sandbox could not reach a verdict after retries (never a statement about a program)."""


def outcome_code(result: TestResult) -> str:
    if result.status is Status.INFRA_ERROR:
        raise InfraError(f"infra_error: {result.detail or result.stderr[-200:]}")
    if result.status is Status.NOT_RUN:  # a build never asks for stop_after_failure
        raise ValueError(f"not_run: a dataset build runs every test ({result.detail})")
    if result.status is Status.RUNTIME_ERROR and "SyntaxError" in (result.stderr or "") + (
            result.detail or ""):
        return "Y"
    return OUTCOME_OF_STATUS[result.status]


@dataclass(frozen=True)
class Run:
    """One program on a list of tests under one envelope."""

    program: str
    tests: tuple[TestCase, ...]
    limits: Limits
    float_tolerance: float | None = None
    interface: str = "stdio"  # the problem's: stdio, or function (JSON kwargs -> solve(...))


class Executor:
    """Runs batches of `Run`s through a sandbox with bounded concurrency and short retries."""

    def __init__(self, sandbox: Any, max_in_flight: int = 8, retries: int = 2):
        self.sandbox = sandbox
        self.retries = retries
        self._slots = threading.BoundedSemaphore(max_in_flight)
        # Sandboxes without `submit` get one: a thread per slot calling the blocking `run`.
        self._fallback = None if hasattr(sandbox, "submit") else ThreadPoolExecutor(max_in_flight)

    def close(self) -> None:
        if self._fallback is not None:
            self._fallback.shutdown(wait=True)

    def run_many(self, runs: Sequence[Run]) -> list[list[TestResult]]:
        """Results of every run, in order. Raises InfraError if one stays inconclusive."""
        results: list[list[TestResult] | None] = [None] * len(runs)
        pending = list(range(len(runs)))
        for _attempt in range(self.retries + 1):
            futures = [(i, self._submit(runs[i])) for i in pending]
            pending = []
            for i, future in futures:
                try:
                    got = future.result()
                except Exception as err:  # a transport failure is an infra error, retried
                    got = [TestResult.infra_error(f"{type(err).__name__}: {err}")] * len(runs[i].tests)
                if len(got) != len(runs[i].tests):
                    raise InfraError(
                        f"sandbox returned {len(got)} results for {len(runs[i].tests)} tests"
                    )
                results[i] = got
                if any(r.status is Status.INFRA_ERROR for r in got):
                    pending.append(i)
            if not pending:
                break
        if pending:
            sample = next(r for r in results[pending[0]] if r.status is Status.INFRA_ERROR)
            raise InfraError(
                f"{len(pending)} run(s) still inconclusive after {self.retries} retries "
                f"(first: {sample.detail or sample.stderr[-200:]})"
            )
        return [r for r in results if r is not None]

    def _submit(self, run: Run) -> Future:
        self._slots.acquire()
        kwargs = {"interface": run.interface, "float_tolerance": run.float_tolerance}
        try:
            if self._fallback is None:
                future = self.sandbox.submit(run.program, list(run.tests), run.limits, **kwargs)
            else:
                future = self._fallback.submit(
                    self.sandbox.run, run.program, list(run.tests), run.limits, **kwargs
                )
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _f: self._slots.release())
        return future


def stdout_text(result: TestResult) -> str:
    out = result.stdout or b""
    return out.decode("utf-8", errors="replace") if isinstance(out, bytes) else str(out)


_GENERATOR_DRIVER = '''\
import json, random, sys
_SOURCE = {source}
_request = json.loads(sys.stdin.read())
_namespace = {{"__name__": "generator"}}
exec(compile(_SOURCE, "generator.py", "exec"), _namespace)
# Class-style generators (InputGenerator with one method per kind) draw from the module-level
# `random`; seed it with the same string so both styles are reproducible.
random.seed(_request["seed"])
_rng = random.Random(_request["seed"])
if callable(_namespace.get("generate")):
    _value = _namespace["generate"](_request["method"], _rng)
elif isinstance(_namespace.get("InputGenerator"), type):
    _value = getattr(_namespace["InputGenerator"](), _request["method"])()
else:
    sys.exit("generator defines neither generate(method, rng) nor class InputGenerator")
if not isinstance(_value, str):
    sys.exit("generator returned " + type(_value).__name__ + ", expected str")
sys.stdout.write(_value)
'''


def generator_program(source: str) -> str:
    """A stdio program that runs `source`'s generator for the request read from stdin."""
    return _GENERATOR_DRIVER.format(source=repr(source))


def generator_request(method: str, seed: str) -> TestCase:
    return TestCase(input=json.dumps({"method": method, "seed": seed}), expected=None)
