"""The RiVER report's claims read the numbers: constructed held-out results where one method
writes the best heuristic and the other the common one must give the verdicts the figures say."""

import json
from pathlib import Path

import pytest

from jaxopt_rl.data.mini import mini_score_tasks_dir
from jaxopt_rl.data.score_tasks import read_score_task
from jaxopt_rl.demo.river import with_programs
from jaxopt_rl.demo.river_config import load_river_demo_config, run_name
from jaxopt_rl.demo.river_report import write_river_report
from jaxopt_rl.demo.river_scores import program_key
from jaxopt_rl.model.prompt import extract_program

ROOT = Path(__file__).resolve().parents[2]
SCALES = (1.0, 1000.0)  # two held-out instances, three orders of magnitude apart


def _fixture():
    task = read_score_task(mini_score_tasks_dir() / "trucks")
    code = {h.slug: h.code for h in task.heuristics}
    # reference k (expected rank k) scores k x scale: lower is better, ranks as declared
    # as the evaluation pass stores them: every distinct program, the references' own code and
    # the code extracted from a completion's fenced block (which drops the last newline)
    fence = lambda c: f"```python\n{c}\n```"  # noqa: E731
    results = {"trucks": {program_key(c): {"code": c, "valid": [True, True],
                                           "score": [h.expected_rank * s for s in SCALES]}
                          for h in task.heuristics
                          for c in (h.code, extract_program(fence(h.code)))}}
    best, common, worst = code["largest_first"], code["input_order_greedy"], code["alternate"]
    samples = {"sft": {"trucks": [common, common, common, best]},
               run_name("river", 0): {"trucks": [best] * 4},
               run_name("river_raw_grpo", 0): {"trucks": [common] * 4},
               run_name("river_rank_uniform", 0): {"trucks": [common, common, best, None]}}
    rollouts = {name: with_programs(records) for name, records in {
                run_name("river", 0): [{"step": 1, "problem_id": "trucks", "text": fence(common)},
                                       {"step": 2, "problem_id": "trucks", "text": fence(best)}],
                run_name("river_raw_grpo", 0): [
                    {"step": 1, "problem_id": "trucks", "text": fence(common)},
                    {"step": 2, "problem_id": "trucks", "text": fence(worst)}],
                run_name("river_rank_uniform", 0): [
                    {"step": 2, "problem_id": "trucks", "text": "no program here"}]}.items()}
    training = {name: [{"step": 1, "groups/feedback_resolution": 0.5,
                        "groups/zero_advantage_rate": 0.25}] for name in rollouts}
    return task, results, samples, rollouts, training


