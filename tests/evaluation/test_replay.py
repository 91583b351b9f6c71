"""Replayed evaluation: pass@k(p_tau) against a slow NumPy-loop reference of the design
(docs/design/dataset-eval.md §5.3-5.4), bootstrap CIs against a loop, calibration without any
sandbox, win rates, and the CLI's outputs and refusals."""

from __future__ import annotations

import copy
import itertools
import json
import math

import numpy as np
import pytest

from jaxopt_rl.evaluation import replay as rp
from jaxopt_rl.evaluation.dump import DumpError, check_dump, write_dump
from tests.evaluation.dumps import make_dump

# ---- slow references ---------------------------------------------------------------------


def _psi_gamma(d, alpha, beta, cap=10.0):
    d = cap if (d is None or not math.isfinite(d) or d <= 0) else d
    return min(cap, max(0.0, alpha * d + beta))


def _slow_pass_at(dump, tau, k, alpha=1.0, beta=0.0):
    """docs/design/dataset-eval.md §5.2-5.4 with plain loops: c~, q_QP (ties min, candidate
    inserted), pass@k."""
    per_problem = []
    for problem in dump["problems"]:
        kinds = problem["tests"]["kinds"]
        stored = problem["stored_references"]
        refs = [[_psi_gamma(stored["duration_s"][t][h], alpha, beta) if stored["usable"][t][h]
                 else None for h in range(len(stored["ids"]))] for t in range(len(kinds))]
        n, m = 0, 0
        for sample in problem["samples"]:
            n += 1
            if sample["status"] is None:
                continue
            s = sample["status"]
            ok = all(s[t] == "success" for t, k_ in enumerate(kinds) if k_ != "TO") and all(
                s[t] in ("success", "timeout") for t, k_ in enumerate(kinds) if k_ == "TO")
            if not ok:
                continue
            if tau >= 100:
                m += 1
                continue
            d = sample["duration_s"]
            opt = [t for t, k_ in enumerate(kinds) if k_ == "TO"
                   and any(x is not None for x in refs[t])]
            if not opt:
                continue
            a_y = np.mean([sum(1 for x in refs[t] if x is not None and x < d[t])
                           / sum(1 for x in refs[t] if x is not None) for t in opt])
            a_h = []
            for h in range(len(stored["ids"])):
                mine = [t for t in opt if refs[t][h] is not None]
                if not mine:
                    continue
                values = []
                for t in mine:
                    pool = [x for j, x in enumerate(refs[t]) if j != h and x is not None] + [d[t]]
                    values.append(sum(1 for x in pool if x < refs[t][h]) / len(pool))
                a_h.append(np.mean(values))
            b = sum(1 for a in a_h if a < a_y - 1e-6)
            q = b / max(1, len(a_h))
            if q <= tau / 100:
                m += 1
        kk = min(k, n)
        per_problem.append(1 - math.comb(n - m, kk) / math.comb(n, kk))
    return float(np.mean(per_problem))


# ---- tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_pass_at_k_p_tau_matches_the_slow_reference(seed):
    dump = make_dump(seed=seed, problems=5, n=6)
    result = rp.replay(dump, resamples=50)["eval"]
    for k in (1, 10):
        for tau in (100, 50, 30, 10):
            assert result["pass_at"][str(k)][f"p{tau}"]["value"] == pytest.approx(
                _slow_pass_at(dump, tau, k), abs=1e-6), (k, tau)


def test_calibration_changes_the_numbers_as_the_slow_reference_says():
    dump = make_dump(seed=2, problems=6, n=8)
    env = rp.eval_env(["calibration.kind=affine", "calibration.alpha=1.5",
                       "calibration.beta_s=0.01"])
    shifted = rp.replay(dump, env, resamples=20)["eval"]["pass_at"]["1"]
    raw = rp.replay(dump, resamples=20)["eval"]["pass_at"]["1"]
    assert shifted["p30"]["value"] == pytest.approx(_slow_pass_at(dump, 30, 1, 1.5, 0.01),
                                                    abs=1e-6)
    assert shifted["p30"]["value"] != raw["p30"]["value"]  # the drift makes raw refs too fast
    assert shifted["p100"]["value"] == raw["p100"]["value"]  # p100 ignores speed


