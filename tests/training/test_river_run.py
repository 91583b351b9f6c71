"""`configs/train/tiny_river.yaml` end to end: the shipped score task's hidden instances are
generated in the embedded jail, the tiny model samples, RiVER rewards train it, and the metrics
carry the feedback resolution. With 48 new tokens no completion closes a program block, so every
solver is invalid on every instance: docs/design/rewards.md §7 gives s = -1 there, so every reward is
-1 and (no centring) every advantage too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_tiny_river_run_trains_on_rank_rewards(tmp_path):
    out = tmp_path / "river"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run(
        [sys.executable, "-m", "jaxopt_rl.cli", "train", "--config",
         "configs/train/tiny_river.yaml", f"output_dir={out}", "steps=2",
         "data.problems=[tour]", "rollout.max_new_tokens=48", "rollout.prompts_per_call=1",
         "loop.prompts_per_step=1", "loop.max_groups_per_step=1", "grpo.rows=4"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    assert "hidden instances generated in the sandbox: 10 of 1 score tasks" in done.stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert row["reward/mean"] == -1.0 and row["reward/std"] == 0.0
        assert row["groups/feedback_resolution"] == 0.0  # the whole group collides on -1
        assert row["groups/zero_advantage_rate"] == 0.0  # RiVER: -1 is an advantage
        assert row["pass/c_cor"] == 0.0
