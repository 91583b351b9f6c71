"""The one layout function: typed record columns -> a padded `RecordBatch` + `RecordIndex`.

Every way into a `RecordBatch` from execution records ends here: the trainer's in-memory path
(`execution_records.batch_from_records`, typed `ExecutionRecord`s turned into columns by
`columns_from_records`) and the file reader (`execution_records.load_record_batch`, which
type-checks each row and hands over the same columns). `layout` validates the values and the
cross-row rules with NumPy over whole columns (no per-cell Python, no dict rows, no string
statuses) and lays the grouped layout out (see `execution_records` for the format and the
layout it specifies). Errors are `RecordFileError`s naming the source, the row and the problem,
with the same wording for both paths; when several rows are bad, the first bad row is named.

Speed (target: 131,072 cells in <= 150 ms, `benchmarks/record_batch.py`). String ids are the
cost: `factorize` looks up in a dict only the rows that differ from a hint row, checked by one
C-speed `==` pass. The hint is the previous row for problem and rollout ids (a rollout's
records come together) and, for test ids, the same position in the problem's first rollout
(rollouts run their problem's tests in one order); any other order is laid out the same, only
slower. Integer keys are counted, not sorted, where their range is dense.

Durations by status and timing provenance: each row goes through the one rule,
`execution_table.timed_duration` (a timeout at its `limit_s`; a `fleet` duration kept; any other
NaN), and the grid through the one constructor, `execution_table.record_batch`.

Dimension letters: B rollouts, P problems, T tests, H references; Y rows of one column set (`jaxopt_rl.dimensions`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxopt_rl.data.execution_table import TIMINGS, ExecutionTable, record_batch, timed_duration
from jaxopt_rl.data.references import reference_arrays
from jaxopt_rl.rewards.records import INCONCLUSIVE, STATUS_CODE, TEST_KINDS, RecordBatch
from sandbox_cluster.api import Status

# Timing provenance of a duration (ExecutionRecord.timing, the `timing` column): the words of
# `sandbox_cluster.api.TIMINGS`, coded by `execution_table.TIMING_CODE`.
MAX_SECONDS = 1e6  # a sane maximum for any duration or limit (the service cap is 10 s)
MAX_IO_CHARS = 2**31 - 1  # io_chars_BT is int32
STATUSES = tuple(Status)
STATUS_INDEX = {status: i for i, status in enumerate(STATUSES)}
_REWARD_CLASS_N = np.array([STATUS_CODE[s] for s in STATUSES], np.int8)


class RecordFileError(ValueError):
    """A record file (or a set of in-memory records) is malformed. The message names the file,
    the row and the column."""


@dataclasses.dataclass(frozen=True)
class ExecutionColumns:
    """Execution rows as typed columns (`[Y]` each). Ids are lists or object arrays of str or
    int (int ids become their decimal string in `layout`)."""

    problem_id: list | np.ndarray
    rollout_id: list | np.ndarray
    test_id: list | np.ndarray
    test_kind: np.ndarray  # int8, index into TEST_KINDS
    status: np.ndarray  # int8, index into STATUSES (sandbox statuses, in enum order)
    duration_s: np.ndarray  # float64
    limit_s: np.ndarray  # float64
    io_chars: np.ndarray  # int64
    cpu_s: np.ndarray  # float64, NaN where absent
    timing: np.ndarray  # int8, index into TIMINGS
    row: np.ndarray  # int64, the row / line number named in errors


@dataclasses.dataclass(frozen=True)
class ReferenceColumns:
    """Reference rows as typed columns (`[Y]` each; ids as in `ExecutionColumns`)."""

    problem_id: list | np.ndarray
    test_id: list | np.ndarray
    reference_id: list | np.ndarray
    duration_s: np.ndarray  # float64; NaN where `missing`
    missing: np.ndarray  # bool: null duration ("no valid measurement", eq. 10 psi -> cap)
    row: np.ndarray


def _objects(values) -> np.ndarray:
    """Ids as a 1-D object array, each value kept as it is (a tuple stays one element)."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values
    return np.fromiter(values, object, len(values))


