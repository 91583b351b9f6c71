"""Stage 0: read problems from a source into `Problem`s, reporting malformed ones per problem.

Sources:
* `mini`: the DMC-Optim-mini folder format (one folder per problem: `problem.yaml`,
  `generator.py`, `solutions/{correct,incorrect}_<slug>.py`; see `jaxopt_rl.data.mini`).
* `codecontests`: DeepMind CodeContests Parquet shards (`jaxopt_rl.data.codecontests`).
* `jsonl`: problems already in our schema, one JSON object a line (`Problem.to_json`).

Every reader yields `Problem` or `Rejection(problem_id, reason)`; one bad problem never stops the
others. Reasons name the file and the key.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from jaxopt_rl.data.schema import (
    Problem,
    ProblemTest,
    SchemaError,
    Solution,
    read_folder_spec,
    t0_test_id,
    validate_problem,
)


@dataclass(frozen=True)
class Rejection:
    problem_id: str
    reason: str


MINI_KEYS = {"id", "title", "difficulty", "time_limit_s", "memory_mb", "interface", "statement",
             "original_tests", "float_tolerance"}
MINI_REQUIRED = ("id", "title", "difficulty", "statement", "original_tests")


def _first_comment(code: str) -> str:
    first = code.lstrip().splitlines()[0] if code.strip() else ""
    return first.lstrip("#").strip() if first.startswith("#") else ""


def read_mini_problem(folder: Path) -> Problem:
    """One problem folder in the mini format; raises SchemaError naming file and key."""
    spec_path = folder / "problem.yaml"
    spec = read_folder_spec(folder, "problem.yaml", MINI_KEYS, MINI_REQUIRED)
    raw_tests = spec["original_tests"]
    if not isinstance(raw_tests, list) or not raw_tests:
        raise SchemaError(f"{spec_path}: original_tests must be a non-empty list")
    tests = []
    for i, item in enumerate(raw_tests):
        if not isinstance(item, dict) or set(item) != {"input", "output"}:
            raise SchemaError(f"{spec_path}: original_tests[{i}] needs exactly 'input' and 'output'")
        for key in ("input", "output"):
            if not isinstance(item[key], str):
                raise SchemaError(f"{spec_path}: original_tests[{i}].{key} must be a string "
                                  f"(quote it), got {type(item[key]).__name__}")
        tests.append(ProblemTest(t0_test_id(i), "T0", "original", item["input"], item["output"]))
    solutions = []
    solutions_dir = folder / "solutions"
    for path in sorted(solutions_dir.glob("*.py")) if solutions_dir.is_dir() else []:
        label = path.stem.split("_", 1)[0]
        if label not in ("correct", "incorrect") or "_" not in path.stem:
            raise SchemaError(f"{path}: name must be correct_<slug>.py or incorrect_<slug>.py")
        code = path.read_text()
        solutions.append(Solution(path.stem, code, label, note=_first_comment(code)))
    generator = folder / "generator.py"
    if not generator.is_file():
        raise SchemaError(f"{generator}: missing")
    tolerance = spec.get("float_tolerance")
    problem = Problem(
        problem_id=str(spec["id"]),
        statement=str(spec["statement"]),
        title=str(spec["title"]),
        source_name=f"mini:{folder.name}",
        difficulty=str(spec["difficulty"]),
        time_limit_s=_number(spec, "time_limit_s", 10.0, spec_path),
        memory_mb=int(_number(spec, "memory_mb", 1024, spec_path)),
        interface=str(spec.get("interface", "stdio")),
        float_tolerance=None if tolerance is None else _number(spec, "float_tolerance", 0, spec_path),
        tests=tuple(tests),
        solutions=tuple(solutions),
        generators=(generator.read_text(),),
    )
    try:
        validate_problem(problem)
    except SchemaError as err:
        raise SchemaError(f"{spec_path}: {err}") from None
    if problem.interface != "stdio":
        raise SchemaError(f"{spec_path}: interface must be 'stdio' for mini problems")
    return problem


def _number(spec: dict, key: str, default: float, path: Path) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaError(f"{path}: {key} must be a number, got {value!r}")
    return float(value)


def read_mini(root: Path) -> Iterator[Problem | Rejection]:
    if not root.is_dir():
        raise FileNotFoundError(f"mini sources folder {root} does not exist")
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            yield read_mini_problem(folder)
        except (SchemaError, OSError, UnicodeDecodeError) as err:
            yield Rejection(folder.name, f"load: {err}")


def read_jsonl(path: Path) -> Iterator[Problem | Rejection]:
    with open(path) as lines:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                yield Rejection(where, f"load: {path}:{lineno}: not valid JSON: {err}")
                continue
            problem_id = row.get("problem_id") if isinstance(row, dict) else None
            try:
                yield Problem.from_json(row)
            except SchemaError as err:
                yield Rejection(str(problem_id or where), f"load: {path}:{lineno}: {err}")


def attach_generators(problem: Problem, generators_dir: Path) -> Problem:
    """Add `<generators_dir>/<problem_id>/*.py` (sorted) as the problem's generator sources."""
    folder = generators_dir / problem.problem_id
    if not folder.is_dir():
        return problem
    sources = tuple(p.read_text() for p in sorted(folder.glob("*.py")))
    return dataclasses.replace(problem, generators=problem.generators + sources)
