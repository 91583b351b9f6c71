"""Record files: the shipped example, JSONL/Parquet round trips, layout, and precise errors."""

import json

import numpy as np
import pytest

from jaxopt_rl.data.examples import EXAMPLE_RECORDS
from jaxopt_rl.data.examples.make_example_records import build_example
from jaxopt_rl.data.examples.make_example_records import main as make_example
from jaxopt_rl.data.execution_records import (
    ExecutionRecord,
    RecordFileError,
    ReferenceDuration,
    batch_from_records,
    load_record_batch,
    write_records,
)
from jaxopt_rl.rewards import records
from jaxopt_rl.rollouts.execute import TestSpec, execution_record
from sandbox_cluster.api import Status, TestResult


def rollout_row(index, problem_id, rollout_id) -> int:
    """The batch row of a rollout, looked up in the index's own fields."""
    return index.rollout_rows[index.rollouts.index((problem_id, rollout_id))]


def column_of_test(index, problem_id, test_id) -> int:
    return index.test_ids[index.problem_ids.index(problem_id)].index(test_id)


def execution(problem="p", rollout="r0", test="t0", kind="T0", status="success", duration=0.1,
              **extra):
    row = {"row_type": "execution", "problem_id": problem, "rollout_id": rollout,
           "test_id": test, "test_kind": kind, "status": status, "duration_s": duration,
           "limit_s": 10.0, "io_chars": 12}
    row.update(extra)
    return row


def reference(problem="p", test="o0", ref="h0", duration=0.2):
    return {"row_type": "reference", "problem_id": problem, "test_id": test,
            "reference_id": ref, "duration_s": duration}


def small_rows():
    rows = []
    for rollout in ("r0", "r1"):
        rows.append(execution(rollout=rollout, test="t0", kind="T0"))
        rows.append(execution(rollout=rollout, test="o0", kind="TO", duration=0.5))
    rows += [reference(ref="h0"), reference(ref="h1", duration=0.4)]
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_example_has_every_ingredient():
    # (its load time is a benchmark, benchmarks/record_batch.py, not a unit-test bound)
    batch, index = load_record_batch(EXAMPLE_RECORDS)
    assert len(index.problem_ids) == 6 and batch.num_rollouts == 48
    per_problem_tests = [len(t) for t in index.test_ids]
    assert min(per_problem_tests) >= 10 and max(per_problem_tests) <= 40
    assert all(8 <= len(refs) <= 30 for refs in index.reference_ids)
    status = np.asarray(batch.status_BT)[np.asarray(batch.test_mask_BT)]
    counts = np.bincount(status, minlength=4)
    assert counts[records.SUCCESS] > 0 and counts[records.TIMEOUT] > 0
    assert counts[records.FAILURE] > 0 and counts[records.INCONCLUSIVE] == 1
    kinds = set(np.asarray(batch.test_kind_BT)[np.asarray(batch.test_mask_BT)].tolist())
    assert kinds == {0, 1, 2}
    timeouts = np.asarray(batch.status_BT) == records.TIMEOUT
    assert np.all(np.asarray(batch.duration_BT)[timeouts] == 10.0), "timeouts sit at the cap"


def test_example_generator_is_deterministic(tmp_path):
    out = tmp_path / "again.jsonl"
    make_example(["--out", str(out)])
    assert out.read_bytes() == EXAMPLE_RECORDS.read_bytes()


