"""The on-disk DMC-Optim dataset format and its reader (`jaxopt_rl.data.writer` writes it).

A dataset is a folder:

    manifest.json       format_version, name, build config, funnel, split counts, timing
                        campaigns {campaign_id: {backend, repeats, time_cap_s, host, calibration}}
    problems.jsonl      one problem a line, sorted by id: problem_id, title, statement,
                        difficulty, time_limit_s, memory_mb, interface, signature,
                        float_tolerance, source_name, split (train | test | complement),
                        duration_filterable, robust_cv {T0,T+,TO}, length_r {..}, n_tests {..},
                        n_correct, n_incorrect
    tests.parquet       problem_id, test_id, kind (T0 | T+ | TO), origin, input, expected,
                        char_len, campaign, attempt, method, call, seed, reference, inline,
                        input_sha256, expected_sha256 — one row group per problem, zstd; rows
                        in dataset order (T0, T+, TO; ids ascending). A generated test longer
                        than the export's `inline_max_chars` is a *recipe*: input/expected are
                        null, and `jaxopt_rl.data.materialize` regenerates both in the sandbox
                        (generator call + reference run), checks the digests, and caches them
                        under `materialized/` (git-ignored)
    generators.jsonl    problem_id, index, source — the input generators (recipes need them)
    solutions.jsonl     problem_id, solution_id, label, verified_correct, negative_control, note,
                        code
    durations.parquet   problem_id, test_id, solution_id, status, duration_s, campaign_id — the
                        stored reference durations (raw; timeouts at the cap)
    funnel.json / .csv  the stage table: stage | operation | problems | correct | incorrect
    rejections.jsonl    problem_id, stage, outcome (dropped | error | pending), reason
    problem_stats.jsonl per-problem build diagnostics (campaign pass rates, filter decisions,
                        false-positive rates, removed solutions)

Every file is written sorted and without timestamps (only the manifest has `created_at`), so a
rebuild reproduces tests and expected outputs byte-for-byte.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jaxopt_rl.data.references import (
    ReferenceTimes,
    build_reference_times,
    pad_reference_times,
)
from jaxopt_rl.data.schema import GenInfo, Problem, ProblemTest, Solution

FORMAT_VERSION = 1
SPLITS = ("train", "test", "complement")
# the column types of tests.parquet and durations.parquet (the writer writes them)
TEST_SCHEMA = pa.schema([
    ("problem_id", pa.string()), ("test_id", pa.string()), ("kind", pa.string()),
    ("origin", pa.string()), ("input", pa.large_string()), ("expected", pa.large_string()),
    ("char_len", pa.int64()), ("campaign", pa.string()), ("attempt", pa.int32()),
    ("method", pa.string()), ("call", pa.int32()), ("seed", pa.string()),
    ("reference", pa.string()), ("inline", pa.bool_()), ("input_sha256", pa.string()),
    ("expected_sha256", pa.string()),
])
DURATION_SCHEMA = pa.schema([
    ("problem_id", pa.string()), ("test_id", pa.string()), ("solution_id", pa.string()),
    ("status", pa.string()), ("duration_s", pa.float64()), ("campaign_id", pa.string()),
])


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"dataset file {path} is missing")
    rows = []
    with open(path) as handle:
        for lineno, line in enumerate(handle, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{lineno}: not valid JSON: {err}") from err
    return rows


@dataclass(frozen=True)
class ProblemRecord:
    """One row of problems.jsonl."""

    problem_id: str
    title: str
    statement: str
    difficulty: str
    time_limit_s: float
    memory_mb: int
    interface: str
    signature: str | None
    float_tolerance: float | None
    source_name: str
    split: str | None
    duration_filterable: bool
    robust_cv: dict[str, float | None]
    length_r: dict[str, float | None]
    n_tests: dict[str, int]
    n_correct: int
    n_incorrect: int


class Dataset:
    """A built dataset folder. Problems load eagerly (small); tests and durations per problem on
    demand, read by row-group statistics so a large dataset never loads whole."""

    def __init__(self, root: str | Path, cache_dir: str | Path | None = None):
        self.root = Path(root)
        # Materialised recipe tests live beside the dataset unless told otherwise.
        self.cache_dir = Path(cache_dir) if cache_dir is not None else self.root / "materialized"
        manifest_path = self.root / "manifest.json"
        if not manifest_path.is_file():
            raise FileNotFoundError(f"{self.root} is not a built dataset (no manifest.json)")
        self.manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        version = self.manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(f"{manifest_path}: format_version {version}, this code reads "
                             f"{FORMAT_VERSION}")
        self.problems: dict[str, ProblemRecord] = {}
        fields = {f.name for f in dataclasses.fields(ProblemRecord)}
        for i, row in enumerate(_read_jsonl(self.root / "problems.jsonl")):
            missing = fields - set(row)
            if missing:
                raise ValueError(f"{self.root / 'problems.jsonl'}:{i + 1}: missing "
                                 f"{', '.join(sorted(missing))}")
            self.problems[row["problem_id"]] = ProblemRecord(**{k: row[k] for k in fields})

    def problem_ids(self, split: str | None = None) -> list[str]:
        return sorted(p for p, r in self.problems.items() if split is None or r.split == split)

    def record(self, problem_id: str) -> ProblemRecord:
        if problem_id not in self.problems:
            raise KeyError(f"problem {problem_id!r} is not in dataset {self.root}")
        return self.problems[problem_id]

    def test_rows(self, problem_id: str) -> list[dict[str, Any]]:
        """Raw tests.parquet rows of one problem (recipe rows have input/expected None)."""
        self.record(problem_id)
        return pq.read_table(self.root / "tests.parquet",
                             filters=[("problem_id", "=", problem_id)]).to_pylist()

    @functools.lru_cache(maxsize=256)  # noqa: B019 - datasets are few and long-lived
    def tests(self, problem_id: str) -> tuple[ProblemTest, ...]:
        """The problem's tests in dataset order, recipe tests filled from the materialised cache."""
        rows = self.test_rows(problem_id)
        if not all(row["inline"] for row in rows):
            cached = self.materialized_path(problem_id)
            if not cached.is_file():
                raise FileNotFoundError(
                    f"problem {problem_id!r} of {self.root} has tests stored as recipes; run "
                    f"`jaxopt-rl data materialize {self.root}` once (needs the sandbox)")
            texts = {r["test_id"]: r for r in pq.read_table(cached).to_pylist()}
            for row in rows:
                if not row["inline"]:
                    got = texts.get(row["test_id"])
                    if got is None or sha256_text(got["input"]) != row["input_sha256"]:
                        raise ValueError(f"{cached}: test {row['test_id']!r} missing or stale; "
                                         f"rerun `jaxopt-rl data materialize {self.root}`")
                    row["input"], row["expected"] = got["input"], got["expected"]
        tests = []
        for row in rows:
            gen = (GenInfo(row["campaign"], row["attempt"], row["method"], row["call"],
                           row["seed"], row["reference"] or "") if row["campaign"] else None)
            tests.append(ProblemTest(row["test_id"], row["kind"], row["origin"], row["input"],
                                     row["expected"], gen))
        return tuple(tests)

    def materialized_path(self, problem_id: str) -> Path:
        return self.cache_dir / f"{problem_id}.parquet"

    @functools.cached_property
    def generators(self) -> dict[str, tuple[str, ...]]:
        by_problem: dict[str, list[tuple[int, str]]] = {}
        for row in _read_jsonl(self.root / "generators.jsonl"):
            by_problem.setdefault(row["problem_id"], []).append((row["index"], row["source"]))
        return {k: tuple(src for _, src in sorted(v)) for k, v in by_problem.items()}

    @functools.cached_property
    def _solutions(self) -> dict[str, tuple[Solution, ...]]:
        by_problem: dict[str, list[Solution]] = {}
        for row in _read_jsonl(self.root / "solutions.jsonl"):
            problem_id = row.pop("problem_id")
            by_problem.setdefault(problem_id, []).append(Solution(**row))
        return {k: tuple(v) for k, v in by_problem.items()}

    def solutions(self, problem_id: str) -> tuple[Solution, ...]:
        self.record(problem_id)
        return self._solutions.get(problem_id, ())

    def duration_rows(self, problem_id: str | None = None) -> list[dict[str, Any]]:
        filters = [("problem_id", "=", problem_id)] if problem_id else None
        return pq.read_table(self.root / "durations.parquet", filters=filters).to_pylist()

    def reference_times(self, problem_id: str) -> ReferenceTimes:
        # Test ids, kinds and lengths are stored for every test, so references of recipe tests
        # need no materialising.
        tests = self.test_rows(problem_id)
        rows = self.duration_rows(problem_id)
        campaigns = {r["campaign_id"] for r in rows}
        if len(campaigns) > 1:
            raise ValueError(f"problem {problem_id!r}: durations from several timing campaigns "
                             f"{sorted(campaigns)}; they must not be mixed")
        return build_reference_times(
            problem_id, [(t["test_id"], t["kind"], t["char_len"]) for t in tests],
            [(r["test_id"], r["solution_id"], r["status"], r["duration_s"]) for r in rows],
            campaigns.pop() if campaigns else "")

    def reference_arrays(self, problem_ids: Sequence[str], num_tests: int | None = None,
                         num_references: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`(ref_duration_PTH, ref_mask_PTH)` for a batch of problems, as `RecordBatch` takes
        them (row p = problem_ids[p]; tests in dataset order; padding fixed when given)."""
        return pad_reference_times([self.reference_times(p) for p in problem_ids],
                                   num_tests, num_references)

    def reference_record_rows(self, problem_id: str) -> list[dict[str, Any]]:
        """The problem's usable stored durations as `row_type: reference` rows of an
        execution-record file (`jaxopt_rl.data.execution_records`): success or timeout only,
        raw seconds."""
        return [{"row_type": "reference", "problem_id": problem_id, "test_id": r["test_id"],
                 "reference_id": r["solution_id"], "duration_s": r["duration_s"]}
                for r in self.duration_rows(problem_id) if r["status"] in ("success", "timeout")]

    def problem(self, problem_id: str) -> Problem:
        """The full schema object (statement, tests, solutions) of one problem."""
        r = self.record(problem_id)
        return Problem(problem_id=r.problem_id, statement=r.statement, title=r.title,
                       source_name=r.source_name, difficulty=r.difficulty,
                       time_limit_s=r.time_limit_s, memory_mb=r.memory_mb,
                       interface=r.interface, signature=r.signature,
                       float_tolerance=r.float_tolerance, tests=self.tests(problem_id),
                       solutions=self.solutions(problem_id),
                       generators=self.generators.get(problem_id, ()), meta={"split": r.split})

    def funnel(self) -> list[dict[str, Any]]:
        return json.loads((self.root / "funnel.json").read_text())

    def rejections(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.root / "rejections.jsonl")


def load_dataset(root: str | Path, cache_dir: str | Path | None = None) -> Dataset:
    return Dataset(root, cache_dir)
