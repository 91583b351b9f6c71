"""The one layout function on in-memory records: arrays against a slow loop reference, whatever
the record order and id types, and every bad-input message of the in-memory path."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.data.execution_records import (
    ExecutionRecord,
    RecordFileError,
    ReferenceDuration,
    batch_from_records,
)
from jaxopt_rl.data.record_layout import _block_hint, _factorize_ints, factorize
from jaxopt_rl.rewards import records
from sandbox_cluster.api import TEST_KINDS, Status

FIELDS = ("status_BT", "duration_BT", "test_mask_BT", "test_kind_BT", "io_chars_BT", "cap_BT",
          "rollout_mask_B", "ref_duration_PTH", "ref_mask_PTH")


def slow_layout(executions, references, group_size=None):
    """The layout the module docstring specifies, one record at a time (dicts and loops)."""
    problems, tests, rollouts, refs = {}, {}, {}, {}
    for r in executions:
        p = problems.setdefault(str(r.problem_id), len(problems))
        tests.setdefault(p, {}).setdefault(str(r.test_id), (r.test_kind, r.limit_s, r.io_chars))
        rollouts.setdefault(p, {}).setdefault(str(r.rollout_id), len(rollouts.get(p, {})))
    for r in references:
        p = problems[str(r.problem_id)]
        refs.setdefault(p, {}).setdefault(str(r.reference_id), len(refs.get(p, {})))
    num_p = len(problems)
    g = group_size or max(len(rollouts[p]) for p in range(num_p))
    num_t = max(len(tests[p]) for p in range(num_p))
    num_h = max([len(refs.get(p, {})) for p in range(num_p)] + [1])
    out = {name: np.zeros(shape, dtype) for name, shape, dtype in (
        ("status_BT", (num_p * g, num_t), np.int8), ("duration_BT", (num_p * g, num_t), np.float32),
        ("test_mask_BT", (num_p * g, num_t), bool), ("test_kind_BT", (num_p * g, num_t), np.int8),
        ("io_chars_BT", (num_p * g, num_t), np.int32), ("cap_BT", (num_p * g, num_t), np.float32),
        ("rollout_mask_B", (num_p * g,), bool), ("ref_duration_PTH", (num_p, num_t, num_h), np.float32),
        ("ref_mask_PTH", (num_p, num_t, num_h), bool))}
    for p in range(num_p):
        for b in range(p * g, p * g + g):
            out["rollout_mask_B"][b] = b - p * g < len(rollouts[p])
            if not out["rollout_mask_B"][b]:
                out["status_BT"][b, :] = records.INCONCLUSIVE
            for t, (kind, limit, io_chars) in enumerate(tests[p].values()):
                out["test_mask_BT"][b, t] = True
                out["test_kind_BT"][b, t] = TEST_KINDS.index(kind)
                out["cap_BT"][b, t] = limit
                out["io_chars_BT"][b, t] = io_chars
    for r in executions:
        p = problems[str(r.problem_id)]
        b = p * g + rollouts[p][str(r.rollout_id)]
        t = list(tests[p]).index(str(r.test_id))
        out["status_BT"][b, t] = records.STATUS_CODE[Status(r.status)]
        if r.status == Status.TIMEOUT:
            out["duration_BT"][b, t] = r.limit_s
        else:
            out["duration_BT"][b, t] = r.duration_s if r.timing == "fleet" else math.nan
    for r in references:
        p = problems[str(r.problem_id)]
        t, h = list(tests[p]).index(str(r.test_id)), refs[p][str(r.reference_id)]
        out["ref_duration_PTH"][p, t, h] = math.nan if r.duration_s is None else r.duration_s
        out["ref_mask_PTH"][p, t, h] = True
    index = {
        "problem_ids": tuple(problems),
        "rollouts": tuple((pid, rid) for pid, p in problems.items() for rid in rollouts[p]),
        "test_ids": tuple(tuple(tests[p]) for p in range(num_p)),
        "reference_ids": tuple(tuple(refs.get(p, {})) for p in range(num_p)),
    }
    return out, index


def fresh(value):
    """An equal str that is a distinct object (records made one by one rarely share ids)."""
    return "".join(list(value)) if isinstance(value, str) else value


@st.composite
def record_sets(draw):
    as_int = draw(st.booleans())
    name = (lambda prefix, i: i + 100) if as_int else (lambda prefix, i: f"{prefix}{i}")
    executions, references = [], []
    for p in range(draw(st.integers(1, 3))):
        n_tests = draw(st.integers(1, 5))
        names = draw(st.permutations([name("t", j) for j in range(n_tests)]))
        info = [(draw(st.sampled_from(TEST_KINDS)), draw(st.sampled_from([2.0, 10.0])),
                 draw(st.integers(0, 50))) for _ in range(n_tests)]
        for r in range(draw(st.integers(1, 4))):
            order = draw(st.permutations(range(n_tests))) if draw(st.booleans()) else range(n_tests)
            for j in order:
                status = draw(st.sampled_from(list(Status)))
                duration = draw(st.floats(0.0, 2.0))
                executions.append(ExecutionRecord(
                    fresh(name("p", p)), fresh(name("r", r)), fresh(names[j]), info[j][0],
                    status, duration, info[j][1], info[j][2], cpu_s=draw(st.none() | st.just(0.1)),
                    timing=draw(st.sampled_from(["fleet", "fleet", "local", "cap", "none"]))))
        for j in range(n_tests):
            for h in draw(st.lists(st.integers(0, 3), unique=True, max_size=4)):
                references.append(ReferenceDuration(
                    fresh(name("p", p)), fresh(names[j]), fresh(name("h", h)),
                    draw(st.none() | st.floats(0.0, 3.0))))
    order = draw(st.sampled_from(["blocks", "shuffled", "reversed"]))
    if order == "shuffled":
        executions = draw(st.permutations(executions))
        references = draw(st.permutations(references))
    elif order == "reversed":
        executions, references = executions[::-1], references[::-1]
    return executions, references


@settings(max_examples=60, deadline=None)
@given(record_sets())
def test_layout_matches_the_slow_reference_in_any_order(data):
    executions, references = data
    batch, index = batch_from_records(executions, references)
    expected, expected_index = slow_layout(executions, references)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(batch, name), expected[name], err_msg=name)
    for name, value in expected_index.items():
        assert getattr(index, name) == value, name


def test_the_benchmark_shape_in_small_matches_the_slow_reference():
    """Blocks of one rollout, tests in one order, ids equal but never the same object."""
    executions = [ExecutionRecord(fresh(f"prob-{p}"), fresh(f"r{r}"), fresh(f"test-{t}"),
                                  TEST_KINDS[t % 3], list(Status)[(p + r + t) % 7], 0.01 * t, 10.0,
                                  t + 1, 0.005)
                  for p in range(3) for r in range(4) for t in range(6)]
    references = [ReferenceDuration(fresh(f"prob-{p}"), fresh(f"test-{t}"), fresh(f"ref-{h}"),
                                    0.1 * h) for p in range(3) for t in range(6) for h in range(2)]
    batch, index = batch_from_records(executions, references, group_size=5)
    expected, expected_index = slow_layout(executions, references, group_size=5)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(batch, name), expected[name], err_msg=name)
    assert index.test_ids == expected_index["test_ids"]
    assert index.reference_ids == expected_index["reference_ids"]


@pytest.mark.parametrize("hint", ["previous", "twins", "wrong"])
def test_factorize_codes_by_first_appearance_whatever_the_hint(hint):
    rng = np.random.default_rng(0)
    values = [fresh(f"v{k}") for k in rng.integers(0, 9, 200)] + [1, True, 1.0, "1"]
    rows = np.arange(len(values))
    hints = {"previous": None, "twins": np.where(rows >= 50, rows % 50, rows),
             "wrong": np.zeros(len(values), np.int64)}
    codes, uniques = factorize(values, hints[hint])
    first = {}
    for value in values:  # dict semantics: 1, True and 1.0 are one key
        first.setdefault(value, len(first))
    assert uniques == list(first)
    assert codes.tolist() == [first[value] for value in values]


def test_many_problems_with_their_own_test_names_match_the_slow_reference():
    """Sparse (problem, test) keys: the sorting branch of the integer factorisation."""
    executions = [ExecutionRecord(f"p{p}", f"r{r}", f"p{p}-t{t}", "TO", Status.SUCCESS, 0.5, 10.0,
                                  p, None) for p in range(90) for r in range(2) for t in range(2)]
    references = [ReferenceDuration(f"p{p}", f"p{p}-t1", f"p{p}-h", 0.25) for p in range(90)]
    batch, index = batch_from_records(executions[::-1], references)
    expected, expected_index = slow_layout(executions[::-1], references)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(batch, name), expected[name], err_msg=name)
    assert index.test_ids == expected_index["test_ids"]


@pytest.mark.parametrize("size", [10, 10**6])  # counted / sorted
def test_integer_keys_are_coded_by_first_appearance(size):
    key = np.random.default_rng(1).integers(0, 10, 50) * (size // 10)
    codes, first = _factorize_ints(key, size)
    order = list(dict.fromkeys(key.tolist()))
    assert codes.tolist() == [order.index(k) for k in key.tolist()]
    assert first.tolist() == [key.tolist().index(k) for k in order]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=40))
def test_block_hints_point_back_to_rows_that_are_their_own_hint(pairs):
    """factorize's contract: a hint is an earlier row (or the row) whose own hint is itself."""
    outer, inner = (np.array(column, np.int64) for column in zip(*pairs))
    _, outer = np.unique(outer, return_inverse=True)  # codes, as factorize gives them
    hint = _block_hint(outer, inner)
    rows = np.arange(len(pairs))
    assert (hint <= rows).all() and (hint[hint] == hint).all()
    assert (outer[hint] == outer).all()