def test_batch_matches_the_rows_it_came_from():
    batch, index = load_record_batch(EXAMPLE_RECORDS)
    rows = [json.loads(line) for line in EXAMPLE_RECORDS.read_text().splitlines()]
    for row in rows[::7]:
        problem = row["problem_id"]
        p = index.problem_ids.index(problem)
        t = column_of_test(index, problem, row["test_id"])
        if row["row_type"] == "execution":
            b = rollout_row(index, problem, row["rollout_id"])
            assert index.test_ids[b // index.group_size][t] == row["test_id"]
            assert batch.problem_index_B[b] == p and batch.test_mask_BT[b, t]
            assert batch.rollout_mask_B[b]
            assert batch.status_BT[b, t] == records.STATUS_CODE[Status(row["status"])]
            assert batch.duration_BT[b, t] == np.float32(row["duration_s"])
            assert batch.test_kind_BT[b, t] == records.TEST_KIND_CODE[row["test_kind"]]
            assert batch.io_chars_BT[b, t] == row["io_chars"]
            assert batch.cap_BT[b, t] == np.float32(row["limit_s"])
        else:
            h = index.reference_ids[p].index(row["reference_id"])
            assert batch.ref_mask_PTH[p, t, h]
            assert batch.ref_duration_PTH[p, t, h] == np.float32(row["duration_s"])
    # padding is masked out
    for p in range(len(index.problem_ids)):
        n_tests = len(index.test_ids[p])
        rows_of_p = np.asarray(batch.problem_index_B) == p
        assert not np.asarray(batch.test_mask_BT)[rows_of_p, n_tests:].any()
        assert np.asarray(batch.test_mask_BT)[rows_of_p, :n_tests].all()
        assert not np.asarray(batch.ref_mask_PTH)[p, n_tests:].any()
        assert not np.asarray(batch.ref_mask_PTH)[p, :, len(index.reference_ids[p]):].any()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_round_trip_through_both_formats(tmp_path, suffix):
    executions, references = build_example()
    path = write_records(tmp_path / f"records{suffix}", executions, references)
    batch, index = load_record_batch(path)
    expected, expected_index = batch_from_records(executions, references)
    assert index == expected_index
    for name in ("status_BT", "duration_BT", "test_mask_BT", "test_kind_BT", "io_chars_BT",
                 "cap_BT", "rollout_mask_B", "ref_duration_PTH", "ref_mask_PTH"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(expected, name), err_msg=name)


def ragged_rows():
    """Three problems with 3, 1 and 2 rollouts, rows interleaved across problems."""
    rows = []
    for problem, rollouts in (("a", ("r0", "r1", "r2")), ("b", ("only",)), ("c", ("x", "y"))):
        for rollout in rollouts:
            rows.append(execution(problem, rollout, "t0", "T0", duration=0.01))
            rows.append(execution(problem, rollout, "o0", "TO", duration=0.3))
        rows += [reference(problem, "o0", "h0", 0.2), reference(problem, "o0", "h1", 0.4)]
    order = [0, 6, 1, 8, 2, 7, 3, 9, 4, 5, 10, 11, 12, 13, 14, 15, 16, 17]
    return [rows[i] for i in order]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_ragged_rollout_counts_round_trip_in_the_grouped_layout(tmp_path, suffix):
    rows = ragged_rows()
    executions = [ExecutionRecord(**{k: v for k, v in row.items() if k != "row_type"})
                  for row in rows if row["row_type"] == "execution"]
    references = [ReferenceDuration(**{k: v for k, v in row.items() if k != "row_type"})
                  for row in rows if row["row_type"] == "reference"]
    path = write_records(tmp_path / f"ragged{suffix}", executions, references)
    batch, index = load_record_batch(path)
    batch.validate()
    assert (batch.num_problems, batch.group_size, batch.num_rollouts) == (3, 3, 9)
    assert index.problem_ids == ("a", "b", "c")
    assert index.rollouts == (("a", "r0"), ("a", "r1"), ("a", "r2"), ("b", "only"),
                              ("c", "x"), ("c", "y"))
    assert index.rollout_rows == (0, 1, 2, 3, 6, 7)
    np.testing.assert_array_equal(batch.rollout_mask_B, [1, 1, 1, 1, 0, 0, 1, 1, 0])
    for row in rows:
        if row["row_type"] != "execution":
            continue
        b = rollout_row(index, row["problem_id"], row["rollout_id"])
        t = column_of_test(index, row["problem_id"], row["test_id"])
        assert b // batch.group_size == index.problem_ids.index(row["problem_id"])
        assert batch.duration_BT[b, t] == np.float32(row["duration_s"])
    # padding rollouts carry their problem's test layout and no verdict
    pads = ~np.asarray(batch.rollout_mask_B)
    assert np.all(np.asarray(batch.status_BT)[pads] == records.INCONCLUSIVE)
    same, again = batch_from_records(executions, references)
    assert again == index
    for name in ("status_BT", "duration_BT", "test_mask_BT", "rollout_mask_B"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(same, name), err_msg=name)


def test_fixed_group_size_pads_and_too_many_rollouts_name_the_problem(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", ragged_rows())
    batch, index = load_record_batch(path, group_size=4)
    assert batch.num_rollouts == 12 and index.group_size == 4
    assert index.rollout_rows == (0, 1, 2, 4, 8, 9)
    assert index.real(np.arange(12)).tolist() == [0, 1, 2, 4, 8, 9]
    with pytest.raises(RecordFileError, match=r"problem 'a' has 3 rollouts, more than group_size=2"):
        load_record_batch(path, group_size=2)


def test_pad_multiple_pads_tests_and_references(tmp_path):
    batch, index = load_record_batch(write_jsonl(tmp_path / "r.jsonl", small_rows()), 8)
    assert np.shape(batch.status_BT) == (2, 8) and np.shape(batch.ref_duration_PTH) == (1, 8, 8)
    assert index.test_ids == (("t0", "o0"),) and index.reference_ids == (("h0", "h1"),)


def test_record_from_sandbox_result_and_reference_sentinels(tmp_path):
    result = TestResult(status=Status.MEMORY_LIMIT, duration_s=0.3, cpu_s=0.25)
    record = execution_record("p", "r0", TestSpec("o0", "TO", 5), result, limit_s=10.0)
    refs = [ReferenceDuration("p", "o0", "h0", None), ReferenceDuration("p", "o0", "h1", 0.0),
            ReferenceDuration("p", "o0", "h2", -1.0)]
    batch, _ = batch_from_records([record], refs)
    assert batch.status_BT[0, 0] == records.FAILURE
    # missing / non-positive stored durations stay usable and are sanitised to the cap later
    assert batch.ref_mask_PTH[0, 0].tolist() == [True, True, True]
    assert np.isnan(batch.ref_duration_PTH[0, 0, 0])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda rows: rows[0].pop("status"), r"line 1 \(problem 'p'\): missing column 'status'"),
        (lambda rows: rows[1].update(status="ok"),
         r"line 2 \(problem 'p'\): column 'status': unknown value 'ok'; expected one of success"),
        (lambda rows: rows[2].update(duration_s=-0.5),
         r"line 3 \(problem 'p'\): column 'duration_s': must be >= 0, got -0.5"),
        (lambda rows: rows[2].update(duration_s=float("nan")),
         r"line 3 \(problem 'p'\): column 'duration_s': must be finite"),
        (lambda rows: rows[2].update(duration_s="fast"), "column 'duration_s': expected a number"),
        (lambda rows: rows[0].update(test_kind="T1"), "column 'test_kind': unknown value 'T1'"),
        (lambda rows: rows[0].update(limit_s=0), "column 'limit_s': must be > 0"),
        (lambda rows: rows[0].update(io_chars=-3), "column 'io_chars': expected an integer >= 0"),
        (lambda rows: rows[0].update(cpu_s=-1), "column 'cpu_s': must be >= 0"),
        (lambda rows: rows[0].update(rollout_id=1.5), "column 'rollout_id': expected a string"),
        (lambda rows: rows[0].update(row_type="exec"), "line 1: column 'row_type': expected"),
        (lambda rows: rows[0].update(duraton_s=1), "line 1: unknown column 'duraton_s'"),
        (lambda rows: rows.append(execution(rollout="r1", test="o0", kind="TO")),
         r"line 7 \(problem 'p'\): duplicate row for rollout 'r1' on test 'o0' \(first on line 4\)"),
        (lambda rows: rows[2].update(kind="T+", test_kind="T+"), "unknown column 'kind'"),
        (lambda rows: rows[2].update(test_kind="T+"),
         r"line 3 \(problem 'p'\): test 't0': test_kind/limit_s/io_chars .* differ from .* line 1"),
        (lambda rows: rows.pop(3),
         "problem 'p': rollout 'r1' has no row for test 'o0' \\(other rollouts"),
        (lambda rows: rows.append(reference(test="o9")),
         r"problem 'p'\): reference row for unknown test 'o9'"),
        (lambda rows: rows.append(reference(problem="q")),
         r"problem 'q'\): reference row for a problem with no execution rows"),
        (lambda rows: rows.append(reference(ref="h1")),
         r"duplicate reference 'h1' on test 'o0' \(first on line 6\)"),
        (lambda rows: rows.append(reference(ref="h2", duration=float("inf"))),
         "column 'duration_s': must be finite"),
        (lambda rows: rows.__setitem__(slice(None), rows[4:]), "no execution rows"),
    ],
)
def test_malformed_jsonl_is_rejected_precisely(tmp_path, mutate, message):
    rows = small_rows()
    mutate(rows)
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(RecordFileError, match=message) as err:
        load_record_batch(path)
    assert str(path) in str(err.value)


