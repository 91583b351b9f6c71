"""Dataset writer: ordering contract, atomic swap, light variant."""

from __future__ import annotations

import pytest

from jaxopt_rl.data.schema import Problem, ProblemTest, Solution
from jaxopt_rl.data.store import load_dataset
from jaxopt_rl.data.writer import DatasetWriter, light_variant, write_dataset


def test_writer_requires_ascending_ids_and_swaps_in_only_on_finish(tmp_path):
    root = tmp_path / "ds"
    write_dataset(root, [Problem("b", "old statement", meta={"split": "train"})], funnel=[],
                  rejections=[], manifest={"name": "old"})
    (root / "materialized").mkdir()
    writer = DatasetWriter(root)
    writer.add(Problem("a", "new a", meta={"split": "test"}))
    with pytest.raises(ValueError, match="ascending id order"):
        writer.add(Problem("a", "again"))
    assert load_dataset(root).problem_ids() == ["b"]  # untouched until finish
    writer.add(Problem("c", "new c", meta={"split": "train"}))
    writer.finish(funnel=[{"stage": "00_load", "operation": "x", "problems": 2, "correct": 0,
                           "incorrect": 0}], rejections=[], manifest={"name": "new"})
    dataset = load_dataset(root)
    assert dataset.problem_ids() == ["a", "c"] and dataset.manifest["name"] == "new"
    assert dataset.manifest["splits"] == {"train": 1, "test": 1, "complement": 0}
    assert (root / "materialized").is_dir() and not (tmp_path / ".ds.staging").exists()
    assert (root / "funnel.csv").read_text().startswith("stage,operation,problems")


def test_light_variant_keeps_one_solution_per_label_and_no_to_tests():
    tests = (ProblemTest("T0/000", "T0", "original", "1\n", "1\n"),
             ProblemTest("TO/a00/c00", "TO", "generated", "2\n", "2\n"))
    solutions = (Solution("c2", "x", "correct", True), Solution("c1", "x", "correct", True),
                 Solution("i1", "x", "incorrect", None, True), Solution("i0", "x", "incorrect",
                                                                       None, True))
    trace = {"campaign_id": "c", "tests": ["T0/000", "TO/a00/c00"], "solutions": ["c1", "c2"],
             "duration": [[0.1, 0.2], [0.3, 0.4]], "status": ["ST", "SS"]}
    light = light_variant(Problem("p", "s", tests=tests, solutions=solutions,
                                  meta={"durations": trace}))
    assert [t.test_id for t in light.tests] == ["T0/000"]
    assert [s.solution_id for s in light.solutions] == ["c1", "i0"]
    assert light.meta["durations"] == {"campaign_id": "c", "tests": ["T0/000"], "solutions": ["c1"],
                                       "duration": [[0.1]], "status": ["S"]}
