"""End-to-end builder tests on synthetic problems through the subprocess sandbox."""

from __future__ import annotations

import dataclasses
import json

import pyarrow.parquet as pq
import pytest

from jaxopt_rl.data.builder import build, default_stages
from jaxopt_rl.data.store import load_dataset
from tests.data.conftest import small_config, write_jsonl
from tests.data.fakes import (
    CRASHING_GENERATOR,
    SUM_FAST,
    SUM_WRONG_BIG,
    sum_problem_dict,
)

TWELVE_GENERATOR = '''\
def generate(method, rng):
    return "12\\n" + " ".join(str(rng.randint(1, 9)) for _ in range(12)) + "\\n"
'''


class Interrupt(BaseException):
    """Stands in for Ctrl-C / a killed job: not an Exception, so the build must stop."""


def _malformed_sources() -> list[dict]:
    missing_statement = sum_problem_dict("sum-missing-field")
    del missing_statement["statement"]
    bad_t0 = sum_problem_dict("sum-bad-t0")
    bad_t0["tests"][1]["expected"] = "6\n"  # the real answer is 5
    return [
        sum_problem_dict("sum-ok"),
        sum_problem_dict("sum-crash", generator=CRASHING_GENERATOR),
        sum_problem_dict("sum-disagree", generator=TWELVE_GENERATOR,
                         correct=(SUM_FAST, SUM_WRONG_BIG)),
        missing_statement,
        bad_t0,
    ]


def test_malformed_sources_are_reported_per_problem_and_never_abort(tmp_path, sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, _malformed_sources())
    report = build(small_config(tmp_path, source), sandbox=sandbox)

    reasons = {r["problem_id"]: r for r in report.rejections}
    assert set(reasons) == {"sum-missing-field", "sum-crash", "sum-disagree", "sum-bad-t0"}
    assert "problems.jsonl:4" in reasons["sum-missing-field"]["reason"]
    assert "missing field 'statement'" in reasons["sum-missing-field"]["reason"]
    assert "ZeroDivisionError" in reasons["sum-crash"]["reason"]
    assert "references disagree" in reasons["sum-disagree"]["reason"]
    # No T+ tests, so the negative that passes T0 trips the false-positive gate.
    assert reasons["sum-disagree"]["stage"] == "06_filter_correctness"
    assert "false-positive" in reasons["sum-disagree"]["reason"]
    assert "T0/001" in reasons["sum-bad-t0"]["reason"]
    assert reasons["sum-bad-t0"]["stage"] == "03_validate"
    assert all(r["outcome"] == "dropped" for r in report.rejections)
    assert report.incomplete == []

    dataset = load_dataset(report.output_dir)
    assert dataset.problem_ids() == ["sum-ok"]
    kinds = [t.kind for t in dataset.tests("sum-ok")]
    assert kinds == sorted(kinds, key=("T0", "T+", "TO").index) and {"T+", "TO"} <= set(kinds)
    assert len(dataset.rejections()) == 4
    funnel = {row["stage"]: row["problems"] for row in dataset.funnel()}
    assert funnel["00_load"] == 5 and funnel["03_validate"] == 3 and funnel["11_non_empty"] == 1


def _counting(stages, calls):
    def wrap(stage):
        def run(problem, context):
            calls.append((stage.name, problem.problem_id))
            return stage.run(problem, context)
        return dataclasses.replace(stage, run=run)
    return [wrap(s) for s in stages]


