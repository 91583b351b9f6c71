"""The public vocabulary of the sandbox: statuses, test cases, limits and per-test results.

These types and the constants INTERFACES, TEST_KINDS and REPEAT_AGGREGATES (defined here
once; the pool, the protocol, the client and `jaxopt_rl` import them) are shared by the embedded pool, the HTTP server, the client and `jaxopt_rl` (which
imports `Status` rather than defining its own). They are plain frozen dataclasses with a JSON
form (`to_json` / `from_json`) so the same objects cross the wire unchanged.

Standard library only: sandbox nodes install without JAX or NumPy.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any

# How a program receives a test: "stdio" (the input on stdin, the answer on stdout) or
# "function" (solve(**kwargs) with the input's JSON object, returning list[str]).
INTERFACES = ("stdio", "function")
# Test kinds: T0 original, T+ generated correctness, TO generated optimization.
TEST_KINDS = ("T0", "T+", "TO")
# How the runs of one test under Limits.repeats combine into its duration.
REPEAT_AGGREGATES = ("min", "median")


class Status(enum.StrEnum):
    """Verdict of one program on one test.

    `infra_error` means the sandbox could not reach a verdict (a jail failed to start, a node
    died, a reply was unparseable): it is never a statement about the program.
    """

    SUCCESS = "success"
    TIMEOUT = "timeout"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    INFRA_ERROR = "infra_error"

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


@dataclass(frozen=True)
class TestResult:
    """Outcome of one test. `duration_s` is wall time of the test's own run (not interpreter
    start-up or compilation); a timeout is recorded at the cap."""

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
