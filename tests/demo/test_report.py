"""The demo's report: report.json's exact schema and values against hand-built dumps whose
pass@1 is known by construction, the verdict on chosen numbers, the duration ratios against
a hand-computed dump, and the figures as valid PNGs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from jaxopt_rl.demo import report as rep
from jaxopt_rl.evaluation.dump import FORMAT, VERSION, check_dump
from jaxopt_rl.evaluation.replay import replay

KINDS = ["T0", "T+", "TO", "TO"]
H = 3  # references per problem
G = 4  # samples per problem
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _references(p: int) -> np.ndarray:
    """ref_HT: reference h runs (h + 1) times the problem's base duration on each test."""
    base_T = np.array([0.01 * (t + 1) * (p + 1) for t in range(len(KINDS))])
    return np.array([(h + 1) * base_T for h in range(H)])


def _sample(g: int, how: str, ref_HT: np.ndarray) -> dict:
    """fast: a copy of the fastest reference; slow: 10x the slowest; fail: wrong answer on
    T0; none: no program extracted."""
    if how == "none":
        return {"id": f"s{g}", "program": None, "status": None, "duration_s": None,
                "timing": None}
    status = ["success"] * len(KINDS)
    duration = {"fast": ref_HT.min(axis=0), "slow": 10 * ref_HT.max(axis=0),
                "fail": ref_HT.min(axis=0)}[how]
    if how == "fail":
        status[0] = "wrong_answer"
    return {"id": f"s{g}", "program": f"print({g})", "status": status,
            "duration_s": [float(d) for d in duration], "timing": ["fleet"] * len(KINDS)}


def _dump(model: str, behaviour, problems=3, prefix="p") -> dict:
    """behaviour(p, g) -> fast | slow | fail | none; fresh references re-executed once."""
    out = []
    for p in range(problems):
        ref_HT = _references(p)
        ids = [f"r{h}" for h in range(H)]
        out.append({
            "problem_id": f"{prefix}{p}", "difficulty": "easy",
            "tests": {"ids": [f"t{t}" for t in range(len(KINDS))], "kinds": KINDS,
                      "limit_s": [10.0] * len(KINDS), "io_chars": [10] * len(KINDS)},
            "stored_references": {"ids": ids, "duration_s": ref_HT.T.tolist(),
                                  "usable": [[True] * H for _ in KINDS]},
            "fresh_references": {"ids": ids, "runs": [{
                "status": [["success"] * len(KINDS) for _ in range(H)],
                "duration_s": ref_HT.tolist(), "timing": [["fleet"] * len(KINDS)] * H}]},
            "samples": [_sample(g, behaviour(p, g), ref_HT) for g in range(G)],
        })
    dump = {"format": FORMAT, "version": VERSION, "model": model, "n": G,
            "created_at": "2026-01-01T00:00:00Z",
            "dataset": {"name": "synthetic", "root": "-", "fingerprint": "f" * 16,
                        "campaigns": {}},
            "sampling": {}, "timing_pass": {"pass_id": "x", "shuffled": True,
                                            "references_included": True, "order": [],
                                            "sandbox_state": {}},
            "problems": out}
    check_dump(dump)
    return dump


BEHAVIOURS = {
    "fast": lambda p, g: "fast",
    "slow": lambda p, g: "slow",
    "fail": lambda p, g: "fail",
    # problem p: the first p + 1 samples correct but slow, the rest fail (one has no program)
    "mixed": lambda p, g: "slow" if g <= p else ("none" if (p, g) == (0, 3) else "fail"),
}
# pass@1 by construction: p100 = mean over problems of (passing samples / G); p_tau < 100 is
# 1 for copies of the fastest reference (q_QP = 0) and 0 for 10x the slowest (q_QP = 1)
EXPECTED = {"fast": {"p100": 1.0, "p50": 1.0, "p30": 1.0, "p10": 1.0},
            "slow": {"p100": 1.0, "p50": 0.0, "p30": 0.0, "p10": 0.0},
            "fail": {"p100": 0.0, "p50": 0.0, "p30": 0.0, "p10": 0.0},
            "mixed": {"p100": np.mean([(p + 1) / G for p in range(3)]), "p50": 0.0,
                      "p30": 0.0, "p10": 0.0}}