def test_bootstrap_matches_a_loop_over_the_same_resamples():
    values_MP = np.random.default_rng(0).random((3, 7))
    values_MP[1, 2] = np.nan
    fast = rp.bootstrap_ci(values_MP, resamples=200, level=0.9, seed=5)
    index = np.random.default_rng(5).integers(0, 7, (200, 7))
    for m in range(3):
        means = []
        for row in index:
            picked = [values_MP[m, i] for i in row if not np.isnan(values_MP[m, i])]
            means.append(sum(picked) / len(picked))
        means.sort()
        expected = [np.quantile(means, 0.05), np.quantile(means, 0.95)]
        assert fast[m] == pytest.approx(expected, abs=1e-12)
    # a constant metric has a zero-width interval; the mean lies inside a wide one
    assert rp.bootstrap_ci(np.full((1, 5), 0.4))[0] == pytest.approx([0.4, 0.4])


def test_replay_never_contacts_a_sandbox(monkeypatch, tmp_path):
    import sandbox_cluster
    import sandbox_cluster.connecting
    import sandbox_cluster.pool

    def refuse(*args, **kwargs):
        raise AssertionError("replay contacted the sandbox")

    monkeypatch.setattr(sandbox_cluster, "connect", refuse)
    monkeypatch.setattr(sandbox_cluster.connecting, "connect", refuse)
    monkeypatch.setattr(sandbox_cluster.pool.LocalPool, "__init__", refuse)
    from jaxopt_rl.cli import main

    path = write_dump(make_dump(seed=3), tmp_path / "dump.json.gz")
    outs = []
    for label, extra in (("raw", []), ("cal", ["calibration.kind=affine",
                                               "calibration.alpha=1.5",
                                               "calibration.beta_s=0.01"])):
        out = tmp_path / label
        assert main(["eval", "replay", str(path), "--out", str(out), "--resamples", "30",
                     *extra]) == 0
        outs.append(json.loads((out / "eval.json").read_text()))
    assert outs[0]["pass_at"]["1"]["p30"] != outs[1]["pass_at"]["1"]["p30"]
    ev = outs[0]
    assert set(ev) == {"model", "n", "problems", "pass_at", "timing_pass"}
    assert set(ev["pass_at"]) == {"1", "10"}
    assert set(ev["pass_at"]["1"]) == {f"p{t}" for t in range(10, 101, 10)}
    for row in ev["pass_at"].values():
        for entry in row.values():
            lo, hi = entry["ci"]
            assert 0 <= lo <= entry["value"] <= hi <= 1
    assert ev["timing_pass"] == {"shuffled": True, "references_included": True,
                                 "sandbox_state": {"x": 1}}
    for name in ("report.md", "p_tau.png", "calibration_sweep.png", "eval_details.json"):
        assert (tmp_path / "raw" / name).stat().st_size > 0


def test_refit_and_fresh_references_undo_the_drift():
    dump = make_dump(seed=4, problems=6, n=6, drift=(1.8, 0.02))
    fit = rp.replay(dump, refit=True, resamples=10)["details"]["calibration"]
    assert fit["alpha"] == pytest.approx(1.8, rel=0.05)
    assert fit["beta_s"] == pytest.approx(0.02, abs=0.005)
    fresh = rp.replay(dump, references="fresh", resamples=10)["details"]
    assert fresh["references"] == "fresh"


def test_sweep_is_monotone_in_the_intercept():
    sweep = rp.calibration_sweep(make_dump(seed=5, problems=6, n=8))
    p10 = [row["p10"] for row in sweep["beta"]]
    assert all(a <= b + 1e-9 for a, b in itertools.pairwise(p10))  # slower references: easier


def _slow_totals(dump):
    out = {}
    for problem in dump["problems"]:
        kinds = problem["tests"]["kinds"]
        totals = []
        for s in problem["samples"]:
            if s["status"] is None:
                continue
            ok = all(s["status"][t] == "success" for t, k in enumerate(kinds) if k != "TO") and \
                all(s["status"][t] in ("success", "timeout") for t, k in enumerate(kinds)
                    if k == "TO")
            if ok:
                totals.append(sum(s["duration_s"]))
        out[problem["problem_id"]] = sorted(totals)
    return out


