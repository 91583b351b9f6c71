"""Execution-record files: the on-disk form of executed rollouts and stored reference durations.

This docstring is the format specification. A record file is ONE file (JSON Lines `.jsonl` or
Parquet `.parquet`) holding two kinds of rows, told apart by the `row_type` column.

`row_type: execution` — one rollout run on one test:

| column      | type            | meaning                                                         |
|-------------|-----------------|-----------------------------------------------------------------|
| problem_id  | str (or int)    | the problem                                                     |
| rollout_id  | str (or int)    | the rollout, unique within its problem                          |
| test_id     | str (or int)    | the test, unique within its problem                             |
| test_kind   | `T0`, `T+`, `TO`| original / generated correctness / generated optimization test |
| status      | str             | a `sandbox_cluster.Status` value: success, timeout, wrong_answer, runtime_error, memory_limit, output_limit, infra_error, not_run |
| duration_s  | float >= 0      | measured wall seconds; a timeout is recorded at the cap         |
| cpu_s       | float >= 0, null| CPU seconds (optional column; informational)                    |
| limit_s     | float > 0       | the service cap tau_t the test ran under (10 s by default)      |
| io_chars    | int in [0, 2^31)| len(input) + len(expected output), for the length filter        |
| timing      | str (optional)  | provenance of duration_s: `fleet` (default: measured on the timing fleet), `cap` (the cap standing for a timeout), `local` (measured off the fleet, e.g. a local fallback rerun), `none` (no duration; a placeholder) |

`row_type: reference` — the stored duration of one reference solution on one test:

| column       | type           | meaning                                                        |
|--------------|----------------|----------------------------------------------------------------|
| problem_id   | str (or int)   | a problem that has execution rows                              |
| test_id      | str (or int)   | a test of that problem                                         |
| reference_id | str (or int)   | the reference solution, unique per (problem, test)             |
| duration_s   | float or null  | stored, UNcalibrated seconds. null or <= 0 means "no valid     |
|              |                | measurement" and becomes the cap by psi (eq. 10 of             |
|              |                | docs/design/rewards.md §1)                                     |

A column that does not apply to a row type is absent from that row (JSONL) or null (Parquet).
Ids may be strings or integers (integers are read as their decimal string).

Rules, each checked on load with an error naming the file, the line/row and the column:
every execution column present and typed; status, test kind and timing from the lists above;
durations finite, >= 0 and <= 1e6 s (`MAX_SECONDS`, a sane maximum: 1e300 would overflow
float32 to inf); limit_s in (0, 1e6]; io_chars < 2^31 (int32 in the batch); a `success` no
longer than its `limit_s` (the sandbox stops a program at its cap, so a longer success is a
corrupt record, refused, not re-read); a column that does not apply to the row's type is
refused (absent or null only); the file is UTF-8; no duplicate (problem, rollout, test) or
(problem, test, reference);
every rollout of a problem has a row for every test of that problem, and the test's kind,
limit_s and io_chars agree across rollouts; reference rows name a known problem and test;
no unknown column. A reference absent for a test is simply unusable there (`ref_mask` False).

How a record's status fixes the reading of its duration: a `timeout` counts
at its `limit_s`, always, whatever `duration_s` it carries; any other row's duration counts only
when `timing` is `fleet`, and is NaN in the batch otherwise (docs/design/sandbox-timing.md §4: a
local duration never enters a ranking; the environment counts such cells, `Signals.untimed_B`). The
rule is `jaxopt_rl.data.execution_table.timed_duration`, the vocabulary
`sandbox_cluster.api.TIMINGS`; a file must use its words (the client's old `measured` is read
only from results and dumps, never from a record file).

`load_record_batch(path)` turns a file into a padded `RecordBatch` (NumPy arrays) plus a
`RecordIndex` mapping rows back to ids. `batch_from_records` does the same for in-memory
`ExecutionRecord`s (the trainer's path: `jaxopt_rl.rollouts.execute` makes them from sandbox
results), and `write_records` writes either format. Both readers produce typed columns and
hand them to the one layout function, `jaxopt_rl.data.record_layout.layout` (vectorised; the
same validation and messages for both).

Layout (the grouped layout of `jaxopt_rl.rewards.records`): problems, and tests within a
problem, in order of first appearance; problem `p` owns batch rows `p * G .. p * G + G - 1`,
its rollouts first (in order of first appearance), then padding rollouts
(`rollout_mask_B` False). `G` is the largest rollout count of any problem, or the
`group_size` the caller fixes (a trainer keeps shapes, and so compilations, constant). So a file
may hold any number of rollouts per problem. A padding rollout carries its problem's test layout,
the `infra_error` status ("no verdict") and zero durations; `RecordIndex.rollouts` lists only
real rollouts, with their batch rows in `RecordIndex.rollout_rows`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.data.execution_table import TIMING_CODE, TIMINGS
from jaxopt_rl.data.record_layout import (
    STATUS_INDEX,
    STATUSES,
    ExecutionColumns,
    RecordFileError,
    RecordIndex,
    ReferenceColumns,
    layout,
)
from jaxopt_rl.rewards.records import TEST_KIND_CODE, TEST_KINDS, RecordBatch
from sandbox_cluster.api import Status

EXECUTION = "execution"
REFERENCE = "reference"
EXECUTION_COLUMNS = ("problem_id", "rollout_id", "test_id", "test_kind", "status", "duration_s",
                     "cpu_s", "limit_s", "io_chars", "timing")
REFERENCE_COLUMNS = ("problem_id", "test_id", "reference_id", "duration_s")
ALL_COLUMNS = ("row_type", *EXECUTION_COLUMNS, "reference_id")
_APPLIES = {EXECUTION: set(EXECUTION_COLUMNS), REFERENCE: set(REFERENCE_COLUMNS)}


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """One rollout run on one test (one `row_type: execution` row).

    `limit_s` is the cap the test ran under; `timing` the provenance of `duration_s` (see
    `TIMINGS` and the module docstring). `jaxopt_rl.rollouts.execute.execution_record` is the
    one place a sandbox `TestResult` becomes a record."""

    problem_id: str
    rollout_id: str
    test_id: str
    test_kind: str
    status: Status
    duration_s: float
    limit_s: float
    io_chars: int
    cpu_s: float | None = None
    timing: str = "fleet"

    def to_row(self) -> dict[str, Any]:
        row = {"row_type": EXECUTION, **dataclasses.asdict(self)}
        row["status"] = Status(self.status).value
        if self.timing == "fleet":
            row["timing"] = None  # the default: files without provenance read as fleet
        return row


@dataclasses.dataclass(frozen=True, slots=True)
class ReferenceDuration:
    """One stored reference duration (one `row_type: reference` row)."""

    problem_id: str
    test_id: str
    reference_id: str
    duration_s: float | None

    def to_row(self) -> dict[str, Any]:
        return {"row_type": REFERENCE, **dataclasses.asdict(self)}


def _format_of(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    raise RecordFileError(f"{path}: unknown record file type; use .jsonl or .parquet")


def load_record_batch(path: str | Path, pad_multiple: int = 1,
                      group_size: int | None = None) -> tuple[RecordBatch, RecordIndex]:
    """Load and validate a record file; see the module docstring for the format and layout.

    `pad_multiple` rounds the test and reference axes up to a multiple (stable jit shapes);
    `group_size` fixes G (rollouts per problem; padded with masked rollouts)."""
    path = Path(path)
    fmt = _format_of(path)
    if not path.is_file():
        raise RecordFileError(f"{path}: record file not found")
    columns = _read_jsonl(path) if fmt == "jsonl" else _read_parquet(path)
    row_word = "line" if fmt == "jsonl" else "row"
    executions, references = _typed_columns(columns, str(path), row_word)
    return layout(executions, references, str(path), row_word, pad_multiple, group_size)


def _codes(values_Y: np.ndarray, table: dict, dtype, name: str, allowed, source: str,
           problems) -> np.ndarray:
    """The code of every value of an object column (one `==` pass per table entry, at C
    speed); an unknown value names its record."""
    codes = np.full(len(values_Y), -1, dtype)
    for value, code in table.items():
        codes[values_Y == value] = code
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        i = int(bad[0])
        raise RecordFileError(f"{source}: record {i + 1} (problem {problems[i]!r}): column "
                              f"{name!r}: unknown value {values_Y[i]!r}; expected one of "
                              f"{', '.join(allowed)}")
    return codes


def _object_array(rows, n: int, width: int) -> np.ndarray:
    """`[n, width]` object array from an iterator of `width`-tuples. The tuples come from a
    generator that reads the attributes by name (Python's fastest attribute read, about twice
    `attrgetter`'s speed) and die one by one, so the garbage collector never runs."""
    return np.fromiter(itertools.chain.from_iterable(rows), object, n * width).reshape(n, width)


_STATUS_IDS = np.array(sorted(id(status) for status in STATUSES), np.int64)
_STATUS_OF_ID = np.array([STATUS_INDEX[s] for s in sorted(STATUSES, key=id)], np.int8)


def _status_codes(statuses_Y: np.ndarray, source: str, problems) -> np.ndarray:
    """`Status` members are singletons: look them up by identity (C speed); anything else
    (a plain string) goes through the checked path."""
    ids = np.fromiter(map(id, statuses_Y), np.int64, len(statuses_Y))
    at = np.minimum(np.searchsorted(_STATUS_IDS, ids), len(_STATUS_IDS) - 1)
    if (_STATUS_IDS[at] == ids).all():
        return _STATUS_OF_ID[at]
    return _codes(statuses_Y, STATUS_INDEX, np.int8, "status", [s.value for s in Status],
                  source, problems)


def columns_from_records(executions: Sequence[ExecutionRecord],
                         references: Sequence[ReferenceDuration],
                         source: str = "<records>") -> tuple[ExecutionColumns, ReferenceColumns]:
    """Typed records -> typed columns (one pass over the records, then whole-column
    conversions at C speed; the values are checked by `layout`)."""
    n = len(executions)
    (problem, rollout, test, kinds, statuses, timing, duration, limit, cpu,
     io_chars) = _object_array(((r.problem_id, r.rollout_id, r.test_id, r.test_kind, r.status,
                                 r.timing, r.duration_s, r.limit_s, r.cpu_s, r.io_chars)
                                for r in executions), n, 10).T
    ex = ExecutionColumns(
        problem_id=problem, rollout_id=rollout, test_id=test,
        test_kind=_codes(kinds, TEST_KIND_CODE, np.int8, "test_kind", TEST_KINDS, source, problem),
        status=_status_codes(statuses, source, problem),
        duration_s=duration.astype(np.float64), limit_s=limit.astype(np.float64),
        io_chars=_io_chars(io_chars.tolist(), source), cpu_s=cpu.astype(np.float64),  # None: NaN
        timing=(np.zeros(n, np.int8) if (timing == "fleet").all()  # the common case
                else _codes(timing, TIMING_CODE, np.int8, "timing", TIMINGS, source, problem)),
        row=np.arange(1, n + 1),
    )
    m = len(references)
    ref_problem, ref_test, ref_id, ref_duration = _object_array(
        ((r.problem_id, r.test_id, r.reference_id, r.duration_s) for r in references), m, 4).T
    refs = ReferenceColumns(
        problem_id=ref_problem, test_id=ref_test, reference_id=ref_id,
        duration_s=ref_duration.astype(np.float64),  # None: NaN
        missing=np.equal(ref_duration, None).astype(bool), row=np.arange(n + 1, n + m + 1),
    )
    return ex, refs


def _io_chars(values: list, source: str) -> np.ndarray:
    """Integers as int64 (one C pass when they all are); anything else names its record."""
    try:
        array = np.array(values)
    except OverflowError:  # beyond int64: clamp, the layout refuses anything >= 2**31
        array = np.array([min(v, 2**62) if type(v) is int else v for v in values], object)
    if array.dtype.kind == "i" or (len(values) == 0):
        return array.astype(np.int64)
    for i, value in enumerate(values):
        if isinstance(value, bool) or type(value) is not int:
            raise RecordFileError(f"{source}: record {i + 1}: column 'io_chars': expected an "
                                  f"integer >= 0, got {value!r}")
    return np.array([min(v, 2**62) for v in values], np.int64)


def batch_from_records(executions: Sequence[ExecutionRecord],
                       references: Sequence[ReferenceDuration],
                       pad_multiple: int = 1,
                       group_size: int | None = None) -> tuple[RecordBatch, RecordIndex]:
    """The in-memory path: typed records -> typed columns -> `layout` (the validation and
    layout of `load_record_batch`; rows are numbered executions first, then references)."""
    if not executions and not references:
        raise RecordFileError("<records>: no records")
    ex, refs = columns_from_records(executions, references)
    return layout(ex, refs, "<records>", "record", pad_multiple, group_size)


def write_records(path: str | Path, executions: Sequence[ExecutionRecord],
                  references: Sequence[ReferenceDuration]) -> Path:
    """Write records as JSONL or Parquet (by extension); execution rows first."""
    path = Path(path)
    fmt = _format_of(path)
    rows = [r.to_row() for r in executions] + [r.to_row() for r in references]
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with path.open("w", encoding="utf-8") as handle:
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
    names = [name for name in ALL_COLUMNS if any(row.get(name) is not None for row in rows)]
    return {name: [row.get(name) for row in rows] for name in names}


def _is_text(value: str) -> bool:
    """False for a string with a lone surrogate (JSON "\\ud800"): it cannot be printed,
    written as UTF-8 or stored in Parquet."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_jsonl(path: Path) -> dict[str, list[Any]]:
    rows: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise RecordFileError(f"{path}: line {number}: not valid UTF-8 ({err.reason} at "
                                      f"byte {err.start} of the line)") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise RecordFileError(f"{path}: line {number}: not valid JSON: {err.msg}") from None
            except RecursionError:
                raise RecordFileError(f"{path}: line {number}: JSON nested too deeply") from None
            except ValueError as err:  # e.g. an integer beyond Python's digit limit
                raise RecordFileError(f"{path}: line {number}: unreadable JSON value: "
                                      f"{str(err)[:200]}") from None
            if not isinstance(row, dict):
                raise RecordFileError(f"{path}: line {number}: expected a JSON object")
            for name, value in row.items():
                if isinstance(value, str) and not _is_text(value):
                    raise RecordFileError(f"{path}: line {number}: column {name!r} holds a "
                                          "lone surrogate escape (not a Unicode string)")
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

    def number(self, i: int, name: str, problem: str, required: bool = True) -> float:
        """The value as a float (NaN when absent and optional); its range is `layout`'s."""
        value = self.value(i, name, problem, required)
        if value is None:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(i, f"column {name!r}: expected a number, got {value!r}", problem)
        try:
            return float(value)
        except OverflowError:  # an integer beyond float range: surely beyond any bound
            return math.inf

    def not_applicable(self, i: int, row_type: str, problem: str | None) -> None:
        for name in ALL_COLUMNS[1:]:
            if name not in _APPLIES[row_type] and self.value(i, name, None, False) is not None:
                raise self.fail(i, f"column {name!r} does not apply to row_type {row_type!r} "
                                   "(leave it absent or null)", problem)


_STATUS_VALUES = {status.value: status for status in Status}


def _typed_columns(columns: dict[str, list[Any]], source: str,
                   row_word: str) -> tuple[ExecutionColumns, ReferenceColumns]:
    """Type-check every row (the per-row half of the validation) into typed columns."""
    rows = _Rows(columns, source, row_word)
    row_types = columns.get("row_type") or [None] * len(rows.lines)
    for i, row_type in enumerate(row_types):
        if row_type not in (EXECUTION, REFERENCE):
            raise rows.fail(i, f"column 'row_type': expected 'execution' or 'reference', "
                               f"got {row_type!r}")
    ex: dict[str, list] = {name: [] for name in ExecutionColumns.__dataclass_fields__}
    ref: dict[str, list] = {name: [] for name in ReferenceColumns.__dataclass_fields__}
    for i, row_type in enumerate(row_types):
        problem = rows.ident(i, "problem_id")
        if row_type == REFERENCE:
            test = rows.ident(i, "test_id", problem)
            reference = rows.ident(i, "reference_id", problem)
            duration = rows.number(i, "duration_s", problem, required=False)
            rows.not_applicable(i, REFERENCE, problem)
            for name, value in (("problem_id", problem), ("test_id", test),
                                ("reference_id", reference), ("duration_s", duration),
                                ("missing", rows.value(i, "duration_s", problem, False) is None),
                                ("row", rows.lines[i])):
                ref[name].append(value)
            continue
        rollout, test = rows.ident(i, "rollout_id", problem), rows.ident(i, "test_id", problem)
        kind = rows.value(i, "test_kind", problem)
        if kind not in TEST_KINDS:
            raise rows.fail(i, f"column 'test_kind': unknown value {kind!r}; expected one of "
                               f"{', '.join(TEST_KINDS)}", problem)
        status = rows.value(i, "status", problem)
        if status not in _STATUS_VALUES:
            raise rows.fail(i, f"column 'status': unknown value {status!r}; expected one of "
                               f"{', '.join(_STATUS_VALUES)}", problem)
        timing = rows.value(i, "timing", problem, required=False) or "fleet"
        if timing not in TIMING_CODE:
            raise rows.fail(i, f"column 'timing': unknown value {timing!r}; expected one of "
                               f"{', '.join(TIMINGS)}", problem)
        duration = rows.number(i, "duration_s", problem)
        limit = rows.number(i, "limit_s", problem)
        cpu = rows.number(i, "cpu_s", problem, required=False)
        io_chars = rows.value(i, "io_chars", problem)
        if isinstance(io_chars, bool) or not isinstance(io_chars, int) or io_chars < 0:
            raise rows.fail(i, f"column 'io_chars': expected an integer >= 0, got {io_chars!r}",
                            problem)
        rows.not_applicable(i, EXECUTION, problem)
        for name, value in (("problem_id", problem), ("rollout_id", rollout), ("test_id", test),
                            ("test_kind", TEST_KIND_CODE[kind]),
                            ("status", STATUS_INDEX[_STATUS_VALUES[status]]),
                            ("duration_s", duration), ("limit_s", limit),
                            ("io_chars", min(io_chars, 2**62)), ("cpu_s", cpu),
                            ("timing", TIMING_CODE[timing]), ("row", rows.lines[i])):
            ex[name].append(value)

    executions = ExecutionColumns(
        problem_id=ex["problem_id"], rollout_id=ex["rollout_id"],
        test_id=ex["test_id"], test_kind=np.array(ex["test_kind"], np.int8),
        status=np.array(ex["status"], np.int8), duration_s=np.array(ex["duration_s"], float),
        limit_s=np.array(ex["limit_s"], float), io_chars=np.array(ex["io_chars"], np.int64),
        cpu_s=np.array(ex["cpu_s"], float), timing=np.array(ex["timing"], np.int8),
        row=np.array(ex["row"], np.int64))
    references = ReferenceColumns(
        problem_id=ref["problem_id"], test_id=ref["test_id"],
        reference_id=ref["reference_id"], duration_s=np.array(ref["duration_s"], float),
        missing=np.array(ref["missing"], bool), row=np.array(ref["row"], np.int64))
    return executions, references


__all__ = [
    "EXECUTION_COLUMNS",
    "REFERENCE_COLUMNS",
    "TEST_KINDS",
    "TIMINGS",
    "ExecutionRecord",
    "RecordFileError",
    "RecordIndex",
    "ReferenceDuration",
    "batch_from_records",
    "columns_from_records",
    "load_record_batch",
    "write_records",
]
