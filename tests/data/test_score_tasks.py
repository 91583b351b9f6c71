"""Score-based task folders: validation, and hidden instances generated in the sandbox."""

from __future__ import annotations

import json

import pytest

from jaxopt_rl.data.mini import mini_score_tasks_dir
from jaxopt_rl.data.schema import SchemaError
from jaxopt_rl.data.score_tasks import hidden_instances, read_score_task

TASK_YAML = """\
id: {task_id}
title: Pick numbers
statement: Choose k of the n numbers with the smallest sum.
objective: minimize
signature: "solve(n: int, k: int, values: list[int]) -> list[str]"
time_limit_s: 5
hidden_instances: {{count: 4, seed: 11}}
heuristics:
  - {{file: sort_pick.py, expected_rank: 1}}
  - {{file: first_k.py, expected_rank: 2}}
"""
GENERATOR = """\
def generate(index, rng):
    n = 5 + index
    return {"n": n, "k": 2, "values": [rng.randint(1, 99) for _ in range(n)]}
"""


def make_task(root, task_id="pick-001", generator=GENERATOR):
    folder = root / task_id
    (folder / "heuristics").mkdir(parents=True)
    (folder / "task.yaml").write_text(TASK_YAML.format(task_id=task_id))
    (folder / "generator.py").write_text(generator)
    (folder / "checker.py").write_text("def check(test_input, program_output, expected_output):\n"
                                       "    return 0.0\n")
    (folder / "heuristics" / "sort_pick.py").write_text(
        "# sort and take the k smallest (rank 1)\n"
        "def solve(n, k, values):\n    return [str(i) for i in sorted(range(n), key=values.__getitem__)[:k]]\n")
    (folder / "heuristics" / "first_k.py").write_text(
        "# the first k (rank 2)\ndef solve(n, k, values):\n    return [str(i) for i in range(k)]\n")
    return folder


def test_read_and_generate_instances(tmp_path, sandbox):
    task = read_score_task(make_task(tmp_path))
    assert task.objective == "minimize" and [h.slug for h in task.heuristics] == ["sort_pick",
                                                                                   "first_k"]
    assert task.heuristics[0].note.startswith("sort and take")
    instances = hidden_instances(task, sandbox)
    assert len(instances) == 4
    decoded = [json.loads(x) for x in instances]
    assert [d["n"] for d in decoded] == [5, 6, 7, 8]
    assert instances == hidden_instances(task, sandbox)  # seeded: identical on a rerun
    assert instances[0] == json.dumps(decoded[0], sort_keys=True)


def test_generator_failure_names_the_task_and_instance(tmp_path, sandbox):
    task = read_score_task(make_task(tmp_path, generator="def generate(index, rng):\n"
                                                         "    return [index]\n"))
    with pytest.raises(SchemaError, match="'pick-001': generator failed on instance 0"):
        hidden_instances(task, sandbox)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("minimize", "smallest"), "objective"),
    (lambda t: t.replace("-> list[str]", "-> int"), "signature"),
    (lambda t: t.replace("expected_rank: 2", "expected_rank: 3"), "expected_rank must be 1..2"),
    (lambda t: t.replace("first_k.py", "missing.py"), r"heuristics\[1\]\.file"),
    (lambda t: t + "extra: 1\n", "unknown key"),
])
def test_bad_task_yaml_is_named(tmp_path, edit, message):
    folder = make_task(tmp_path)
    (folder / "task.yaml").write_text(edit((folder / "task.yaml").read_text()))
    with pytest.raises(SchemaError, match=message):
        read_score_task(folder)


SHIPPED = sorted(p.parent.name for p in mini_score_tasks_dir().glob("*/task.yaml")) if \
    mini_score_tasks_dir().is_dir() else []


@pytest.mark.parametrize("task_id", SHIPPED)
def test_shipped_score_tasks_follow_the_format(task_id):
    task = read_score_task(mini_score_tasks_dir() / task_id)
    assert len(task.heuristics) >= 3
    assert all(h.note for h in task.heuristics)
