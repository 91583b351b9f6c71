"""The RiVER demo's config and its smoke run end to end (what CI runs)."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.demo.river import run_config
from jaxopt_rl.demo.river_config import load_river_demo_config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/demo_river.yaml"


def test_every_run_shares_everything_but_method_and_seed():
    config = load_river_demo_config(CONFIG)
    assert config.methods[:2] == ("river", "river_raw_grpo") and len(config.seeds) >= 3
    runs = [run_config(config, m, s) for m in config.methods for s in config.seeds]
    assert len({r.output_dir for r in runs}) == len(runs)
    same = lambda c: (c.steps, c.optimizer, c.grpo, c.rollout, c.loop, c.data,  # noqa: E731
                      c.prompt, c.init_from, c.model)
    assert all(same(r) == same(runs[0]) for r in runs)
    assert {(r.env, r.seed) for r in runs} == {(m, s) for m in config.methods
                                                for s in config.seeds}
    assert (Path(config.train.init_from) / "model.safetensors").is_file()


def test_smoke_overrides_apply_and_bad_keys_are_named():
    smoke = load_river_demo_config(CONFIG, smoke=True)
    assert smoke.train.steps == 2 and smoke.seeds == (0,)
    with pytest.raises(ConfigError, match="methods"):
        load_river_demo_config(CONFIG, ["methods=[river, qp_p30]"])
    with pytest.raises(ConfigError, match="methods"):
        load_river_demo_config(CONFIG, ["methods=[river]"])
    with pytest.raises(ConfigError, match=r"train\.loop\.log_rollouts"):
        load_river_demo_config(CONFIG, ["train.loop.log_rollouts=false"])
    with pytest.raises(ConfigError, match=r"eval\.held_out_instances"):
        load_river_demo_config(CONFIG, ["eval.held_out_instances=0"])
    with pytest.raises(ConfigError, match=r"eval\.samplez"):
        load_river_demo_config(CONFIG, ["eval.samplez=3"])


def test_a_word_other_than_river_is_refused_by_the_command():
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "demo", "rivr"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "'rivr' is neither 'river' nor a key=value" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_smoke_river_demo_writes_the_report(tmp_path):
    """`jaxopt-rl demo river --smoke`: two tasks, one seed, two steps per method."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = tmp_path / "river"
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "demo", "river", "--smoke",
                           f"output_dir={out}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    config = load_river_demo_config(CONFIG, smoke=True)
    report = json.loads((out / "report.json").read_text())
    assert set(report["policies"]) == {"sft", *config.methods}
    tasks = list(config.train.data.problems)
    for name, figures in report["policies"].items():
        assert 0 <= figures["feasible"] <= 1
        for task in tasks:
            share = figures["per_task"][task]["heuristic_share"]
            assert sum(share.values()) == pytest.approx(1.0), (name, task)
        if name != "sft":
            curve = np.array(figures["best_so_far"]["mean"], float)
            assert len(curve) == config.train.steps
            assert np.all(np.diff(curve[np.isfinite(curve)]) >= 0)  # best so far never falls
    assert {"best_so_far", "frequency_dominance", "compared"} <= set(report["claims"])
    for name in ("report.md", "best_so_far.png", "final_scores.png", "heuristic_share.png",
                 "training.png"):
        assert (out / name).stat().st_size > 0, name
    # every rollout was logged, and every program sampled was evaluated on held-out instances
    with gzip.open(out / "eval" / "held_out_results.json.gz", "rt") as f:
        results = json.load(f)
    tc = config.train
    for method in config.methods:
        lines = (out / method / "seed0" / "rollouts.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        assert len(records) == tc.steps * tc.loop.prompts_per_step * tc.rollout.group_size
        assert {r["problem_id"] for r in records} <= set(tasks)
    for task in tasks:
        for entry in results[task].values():
            assert len(entry["valid"]) == config.eval.held_out_instances
    assert "written:" in done.stdout
