"""DMC-Optim-mini: every source folder follows the fixed format; access API behaviour."""

from __future__ import annotations

import re

import pytest

from jaxopt_rl.config import load_config
from jaxopt_rl.data.builder import BuildConfig
from jaxopt_rl.data.builder.sources import Rejection, read_mini, read_mini_problem
from jaxopt_rl.data.mini import load_mini, mini_problem_ids, mini_sources_dir
from jaxopt_rl.data.schema import SchemaError

IDS = mini_problem_ids()


@pytest.mark.parametrize("problem_id", IDS)
def test_source_folder_follows_the_contract(problem_id):
    problem = read_mini_problem(mini_sources_dir() / problem_id)
    assert re.fullmatch(r"mini-\d{3}", problem.problem_id)
    assert problem.difficulty in ("easy", "medium", "hard")
    assert len(problem.tests_of("T0")) >= 3
    assert len(problem.solutions_of("correct")) >= 6
    assert len(problem.solutions_of("incorrect")) >= 2
    for solution in problem.solutions:
        assert solution.note, f"{solution.solution_id}: first line must be a comment"
    assert "def generate" in problem.generators[0] or "InputGenerator" in problem.generators[0]


def test_malformed_folders_are_rejected_with_file_and_key(tmp_path):
    good = tmp_path / "mini-900"
    (good / "solutions").mkdir(parents=True)
    (good / "problem.yaml").write_text(
        "id: mini-900\ntitle: T\ndifficulty: easy\nstatement: s\n"
        "original_tests:\n  - input: \"1\\n\"\n    output: \"1\\n\"\n")
    (good / "generator.py").write_text("def generate(method, rng):\n    return '1\\n'\n")
    (good / "solutions" / "correct_echo.py").write_text("# O(1): echo\nprint(input())\n")
    bad_key = tmp_path / "mini-901"
    bad_key.mkdir()
    (bad_key / "problem.yaml").write_text("id: mini-901\ntitle: T\ndifficulty: easy\n"
                                          "statement: s\noriginal_tests: []\ntime_limt_s: 3\n")
    no_output = tmp_path / "mini-902"
    no_output.mkdir()
    (no_output / "problem.yaml").write_text(
        "id: mini-902\ntitle: T\ndifficulty: easy\nstatement: s\n"
        "original_tests:\n  - input: 3\n    output: \"3\\n\"\n")
    items = {i.problem_id: i for i in read_mini(tmp_path)}
    assert not isinstance(items["mini-900"], Rejection)
    assert items["mini-900"].solutions[0].note == "O(1): echo"
    assert "unknown key(s) time_limt_s" in items["mini-901"].reason
    assert "mini-901/problem.yaml" in items["mini-901"].reason
    assert "original_tests[0].input must be a string" in items["mini-902"].reason
    (good / "generator.py").unlink()
    with pytest.raises(SchemaError, match=r"generator\.py: missing"):
        read_mini_problem(good)


def test_mini_config_reads_the_packaged_sources():
    config = load_config(BuildConfig, "configs/data/mini.yaml")
    assert config.source.kind == "mini" and config.source.paths == ()
    assert config.output_dir == "jaxopt_rl/data/mini/built"


def test_load_mini_explains_how_to_build(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"jaxopt-rl data build configs/data/mini\.yaml"):
        load_mini(tmp_path)