def factorize(values, hint_Y: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """`(codes [Y] int64, uniques)` in order of first appearance, with dict semantics.

    Only the rows that differ from their hint row go through a dict. `hint_Y[i] <= i` names a
    row likely to hold the same value, and a hint row is its own hint; the default hint is the
    previous row, so a run of equal ids (one rollout's records) costs one look-up. A hint is
    checked by `==` in one C pass over the column: a wrong hint costs speed, never a code."""
    objects_Y = _objects(values)
    n = len(objects_Y)
    rows_Y = np.arange(n)
    if hint_Y is None:
        own_Y = np.ones(n, bool)
        own_Y[1:] = objects_Y[1:] != objects_Y[:-1]
        hint_Y = np.maximum.accumulate(np.where(own_Y, rows_Y, 0))
    else:
        hint_Y = np.where(objects_Y == objects_Y[hint_Y], hint_Y, rows_Y)
        own_Y = hint_Y == rows_Y
    own = objects_Y[own_Y].tolist()  # every value's first row is among them
    position = dict.fromkeys(own)
    for i, value in enumerate(position):
        position[value] = i
    codes_Y = np.empty(n, np.int64)
    codes_Y[own_Y] = np.fromiter(map(position.__getitem__, own), np.int64, len(own))
    return codes_Y[hint_Y], list(position)


def _block_hint(outer_Y: np.ndarray, inner_Y: np.ndarray) -> np.ndarray:
    """Hints for `factorize`: row i's twin is the row at the same offset in the first block of
    its outer group, where a block is a run of rows with one (outer, inner) pair: the rollouts
    of a problem run the same tests in the same order, so a test id (outer problem, inner
    rollout) or a reference id (outer problem, inner test) usually equals its twin's. A row
    without an earlier twin inside that first block is its own hint."""
    n = len(outer_Y)
    rows_Y = np.arange(n)
    new_Y = np.ones(n, bool)
    new_Y[1:] = (outer_Y[1:] != outer_Y[:-1]) | (inner_Y[1:] != inner_Y[:-1])
    start_Y = np.maximum.accumulate(np.where(new_Y, rows_Y, 0))
    first_O = np.full(int(outer_Y.max()) + 1 if n else 0, n, np.int64)
    np.minimum.at(first_O, outer_Y, rows_Y)
    twin_Y = np.minimum(first_O[outer_Y] + rows_Y - start_Y, rows_Y)
    inside_Y = start_Y[twin_Y] == first_O[outer_Y]
    return np.where(inside_Y, twin_Y, rows_Y)


def _id_strings(values, name: str, rows_Y, source: str, row_word: str) -> list:
    """Ids as str: integers become their decimal string, anything else is refused."""
    if all(type(u) is str for u in dict.fromkeys(values)):
        return values
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise RecordFileError(f"{source}: {row_word} {int(rows_Y[i])}: column {name!r}: "
                                  f"expected a string or integer id, got {value!r}")
    return [str(v) for v in values]


def _string_codes(values, name: str, rows_Y, source: str, row_word: str,
                  hint_Y: np.ndarray | None = None) -> tuple[np.ndarray, list, np.ndarray]:
    """`factorize` of an id column whose values must be str or int (read as str):
    `(codes, uniques, the ids as str)`."""
    objects_Y = _objects(values)
    codes_Y, uniques = factorize(objects_Y, hint_Y)
    if not all(type(u) is str for u in uniques):
        objects_Y = _objects(_id_strings(objects_Y, name, rows_Y, source, row_word))
        codes_Y, uniques = factorize(objects_Y, hint_Y)
    return codes_Y, uniques, objects_Y


def _factorize_ints(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer keys in [0, size) -> `(codes, first row of each code)`, codes in order of
    first appearance. Dense keys are counted (O(Y + size)); sparse ones sorted."""
    n = len(key)
    if size > 8 * n + 4096:
        unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(unique), np.int64)
        rank[order] = np.arange(len(unique))
        return rank[inverse.reshape(-1)], first[order]
    first_K = np.full(size, n, np.int64)
    np.minimum.at(first_K, key, np.arange(n))
    keys = np.flatnonzero(first_K < n)
    keys = keys[np.argsort(first_K[keys], kind="stable")]
    rank = np.empty(size, np.int64)
    rank[keys] = np.arange(len(keys))
    return rank[key], first_K[keys]


class _Errors:
    """The first failing row over several vectorised checks, reported like a row scan would."""

    def __init__(self, source: str, row_word: str):
        self.source, self.row_word = source, row_word
        self.best: tuple[int, int, str] | None = None  # (position, check order, message)
        self.order = 0

    def check(self, bad_Y: np.ndarray, message, rows_Y, problems=None) -> None:
        """`bad_Y`: failing rows; `message(i)` builds the text for row position `i`."""
        self.order += 1
        hits = np.flatnonzero(bad_Y)
        if not hits.size:
            return
        i = int(hits[0])
        if self.best is None or (i, self.order) < self.best[:2]:
            where = f"{self.source}: {self.row_word} {int(rows_Y[i])}"
            if problems is not None:
                where += f" (problem {problems[i]!r})"
            self.best = (i, self.order, f"{where}: {message(i)}")

    def raise_first(self) -> None:
        if self.best is not None:
            raise RecordFileError(self.best[2])


def _bound_checks(errors: _Errors, name: str, values_Y, rows_Y, problems, minimum: float,
                  strict: bool, absent_Y=None) -> None:
    finite = np.isfinite(values_Y) | (absent_Y if absent_Y is not None else False)
    errors.check(~finite, lambda i: f"column {name!r}: must be finite, got {values_Y[i]}",
                 rows_Y, problems)
    low = (values_Y <= minimum) if strict else (values_Y < minimum)
    bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
    errors.check(low, lambda i: f"column {name!r}: must be {bound}, got {values_Y[i]}",
                 rows_Y, problems)
    errors.check(np.isfinite(values_Y) & (values_Y > MAX_SECONDS),
                 lambda i: f"column {name!r}: must be <= {MAX_SECONDS:g} s (a sane maximum; "
                           f"the service cap is 10 s), got {values_Y[i]}", rows_Y, problems)


def layout(executions: ExecutionColumns, references: ReferenceColumns, source: str,
           row_word: str, pad_multiple: int = 1,
           group_size: int | None = None) -> tuple[RecordBatch, RecordIndex]:
    """Validate typed columns and lay them out as a padded `RecordBatch` (grouped layout)."""
    if pad_multiple < 1:
        raise ValueError(f"pad_multiple must be >= 1, got {pad_multiple}")
    n = len(executions.row)
    if n == 0:
        raise RecordFileError(f"{source}: no execution rows")
    codes: dict[str, tuple[np.ndarray, list]] = {}
    ids: dict[str, np.ndarray] = {}
    for name in ("problem_id", "rollout_id", "test_id"):
        hint_Y = (_block_hint(codes["problem_id"][0], codes["rollout_id"][0])
                  if name == "test_id" else None)  # a rollout's tests: its problem's order
        codes_Y, uniques, ids[name] = _string_codes(getattr(executions, name), name,
                                                    executions.row, source, row_word, hint_Y)
        codes[name] = (codes_Y, uniques)
    ex = dataclasses.replace(executions, **ids)
    ref_codes: dict[str, tuple[np.ndarray, list]] = {}
    ref_ids: dict[str, np.ndarray] = {}
    for name in ("problem_id", "test_id"):
        codes_Y, uniques, ref_ids[name] = _string_codes(getattr(references, name), name,
                                                        references.row, source, row_word)
        ref_codes[name] = (codes_Y, uniques)
    references = dataclasses.replace(references, **ref_ids)
    p_Y, problem_ids = codes["problem_id"]
    problems = ex.problem_id
    errors = _Errors(source, row_word)

    # per-row values, in the order a row scan checks them
    errors.check(ex.test_kind < 0, lambda i: "column 'test_kind': unknown value; expected one of "
                 f"{', '.join(TEST_KINDS)}", ex.row, problems)
    errors.check(ex.status < 0, lambda i: "column 'status': unknown value; expected one of "
                 f"{', '.join(s.value for s in STATUSES)}", ex.row, problems)
    errors.check(ex.timing < 0, lambda i: "column 'timing': unknown value; expected one of "
                 f"{', '.join(TIMINGS)}", ex.row, problems)
    _bound_checks(errors, "duration_s", ex.duration_s, ex.row, problems, 0.0, strict=False)
    _bound_checks(errors, "limit_s", ex.limit_s, ex.row, problems, 0.0, strict=True)
    success_Y = ex.status == STATUS_INDEX[Status.SUCCESS]
    errors.check(success_Y & (ex.duration_s > ex.limit_s),
                 lambda i: f"column 'duration_s': a success must finish within its limit_s "
                           f"({ex.limit_s[i]:g} s), got {ex.duration_s[i]}", ex.row, problems)
    cpu_absent_Y = np.isnan(ex.cpu_s)
    _bound_checks(errors, "cpu_s", ex.cpu_s, ex.row, problems, 0.0, strict=False,
                  absent_Y=cpu_absent_Y)
    errors.check(ex.io_chars < 0, lambda i: f"column 'io_chars': expected an integer >= 0, got "
                 f"{int(ex.io_chars[i])}", ex.row, problems)
    errors.check(ex.io_chars > MAX_IO_CHARS,
                 lambda i: f"column 'io_chars': must be < 2**31 (io_chars_BT is int32), got "
                           f"{int(ex.io_chars[i])}", ex.row, problems)

    # tests: first appearance within each problem; the layout agreement across rollouts
    t_codes_Y, t_names = codes["test_id"]
    test_Y, test_first = _factorize_ints(p_Y * len(t_names) + t_codes_Y,
                                     len(problem_ids) * len(t_names))
    test_problem = p_Y[test_first]
    n_tests_P = np.bincount(test_problem, minlength=len(problem_ids))
    by_problem = np.argsort(test_problem, kind="stable")
    starts_P = np.concatenate([[0], np.cumsum(n_tests_P)[:-1]])
    column = np.empty(len(test_first), np.int64)
    column[by_problem] = np.arange(len(test_first)) - starts_P[test_problem[by_problem]]
    t_Y = column[test_Y]
    first_Y = test_first[test_Y]
    differ_Y = ((ex.test_kind != ex.test_kind[first_Y]) | (ex.limit_s != ex.limit_s[first_Y])
                | (ex.io_chars != ex.io_chars[first_Y]))

    def layout_message(i: int) -> str:
        j = first_Y[i]
        mine = (TEST_KINDS[ex.test_kind[i]], float(ex.limit_s[i]), int(ex.io_chars[i]))
        theirs = (TEST_KINDS[ex.test_kind[j]], float(ex.limit_s[j]), int(ex.io_chars[j]))
        return (f"test {ex.test_id[i]!r}: test_kind/limit_s/io_chars {mine} differ from "
                f"{theirs} on {row_word} {int(ex.row[j])}")

    errors.check(differ_Y, layout_message, ex.row, problems)

    # rollouts and duplicates
    r_codes_Y, r_names = codes["rollout_id"]
    b_Y, rollout_first = _factorize_ints(p_Y * len(r_names) + r_codes_Y,
                                     len(problem_ids) * len(r_names))
    cell_codes_Y, cell_first = _factorize_ints(b_Y * (int(t_Y.max()) + 1) + t_Y,
                                               len(rollout_first) * (int(t_Y.max()) + 1))
    first_cell_Y = cell_first[cell_codes_Y]
    errors.check(first_cell_Y != np.arange(n),
                 lambda i: f"duplicate row for rollout {ex.rollout_id[i]!r} on test "
                           f"{ex.test_id[i]!r} (first on {row_word} "
                           f"{int(ex.row[first_cell_Y[i]])})", ex.row, problems)
    errors.raise_first()

    rollout_problem = p_Y[rollout_first]
    per_rollout = np.bincount(b_Y, minlength=len(rollout_first))
    short = np.flatnonzero(per_rollout != n_tests_P[rollout_problem])
    if short.size:
        b = int(short[0])
        p = int(rollout_problem[b])
        has = set(test_Y[b_Y == b].tolist())
        tests_of_p = np.flatnonzero(test_problem == p)
        missing = next(int(k) for k in tests_of_p if int(k) not in has)
        raise RecordFileError(
            f"{source}: problem {problem_ids[p]!r}: rollout {ex.rollout_id[rollout_first[b]]!r} "
            f"has no row for test {ex.test_id[test_first[missing]]!r} (other rollouts of the "
            "problem have one)")

    ref_p, ref_t, ref_h, ref_ids = _reference_cells(references, ref_codes, problem_ids, t_names,
                                                    t_codes_Y, test_first, column, p_Y, source,
                                                    row_word)

    # the grouped layout: problem p owns rows p*G .. p*G+G-1, its rollouts first
    n_rollouts_P = np.bincount(rollout_problem, minlength=len(problem_ids))
    group = int(n_rollouts_P.max())
    if group_size is not None:
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        if group > group_size:
            p = int(np.flatnonzero(n_rollouts_P == group)[0])
            raise RecordFileError(f"{source}: problem {problem_ids[p]!r} has {group} rollouts, "
                                  f"more than group_size={group_size}")
        group = group_size
    rollout_starts = np.concatenate([[0], np.cumsum(n_rollouts_P)[:-1]])
    by_p = np.argsort(rollout_problem, kind="stable")
    slot = np.empty(len(rollout_first), np.int64)
    slot[by_p] = np.arange(len(rollout_first)) - rollout_starts[rollout_problem[by_p]]
    row_of = rollout_problem * group + slot

    def padded(count: int) -> int:
        return max(pad_multiple, -(-max(count, 1) // pad_multiple) * pad_multiple)

    num_p = len(problem_ids)
    num_b = num_p * group
    num_t = padded(int(n_tests_P.max()))
    num_h = padded(max((len(ids) for ids in ref_ids), default=0))
    test_mask_PT = np.zeros((num_p, num_t), bool)
    kind_PT = np.zeros((num_p, num_t), np.int8)
    cap_PT = np.zeros((num_p, num_t), np.float32)
    io_chars_PT = np.zeros((num_p, num_t), np.int32)
    test_mask_PT[test_problem, column] = True
    kind_PT[test_problem, column] = ex.test_kind[test_first]
    cap_PT[test_problem, column] = ex.limit_s[test_first]
    io_chars_PT[test_problem, column] = ex.io_chars[test_first]

    reward_class_Y = _REWARD_CLASS_N[ex.status]
    duration_Y = timed_duration(reward_class_Y, ex.duration_s, ex.limit_s, ex.timing)
    rollout_mask_B = np.zeros(num_b, bool)
    rollout_mask_B[row_of] = True
    status_BT = np.zeros((num_b, num_t), np.int8)
    status_BT[~rollout_mask_B] = INCONCLUSIVE  # a padding rollout has no verdict
    duration_BT = np.zeros((num_b, num_t), np.float32)
    status_BT[row_of[b_Y], t_Y] = reward_class_Y
    duration_BT[row_of[b_Y], t_Y] = duration_Y
    ref_duration_PTH, ref_mask_PTH = reference_arrays(
        ref_p, ref_t, ref_h, references.duration_s, (num_p, num_t, num_h))

    table = ExecutionTable(
        status_PGT=status_BT.reshape(num_p, group, num_t),
        duration_PGT=duration_BT.reshape(num_p, group, num_t),
        rollout_mask_PG=rollout_mask_B.reshape(num_p, group), test_mask_PT=test_mask_PT,
        test_kind_PT=kind_PT, io_chars_PT=io_chars_PT, cap_PT=cap_PT)
    batch = record_batch(table, ref_duration_PTH, ref_mask_PTH)
    batch.validate()  # the layout's own invariants; also marks the batch as checked
    order = np.argsort(row_of, kind="stable")  # real rollouts in row order
    test_names = [ex.test_id[i] for i in test_first.tolist()]
    index = RecordIndex(
        problem_ids=tuple(problem_ids),
        rollouts=tuple((problem_ids[rollout_problem[b]], ex.rollout_id[rollout_first[b]])
                       for b in order.tolist()),
        rollout_rows=tuple(row_of[order].tolist()),
        group_size=group,
        test_ids=_per_problem(test_names, test_problem, num_p),
        reference_ids=tuple(ref_ids),
    )
    return batch, index


def _reference_cells(refs: ReferenceColumns, ref_codes, problem_ids, t_names, t_codes_Y,
                     test_first, column, p_Y, source: str, row_word: str):
    """Reference rows -> `(p, t, h)` coordinates and the reference ids of each problem."""
    n = len(refs.row)
    num_p = len(problem_ids)
    if n == 0:
        return (np.zeros(0, np.int64),) * 3 + ([() for _ in range(num_p)],)
    errors = _Errors(source, row_word)

    def lookup(name: str, table: list) -> np.ndarray:  # one dict look-up per distinct id
        codes_R, uniques = ref_codes[name]
        code = {value: i for i, value in enumerate(table)}
        return np.array([code.get(u, -1) for u in uniques], np.int64)[codes_R]

    p_R = lookup("problem_id", problem_ids)
    errors.check(p_R < 0, lambda i: "reference row for a problem with no execution rows",
                 refs.row, refs.problem_id)
    # (problem, test) -> batch column, through the test's global code
    tc_R = lookup("test_id", t_names)
    test_key = p_Y[test_first] * len(t_names) + t_codes_Y[test_first]
    order = np.argsort(test_key)
    key_R = np.maximum(p_R, 0) * len(t_names) + tc_R
    at_R = np.minimum(np.searchsorted(test_key, key_R, sorter=order), len(order) - 1)
    t_R = np.where((p_R >= 0) & (tc_R >= 0) & (test_key[order[at_R]] == key_R),
                   column[order[at_R]], -1)
    errors.check((p_R >= 0) & (t_R < 0),
                 lambda i: f"reference row for unknown test {refs.test_id[i]!r} (no execution "
                           "row of this problem has it)", refs.row, refs.problem_id)
    errors.raise_first()
    h_codes, h_names, reference_ids = _string_codes(refs.reference_id, "reference_id", refs.row,
                                                    source, row_word, _block_hint(p_R, t_R))
    refs = dataclasses.replace(refs, reference_id=reference_ids)
    h_R, h_first = _factorize_ints(p_R * len(h_names) + h_codes, num_p * len(h_names))
    h_problem = p_R[h_first]
    n_refs_P = np.bincount(h_problem, minlength=num_p)
    by_p = np.argsort(h_problem, kind="stable")
    starts = np.concatenate([[0], np.cumsum(n_refs_P)[:-1]])
    local = np.empty(len(h_first), np.int64)
    local[by_p] = np.arange(len(h_first)) - starts[h_problem[by_p]]
    h_local_R = local[h_R]
    width = max(int(n_refs_P.max()), 1)
    num_t = int(column.max()) + 1
    cell_codes_R, cell_first = _factorize_ints((p_R * num_t + t_R) * width + h_local_R,
                                               num_p * num_t * width)
    first_R = cell_first[cell_codes_R]
    errors.check(first_R != np.arange(n),
                 lambda i: f"duplicate reference {refs.reference_id[i]!r} on test "
                           f"{refs.test_id[i]!r} (first on {row_word} {int(refs.row[first_R[i]])})",
                 refs.row, refs.problem_id)
    # null or <= 0 is a stored "no valid measurement": eq. 10 (docs/design/rewards.md §1) maps it to
    # the cap
    errors.check(~refs.missing & ~np.isfinite(refs.duration_s),
                 lambda i: f"column 'duration_s': must be finite, got {refs.duration_s[i]}",
                 refs.row, refs.problem_id)
    errors.check(np.isfinite(refs.duration_s) & (refs.duration_s > MAX_SECONDS),
                 lambda i: f"column 'duration_s': must be <= {MAX_SECONDS:g} s (a sane maximum; "
                           f"the service cap is 10 s), got {refs.duration_s[i]}",
                 refs.row, refs.problem_id)
    errors.raise_first()
    names = [refs.reference_id[i] for i in h_first.tolist()]
    return p_R, t_R, h_local_R, list(_per_problem(names, h_problem, num_p))


def _per_problem(names: list, problem_K, num_p: int) -> tuple[tuple[str, ...], ...]:
    """Names (in first-appearance order) grouped by their problem."""
    out: list[list[str]] = [[] for _ in range(num_p)]
    for name, p in zip(names, problem_K.tolist()):
        out[p].append(name)
    return tuple(tuple(names_p) for names_p in out)


@dataclasses.dataclass(frozen=True)
class RecordIndex:
    """Maps the padded axes of a `RecordBatch` back to the ids of the file.

    `problem_ids[p]`; `rollouts[i]` = `(problem_id, rollout_id)` of the i-th real rollout, which
    lies in batch row `rollout_rows[i]` (padding rows appear in neither); `group_size` = G;
    `test_ids[p][t]`; `reference_ids[p][h]`.
    """

    problem_ids: tuple[str, ...]
    rollouts: tuple[tuple[str, str], ...]
    rollout_rows: tuple[int, ...]
    group_size: int
    test_ids: tuple[tuple[str, ...], ...]
    reference_ids: tuple[tuple[str, ...], ...]

    def real(self, values_B):
        """`values_B[rollout_rows]`: per-row results reduced to the real rollouts, in the order
        of `rollouts`."""
        return np.asarray(values_B)[np.asarray(self.rollout_rows, dtype=np.int64)]


__all__ = ["MAX_IO_CHARS", "MAX_SECONDS", "STATUSES", "ExecutionColumns",
           "RecordFileError", "RecordIndex", "ReferenceColumns", "factorize", "layout"]
