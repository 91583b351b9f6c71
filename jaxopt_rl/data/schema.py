"""The DMC-Optim entities: problems, tests, solutions, and their JSON form.

One `Problem` carries everything the builder needs about one task: statement and limits, its
tests (`T0` original, `T+` generated correctness, `TO` generated optimization), its human
solutions with their labels, and the input-generator sources used to grow `T+`/`TO`. Objects are
frozen; stages return updated copies (`dataclasses.replace`).

Ids are stable strings so a rebuild reproduces them exactly:
  problem  `mini-007`, `dmc-1548-e-gregor-and-the-two-painters`
  test     `T0/000` (original, in source order), `T+/a03/c07` (campaign attempt 3, call 7),
           `TO/a00/c14`
  solution `correct_sort_two_pointers`, `correct/0042`, `incorrect/0007`

`from_json` validates types and names the problem, the field and (for list items) the index of
anything malformed, so a bad row is reported instead of silently skipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from jaxopt_rl.config import parse_yaml
from sandbox_cluster.api import INTERFACES, TEST_KINDS

TestKind = Literal["T0", "T+", "TO"]
ORIGINS = ("public", "private", "dmc_generated", "original", "generated")
LABELS = ("correct", "incorrect")
DIFFICULTIES = ("easy", "medium", "hard", "unknown")
METHODS = ("edge", "small", "sample", "large")
CAMPAIGN_KIND = {"correctness": "T+", "optimization": "TO"}


class SchemaError(ValueError):
    """A record does not follow the schema; the message names the record and the field."""


def read_folder_spec(folder: Path, file_name: str, known_keys: Collection[str],
                     required_keys: Collection[str]) -> dict[str, Any]:
    """The YAML mapping `folder/file_name` of a problem or task folder, checked: it exists,
    parses, has no unknown key, every required key is non-empty, and `id` names the folder."""
    spec_path = folder / file_name
    if not spec_path.is_file():
        raise SchemaError(f"{spec_path}: missing")
    try:
        spec = parse_yaml(spec_path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise SchemaError(f"{spec_path}: not valid YAML: {err}") from err
    if not isinstance(spec, dict):
        raise SchemaError(f"{spec_path}: top level must be a mapping")
    unknown = sorted(set(spec) - set(known_keys))
    if unknown:
        raise SchemaError(f"{spec_path}: unknown key(s) {', '.join(map(str, unknown))}")
    for key in required_keys:
        if spec.get(key) in (None, ""):
            raise SchemaError(f"{spec_path}: missing key {key!r}")
    if "id" in spec and str(spec["id"]) != folder.name:
        raise SchemaError(f"{spec_path}: id {spec['id']!r} differs from the folder name "
                          f"{folder.name!r}")
    return spec


@dataclass(frozen=True)
class GenInfo:
    """Where a generated test came from: enough to regenerate its input exactly."""

    campaign: str  # correctness | optimization
    attempt: int
    method: str  # edge | small | sample | large
    call: int
    seed: str  # the string given to random.Random
    reference: str = ""  # solution whose (normalised) output is the expected output


@dataclass(frozen=True)
class ProblemTest:
    """One I/O test. `expected` is None only while a generated input awaits its consensus."""

    test_id: str
    kind: str  # T0 | T+ | TO
    origin: str
    input: str
    expected: str | None
    gen: GenInfo | None = None

    @property
    def char_len(self) -> int:
        return len(self.input) + len(self.expected or "")


@dataclass(frozen=True)
class Solution:
    """A human solution. `verified_correct` / `negative_control` are None until stage 3 runs."""

    solution_id: str
    code: str
    label: str  # correct | incorrect
    verified_correct: bool | None = None
    negative_control: bool | None = None
    note: str = ""  # first-line comment or source language note, for people reading the data


@dataclass(frozen=True)
class Problem:
    problem_id: str
    statement: str
    title: str = ""
    source_name: str = ""
    difficulty: str = "unknown"
    time_limit_s: float = 10.0
    memory_mb: int = 1024
    interface: str = "stdio"
    signature: str | None = None  # function interface: "solve(n: int, ...) -> list[str]"
    float_tolerance: float | None = None
    tests: tuple[ProblemTest, ...] = ()
    solutions: tuple[Solution, ...] = ()
    generators: tuple[str, ...] = ()  # generator sources; attempt a uses generators[a % len]
    meta: dict[str, Any] = field(default_factory=dict)

    def tests_of(self, kind: str) -> tuple[ProblemTest, ...]:
        return tuple(t for t in self.tests if t.kind == kind)

    def solutions_of(self, label: str) -> tuple[Solution, ...]:
        return tuple(s for s in self.solutions if s.label == label)

    def verified_correct(self) -> tuple[Solution, ...]:
        return tuple(s for s in self.solutions if s.label == "correct" and s.verified_correct)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self) -> str:
        """A content hash: two problems with equal fingerprints build identically."""
        blob = json.dumps(self.to_json(), sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Problem:
        where = f"problem {data.get('problem_id', '<no problem_id>')!r}"
        if not isinstance(data, dict):
            raise SchemaError(f"{where}: expected a mapping, got {type(data).__name__}")
        _check_keys(data, cls, where)
        tests = tuple(
            _test_from_json(t, f"{where}: tests[{i}]") for i, t in enumerate(_list(data, "tests", where))
        )
        solutions = tuple(
            _solution_from_json(s, f"{where}: solutions[{i}]")
            for i, s in enumerate(_list(data, "solutions", where))
        )
        generators = tuple(_list(data, "generators", where))
        for i, source in enumerate(generators):
            _expect(source, str, f"{where}: generators[{i}]")
        problem = cls(
            problem_id=_field(data, "problem_id", str, where),
            statement=_field(data, "statement", str, where),
            title=_field(data, "title", str, where, ""),
            source_name=_field(data, "source_name", str, where, ""),
            difficulty=_field(data, "difficulty", str, where, "unknown"),
            time_limit_s=float(_field(data, "time_limit_s", (int, float), where, 10.0)),
            memory_mb=int(_field(data, "memory_mb", int, where, 1024)),
            interface=_field(data, "interface", str, where, "stdio"),
            signature=_field(data, "signature", (str, type(None)), where, None),
            float_tolerance=_field(data, "float_tolerance", (int, float, type(None)), where, None),
            tests=tests,
            solutions=solutions,
            generators=generators,
            meta=_field(data, "meta", dict, where, {}),
        )
        validate_problem(problem)
        return problem


def validate_problem(problem: Problem) -> None:
    """Cross-field checks; raise SchemaError naming the problem and the field."""
    where = f"problem {problem.problem_id!r}"
    if not problem.problem_id or "/" in problem.problem_id:
        raise SchemaError(f"{where}: problem_id must be non-empty and contain no '/'")
    if problem.difficulty not in DIFFICULTIES:
        raise SchemaError(f"{where}: difficulty {problem.difficulty!r} not in {DIFFICULTIES}")
    if problem.interface not in INTERFACES:
        raise SchemaError(f"{where}: interface {problem.interface!r} not in {INTERFACES}")
    if problem.interface == "function" and not problem.signature:
        raise SchemaError(f"{where}: interface 'function' needs a signature")
    if not (0 < problem.time_limit_s <= 600):
        raise SchemaError(f"{where}: time_limit_s must be in (0, 600], got {problem.time_limit_s}")
    if not (16 <= problem.memory_mb <= 65536):
        raise SchemaError(f"{where}: memory_mb must be in [16, 65536], got {problem.memory_mb}")
    seen: set[str] = set()
    for test in problem.tests:
        if test.kind not in TEST_KINDS:
            raise SchemaError(f"{where}: test {test.test_id!r}: kind {test.kind!r} not in {TEST_KINDS}")
        if test.origin not in ORIGINS:
            raise SchemaError(f"{where}: test {test.test_id!r}: origin {test.origin!r} not in {ORIGINS}")
        if test.test_id in seen:
            raise SchemaError(f"{where}: duplicate test_id {test.test_id!r}")
        seen.add(test.test_id)
    seen.clear()
    for solution in problem.solutions:
        if solution.label not in LABELS:
            raise SchemaError(
                f"{where}: solution {solution.solution_id!r}: label {solution.label!r} not in {LABELS}"
            )
        if solution.solution_id in seen:
            raise SchemaError(f"{where}: duplicate solution_id {solution.solution_id!r}")
        seen.add(solution.solution_id)


def t0_test_id(index: int) -> str:
    return f"T0/{index:03d}"


def generated_test_id(kind: str, attempt: int, call: int) -> str:
    return f"{kind}/a{attempt:02d}/c{call:02d}"


def generator_seed(problem_id: str, campaign: str, attempt: int, method: str, call: int) -> str:
    """The seed string of one generator call (fixed by the mini source-format contract)."""
    return f"{problem_id}/{campaign}/{attempt}/{method}/{call}"


def _test_from_json(data: Any, where: str) -> ProblemTest:
    _expect(data, dict, where)
    _check_keys(data, ProblemTest, where, extra=("char_len",))
    gen = data.get("gen")
    if gen is not None:
        _expect(gen, dict, f"{where}.gen")
        _check_keys(gen, GenInfo, f"{where}.gen")
        gen = GenInfo(
            campaign=_field(gen, "campaign", str, f"{where}.gen"),
            attempt=_field(gen, "attempt", int, f"{where}.gen"),
            method=_field(gen, "method", str, f"{where}.gen"),
            call=_field(gen, "call", int, f"{where}.gen"),
            seed=_field(gen, "seed", str, f"{where}.gen"),
            reference=_field(gen, "reference", str, f"{where}.gen", ""),
        )
    return ProblemTest(
        test_id=_field(data, "test_id", str, where),
        kind=_field(data, "kind", str, where),
        origin=_field(data, "origin", str, where),
        input=_field(data, "input", str, where),
        expected=_field(data, "expected", (str, type(None)), where, None),
        gen=gen,
    )


def _solution_from_json(data: Any, where: str) -> Solution:
    _expect(data, dict, where)
    _check_keys(data, Solution, where)
    return Solution(
        solution_id=_field(data, "solution_id", str, where),
        code=_field(data, "code", str, where),
        label=_field(data, "label", str, where),
        verified_correct=_field(data, "verified_correct", (bool, type(None)), where, None),
        negative_control=_field(data, "negative_control", (bool, type(None)), where, None),
        note=_field(data, "note", str, where, ""),
    )


_MISSING = object()


def _field(data: dict, key: str, types: Any, where: str, default: Any = _MISSING) -> Any:
    if key not in data or (data[key] is None and default is not _MISSING and default is not None):
        if default is _MISSING:
            raise SchemaError(f"{where}: missing field {key!r}")
        return default
    value = data[key]
    _expect(value, types, f"{where}.{key}")
    return value


def _list(data: dict, key: str, where: str) -> list:
    value = data.get(key) or []
    _expect(value, (list, tuple), f"{where}.{key}")
    return list(value)


def _expect(value: Any, types: Any, where: str) -> None:
    bad_bool = isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))
    if bad_bool or not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise SchemaError(f"{where}: expected {names}, got {type(value).__name__} {_short(value)}")


def _check_keys(data: dict, cls: type, where: str, extra: tuple[str, ...] = ()) -> None:
    known = {f.name for f in dataclasses.fields(cls)} | set(extra)
    unknown = sorted(set(data) - known)
    if unknown:
        raise SchemaError(f"{where}: unknown field(s) {', '.join(unknown)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
