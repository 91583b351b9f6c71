"""Writing a DMC-Optim dataset folder (the format is documented in `jaxopt_rl.data.store`).

`DatasetWriter` streams problems in ascending id order into a staging folder and swaps the
files into place at `finish`; `write_dataset` is the in-memory convenience. `light_variant`
shapes a problem for the light artifact (docs/design/dataset-eval.md §8 item 3).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from jaxopt_rl.data.schema import TEST_KINDS, Problem, ProblemTest
from jaxopt_rl.data.store import (
    DURATION_SCHEMA,
    FORMAT_VERSION,
    SPLITS,
    TEST_SCHEMA,
    sha256_text,
)

# the builder's per-test outcome letters (`builder.execution.outcome_code`) as statuses
_STATUS_OF_CODE = {"S": "success", "T": "timeout", "W": "wrong_answer", "R": "runtime_error",
                   "Y": "runtime_error", "M": "memory_limit", "O": "output_limit"}


def _write_jsonl(path: Path, rows: Sequence[dict]) -> None:
    with open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


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
        self._tests = pq.ParquetWriter(self.staging / "tests.parquet", TEST_SCHEMA,
                                       compression="zstd")
        self._durations = pq.ParquetWriter(self.staging / "durations.parquet", DURATION_SCHEMA,
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
        self._tests.write_table(pa.Table.from_pylist(rows, schema=TEST_SCHEMA))
        durations = _duration_rows(p)
        if durations:
            self._durations.write_table(pa.Table.from_pylist(durations, schema=DURATION_SCHEMA))

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