def test_win_rates_against_a_hand_count():
    model, base = make_dump(seed=6, problems=8, n=5), make_dump(seed=7, problems=8, n=4)
    wr = rp.compare_speed(model, base)
    mine, theirs = _slow_totals(model), _slow_totals(base)
    for name, pick in (("WR_b", lambda v: v[0]), ("WR_m", lambda v: v[(len(v) - 1) // 2])):
        wins = losses = excluded = 0
        for pid in mine:
            if not mine[pid] or not theirs[pid]:
                excluded += 1
                continue
            a, b = pick(mine[pid]), pick(theirs[pid])
            wins += a < b
            losses += a > b
        assert (wr[name]["wins"], wr[name]["losses"], wr[name]["excluded"]) == (
            wins, losses, excluded)


def test_dumps_of_another_data_set_are_refused(tmp_path):
    from jaxopt_rl.cli import main

    a = write_dump(make_dump(seed=1), tmp_path / "a.json")
    b = write_dump(make_dump(seed=2, fingerprint="0" * 16), tmp_path / "b.json")
    with pytest.raises(DumpError, match="another data set"):
        rp.compare_speed(json.loads(a.read_text()), json.loads(b.read_text()))
    assert main(["eval", "compare", str(a), str(b), "--out", str(tmp_path / "c")]) == 2
    assert main(["eval", "replay", str(a), "--against", str(b), "--out",
                 str(tmp_path / "d")]) == 2


def test_compare_renders_two_dumps_side_by_side(tmp_path):
    from jaxopt_rl.cli import main

    a = write_dump(make_dump(seed=1, model="model-a"), tmp_path / "a.json")
    b = write_dump(make_dump(seed=2, model="model-b"), tmp_path / "b.json")
    out = tmp_path / "cmp"
    assert main(["eval", "compare", str(a), str(b), "--out", str(out), "--resamples", "20"]) == 0
    table = (out / "compare.md").read_text()
    assert "model-a" in table and "model-b" in table and "WR_m" in table
    assert (out / "compare_p_tau.png").stat().st_size > 0


def test_bad_dumps_fail_with_one_clear_line(tmp_path, capsys):
    from jaxopt_rl.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["eval", "replay", str(bad)]) == 2
    assert "not a JSON evaluation dump" in capsys.readouterr().err
    assert main(["eval", "replay", str(tmp_path / "missing.json")]) == 2
    dump = make_dump()
    broken = copy.deepcopy(dump)
    broken["problems"][0]["samples"][1]["status"][0] = "crashed"
    with pytest.raises(DumpError, match=r"problems\[0\]\.samples\[1\]\.status\[0\]"):
        check_dump(broken)
    empty = copy.deepcopy(dump)
    empty["problems"] = []
    with pytest.raises(DumpError, match="problems: empty"):
        check_dump(empty)
    with pytest.raises(ValueError, match=r"ranking\.kind=none"):
        rp.eval_env(["ranking.kind=none"])
    assert main(["eval", "replay"]) == 2


def test_replay_refuses_a_dump_of_another_data_set(tmp_path, capsys):
    from jaxopt_rl.cli import main

    path = write_dump(make_dump(seed=1), tmp_path / "a.json")
    assert main(["eval", "replay", str(path), "--data", "mini", "--out", str(tmp_path)]) == 2
    assert "dump from another data set" in capsys.readouterr().err


def test_durations_not_measured_on_the_fleet_never_rank():
    """An adversary's cheapest trick: a correct run whose duration came from a local fallback
    (or has none) recorded as 0 s must not look fastest; it still counts for p100."""
    dump = make_dump(seed=8, problems=3, n=4, p_fail=0.0, p_timeout=0.0)
    problem = dump["problems"][0]
    for sample in problem["samples"]:
        if sample["status"] is None:
            continue
        t = len(sample["status"])
        sample["duration_s"] = [0.0] * t
        sample["timing"] = ["local"] * t
    check_dump(dump)
    per_problem = rp.replay(dump, resamples=5)["details"]["per_problem"][problem["problem_id"]]
    assert per_problem["pass@1_p10"] == 0.0
    assert per_problem["pass@1_p100"] > 0
    for sample in problem["samples"]:
        if sample["status"] is not None:
            sample["timing"] = ["fleet"] * len(sample["status"])
    fleet = rp.replay(dump, resamples=5)["details"]["per_problem"][problem["problem_id"]]
    assert fleet["pass@1_p10"] == fleet["pass@1_p100"]  # 0 s on the fleet: fastest
