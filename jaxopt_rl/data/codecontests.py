"""Importer for DeepMind CodeContests Parquet shards -> our `Problem` schema.

Columns read (the public schema): `name`, `description`, `public_tests` / `private_tests` /
`generated_tests` `{input: list[str], output: list[str]}`, `solutions` / `incorrect_solutions`
`{language: list[int], solution: list[str]}`, `difficulty`, `time_limit {seconds, nanos}`,
`memory_limit_bytes`, `cf_contest_id`, `cf_index`, `cf_rating`, `cf_tags`, `input_file`,
`output_file`, `source`. Only PYTHON3 (language 3) solutions are kept; other languages are
counted in `meta["dropped_languages"]`.

Choices:
* problem id = `dmc-` + the name lower-cased with non-alphanumerics collapsed to `-` (at most 80
  characters): stable across shards and readable (`dmc-1548-e-gregor-and-the-two-painters`);
  two rows with the same id are both kept, the second suffixed with its row index.
* difficulty (UNSPECIFIED in the paper): from `cf_rating` when > 0 (<= `easy_max_rating` 1400
  easy, <= `medium_max_rating` 2000 medium, else hard); otherwise from the CodeContests enum
  (EASY=1, MEDIUM=2, HARD+ = 3-5, Codeforces letters A/B=7/8 easy, C/D medium, later hard);
  else "unknown".
* solution ids: `correct/0000`, `incorrect/0000` numbered over the Python 3 solutions in order.
* T0 tests: public, then private, then DMC-generated, ids `T0/000`... in that order.
Rejected rows (a `Rejection` with the id and the reason): no tests at all, mismatched
input/output list lengths, a missing required column, file-based I/O (`input_file` set).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from jaxopt_rl.data.builder.sources import Rejection
from jaxopt_rl.data.schema import Problem, ProblemTest, SchemaError, Solution, t0_test_id

PYTHON3 = 3
LANGUAGE_NAMES = {0: "UNKNOWN", 1: "PYTHON", 2: "CPP", 3: "PYTHON3", 4: "JAVA"}
TEST_FIELDS = (("public_tests", "public"), ("private_tests", "private"),
               ("generated_tests", "dmc_generated"))
REQUIRED = ("name", "description", "public_tests", "private_tests", "solutions",
            "incorrect_solutions")
_LETTER_DIFFICULTY = {7: "easy", 8: "easy", 9: "medium", 10: "medium"}  # A, B, C, D


def problem_id_of(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80].strip("-")
    return f"dmc-{slug or 'unnamed'}"


def difficulty_of(row: dict[str, Any], easy_max_rating: int = 1400,
                  medium_max_rating: int = 2000) -> str:
    rating = row.get("cf_rating") or 0
    if rating > 0:
        return "easy" if rating <= easy_max_rating else "medium" if rating <= medium_max_rating else "hard"
    code = row.get("difficulty") or 0
    if code == 1:
        return "easy"
    if code == 2:
        return "medium"
    if code in (3, 4, 5):
        return "hard"
    if code in _LETTER_DIFFICULTY:
        return _LETTER_DIFFICULTY[code]
    if code > 10:
        return "hard"
    return "unknown"


def _solutions(row: dict[str, Any], column: str, label: str, dropped: dict[str, int]
               ) -> list[Solution]:
    block = row.get(column) or {}
    languages = list(block.get("language") or [])
    codes = list(block.get("solution") or [])
    if len(languages) != len(codes):
        raise SchemaError(f"{column}: {len(languages)} languages for {len(codes)} solutions")
    kept = []
    for language, code in zip(languages, codes):
        if language != PYTHON3:
            name = LANGUAGE_NAMES.get(language, str(language))
            dropped[name] = dropped.get(name, 0) + 1
            continue
        kept.append(Solution(f"{label}/{len(kept):04d}", code, label, note="PYTHON3"))
    return kept


def convert_row(row: dict[str, Any], index: int = 0) -> Problem | Rejection:
    """One CodeContests row -> Problem, or a Rejection naming the problem and the reason."""
    problem_id = problem_id_of(str(row.get("name") or f"row-{index}"))
    try:
        for key in REQUIRED:
            if key not in row:
                raise SchemaError(f"missing column {key!r}")
        if row.get("input_file") or row.get("output_file"):
            raise SchemaError("file-based I/O (input_file/output_file) is not supported")
        tests = []
        for column, origin in TEST_FIELDS:
            block = row.get(column) or {}
            inputs, outputs = list(block.get("input") or []), list(block.get("output") or [])
            if len(inputs) != len(outputs):
                raise SchemaError(f"{column}: {len(inputs)} inputs for {len(outputs)} outputs")
            for test_input, expected in zip(inputs, outputs):
                tests.append(ProblemTest(t0_test_id(len(tests)), "T0", origin, test_input, expected))
        if not tests:
            raise SchemaError("no tests (public, private and generated are all empty)")
        dropped: dict[str, int] = {}
        solutions = (_solutions(row, "solutions", "correct", dropped)
                     + _solutions(row, "incorrect_solutions", "incorrect", dropped))
        limit = row.get("time_limit") or {}
        time_limit = float(limit.get("seconds") or 0) + float(limit.get("nanos") or 0) / 1e9
        memory = int((row.get("memory_limit_bytes") or 0) // (1024 * 1024))
        meta = {
            "source": "codecontests",
            "cf_contest_id": row.get("cf_contest_id"),
            "cf_index": row.get("cf_index"),
            "cf_rating": row.get("cf_rating"),
            "cf_tags": list(row.get("cf_tags") or []),
            "original_time_limit_s": time_limit or None,
            "original_memory_mb": memory or None,
            "dropped_languages": dropped,
        }
        return Problem(
            problem_id=problem_id,
            statement=str(row["description"] or ""),
            title=str(row["name"]),
            source_name=str(row["name"]),
            difficulty=difficulty_of(row),
            # The service cap is 10 s for every problem (spec: sub-second limits are applied
            # after execution); the original limit is kept in meta.
            time_limit_s=10.0,
            memory_mb=1024,
            tests=tuple(tests),
            solutions=tuple(solutions),
            meta=meta,
        )
    except SchemaError as err:
        return Rejection(problem_id, f"codecontests row {index}: {err}")


def shard_paths(paths: Iterable[str | Path]) -> list[Path]:
    result = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            result.extend(sorted(path.glob("*.parquet")))
        elif path.is_file():
            result.append(path)
        else:
            raise FileNotFoundError(f"CodeContests shard {path} does not exist")
    return result


def read_shards(paths: Iterable[str | Path], batch_rows: int = 64) -> Iterator[Problem | Rejection]:
    """Stream problems from shards (row batches, so a multi-GB shard never sits in memory)."""
    seen: set[str] = set()
    index = 0
    for path in shard_paths(paths):
        shard = pq.ParquetFile(path)
        for batch in shard.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                item = convert_row(row, index)
                if isinstance(item, Problem) and item.problem_id in seen:
                    item = dataclasses.replace(item, problem_id=f"{item.problem_id}-{index}")
                if isinstance(item, Problem):
                    seen.add(item.problem_id)
                index += 1
                yield item
