"""The shipped SFT checkpoint is what `jaxopt-rl sft --config configs/sft/tiny_mini.yaml` makes:
re-running its first steps reproduces the losses recorded when it was trained."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "jaxopt_rl/demo/assets/sft_tiny"


@pytest.mark.slow
def test_sft_command_reproduces_the_shipped_first_losses(tmp_path):
    recorded = json.loads((SHIPPED / "sft_losses.json").read_text())
    steps = 3
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # one CPU device, as shipped
    # the schedule of the full run (decay over its steps), so step k's update is the same
    overrides = [f"steps={steps}", f"output_dir={tmp_path}",
                 f"optimizer.decay_steps={recorded['steps']}", "checkpoint.every=1000"]
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "sft", "--config",
                           "configs/sft/tiny_mini.yaml", *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    losses = [row["loss"] for row in rows]
    np.testing.assert_allclose(losses, recorded["losses"][:steps], rtol=2e-4)


def test_shipped_checkpoint_is_small_and_loads():
    from jaxopt_rl.evaluation.evaluate import load_policy

    weights = SHIPPED / "model.safetensors"
    assert weights.stat().st_size < 12 * 2**20  # bfloat16: a few MB
    raw = weights.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"BF16"}
    model, tokenizer = load_policy(SHIPPED)
    assert model.config.vocab_size >= tokenizer.vocab_size