def base_records():
    executions = [ExecutionRecord("p", r, t, k, Status.SUCCESS, 0.1, 10.0, 12, 0.05)
                  for r in ("r0", "r1") for t, k in (("t0", "T0"), ("o0", "TO"))]
    return executions, [ReferenceDuration("p", "o0", "h0", 0.2),
                        ReferenceDuration("p", "o0", "h1", 0.4)]


def _set(i, **change):
    return lambda ex, refs: ex.__setitem__(i, dataclasses.replace(ex[i], **change))


@pytest.mark.parametrize(("mutate", "message"), [
    (_set(1, status="ok"), r"^<records>: record 2 \(problem 'p'\): column 'status': unknown "
     r"value 'ok'; expected one of success, timeout, wrong_answer, runtime_error, memory_limit, "
     r"output_limit, infra_error, not_run$"),
    (_set(2, test_kind="T1"), r"^<records>: record 3 \(problem 'p'\): column 'test_kind': "
     r"unknown value 'T1'; expected one of T0, T\+, TO$"),
    (_set(2, timing="fast"), r"^<records>: record 3 \(problem 'p'\): column 'timing': unknown "
     r"value 'fast'; expected one of fleet, cap, local, none$"),
    (_set(2, io_chars=2.0), r"^<records>: record 3: column 'io_chars': expected an integer "
     r">= 0, got 2.0$"),
    (_set(2, io_chars=-3), r"^<records>: record 3 \(problem 'p'\): column 'io_chars': expected "
     r"an integer >= 0, got -3$"),
    (_set(2, io_chars=2**31), r"record 3 \(problem 'p'\): column 'io_chars': must be < 2\*\*31 "
     r"\(io_chars_BT is int32\), got 2147483648$"),
    (_set(2, io_chars=10**30), r"record 3 \(problem 'p'\): column 'io_chars': must be < 2\*\*31"),
    (_set(2, duration_s=-0.5), r"^<records>: record 3 \(problem 'p'\): column 'duration_s': "
     r"must be >= 0, got -0.5$"),
    (_set(2, duration_s=None), r"record 3 \(problem 'p'\): column 'duration_s': must be finite"),
    (_set(2, cpu_s=-1.0), r"record 3 \(problem 'p'\): column 'cpu_s': must be >= 0, got -1.0$"),
    (_set(2, duration_s=11.0), r"record 3 \(problem 'p'\): column 'duration_s': a success must "
     r"finish within its limit_s \(10 s\), got 11.0$"),
    (_set(0, limit_s=0.0), r"record 1 \(problem 'p'\): column 'limit_s': must be > 0, got 0.0$"),
    (_set(0, rollout_id=1.5), r"^<records>: record 1: column 'rollout_id': expected a string or "
     r"integer id, got 1.5$"),
    (_set(3, problem_id=True), r"^<records>: record 4: column 'problem_id': expected a string "
     r"or integer id, got True$"),
    (lambda ex, refs: ex.append(ex[3]), r"^<records>: record 5 \(problem 'p'\): duplicate row "
     r"for rollout 'r1' on test 'o0' \(first on record 4\)$"),
    (_set(2, test_kind="T+"), r"^<records>: record 3 \(problem 'p'\): test 't0': "
     r"test_kind/limit_s/io_chars \('T\+', 10.0, 12\) differ from \('T0', 10.0, 12\) on record 1$"),
    (lambda ex, refs: ex.pop(3), r"^<records>: problem 'p': rollout 'r1' has no row for test "
     r"'o0' \(other rollouts of the problem have one\)$"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", "o9", "h0", 0.1)),
     r"^<records>: record 7 \(problem 'p'\): reference row for unknown test 'o9' \(no execution "
     r"row of this problem has it\)$"),
    (lambda ex, refs: refs.append(ReferenceDuration("q", "o0", "h0", 0.1)),
     r"^<records>: record 7 \(problem 'q'\): reference row for a problem with no execution rows$"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", "o0", "h1", 0.1)),
     r"^<records>: record 7 \(problem 'p'\): duplicate reference 'h1' on test 'o0' \(first on "
     r"record 6\)$"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", "o0", "h2", math.inf)),
     r"record 7 \(problem 'p'\): column 'duration_s': must be finite, got inf$"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", "o0", "h2", 2e6)),
     r"record 7 \(problem 'p'\): column 'duration_s': must be <= 1e\+06 s"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", "o0", 3.5, 0.1)),
     r"^<records>: record 7: column 'reference_id': expected a string or integer id, got 3.5$"),
    (lambda ex, refs: refs.append(ReferenceDuration("p", 3.5, "h9", 0.1)),
     r"^<records>: record 7: column 'test_id': expected a string or integer id, got 3.5$"),
    (lambda ex, refs: ex.clear(), r"^<records>: no execution rows$"),
])
def test_bad_in_memory_records_are_refused_precisely(mutate, message):
    executions, references = base_records()
    mutate(executions, references)
    with pytest.raises(RecordFileError, match=message):
        batch_from_records(executions, references)


def test_plain_status_strings_and_integer_ids_are_read():
    executions, references = base_records()
    executions = [dataclasses.replace(r, problem_id=7, status="success") for r in executions]
    references = [dataclasses.replace(r, problem_id=7, reference_id=i)
                  for i, r in enumerate(references)]
    batch, index = batch_from_records(executions, references)
    assert index.problem_ids == ("7",) and index.reference_ids == (("0", "1"),)
    assert (np.asarray(batch.status_BT) == records.SUCCESS).all()
