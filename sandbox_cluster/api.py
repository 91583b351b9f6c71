"""The public vocabulary of the sandbox: statuses, test cases, limits and per-test results.

These types and the constants INTERFACES, TEST_KINDS, REPEAT_AGGREGATES and TIMINGS (defined
here once; the pool, the protocol, the client and `jaxopt_rl` import them) are shared by the
embedded pool, the HTTP server, the client and `jaxopt_rl` (which imports `Status` and `TIMINGS`
rather than defining its own). They are plain frozen dataclasses with a JSON
form (`to_json` / `from_json`) so the same objects cross the wire unchanged.

Standard library only: sandbox nodes install without JAX or NumPy.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import Any

# How a program receives a test: "stdio" (the input on stdin, the answer on stdout) or
# "function" (solve(**kwargs) with the input's JSON object, returning list[str]).
INTERFACES = ("stdio", "function")
# Test kinds: T0 original, T+ generated correctness, TO generated optimization.
TEST_KINDS = ("T0", "T+", "TO")
# How the runs of one test under Limits.repeats combine into its duration.
REPEAT_AGGREGATES = ("min", "median")
# Where a duration came from: the one vocabulary of provenance, from the client's
# `TestResult.extra["timing"]` to the `timing` column of the execution records.
#   fleet  measured where the program ran, on a sandbox that times (a fleet node or the
#          embedded pool; `jaxopt_rl.rollouts.execute` may demote the embedded pool to `local`)
#   cap    no measurement: the cap standing in for a timeout verdict
#   local  measured off the timing fleet (a local fallback rerun): never ranked
#   none   no duration exists; duration_s is a placeholder (infra errors, local verdicts)
TIMINGS = ("fleet", "cap", "local", "none")
# The client's word for `fleet` before the vocabularies were merged: results and dumps written
# then still say it, and it is read as `fleet` (nothing writes it any more).
LEGACY_TIMINGS = {"measured": "fleet"}


class Status(enum.StrEnum):
    """Verdict of one program on one test.

    `infra_error` means the sandbox could not reach a verdict (a jail failed to start, a node
    died, a reply was unparseable): it is never a statement about the program.

    `not_run` (our extension of the vocabulary of
    docs/design/sandbox-timing.md §1.9) is a test the sandbox did not run
    because the request asked to stop at the program's first definitive failure on a
    correctness test (`RunRequest.stop_after_failure`). It is a failure, conclusive, without
    a duration (the reward layer counts it at the cap): it can only lower a reward, and under
    a correctness gate (the program already failed it) it changes none.
    """

    SUCCESS = "success"
    TIMEOUT = "timeout"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    INFRA_ERROR = "infra_error"
    NOT_RUN = "not_run"

    @property
    def is_conclusive(self) -> bool:
        return self is not Status.INFRA_ERROR

    @property
    def reward_class(self) -> str:
        """The three-way view rewards use: success, timeout, failure (or inconclusive)."""
        if self is Status.SUCCESS:
            return "success"
        if self is Status.TIMEOUT:
            return "timeout"
        if self is Status.INFRA_ERROR:
            return "inconclusive"
        return "failure"


def _encode_bytes(data: str | bytes | None) -> Any:
    if data is None or isinstance(data, str):
        return data
    return {"b64": base64.b64encode(data).decode("ascii")}


def _decode_bytes(data: Any) -> str | bytes | None:
    if isinstance(data, dict):
        return base64.b64decode(data["b64"])
    return data


@dataclass(frozen=True)
class TestCase:
    """One test: the program's stdin (or, for function programs, its JSON keyword arguments) and
    the expected output (None when only the status and duration matter, e.g. reference timing)."""

    __test__ = False  # not a pytest test class

    input: str | bytes
    expected: str | bytes | None = None

    def to_json(self) -> dict[str, Any]:
        return {"input": _encode_bytes(self.input), "expected": _encode_bytes(self.expected)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestCase:
        return cls(input=_decode_bytes(data["input"]), expected=_decode_bytes(data.get("expected")))


@dataclass(frozen=True)
class Limits:
    """Resource envelope of one program run on one test.

    `time_s` is the service cap (10 s): stricter intended limits are applied afterwards by the
    reward layer, never by shrinking this cap. `repeats > 1` runs each test k times and reports
    the minimum duration (the noise lever of the timing benchmarks).
    """

    time_s: float = 10.0
    memory_mb: int = 1024
    output_mb: int = 64
    repeats: int = 1

    def __post_init__(self) -> None:
        if not (0 < self.time_s <= 600):
            raise ValueError(f"Limits.time_s must be in (0, 600], got {self.time_s}")
        if not (16 <= self.memory_mb <= 65536):
            raise ValueError(f"Limits.memory_mb must be in [16, 65536], got {self.memory_mb}")
        if not (0 < self.output_mb <= 1024):
            raise ValueError(f"Limits.output_mb must be in (0, 1024], got {self.output_mb}")
        if not (1 <= self.repeats <= 100):
            raise ValueError(f"Limits.repeats must be in [1, 100], got {self.repeats}")

    def to_json(self) -> dict[str, Any]:
        return {"time_s": self.time_s, "memory_mb": self.memory_mb,
                "output_mb": self.output_mb, "repeats": self.repeats}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        return cls(**data)


# Test-kind names accepted besides TEST_KINDS (the two categories of the fallback rules).
KIND_CATEGORIES = ("correctness", "optimization")
CORRECTNESS_KINDS = ("T0", "T+", "correctness")  # the kinds whose failure fails the program


@dataclass(frozen=True)
class RunRequest:
    """One program on a batch of tests, with its options: the one run request of the sandbox,
    made by callers (`connect().run`), carried by the HTTP protocol (`protocol`, with its
    `request_id`) and executed by a pool slot (`jails.batch`). Constructing one validates it
    (`validate`), so every path checks a request the same way, with an error naming the
    field (TypeError for a wrong type, ValueError for a bad value).

    `repeat_aggregate` None means the pool's default; `test_kinds` (one per test: T0, T+, TO,
    or correctness / optimization) is read by the fallback rules; `request_id` is the
    idempotency key on the wire (empty for an embedded call).

    `stop_after_failure` (needs `test_kinds`): once the program has a definitive non-success
    verdict (anything but success and infra_error) on a correctness test, its remaining tests
    are not run and come back `not_run`. A caller whose reward is decided by that failure
    (a correctness gate) saves the rest of the run: a program stuck in a loop costs one cap,
    not one per test.
    """

    program: str
    tests: tuple[TestCase, ...]
    limits: Limits = field(default_factory=Limits)
    interface: str = "stdio"
    checker: str | None = None
    float_tolerance: float | None = None
    repeat_aggregate: str | None = None
    test_kinds: tuple[str, ...] | None = None
    request_id: str = ""
    stop_after_failure: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tests", tuple(self.tests))
        if self.test_kinds is not None and not isinstance(self.test_kinds, str):
            object.__setattr__(self, "test_kinds", tuple(self.test_kinds))
        self.validate()

    def validate(self) -> None:
        if not isinstance(self.program, str):
            raise TypeError(f"program: expected str, got {type(self.program).__name__}")
        if not isinstance(self.limits, Limits):
            raise TypeError(f"limits: expected Limits, got {type(self.limits).__name__}")
        if self.interface not in INTERFACES:
            raise ValueError(f"interface: must be one of {list(INTERFACES)}, got "
                             f"{self.interface!r}")
        if self.checker is not None and not isinstance(self.checker, str):
            raise TypeError(f"checker: expected Python source (str), got "
                            f"{type(self.checker).__name__}")
        if self.float_tolerance is not None and not (
                isinstance(self.float_tolerance, int | float)
                and not isinstance(self.float_tolerance, bool) and self.float_tolerance >= 0):
            raise ValueError(f"float_tolerance: must be a number >= 0, got "
                             f"{self.float_tolerance!r}")
        if self.repeat_aggregate not in (None, *REPEAT_AGGREGATES):
            raise ValueError(f"repeat_aggregate: must be one of {list(REPEAT_AGGREGATES)} or "
                             f"None, got {self.repeat_aggregate!r}")
        if not isinstance(self.request_id, str):
            raise TypeError(f"request_id: expected str, got {type(self.request_id).__name__}")
        if not isinstance(self.stop_after_failure, bool):
            raise TypeError(f"stop_after_failure: expected bool, got "
                            f"{type(self.stop_after_failure).__name__}")
        if self.stop_after_failure and self.test_kinds is None:
            raise ValueError("stop_after_failure: needs test_kinds (only a failure on a "
                             "correctness test stops a run)")
        for index, test in enumerate(self.tests):
            _validate_test(index, test, self.interface)
        kinds = self.test_kinds
        if kinds is not None:
            if isinstance(kinds, str):
                raise TypeError("test_kinds: expected a list with one kind per test, got a "
                                "string")
            if len(kinds) != len(self.tests):
                raise ValueError(f"test_kinds: {len(kinds)} kinds for {len(self.tests)} tests")
            for index, kind in enumerate(kinds):
                if kind not in TEST_KINDS + KIND_CATEGORIES:
                    raise ValueError(f"test_kinds[{index}]: unknown kind {kind!r} (one of "
                                     f"{', '.join(TEST_KINDS + KIND_CATEGORIES)})")

    def subset(self, indices) -> RunRequest:
        """The same request on the tests at `indices` (a retry, a failover, a fallback)."""
        kinds = None if self.test_kinds is None else tuple(self.test_kinds[i] for i in indices)
        return dataclasses.replace(self, tests=tuple(self.tests[i] for i in indices),
                                   test_kinds=kinds)

    def pool_options(self) -> dict[str, Any]:
        """The keyword options of `LocalPool.run` / `submit` for this request."""
        options = {"interface": self.interface, "checker": self.checker,
                   "float_tolerance": self.float_tolerance}
        if self.repeat_aggregate is not None:  # pools without the option keep working
            options["repeat_aggregate"] = self.repeat_aggregate
        if self.stop_after_failure:
            options |= {"stop_after_failure": True, "test_kinds": self.test_kinds}
        return options

    def stops_at(self, index: int, status: Status) -> bool:
        """Whether `status` on test `index` ends the run (see `stop_after_failure`)."""
        return (self.stop_after_failure and status not in (Status.SUCCESS, Status.INFRA_ERROR)
                and self.test_kinds[index] in CORRECTNESS_KINDS)


def _validate_test(index: int, test: Any, interface: str) -> None:
    if not isinstance(test, TestCase):
        raise TypeError(f"tests[{index}]: expected TestCase, got {type(test).__name__}")
    for name in ("input", "expected"):
        value = getattr(test, name)
        if value is None and name == "expected":
            continue
        if not isinstance(value, str | bytes):
            raise TypeError(f"tests[{index}].{name}: expected str or bytes, got "
                            f"{type(value).__name__}")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"tests[{index}].{name}: holds a lone surrogate at index "
                                 f"{exc.start} (not valid Unicode); pass bytes") from None
    if interface == "function":
        try:
            kwargs = json.loads(test.input)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"tests[{index}].input: is not JSON: {exc}") from None
        if not isinstance(kwargs, dict):
            raise ValueError(f"tests[{index}].input: must be a JSON object of keyword "
                             f"arguments, got {type(kwargs).__name__}")


@dataclass(frozen=True)
class TestResult:
    """Outcome of one test. `duration_s` is wall time of the test's own run, without interpreter
    start-up or parsing the test's input; compiling the program is free up to
    `harness.COMPILE_ALLOWANCE_NS` (5 ms) and charged to every test beyond it (a program cannot
    move work into its import). A timeout is recorded at the cap."""

    __test__ = False

    status: Status
    duration_s: float
    cpu_s: float = 0.0
    stdout: bytes | None = None
    stderr: str = ""
    score: float | None = None  # checker score for score-based tasks (None: not scored)
    detail: str = ""  # short machine-readable reason (e.g. "checker: invalid tour")
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "duration_s": self.duration_s,
            "cpu_s": self.cpu_s,
            "stdout": _encode_bytes(self.stdout),
            "stderr": self.stderr,
            "score": self.score,
            "detail": self.detail,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        stdout = _decode_bytes(data.get("stdout"))
        return cls(
            status=Status(data["status"]),
            duration_s=float(data["duration_s"]),
            cpu_s=float(data.get("cpu_s", 0.0)),
            stdout=stdout.encode() if isinstance(stdout, str) else stdout,
            stderr=data.get("stderr", ""),
            score=data.get("score"),
            detail=data.get("detail", ""),
            extra=data.get("extra") or {},
        )

    @classmethod
    def infra_error(cls, detail: str) -> TestResult:
        return cls(status=Status.INFRA_ERROR, duration_s=0.0, detail=detail)