def test_interrupted_build_resumes_without_redoing_finished_stages(tmp_path, sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001"), sum_problem_dict("sum-002")])
    config = small_config(tmp_path, source)
    stages = default_stages(config)
    k = next(i for i, s in enumerate(stages) if s.name == "07_gen_optimization")

    def interrupted(problem, context):
        raise Interrupt()

    broken = [*stages[:k], dataclasses.replace(stages[k], run=interrupted), *stages[k + 1:]]
    with pytest.raises(Interrupt):
        build(config, sandbox=sandbox, stages=broken)
    finished = {(p.parent.name, p.stem) for p in (tmp_path / "work" / "stages").glob("*/*.json")}
    assert ("06_filter_correctness", "sum-001") in finished or (
        "06_filter_correctness", "sum-002") in finished
    assert not any(stage >= "07" for stage, _ in finished)

    calls: list[tuple[str, str]] = []
    runs_before = sandbox.runs
    report = build(config, sandbox=sandbox, stages=_counting(stages, calls))
    assert not set(calls) & finished  # nothing checkpointed is done again
    assert {(s.name, p) for s in stages for p in ("sum-001", "sum-002")} == set(calls) | finished
    assert sandbox.runs > runs_before
    assert sorted(load_dataset(report.output_dir).problem_ids()) == ["sum-001", "sum-002"]

    # A finished build reruns from checkpoints alone: no stage runs, no sandbox call.
    calls.clear()
    runs_before = sandbox.runs
    build(config, sandbox=sandbox, stages=_counting(stages, calls))
    assert calls == [] and sandbox.runs == runs_before

    # Changing one threshold recomputes only from its stage on.
    changed = small_config(tmp_path, source, correctness_filter={"min_correct": 2,
                                                                  "failure_fraction": 0.5})
    build(changed, sandbox=sandbox, stages=_counting(default_stages(changed), calls))
    assert min(stage for stage, _ in calls) == "06_filter_correctness"


def test_inconclusive_sandbox_leaves_problems_pending_then_resumes(tmp_path, sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001")])
    config = small_config(tmp_path, source, sandbox={"retries": 1})
    sandbox.fail_next_infra = 10**6
    report = build(config, sandbox=sandbox)
    assert [r["outcome"] for r in report.incomplete] == ["pending"]
    assert "inconclusive" in report.incomplete[0]["reason"]
    sandbox.fail_next_infra = 0
    report = build(config, sandbox=sandbox)
    assert report.incomplete == [] and load_dataset(report.output_dir).problem_ids() == ["sum-001"]


def test_rebuild_reproduces_tests_and_expected_outputs_exactly(tmp_path, sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001")])
    tables = []
    for name in ("a", "b"):
        config = small_config(tmp_path / name, source)
        report = build(config, sandbox=sandbox)
        tables.append(pq.read_table(report.output_dir / "tests.parquet"))
        solutions = (report.output_dir / "solutions.jsonl").read_text()
    assert tables[0].equals(tables[1])
    assert tables[0].num_rows > 3
    assert solutions.count("sum-001") == 5


def test_corrupt_or_stale_checkpoints_are_recomputed(tmp_path, sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001")])
    config = small_config(tmp_path, source)
    build(config, sandbox=sandbox)
    stages_dir = tmp_path / "work" / "stages"
    (stages_dir / "12_durations" / "sum-001.json").write_text('{"key": ')  # torn write
    data = json.loads((stages_dir / "13_filterability" / "sum-001.json").read_text())
    data["problem"]["tests"][0]["kind"] = "T9"  # an older, now invalid schema
    (stages_dir / "13_filterability" / "sum-001.json").write_text(json.dumps(data))
    calls: list[tuple[str, str]] = []
    report = build(config, sandbox=sandbox, stages=_counting(default_stages(config), calls))
    assert calls == [("12_durations", "sum-001"), ("13_filterability", "sum-001")]
    assert report.incomplete == []


def test_solutions_run_under_the_problems_interface(tmp_path, sandbox):
    seen = []
    original = sandbox.run

    def spy(program, tests, limits, interface="stdio", checker=None, float_tolerance=None):
        seen.append((program.startswith("import json, random, sys"), interface))
        return original(program, tests, limits, "stdio", checker, float_tolerance)

    sandbox.run = spy
    row = sum_problem_dict("sum-001")
    row.update(interface="function", signature="solve(n: int, values: list[int]) -> list[str]")
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [row])
    build(small_config(tmp_path, source), sandbox=sandbox)
    assert {interface for is_generator, interface in seen if not is_generator} == {"function"}
    assert {interface for is_generator, interface in seen if is_generator} == {"stdio"}
