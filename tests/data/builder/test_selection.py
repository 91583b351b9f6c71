"""Stages 1-2: decontamination matcher, statement check, solution-type filter."""

from __future__ import annotations

import json

import pytest

from jaxopt_rl.config import from_dict
from jaxopt_rl.data.builder import BuildConfig
from jaxopt_rl.data.builder.pipeline import StageContext
from jaxopt_rl.data.builder.selection import (
    ContaminationIndex,
    decontaminate,
    read_statements,
    shingles,
    solution_types,
)
from jaxopt_rl.data.schema import Problem, Solution

BENCH = ("You are given an array of n integers. Find the length of the longest strictly "
         "increasing contiguous subarray and print it on one line.")


def context(**sections):
    config = from_dict(BuildConfig, sections)
    index = ContaminationIndex([("lcb/42", BENCH)], config.decontamination.ngram)
    return StageContext(None, config, {"contamination_index": index})


def problem(statement, correct=1, incorrect=1):
    solutions = ([Solution(f"c{i}", "print(1)", "correct") for i in range(correct)]
                 + [Solution(f"i{i}", "print(2)", "incorrect") for i in range(incorrect)])
    return Problem("p", statement, solutions=tuple(solutions))


def test_shingles():
    assert shingles("A b, C!", 2) == {"a b", "b c"}
    assert shingles("one two", 5) == {"one two"}
    assert shingles("...", 3) == frozenset()


def test_copied_statement_is_removed_even_inside_a_longer_one():
    story = "Long ago in a kingdom far away there lived a careful merchant. " * 3
    result = decontaminate(problem(story + BENCH.upper()), context())
    assert result.problem is None and "lcb/42" in result.reason and "overlap 1.00" in result.reason


def test_unrelated_and_lightly_overlapping_statements_stay():
    assert decontaminate(problem("Print the sum of two integers a and b given on one line, "
                                 "separated by a space."), context()).problem is not None
    half = " ".join(BENCH.split()[:12]) + " and then output the smallest prime factor of each."
    kept = decontaminate(problem(half), context(decontamination={"threshold": 0.9}))
    assert kept.problem is not None


def test_statement_check():
    result = decontaminate(problem("Too short."), context())
    assert result.problem is None and "statement quality" in result.reason


def test_read_statements_formats(tmp_path):
    (tmp_path / "bench.jsonl").write_text(json.dumps({"id": "x1", "statement": "abc"}) + "\n")
    (tmp_path / "bench.txt").write_text("first one\n---\nsecond one\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "q.md").write_text("third one")
    got = read_statements([tmp_path / "bench.jsonl", tmp_path / "bench.txt", tmp_path / "dir"])
    assert [name for name, _ in got] == ["x1", "bench.txt#0", "bench.txt#1", "q.md"]
    (tmp_path / "bad.jsonl").write_text('{"statement": 3}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        read_statements([tmp_path / "bad.jsonl"])


@pytest.mark.parametrize("correct, incorrect, reason", [
    (0, 0, "no usable solutions"), (0, 2, "incorrect-only"), (3, 0, "correct-only")])
def test_solution_types_reasons(correct, incorrect, reason):
    result = solution_types(problem(BENCH, correct, incorrect), context())
    assert result.problem is None and reason in result.reason


def test_solution_sample_is_deterministic_and_capped():
    ctx = context(solution_types={"max_correct": 3, "max_incorrect": 2, "seed": 5})
    first = solution_types(problem(BENCH, 10, 4), ctx).problem
    again = solution_types(problem(BENCH, 10, 4), ctx).problem
    assert first == again
    assert len(first.solutions_of("correct")) == 3 and len(first.solutions_of("incorrect")) == 2
    other = solution_types(problem(BENCH, 10, 4), context(
        solution_types={"max_correct": 3, "max_incorrect": 2, "seed": 6})).problem
    assert other.solutions != first.solutions
