"""Calibration fits (LOPO against a loop), ranking agreement, storing Gamma by name and loading
it from any EnvConfig, the drift check, and the ranking-metric study on a synthetic campaign."""

from __future__ import annotations

import numpy as np
import pytest

from jaxopt_rl.evaluation import calibration as cal
from jaxopt_rl.evaluation import ranking_study
from jaxopt_rl.rewards import env_config
from tests.evaluation.dumps import make_dump


def _campaign(seed=0, drift=(1.6, 0.03), runs=2, problems=5):
    return make_dump(seed=seed, problems=problems, n=1, references=4, fresh_runs=runs,
                     drift=drift, tests=(1, 1, 6))


def test_affine_fit_recovers_the_drift_and_beats_multiplicative():
    report = cal.fit_campaign(_campaign())
    assert report["alpha"] == pytest.approx(1.6, rel=0.05)
    assert report["beta_s"] == pytest.approx(0.03, abs=0.005)
    fits = report["fits"]
    assert fits["affine"]["cv_r2"] > fits["multiplicative"]["cv_r2"]
    assert fits["quadratic"]["cv_r2"] > 0.9
    before, after = report["ranking"]["before"], report["ranking"]["after_affine"]
    assert after["mean_abs_diff_pp"] < before["mean_abs_diff_pp"]
    assert after["spearman"] > before["spearman"]


def test_lopo_matches_a_loop():
    rng = np.random.default_rng(1)
    problem = np.repeat(np.arange(4), 6)
    stored = rng.random(24)
    fresh = 0.7 * stored + 0.05 + rng.normal(0, 0.02, 24)
    got = cal.lopo("affine", problem, stored, fresh)
    errors = []
    for p in range(4):
        keep = problem != p
        slope, intercept = np.polyfit(stored[keep], fresh[keep], 1)
        errors += [(f - (slope * s + intercept)) ** 2 for s, f in zip(stored[~keep], fresh[~keep])]
    total = sum((f - fresh.mean()) ** 2 for f in fresh)
    assert got["cv_r2"] == pytest.approx(1 - sum(errors) / total, abs=1e-12)
    assert got["cv_rmse_s"] == pytest.approx(np.sqrt(np.mean(errors)), abs=1e-12)
    through_origin = cal.lopo("multiplicative", problem, stored, fresh)["coefficients"]
    assert through_origin[1] == 0.0
    with pytest.raises(ValueError, match="fit family"):
        cal.fit("cubic", stored, fresh)


def test_stored_gamma_is_loaded_by_name_everywhere(tmp_path, monkeypatch, capsys):
    from jaxopt_rl.cli import main
    from jaxopt_rl.data.examples import EXAMPLE_RECORDS
    from jaxopt_rl.evaluation.dump import write_dump

    dump = _campaign()
    path = cal.store_calibration("unit-fit", cal.fit_campaign(dump), dump, tmp_path)
    assert path == tmp_path / "unit-fit.yaml"
    monkeypatch.setattr(env_config, "CALIBRATION_SEARCH_DIRS", (tmp_path,))
    env = env_config.load_env_config("qp_p30", ["calibration.name=unit-fit"])
    assert env.calibration.kind == "affine"
    assert env.calibration.alpha == pytest.approx(1.6, rel=0.05)
    assert main(["rewards", "--records", str(EXAMPLE_RECORDS), "--env", "qp_p30",
                 "calibration.name=unit-fit"]) == 0
    assert main(["rewards", "--records", str(EXAMPLE_RECORDS), "--env", "qp_p30",
                 "calibration.name=nope"]) == 2
    assert "unknown calibration 'nope'" in capsys.readouterr().err
    with pytest.raises(env_config.ConfigError, match="brings its own alpha"):
        env_config.load_env_config("qp_p30", ["calibration.name=unit-fit",
                                              "calibration.alpha=0.5"])
    replay_dump = write_dump(make_dump(seed=3), tmp_path / "d.json")
    assert main(["eval", "replay", str(replay_dump), "calibration.name=unit-fit",
                 "--out", str(tmp_path / "out"), "--resamples", "10", "--no-sweep"]) == 0
    assert "unit-fit" in (tmp_path / "out" / "report.md").read_text()