def test_claims_and_figures_follow_the_constructed_results(tmp_path):
    task, results, samples, rollouts, training = _fixture()
    config = load_river_demo_config(ROOT / "configs/demo_river.yaml",
                                    ["seeds=[0]", "train.steps=2", "eval.held_out_instances=2",
                                     "eval.resamples=200"])
    paths = write_river_report(tmp_path, config=config, tasks={"trucks": task}, results=results,
                               samples=samples, rollouts=rollouts, training=training,
                               phases_s={"train": 1.0}, wall_s=2.0)
    report = json.loads(paths["report_json"].read_text())
    figures = report["policies"]
    # q: the best reference 1, the worst 0, input_order_greedy (2 x scale) (4 - 2) / (4 - 1)
    assert figures["river"]["held_out_score"] == pytest.approx(1.0)
    assert figures["river_raw_grpo"]["held_out_score"] == pytest.approx(2 / 3)
    # rank-uniform: two common, one best, one completion without a program (scores 0)
    assert figures["river_rank_uniform"]["held_out_score"] == pytest.approx((2 * 2 / 3 + 1) / 4)
    assert figures["river_rank_uniform"]["feasible"] == pytest.approx(0.75)
    share = figures["sft"]["per_task"]["trucks"]["heuristic_share"]
    assert share["input_order_greedy"] == 0.75 and share["largest_first"] == 0.25
    assert report["targets"] == {"trucks": "largest_first"}
    claims = report["claims"]
    assert claims["scale_dominance"]["tasks"] == {"trucks": pytest.approx(1000.0)}
    assert claims["scale_dominance"]["difference"] == pytest.approx(1 / 3)
    assert claims["scale_dominance"]["verdict"] == "held"
    frequency = claims["frequency_dominance"]
    assert frequency["tasks"] == {"trucks": "input_order_greedy"}
    assert frequency["sft_share"] == 0.25 and frequency["difference"] == pytest.approx(1.0)
    assert frequency["verdict"] == "held"
    # best so far: step 1 both 2/3; step 2 RiVER finds the best (1), Raw-GRPO the worst (0)
    assert figures["river"]["best_so_far"]["trucks"] == pytest.approx([2 / 3, 1.0])
    assert figures["river_raw_grpo"]["best_so_far"]["trucks"] == pytest.approx([2 / 3, 2 / 3])
    assert claims["best_so_far"]["seeds_stronger"] == 1
    assert claims["best_so_far"]["verdict"] == "held in 1 of 1 seeds"
    assert figures["river"]["group feedback resolution"] == 0.5
    text = paths["report_md"].read_text()
    assert "**Scale dominance**" in text and ": held." in text
    for name in ("best_so_far.png", "final_scores.png", "heuristic_share.png", "training.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_the_opposite_result_is_reported_as_such(tmp_path):
    task, results, samples, rollouts, training = _fixture()
    river, raw = run_name("river", 0), run_name("river_raw_grpo", 0)
    samples[river], samples[raw] = samples[raw], samples[river]
    config = load_river_demo_config(ROOT / "configs/demo_river.yaml",
                                    ["seeds=[0]", "train.steps=2", "eval.held_out_instances=2",
                                     "eval.resamples=200"])
    report = json.loads(write_river_report(
        tmp_path, config=config, tasks={"trucks": task}, results=results, samples=samples,
        rollouts=rollouts, training=training, phases_s={}, wall_s=0.0)["report_json"].read_text())
    assert report["claims"]["scale_dominance"]["verdict"].startswith("did not hold")
    assert report["claims"]["frequency_dominance"]["verdict"].startswith("did not hold")


class _ScriptedSandbox:
    """Answers each submit with the next scripted list of results (a future of it)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def submit(self, *args, **kwargs):
        from concurrent.futures import Future

        self.calls += 1
        future = Future()
        future.set_result(self.answers.pop(0))
        return future


def test_held_out_results_never_credit_a_failure_and_stop_on_a_run_without_verdict():
    from jaxopt_rl.demo.river import evaluate_programs
    from jaxopt_rl.rollouts.score_tasks import ScoreTaskSet
    from sandbox_cluster.api import Status, TestResult

    tasks = ScoreTaskSet.named("mini")
    ok = TestResult(Status.SUCCESS, 0.01, score=5.0)
    nan = TestResult(Status.SUCCESS, 0.01, score=float("nan"))  # a checker that returned NaN
    late = TestResult(Status.TIMEOUT, 10.0, score=3.0)  # a score must not survive a timeout
    lost = TestResult.infra_error("node gone")
    sandbox = _ScriptedSandbox([ok, nan, late])
    got = evaluate_programs({"trucks": ["p"]}, tasks, {"trucks": ["{}"] * 3}, sandbox, 0,
                            log=lambda _: None)
    (entry,) = got["trucks"].values()
    assert entry["valid"] == [True, False, False] and entry["score"] == [5.0, None, None]
    # no verdict once: retried, and the retry's results are the ones kept
    sandbox = _ScriptedSandbox([ok, lost, ok], [ok, ok, ok])
    (entry,) = evaluate_programs({"trucks": ["p"]}, tasks, {"trucks": ["{}"] * 3}, sandbox, 0,
                                 log=lambda _: None)["trucks"].values()
    assert sandbox.calls == 2 and entry["valid"] == [True] * 3
    # no verdict twice: the evaluation stops, naming the task and the cause
    sandbox = _ScriptedSandbox([ok, lost, ok], [lost, ok, ok])
    with pytest.raises(RuntimeError, match=r"'trucks'.*no verdict twice.*node gone"):
        evaluate_programs({"trucks": ["p"]}, tasks, {"trucks": ["{}"] * 3}, sandbox, 0,
                          log=lambda _: None)
