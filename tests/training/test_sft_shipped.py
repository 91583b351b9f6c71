"""The shipped SFT checkpoints are what `jaxopt-rl sft --config <their config>` makes
(configs/sft/tiny_mini.yaml for the demo's, configs/sft/tiny_river.yaml for the RiVER demo's):
re-running their first steps reproduces the losses recorded when they were trained."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "jaxopt_rl/demo/assets"
CHECKPOINTS = ("sft_tiny", "sft_tiny_river")


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKPOINTS)
def test_sft_command_reproduces_the_shipped_first_losses(tmp_path, name):
    recorded = json.loads((ASSETS / name / "sft_losses.json").read_text())
    steps = 3
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # one CPU device, as shipped
    # the schedule of the full run (decay over its steps), so step k's update is the same
    overrides = [f"steps={steps}", f"output_dir={tmp_path}",
                 f"optimizer.decay_steps={recorded['steps']}", "checkpoint.every=1000"]
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "sft", "--config",
                           recorded["config"], *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    losses = [row["loss"] for row in rows]
    np.testing.assert_allclose(losses, recorded["losses"][:steps], rtol=2e-4)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_shipped_checkpoint_is_small_and_loads(name):
    from jaxopt_rl.evaluation.evaluate import load_policy

    weights = ASSETS / name / "model.safetensors"
    assert weights.stat().st_size < 12 * 2**20  # bfloat16: a few MB
    raw = weights.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"BF16"}
    model, tokenizer = load_policy(ASSETS / name)
    assert model.config.vocab_size >= tokenizer.vocab_size


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_shipped_checkpoint_carries_a_manifest_that_verifies(name):
    import hashlib

    from jaxopt_rl.manifest import MANIFEST_FILE, verify_manifest

    folder = ASSETS / name
    assert verify_manifest(folder) is True  # False would mean: no manifest
    listed = json.loads((folder / MANIFEST_FILE).read_text())["files"]
    # the weights and the config are sealed; digests recomputed here, not by the module
    assert {"config.json", "model.safetensors"} <= set(listed)
    for file, entry in listed.items():
        assert hashlib.sha256((folder / file).read_bytes()).hexdigest() == entry["sha256"]
