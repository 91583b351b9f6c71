"""CodeContests importer: a synthetic shard in the public schema, written with pyarrow."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jaxopt_rl.data.builder.sources import Rejection
from jaxopt_rl.data.codecontests import difficulty_of, problem_id_of, read_shards
from jaxopt_rl.data.schema import Problem

TESTS = pa.struct([("input", pa.list_(pa.string())), ("output", pa.list_(pa.string()))])
SOLUTIONS = pa.struct([("language", pa.list_(pa.int64())), ("solution", pa.list_(pa.string()))])
SCHEMA = pa.schema([
    ("name", pa.string()), ("description", pa.string()), ("public_tests", TESTS),
    ("private_tests", TESTS), ("generated_tests", TESTS), ("source", pa.int64()),
    ("difficulty", pa.int64()), ("solutions", SOLUTIONS), ("incorrect_solutions", SOLUTIONS),
    ("cf_contest_id", pa.int64()), ("cf_index", pa.string()), ("cf_points", pa.float64()),
    ("cf_rating", pa.int64()), ("cf_tags", pa.list_(pa.string())),
    ("is_description_translated", pa.bool_()), ("untranslated_description", pa.string()),
    ("time_limit", pa.struct([("seconds", pa.int64()), ("nanos", pa.int64())])),
    ("memory_limit_bytes", pa.int64()), ("input_file", pa.string()), ("output_file", pa.string()),
])


def _row(name, public=(("1 2\n", "3\n"),), private=(), generated=(), solutions=(), incorrect=(),
         rating=1500, difficulty=0, input_file=""):
    def tests(pairs):
        return {"input": [a for a, _ in pairs], "output": [b for _, b in pairs]}

    def sols(items):
        return {"language": [lang for lang, _ in items], "solution": [code for _, code in items]}

    return {
        "name": name, "description": f"Statement of {name}.", "public_tests": tests(public),
        "private_tests": tests(private), "generated_tests": tests(generated), "source": 2,
        "difficulty": difficulty, "solutions": sols(solutions), "incorrect_solutions": sols(incorrect),
        "cf_contest_id": 1548, "cf_index": "E", "cf_points": 2250.0, "cf_rating": rating,
        "cf_tags": ["greedy"], "is_description_translated": False, "untranslated_description": "",
        "time_limit": {"seconds": 2, "nanos": 500_000_000}, "memory_limit_bytes": 256 * 2**20,
        "input_file": input_file, "output_file": "",
    }


@pytest.fixture()
def shard(tmp_path):
    rows = [
        _row("1548_E. Gregor and the Two Painters",
             public=(("1 2\n", "3\n"),), private=(("5 5\n", "10\n"),), generated=(("0 0\n", "0\n"),),
             solutions=((3, "print(sum(map(int, input().split())))"), (2, "int main(){}"),
                        (1, "print sum(map(int, raw_input().split()))"), (4, "class A{}"),
                        (3, "a, b = map(int, input().split())\nprint(a + b)")),
             incorrect=((3, "print(0)"), (2, "int main(){return 1;}"))),
        _row("1600_A. No Tests At All", public=(), solutions=((3, "print(1)"),)),
        _row("1601_B. Lopsided", public=(("1\n", "1\n"), ("2\n", "2\n"))),
        _row("1602_C. Files", input_file="input.txt"),
    ]
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    # A row with unequal input/output lists cannot be built with the helper: patch it in.
    bad = _row("1603_D. Mismatch")
    bad["public_tests"] = {"input": ["1\n", "2\n"], "output": ["1\n"]}
    pq.write_table(pa.Table.from_pylist([bad], schema=SCHEMA), tmp_path / "train-00001.parquet")
    return tmp_path


def test_round_trip_keeps_python3_only_and_rejects_bad_rows(shard):
    items = list(read_shards([shard]))
    problems = {i.problem_id: i for i in items if isinstance(i, Problem)}
    rejected = {i.problem_id: i.reason for i in items if isinstance(i, Rejection)}

    assert set(problems) == {"dmc-1548-e-gregor-and-the-two-painters", "dmc-1601-b-lopsided"}
    problem = problems["dmc-1548-e-gregor-and-the-two-painters"]
    assert [s.solution_id for s in problem.solutions] == ["correct/0000", "correct/0001",
                                                         "incorrect/0000"]
    assert [s.label for s in problem.solutions] == ["correct", "correct", "incorrect"]
    assert problem.solutions[1].code.startswith("a, b = map")
    assert problem.meta["dropped_languages"] == {"CPP": 2, "PYTHON": 1, "JAVA": 1}
    assert [(t.test_id, t.origin, t.input, t.expected) for t in problem.tests] == [
        ("T0/000", "public", "1 2\n", "3\n"), ("T0/001", "private", "5 5\n", "10\n"),
        ("T0/002", "dmc_generated", "0 0\n", "0\n")]
    assert problem.difficulty == "medium" and problem.time_limit_s == 10.0
    assert problem.meta["original_time_limit_s"] == 2.5
    assert problem.meta["original_memory_mb"] == 256
    assert Problem.from_json(problem.to_json()) == problem

    assert "no tests" in rejected["dmc-1600-a-no-tests-at-all"]
    assert "file-based I/O" in rejected["dmc-1602-c-files"]
    assert "2 inputs for 1 outputs" in rejected["dmc-1603-d-mismatch"]


def test_missing_column_is_rejected_with_the_problem_named(tmp_path):
    table = pa.table({"name": ["1_A. Lonely"], "description": ["d"]})
    pq.write_table(table, tmp_path / "s.parquet")
    (item,) = read_shards([tmp_path / "s.parquet"])
    assert isinstance(item, Rejection) and item.problem_id == "dmc-1-a-lonely"
    assert "missing column 'public_tests'" in item.reason


def test_missing_shard_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.parquet"):
        list(read_shards([tmp_path / "nope.parquet"]))


def test_ids_and_difficulty_labels():
    assert problem_id_of("1548_E. Gregor & the  Two Painters!") == "dmc-1548-e-gregor-the-two-painters"
    assert difficulty_of({"cf_rating": 800}) == "easy"
    assert difficulty_of({"cf_rating": 2000}) == "medium"
    assert difficulty_of({"cf_rating": 2400}) == "hard"
    assert difficulty_of({"cf_rating": 0, "difficulty": 7}) == "easy"  # Codeforces "A"
    assert difficulty_of({"cf_rating": 0, "difficulty": 3}) == "hard"
    assert difficulty_of({"cf_rating": 0, "difficulty": 0}) == "unknown"