@pytest.fixture(scope="module")
def dumps():
    return {how: _dump(how, fn) for how, fn in BEHAVIOURS.items()}


@pytest.fixture(scope="module")
def evals(dumps):
    return {how: replay(dump, references="fresh", resamples=200) for how, dump in dumps.items()}


@pytest.fixture(scope="module")
def held_out():
    return {name: replay(_dump(how, BEHAVIOURS[how], prefix="h"), references="fresh",
                         resamples=200)
            for name, how in (("sft", "slow"), ("qp_p30", "slow"), ("baseline", "fail"))}


TRAINING = {"qp_p30": [{"step": s, "reward/mean": 0.1 * s, "groups/zero_advantage_rate": 0.5}
                       for s in range(1, 6)],
            "baseline": [{"step": 1, "reward/mean": None, "groups/zero_advantage_rate": 1.0},
                         {"step": 2, "reward/mean": 0.3, "groups/zero_advantage_rate": 0.25}]}
SETTINGS = {"problems": 3, "G": G, "steps": 5, "seeds": [0, 1], "lr": 3e-4,
            "sft checkpoint": "runs/sft/ckpt | final", "env": {"name": "qp_p30"}}


def _write(tmp_path, evals, dumps, assignment, held=None):
    return rep.write_report(
        tmp_path, evals={name: evals[how] for name, how in assignment.items()}, held_out=held,
        dumps={name: dumps[how] for name, how in assignment.items()}, training=TRAINING,
        phases_s={"sft_load": 1.5, "train_qp_p30": 100.0, "train_baseline": 99.0,
                  "timing_pass": 40.0}, wall_s=250.0, baseline_env="mc", settings=SETTINGS)


SEPARATED = {"sft": "slow", "qp_p30": "fast", "baseline": "mixed"}
NOT_SEPARATED = {"sft": "slow", "qp_p30": "fail", "baseline": "mixed"}


def _check_schema(report: dict) -> None:
    assert set(report) == {"runs", "baseline_env", "wall_s", "phases_s"}
    assert set(report["runs"]) == {"sft", "qp_p30", "baseline"}
    assert isinstance(report["baseline_env"], str) and isinstance(report["wall_s"], float)
    assert all(isinstance(k, str) and isinstance(v, float) for k, v in report["phases_s"].items())
    for figures in report["runs"].values():
        assert set(figures) == {"p100", "p50", "p30", "p10"}
        for entry in figures.values():
            assert set(entry) == {"pass@1", "ci"}
            value, ci = entry["pass@1"], entry["ci"]
            assert isinstance(value, float) and isinstance(ci, list) and len(ci) == 2
            assert all(isinstance(x, float) for x in ci)
            assert 0.0 <= ci[0] <= value <= ci[1] <= 1.0


def test_report_json_has_the_exact_schema_and_the_constructed_values(tmp_path, evals, dumps):
    paths = _write(tmp_path, evals, dumps, SEPARATED)
    report = json.loads(paths["report_json"].read_text())
    _check_schema(report)
    assert report["baseline_env"] == "mc" and report["wall_s"] == 250.0
    assert report["phases_s"]["train_qp_p30"] == 100.0
    for name, how in SEPARATED.items():
        for key, expected in EXPECTED[how].items():
            assert report["runs"][name][key]["pass@1"] == pytest.approx(expected, abs=1e-9)
    # constant per-problem values have a degenerate CI; the mixed run's CI spans its problems
    assert report["runs"]["qp_p30"]["p30"]["ci"] == [1.0, 1.0]
    assert report["runs"]["sft"]["p30"]["ci"] == [0.0, 0.0]
    low, high = report["runs"]["baseline"]["p100"]["ci"]
    assert 1 / G <= low < 0.5 < high <= 3 / G
    assert set(rep.verdict(report)) == {"p30_separated", "p100_kept",
                                        "p30_gap_low_minus_high", "p100_drop_points"}


