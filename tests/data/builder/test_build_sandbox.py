"""The builder through the real embedded sandbox (skipped, saying why, if it cannot start)."""

from __future__ import annotations

import pytest

from jaxopt_rl.data.builder import build
from jaxopt_rl.data.store import load_dataset
from tests.data.conftest import small_config, write_jsonl
from tests.data.fakes import CRASHING_GENERATOR, sum_problem_dict


@pytest.fixture(scope="module")
def embedded_sandbox():
    try:
        from sandbox_cluster import Limits, Status, TestCase, connect

        sandbox = connect()
        (result,) = sandbox.run("print(int(input()) + 1)", [TestCase("1\n", "2\n")], Limits(time_s=5))
    except Exception as err:  # the pool needs nsjail/bwrap and cgroups
        pytest.skip(f"embedded sandbox cannot start here: {type(err).__name__}: {err}")
    if result.status is not Status.SUCCESS:
        sandbox.close()
        pytest.skip(f"embedded sandbox is not usable here: {result.status} {result.detail}")
    yield sandbox
    sandbox.close()


def test_build_through_the_embedded_sandbox(tmp_path, embedded_sandbox):
    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001"),
                         sum_problem_dict("sum-crash", generator=CRASHING_GENERATOR)])
    config = small_config(tmp_path, source, correctness_campaign={"attempts": 1},
                          optimization_campaign={"attempts": 2})
    report = build(config, sandbox=embedded_sandbox)
    assert report.incomplete == []
    (rejected,) = report.rejections
    assert rejected["problem_id"] == "sum-crash" and "ZeroDivisionError" in rejected["reason"]
    dataset = load_dataset(report.output_dir)
    assert dataset.problem_ids() == ["sum-001"]
    ref = dataset.reference_times("sum-001")
    assert ref.mask_TH.any() and (ref.duration_TH[ref.mask_TH] > 0).all()
    assert (ref.duration_TH[ref.mask_TH] < 5.0).all()


def test_cli_build_prints_the_funnel_and_resumes(tmp_path, embedded_sandbox, capsys):
    from jaxopt_rl.cli import main

    source = tmp_path / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001")])
    config = tmp_path / "build.yaml"
    config.write_text(
        f"output_dir: {tmp_path / 'out'}\nwork_dir: {tmp_path / 'work'}\n"
        f"source: {{kind: jsonl, paths: [{source}]}}\n"
        "correctness_campaign: {attempts: 1, rounds: 1}\n"
        "optimization_campaign: {attempts: 1, rounds: 1}\n"
        "correctness_filter: {min_correct: 2}\n")
    assert main(["data", "build", str(config), "durations.repeats=2"]) == 0
    printed = capsys.readouterr().out
    assert "build funnel" in printed and "13_filterability" in printed
    assert main(["data", "build", str(config), "durations.repeats=2"]) == 0  # from checkpoints
    assert load_dataset(tmp_path / "out").manifest["build_config"]["durations"]["repeats"] == 2
