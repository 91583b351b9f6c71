"""The on-disk DMC-Optim dataset: writing it (end of the build) and loading it (training, eval).

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

import contextlib
import csv
import dataclasses
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from jaxopt_rl.data.references import ReferenceTimes, build_reference_times
from jaxopt_rl.data.schema import TEST_KINDS, GenInfo, Problem, ProblemTest, Solution

FORMAT_VERSION = 1
SPLITS = ("train", "test", "complement")
_STATUS_OF_CODE = {"S": "success", "T": "timeout", "W": "wrong_answer", "R": "runtime_error",
                   "Y": "runtime_error", "M": "memory_limit", "O": "output_limit"}
_TEST_SCHEMA = pa.schema([
    ("problem_id", pa.string()), ("test_id", pa.string()), ("kind", pa.string()),
    ("origin", pa.string()), ("input", pa.large_string()), ("expected", pa.large_string()),
    ("char_len", pa.int64()), ("campaign", pa.string()), ("attempt", pa.int32()),
    ("method", pa.string()), ("call", pa.int32()), ("seed", pa.string()),
    ("reference", pa.string()), ("inline", pa.bool_()), ("input_sha256", pa.string()),
    ("expected_sha256", pa.string()),
])
_DURATION_SCHEMA = pa.schema([
    ("problem_id", pa.string()), ("test_id", pa.string()), ("solution_id", pa.string()),
    ("status", pa.string()), ("duration_s", pa.float64()), ("campaign_id", pa.string()),
])


def _test_order(test: ProblemTest) -> tuple[int, str]:
    return TEST_KINDS.index(test.kind), test.test_id


def problem_row(problem: Problem) -> dict[str, Any]:
    meta = problem.meta
    filt = meta.get("filterability", {})
    return {
        "problem_id": problem.problem_id,
        "title": problem.title,
        "statement": problem.statement,
        "difficulty": problem.difficulty,
        "time_limit_s": problem.time_limit_s,
        "memory_mb": problem.memory_mb,
        "interface": problem.interface,
        "signature": problem.signature,
        "float_tolerance": problem.float_tolerance,
        "source_name": problem.source_name,
        "split": meta.get("split"),
        "duration_filterable": bool(filt.get("duration_filterable", False)),
        "robust_cv": filt.get("robust_cv", {}),
        "length_r": filt.get("length_r", {}),
        "n_tests": {k: len(problem.tests_of(k)) for k in TEST_KINDS},
        "n_correct": len(problem.solutions_of("correct")),
        "n_incorrect": len(problem.solutions_of("incorrect")),
    }


def _stats_row(problem: Problem) -> dict[str, Any]:
    meta = problem.meta
    return {"problem_id": problem.problem_id,
            **{k: meta[k] for k in ("campaigns", "filters", "removed_solutions",
                                    "false_positive_t0", "filterability") if k in meta}}


def light_variant(problem: Problem) -> Problem:
    """One verified-correct solution and one negative control (first by id), no TO tests."""
    keep = {s.solution_id for label in ("correct", "incorrect")
            for s in sorted(problem.solutions_of(label), key=lambda s: s.solution_id)[:1]}
    tests = tuple(t for t in problem.tests if t.kind != "TO")
    meta = dict(problem.meta)
    trace = meta.get("durations")
    if trace:
        cols = [j for j, t in enumerate(trace["tests"]) if t in {t.test_id for t in tests}]
        rows = [h for h, s in enumerate(trace["solutions"]) if s in keep]
        meta["durations"] = {**trace, "tests": [trace["tests"][j] for j in cols],
                             "solutions": [trace["solutions"][h] for h in rows],
                             "duration": [[trace["duration"][h][j] for j in cols] for h in rows],
                             "status": ["".join(trace["status"][h][j] for j in cols) for h in rows]}
    return dataclasses.replace(problem, tests=tests, meta=meta, solutions=tuple(
        s for s in problem.solutions if s.solution_id in keep))


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


class DatasetWriter:
    """Streams problems (ascending ids) into a new dataset folder; `finish` swaps it in.

    Files are written to a sibling staging folder and moved into `root` only by `finish`, so an
    interrupted export never leaves a half-written dataset; `root/materialized/` (a cache whose
    entries are checked by digest) is left in place.
    """

    def __init__(self, root: str | Path, include_incorrect: bool = True,
                 inline_max_chars: int | None = None):
        self.root = Path(root)
        self.staging = self.root.with_name(f".{self.root.name}.staging")
        if self.staging.exists():
            shutil.rmtree(self.staging)
        self.staging.mkdir(parents=True)
        self.include_incorrect = include_incorrect
        self.inline_max_chars = inline_max_chars
        self.splits = dict.fromkeys(SPLITS, 0)
        self.count = 0
        self._last_id = ""
        self._files = contextlib.ExitStack()
        self._jsonl = {name: self._files.enter_context((self.staging / name).open("w"))
                       for name in ("problems.jsonl", "problem_stats.jsonl", "solutions.jsonl",
                                    "generators.jsonl")}
        self._tests = pq.ParquetWriter(self.staging / "tests.parquet", _TEST_SCHEMA,
                                       compression="zstd")
        self._durations = pq.ParquetWriter(self.staging / "durations.parquet", _DURATION_SCHEMA,
                                           compression="zstd")

    def add(self, p: Problem) -> None:
        if p.problem_id <= self._last_id:
            raise ValueError(f"DatasetWriter.add: {p.problem_id!r} after {self._last_id!r}; "
                             "problems must come in ascending id order")
        self._last_id = p.problem_id
        self.count += 1
        split = p.meta.get("split")
        if split in self.splits:
            self.splits[split] += 1
        self._write("problems.jsonl", problem_row(p))
        self._write("problem_stats.jsonl", _stats_row(p))
        for solution in sorted(p.solutions, key=lambda s: s.solution_id):
            if self.include_incorrect or solution.label == "correct":
                self._write("solutions.jsonl", {"problem_id": p.problem_id,
                                                **dataclasses.asdict(solution)})
        for i, source in enumerate(p.generators):
            self._write("generators.jsonl", {"problem_id": p.problem_id, "index": i,
                                             "source": source})
        rows = [_test_row(p.problem_id, t, self.inline_max_chars)
                for t in sorted(p.tests, key=_test_order)]
        self._tests.write_table(pa.Table.from_pylist(rows, schema=_TEST_SCHEMA))
        durations = _duration_rows(p)
        if durations:
            self._durations.write_table(pa.Table.from_pylist(durations, schema=_DURATION_SCHEMA))

    def _write(self, name: str, row: dict[str, Any]) -> None:
        self._jsonl[name].write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")

    def finish(self, *, funnel: Sequence[dict], rejections: Sequence[dict],
               manifest: dict[str, Any]) -> Path:
        self._files.close()
        self._tests.close()
        self._durations.close()
        (self.staging / "funnel.json").write_text(json.dumps(list(funnel), indent=1) + "\n")
        with open(self.staging / "funnel.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, ["stage", "operation", "problems", "correct",
                                             "incorrect"])
            writer.writeheader()
            writer.writerows(funnel)
        _write_jsonl(self.staging / "rejections.jsonl",
                     sorted(rejections, key=lambda r: (r["problem_id"], r["stage"])))
        (self.staging / ".gitignore").write_text("materialized/\n")
        full = {"format_version": FORMAT_VERSION, **manifest, "splits": self.splits,
                "num_problems": self.count}
        (self.staging / "manifest.json").write_text(json.dumps(full, indent=1, sort_keys=True)
                                                    + "\n")
        self.root.mkdir(parents=True, exist_ok=True)
        for path in self.staging.iterdir():
            os.replace(path, self.root / path.name)
        self.staging.rmdir()
        return self.root


def _duration_rows(p: Problem) -> list[dict[str, Any]]:
    trace = p.meta.get("durations")
    if not trace:
        return []
    rows = []
    for solution_id, durations, codes in zip(trace["solutions"], trace["duration"], trace["status"]):
        for test_id, seconds, code in zip(trace["tests"], durations, codes):
            rows.append({"problem_id": p.problem_id, "test_id": test_id,
                         "solution_id": solution_id, "status": _STATUS_OF_CODE[code],
                         "duration_s": float(seconds), "campaign_id": trace["campaign_id"]})
    return sorted(rows, key=lambda r: (r["test_id"], r["solution_id"]))


def write_dataset(root: str | Path, problems: Iterable[Problem], *, funnel: Sequence[dict],
                  rejections: Sequence[dict], manifest: dict[str, Any],
                  include_incorrect: bool = True, inline_max_chars: int | None = None) -> Path:
    """Write a whole dataset folder from problems in memory (sorted here)."""
    writer = DatasetWriter(root, include_incorrect, inline_max_chars)
    for problem in sorted(problems, key=lambda p: p.problem_id):
        writer.add(problem)
    return writer.finish(funnel=funnel, rejections=rejections, manifest=manifest)


def _test_row(problem_id: str, test: ProblemTest, inline_max_chars: int | None
              ) -> dict[str, Any]:
    gen = test.gen
    inline = gen is None or inline_max_chars is None or test.char_len <= inline_max_chars
    return {"problem_id": problem_id, "test_id": test.test_id, "kind": test.kind,
            "origin": test.origin, "input": test.input if inline else None,
            "expected": test.expected if inline else None, "char_len": test.char_len,
            "reference": gen.reference if gen else None, "inline": inline,
            "input_sha256": sha256_text(test.input), "expected_sha256": sha256_text(test.expected),
            "campaign": gen.campaign if gen else None, "attempt": gen.attempt if gen else None,
            "method": gen.method if gen else None, "call": gen.call if gen else None,
            "seed": gen.seed if gen else None}


def _write_jsonl(path: Path, rows: Sequence[dict]) -> None:
    with open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


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
        tests = self.tests(problem_id)
        rows = self.duration_rows(problem_id)
        campaigns = {r["campaign_id"] for r in rows}
        if len(campaigns) > 1:
            raise ValueError(f"problem {problem_id!r}: durations from several timing campaigns "
                             f"{sorted(campaigns)}; they must not be mixed")
        return build_reference_times(
            problem_id, [(t.test_id, t.kind, t.char_len) for t in tests],
            [(r["test_id"], r["solution_id"], r["status"], r["duration_s"]) for r in rows],
            campaigns.pop() if campaigns else "")

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