def test_verdict_on_the_end_to_end_cases(tmp_path, evals, dumps):
    good = json.loads(_write(tmp_path / "a", evals, dumps, SEPARATED)["report_json"].read_text())
    assert rep.verdict(good) == {"p30_separated": True, "p100_kept": True,
                                 "p30_gap_low_minus_high": 1.0, "p100_drop_points": 0.0}
    paths = _write(tmp_path / "b", evals, dumps, NOT_SEPARATED)
    bad = rep.verdict(json.loads(paths["report_json"].read_text()))
    assert bad == {"p30_separated": False, "p100_kept": False,
                   "p30_gap_low_minus_high": 0.0, "p100_drop_points": 100.0}
    text = paths["report_md"].read_text()
    assert "Faster correct code: not shown" in text and "Correctness kept: no" in text
    assert "not both met" in text


def _runs(qp_p30_low, sft_high, base_high, sft_p100, qp_p100):
    def r(p30_ci, p100):
        return {"p100": {"pass@1": p100, "ci": [p100, p100]}, "p50": {"pass@1": 0, "ci": [0, 0]},
                "p30": {"pass@1": sum(p30_ci) / 2, "ci": list(p30_ci)},
                "p10": {"pass@1": 0, "ci": [0, 0]}}

    return {"runs": {"sft": r((0.0, sft_high), sft_p100),
                     "qp_p30": r((qp_p30_low, 0.9), qp_p100),
                     "baseline": r((0.0, base_high), 0.5)},
            "baseline_env": "mc", "wall_s": 1.0, "phases_s": {}}


@pytest.mark.parametrize("numbers, separated, kept, gap, drop", [
    ((0.41, 0.40, 0.20, 0.50, 0.47), True, True, 0.01, 3.0),      # a 3-point drop is kept
    ((0.40, 0.40, 0.20, 0.50, 0.469), False, False, 0.0, 3.1),    # touching bounds: not above
    ((0.40, 0.20, 0.45, 0.50, 0.60), False, True, -0.05, -10.0),  # baseline's bound decides
    ((0.30, 0.10, 0.20, 0.50, 0.50), True, True, 0.10, 0.0),
])
def test_verdict_on_chosen_numbers(numbers, separated, kept, gap, drop):
    ruling = rep.verdict(_runs(*numbers))
    assert ruling["p30_separated"] is separated and ruling["p100_kept"] is kept
    assert ruling["p30_gap_low_minus_high"] == pytest.approx(gap, abs=1e-12)
    assert ruling["p100_drop_points"] == pytest.approx(drop, abs=1e-9)


@pytest.mark.parametrize("sft_p100, qp_p100, line", [
    (0.50, 0.60, "p100 kept (QP-p30 - SFT start >= -3 points): yes (+10.0 points)"),
    (0.50, 0.47, "p100 kept (QP-p30 - SFT start >= -3 points): yes (-3.0 points)"),
    (0.50, 0.469, "p100 kept (QP-p30 - SFT start >= -3 points): no (-3.1 points)"),
])
def test_final_screen_gives_the_p100_change_from_the_sft_start(sft_p100, qp_p100, line):
    """A gain reads "+", a loss "-": the number is QP-p30's p100 minus the SFT start's."""
    screen = rep.final_screen({}, _runs(0.5, 0.4, 0.2, sft_p100, qp_p100))
    assert line in screen.splitlines()


