"""The demo's config and pipeline seams; the smoke run end to end (what CI runs)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.demo.config import load_demo_config
from jaxopt_rl.demo.pipeline import RUNS, run_config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/demo.yaml"


def test_both_runs_share_everything_but_the_environment():
    config = load_demo_config(CONFIG)
    qp, base = run_config(config, "qp_p30"), run_config(config, "baseline")
    assert (qp.env, base.env) == ("qp_p30", "mc")
    assert Path(qp.output_dir).name == "qp_p30" and Path(base.output_dir).name == "baseline"
    same = lambda c: (c.steps, c.seed, c.optimizer, c.grpo, c.rollout, c.loop, c.data,  # noqa: E731
                      c.prompt, c.init_from, c.model)
    assert same(qp) == same(base)
    assert Path(config.train.init_from).is_dir()  # the shipped checkpoint, from any directory


def test_smoke_overrides_apply_and_the_command_line_wins():
    smoke = load_demo_config(CONFIG, ["train.steps=1"], smoke=True)
    assert smoke.train.steps == 1 and len(smoke.train.data.problems) == 2
    assert smoke.output_dir.endswith("demo_smoke")
    assert load_demo_config(CONFIG).train.steps > smoke.train.steps


def test_bad_keys_are_named():
    with pytest.raises(ConfigError, match=r"train\.rollout\.group_sise"):
        load_demo_config(CONFIG, ["train.rollout.group_sise=4"])
    with pytest.raises(ConfigError, match="baseline_env"):
        load_demo_config(CONFIG, ["baseline_env=qp_p30"])
    with pytest.raises(ConfigError, match="reference_runs"):
        load_demo_config(CONFIG, ["eval.reference_runs=0"])
    # a temperature the sampler would refuse only after both training runs is refused at load
    for key in ("eval.temperature", "train.rollout.temperature"):
        for bad in ("-1", "nan", "inf"):
            with pytest.raises(ConfigError, match=rf"{key}: must be finite and >= 0"):
                load_demo_config(CONFIG, [f"{key}={bad}"])


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_smoke_demo_writes_the_report(tmp_path):
    """`jaxopt-rl demo --smoke`: the whole pipeline on 2 problems and 2 steps per run."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "demo", "--smoke",
                           f"output_dir={out}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    report = json.loads((out / "report.json").read_text())
    assert set(report) == {"runs", "baseline_env", "wall_s", "phases_s"}
    assert set(report["runs"]) == {"sft", "qp_p30", "baseline"}
    assert report["baseline_env"] == "mc"
    for figures in report["runs"].values():
        assert set(figures) == {"p100", "p50", "p30", "p10"}
        for entry in figures.values():
            assert 0 <= entry["ci"][0] <= entry["ci"][1] <= 1 and 0 <= entry["pass@1"] <= 1
    assert {"tests", "train_qp_p30", "train_baseline", "sample", "timing", "replay"} <= set(
        report["phases_s"])
    for name in ("report.md", "p_tau.png", "training.png", "durations.png"):
        assert (out / name).stat().st_size > 0, name
    for run in RUNS:
        assert (out / run / "hf" / "model.safetensors").is_file()
        assert any((out / run / "tensorboard").iterdir())
        rows = (out / run / "metrics.jsonl").read_text().splitlines()
        assert len(rows) == 2  # two optimizer steps, logged
    assert "written:" in done.stdout and "report.md" in done.stdout
