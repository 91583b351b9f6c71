# ruff: noqa
"""FROZEN COPY of jaxopt_rl/data/execution_records.py at commit 86da0b0 (before the record path
was rewritten), kept only so that benchmarks/record_batch.py can time the old record path beside
the new one in the same process. Not imported by the package; do not edit."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.rewards.records import (
    INCONCLUSIVE,
    STATUS_CODE,
    TEST_KIND_CODE,
    TEST_KINDS,
    RecordBatch,
)
from sandbox_cluster.api import Status, TestResult

EXECUTION = "execution"
REFERENCE = "reference"
EXECUTION_COLUMNS = ("problem_id", "rollout_id", "test_id", "test_kind", "status", "duration_s",
                     "cpu_s", "limit_s", "io_chars")
REFERENCE_COLUMNS = ("problem_id", "test_id", "reference_id", "duration_s")
ALL_COLUMNS = ("row_type", *EXECUTION_COLUMNS, "reference_id")


class RecordFileError(ValueError):
    """A record file is malformed. The message names the file, the row and the column."""


@dataclasses.dataclass(frozen=True)
class ExecutionRecord:
    """One rollout run on one test (one `row_type: execution` row)."""

    problem_id: str
    rollout_id: str
    test_id: str
    test_kind: str
    status: Status
    duration_s: float
    limit_s: float
    io_chars: int
    cpu_s: float | None = None

    @classmethod
    def from_result(cls, problem_id: str, rollout_id: str, test_id: str, test_kind: str,
                    result: TestResult, limit_s: float, io_chars: int) -> ExecutionRecord:
        return cls(problem_id, rollout_id, test_id, test_kind, result.status, result.duration_s,
                   limit_s, io_chars, result.cpu_s)

    def to_row(self) -> dict[str, Any]:
        row = {"row_type": EXECUTION, **dataclasses.asdict(self)}
        row["status"] = Status(self.status).value
        return row


@dataclasses.dataclass(frozen=True)
class ReferenceDuration:
    """One stored reference duration (one `row_type: reference` row)."""

    problem_id: str
    test_id: str
    reference_id: str
    duration_s: float | None

    def to_row(self) -> dict[str, Any]:
        return {"row_type": REFERENCE, **dataclasses.asdict(self)}


@dataclasses.dataclass(frozen=True)
class RecordIndex:
    """Maps the padded axes of a `RecordBatch` back to the ids of the file.

    problem_ids[p]; rollouts[i] = (problem_id, rollout_id) of the i-th real rollout, which lies
    in batch row rollout_rows[i] (padding rows appear in neither); group_size = G;
    test_ids[p][t]; reference_ids[p][h].
    """

    problem_ids: tuple[str, ...]
    rollouts: tuple[tuple[str, str], ...]
    rollout_rows: tuple[int, ...]
    group_size: int
    test_ids: tuple[tuple[str, ...], ...]
    reference_ids: tuple[tuple[str, ...], ...]

    def rollout_index(self, problem_id: str, rollout_id: str) -> int:
        """The batch row of a rollout."""
        return self.rollout_rows[self.rollouts.index((problem_id, rollout_id))]

    def test_index(self, problem_id: str, test_id: str) -> int:
        return self.test_ids[self.problem_ids.index(problem_id)].index(test_id)

    def test_id(self, row: int, test: int) -> str:
        """The id of test column `test` of batch row `row`."""
        return self.test_ids[row // self.group_size][test]

    def real(self, values_B):
        """`values_B[rollout_rows]`: per-row results reduced to the real rollouts, in the order
        of `rollouts`."""
        return np.asarray(values_B)[np.asarray(self.rollout_rows, dtype=np.int64)]


def _format_of(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    raise RecordFileError(f"{path}: unknown record file type; use .jsonl or .parquet")


def load_record_batch(path: str | Path, pad_multiple: int = 1,
                      group_size: int | None = None) -> tuple[RecordBatch, RecordIndex]:
    """Load a record file as a padded `RecordBatch` (T and H padded up to `pad_multiple`; G the
    largest rollout count of a problem unless `group_size` fixes it)."""
    path = Path(path)
    fmt = _format_of(path)
    if not path.is_file():
        raise RecordFileError(f"{path}: record file not found")
    columns = _read_jsonl(path) if fmt == "jsonl" else _read_parquet(path)
    return _build(columns, str(path), "line" if fmt == "jsonl" else "row", pad_multiple,
                  group_size)


def batch_from_records(executions: Sequence[ExecutionRecord],
                       references: Sequence[ReferenceDuration],
                       pad_multiple: int = 1,
                       group_size: int | None = None) -> tuple[RecordBatch, RecordIndex]:
    """The in-memory path: the same validation and layout as `load_record_batch`."""
    rows = [r.to_row() for r in executions] + [r.to_row() for r in references]
    if not rows:
        raise RecordFileError("<records>: no records")
    columns = _rows_to_columns(rows)
    columns["__line__"] = list(range(1, len(rows) + 1))
    return _build(columns, "<records>", "record", pad_multiple, group_size)


def write_records(path: str | Path, executions: Sequence[ExecutionRecord],
                  references: Sequence[ReferenceDuration]) -> Path:
    """Write records as JSONL or Parquet (by extension); execution rows first."""
    path = Path(path)
    fmt = _format_of(path)
    rows = [r.to_row() for r in executions] + [r.to_row() for r in references]
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with path.open("w") as handle:
            for row in rows:
                handle.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = _rows_to_columns(rows)
        pq.write_table(pa.table({name: columns[name] for name in ALL_COLUMNS if name in columns}),
                       path)
    return path


def _rows_to_columns(rows: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    names = [name for name in ALL_COLUMNS if any(name in row for row in rows)]
    return {name: [row.get(name) for row in rows] for name in names}


def _read_jsonl(path: Path) -> dict[str, list[Any]]:
    rows: list[dict[str, Any]] = []
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise RecordFileError(f"{path}: line {number}: not valid JSON: {err.msg}") from None
            if not isinstance(row, dict):
                raise RecordFileError(f"{path}: line {number}: expected a JSON object")
            unknown = set(row) - set(ALL_COLUMNS)
            if unknown:
                raise RecordFileError(f"{path}: line {number}: unknown column "
                                      f"{sorted(unknown)[0]!r}; columns: {', '.join(ALL_COLUMNS)}")
            row["__line__"] = number
            rows.append(row)
    if not rows:
        raise RecordFileError(f"{path}: no rows")
    columns = {name: [row.get(name) for row in rows] for name in ALL_COLUMNS
               if any(name in row for row in rows)}
    columns["__line__"] = [row["__line__"] for row in rows]
    return columns


def _read_parquet(path: Path) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise RecordFileError(f"{path}: cannot read as Parquet: {err}") from None
    unknown = [name for name in table.column_names if name not in ALL_COLUMNS]
    if unknown:
        raise RecordFileError(f"{path}: unknown column {unknown[0]!r}; "
                              f"columns: {', '.join(ALL_COLUMNS)}")
    if table.num_rows == 0:
        raise RecordFileError(f"{path}: no rows")
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    columns["__line__"] = list(range(1, table.num_rows + 1))
    return columns


class _Rows:
    """Typed access to one column set with errors that name the file, row and problem."""

    def __init__(self, columns: dict[str, list[Any]], source: str, row_word: str):
        self.columns, self.source, self.row_word = columns, source, row_word
        self.lines = columns["__line__"]

    def fail(self, i: int, message: str, problem: str | None = None) -> RecordFileError:
        where = f"{self.source}: {self.row_word} {self.lines[i]}"
        if problem is not None:
            where += f" (problem {problem!r})"
        return RecordFileError(f"{where}: {message}")

    def value(self, i: int, name: str, problem: str | None, required: bool = True) -> Any:
        column = self.columns.get(name)
        value = None if column is None else column[i]
        if value is None and required:
            raise self.fail(i, f"missing column {name!r}", problem)
        return value

    def ident(self, i: int, name: str, problem: str | None = None) -> str:
        value = self.value(i, name, problem)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.fail(i, f"column {name!r}: expected a string or integer id, got {value!r}",
                            problem)
        return str(value)

    def number(self, i: int, name: str, problem: str, minimum: float, strict: bool,
               required: bool = True) -> float:
        value = self.value(i, name, problem, required)
        if value is None:
            return float("nan")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(i, f"column {name!r}: expected a number, got {value!r}", problem)
        value = float(value)
        if not np.isfinite(value):
            raise self.fail(i, f"column {name!r}: must be finite, got {value}", problem)
        if value < minimum or (strict and value == minimum):
            bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
            raise self.fail(i, f"column {name!r}: must be {bound}, got {value}", problem)
        return value


_STATUS_VALUES = {status.value: status for status in Status}


def _build(columns: dict[str, list[Any]], source: str, row_word: str, pad_multiple: int,
           group_size: int | None) -> tuple[RecordBatch, RecordIndex]:
    """Validate rows and lay them out as a padded RecordBatch (see the module docstring)."""
    rows = _Rows(columns, source, row_word)
    row_types = columns.get("row_type") or [None] * len(rows.lines)
    for i, row_type in enumerate(row_types):
        if row_type not in (EXECUTION, REFERENCE):
            raise rows.fail(i, f"column 'row_type': expected 'execution' or 'reference', "
                               f"got {row_type!r}")

    problems: dict[str, int] = {}
    tests: list[dict[str, tuple[int, str, float, int, int]]] = []  # per problem: id -> layout
    rollouts: dict[tuple[str, str], int] = {}
    seen: dict[tuple[int, int], int] = {}
    cells: list[tuple[int, int, int, float]] = []  # (b, t, status code, duration)
    for i, row_type in enumerate(row_types):
        if row_type != EXECUTION:
            continue
        problem = rows.ident(i, "problem_id")
        p = problems.setdefault(problem, len(problems))
        if p == len(tests):
            tests.append({})
        rollout, test = rows.ident(i, "rollout_id", problem), rows.ident(i, "test_id", problem)
        kind = rows.value(i, "test_kind", problem)
        if kind not in TEST_KINDS:
            raise rows.fail(i, f"column 'test_kind': unknown value {kind!r}; expected one of "
                               f"{', '.join(TEST_KINDS)}", problem)
        status = rows.value(i, "status", problem)
        if status not in _STATUS_VALUES:
            raise rows.fail(i, f"column 'status': unknown value {status!r}; expected one of "
                               f"{', '.join(_STATUS_VALUES)}", problem)
        duration = rows.number(i, "duration_s", problem, 0.0, strict=False)
        limit = rows.number(i, "limit_s", problem, 0.0, strict=True)
        rows.number(i, "cpu_s", problem, 0.0, strict=False, required=False)
        io_chars = rows.value(i, "io_chars", problem)
        if isinstance(io_chars, bool) or not isinstance(io_chars, int) or io_chars < 0:
            raise rows.fail(i, f"column 'io_chars': expected an integer >= 0, got {io_chars!r}",
                            problem)
        layout = tests[p].setdefault(test, (len(tests[p]), kind, limit, io_chars, i))
        t, first = layout[0], layout[4]
        if layout[1:4] != (kind, limit, io_chars):
            raise rows.fail(i, f"test {test!r}: test_kind/limit_s/io_chars "
                               f"{(kind, limit, io_chars)} differ from {layout[1:4]} on "
                               f"{row_word} {rows.lines[first]}", problem)
        b = rollouts.setdefault((problem, rollout), len(rollouts))
        if (b, t) in seen:
            raise rows.fail(i, f"duplicate row for rollout {rollout!r} on test {test!r} (first on "
                               f"{row_word} {rows.lines[seen[b, t]]})", problem)
        seen[b, t] = i
        cells.append((b, t, STATUS_CODE[_STATUS_VALUES[status]], duration))
    if not rollouts:
        raise RecordFileError(f"{source}: no execution rows")

    per_rollout = np.bincount([b for b, *_ in cells], minlength=len(rollouts))
    for (problem, rollout), b in rollouts.items():
        problem_tests = tests[problems[problem]]
        if per_rollout[b] != len(problem_tests):
            missing = next(tid for tid, lay in problem_tests.items() if (b, lay[0]) not in seen)
            raise RecordFileError(f"{source}: problem {problem!r}: rollout {rollout!r} has no row "
                                  f"for test {missing!r} (other rollouts of the problem have one)")

    references: list[dict[str, int]] = [{} for _ in problems]
    ref_seen: dict[tuple[int, int, int], int] = {}
    ref_cells: list[tuple[int, int, int, float]] = []  # (p, t, h, duration)
    for i, row_type in enumerate(row_types):
        if row_type != REFERENCE:
            continue
        problem = rows.ident(i, "problem_id")
        if problem not in problems:
            raise rows.fail(i, "reference row for a problem with no execution rows", problem)
        p = problems[problem]
        test = rows.ident(i, "test_id", problem)
        if test not in tests[p]:
            raise rows.fail(i, f"reference row for unknown test {test!r} (no execution row of "
                               "this problem has it)", problem)
        reference = rows.ident(i, "reference_id", problem)
        h = references[p].setdefault(reference, len(references[p]))
        t = tests[p][test][0]
        if (p, t, h) in ref_seen:
            raise rows.fail(i, f"duplicate reference {reference!r} on test {test!r} (first on "
                               f"{row_word} {rows.lines[ref_seen[p, t, h]]})", problem)
        ref_seen[p, t, h] = i
        # null or <= 0 is a stored "no valid measurement": eq. 10 (docs/design/rewards.md §1) maps
        # it to the cap
        duration = rows.number(i, "duration_s", problem, -np.inf, strict=False, required=False)
        ref_cells.append((p, t, h, duration))

    return _layout(problems, tests, rollouts, references, cells, ref_cells, pad_multiple,
                   group_size, source)


def _group_rows(problems, rollouts, group_size: int | None, source: str):
    """`(G, row of each rollout in first-appearance order)` for the grouped layout."""
    per_problem = [0] * len(problems)
    slot = []
    for problem, _ in rollouts:  # dicts keep insertion (first appearance) order
        p = problems[problem]
        slot.append((p, per_problem[p]))
        per_problem[p] += 1
    group = max(per_problem)
    if group_size is not None:
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        if group > group_size:
            problem = next(pid for pid, p in problems.items() if per_problem[p] == group)
            raise RecordFileError(f"{source}: problem {problem!r} has {group} rollouts, more than "
                                  f"group_size={group_size}")
        group = group_size
    return group, np.array([p * group + r for p, r in slot], dtype=np.int64)


def _layout(problems, tests, rollouts, references, cells, ref_cells, pad_multiple: int,
            group_size: int | None, source: str) -> tuple[RecordBatch, RecordIndex]:
    if pad_multiple < 1:
        raise ValueError(f"pad_multiple must be >= 1, got {pad_multiple}")

    def padded(n: int) -> int:
        return max(pad_multiple, -(-max(n, 1) // pad_multiple) * pad_multiple)

    group, row_of = _group_rows(problems, rollouts, group_size, source)
    num_p = len(problems)
    num_b = num_p * group
    num_t = padded(max(len(t) for t in tests))
    num_h = padded(max(len(r) for r in references))
    problem_index_B = np.repeat(np.arange(num_p), group)

    test_mask_PT = np.zeros((num_p, num_t), bool)
    kind_PT = np.zeros((num_p, num_t), np.int8)
    cap_PT = np.zeros((num_p, num_t), np.float32)
    io_chars_PT = np.zeros((num_p, num_t), np.int32)
    for p, problem_tests in enumerate(tests):
        for t, kind, limit, io_chars, _ in problem_tests.values():
            test_mask_PT[p, t] = True
            kind_PT[p, t] = TEST_KIND_CODE[kind]
            cap_PT[p, t] = limit
            io_chars_PT[p, t] = io_chars

    rollout_mask_B = np.zeros(num_b, bool)
    rollout_mask_B[row_of] = True
    status_BT = np.zeros((num_b, num_t), np.int8)
    status_BT[~rollout_mask_B] = INCONCLUSIVE  # a padding rollout has no verdict
    duration_BT = np.zeros((num_b, num_t), np.float32)
    if cells:
        b, t, status, duration = (np.asarray(c) for c in zip(*cells))
        status_BT[row_of[b], t] = status
        duration_BT[row_of[b], t] = duration

    ref_duration_PTH = np.zeros((num_p, num_t, num_h), np.float32)
    ref_mask_PTH = np.zeros((num_p, num_t, num_h), bool)
    if ref_cells:
        p, t, h, duration = (np.asarray(c) for c in zip(*ref_cells))
        ref_duration_PTH[p, t, h] = duration
        ref_mask_PTH[p, t, h] = True

    batch = RecordBatch(
        status_BT=status_BT, duration_BT=duration_BT,
        test_mask_BT=test_mask_PT[problem_index_B], test_kind_BT=kind_PT[problem_index_B],
        io_chars_BT=io_chars_PT[problem_index_B], cap_BT=cap_PT[problem_index_B],
        rollout_mask_B=rollout_mask_B,
        ref_duration_PTH=ref_duration_PTH, ref_mask_PTH=ref_mask_PTH,
    )
    batch.validate()
    order = np.argsort(row_of, kind="stable")  # real rollouts in row order
    keys = list(rollouts)
    index = RecordIndex(
        problem_ids=tuple(problems),
        rollouts=tuple(keys[i] for i in order),
        rollout_rows=tuple(int(row_of[i]) for i in order),
        group_size=group,
        test_ids=tuple(tuple(problem_tests) for problem_tests in tests),
        reference_ids=tuple(tuple(problem_refs) for problem_refs in references),
    )
    return batch, index


__all__ = [
    "EXECUTION_COLUMNS",
    "REFERENCE_COLUMNS",
    "TEST_KINDS",
    "ExecutionRecord",
    "RecordFileError",
    "RecordIndex",
    "ReferenceDuration",
    "batch_from_records",
    "load_record_batch",
    "write_records",
]