def test_report_md_details_and_figures(tmp_path, evals, dumps, held_out):
    paths = _write(tmp_path, evals, dumps, SEPARATED, held=held_out)
    assert set(paths) == {"report_json", "report_details", "report_md", "p_tau", "training",
                          "durations"}
    for key in ("p_tau", "training", "durations"):
        data = paths[key].read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        with Image.open(paths[key]) as image:
            image.verify()
    text = paths["report_md"].read_text()
    assert rep.HELD_OUT_NOTE in text and "3 held-out problems" in text
    assert "Faster correct code: yes" in text and "Correctness kept: yes" in text
    assert "Both criteria of the demo" in text and "are met in this run" in text
    assert "one shared timing pass (id x; shuffled: yes; references re-executed" in text
    assert "| QP-p30 | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] |" in text
    assert "| lr | 0.0003 |" in text and "runs/sft/ckpt \\| final" in text  # pipes escaped
    assert "| **wall** | **250.0** | |" in text and "| train_qp_p30 | 100.0 | 40 % |" in text
    assert "| p2 | 0.0 | 100.0 | 0.0 |" in text  # per-problem p30: sft, qp_p30, baseline
    details = json.loads(paths["report_details"].read_text())
    assert details["verdict"] == rep.verdict(json.loads(paths["report_json"].read_text()))
    assert details["held_out"]["baseline"]["p100"]["pass@1"] == 0.0
    assert details["held_out"]["sft"]["p100"]["pass@1"] == 1.0
    assert details["per_problem"]["p0"]["baseline"]["c_strict"] == 1
    assert details["training"]["qp_p30"]["last_step"] == 5
    # fast copies run at the fastest reference: half the median reference on every test
    assert details["durations"]["qp_p30"] == {"measurements": 3 * G * 2, "median": 0.5,
                                              "faster_than_median_reference": 1.0}
    assert details["durations"]["sft"]["median"] == pytest.approx(10 * 3 / 2)
    screen = rep.final_screen(paths, json.loads(paths["report_json"].read_text()))
    assert str(paths["report_md"]) in screen and str(paths["durations"]) in screen
    assert "p30 separated" in screen and "yes (+100.0 points)" in screen


def test_smoke_mode_without_held_out_and_with_empty_training(tmp_path, evals, dumps):
    paths = rep.write_report(
        tmp_path, evals={name: evals[how] for name, how in NOT_SEPARATED.items()},
        held_out=None, dumps={}, training={}, phases_s={}, wall_s=0.0, baseline_env="mc",
        settings={})
    _check_schema(json.loads(paths["report_json"].read_text()))
    text = paths["report_md"].read_text()
    assert "Not evaluated in this run (smoke mode)." in text
    assert "a timing pass (id not recorded;" in text
    assert all(paths[k].read_bytes().startswith(PNG_MAGIC)
               for k in ("p_tau", "training", "durations"))


def test_bad_inputs_are_refused_before_anything_is_written(tmp_path, evals, dumps):
    with pytest.raises(rep.ReportError, match="baseline"):
        rep.write_report(tmp_path, evals={"sft": evals["slow"], "qp_p30": evals["fast"]},
                         held_out=None, dumps={}, training={}, phases_s={}, wall_s=1.0,
                         baseline_env="mc", settings={})
    broken = json.loads(json.dumps(evals["fail"]))
    broken["eval"]["pass_at"]["1"]["p30"]["value"] = None  # every sample inconclusive
    with pytest.raises(rep.ReportError, match=r"evals\['baseline'\]: pass@1 p30 is undefined"):
        rep.write_report(tmp_path, evals={"sft": evals["slow"], "qp_p30": evals["fast"],
                                          "baseline": broken},
                         held_out=None, dumps={}, training={}, phases_s={}, wall_s=1.0,
                         baseline_env="mc", settings={})
    assert not list(tmp_path.iterdir())


# ---- duration ratios against a hand-computed dump --------------------------------------------


def _problem(pid, kinds, fresh_runs, samples, refs=3):
    t = len(kinds)
    ids = [f"r{h}" for h in range(refs)]
    return {"problem_id": pid, "difficulty": "easy",
            "tests": {"ids": [f"t{i}" for i in range(t)], "kinds": kinds,
                      "limit_s": [10.0] * t, "io_chars": [1] * t},
            "stored_references": {"ids": ids, "duration_s": [[0.1] * refs] * t,
                                  "usable": [[True] * refs] * t},
            "fresh_references": None if fresh_runs is None else {"ids": ids, "runs": fresh_runs},
            "samples": [{"id": f"s{g}", "program": None if s is None else "x",
                         "status": None if s is None else s[0],
                         "duration_s": None if s is None else s[1],
                         "timing": None if s is None else (s[2] if len(s) > 2 else ["fleet"] * t)}
                        for g, s in enumerate(samples)]}


