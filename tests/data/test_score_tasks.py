"""Score-based task folders: validation, hidden instances generated in the sandbox, and the
shipped tasks' checkers and heuristics (run in the real embedded sandbox)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.data.mini import mini_score_tasks_dir
from jaxopt_rl.data.schema import SchemaError
from jaxopt_rl.data.score_tasks import hidden_instances, read_score_task
from sandbox_cluster.api import Limits, Status, TestCase

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


# -- shipped task content: checkers and heuristics, run in the real sandbox -----------------------
#
# Every folder under jaxopt_rl/data/mini/score_tasks/ is exercised the way training uses it: the
# hidden instances come from its generator (in the sandbox), every heuristic runs on all of them
# as a function program with the task's checker, and the checker's scores must (a) exist for
# every heuristic answer and (b) order the heuristics as `expected_rank` declares, by mean
# objective. Malformed answers are fed through the same path and must come back as
# wrong_answer with detail "checker: invalid" (the checker returned "invalid" cleanly; a checker
# that raises gets a different verdict). The generic malformed answers assume the task's answer
# is lines of integer tokens, which every shipped task uses.


@pytest.fixture(scope="module")
def real_sandbox():
    from sandbox_cluster import connect

    try:
        sb = connect()
        probe = sb.run("def solve(x):\n    return [str(x)]\n", [TestCase('{"x": 1}')],
                       Limits(time_s=5), interface="function")
    except Exception as err:  # any start-up failure means "no sandbox on this machine"
        pytest.skip(f"embedded sandbox cannot start on this machine: {err!r}")
    if probe[0].status is not Status.SUCCESS:
        sb.close()
        pytest.skip(f"embedded sandbox cannot run programs here: {probe[0].status} "
                    f"{probe[0].detail or probe[0].stderr[-200:]}")
    yield sb
    sb.close()


_RUNS: dict[str, tuple] = {}


def shipped_runs(task_id, sb):
    """(task, instances, {slug: [TestResult per instance]}), computed once per task."""
    if task_id not in _RUNS:
        task = read_score_task(mini_score_tasks_dir() / task_id)
        instances = hidden_instances(task, sb)
        tests = [TestCase(x) for x in instances]
        limits = Limits(time_s=task.time_limit_s, memory_mb=task.memory_mb)
        results = {h.slug: sb.run(h.code, tests, limits, interface="function",
                                  checker=task.checker) for h in task.heuristics}
        _RUNS[task_id] = (task, instances, results)
    return _RUNS[task_id]


def answer_lines(result):
    return result.stdout.decode().split("\n") if result.stdout else []


@pytest.mark.parametrize("task_id", SHIPPED)
def test_shipped_heuristics_are_feasible_and_rank_as_declared(task_id, real_sandbox):
    task, instances, results = shipped_runs(task_id, real_sandbox)
    assert instances == hidden_instances(task, real_sandbox)  # the generator is seeded
    means = {}
    for h in task.heuristics:
        for i, result in enumerate(results[h.slug]):
            assert result.status is Status.SUCCESS, (
                f"{task_id}/{h.slug} on hidden instance {i}: {result.status} {result.detail} "
                f"{result.stderr[-300:]}")
            assert result.score is not None and math.isfinite(result.score)
        means[h.slug] = sum(r.score for r in results[h.slug]) / len(instances)
    sign = 1.0 if task.objective == "minimize" else -1.0
    by_mean = sorted(means, key=lambda slug: sign * means[slug])
    declared = [h.slug for h in task.heuristics]  # sorted by expected_rank
    assert by_mean == declared, f"{task_id}: mean objective per heuristic {means}"
    assert len(set(means.values())) == len(means), f"{task_id}: tied means {means}"


def _replace_first_token(lines, token):
    first = lines[0].split()
    return [" ".join([token, *first[1:]]), *lines[1:]]


GENERIC_MALFORMED = {
    "garbage_line": lambda lines, kw: ["not an answer", *lines],
    "repeated_line": lambda lines, kw: [*lines, lines[0]],
    "fractional_token": lambda lines, kw: _replace_first_token(lines, "1.5"),
    "negative_token": lambda lines, kw: _replace_first_token(lines, "-1"),
    "huge_token": lambda lines, kw: _replace_first_token(lines, str(10**12)),
}
SPECIFIC_MALFORMED = {
    "tour": {
        "empty": lambda lines, kw: [],
        "missing_stop": lambda lines, kw: lines[:-1],
        "stop_twice": lambda lines, kw: [*lines[:-1], lines[0]],
        "stop_out_of_range": lambda lines, kw: [*lines[:-1], str(len(kw["xs"]))],
    },
    "packing": {
        "empty": lambda lines, kw: [],
        "missing_panel": lambda lines, kw: lines[:-1],
        "all_in_one_corner": lambda lines, kw: ["0 0"] * len(lines),
        "sticks_out_right": lambda lines, kw: [f"{kw['width'] - kw['widths'][0] + 1} 0",
                                               *lines[1:]],
        "below_the_roll": lambda lines, kw: [f"0 {-kw['heights'][0]}", *lines[1:]],
    },
}
MALFORMED_CASES = [(task_id, name) for task_id in SHIPPED
                   for name in [*GENERIC_MALFORMED, *SPECIFIC_MALFORMED.get(task_id, {})]]


@pytest.mark.parametrize("task_id, case", MALFORMED_CASES)
def test_shipped_checkers_reject_malformed_answers(task_id, case, real_sandbox):
    task, instances, results = shipped_runs(task_id, real_sandbox)
    best = results[task.heuristics[0].slug]
    # the first hidden instance whose best answer has lines to mutate
    index = next(i for i, r in enumerate(best) if answer_lines(r) != [""])
    kwargs = json.loads(instances[index])
    mutate = {**GENERIC_MALFORMED, **SPECIFIC_MALFORMED.get(task_id, {})}[case]
    lines = mutate(answer_lines(best[index]), kwargs)
    program = f"def solve(**kwargs):\n    return {lines!r}\n"
    (result,) = real_sandbox.run(program, [TestCase(instances[index])],
                                 Limits(time_s=task.time_limit_s), interface="function",
                                 checker=task.checker)
    assert result.status is Status.WRONG_ANSWER and result.detail == "checker: invalid", (
        f"{task_id}/{case}: {result.status} {result.detail!r} score={result.score}")


# -- the two geometric checkers against brute force (in process: they are trusted sources) -------

def _load_check(task_id):
    namespace: dict = {}
    exec(compile((mini_score_tasks_dir() / task_id / "checker.py").read_text(), task_id, "exec"),
         namespace)
    return namespace["check"]


@st.composite
def tour_case(draw):
    n = draw(st.integers(1, 7))
    xs = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    ys = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    if draw(st.booleans()):
        lines = [str(i) for i in draw(st.permutations(range(n)))]
    else:
        lines = draw(st.lists(st.sampled_from(["0", "1", "2", "7", "-1", "x", "", " 3", "1 2"]),
                              max_size=n + 1))
    return {"xs": xs, "ys": ys}, lines


@given(tour_case())
def test_tour_checker_matches_brute_force(case):
    kwargs, lines = case
    n = len(kwargs["xs"])
    verdict = _load_check("tour")(json.dumps(kwargs), "\n".join(lines), None)
    tokens = [line.strip() for line in lines]
    valid = (len(tokens) == n and all(t.isdigit() for t in tokens)
             and sorted(int(t) for t in tokens) == list(range(n)))
    if not valid:
        assert verdict == "invalid"
        return
    order = [int(t) for t in tokens]
    length = 0.0
    for k in range(n):
        a, b = order[k], order[(k + 1) % n]
        length += ((kwargs["xs"][a] - kwargs["xs"][b]) ** 2
                   + (kwargs["ys"][a] - kwargs["ys"][b]) ** 2) ** 0.5
    assert verdict == pytest.approx(length, abs=1e-5)


@st.composite
def packing_case(draw):
    width = draw(st.integers(1, 8))
    n = draw(st.integers(1, 5))
    widths = draw(st.lists(st.integers(1, width), min_size=n, max_size=n))
    heights = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    corners = draw(st.lists(st.tuples(st.integers(-1, 8), st.integers(-1, 8)),
                            min_size=n, max_size=n))
    return {"width": width, "widths": widths, "heights": heights}, corners


@given(packing_case())
def test_packing_checker_matches_cell_painting(case):
    kwargs, corners = case
    verdict = _load_check("packing")(json.dumps(kwargs),
                                     "\n".join(f"{x} {y}" for x, y in corners), None)
    painted = set()
    valid = True
    for (x, y), w, h in zip(corners, kwargs["widths"], kwargs["heights"]):
        if x < 0 or y < 0 or x + w > kwargs["width"]:
            valid = False
        for cx in range(x, x + w):
            for cy in range(y, y + h):
                if (cx, cy) in painted:  # a unit cell covered twice: overlapping interiors
                    valid = False
                painted.add((cx, cy))
    if not valid:
        assert verdict == "invalid"
    else:
        assert verdict == max(y + h for (_, y), h in zip(corners, kwargs["heights"]))