def test_calibrate_from_dump_writes_report_and_fit(tmp_path, monkeypatch):
    from jaxopt_rl.cli import main
    from jaxopt_rl.evaluation.dump import write_dump

    path = write_dump(_campaign(), tmp_path / "campaign.json.gz")
    out = tmp_path / "cal"
    assert main(["calibrate", "--from-dump", str(path), "--name", "from-dump", "--out", str(out),
                 "--calibration-dir", str(tmp_path / "fits")]) == 0
    text = (out / "calibration.md").read_text()
    assert "LOPO R²" in text and "Spearman" in text
    assert (tmp_path / "fits" / "from-dump.yaml").is_file()
    assert (out / "calibration.png").stat().st_size > 0


def test_reference_campaign_reruns_references_on_the_fleet_only(tmp_path, monkeypatch):
    import sandbox_cluster
    from jaxopt_rl.data.lookup import find_data_set
    from tests.evaluation.fakes import StoredTimesSandbox

    inline = ["mini-011", "mini-012", "mini-018"]  # the mini problems whose tests are inline
    fleet = StoredTimesSandbox(find_data_set("mini"), inline, 1.6, 0.03)
    asked = []

    def connect(urls, **options):
        asked.append((urls, options))
        return fleet

    monkeypatch.setattr(sandbox_cluster, "connect", connect)
    dump = cal.reference_campaign("mini", inline, reruns=2, cache_dir=tmp_path)
    assert asked == [(None, {"fallback": "none"})]
    assert [p["problem_id"] for p in dump["problems"]] == inline
    report = cal.fit_campaign(dump)
    assert report["reruns"] == 2
    assert report["alpha"] == pytest.approx(1.6, rel=1e-3)
    assert report["beta_s"] == pytest.approx(0.03, abs=1e-4)
    picked = cal.reference_campaign("mini", inline, reruns=1, sample=2, seed=5,
                                    urls="http://a,,http://b", cache_dir=tmp_path)
    assert asked[-1] == (["http://a", "http://b"], {"fallback": "none"})
    chosen = [p["problem_id"] for p in picked["problems"]]
    assert len(chosen) == 2 and set(chosen) < set(inline)
    with pytest.raises(ValueError, match="needs >= 2 problems"):
        cal.reference_campaign("mini", inline, reruns=1, sample=1)
    with pytest.raises(ValueError, match="must be >= 1"):
        cal.reference_campaign("mini", inline, reruns=0)


def test_drift_check_warns_when_the_fleet_moved():
    from jaxopt_rl.data.mini import load_mini
    from tests.evaluation.fakes import StoredTimesSandbox

    dataset = load_mini()
    canaries = ["mini-018"]
    steady = cal.drift_check(dataset, StoredTimesSandbox(dataset, canaries, 0.7, 0.05),
                             (0.7, 0.05), canaries)
    assert not steady["refit_due"] and steady["warning"] is None
    assert steady["calibration_drift/median_rel_error"] == pytest.approx(0, abs=1e-5)
    with pytest.warns(UserWarning, match="refit the calibration"):
        moved = cal.drift_check(dataset, StoredTimesSandbox(dataset, canaries, 1.0, 0.1),
                                (0.7, 0.05), canaries)
    assert moved["refit_due"]
    with pytest.raises(ValueError, match="empty canary"):
        cal.drift_check(dataset, None, (1.0, 0.0), [])


def test_ranking_study_table_39_shape():
    result = ranking_study.study(_campaign(runs=3, problems=5))
    assert len(result["rows"]) == 17
    for row in result["rows"]:
        assert row["lopo_affine_std_pp"] is None or row["lopo_affine_std_pp"] >= 0
    assert result["most_stable"] in {row["metric"] for row in result["rows"]}
    assert result["verdict"].startswith("most stable: ")
    assert "| mean_percentile |" in ranking_study.markdown(result)


def test_the_shipped_mini_fit_loads_by_name():
    config = env_config.CalibrationConfig(name="mini-v1")
    assert config.kind == "affine" and config.alpha > 0
    document = env_config.load_named_calibration("mini-v1")
    assert document["dataset"]["name"] == "dmc-optim-mini"
    assert document["sandbox_state"]["pool"]["backend"]


def test_a_multiplicative_fit_can_be_stored_a_quadratic_cannot(tmp_path):
    import yaml

    dump = _campaign(drift=(1.6, 0.0))
    report = cal.fit_campaign(dump)
    path = cal.store_calibration("mult", report, dump, tmp_path, family="multiplicative")
    stored = yaml.safe_load(path.read_text())
    assert stored["beta_s"] == 0 and stored["family"] == "multiplicative"
    assert stored["alpha"] == pytest.approx(1.6, rel=0.05)
    with pytest.raises(ValueError, match="only affine or multiplicative"):
        cal.store_calibration("quad", report, dump, tmp_path, family="quadratic")