def _ratio_dump() -> dict:
    ok, wa = "success", "wrong_answer"
    run1 = {"status": [[ok, ok, ok], [ok, ok, ok], [ok, ok, ok]],
            "duration_s": [[0.01, 0.1, 0.2], [0.01, 0.2, 0.4], [0.01, 0.5, 9.0]]}
    # reference r2 errs on test 2 in the second run: unusable there, so its 9 s never counts
    run2 = {"status": [[ok, ok, ok], [ok, ok, ok], [ok, ok, "runtime_error"]],
            "duration_s": [[0.01, 0.1, 0.2], [0.01, 0.4, 0.4], [0.01, 0.5, 9.0]]}
    # medians of the usable references' rerun means: test 1 (0.1, 0.3, 0.5) -> 0.3,
    # test 2 (0.2, 0.4) -> 0.3
    a = _problem("a", ["T0", "TO", "TO"], [run1, run2], [
        ([ok, ok, ok], [0.01, 0.15, 0.6]),                                  # 0.5, 2.0
        ([wa, ok, ok], [0.01, 0.15, 0.6]),                                  # T0 wrong: none
        None,                                                               # no program
        ([ok, "timeout", ok], [0.01, 10.0, 0.3], ["fleet", "cap", "fleet"]),  # 10 / 0.3, 1.0
        ([ok, ok, ok], [0.01, 0.3, 0.05], ["fleet", "fleet", "local"]),     # 1.0, untimed
        ([ok, ok, wa], [0.01, 0.3, 0.3]),                                   # TO wrong: none
        (["infra_error", ok, ok], [0.0, 0.3, 0.3]),                         # inconclusive
        (["timeout", ok, ok], [10.0, 0.3, 0.3]),                            # T0 timeout fails
    ])
    err = "runtime_error"
    # problem b: test 1's references all fail (no median), test 2 has one usable reference
    b_run = {"status": [[ok, err, ok], [ok, err, err]],
             "duration_s": [[0.01, 0.1, 0.2], [0.01, 0.1, 0.3]]}
    b = _problem("b", ["T+", "TO", "TO"], [b_run], [([ok, ok, ok], [0.01, 0.1, 0.1])], refs=2)
    # problem c: no re-executed references at all
    c = _problem("c", ["T0", "TO"], None, [([ok, ok], [0.01, 0.1])], refs=1)
    dump = {"format": FORMAT, "version": VERSION, "model": "m", "n": 8,
            "dataset": {"fingerprint": "f"}, "timing_pass": {}, "problems": [a, b, c]}
    check_dump(dump)
    return dump


def test_duration_ratios_match_the_hand_computed_values():
    expected = [0.15 / 0.3, 0.6 / 0.3, 10.0 / 0.3, 0.3 / 0.3, 0.3 / 0.3, 0.1 / 0.2]
    ratios = rep.duration_ratios(_ratio_dump())
    assert ratios.dtype == np.float64
    np.testing.assert_allclose(ratios, expected, rtol=1e-5)


def test_duration_ratios_of_the_constructed_models(dumps):
    # fast copies: fastest reference / median reference (the h = 1 of 1, 2, 3) = 0.5 everywhere
    np.testing.assert_allclose(rep.duration_ratios(dumps["fast"]), 0.5, rtol=1e-6)
    assert rep.duration_ratios(dumps["fast"]).size == 3 * G * 2
    assert rep.duration_ratios(dumps["fail"]).size == 0
    mixed = rep.duration_ratios(dumps["mixed"])
    assert mixed.size == (1 + 2 + 3) * 2 and np.allclose(mixed, 15.0, rtol=1e-6)
    assert not any(math.isnan(x) for x in mixed)
