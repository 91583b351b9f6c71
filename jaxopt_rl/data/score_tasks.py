"""Score-based (RiVER) tasks of DMC-Optim-mini: reading the sources, making hidden instances.

A task folder (`jaxopt_rl/data/mini/score_tasks/<task_id>/`) holds `task.yaml` (id, title,
statement, objective minimize | maximize, signature "solve(...) -> list[str]", time_limit_s,
hidden_instances {count, seed}, heuristics [{file, expected_rank}]), `generator.py`
(`generate(index, rng) -> dict` of keyword arguments), `checker.py`
(`check(test_input, program_output, expected_output) -> float | "invalid"`) and
`heuristics/<slug>.py` (`solve(**kwargs) -> list[str]`).

`read_score_task` validates the folder and names the file and key of anything wrong.
`hidden_instances` runs the generator in the sandbox (programs never run outside it) and returns
each instance as canonical JSON (`sort_keys`), the `test_input` a checker receives. **Choice:**
instance i is drawn with `random.Random(f"{task_id}/{seed}/{i}")`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxopt_rl.data.builder.execution import Executor, Run, stdout_text
from jaxopt_rl.data.schema import SchemaError, read_folder_spec
from sandbox_cluster.api import Limits, Status, TestCase

TASK_KEYS = {"id", "title", "statement", "objective", "signature", "time_limit_s", "memory_mb",
             "hidden_instances", "heuristics"}
_SIGNATURE = re.compile(r"^solve\((.*)\)\s*->\s*list\[str\]\s*$")


@dataclass(frozen=True)
class Heuristic:
    slug: str
    code: str
    expected_rank: int  # 1 = best
    note: str  # first-line comment: method and expected rank


@dataclass(frozen=True)
class ScoreTask:
    task_id: str
    title: str
    statement: str
    objective: str  # minimize | maximize
    signature: str
    time_limit_s: float
    memory_mb: int
    hidden_count: int
    hidden_seed: int | str
    generator: str
    checker: str
    heuristics: tuple[Heuristic, ...]


def read_score_task(folder: str | Path) -> ScoreTask:
    folder = Path(folder)
    spec_path = folder / "task.yaml"
    spec = read_folder_spec(folder, "task.yaml", TASK_KEYS,
                            ("id", "title", "statement", "objective", "signature",
                             "hidden_instances", "heuristics"))
    if spec["objective"] not in ("minimize", "maximize"):
        raise SchemaError(f"{spec_path}: objective must be minimize or maximize")
    if not _SIGNATURE.match(str(spec["signature"])):
        raise SchemaError(f"{spec_path}: signature must look like 'solve(n: int, ...) -> list[str]'")
    hidden = spec["hidden_instances"]
    if not isinstance(hidden, dict) or not isinstance(hidden.get("count"), int) or hidden["count"] < 1:
        raise SchemaError(f"{spec_path}: hidden_instances needs an integer count >= 1 and a seed")
    if "seed" not in hidden:
        raise SchemaError(f"{spec_path}: hidden_instances.seed is missing")
    heuristics = []
    for i, item in enumerate(spec["heuristics"]):
        if not isinstance(item, dict) or set(item) != {"file", "expected_rank"}:
            raise SchemaError(f"{spec_path}: heuristics[{i}] needs exactly file and expected_rank")
        path = folder / "heuristics" / str(item["file"])
        if not path.is_file():
            raise SchemaError(f"{spec_path}: heuristics[{i}].file: {path} does not exist")
        code = path.read_text()
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        heuristics.append(Heuristic(path.stem, code, int(item["expected_rank"]),
                                    first.lstrip("#").strip() if first.startswith("#") else ""))
    ranks = sorted(h.expected_rank for h in heuristics)
    if ranks != list(range(1, len(ranks) + 1)):
        raise SchemaError(f"{spec_path}: heuristics expected_rank must be 1..{len(ranks)}, got {ranks}")
    for name in ("generator.py", "checker.py"):
        if not (folder / name).is_file():
            raise SchemaError(f"{folder / name}: missing")
    return ScoreTask(
        task_id=folder.name, title=str(spec["title"]), statement=str(spec["statement"]),
        objective=spec["objective"], signature=str(spec["signature"]),
        time_limit_s=float(spec.get("time_limit_s", 10.0)),
        memory_mb=int(spec.get("memory_mb", 1024)), hidden_count=hidden["count"],
        hidden_seed=hidden["seed"], generator=(folder / "generator.py").read_text(),
        checker=(folder / "checker.py").read_text(),
        heuristics=tuple(sorted(heuristics, key=lambda h: h.expected_rank)))


def read_score_tasks(root: str | Path) -> list[ScoreTask]:
    root = Path(root)
    if not root.is_dir():
        return []
    return [read_score_task(p) for p in sorted(root.iterdir()) if (p / "task.yaml").is_file()]


_INSTANCE_DRIVER = '''\
import json, random, sys
_request = json.loads(sys.stdin.read())
_namespace = {{"__name__": "generator"}}
exec(compile({source!r}, "generator.py", "exec"), _namespace)
_value = _namespace["generate"](_request["index"], random.Random(_request["seed"]))
if not isinstance(_value, dict):
    sys.exit("generate() returned " + type(_value).__name__ + ", expected dict")
sys.stdout.write(json.dumps(_value, sort_keys=True))
'''


def hidden_instances(task: ScoreTask, sandbox: Any) -> list[str]:
    """The task's hidden instances as canonical JSON kwargs, generated in the sandbox."""
    tests = tuple(TestCase(json.dumps({"index": i, "seed": f"{task.task_id}/{task.hidden_seed}/{i}"}))
                  for i in range(task.hidden_count))
    executor = Executor(sandbox, max_in_flight=1)
    try:
        (results,) = executor.run_many([Run(_INSTANCE_DRIVER.format(source=task.generator), tests,
                                            Limits(time_s=min(task.time_limit_s, 10.0)))])
    finally:
        executor.close()
    instances = []
    for i, result in enumerate(results):
        if result.status is not Status.SUCCESS:
            tail = (result.stderr or result.detail).strip().splitlines()[-1:] or [result.status.value]
            raise SchemaError(f"score task {task.task_id!r}: generator failed on instance {i}: {tail[0]}")
        instances.append(stdout_text(result))
    return instances