def test_malformed_file_level_problems(tmp_path):
    bad_json = tmp_path / "a.jsonl"
    bad_json.write_text(json.dumps(execution()) + "\n{not json\n")
    with pytest.raises(RecordFileError, match="line 2: not valid JSON"):
        load_record_batch(bad_json)
    not_object = tmp_path / "b.jsonl"
    not_object.write_text("[1, 2]\n")
    with pytest.raises(RecordFileError, match="line 1: expected a JSON object"):
        load_record_batch(not_object)
    empty = tmp_path / "c.jsonl"
    empty.write_text("\n")
    with pytest.raises(RecordFileError, match="no rows"):
        load_record_batch(empty)
    with pytest.raises(RecordFileError, match="unknown record file type"):
        load_record_batch(tmp_path / "records.csv")
    with pytest.raises(RecordFileError, match="record file not found"):
        load_record_batch(tmp_path / "missing.jsonl")
    damaged = tmp_path / "d.parquet"
    damaged.write_bytes(b"PAR1 not really")
    with pytest.raises(RecordFileError, match="cannot read as Parquet"):
        load_record_batch(damaged)
    # these once ended in a RecursionError, a crash when the report printed the id, and
    # an error naming neither file nor line
    first = json.dumps(execution())
    for name, line, message in (
            ("deep", "[" * 100_000 + "]" * 100_000, "line 2: JSON nested too deeply"),
            ("surrogate", first.replace('"p"', '"\\ud800"', 1),
             "line 2: column 'problem_id' holds a lone surrogate escape"),
            ("huge", first.replace('"duration_s": ', '"duration_s": ' + "9" * 5000 + ", \"x\": ",
                                   1), "line 2: unreadable JSON value")):
        hostile = tmp_path / f"{name}.jsonl"
        hostile.write_text(first + "\n" + line + "\n")
        with pytest.raises(RecordFileError, match=message) as err:
            load_record_batch(hostile)
        assert str(hostile) in str(err.value)


def test_parquet_errors_name_the_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = small_rows()
    rows[1]["status"] = "passed"
    columns = {name: [row.get(name) for row in rows] for name in rows[0] | rows[-1]}
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(RecordFileError, match=r"row 2 \(problem 'p'\): column 'status'"):
        load_record_batch(path)
    del columns["io_chars"]
    pq.write_table(pa.table(columns), path)
    with pytest.raises(RecordFileError, match=r"row 1 \(problem 'p'\): missing column 'io_chars'"):
        load_record_batch(path)


def test_integer_ids_are_read_as_strings(tmp_path):
    rows = small_rows()
    for row in rows:
        row["problem_id"] = 7
    _, index = load_record_batch(write_jsonl(tmp_path / "r.jsonl", rows))
    assert index.problem_ids == ("7",)
