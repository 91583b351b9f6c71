"""Rebuild recipe tests of a dataset in the sandbox and verify them byte-for-byte.

A recipe test (see `jaxopt_rl.data.store`) keeps everything needed to regenerate it: the
generator (`generators.jsonl`, attempt `a` uses generator `a % n`), the method and seed of the
call, and the reference solution whose normalised output is the expected output. Materialising
runs the generator call and then the reference in the sandbox (programs never run outside it),
checks both SHA-256 digests against the stored ones, and writes `<cache>/<problem_id>.parquet`.
A digest mismatch names the problem and the test and writes nothing for that problem: the
dataset must never silently serve a different test than the one its durations were measured on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from jaxopt_rl.data.builder.campaigns import normalise_output
from jaxopt_rl.data.builder.execution import (
    Executor,
    Run,
    generator_program,
    generator_request,
    stdout_text,
)
from jaxopt_rl.data.store import Dataset, sha256_text
from sandbox_cluster.api import Limits, Status, TestCase

_SCHEMA = pa.schema([("test_id", pa.string()), ("input", pa.large_string()),
                     ("expected", pa.large_string())])


class MaterializeError(ValueError):
    """A regenerated test differs from the stored digest (or could not be regenerated)."""


def materialize_problem(dataset: Dataset, problem_id: str, executor: Executor,
                        time_cap_s: float = 10.0) -> int:
    """Regenerate and verify one problem's recipe tests; returns how many were written."""
    rows = [r for r in dataset.test_rows(problem_id) if not r["inline"]]
    if not rows:
        return 0
    record = dataset.record(problem_id)
    generators = dataset.generators.get(problem_id, ())
    if not generators:
        raise MaterializeError(f"problem {problem_id!r}: recipe tests but no generator stored")
    limits = Limits(time_s=min(record.time_limit_s, time_cap_s), memory_mb=record.memory_mb)
    gen_runs = [Run(generator_program(generators[r["attempt"] % len(generators)]),
                    (generator_request(r["method"], r["seed"]),), limits) for r in rows]
    inputs = []
    for row, (result,) in zip(rows, executor.run_many(gen_runs)):
        text = stdout_text(result)
        if result.status is not Status.SUCCESS or sha256_text(text) != row["input_sha256"]:
            raise MaterializeError(
                f"problem {problem_id!r} test {row['test_id']!r}: regenerated input differs from "
                f"the stored digest (status {result.status.value}); the generator or Python's "
                f"random module changed since the build")
        inputs.append(text)
    code = {s.solution_id: s.code for s in dataset.solutions(problem_id)}
    missing = sorted({r["reference"] for r in rows} - set(code))
    if missing:
        raise MaterializeError(f"problem {problem_id!r}: reference solution(s) {missing} not stored")
    ref_runs = [Run(code[r["reference"]], (TestCase(x, None),), limits, record.float_tolerance,
                    record.interface) for r, x in zip(rows, inputs)]
    written = []
    for row, text, (result,) in zip(rows, inputs, executor.run_many(ref_runs)):
        expected = normalise_output(stdout_text(result))
        if result.status is not Status.SUCCESS or sha256_text(expected) != row["expected_sha256"]:
            raise MaterializeError(
                f"problem {problem_id!r} test {row['test_id']!r}: reference "
                f"{row['reference']!r} gave a different output ({result.status.value})")
        written.append({"test_id": row["test_id"], "input": text, "expected": expected})
    path = dataset.materialized_path(problem_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(written, schema=_SCHEMA), path, compression="zstd")
    return len(written)


def materialize(dataset: Dataset, sandbox: Any, problem_ids: Sequence[str] | None = None,
                max_in_flight: int = 4, on_problem: Callable[[str, int], None] | None = None
                ) -> dict[str, str]:
    """Materialise every problem (or `problem_ids`); returns {problem_id: error} for failures."""
    executor = Executor(sandbox, max_in_flight=max_in_flight)
    errors = {}
    try:
        for problem_id in problem_ids or dataset.problem_ids():
            try:
                count = materialize_problem(dataset, problem_id, executor)
            except MaterializeError as err:
                errors[problem_id] = str(err)
                count = -1
            if on_problem is not None:
                on_problem(problem_id, count)
    finally:
        executor.close()
    return errors


def ensure_materialized(dataset: Dataset, sandbox: Any, problem_ids: Sequence[str],
                        log: Callable[[str], None] | None = None) -> int:
    """Materialise the recipe tests of those `problem_ids` that have none cached yet (the first
    run on a fresh clone), so a command never asks the user for a manual step; returns how many
    problems were materialised. `MaterializeError` names the first problem that failed."""
    missing = []
    for problem_id in problem_ids:
        try:
            dataset.tests(problem_id)
        except FileNotFoundError:  # recipe tests not cached yet
            missing.append(problem_id)
    if not missing:
        return 0
    if log is not None:
        log(f"materialising the recipe tests of {len(missing)} problems in the sandbox (once; "
            f"cached under {dataset.cache_dir})")
    errors = materialize(dataset, sandbox, missing)
    dataset.tests.cache_clear()
    if errors:
        first = next(iter(errors))
        raise MaterializeError(f"cannot materialise the tests of {first}: {errors[first]}")
    return len(missing)

