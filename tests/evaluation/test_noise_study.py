"""The Appendix A.3 playground: the paper's qualitative claims (docs/design/sandbox-timing.md §6)
and the metrics checked against a per-trial loop."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from jaxopt_rl.evaluation import noise_study
from jaxopt_rl.evaluation.noise_study import SETTINGS, Setting, simulate

LCB, DMC = SETTINGS


def _at(rows, level):
    return next(r for r in rows if abs(r["level"] - level) < 1e-12)


def test_lcb_like_additive_100ms_timeout_near_chance_winrate_better():
    rows = simulate(LCB, "additive", [0.1], trials=4000)
    row = _at(rows, 0.1)
    assert row["timeout_accuracy"] <= 0.6
    assert row["timeout_accuracy_global"] <= 0.65
    assert row["winrate_accuracy"] >= 0.7


def test_dmc_like_additive_100ms_winrate_stays_high():
    row = _at(simulate(DMC, "additive", [0.1], trials=2000), 0.1)
    assert row["winrate_accuracy"] >= 0.95


def test_noise_free_win_rate_is_perfect_and_multiplicative_degrades_gradually():
    rows = simulate(LCB, "multiplicative", [0.0, 0.1, 0.3, 0.5], trials=2000)
    accuracies = [r["winrate_accuracy"] for r in rows]
    assert accuracies[0] > 0.99
    assert all(a >= b - 0.01 for a, b in itertools.pairwise(accuracies))


def _slow_reference(setting, kind, level, trials, seed):
    """The same draws as `simulate`, then both metrics trial by trial with Python loops."""
    rng = np.random.default_rng([seed, setting.num_tests,
                                 list(noise_study.NOISE_KINDS).index(kind)])
    shape = (trials, setting.num_tests)
    b = rng.lognormal(setting.mu, 0.5, shape)
    eta_a, eta_b = rng.normal(0, 0.15, shape), rng.normal(0, 0.15, shape)
    z_a, z_b = rng.normal(size=shape), rng.normal(size=shape)
    timeout, winrate = [], []
    for r in range(trials):
        ta = [b[r, i] * (1.1 + eta_a[r, i]) for i in range(setting.num_tests)]
        tb = [b[r, i] * (0.9 + eta_b[r, i]) for i in range(setting.num_tests)]
        if kind == "additive":
            oa = [ta[i] + level * z_a[r, i] for i in range(len(ta))]
            ob = [tb[i] + level * z_b[r, i] for i in range(len(tb))]
        else:
            oa = [ta[i] * (1 + level * z_a[r, i]) for i in range(len(ta))]
            ob = [tb[i] * (1 + level * z_b[r, i]) for i in range(len(tb))]
        w_b = sum(1 for x, y in zip(ob, oa) if x < y)
        w_a = sum(1 for x, y in zip(oa, ob) if x < y)
        winrate.append(1.0 if w_b > w_a else 0.0 if w_a > w_b else 0.5)
        tau = (max(ta) + max(tb)) / 2
        pa, pb = max(oa) <= tau, max(ob) <= tau
        timeout.append(1.0 if pb and not pa else 0.0 if pa and not pb else 0.5)
    return sum(timeout) / trials, sum(winrate) / trials


@pytest.mark.parametrize("kind,level", [("additive", 0.05), ("multiplicative", 0.2)])
def test_vectorised_metrics_match_a_per_trial_loop(kind, level):
    setting = Setting("small", 7, -2.3)
    row = simulate(setting, kind, [0.0, level], trials=300, seed=3)[1]
    timeout, winrate = _slow_reference(setting, kind, level, 300, 3)
    assert row["timeout_accuracy"] == pytest.approx(timeout, abs=1e-12)
    assert row["winrate_accuracy"] == pytest.approx(winrate, abs=1e-12)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="noise kind"):
        simulate(LCB, "gaussian", [0.1])
    with pytest.raises(ValueError, match="levels"):
        simulate(LCB, "additive", [])


def test_cli_writes_noise_json_table_and_plot(tmp_path):
    from jaxopt_rl.cli import main

    assert main(["study", "noise", "--out", str(tmp_path), "--trials", "200"]) == 0
    rows = json.loads((tmp_path / "noise.json").read_text())
    keys = {(r["setting"], r["noise"], r["level"]) for r in rows}
    assert len(keys) == len(rows) == 2 * sum(map(len, noise_study.NOISE_KINDS.values()))
    assert all(0 <= r["timeout_accuracy"] <= 1 and 0 <= r["winrate_accuracy"] <= 1 for r in rows)
    assert (tmp_path / "noise.png").stat().st_size > 0
    assert "win-rate acc." in (tmp_path / "noise.md").read_text()
    assert main(["study", "noise", "--out", str(tmp_path), "--trials", "0"]) == 2
